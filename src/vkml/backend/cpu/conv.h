// Convolution and pooling kernels on NCHW tensors (any input strides; results are contiguous).
// Work is split over (n, c) planes or over a partition fixed by the shapes, and every output
// element is summed in a fixed order, so results are bitwise identical at any thread count.
#pragma once
#include <cstdint>
#include <string_view>

#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {

// x (N, C, H, W) -> (N, C*kh*kw, OH*OW); a.win.
VK_KERNEL(im2col);
// cols (N, C*kh*kw, OH*OW) -> (N, C, H, W), overlaps summed; a.shape = {H, W}, a.win.
VK_KERNEL(col2im);
// x (N, C, H, W), weight (O, C/groups, kh, kw)[, bias (O)] -> (N, O, OH, OW);
// a.win (kh, kw equal to the weight's), a.ints = {groups} (empty: 1).
VK_KERNEL(conv2d);
// x (N, C, H, W) -> values (N, C, OH, OW); the int64 argmax indices (flat ih * W + iw within each
// input plane; ties take the first) are kept in out.saved()[0]. Padding acts as -inf.
VK_KERNEL(max_pool2d);
// g (N, C, OH, OW), indices (same shape, int64 or int32) -> zeros of a.shape with g added at the
// indices of each plane.
VK_KERNEL(max_pool2d_backward);
// x (N, C, H, W) -> (N, C, OH, OW): window sums (padding counts as zeros) / (kh * kw).
VK_KERNEL(avg_pool2d);

// Output extent of a window sweep over `in` positions; <= 0 when the dilated kernel is larger
// than the padded input. Expects a valid window (k, s, d >= 1, p >= 0); SizeError naming `op`
// when the padded input or the dilated kernel does not fit in int64.
inline int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                          std::string_view op = "window") {
  const int64_t padded = checked_add(in, checked_mul(2, p, op), op);
  const int64_t reach = checked_add(checked_mul(d, k - 1, op), 1, op);
  const int64_t span = padded - reach;  // both >= 0: no overflow
  return span < 0 ? 0 : span / s + 1;
}

}  // namespace vk::cpu
