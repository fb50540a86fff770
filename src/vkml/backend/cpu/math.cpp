// The math family's CPU kernels. The functions C++ has (tan, asin, ..., lgamma, atan2) are
// libm's, as PyTorch's CPU kernels, but for float32 asin, acos, atan, atan2, sinh, cosh and atanh,
// which run in double through vmath (vectorised, rounded once); digamma, polygamma and erfinv are
// computed here in double (float32 rounded from the double result), with the algorithms the
// Vulkan shader uses (shaders/math.comp), so both devices agree to rounding.
#include "vkml/backend/cpu/math.h"

#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include "vkml/backend/cpu/checked_blocks.h"
#include "vkml/backend/cpu/loops.h"
#include "vkml/backend/cpu/vmath_trig.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Elements per thread: each element costs tens of nanoseconds (libm calls, loops).
constexpr int64_t kGrain = kElementwiseGrain / 8;

template <class F>
Tensor unary(const Tensor& x, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(x.dtype(), name,
                    map_elements<T, T>(
                        out, {&x}, [&](T v) VK_ELEMENT -> T { return f(v); }, kGrain));
  return out;
}

// f evaluated in double, rounded once to the element type.
template <class F>
Tensor unary_in_double(const Tensor& x, const Meta& m, const char* name, F f) {
  return unary(x, m, name,
               [&](auto v) { return static_cast<decltype(v)>(f(static_cast<double>(v))); });
}

// sin(pi x) and cos(pi x) with the argument reduced exactly (pi x itself would round).
double sinpi(double x) {
  double r = std::fmod(x, 2.0);  // exact
  if (r < 0) r += 2.0;
  const double sign = r >= 1.0 ? -1.0 : 1.0;
  if (r >= 1.0) r -= 1.0;
  if (r > 0.5) r = 1.0 - r;
  return sign * (r > 0.25 ? std::cos(kPi * (0.5 - r)) : std::sin(kPi * r));
}
double cospi(double x) { return sinpi(x + 0.5); }  // x + 1/2 is exact where it matters (|x| < 2^51)

