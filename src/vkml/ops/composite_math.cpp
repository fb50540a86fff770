// The math family's composites (issue #15): torch functions written with table ops, accurate as
// written (each says why), so they need no kernel and run on every device. Their gradients come
// from the ops used; where a branch is not taken, its input is replaced first (the "double
// where"), so that an inf there cannot turn the gradient into NaN.
#include <cmath>
#include <limits>
#include <numbers>

#include "vkml/ops/composite.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/math.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLn2 = std::numbers::ln2;

Tensor num(double v, const Tensor& like) { return scalar_like(v, like); }
Tensor is_nan(const Tensor& x) { return ne(x, x); }
Tensor is_inf(const Tensor& x) { return eq(abs(x), num(kInf, x)); }

// Integer and bool inputs compute in float32 (torch's default dtype), as torch's float math.
Tensor as_float(const Tensor& x) { return is_floating(x.dtype()) ? x : cast(x, DType::Float32); }

// a and b in their common dtype, made floating.
std::pair<Tensor, Tensor> common_float(const Tensor& a, const Tensor& b) {
  DType t = result_type(a, b);
  if (!is_floating(t)) t = DType::Float32;
  return {cast(a, t), cast(b, t)};
}

void check_floating(const Tensor& a, const Tensor& b, const char* op) {
  DType t = result_type(a, b);
  VK_CHECK(is_floating(t), NotImplementedError, op, ": not implemented for ", dtype_name(t),
           " tensors (as in PyTorch); it takes floating point tensors");
}

// m + log1p(e(-|a - b|)) with m = max(a, b): never overflows; a == b = +-inf is that infinity
// (a - b would be NaN).
template <class F>
Tensor log_add(const Tensor& a0, const Tensor& b0, const char* op, F scaled_log1p_exp_neg) {
  check_floating(a0, b0, op);
  auto [a, b] = common_float(a0, b0);
  Tensor m = maximum(a, b);
  Tensor same_inf = bitwise_and(is_inf(m), eq(a, b));
  Tensor d = where(same_inf, num(0.0, a), a - b);
  Tensor r = m + scaled_log1p_exp_neg(abs(d));
  return where(same_inf, m, r);
}

}  // namespace

Tensor logaddexp(const Tensor& a, const Tensor& b) {
  return log_add(a, b, "logaddexp", [](const Tensor& d) { return log1p(exp(neg(d))); });
}

Tensor logaddexp2(const Tensor& a, const Tensor& b) {
  return log_add(a, b, "logaddexp2",
                 [](const Tensor& d) { return log1p(exp2(neg(d))) * (1 / kLn2); });
}

// x * log(y), 0 where x == 0 unless y is NaN. x == 0 keeps a gradient of log(y) (as torch) by
// multiplying x with a log made finite there, rather than selecting a constant.
Tensor xlogy(const Tensor& x0, const Tensor& y0) {
  auto [x, y] = common_float(x0, y0);
  Tensor zero_x = eq(x, num(0.0, x));
  Tensor bad_log = bitwise_or(le(y, num(0.0, y)), eq(y, num(kInf, y)));
  Tensor safe_y = where(bitwise_and(zero_x, bad_log), num(1.0, y), y);
  return x * log(safe_y);
}

Tensor float_power(const Tensor& a, const Tensor& b) {
  return pow(cast(a, DType::Float64), cast(b, DType::Float64));
}

// torch's fmax: the gradient goes to a where a >= b or b is NaN (ties all to a, not split).
Tensor fmax(const Tensor& a, const Tensor& b) {
  return where(bitwise_or(ge(a, b), is_nan(b)), a, b);
}
Tensor fmin(const Tensor& a, const Tensor& b) {
  return where(bitwise_or(le(a, b), is_nan(b)), a, b);
}

// |a| with b's sign bit (-0 counts as negative; a NaN's sign bit cannot be read with table ops,
// so a negative NaN b gives a positive result, unlike torch).
Tensor copysign(const Tensor& a0, const Tensor& b0) {
  auto [a, b] = common_float(a0, b0);
  Tensor r = abs(a);
  return where(signbit(b), neg(r), r);
}

// max * sqrt(1 + (min/max)^2): no overflow or underflow in the squares (sqrt(a^2 + b^2) would);
// an infinite side gives inf even beside a NaN, as C's hypot.
Tensor hypot(const Tensor& a0, const Tensor& b0) {
  check_floating(a0, b0, "hypot");
  auto [a, b] = common_float(a0, b0);
  Tensor aa = abs(a), ab = abs(b);
  Tensor hi = maximum(aa, ab), lo = minimum(aa, ab);
  Tensor any_inf = bitwise_or(is_inf(aa), is_inf(ab));
  Tensor safe_hi = where(bitwise_or(eq(hi, num(0.0, hi)), any_inf), num(1.0, hi), hi);
  Tensor r = lo / safe_hi;
  Tensor out = where(eq(hi, num(0.0, hi)), hi, safe_hi * sqrt(r * r + 1.0));
  return where(any_inf, num(kInf, out), out);
}

