// Bindings: the special functions (ops/special.h; issue #15). torch.i0 and Tensor.i0,
// torch.igamma/igammac and their methods; i0e, i1 and i1e live in torch.special only, so they are
// bound here as _C._special_<name> (vkml/_bessel.py wraps them for vkml.special). The in-place
// forms (i0_, igamma_, igammac_) are in vkml/_bessel.py. torch._standard_gamma_grad too (the
// derivative of torch._standard_gamma's samples, bind_random.cpp).
#include "bind_ops.h"
#include "vkml/ops/special.h"

namespace vkpy {

using namespace bindings;

void bind_special(nb::module_& m, nb::class_<Tensor>& c) {
  VKPY_UNARY("i0", vk::i0(x));
  VKPY_BINARY("igamma", vk::igamma(x, y));
  VKPY_BINARY("igammac", vk::igammac(x, y));
  m.def(
      "_special_i0e",
      [](const Tensor& x) { return without_gil(heavy(x), [&] { return vk::i0e(x); }); }, "input"_a);
  m.def(
      "_special_i1",
      [](const Tensor& x) { return without_gil(heavy(x), [&] { return vk::i1(x); }); }, "input"_a);
  m.def(
      "_special_i1e",
      [](const Tensor& x) { return without_gil(heavy(x), [&] { return vk::i1e(x); }); }, "input"_a);
  m.def(
      "_standard_gamma_grad",
      [](const Tensor& x, const Tensor& output) {
        return without_gil(heavy(x, output), [&] { return vk::standard_gamma_grad(x, output); });
      },
      "input"_a, "output"_a,
      "d output / d input of Gamma(input) samples `output` held at their quantiles.");
}

}  // namespace vkpy
