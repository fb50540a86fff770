// Bindings: the math family (ops/math.h; issue #15): inverse trigonometric and hyperbolic
// functions, tan, lgamma/digamma/polygamma, erfinv, log2/log10/exp2/frac, atan2, fmod, and the
// composites (hypot, logaddexp, nansum, ...), each as vk.<name> and Tensor.<name>. The in-place
// forms and the Python-level names (aminmax, isin, aliases) are in vkml/_math.py.
#include "bind_ops.h"
#include "vkml/ops/math.h"

namespace vkpy {

using namespace bindings;

namespace {

void bind_math_unary(nb::module_& m, nb::class_<Tensor>& c) {
  VKPY_UNARY("tan", vk::tan(x));
  VKPY_UNARY("asin", vk::asin(x));
  VKPY_UNARY("arcsin", vk::asin(x));
  VKPY_UNARY("acos", vk::acos(x));
  VKPY_UNARY("arccos", vk::acos(x));
  VKPY_UNARY("atan", vk::atan(x));
  VKPY_UNARY("arctan", vk::atan(x));
  VKPY_UNARY("sinh", vk::sinh(x));
  VKPY_UNARY("cosh", vk::cosh(x));
  VKPY_UNARY("asinh", vk::asinh(x));
  VKPY_UNARY("arcsinh", vk::asinh(x));
  VKPY_UNARY("acosh", vk::acosh(x));
  VKPY_UNARY("arccosh", vk::acosh(x));
  VKPY_UNARY("atanh", vk::atanh(x));
  VKPY_UNARY("arctanh", vk::atanh(x));
  VKPY_UNARY("lgamma", vk::lgamma(x));
  VKPY_UNARY("digamma", vk::digamma(x));
  VKPY_UNARY("erfinv", vk::erfinv(x));
  VKPY_UNARY("log2", vk::log2(x));
  VKPY_UNARY("log10", vk::log10(x));
  VKPY_UNARY("exp2", vk::exp2(x));
  VKPY_UNARY("sinc", vk::sinc(x));
  VKPY_UNARY("frac", vk::frac(x));
  VKPY_UNARY("signbit", vk::signbit(x));
  VKPY_UNARY("deg2rad", vk::deg2rad(x));
  VKPY_UNARY("rad2deg", vk::rad2deg(x));
  VKPY_UNARY("isposinf", vk::isposinf(x));
  VKPY_UNARY("isneginf", vk::isneginf(x));
  // torch.polygamma(n, input) but input.polygamma(n)
  auto polygamma = [](int64_t n, const Tensor& x) {
    return without_gil(heavy(x), [&] { return vk::polygamma(n, x); });
  };
  m.def("polygamma", polygamma, "n"_a, "input"_a);
  c.def(
      "polygamma", [polygamma](const Tensor& x, int64_t n) { return polygamma(n, x); }, "n"_a);
  both(
      m, c, "logit",
      [](const Tensor& x, std::optional<double> eps) {
        return without_gil(heavy(x), [&] { return vk::logit(x, eps); });
      },
      "eps"_a = nb::none());
}

void bind_math_binary(nb::module_& m, nb::class_<Tensor>& c) {
  VKPY_BINARY("atan2", vk::atan2(x, y));
  VKPY_BINARY("arctan2", vk::atan2(x, y));
  VKPY_BINARY("fmod", vk::fmod(x, y));
  VKPY_BINARY("bitwise_left_shift", vk::bitwise_left_shift(x, y));
  VKPY_BINARY("bitwise_right_shift", vk::bitwise_right_shift(x, y));
  VKPY_BINARY("gcd", vk::gcd(x, y));
  VKPY_BINARY("lcm", vk::lcm(x, y));
  VKPY_BINARY("nextafter", vk::nextafter(x, y));
  VKPY_BINARY("hypot", vk::hypot(x, y));
  VKPY_BINARY("copysign", vk::copysign(x, y));
  VKPY_BINARY("logaddexp", vk::logaddexp(x, y));
  VKPY_BINARY("logaddexp2", vk::logaddexp2(x, y));
  VKPY_BINARY("xlogy", vk::xlogy(x, y));
  VKPY_BINARY("float_power", vk::float_power(x, y));
  VKPY_BINARY("fmax", vk::fmax(x, y));
  VKPY_BINARY("fmin", vk::fmin(x, y));
  VKPY_BINARY("ldexp", vk::ldexp(x, y));
  both(
      m, c, "heaviside",
      [](const Tensor& x, const Tensor& values) {
        return without_gil(heavy(x, values), [&] { return vk::heaviside(x, values); });
      },
      "values"_a);
}

void bind_math_reductions(nb::module_& m, nb::class_<Tensor>& c) {
  both(
      m, c, "nansum",
      [](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor in = dtype.is_none() ? x : vk::cast(x, to_dtype(dtype));
        return vk::nansum(in, to_dims(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "nanmean",
      [](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor in = dtype.is_none() ? x : vk::cast(x, to_dtype(dtype));
        return vk::nanmean(in, to_dims(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "count_nonzero",
      [](const Tensor& x, nb::handle dim) { return vk::count_nonzero(x, to_dims(dim)); },
      "dim"_a = nb::none());
  both(
      m, c, "logcumsumexp",
      [](const Tensor& x, int64_t dim) {
        return without_gil(heavy(x), [&] { return vk::logcumsumexp(x, dim); });
      },
      "dim"_a);
}

}  // namespace

void bind_math(nb::module_& m, nb::class_<Tensor>& c) {
  bind_math_unary(m, c);
  bind_math_binary(m, c);
  bind_math_reductions(m, c);
}

}  // namespace vkpy