Tensor heaviside(const Tensor& x, const Tensor& values) {
  VK_CHECK(x.dtype() == values.dtype(), RuntimeError,
           "heaviside is not yet implemented for tensors with different dtypes (got ",
           dtype_name(x.dtype()), " and ", dtype_name(values.dtype()), ")");
  Tensor step = cast(gt(x, zeros({}, x.dtype(), x.device())), x.dtype());
  return where(eq(x, zeros({}, x.dtype(), x.device())), values, step);
}

// x * 2^e, as torch (x * pow(2, e)).
Tensor ldexp(const Tensor& x, const Tensor& e) { return as_float(x) * exp2(e); }

// log(z) - log1p(-z) rather than torch's log(z / (1 - z)): the same values to rounding, and a
// gradient 1/z + 1/(1 - z) that is inf at 0 and 1, as torch's, where the quotient's is NaN.
Tensor logit(const Tensor& x0, std::optional<double> eps) {
  Tensor x = as_float(x0);
  Tensor z = eps ? clamp(x, *eps, 1.0 - *eps) : x;
  return log(z) - log1p(neg(z));
}

// sin(pi x) / (pi x), 1 at 0 (with gradient 0 there, as torch). pi x rounds as torch's does.
Tensor sinc(const Tensor& x0) {
  Tensor x = as_float(x0);
  Tensor zero = eq(x, num(0.0, x));
  Tensor px = where(zero, num(1.0, x), x) * std::numbers::pi;
  return where(zero, num(1.0, x), sin(px) / px);
}

// x < 0, and -0 (whose reciprocal is -inf); integers: x < 0; bool: false.
Tensor signbit(const Tensor& x) {
  if (x.dtype() == DType::Bool) return zeros_like(x);
  if (!is_floating(x.dtype())) return lt(x, zeros({}, x.dtype(), x.device()));
  Tensor zero = num(0.0, x);
  Tensor negative_zero = bitwise_and(eq(x, zero), lt(reciprocal(x), zero));
  return bitwise_or(lt(x, zero), negative_zero);
}

Tensor deg2rad(const Tensor& x) { return as_float(x) * (std::numbers::pi / 180); }
Tensor rad2deg(const Tensor& x) { return as_float(x) * (180 / std::numbers::pi); }

Tensor isposinf(const Tensor& x) {
  if (!is_floating(x.dtype())) return ne(x, x);
  return eq(x, num(kInf, x));
}
Tensor isneginf(const Tensor& x) {
  if (!is_floating(x.dtype())) return ne(x, x);
  return eq(x, num(-kInf, x));
}

Tensor nansum(const Tensor& x, const Dims& dims, bool keepdim) {
  if (!is_floating(x.dtype())) return sum(x, dims, keepdim);
  return sum(where(is_nan(x), num(0.0, x), x), dims, keepdim);
}

Tensor nanmean(const Tensor& x, const Dims& dims, bool keepdim) {
  VK_CHECK(is_floating(x.dtype()), RuntimeError,
           "nanmean(): expected input to have floating point dtype but got ",
           dtype_name(x.dtype()));
  Tensor count = sum(cast(logical_not(is_nan(x)), x.dtype()), dims, keepdim);
  return nansum(x, dims, keepdim) / count;
}

Tensor count_nonzero(const Tensor& x, const Dims& dims) {
  Tensor nz = x.dtype() == DType::Bool ? x : ne(x, zeros({}, x.dtype(), x.device()));
  return sum(cast(nz, DType::Int64), dims, false);
}

// A log-space prefix scan (Hillis-Steele): log2(n) rounds of y[i] = logaddexp(y[i], y[i - k]),
// k = 1, 2, 4, ...: every combination is logaddexp's, stable whatever the range of a row (a
// cumsum of exp(x - max) would lose the prefix far below the row's maximum), and the same order
// on every device.
Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  VK_CHECK(is_floating(x.dtype()), NotImplementedError, "logcumsumexp: not implemented for ",
           dtype_name(x.dtype()), " tensors (as in PyTorch)");
  if (x.ndim() == 0) {
    (void)wrap_dim(dim, 1, "logcumsumexp");
    return x * 1.0;
  }
  const int64_t d = wrap_dim(dim, x.ndim(), "logcumsumexp");
  const int64_t n = x.shape()[d];
  Tensor y = x;
  for (int64_t k = 1; k < n; k *= 2) {
    Shape head_shape = x.shape();
    head_shape[d] = k;
    Tensor head = full(head_shape, -kInf, x.dtype(), x.device());
    y = logaddexp(y, cat({head, slice(y, d, 0, n - k)}, d));
  }
  return y;
}

}  // namespace vk
