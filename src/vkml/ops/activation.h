// torch.nn.functional's activations with parameters, silu, and the element-wise pieces of the
// smooth L1 and Huber losses, and their gradients, as ops of their own: one pass each where the
// compositions of element-wise ops they replace took two to ten (#18).
// nn/activation.cpp builds the functional API (relu6, hardsigmoid, selu, celu, logsigmoid, ...)
// on them.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// x where x > 0, else x * negative_slope.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// g where x > 0, else g * negative_slope (a NaN x takes the slope, as torch's).
Tensor leaky_relu_backward(const Tensor& g, const Tensor& x, double negative_slope);
// x clamped to [min_val, max_val]; its gradient passes only strictly inside.
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
// 0 where x <= min_val or x >= max_val, else g (a NaN x passes g, as torch's).
Tensor hardtanh_backward(const Tensor& g, const Tensor& x, double min_val, double max_val);
// x where x > 0, else alpha * (e^(x * input_scale) - 1): elu, and celu with input_scale 1 / alpha.
Tensor elu(const Tensor& x, double alpha = 1.0, double input_scale = 1.0);
// g where x > 0 (and at NaN), else g * input_scale * alpha * e^(x * input_scale).
Tensor elu_backward(const Tensor& g, const Tensor& x, double alpha, double input_scale);
// log(1 + e^(beta x)) / beta, x itself where beta x > threshold (threshold may be inf).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
// g * sigmoid(beta x), g itself where beta x > threshold.
Tensor softplus_backward(const Tensor& g, const Tensor& x, double beta, double threshold);
// min(max(x + 3, 0), 6) / 6.
Tensor hardsigmoid(const Tensor& x);
// g / 6 strictly inside (-3, 3), else 0 (NaN too).
Tensor hardsigmoid_backward(const Tensor& g, const Tensor& x);
// x * min(max(x + 3, 0), 6) / 6.
Tensor hardswish(const Tensor& x);
// 0 below -3, g * (x / 3 + 1/2) up to 3, g above (and at NaN), as torch's.
Tensor hardswish_backward(const Tensor& g, const Tensor& x);
// x * sigmoid(x) (silu, swish).
Tensor silu(const Tensor& x);
// g * s * (1 + x * (1 - s)), s = sigmoid(x), as torch's.
Tensor silu_backward(const Tensor& g, const Tensor& x);
// smooth_l1_loss's element of the difference x: 0.5 x^2 / beta where |x| < beta, else |x| - beta
// / 2.
Tensor smooth_l1(const Tensor& x, double beta);
// -g where x <= -beta, g where x >= beta, else g * x / beta.
Tensor smooth_l1_backward(const Tensor& g, const Tensor& x, double beta);
// huber_loss's element of the difference x: 0.5 x^2 where |x| < delta, else delta (|x| - delta /
// 2).
Tensor huber(const Tensor& x, double delta);
// mse_loss's element, (a - b)^2 of one floating dtype (broadcast), in one pass.
Tensor squared_difference(const Tensor& a, const Tensor& b);
// -g delta where x <= -delta, g delta where x >= delta, else g * x.
Tensor huber_backward(const Tensor& g, const Tensor& x, double delta);

}  // namespace vk
