// Convolution and pooling kernels on NCHW tensors (any input strides; results are contiguous).
// Work is split over (n, c) planes or over a partition fixed by the shapes, and every output
// element is summed in a fixed order, so results are bitwise identical at any thread count.
#pragma once
#include <cstdint>
#include <string_view>

#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// x (N, C, H, W) -> (N, C*kh*kw, OH*OW); a.win.
VK_KERNEL(im2col);
// cols (N, C*kh*kw, OH*OW) -> (N, C, H, W), overlaps summed; a.shape = {H, W}, a.win.
VK_KERNEL(col2im);
// x (N, C, H, W), weight (O, C/groups, kh, kw)[, bias (O)] -> (N, O, OH, OW);
// a.win (kh, kw equal to the weight's; groups). im2col + GEMM, or oneDNN's direct convolution
// for the float32 shapes where it is faster (onednn.h: use_onednn_conv).
VK_KERNEL(conv2d);
// conv2d's gradients (conv_backward.cpp), im2col + GEMM per block of channels, or oneDNN's
// backward convolutions for the float32 shapes of use_onednn_conv:
// g (N, O, OH, OW), weight (O, C/groups, kh, kw) -> dx of a.shape (N, C, H, W);
VK_KERNEL(conv2d_backward_input);
// g (N, O, OH, OW), x (N, C, H, W) -> dweight of a.shape (O, C/groups, kh, kw).
VK_KERNEL(conv2d_backward_weight);
// x (N, C, H, W) -> values (N, C, OH, OW); the int64 argmax indices (flat ih * W + iw within each
// input plane; ties take the first) are output 1. Padding acts as -inf.
VK_KERNEL(max_pool2d);
// g (N, C, OH, OW), indices (same shape, int64 or int32) -> zeros of a.shape with g added at the
// indices of each plane.
VK_KERNEL(max_pool2d_backward);
// x (N, C, H, W) -> (N, C, OH, OW): window sums (padding counts as zeros) / (kh * kw).
VK_KERNEL(avg_pool2d);

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
