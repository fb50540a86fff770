// 3x3 stride-1 float32 convolutions as Winograd F(2x2, 3x3) (Lavin and Gray, 2015): each 2x2 tile
// of outputs from a 4x4 tile of inputs with 16 multiplications per channel pair instead of 36.
// The 16 products of the transformed tiles are 16 GEMMs over the whole batch's tiles, so a deep
// layer's few positions per image (ResNet's 4x4 and 2x2) still make long products. The
// transforms' coefficients are 0, +-1 and +-1/2, exact in binary: the results differ from the
// direct sum by a few float32 roundings. The weight gradient is the same algorithm's adjoint,
// dw = G^T [sum over tiles of (A g A^T) * (B^T x B)] G. Images whose rows make 16 outputs or more
// take F(4x4, 3x3) in all three passes instead: 4x4 tiles from 6x6, 36 multiplications where
// four 2x2 tiles take 64, on the points 0, +-1, 2 and -1/2; its kernel transform's coefficients
// (1/6, 1/15, 1/30) are not exact and its sums are longer: its error is about 4x the direct
// sum's (1e-6 of the sum of the terms' magnitudes against 2-3e-7). Work is cut by the shapes
// alone (tile rows, channels, the products), so results are bitwise the same at any thread
// count.
#pragma once
#include <cstdint>

#include "vkml/backend/cpu/isa.h"
#include "vkml/backend/cpu/onednn.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// Whether conv2d of shape s (float32, groups 1), its input gradient, its weight gradient run here:
// 3x3, stride 1, no dilation, padding of at most 2, and enough channels and tiles that the GEMMs
// outweigh the transforms (winograd.cpp). VKML_WINOGRAD=0 in the environment turns it off (for
// comparisons: the direct sums' roundings).
bool use_winograd(const ConvShape& s);
bool use_winograd_backward_input(const ConvShape& s);
bool use_winograd_weight_grad(const ConvShape& s);

// y (N, O, OH, OW) = conv2d(x (N, C, H, W), w (O, C, 3, 3)) (+ bias (O) when not null); every
// array contiguous.
void winograd_conv2d(const ConvShape& s, const float* x, const float* w, const float* bias,
                     float* y);
// dx (N, C, H, W) from g (N, O, OH, OW) and w: the convolution of g with w's flipped, transposed
// kernel under padding 2 - p.
void winograd_conv2d_backward_input(const ConvShape& s, const float* g, const float* w, float* dx);
// dw (O, C, 3, 3) from x (N, C, H, W) and g (N, O, OH, OW).
void winograd_conv2d_backward_weight(const ConvShape& s, const float* x, const float* g, float* dw);

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
