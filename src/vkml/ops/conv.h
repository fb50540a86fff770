// Convolution and pooling on NCHW tensors.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// im2col: (N, C, H, W) -> (N, C*kh*kw, L), L = number of windows (torch.nn.functional.unfold).
Tensor im2col(const Tensor& x, const Window2d& w);
// col2im: (N, C*kh*kw, L) -> (N, C, H, W), summing overlaps (torch.nn.functional.fold).
Tensor col2im(const Tensor& cols, int64_t height, int64_t width, const Window2d& w);
// weight (O, C/groups, kh, kw); bias optional (undefined Tensor for none).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride_h,
              int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dil_h = 1, int64_t dil_w = 1,
              int64_t groups = 1);
// conv2d's gradients, each one op (the CPU's kernels; conv2d's rule uses them where a device
// has them): with respect to the input, an input_shape tensor (a transposed convolution of g), and
// with respect to the weight, a weight_shape tensor. `w` holds the kernel size, stride, padding,
// dilation and groups of the convolution; g has conv2d's output shape.
Tensor conv2d_backward_input(const Tensor& g, const Tensor& weight, const Shape& input_shape,
                             const Window2d& w);
Tensor conv2d_backward_weight(const Tensor& g, const Tensor& x, const Shape& weight_shape,
                              const Window2d& w);
struct PoolResult {
  Tensor values, indices;  // indices: int64 flat positions within each (H, W) input plane
};
PoolResult max_pool2d(const Tensor& x, const Window2d& w);
// The adjoint of max_pool2d: g routed to each window's argmax in a zero tensor of input_shape.
Tensor max_pool2d_backward(const Tensor& g, const Tensor& indices, const Shape& input_shape);
Tensor avg_pool2d(const Tensor& x, const Window2d& w);  // padding counts as zeros in the mean
}  // namespace vk
