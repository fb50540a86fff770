// Bindings: Reductions (ops/reduction.cpp): sum/mean/max/min/var/std/... with torch's dim and
// keepdim arguments, argmax/argmin.
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
}

}  // namespace vkpy
