// Bindings: the softmax family (ops/softmax.cpp): softmax and log_softmax as functions and
// methods (with torch's dtype argument), and their fused backward ops.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_softmax(nb::module_& m, nb::class_<Tensor>& c) {
  auto maybe_cast = [](const Tensor& x, nb::handle dtype) {
    return dtype.is_none() ? x : vk::cast(x, to_dtype(dtype));
  };
  both(
      m, c, "softmax",
      [maybe_cast](const Tensor& x, int64_t dim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        return without_gil(heavy(x), [&] { return vk::softmax(in, dim); });
      },
      "dim"_a, "dtype"_a = nb::none());
  both(
      m, c, "log_softmax",
      [maybe_cast](const Tensor& x, int64_t dim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        return without_gil(heavy(x), [&] { return vk::log_softmax(in, dim); });
      },
      "dim"_a, "dtype"_a = nb::none());
  m.def(
      "softmax_backward",
      [](const Tensor& g, const Tensor& out, int64_t dim) {
        return without_gil(heavy(g), [&] { return vk::softmax_backward(g, out, dim); });
      },
      "grad"_a, "output"_a, "dim"_a);
  m.def(
      "log_softmax_backward",
      [](const Tensor& g, const Tensor& out, int64_t dim) {
        return without_gil(heavy(g), [&] { return vk::log_softmax_backward(g, out, dim); });
      },
      "grad"_a, "output"_a, "dim"_a);
}

}  // namespace vkpy
