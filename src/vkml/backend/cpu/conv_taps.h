// Convolutions onto few output positions per image (a deep layer's 4x4 or 2x2) by kernel
// position: each tap t = (i, j) is one product of its weights w[:, :, i, j] (O x C) with the
// input values it reads, for the output positions where it reads inside the image; the batch's
// images side by side in each product. Taps that read only padding are skipped: at 2x2 outputs
// of a padded 3x3, 16 of the 36 (position, tap) pairs read the image, which im2col + GEMM and
// oneDNN's direct convolution multiply by zeros. Each output element is summed over the taps in
// a fixed order by one task of a partition fixed by the shapes, so results are bitwise the same
// at any thread count.
#pragma once
#include <cstdint>

#include "vkml/backend/cpu/isa.h"
#include "vkml/backend/cpu/onednn.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// Whether conv2d of shape s (groups 1) / its weight gradient go by taps: few positions per image,
// 64+ channels, and at most half / three quarters of the (position, tap) pairs reading the image
// (conv_taps.cpp; the input gradient never measured faster).
bool use_conv_by_taps(const ConvShape& s);
bool use_conv_weight_grad_by_taps(const ConvShape& s);

// T is float or double; every array contiguous. y (N, O, OH, OW) = conv2d(x, w) (+ bias (O)).
template <class T>
void conv2d_by_taps(const ConvShape& s, const T* x, const T* w, const T* bias, T* y);
// dw (O, C, kh, kw) from x (N, C, H, W) and g (N, O, OH, OW).
template <class T>
void conv2d_backward_weight_by_taps(const ConvShape& s, const T* x, const T* g, T* dw);

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