double digamma_positive(double x) {
  double result = 0;
  while (x < 10) {  // psi(x) = psi(x + 1) - 1/x, at most 10 steps
    result -= 1 / x;
    x += 1;
  }
  // psi(x) ~ log x - 1/(2x) - sum B_2k / (2k x^2k)
  const double z = 1 / (x * x);
  const double tail =
      z * (1.0 / 12 - z * (1.0 / 120 -
                           z * (1.0 / 252 -
                                z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return result + std::log(x) - 0.5 / x - tail;
}

// The Hurwitz zeta function zeta(s, x) = sum_k (x + k)^-s for an integer s >= 2: the terms up to
// x + k >= 10 + s summed, the rest by Euler-Maclaurin. NaN where x lies past -kMaxTerms (a sum
// that long would take too long; the shader has the same limit).
constexpr double kMaxTerms = 50000;
double hurwitz_zeta(double s, double x) {
  if (x < -kMaxTerms) return kNaN;
  double sum = 0, y = x;
  while (y < 10 + s) {
    sum += std::pow(y, -s);
    y += 1;
  }
  // B_2j / (2j)!, j = 1..7
  static constexpr double kC[7] = {1.0 / 12,         -1.0 / 720,     1.0 / 30240,
                                   -1.0 / 1209600,   1.0 / 47900160, -691.0 / 1307674368000,
                                   1.0 / 74724249600};
  double p = s * std::pow(y, -s - 1), tail = 0;
  for (int j = 0; j < 7; ++j) {
    tail += kC[j] * p;
    p *= (s + 2 * j + 1) * (s + 2 * j + 2) / (y * y);
  }
  return sum + std::pow(y, 1 - s) / (s - 1) + 0.5 * std::pow(y, -s) + tail;
}

double trigamma(double x) {
  if (x <= 0 && x == std::floor(x)) return kInf;
  if (x < 0) {  // reflection: psi1(x) + psi1(1 - x) = pi^2 / sin^2(pi x)
    const double s = sinpi(x);
    return kPi * kPi / (s * s) - hurwitz_zeta(2, 1 - x);
  }
  return hurwitz_zeta(2, x);
}

// Giles' single-precision approximation (2010) of erfinv, a start for Newton's method: p x, with p
// a polynomial (coefficients lowest first) in w - 2.5 below w = 5 and in sqrt(w) - 3 above, w =
// -log((1 - x)(1 + x)).
constexpr double kErfinvCentral[] = {1.50140941,     0.246640727,    -0.00417768164,
                                     -0.00125372503, 0.00021858087,  -4.39150654e-06,
                                     -3.5233877e-06, 3.43273939e-07, 2.81022636e-08};
constexpr double kErfinvTail[] = {2.83297682,    1.00167406,     0.00943887047,
                                  -0.0076224613, 0.00573950773,  -0.00367342844,
                                  0.00134934322, 0.000100950558, -0.000200214257};
double erfinv_start(double x) {
  const double w = -std::log((1.0 - x) * (1.0 + x));
  const double p = w < 5.0 ? vmath::detail::horner(w - 2.5, kErfinvCentral)
                           : vmath::detail::horner(std::sqrt(w) - 3.0, kErfinvTail);
  return p * x;
}

}  // namespace

double digamma_value(double x) {
  if (x == 0) return std::copysign(kInf, -x);  // as torch (and SciPy)
  if (x < 0) {
    if (x == std::floor(x)) return kNaN;
    // reflection: psi(x) = psi(1 - x) - pi / tan(pi x), with x's fraction (exact) in the tangent
    const double r = x - std::trunc(x);
    return digamma_positive(1 - x) - kPi * cospi(r) / sinpi(r);
  }
  return digamma_positive(x);
}

double polygamma_value(int64_t n, double x) {
  if (n == 1) return trigamma(x);
  if (std::isnan(x)) return x;
  if (x == kInf) return 0;
  double factorial = 1;  // n!, inf past 170
  for (int64_t k = 2; k <= n && factorial < kInf; ++k) factorial *= static_cast<double>(k);
  const double sign = n % 2 == 1 ? 1.0 : -1.0;
  if (x <= 0 && x == std::floor(x)) return sign * kInf;
  return sign * factorial * hurwitz_zeta(static_cast<double>(n + 1), x);
}

// Newton's method from Giles' start: two steps double its 7 digits twice over -- where the start
// has them. Past |x| = 1/2 the residual is taken as erfc(|y|) - (1 - |x|), where 1 - |x| is exact
// and erfc keeps its relative accuracy, so the result stays accurate next to +-1. Giles' start is
// a float approximation: past 1 - |x| ~ 1e-9 it drifts (8% off at 1 - 2^-53, where two steps left
// erfinv 5.364 for 5.864), so the steps go on until they stop moving (at most 32; from a start
// below the root, erfc's convexity makes them monotone).
double erfinv_value(double x) {
  if (std::isnan(x) || x < -1 || x > 1) return kNaN;
  if (x == 1 || x == -1) return std::copysign(kInf, x);
  const double ax = std::fabs(x);
  double t = std::fabs(erfinv_start(x));
  for (int k = 0; k < 32; ++k) {
    const double residual = ax <= 0.5 ? std::erf(t) - ax : (1.0 - ax) - std::erfc(t);
    const double step = residual * (std::sqrt(kPi) / 2) * std::exp(t * t);
    t -= step;
    if (!(std::fabs(step) > 0x1p-52 * t)) break;  // NaN stops too
  }
  return std::copysign(t, x);
}

// asin, acos and atan: float32 by vmath_trig.h's (vectorised; in double, rounded once: about half
// an ulp), float64 by libm. Zen 4, one thread, 1M floats in (-1, 1): atan 10.8 -> 1.0 ns an
// element, asin 8.5 -> 0.73, acos 8.7 -> 0.97 (torch 2.45, 1.5, 1.6).
VK_KERNEL(asin) {
  (void)a;
  return unary(in[0], m, "asin", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return vmath::asin(v);
    else
      return std::asin(v);
  });
}
VK_KERNEL(acos) {
  (void)a;
  return unary(in[0], m, "acos", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return vmath::acos(v);
    else
      return std::acos(v);
  });
}
VK_KERNEL(atan) {
  (void)a;
  return unary(in[0], m, "atan", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return vmath::atan(v);
    else
      return std::atan(v);
  });
}
// sinh, cosh, atanh, asinh and acosh: float32 in double through vmath's expm1, exp and log1p
// (vectorised, rounded once), float64 by libm. Zen 4, one thread, 1M floats in (-0.9, 0.9):
// sinh 15.8 ms, cosh 9.0, atanh 21.9 with libm per element (torch 1.4 each); 1M normal floats:
// asinh 20.9, acosh (of 1 + |x|) 14.4 (torch 20.7, 14.2).
//   sinh x = (t + t / (t + 1)) / 2 with t = e^|x| - 1, the sign of x: nothing cancels near 0
//   (|x| clamped to 100, where the float is inf already: t = inf would give inf / inf);
//   cosh x = (e + 1 / e) / 2, e = e^|x|; atanh x = log1p(2x / (1 - x)) / 2 (+-1 give +-inf,
//   |x| > 1 NaN, -0 stays -0).
[[gnu::always_inline]] inline double sinh_in_double(double x) {
  const double ax = std::fabs(x);
  const double t = vmath::expm1(vmath::detail::select(ax > 100.0, 100.0, ax));  // NaN passes
  return std::copysign(0.5 * (t + t / (t + 1.0)), x);
}
[[gnu::always_inline]] inline double cosh_in_double(double x) {
  const double e = vmath::exp(std::fabs(x));
  return 0.5 * (e + 1.0 / e);
}
[[gnu::always_inline]] inline double atanh_in_double(double x) {
  return 0.5 * vmath::log1p(2.0 * x / (1.0 - x));
}
// asinh |x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), the sign of x; past 2^60 the quotient is
// |x| to double precision, and it is taken so (an infinite x would give inf / inf).
// acosh x = log1p(t + sqrt(2t + t^2)), t = x - 1 (exact in double for a float): accurate near 1;
// below 1 NaN, chosen outright (far below, t + sqrt(t^2 + 2t) rounds to 0, not to a NaN).
[[gnu::always_inline]] inline double asinh_in_double(double x) {
  const double ax = std::fabs(x), x2 = ax * ax;
  const double q = vmath::detail::select(ax > 0x1p60, ax, x2 / (1.0 + std::sqrt(1.0 + x2)));
  return std::copysign(vmath::log1p(ax + q), x);
}
[[gnu::always_inline]] inline double acosh_in_double(double x) {
  const double t = x - 1.0;
  const double r = vmath::log1p(t + std::sqrt(2.0 * t + t * t));
  return vmath::detail::select(x < 1.0, std::numeric_limits<double>::quiet_NaN(), r);
}
VK_KERNEL(sinh) {
  (void)a;
  return unary(in[0], m, "sinh", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return static_cast<float>(sinh_in_double(v));
    else
      return std::sinh(v);
  });
}
VK_KERNEL(cosh) {
  (void)a;
  return unary(in[0], m, "cosh", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return static_cast<float>(cosh_in_double(v));
    else
      return std::cosh(v);
  });
}
VK_KERNEL(asinh) {
  (void)a;
  return unary(in[0], m, "asinh", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return static_cast<float>(asinh_in_double(v));
    else
      return std::asinh(v);
  });
}
VK_KERNEL(acosh) {
  (void)a;
  return unary(in[0], m, "acosh", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return static_cast<float>(acosh_in_double(v));
    else
      return std::acosh(v);
  });
}
VK_KERNEL(atanh) {
  (void)a;
  return unary(in[0], m, "atanh", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return static_cast<float>(atanh_in_double(v));
    else
      return std::atanh(v);
  });
}
// lgamma_r: std::lgamma writes the global signgam, a data race between the pool's threads.
VK_KERNEL(lgamma) {
  (void)a;
  return unary(in[0], m, "lgamma", [](auto v) {
    int sign;
    if constexpr (std::is_same_v<decltype(v), float>)
      return ::lgammaf_r(v, &sign);
    else
      return ::lgamma_r(v, &sign);
  });
}
VK_KERNEL(digamma) {
  (void)a;
  return unary_in_double(in[0], m, "digamma", [](double v) { return digamma_value(v); });
}
VK_KERNEL(polygamma) {
  const int64_t n = a.order;
  return unary_in_double(in[0], m, "polygamma", [n](double v) { return polygamma_value(n, v); });
}
// float32 erfinv, vectorised in double: Giles' start (both of its pieces computed, one selected)
// and one Newton step on vmath's erf. The start is within ~4e-7 relative, so one step leaves
// ~1e-11; erf's absolute error (~1e-16) stays below 1e-9 of the residual even at the float next
// to 1 (1 - |x| >= 2^-24), so no erfc form is needed there (float64 takes erfinv_value's two steps
// on libm's erf / erfc). Zen 4, one thread, 1M floats in (-1, 1): 53 ms by erfinv_value per
// element (torch 2.0).
[[gnu::always_inline]] inline double erfinv_of_float(double x) {
  using namespace vmath::detail;
  const double ax = std::fabs(x);
  const double w = -vmath::log((1.0 - ax) * (1.0 + ax));  // exact product: two 25-bit factors
  const double central = horner(w - 2.5, kErfinvCentral);
  const double tail = horner(std::sqrt(select(w < 5.0, 5.0, w)) - 3.0, kErfinvTail);
  double t = select(w < 5.0, central, tail) * ax;
  t -= (vmath::erf(t) - ax) * (std::sqrt(std::numbers::pi) / 2) * vmath::exp(t * t);
  t = select(ax == 1.0, std::numeric_limits<double>::infinity(), t);
  t = select(ax > 1.0, std::numeric_limits<double>::quiet_NaN(), t);  // NaN passes already
  return std::copysign(t, x);
}
VK_KERNEL(erfinv) {
  (void)a;
  return unary(in[0], m, "erfinv", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return static_cast<float>(erfinv_of_float(v));
    else
      return erfinv_value(v);
  });
}

