// Vectorisable float32 trigonometric functions for the element-wise kernels: sin, cos and tan
// (for |x| <= kTrigMaxArg; the kernels take libm beyond), atan, asin and acos (every argument),
// atan2 (finite arguments, not both 0).
// Each computes in double and rounds once to float, which leaves room for short polynomials and a
// simple argument reduction at about half an ulp; the code is vmath.h's kind (branch-free scalar
// code, vectorised by GCC in the element loops; every element takes the same operations, so no
// result depends on the loop or the thread split). float64 keeps libm's, whose reductions are
// exact for every argument. Accuracy: tests/cpp/test_vmath.cpp.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

#include "vkml/backend/cpu/vmath.h"

namespace vk::vmath {
inline namespace VKML_CPU_ISA {

// sin, cos and tan reduce x = n pi/2 + r in double: pi/2 = kPio2Hi + kPio2Lo, kPio2Hi of 31
// significant bits, so that n kPio2Hi is exact for |n| < 2^22 and so is x - n kPio2Hi (both
// multiples of 2^-32 once n != 0, the difference below 1). r is then off by under 1e-20 (what
// kPio2Lo misses, its product's rounding), where the smallest |r| of any float up to 2^20 is
// 4.2e-9 (x = 252.898209, found by a search of every float): a relative error below 1e-11. sin r
// and cos r, |r| <= pi/4, by their Taylor polynomials (the first term left out below 3e-9 of the
// result, a twentieth of float's ulp).
inline constexpr float kTrigMaxArg = 0x1p20f;

namespace detail {

struct QuarterTurns {
  double s, c;  // sin r and cos r
  uint64_t n;   // x = n pi/2 + r, n modulo 2^64 (two's complement: n & 3 is the quadrant)
};

VK_VMATH_INLINE QuarterTurns quarter_turns(float x) {
  constexpr double kTwoOverPi = 0.63661977236758134308, kPio2Hi = 0x1.921fb544p+0,
                   kPio2Lo = 0x1.0b4611a626331p-34;
  constexpr double kSin[] = {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880};
  constexpr double kCos[] = {1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800};
  using Tr = Traits<double>;
  const double xd = x;
  const double shifted = xd * kTwoOverPi + Tr::kRoundShift;
  const double n = shifted - Tr::kRoundShift;
  const double r = (xd - n * kPio2Hi) - n * kPio2Lo;
  const double z = r * r;
  return {r + r * z * horner(z, kSin), (1.0 - 0.5 * z) + z * z * horner(z, kCos),
          std::bit_cast<uint64_t>(shifted) - std::bit_cast<uint64_t>(Tr::kRoundShift)};
}

// atan and asin after their reductions: t + t z p(z), z = t^2, for |t| <= 7/16 (atan) and |t| <=
// 1/2 (asin), minimax fits (bench/cpp/fit_vmath.py) to 5e-11 and 2e-11 of the result. Odd: a
// negative t gives the negative result.
inline constexpr double kAtanP[] = {-0x1.5555544ebcff8p-2, 0x1.9998c59eea3c6p-3,
                                    -0x1.24759d837ee25p-3, 0x1.c380f65c7127ap-4,
                                    -0x1.56497727aeb3dp-4, 0x1.70a137f3c8e00p-5};
inline constexpr double kAsinP[] = {
    0x1.555556074cdbcp-3, 0x1.3332a9025b747p-4, 0x1.6ddaf9e9c0382p-5, 0x1.ed573122c9c0ap-6,
    0x1.934629cd10938p-6, 0x1.ea37c28dba60ep-8, 0x1.1c1f134c62926p-5};
inline constexpr double kHalfPi = 1.57079632679489661923;

template <std::size_t N>
VK_VMATH_INLINE double odd_series(double t, const double (&p)[N]) {
  const double z = t * t;
  return t + t * z * horner(z, p);
}

// asin(|x|) up to |x| = 1/2; beyond, asin(s) with s = sqrt((1 - |x|) / 2), for which asin |x| =
// pi/2 - 2 asin(s) and acos |x| = 2 asin(s). NaN for |x| > 1 (the sqrt of a negative number).
VK_VMATH_INLINE double half_angle(double a) {
  return odd_series(select(a > 0.5, std::sqrt((1.0 - a) * 0.5), a), kAsinP);
}

}  // namespace detail

// sin x by the quadrant: sin r, cos r, -sin r, -cos r. (x == 0 returns x: -0 keeps its sign,
// which r + r z p(z) loses.)
VK_VMATH_INLINE float sin(float x) {
  using namespace detail;
  const QuarterTurns t = quarter_turns(x);
  const double v = select((t.n & 1) != 0, t.c, t.s);
  return select(x == 0.0f, x, static_cast<float>(select((t.n & 2) != 0, -v, v)));
}

// cos x by the quadrant: cos r, -sin r, -cos r, sin r.
VK_VMATH_INLINE float cos(float x) {
  using namespace detail;
  const QuarterTurns t = quarter_turns(x);
  const double v = select((t.n & 1) != 0, t.s, t.c);
  return static_cast<float>(select(((t.n + 1) & 2) != 0, -v, v));
}

// tan x = sin r / cos r in even quadrants, -cos r / sin r in odd ones (tan has period pi).
VK_VMATH_INLINE float tan(float x) {
  using namespace detail;
  const QuarterTurns t = quarter_turns(x);
  const bool odd = (t.n & 1) != 0;
  return select(x == 0.0f, x, static_cast<float>(select(odd, -t.c, t.s) / select(odd, t.s, t.c)));
}

namespace detail {

// atan a for a >= 0 (or +inf, NaN), in double: atan c + atan((a - c) / (1 + c a)) for the c nearest
// a among 0, 1/2, 1 and 3/2, and pi/2 + atan(-1 / a) past 39/16 (fdlibm's ranges), which leaves
// |t| <= 7/16. One division, in double, exact enough.
VK_VMATH_INLINE double atan_nonnegative(double a) {
  const bool r1 = a >= 7.0 / 16, r2 = a >= 11.0 / 16, r3 = a >= 19.0 / 16, far = a >= 39.0 / 16;
  const double c = select(r3, 1.5, select(r2, 1.0, select(r1, 0.5, 0.0)));
  const double atan_c = select(r3, 0.98279372324732906799,                        // atan(3/2)
                               select(r2, 0.78539816339744830962,                 // pi/4
                                      select(r1, 0.46364760900080611621, 0.0)));  // atan(1/2)
  const double t = select(far, -1.0, a - c) / select(far, a, c * a + 1.0);
  return select(far, kHalfPi, atan_c) + odd_series(t, kAtanP);
}

}  // namespace detail

VK_VMATH_INLINE float atan(float x) {
  using namespace detail;
  return with_sign_of(static_cast<float>(atan_nonnegative(abs_(static_cast<double>(x)))), x);
}

// atan2(y, x) for finite y and x, not both 0 (the kernel takes libm for the rest: signed zeros
// against each other, infinities, NaN): atan(y / x), the quotient in double (rounded once; from
// floats it stays finite and normal), then moved by pi toward y's sign where x's sign bit is set
// (-0 included: atan2(1, -0) is pi/2 from atan(-inf) + pi).
VK_VMATH_INLINE float atan2(float y, float x) {
  using namespace detail;
  const double q = static_cast<double>(y) / static_cast<double>(x);
  const double a = with_sign_of(atan_nonnegative(abs_(q)), q);
  const bool negative_x = (std::bit_cast<uint32_t>(x) >> 31) != 0;
  const double pi_toward_y = with_sign_of(2.0 * kHalfPi, static_cast<double>(y));
  return static_cast<float>(select(negative_x, a + pi_toward_y, a));
}

// asin x: asin |x| directly up to 1/2, pi/2 - 2 asin(s) beyond, with x's sign.
VK_VMATH_INLINE float asin(float x) {
  using namespace detail;
  const double a = abs_(static_cast<double>(x));
  const double p = half_angle(a);
  return with_sign_of(static_cast<float>(select(a > 0.5, kHalfPi - 2.0 * p, p)), x);
}

// acos x = pi/2 - asin x up to |x| = 1/2 (at least pi/3: nothing cancels); beyond, 2 asin(s) for
// x > 0 and pi - 2 asin(s) for x < 0, which keep their accuracy at x = +-1.
VK_VMATH_INLINE float acos(float x) {
  using namespace detail;
  const double xd = x;
  const double a = abs_(xd);
  const double p = half_angle(a);
  const double big = select(xd < 0.0, 2.0 * kHalfPi - 2.0 * p, 2.0 * p);
  return static_cast<float>(select(a > 0.5, big, kHalfPi - with_sign_of(p, xd)));
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::vmath
