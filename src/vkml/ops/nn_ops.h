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
struct PoolResult {
  Tensor values, indices;  // indices: int64 flat positions within each (H, W) input plane
};
PoolResult max_pool2d(const Tensor& x, const Window2d& w);
// The adjoint of max_pool2d: g routed to each window's argmax in a zero tensor of input_shape.
Tensor max_pool2d_backward(const Tensor& g, const Tensor& indices, const Shape& input_shape);
Tensor avg_pool2d(const Tensor& x, const Window2d& w);  // padding counts as zeros in the mean
// Fused layer normalisation over the trailing normalized_shape (weight and bias of that shape, or
// undefined for none); nn::functional::layer_norm checks its arguments and calls it.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps);
// The gradient of layer_norm(x, normalized_shape, weight, bias, eps) w.r.t. x for the gradient g
// arriving at its output (mean and rstd recomputed from x).
Tensor layer_norm_backward(const Tensor& g, const Tensor& x, const Shape& normalized_shape,
                           const Tensor& weight, double eps);
// The weight and bias gradients of layer_norm for the gradient g at its output, stacked into
// (2, *normalized_shape): [sum over the leading dims of g * xhat, sum over the leading dims of g].
Tensor layer_norm_param_grad(const Tensor& g, const Tensor& x, const Shape& normalized_shape,
                             double eps);
// Fused batch normalisation with the batch's own statistics (training mode), per channel (dim 1)
// of x (N, C, *); weight and bias (C) or undefined. The (2, C) [mean, biased variance] it used
// are in the result's saved()[0] (constants, for the running statistics).
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
// The gradient of batch_norm(x, weight, bias, eps) w.r.t. x for the gradient g at its output.
Tensor batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight, double eps);
// The weight and bias gradients of batch_norm for the gradient g at its output, stacked into
// (2, C): [sum of g * xhat, sum of g] over every dim but the channel one.
Tensor batch_norm_param_grad(const Tensor& g, const Tensor& x, double eps);

}  // namespace vk
