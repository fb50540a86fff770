// Bindings: the normalisations' op-level extras (ops/norm.cpp): the fused backward and
// parameter-gradient ops. layer_norm and batch_norm themselves are torch.nn.functional's
// (nn.cpp), which checks their arguments and keeps the running statistics.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_norm(nb::module_& m) {
  m.def(
      "layer_norm_backward",
      [](const Tensor& g, const Tensor& x, nb::handle normalized_shape,
         std::optional<Tensor> weight, double eps) {
        Shape s = to_shape(normalized_shape);
        return without_gil(heavy(g), [&] {
          return vk::layer_norm_backward(g, x, s, weight ? *weight : Tensor(), eps);
        });
      },
      "grad"_a, "input"_a, "normalized_shape"_a, "weight"_a = nb::none(), "eps"_a = 1e-5);
  m.def(
      "layer_norm_param_grad",
      [](const Tensor& g, const Tensor& x, nb::handle normalized_shape, double eps) {
        Shape s = to_shape(normalized_shape);
        return without_gil(heavy(g), [&] { return vk::layer_norm_param_grad(g, x, s, eps); });
      },
      "grad"_a, "input"_a, "normalized_shape"_a, "eps"_a = 1e-5);
  m.def(
      "batch_norm_backward",
      [](const Tensor& g, const Tensor& x, std::optional<Tensor> weight, double eps) {
        return without_gil(heavy(g), [&] {
          return vk::batch_norm_backward(g, x, weight ? *weight : Tensor(), eps);
        });
      },
      "grad"_a, "input"_a, "weight"_a = nb::none(), "eps"_a = 1e-5);
  m.def(
      "batch_norm_param_grad",
      [](const Tensor& g, const Tensor& x, double eps) {
        return without_gil(heavy(g), [&] { return vk::batch_norm_param_grad(g, x, eps); });
      },
      "grad"_a, "input"_a, "eps"_a = 1e-5);
}

}  // namespace vkpy