// log2, log10 and exp2: float32 in double, rounded once (within half an ulp and a hair; exact at
// the powers of two and the integers), float64 by libm's own functions (log2 and exp2 exact there
// too). As composites they took 4 passes (float64 casts around log) and pow's path: Zen 4, one
// thread, 1M floats, log2 2.1 -> 1.7 ms, exp2 1.1 -> 0.93 (torch 1.0 and 0.3, within 0.63 and
// 0.79 ulp; a float exp2 on vmath's float exp took 0.48 ms but was 1 ulp off).
//   exp2 x = e^r 2^n, n = round(x), r = (x - n) ln 2: x - n is exact and |r| <= ln 2 / 2, the
//   range vmath's exp polynomial is made for; at an integer e^0 = 1 exactly, so no value near a
//   rounding tie of the float (2^-150) is ever approximated. |x| is clamped to 200 (float's 0 and
//   inf are reached by then), so 2^n is a normal double.
constexpr double kInvLn2 = 1.0 / std::numbers::ln2;
constexpr double kInvLn10 = 1.0 / std::numbers::ln10;
[[gnu::always_inline]] inline double exp2_of_float(double x) {
  using namespace vmath::detail;
  constexpr double kRoundShift = 0x1.8p52;  // x + this rounds x to an integer (|x| < 2^51)
  x = select(x < -200.0, -200.0, x);        // NaN passes
  x = select(x > 200.0, 200.0, x);
  const double shifted = x + kRoundShift;
  const double r = (x - (shifted - kRoundShift)) * std::numbers::ln2;
  const double p = fma_(r * r, horner(r, Poly<double>::exp_q), r) + 1.0;
  const auto n =
      static_cast<int64_t>(std::bit_cast<uint64_t>(shifted) - std::bit_cast<uint64_t>(kRoundShift));
  return p * pow2i<double>(n);
}
VK_KERNEL(log2) {
  (void)a;
  return unary(in[0], m, "log2", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return static_cast<float>(vmath::log(static_cast<double>(v)) * kInvLn2);
    else
      return std::log2(v);
  });
}
VK_KERNEL(log10) {
  (void)a;
  return unary(in[0], m, "log10", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return static_cast<float>(vmath::log(static_cast<double>(v)) * kInvLn10);
    else
      return std::log10(v);
  });
}
VK_KERNEL(exp2) {
  (void)a;
  return unary(in[0], m, "exp2", [](auto v) VK_ELEMENT {
    if constexpr (std::is_same_v<decltype(v), float>)
      return static_cast<float>(exp2_of_float(v));
    else
      return std::exp2(v);
  });
}

