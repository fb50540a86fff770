// Bindings: the activations' fused gradients (ops/activation.h), named and ordered as torch's aten
// ops (torch.ops.aten.leaky_relu_backward, ...). The forward ops are reached through
// vk.nn.functional (python/src/nn.cpp), as torch's.
#include "bind_ops.h"
#include "vkml/ops/activation.h"

namespace vkpy {

using namespace bindings;

void bind_activation(nb::module_& m) {
  m.def(
      "leaky_relu_backward",
      [](const Tensor& g, const Tensor& x, double slope) {
        return without_gil(heavy(g), [&] { return vk::leaky_relu_backward(g, x, slope); });
      },
      "grad"_a, "input"_a, "negative_slope"_a);
  m.def(
      "hardtanh_backward",
      [](const Tensor& g, const Tensor& x, double lo, double hi) {
        return without_gil(heavy(g), [&] { return vk::hardtanh_backward(g, x, lo, hi); });
      },
      "grad"_a, "input"_a, "min_val"_a, "max_val"_a);
  m.def(
      "elu_backward",
      [](const Tensor& g, const Tensor& x, double alpha, double input_scale) {
        return without_gil(heavy(g), [&] { return vk::elu_backward(g, x, alpha, input_scale); });
      },
      "grad"_a, "input"_a, "alpha"_a = 1.0, "input_scale"_a = 1.0);
  m.def(
      "softplus_backward",
      [](const Tensor& g, const Tensor& x, double beta, double threshold) {
        return without_gil(heavy(g), [&] { return vk::softplus_backward(g, x, beta, threshold); });
      },
      "grad"_a, "input"_a, "beta"_a = 1.0, "threshold"_a = 20.0);
  m.def(
      "hardsigmoid_backward",
      [](const Tensor& g, const Tensor& x) {
        return without_gil(heavy(g), [&] { return vk::hardsigmoid_backward(g, x); });
      },
      "grad"_a, "input"_a);
  m.def(
      "hardswish_backward",
      [](const Tensor& g, const Tensor& x) {
        return without_gil(heavy(g), [&] { return vk::hardswish_backward(g, x); });
      },
      "grad"_a, "input"_a);
  m.def(
      "silu_backward",
      [](const Tensor& g, const Tensor& x) {
        return without_gil(heavy(g), [&] { return vk::silu_backward(g, x); });
      },
      "grad_output"_a, "input"_a);
}

}  // namespace vkpy
