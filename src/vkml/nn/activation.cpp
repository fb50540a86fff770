// torch.nn.functional's activations (issue #16), each an activation op (ops/activation.h: one
// fused pass forward and backward, #18) or composed from element-wise ops: every gradient comes
// from the ops' rules, so they differentiate to any order and run on every device.
//
// A branch that where() does not take still feeds its gradient (times zero) back: an exp that
// overflows there would turn that zero into NaN. So every exp-based branch sees its input
// clamped to the side where it is used.
#include <cmath>

#include "vkml/nn/breadth_util.h"
#include "vkml/nn/functional.h"
#include "vkml/ops/shape.h"
#include "vkml/ops/softmax.h"

namespace vk::nn::functional {

using breadth::check_float;

namespace {

Tensor zero(const Tensor& like) { return scalar_like(0.0, like); }

}  // namespace

Tensor mish(const Tensor& x) {
  check_float(x, "mish", "input");
  return x * vk::tanh(breadth::softplus_stable(x));
}

Tensor hardsigmoid(const Tensor& x) {
  check_float(x, "hardsigmoid", "input");
  return vk::hardsigmoid(x);
}

Tensor hardswish(const Tensor& x) {
  check_float(x, "hardswish", "input");
  return vk::hardswish(x);
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  check_float(x, "hardtanh", "input");
  return vk::hardtanh(x, min_val, max_val);
}

Tensor relu6(const Tensor& x) { return functional::hardtanh(x, 0.0, 6.0); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  check_float(x, "leaky_relu", "input");
  return vk::leaky_relu(x, negative_slope);
}

Tensor elu(const Tensor& x, double alpha) {
  check_float(x, "elu", "input");
  return vk::elu(x, alpha, 1.0);
}

Tensor selu(const Tensor& x) {
  check_float(x, "selu", "input");
  // the constants of Klambauer et al. 2017, as torch
  constexpr double alpha = 1.6732632423543772848170429916717;
  constexpr double scale = 1.0507009873554804934193349852946;
  return vk::elu(x, alpha, 1.0) * scale;
}

Tensor celu(const Tensor& x, double alpha) {
  check_float(x, "celu", "input");
  VK_CHECK(alpha != 0.0, RuntimeError, "celu: ZeroDivisionError, alpha cannot be 0");
  return vk::elu(x, alpha, 1.0 / alpha);
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  check_float(x, "softplus", "input");
  return vk::softplus(x, beta, threshold);
}

Tensor softsign(const Tensor& x) {
  check_float(x, "softsign", "input");
  return x / (abs(x) + 1.0);
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
  constexpr const char* fn = "prelu";
  check_float(x, fn, "input");
  breadth::check_companion(weight, x, fn, "weight");
  const int64_t channels = x.ndim() >= 2 ? x.size(1) : 1;  // torch: a 1-D input has 1 channel
  VK_CHECK(weight.numel() == 1 || (weight.ndim() == 1 && weight.numel() == channels), SizeError, fn,
           ": weight of shape ", shape_str(weight.shape()),
           " must hold 1 value or one per channel of the input of shape ", shape_str(x.shape()));
  Tensor w = reshape(weight, {-1});
  if (weight.numel() > 1 && x.ndim() >= 2) {  // along dim 1
    Shape shape(static_cast<size_t>(x.ndim()), 1);
    shape[1] = channels;
    w = reshape(w, shape);
  } else if (weight.numel() == 1) {
    w = reshape(w, {});
  }
  return where(gt(x, zero(x)), x, x * w);
}

Tensor tanhshrink(const Tensor& x) {
  check_float(x, "tanhshrink", "input");
  return x - vk::tanh(x);
}

Tensor threshold(const Tensor& x, double threshold, double value) {
  check_float(x, "threshold", "input");
  return where(gt(x, scalar_like(threshold, x)), x, scalar_like(value, x));
}

Tensor glu(const Tensor& x, int64_t dim) {
  constexpr const char* fn = "glu";
  check_float(x, fn, "input");
  VK_CHECK(x.ndim() >= 1, RuntimeError, fn, ": glu does not support scalars (0-d input)");
  const int64_t d = dim < 0 ? dim + x.ndim() : dim;
  VK_CHECK(d >= 0 && d < x.ndim(), IndexError, fn, ": dim ", dim, " is out of range for shape ",
           shape_str(x.shape()));
  const int64_t n = x.size(d);
  VK_CHECK(n % 2 == 0, RuntimeError, fn, ": halving dimension must be even, but dimension ", d,
           " is size ", n, " (input of shape ", shape_str(x.shape()), ")");
  return slice(x, d, 0, n / 2) * vk::sigmoid(slice(x, d, n / 2, n));
}

Tensor logsigmoid(const Tensor& x) {
  check_float(x, "logsigmoid", "input");
  return breadth::log_sigmoid(x);
}

Tensor softmin(const Tensor& x, int64_t dim) {
  check_float(x, "softmin", "input");
  return vk::softmax(-x, dim);
}

Tensor hardshrink(const Tensor& x, double lambd) {
  check_float(x, "hardshrink", "input");
  return where(gt(abs(x), scalar_like(lambd, x)), x, zero(x));
}

Tensor softshrink(const Tensor& x, double lambd) {
  check_float(x, "softshrink", "input");
  VK_CHECK(lambd >= 0.0, RuntimeError, "softshrink: lambda must be greater or equal to 0, got ",
           lambd);
  Tensor shrunk = where(gt(x, scalar_like(lambd, x)), x - lambd, x + lambd);
  return where(gt(abs(x), scalar_like(lambd, x)), shrunk, zero(x));
}

}  // namespace vk::nn::functional
