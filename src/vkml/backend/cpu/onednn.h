// What vkml takes from oneDNN on the CPU: bfloat16 matrix products on the 16-bit matrix hardware
// (AVX512-BF16's dot products, AMX tiles) through its matmul primitive, and, on AVX2 and AVX-512
// machines, float32 convolutions and their gradients through its direct (blocked-layout)
// convolutions where those beat im2col + GEMM. Without that hardware, or in a build without oneDNN,
// a bfloat16 product is widened to float32 and runs through sgemm like any other (the op table's
// dispatch does it): has_bf16_gemm() decides which, once per process; convolutions run im2col +
// GEMM.
//
// Compiled once, outside the per-capability kernel copies: oneDNN picks its own kernels at run
// time (its JIT), so there is nothing to gain from compiling this file per instruction set.
#pragma once
#include <cstdint>

#include "vkml/core/half.h"

namespace vk::cpu {

// Whether this build links oneDNN (torch.backends.mkldnn.is_available()).
bool has_onednn();
// Whether bfloat16 products run natively: oneDNN is built in and finds AVX512-BF16 or AMX here.
// VKML_CPU_CAPABILITY=default|avx2 turns it off (that machine has no such hardware), as does
// oneDNN's own ONEDNN_MAX_CPU_ISA below AVX512_CORE_BF16.
bool has_bf16_gemm();
// What runs them, for the bench and bug reports: "oneDNN 2.6.3 avx512_core_bf16 (brgemm)"-like,
// or why not ("no oneDNN in this build", "no AVX512-BF16/AMX on this CPU").
const char* bf16_gemm_name();

// C = A @ B (+ C when `accumulate`): C is M x N float32, row-major with row stride ldc; A (M x K)
// and B (K x N) are bfloat16 with leading dimensions lda / ldb, stored row-major or, when ta / tb,
// column-major (BLAS's convention). Products accumulate in float32. Runs on the calling thread
// alone (call it inside a parallel_for whose partition depends only on the shapes: results are
// then independent of the thread count). Requires has_bf16_gemm().
void bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const BFloat16* A, int64_t lda,
               const BFloat16* B, int64_t ldb, bool accumulate, float* C, int64_t ldc);
// The same into a bfloat16 C: the float32 sum (with C's old value when `accumulate`) rounded
// once on store, without a float32 C in between.
void bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const BFloat16* A, int64_t lda,
               const BFloat16* B, int64_t ldb, bool accumulate, BFloat16* C, int64_t ldc);

// Who runs float32 GEMMs: OpenBLAS, oneDNN's sgemm (its JIT AVX2 / AVX-512 kernels), or either by
// the product's shape (the default where oneDNN runs AVX2 or wider; VKML_SGEMM=openblas|onednn
// picks one for every product).
enum class SgemmChoice { Blas, Onednn, ByShape };
SgemmChoice sgemm_choice();
// Whether an M x N x K float32 product (ta / tb: A / B stored transposed, as sgemm's) goes to
// oneDNN's sgemm (below) rather than OpenBLAS.
bool use_onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K);
// C = A @ B + beta * C, row-major, as cblas_sgemm (ta / tb: A / B stored transposed), on the
// calling thread alone (vkml's pool splits the product; results do not depend on the thread
// count). Requires has_onednn().
void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// A float32 2-D convolution's shape (groups 1): x (N, C, H, W), weight (O, C, kh, kw).
struct ConvShape {
  int64_t N, C, H, W, O, kh, kw, sh, sw, ph, pw, dh, dw;
};
// Whether conv2d_f32 runs this convolution: oneDNN's direct (blocked-layout) convolution on an
// AVX2 or AVX-512 machine, for batches of 8 or more images and kernels wider than 1x1 over 32
// channels or more, where it beat im2col + GEMM (Zen 4, one thread, ResNet-18's and MNIST's 3x3
// layers: 95-145 against 66-88 GFLOP/s; capped to AVX2, 75-108 against 66-94), and 7x7 stems over
// 3+ channels; other first layers (MNIST's, 3x3 over 3 channels) and 1x1 kernels stay with im2col
// + GEMM, as do, on AVX2, strided kernels of 3x3 and smaller (measured faster on Zen 3 in all three
// passes). The unit of parallel work is one image, or, below 64 output positions per image, a
// slice of channels over the whole batch (a call per image would read the whole weight for a few
// positions); results are independent of the thread count.
bool use_onednn_conv(const ConvShape& s);
// y (N, O, OH, OW) = conv(x, w) (+ bias (O) when not null); x, w and y contiguous.
void conv2d_f32(const ConvShape& s, const float* x, const float* w, const float* bias, float* y);
// Whether conv2d's gradients run through oneDNN (below) for these shapes: where its backward passes
// measured faster than im2col + GEMM (Zen 4, ResNet-18's and MNIST's layers and first layers of 3
// to 16 channels; the weight gradient's rule takes those from 3 channels, the forward's only 7x7).
bool use_onednn_conv_backward_data(const ConvShape& s);
bool use_onednn_conv_backward_weights(const ConvShape& s);
// conv2d's gradients, through oneDNN's backward convolutions (all arrays contiguous): dx
// (N, C, H, W) from g (N, O, OH, OW) and w, by images or slices of input channels as conv2d_f32;
// dw (O, C, kh, kw) from x and g, one call per part of the batch (8 parts, fixed by N), the parts'
// partial gradients added in order. Results are independent of the thread count.
void conv2d_backward_data_f32(const ConvShape& s, const float* g, const float* w, float* dx);
void conv2d_backward_weights_f32(const ConvShape& s, const float* x, const float* g, float* dw);

}  // namespace vk::cpu
