// The math family (issue #15, "math ops (#15)"): the element-wise math of torch beyond the basics
// of elementwise.h. Table ops with kernels (inverse trigonometric and hyperbolic functions, tan,
// lgamma, digamma, polygamma, erfinv, log2, log10, exp2, frac, atan2, fmod; ops/math.cpp) and
// composites of table ops (hypot, logaddexp, ...; ops/composite_math.cpp), which need no kernel
// of their own.
#pragma once
#include <optional>

#include "vkml/ops/reduction.h"

namespace vk {

// ---- table ops (ops/math.cpp): integer and bool inputs compute in float32, as torch ----
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor lgamma(const Tensor& x);
Tensor digamma(const Tensor& x);
Tensor polygamma(int64_t n, const Tensor& x);  // n >= 0; n = 0 is digamma
Tensor erfinv(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor frac(const Tensor& x);  // floating point only (NotImplementedError), as torch
Tensor atan2(const Tensor& y, const Tensor& x);
Tensor fmod(const Tensor& a, const Tensor& b);  // C's fmod: the sign of a; integers stay integer
// Integers (int32, int64), as torch: shifts of two's complement bits (out-of-range shifts give 0,
// or -1 for a negative a shifted right), gcd and lcm of the magnitudes.
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor gcd(const Tensor& a, const Tensor& b);
Tensor lcm(const Tensor& a, const Tensor& b);
Tensor nextafter(const Tensor& a, const Tensor& b);  // floats: the next float after a towards b

// ---- composites (ops/composite_math.cpp) ----
Tensor logaddexp(const Tensor& a, const Tensor& b);
Tensor logaddexp2(const Tensor& a, const Tensor& b);
Tensor xlogy(const Tensor& x, const Tensor& y);
Tensor float_power(const Tensor& a, const Tensor& b);  // in float64, as torch
Tensor fmax(const Tensor& a, const Tensor& b);         // NaN ignored where the other is a number
Tensor fmin(const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, const Tensor& b);
Tensor hypot(const Tensor& a, const Tensor& b);
Tensor heaviside(const Tensor& x, const Tensor& values);
Tensor ldexp(const Tensor& x, const Tensor& e);  // x * 2^e
Tensor logit(const Tensor& x, std::optional<double> eps = std::nullopt);
Tensor sinc(const Tensor& x);
Tensor signbit(const Tensor& x);
Tensor deg2rad(const Tensor& x);
Tensor rad2deg(const Tensor& x);
Tensor isposinf(const Tensor& x);
Tensor isneginf(const Tensor& x);
Tensor nansum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor nanmean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor count_nonzero(const Tensor& x, const Dims& dims = {});
Tensor logcumsumexp(const Tensor& x, int64_t dim);

}  // namespace vk