// atan2: float32 by vmath_trig.h's where y and x are finite and not both 0, libm's otherwise (and
// for float64); contiguous float32 by checked blocks (checked_blocks.h). Zen 4, one thread, 1M
// floats: 21 -> 1.6 ns an element (torch 1.4-2.2).
namespace {
bool atan2_vmath_domain(float y, float x) {
  return std::isfinite(y) & std::isfinite(x) & ((y != 0.0f) | (x != 0.0f));
}
float atan2_element(float y, float x) {
  return atan2_vmath_domain(y, x) ? vmath::atan2(y, x) : std::atan2(y, x);
}
}  // namespace

VK_KERNEL(atan2) {
  (void)a;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const bool flat = in[0].is_contiguous() && in[1].is_contiguous() &&
                    in[0].numel() == out.numel() && in[1].numel() == out.numel();
  if (m.dtype == DType::Float32 && in[0].dtype() == DType::Float32 && flat) {
    const float* py = in[0].data<float>();
    const float* px = in[1].data<float>();
    float* po = out.data<float>();
    parallel_for(out.numel(), kGrain, [&](int64_t b, int64_t e) {
      map_checked_blocks(
          po + b, e - b, [](float y, float x) VK_ELEMENT { return atan2_vmath_domain(y, x); },
          [](float y, float x) VK_ELEMENT { return vmath::atan2(y, x); }, atan2_element, py + b,
          px + b);
    });
    return out;
  }
  VK_DISPATCH_FLOAT(in[0].dtype(), "atan2", {
    map_elements<T, T, T>(
        out, {&in[0], &in[1]},
        [](T y, T x) -> T {
          if constexpr (std::is_same_v<T, float>)
            return atan2_element(y, x);
          else
            return std::atan2(y, x);
        },
        kGrain);
  });
  return out;
}

