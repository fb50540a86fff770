// Bindings: Reductions (ops/reduction.cpp): sum/mean/max/min/var/std/... with torch's dim and
// keepdim arguments, argmax/argmin, softmax and friends.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_reduction(nb::module_& m, nb::class_<Tensor>& c) {
  // ---- reductions ----
  auto maybe_cast = [](const Tensor& x, nb::handle dtype) {
    return dtype.is_none() ? x : vk::cast(x, to_dtype(dtype));
  };
  both(
      m, c, "sum",
      [maybe_cast](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::sum(in, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "mean",
      [maybe_cast](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::mean(in, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "prod",
      [maybe_cast](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::prod(in, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "amax",
      [](const Tensor& x, nb::handle dim, bool keepdim) {
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::amax(x, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false);
  both(
      m, c, "amin",
      [](const Tensor& x, nb::handle dim, bool keepdim) {
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::amin(x, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false);
  for (bool is_max : {true, false}) {
    auto f = [is_max](const Tensor& x, nb::handle dim, bool keepdim) -> nb::object {
      if (dim.is_none()) return nb::cast(is_max ? vk::amax(x) : vk::amin(x));
      if (nb::isinstance<Tensor>(dim)) {
        const Tensor& o = nb::cast<const Tensor&>(dim);
        return nb::cast(is_max ? vk::maximum(x, o) : vk::minimum(x, o));
      }
      int64_t d = as_i64(dim);
      return values_indices(is_max, is_max ? vk::max(x, d, keepdim) : vk::min(x, d, keepdim));
    };
    both(m, c, is_max ? "max" : "min", f, "dim"_a = nb::none(), "keepdim"_a = false);
  }
  for (bool is_max : {true, false}) {
    auto f = [is_max](const Tensor& x, nb::handle dim, bool keepdim) {
      if (dim.is_none()) return is_max ? vk::argmax(x) : vk::argmin(x);
      int64_t d = as_i64(dim);
      return is_max ? vk::argmax(x, d, keepdim) : vk::argmin(x, d, keepdim);
    };
    both(m, c, is_max ? "argmax" : "argmin", f, "dim"_a = nb::none(), "keepdim"_a = false);
  }
  both(
      m, c, "logsumexp",
      [](const Tensor& x, nb::handle dim, bool keepdim) {
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::logsumexp(x, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false);
  both(
      m, c, "var",
      [](const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim,
         nb::handle correction) {
        double corr = correction_of(dim, unbiased, correction);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::var(x, dims, corr, keepdim); });
      },
      "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "correction"_a = nb::none());
  both(
      m, c, "std",
      [](const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim,
         nb::handle correction) {
        double corr = correction_of(dim, unbiased, correction);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::sqrt(vk::var(x, dims, corr, keepdim)); });
      },
      "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "correction"_a = nb::none());
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
  m.def(
      "gelu_backward",
      [](const Tensor& g, const Tensor& x) {
        return without_gil(heavy(g), [&] { return vk::gelu_backward(g, x); });
      },
      "grad"_a, "input"_a);
}

}  // namespace vkpy
