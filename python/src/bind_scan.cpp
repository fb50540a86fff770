// Bindings: the scan family (ops/scan.cpp): cumsum, cumprod (with torch's dtype argument),
// cummax, cummin (torch.return_types' named tuples), tril, triu, as functions and methods, and
// the in-place methods cumsum_, cumprod_, tril_, triu_.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

namespace {

nb::object g_cummax_type, g_cummin_type;  // torch.return_types.cummax, .cummin

Tensor maybe_cast(const Tensor& x, nb::handle dtype) {
  return dtype.is_none() ? x : vk::cast(x, to_dtype(dtype));
}

// x = f(x), written into x's storage (copy_: x's version bumps, as torch's in-place ops).
template <class F>
nb::object in_place(nb::handle self, F f) {
  const Tensor& x = nb::cast<const Tensor&>(self);
  return rebind(self, vk::copy_(x, f(x)));
}

}  // namespace

void bind_scan(nb::module_& m, nb::class_<Tensor>& c) {
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  g_cummax_type =
      namedtuple("cummax", nb::make_tuple("values", "indices"), "module"_a = "vkml.return_types");
  g_cummin_type =
      namedtuple("cummin", nb::make_tuple("values", "indices"), "module"_a = "vkml.return_types");
  m.attr("_cummax_type") = g_cummax_type;
  m.attr("_cummin_type") = g_cummin_type;

  both(
      m, c, "cumsum",
      [](const Tensor& x, int64_t dim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        return without_gil(heavy(x), [&] { return vk::cumsum(in, dim); });
      },
      "dim"_a, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "cumprod",
      [](const Tensor& x, int64_t dim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        return without_gil(heavy(x), [&] { return vk::cumprod(in, dim); });
      },
      "dim"_a, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "cummax",
      [](const Tensor& x, int64_t dim) {
        auto r = without_gil(heavy(x), [&] { return vk::cummax(x, dim); });
        return g_cummax_type(r.values, r.indices);
      },
      "dim"_a);
  both(
      m, c, "cummin",
      [](const Tensor& x, int64_t dim) {
        auto r = without_gil(heavy(x), [&] { return vk::cummin(x, dim); });
        return g_cummin_type(r.values, r.indices);
      },
      "dim"_a);
  both(
      m, c, "tril",
      [](const Tensor& x, int64_t diagonal) {
        return without_gil(heavy(x), [&] { return vk::tril(x, diagonal); });
      },
      "diagonal"_a = 0);
  both(
      m, c, "triu",
      [](const Tensor& x, int64_t diagonal) {
        return without_gil(heavy(x), [&] { return vk::triu(x, diagonal); });
      },
      "diagonal"_a = 0);
  c.def(
      "cumsum_",
      [](nb::handle self, int64_t dim) {
        return in_place(self, [&](const Tensor& x) { return vk::cumsum(x, dim); });
      },
      "dim"_a);
  c.def(
      "cumprod_",
      [](nb::handle self, int64_t dim) {
        return in_place(self, [&](const Tensor& x) { return vk::cumprod(x, dim); });
      },
      "dim"_a);
  c.def(
      "tril_",
      [](nb::handle self, int64_t diagonal) {
        return in_place(self, [&](const Tensor& x) { return vk::tril(x, diagonal); });
      },
      "diagonal"_a = 0);
  c.def(
      "triu_",
      [](nb::handle self, int64_t diagonal) {
        return in_place(self, [&](const Tensor& x) { return vk::triu(x, diagonal); });
      },
      "diagonal"_a = 0);
}

}  // namespace vkpy
