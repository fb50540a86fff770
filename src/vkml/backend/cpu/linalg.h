// Matrix multiplication on the CPU: BLAS (sgemm/dgemm) for floating types, oneDNN for bfloat16 on
// 16-bit matrix hardware (onednn.h; elsewhere bfloat16 widens to sgemm), a plain loop for
// integers. OpenBLAS is kept single-threaded; vkml's own pool splits the work into a partition
// that depends only on the shapes, so every output element comes from the same BLAS call at any
// thread count and results are bitwise identical.
#pragma once
#include <cstdint>
#include <type_traits>

#include "vkml/backend/cpu/kernel.h"
#include "vkml/core/half.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// in: a (B..., M, K), b (B..., K, N) with equal batch dims (any strides, stride 0 allowed) and one
// dtype (bfloat16 only when registered for it: has_bf16_gemm()). Result: a fresh contiguous
// (B..., M, N).
VK_KERNEL(matmul);
// in: bias (N), a (M, K), b (K, N), one floating dtype. Result: a @ b + bias (each row): C starts
// as the bias and BLAS adds the product into it (beta = 1), one pass fewer than a product and an
// add.
VK_KERNEL(addmm);

// A strided matrix operand: element (i, j) is data[i * rs + j * cs].
template <class T>
struct MatRef {
  const T* data;
  int64_t rs, cs;
};

// What a product of T accumulates in: T, or float32 for bfloat16 (rounded once, into the output).
template <class T>
using GemmAcc = std::conditional_t<std::is_same_v<T, BFloat16>, float, T>;

// C = A @ B + beta * C for an M x N row-major C with row stride ldc (unit column stride), by one
// single-threaded BLAS call. A is M x K, B is K x N; either is passed to BLAS without a copy when
// it is row- or column-contiguous, and packed first otherwise. T is float, double, or bfloat16
// when has_bf16_gemm() (onednn.h; beta 0 or 1 then, and C float32 or, rounded once on store,
// bfloat16). Call it from inside a parallel_for with a partition fixed by the shapes to keep
// results bitwise stable.
template <class T, class CT = GemmAcc<T>>
void gemm(int64_t M, int64_t N, int64_t K, MatRef<T> A, MatRef<T> B, GemmAcc<T> beta, CT* C,
          int64_t ldc);

// How an M x N x K product is cut into independent GEMM calls for the thread pool: tiles of
// `rows` x `cols` of C (one of them the full extent), or, when split_k allows it and K is long
// next to C's sides or C too small to cut (a weight gradient: 512 x 128 over 2048 rows of a
// batch), `ksplit` slices of K whose products are added in slice order. Depends only on the
// shape, never on the number of threads, so every element of C comes from the same calls and
// sums at any thread count.
struct GemmTiles {
  int64_t rows, cols;
  int64_t ksplit = 1;
};
GemmTiles gemm_tiles(int64_t M, int64_t N, int64_t K, bool split_k = true);

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
