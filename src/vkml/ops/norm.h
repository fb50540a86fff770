// Normalisation: fused layer_norm and batch_norm, their gradients w.r.t. x and their weight and
// bias gradients.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

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
// of x (N, C, *); weight and bias (C) or undefined. batch_norm_with_stats also returns the
// (2, C) [mean, biased variance] it used (constants, for the running statistics): the op's
// second output.
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
struct BatchNormResult {
  Tensor y, stats;
};
BatchNormResult batch_norm_with_stats(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                      double eps);
// The gradient of batch_norm(x, weight, bias, eps) w.r.t. x for the gradient g at its output.
Tensor batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight, double eps);
// The weight and bias gradients of batch_norm for the gradient g at its output, stacked into
// (2, C): [sum of g * xhat, sum of g] over every dim but the channel one.
Tensor batch_norm_param_grad(const Tensor& g, const Tensor& x, double eps);

}  // namespace vk