// ---- integer bits and steps: torch's definitions, on the two's complement bits (no UB) ----

namespace {

template <class T>
T shift_left(T a, T b) {
  using U = std::make_unsigned_t<T>;
  constexpr T kBits = sizeof(T) * 8;
  return b < T(0) || b >= kBits ? T(0) : static_cast<T>(static_cast<U>(a) << b);
}
template <class T>
T shift_right(T a, T b) {
  constexpr T kBits = sizeof(T) * 8;
  return a >> (b < T(0) || b >= kBits ? kBits - 1 : b);  // arithmetic: the sign fills
}
// gcd and lcm on the magnitudes as unsigned numbers (|-2^63| = 2^63 fits): the true values, cast
// back to T (wrapping where they do not fit). torch's signed loop gives gcd(-2^63, 6) = -2, and
// its lcm(-2^63, 2^63 - 1) divides -2^63 by -1, which traps (SIGFPE kills the process).
template <class T>
std::make_unsigned_t<T> magnitude(T a) {
  using U = std::make_unsigned_t<T>;
  return a < T(0) ? U(0) - static_cast<U>(a) : static_cast<U>(a);
}
template <class U>
U gcd_unsigned(U a, U b) {
  while (a != U(0)) {
    const U c = a;
    a = b % a;
    b = c;
  }
  return b;
}
template <class T>
T gcd_value(T a, T b) {
  return static_cast<T>(gcd_unsigned(magnitude(a), magnitude(b)));
}
template <class T>
T lcm_value(T a, T b) {
  using U = std::make_unsigned_t<T>;
  const U g = gcd_unsigned(magnitude(a), magnitude(b));
  return g == U(0) ? T(0) : static_cast<T>(magnitude(a) / g * magnitude(b));
}

template <class F>
Tensor integer_binary(const std::vector<Tensor>& in, const Meta& m, std::string_view op, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (m.dtype == DType::Int32)
    map_elements<int32_t, int32_t, int32_t>(out, {&in[0], &in[1]},
                                            [&](int32_t x, int32_t y) { return f(x, y); });
  else if (m.dtype == DType::Int64)
    map_elements<int64_t, int64_t, int64_t>(out, {&in[0], &in[1]},
                                            [&](int64_t x, int64_t y) { return f(x, y); });
  else
    throw DTypeError(detail::cat(op, ": expects integer tensors, got ", dtype_name(m.dtype)));
  return out;
}

}  // namespace

VK_KERNEL(bitwise_left_shift) {
  (void)a;
  return integer_binary(in, m, "bitwise_left_shift",
                        [](auto x, auto y) { return shift_left(x, y); });
}
VK_KERNEL(bitwise_right_shift) {
  (void)a;
  return integer_binary(in, m, "bitwise_right_shift",
                        [](auto x, auto y) { return shift_right(x, y); });
}
VK_KERNEL(gcd) {
  (void)a;
  return integer_binary(in, m, "gcd", [](auto x, auto y) { return gcd_value(x, y); });
}
VK_KERNEL(lcm) {
  (void)a;
  return integer_binary(in, m, "lcm", [](auto x, auto y) { return lcm_value(x, y); });
}
VK_KERNEL(nextafter) {
  (void)a;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(
      in[0].dtype(), "nextafter",
      map_elements<T, T, T>(
          out, {&in[0], &in[1]}, [](T x, T y) -> T { return std::nextafter(x, y); }, kGrain));
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
