// Vectorisable elementary functions for the element-wise kernels: exp, expm1, log, log1p, tanh,
// sigmoid, softplus, erf, erfc, both forms of gelu and gelu's derivative, for float and double;
// cos(2 pi t) and sin(2 pi t) for randn, double. (float's trigonometric functions: vmath_trig.h.)
//
// Each function is branch-free scalar code: no calls, no tables, no early returns; selects where
// libm would branch, bit casts where it would call frexp/ldexp. Inlined into an element loop,
// GCC vectorises it at -O3 (SSE2, AVX2 or AVX-512: the copy for each CPU capability, isa.h). The
// same code runs scalar in the strided walker and in loop tails; every element takes the same path
// through the same operations, so a result never depends on which loop computed it or how the
// work was split among threads. (The copies may differ from each other by FMA contraction.)
//
// Accuracy, measured by tests/cpp/test_vmath.cpp over dense sweeps against libm (float) and long
// double libm (double), including subnormals, the overflow and underflow thresholds, +-0, +-inf
// and NaN: see the bounds asserted there (about 1 ulp for exp and log, a few ulp for the rest).
// Polynomial coefficients are minimax fits made by bench/cpp/fit_vmath.py.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "vkml/backend/cpu/isa.h"

#define VK_VMATH_INLINE [[gnu::always_inline]] inline
// An element function (a lambda calling these) is always inlined into the loop that calls it:
// otherwise GCC may keep a large one (gelu's polynomials) as a call per element, which also stops
// vectorisation.
#define VK_ELEMENT __attribute__((always_inline))

namespace vk::vmath {
inline namespace VKML_CPU_ISA {
namespace detail {

// ---- building blocks ----

template <class T>
struct Traits;

template <>
struct Traits<float> {
  using U = uint32_t;
  using I = int32_t;
  static constexpr int kMantBits = 23;
  static constexpr U kBias = 127;
  static constexpr U kSignMask = U{1} << 31;
  static constexpr U kMantMask = (U{1} << kMantBits) - 1;
  static constexpr U kSqrtHalfBits = 0x3f3504f3;  // sqrt(1/2)
  static constexpr U kHalfMask = ~U{0xfff};       // keeps 12 significant bits: squares are exact
  static constexpr float kRoundShift =
      0x1.8p23f;  // x + this rounds x to an integer in the low bits
  static constexpr float kTwoPowMant = 0x1p23f;
  static constexpr float kLog2e = 0x1.715476p+0f;
  static constexpr float kLn2Hi = 0x1.62e4p-1f;  // 16 bits: n * kLn2Hi is exact for |n| < 256
  static constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
  static constexpr float kExpMin = -104.0f;  // e^x rounds to 0 below (e^-103.97 = 2^-150)
  static constexpr float kExpMax = 89.0f;    // e^x is inf above (e^88.72 = 2^128)
  static constexpr float kSubnormalScale = 0x1p25f;
  static constexpr float kSubnormalLog2 = 25.0f;
  static constexpr float kErfcMaxArg = 10.5f;  // erfc(10.5) = 1e-49: 0 in float
};

template <>
struct Traits<double> {
  using U = uint64_t;
  using I = int64_t;
  static constexpr int kMantBits = 52;
  static constexpr U kBias = 1023;
  static constexpr U kSignMask = U{1} << 63;
  static constexpr U kMantMask = (U{1} << kMantBits) - 1;
  static constexpr U kSqrtHalfBits = 0x3fe6a09e667f3bcd;
  static constexpr U kHalfMask = ~U{0x7ffffff};  // keeps 26 significant bits
  static constexpr double kRoundShift = 0x1.8p52;
  static constexpr double kTwoPowMant = 0x1p52;
  static constexpr double kLog2e = 0x1.71547652b82fep+0;
  static constexpr double kLn2Hi = 0x1.62e42feep-1;  // 32 bits: n * kLn2Hi exact for |n| < 2^21
  static constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
  static constexpr double kExpMin = -746.0;  // e^-745.13 = 2^-1075
  static constexpr double kExpMax = 710.0;   // e^709.78 = 2^1024
  static constexpr double kSubnormalScale = 0x1p54;
  static constexpr double kSubnormalLog2 = 54.0;
  static constexpr double kErfcMaxArg = 27.3;  // erfc(27.3) = 4e-326: 0 in double
};

// a * b + c, with one rounding where the CPU has FMA. Without it the product rounds first; the
// polynomials keep their accuracy either way (the tests run both builds).
template <class T>
VK_VMATH_INLINE T fma_(T a, T b, T c) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  if constexpr (sizeof(T) == 4)
    return __builtin_fmaf(a, b, c);
  else
    return __builtin_fma(a, b, c);
#else
  return a * b + c;
#endif
}

// c[0] + c[1] x + c[2] x^2 + ..., by Horner's rule. Recursion rather than a loop: the compiler
// unrolls it completely whatever the length, which the vectoriser needs.
template <std::size_t K, class T, std::size_t N>
VK_VMATH_INLINE T horner_from(T x, const T (&c)[N]) {
  if constexpr (K + 1 == N)
    return c[K];
  else
    return fma_(horner_from<K + 1>(x, c), x, c[K]);
}
template <class T, std::size_t N>
VK_VMATH_INLINE T horner(T x, const T (&c)[N]) {
  return horner_from<0>(x, c);
}

// The same polynomial by Estrin's scheme: pairs c[k] + c[k+1] x, combined in pairs with x^2, those
// with x^4, ...: about log2(N) dependent steps instead of N - 1. For a long polynomial inside a
// long dependency chain, where the chain's latency rather than the operation count sets the
// speed. Rounds differently from horner(): use it where the accuracy was checked with it.
// estrin_part<K, S> = c[K] + c[K+1] x + ... + c[K+S-1] x^(S-1) (terms past N are 0); p[i] =
// x^(2^i).
template <std::size_t K, std::size_t S, class T, std::size_t N>
VK_VMATH_INLINE T estrin_part(const T (&p)[4], const T (&c)[N]) {
  if constexpr (S == 1 || K + 1 >= N) {
    return c[K];
  } else {
    constexpr std::size_t H = S / 2;
    const T lo = estrin_part<K, H>(p, c);
    if constexpr (K + H >= N) {
      return lo;
    } else {
      constexpr int level = H == 1 ? 0 : H == 2 ? 1 : H == 4 ? 2 : 3;
      return fma_(estrin_part<K + H, H>(p, c), p[level], lo);
    }
  }
}
template <class T, std::size_t N>
VK_VMATH_INLINE T estrin(T x, const T (&c)[N]) {
  static_assert(N >= 1 && N <= 16);
  const T x2 = x * x, x4 = x2 * x2;
  const T p[4] = {x, x2, x4, N > 8 ? x4 * x4 : x4};
  return estrin_part<0, (N > 8 ? 16 : N > 4 ? 8 : N > 2 ? 4 : 2)>(p, c);
}

template <class T>
VK_VMATH_INLINE T abs_(T x) {
  using U = typename Traits<T>::U;
  return std::bit_cast<T>(std::bit_cast<U>(x) & ~Traits<T>::kSignMask);
}

// |mag| with the sign of s (mag must be non-negative).
template <class T>
VK_VMATH_INLINE T with_sign_of(T mag, T s) {
  using U = typename Traits<T>::U;
  return std::bit_cast<T>(std::bit_cast<U>(mag) | (std::bit_cast<U>(s) & Traits<T>::kSignMask));
}

// c ? a : b without a branch. Both sides are computed anyway; written with ?:, a side that does
// arithmetic is only vectorised with masked instructions (AVX-512): under -ftrapping-math the
// compiler may not evaluate the side not taken. This form vectorises on every target.
template <class T>
VK_VMATH_INLINE T select(bool c, T a, T b) {
  using U = typename Traits<T>::U;
  const U m = U{0} - static_cast<U>(c);
  return std::bit_cast<T>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & ~m));
}

// 2^n for n in the normal exponent range; unsigned arithmetic: no overflow is undefined.
template <class T>
VK_VMATH_INLINE T pow2i(typename Traits<T>::I n) {
  using Tr = Traits<T>;
  using U = typename Tr::U;
  return std::bit_cast<T>(static_cast<U>(static_cast<U>(n) + Tr::kBias) << Tr::kMantBits);
}

// t * t = hi + lo, hi exact: t's leading half-significand squared needs no rounding, and lo is
// the rest, (t - th)(t + th). erfc needs e^(-t^2) to more bits than one rounded t^2 carries.
template <class T>
VK_VMATH_INLINE void square2(T t, T& hi, T& lo) {
  using Tr = Traits<T>;
  const T th = std::bit_cast<T>(std::bit_cast<typename Tr::U>(t) & Tr::kHalfMask);
  hi = th * th;
  lo = (t - th) * (t + th);
}

#if !defined(__FMA__) && !defined(__ARM_FEATURE_FMA)
// a b - p for p = a b rounded, where there is no FMA to give it exactly (its callers' FMA paths
// use one): Dekker's product of square2's halves (half the significand each, so the partial
// products are exact), to about twice the working precision.
template <class T>
VK_VMATH_INLINE T product_rest(T a, T b, T p) {
  using Tr = Traits<T>;
  const T ah = std::bit_cast<T>(std::bit_cast<typename Tr::U>(a) & Tr::kHalfMask);
  const T bh = std::bit_cast<T>(std::bit_cast<typename Tr::U>(b) & Tr::kHalfMask);
  const T al = a - ah, bl = b - bh;
  return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}
#endif

// a b + c, rounded once with FMA; without, the product's rounding error is added back, which
// leaves about one rounding where a b and c nearly cancel (the sum of the rounded product and c is
// then exact) -- gelu's v = gelu_a w + gelu_b, which would otherwise be off by up to 3 ulp.
template <class T>
VK_VMATH_INLINE T fma_accurate(T a, T b, T c) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  return fma_(a, b, c);
#else
  const T p = a * b;
  return (p + c) + product_rest(a, b, p);
#endif
}

// -x^2 / 2 = h + l to twice the working precision, for e^(-x^2 / 2): with FMA h is the rounded
// value and l its exact remainder (three operations); without, square2's exact split.
template <class T>
VK_VMATH_INLINE void neg_half_square(T x, T& h, T& l) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  const T a = T(-0.5) * x;  // exact
  h = a * x;
  l = fma_(a, x, -h);
#else
  T hi, lo;
  square2(x, hi, lo);
  h = T(-0.5) * hi;
  l = T(-0.5) * lo;
#endif
}

// 1 / (1 + s) for 0 <= s < 2^24, with one Newton step from the exact remainder of the sum (d - 1
// is exact for d >= 1, then s - (d - 1) by Sterbenz) and, with FMA, of the quotient: gelu's
// polynomials in w = 1 / (1 + t / 2) start steeply (d erfcx / dw = 2.26 at t = 0), so the
// rounding of 1 + s alone would cost them up to 3 ulp.
template <class T>
VK_VMATH_INLINE T recip_one_plus(T s) {
  const T d = s + T(1);
  const T d_lo = s - (d - T(1));
  const T w = T(1) / d;
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  const T rest = fma_(-w, d_lo, fma_(-w, d, T(1)));  // 1 - w (d + d_lo)
#else
  const T p = w * d;
  const T rest = ((T(1) - p) - product_rest(w, d, p)) - w * d_lo;  // 1 - p exact: p is near 1
#endif
  return fma_(w, rest, w);
}

// ---- coefficients (bench/cpp/fit_vmath.py) ----
//   exp_q:  e^r = 1 + r + r^2 q(r), |r| <= ln(2)/2
//   log_p:  log((1+s)/(1-s)) = 2s + s z p(z), z = s^2 <= ((sqrt(2)-1)/(sqrt(2)+1))^2
//   tanh_p: tanh(x) = x + x z p(z), z = x^2, |x| < 0.625
//   erf_p:  erf(t) = t + t p(z), z = t^2, |t| < 0.9
//   erfc_g: erfc(t) = w e^(-t^2 + G(w)), w = 1 / (1 + t/2), 0.89 <= t <= kErfcMaxArg; float: G
//           a polynomial in w; double: in v = erfc_a w + erfc_b, which spans [-1, 1] and keeps
//           the high-order coefficients small.
//   gelu_p: (float) e^(t^2) erfc(t) over the whole 0 <= t <= kErfcMaxArg, in v = gelu_a w +
//           gelu_b (relative error): gelu's and gelu_grad's one formula for every argument.

template <class T>
struct Poly;

template <>
struct Poly<float> {
  static constexpr float exp_q[] = {0x1.fffffcp-2f, 0x1.555492p-3f, 0x1.5558acp-5f, 0x1.123986p-7f,
                                    0x1.6a5222p-10f};
  static constexpr float log_p[] = {0x1.55557ap-1f, 0x1.995eccp-2f, 0x1.31e244p-2f};
  static constexpr float tanh_p[] = {-0x1.555534p-2f, 0x1.11075ep-3f, -0x1.b842c6p-5f,
                                     0x1.524c6p-6f, -0x1.767b08p-8f};
  static constexpr float erf_p[] = {0x1.06eba8p-3f,  -0x1.812742p-2f, 0x1.ce2dfep-4f,
                                    -0x1.b80f66p-6f, 0x1.54db1cp-8f,  -0x1.ab30bep-11f,
                                    0x1.60afa8p-14f};
  static constexpr float erfc_g[] = {-0x1.43f75ap+0f, 0x1.ffc4cp-1f,   0x1.846be2p-2f,
                                     0x1.00c328p-4f,  -0x1.4c818ap-5f, -0x1.1964b4p-3f,
                                     -0x1.6b077p-2f,  0x1.25bdaep-1f,  -0x1.beeddcp-3f};
  static constexpr float gelu_a = 0x1.30c30cp+1f;
  static constexpr float gelu_b = -0x1.618618p+0f;
  static constexpr float gelu_p[] = {
      0x1.522ee8p-2f,  0x1.b736f4p-2f,  0x1.946652p-3f,  0x1.8228fep-5f,   -0x1.0a95ep-10f,
      -0x1.8ffad2p-9f, 0x1.1d36fep-14f, 0x1.1a5adcp-12f, -0x1.81699ap-16f, -0x1.800c3ep-16f};
};

template <>
struct Poly<double> {
  static constexpr double exp_q[] = {
      0x1.000000000000ap-1,  0x1.55555555554fap-3,  0x1.5555555550871p-5,  0x1.1111111127c00p-7,
      0x1.6c16c1842c9dcp-10, 0x1.a01a012a54fc3p-13, 0x1.a0199a056a726p-16, 0x1.71df254b906f8p-19,
      0x1.28ad79567906ep-22, 0x1.ad7f8c5b5f191p-26};
  static constexpr double log_p[] = {
      0x1.5555555555593p-1, 0x1.999999997fb10p-2, 0x1.2492494219877p-2, 0x1.c71c51e65e00ap-3,
      0x1.74664683c344ep-3, 0x1.39a0ebe20d01cp-3, 0x1.2f0dedf5cc782p-3};
  static constexpr double tanh_p[] = {
      -0x1.5555555555552p-2,  0x1.1111111110c2bp-3,  -0x1.ba1ba1b9d05b6p-5,  0x1.664f4870995dap-6,
      -0x1.226e32cc505d1p-7,  0x1.d6d359e4ac99ep-9,  -0x1.7d9c30572ee8fp-10, 0x1.350b788088099p-11,
      -0x1.f112e05142402p-13, 0x1.801a8b05bb034p-14, -0x1.fac2cb0fc2bf7p-16, 0x1.9601aa73caf99p-18};
  static constexpr double erf_p[] = {
      0x1.06eba8214db69p-3,  -0x1.812746b0379e2p-2,  0x1.ce2f21a0427d8p-4,  -0x1.b82ce31271acep-6,
      0x1.565bcd0a29b38p-8,  -0x1.c02db31280ab2p-11, 0x1.f9a305f8cf189p-14, -0x1.f4cf55a2248c2p-17,
      0x1.b9b731b8eae17p-20, -0x1.5d8206b38af02p-23, 0x1.e29296fa68d21p-27, -0x1.d21f5f0ff4000p-31};
  static constexpr double erfc_a = 0x1.9a66528c51f77p+1;
  static constexpr double erfc_b = -0x1.3806faab2f033p+0;
  static constexpr double erfc_g[] = {
      -0x1.a8ce556cd74d9p-1,  0x1.9a6cec6d3e484p-2,  0x1.e825c1f82d044p-6,   -0x1.073c0e4593ffbp-7,
      -0x1.634e710f2151ep-9,  0x1.7e2f9783a88c6p-12, 0x1.2199f429ea44fp-12,  -0x1.c64e04746cf44p-16,
      -0x1.08db101dbc528p-15, 0x1.de0ef1a6e68c0p-19, 0x1.fe33d3a9fc020p-19,  -0x1.63c164c27ae0bp-21,
      -0x1.dbd5c4f0fe28ep-22, 0x1.151cd525b377cp-23, 0x1.769aff1c19fa7p-25,  -0x1.86ea7d21a80a9p-26,
      -0x1.4a552bec3b7d0p-29, 0x1.ca45f241e5c08p-29, -0x1.9c678a90495e1p-33, -0x1.8bb5e9509e87dp-32,
      0x1.8e10faffe12d7p-35,  0x1.7724558532969p-36};
};

// ---- the functions, generic over float and double ----

// e^(x + lo), where lo (|lo| < 2) carries bits of the argument beyond x's precision (erfc's
// -t^2 + G); kTwoPart false ignores it. Reduction: x + lo = n ln2 + r, |r| <= ln2/2, e^r by a
// polynomial, then a scaling by 2^n in two factors so that a subnormal result is rounded once,
// as libm's is.
// kClamp false: the caller guarantees kExpMin <= x + lo <= 0 (or NaN; a few ulp above 0 do no
// harm), which needs no clamping; there kScale != 0 returns e^(x + lo) 2^kScale, whose scaling
// the caller keeps in the normal range (gelu's, 2^63: its tail then never leaves it).
// kScale kNormalScale (with kClamp false): p 2^n in one product, for arguments whose n keeps 2^n
// and the result normal (float: -87 <= x <= 88): the two-factor scaling's bits (every product is
// exact there) without its extra operations.
inline constexpr int kNormalScale = 1 << 20;

template <class T, bool kTwoPart = false, bool kClamp = true, int kScale = 0>
VK_VMATH_INLINE T exp_impl(T x, T lo = T(0)) {
  using Tr = Traits<T>;
  using U = typename Tr::U;
  using I = typename Tr::I;
  if constexpr (kClamp) {
    x = select(x < Tr::kExpMin, Tr::kExpMin, x);  // NaN passes: comparisons with NaN are false
    x = select(x > Tr::kExpMax, Tr::kExpMax, x);
  }
  const T sum = kTwoPart ? x + lo : x;                       // rounded: only picks n
  const T shifted = fma_(sum, Tr::kLog2e, Tr::kRoundShift);  // kRoundShift + round(sum / ln2)
  const T n = shifted - Tr::kRoundShift;
  // x - n ln2 in two steps (Cody-Waite): n * kLn2Hi is exact and so, nearly always, is the
  // first difference; lo joins once the large parts have cancelled.
  T r = fma_(n, -Tr::kLn2Hi, x);
  if constexpr (kTwoPart) r = r + lo;
  r = fma_(n, -Tr::kLn2Lo, r);
  const T p = fma_(r * r, horner(r, Poly<T>::exp_q), r) + T(1);
  const I ni = static_cast<I>(std::bit_cast<U>(shifted) - std::bit_cast<U>(Tr::kRoundShift));
  if constexpr (kClamp) {
    const I n1 = ni >> 1;
    return p * pow2i<T>(n1) * pow2i<T>(ni - n1);
  } else if constexpr (kScale == kNormalScale) {
    return p * pow2i<T>(ni);  // n in [-126, 127] (float): 2^n normal, the product exact
  } else if constexpr (kScale == 0) {
    // n >= -162 here (float: gelu's arguments reach -112; exp_nonpositive's -104) or -1076
    // (double), and at most a few above 0: 2^(n + 64) is normal, p 2^(n + 64) exact, and the
    // product with 2^-64 the one rounding -- the same result as the two factors above, in fewer
    // operations (one exponent instead of two).
    return p * pow2i<T>(ni + 64) * T(0x1p-64);
  } else {
    return p * pow2i<T>(ni + kScale);
  }
}

// erfc(t) for 0.89 <= t <= kErfcMaxArg, given t^2 = t2hi + t2lo.
template <class T>
VK_VMATH_INLINE T erfc_tail(T t, T t2hi, T t2lo) {
  const T w = T(1) / fma_(t, T(0.5), T(1));
  T g;
  if constexpr (sizeof(T) == 4)
    g = horner(w, Poly<float>::erfc_g);
  else
    g = horner(fma_(w, Poly<double>::erfc_a, Poly<double>::erfc_b), Poly<double>::erfc_g);
  return w * exp_impl<T, true>(-t2hi, g - t2lo);
}

// erf(t) = t + t p(t^2) for |t| < 0.9 (odd: keeps t's sign).
template <class T>
VK_VMATH_INLINE T erf_small(T t) {
  return fma_(t, horner(t * t, Poly<T>::erf_p), t);
}

}  // namespace detail

template <class T>
VK_VMATH_INLINE T exp(T x) {
  return detail::exp_impl(x);
}

// e^x for x <= 0 (or NaN): a value minus the maximum of the values it is one of (a softmax row:
// x - max rounds, but never to a positive number; a contracted x * scale - max may be half an ulp
// of max above 0, which is still exact here: only arguments above ~44 would overflow the scaling).
// Clamped only below; the same result as exp.
template <class T>
VK_VMATH_INLINE T exp_nonpositive(T x) {
  using Tr = detail::Traits<T>;
  return detail::exp_impl<T, false, false>(detail::select(x < Tr::kExpMin, Tr::kExpMin, x));
}

// exp_normal_range's domain, kExpNormalLo <= x <= kExpNormalHi: arguments whose e^x is a normal
// number, and whose 2^n (n = round(x / ln 2)) is one too.
template <class T>
inline constexpr T kExpNormalLo = sizeof(T) == 4 ? T(-87) : T(-708);
template <class T>
inline constexpr T kExpNormalHi = sizeof(T) == 4 ? T(88) : T(709);

// e^x for arguments in [kExpNormalLo, kExpNormalHi]: exp's bits without its clamps and its scaling
// in two steps, which only the other arguments need. The caller checks the range (the
// element-wise exp does, per block).
template <class T>
VK_VMATH_INLINE T exp_normal_range(T x) {
  return detail::exp_impl<T, false, false, detail::kNormalScale>(x);
}

template <class T>
VK_VMATH_INLINE T log(T x) {
  using namespace detail;
  using Tr = Traits<T>;
  using U = typename Tr::U;
  constexpr T kInf = std::numeric_limits<T>::infinity();
  const bool tiny = x < std::numeric_limits<T>::min();  // subnormal: scale into normal range
  const T xs = select(tiny, x * Tr::kSubnormalScale, x);
  // x = 2^k m with m in [sqrt(1/2), sqrt(2)): offset the bits so that the exponent field
  // steps at sqrt(2) instead of 2, then read k and rebuild m.
  const U ix = std::bit_cast<U>(xs) + (std::bit_cast<U>(T(1)) - Tr::kSqrtHalfBits);
  const U biased = ix >> Tr::kMantBits;
  T k = std::bit_cast<T>(biased | std::bit_cast<U>(Tr::kTwoPowMant)) -
        (Tr::kTwoPowMant + T(Tr::kBias));  // the integer as T, without an int conversion
  k = select(tiny, k - Tr::kSubnormalLog2, k);
  const T f = std::bit_cast<T>((ix & Tr::kMantMask) + Tr::kSqrtHalfBits) - T(1);
  // log(1 + f) = f - f^2/2 + s (f^2/2 + z p(z)), s = f / (2 + f), z = s^2
  const T s = f / (f + T(2));
  const T z = s * s;
  const T hfsq = T(0.5) * f * f;
  const T tail = fma_(s, fma_(z, horner(z, Poly<T>::log_p), hfsq), k * Tr::kLn2Lo);
  T r = fma_(k, Tr::kLn2Hi, (tail - hfsq) + f);
  r = select(x == T(0), -kInf, r);
  r = select(x < T(0), std::numeric_limits<T>::quiet_NaN(), r);
  r = select(x == kInf, kInf, r);
  return select(x != x, x, r);
}

// log(1 + x) as the log of w = 1 + x rounded plus what that rounding lost: e = (1 + x) - w is
// exact (Fast2Sum, the larger operand first) and log(1 + x) = log(w) + log(1 + e / w), where
// |e / w| is below an ulp, so that log is e / w. About log's accuracy, also where w is 1 (then
// e = x). -1 gives log(0) = -inf (e = 0 there); inf gives inf (e would be inf - inf).
template <class T>
VK_VMATH_INLINE T log1p(T x) {
  using namespace detail;
  const T w = T(1) + x;
  const T e = select(x > T(1), T(1) - (w - x), x - (w - T(1)));
  const T r = log(w) + select(w == T(0), T(0), e / w);
  const T finite = select(w == std::numeric_limits<T>::infinity(), w, r);
  return select(x == T(0), x, finite);  // keeps -0
}

// e^x - 1. x = n ln2 + r by exp's reduction, e^r - 1 = r + r^2 q(r) (exp's polynomial without its
// 1), then 2^n (e^r - 1) + (2^n - 1) in one fma: 2^n - 1 is exact wherever the 1 still shows, so
// nothing cancels. For n > digits + 1 the 1 does not show: e^x itself, scaled in two factors as
// exp's (2^n alone overflows at the top of the range). Below -(digits + 2) ln2 the result rounds
// to -1, which the clamp there gives.
template <class T>
VK_VMATH_INLINE T expm1(T x) {
  using namespace detail;
  using Tr = Traits<T>;
  using U = typename Tr::U;
  using I = typename Tr::I;
  constexpr int kDigits = std::numeric_limits<T>::digits;
  constexpr T kLow = -T(kDigits + 2) * T(0.6931471805599453);
  const T xc = select(x < kLow, kLow, select(x > Tr::kExpMax, Tr::kExpMax, x));  // NaN passes
  const T shifted = fma_(xc, Tr::kLog2e, Tr::kRoundShift);
  const T n = shifted - Tr::kRoundShift;
  const T r = fma_(n, -Tr::kLn2Lo, fma_(n, -Tr::kLn2Hi, xc));
  const T em = fma_(r * r, horner(r, Poly<T>::exp_q), r);  // e^r - 1
  const I ni = static_cast<I>(std::bit_cast<U>(shifted) - std::bit_cast<U>(Tr::kRoundShift));
  const T scale = pow2i<T>(ni);
  const T near = fma_(scale, em, scale - T(1));
  const I n1 = ni >> 1;
  const T far = (em + T(1)) * pow2i<T>(n1) * pow2i<T>(ni - n1);
  return select(x == T(0), x, select(n > T(kDigits + 1), far, near));  // x == 0 keeps -0
}

template <class T>
VK_VMATH_INLINE T tanh(T x) {
  using namespace detail;
  const T ax = abs_(x);
  const T z = ax * ax;
  const T small = fma_(ax * z, horner(z, Poly<T>::tanh_p), ax);
  const T large = T(1) - T(2) / (exp_impl(ax + ax) + T(1));  // no cancellation for |x| >= 0.625
  return with_sign_of(select(ax < T(0.625), small, large), x);
}

// 1 / (1 + e^-x), from e = e^-|x| (never overflows): 1 / (1 + e) or e / (1 + e).
template <class T>
VK_VMATH_INLINE T sigmoid(T x) {
  using namespace detail;
  const T e = exp_impl(-abs_(x));
  return select(x >= T(0), T(1), e) / (T(1) + e);
}

// cos(2 pi t) and sin(2 pi t) for t in [0, 1], double (randn's Box-Muller pair). A fraction of a
// turn needs no hard reduction: t = n/4 + r exactly (n = round(4t), |r| <= 1/8), then cos and sin
// of x = 2 pi r (|x| <= pi/4) by their Taylor polynomials (the first term left out is below
// 1e-19), picked and signed by the quarter n -- cos: c, -s, -c, s; sin: s, c, -s, -c. Near the
// zeros (t = 0, 1/4, 1/2, 3/4, 1) each keeps its relative accuracy (through a rounded 2 pi t it
// would not).
VK_VMATH_INLINE void cos_sin_2pi(double t, double& cos_out, double& sin_out) {
  using namespace detail;
  constexpr double kSin[] = {
      -1.0 / 6,        1.0 / 120,        -1.0 / 5040,          1.0 / 362880,
      -1.0 / 39916800, 1.0 / 6227020800, -1.0 / 1307674368000, 1.0 / 355687428096000};
  constexpr double kCos[] = {
      1.0 / 24,        -1.0 / 720,         1.0 / 40320,          -1.0 / 3628800,
      1.0 / 479001600, -1.0 / 87178291200, 1.0 / 20922789888000, -1.0 / 6402373705728000};
  using Tr = Traits<double>;
  const double n = (t * 4.0 + Tr::kRoundShift) - Tr::kRoundShift;
  const double r = fma_(n, -0.25, t);  // exact: t and n/4 are multiples of t's ulp
  const double x = r * 6.283185307179586;
  const double z = x * x;
  const double s = fma_(x * z, horner(z, kSin), x);
  const double c = fma_(z * z, horner(z, kCos), fma_(z, -0.5, 1.0));
  const bool odd = (n == 1.0) | (n == 3.0);
  const double cv = select(odd, s, c), sv = select(odd, c, s);
  cos_out = select((n == 1.0) | (n == 2.0), -cv, cv);
  sin_out = select((n == 2.0) | (n == 3.0), -sv, sv);
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): never overflows, and keeps its relative accuracy
// where it is e^x (x very negative).
template <class T>
VK_VMATH_INLINE T softplus(T x) {
  using namespace detail;
  return select(x > T(0), x, T(0)) + log1p(exp_impl(-abs_(x)));
}

template <class T>
VK_VMATH_INLINE T erf(T x) {
  using namespace detail;
  const T ax = abs_(x);
  const T t = select(ax > Traits<T>::kErfcMaxArg, Traits<T>::kErfcMaxArg, ax);  // t^2 finite
  T hi, lo;
  square2(t, hi, lo);
  const T large = T(1) - erfc_tail(t, hi, lo);
  return with_sign_of(select(ax < T(0.9), erf_small(ax), large), x);
}

template <class T>
VK_VMATH_INLINE T erfc(T x) {
  using namespace detail;
  const T ax = abs_(x);
  const T t = select(ax > Traits<T>::kErfcMaxArg, Traits<T>::kErfcMaxArg, ax);
  T hi, lo;
  square2(t, hi, lo);
  const T tail = erfc_tail(t, hi, lo);  // erfc(|x|)
  const T e = erf_small(ax);
  const bool small = ax < T(0.9);
  const T pos = select(small, T(1) - e, tail);
  const T neg = select(small, T(1) + e, T(2) - tail);
  return select(x < T(0), neg, pos);
}

namespace detail {

// The parts gelu and its derivative share (float): for xc = min(|x|, kMaxX), e^(-xc^2 / 2) 2^63
// (from the exact square; carried times 2^63 so that it stays normal where e^(-x^2 / 2) alone
// would not, x < -13.2) and erfcx(xc / sqrt(2)), the polynomial in gelu's v.
struct GeluParts {
  float e63, erfcx;
};
inline constexpr float kGeluMaxX = Traits<float>::kErfcMaxArg * 1.41421356237309504880f;

VK_VMATH_INLINE GeluParts gelu_parts(float xc) {
  constexpr float kHalfInvSqrt2 = 0.35355339059327376220f;
  float h, l;
  neg_half_square(xc, h, l);
  const float w = recip_one_plus(xc * kHalfInvSqrt2);  // 1 / (1 + t / 2)
  return {exp_impl<float, true, false, 63>(h, l),
          estrin(fma_accurate(w, Poly<float>::gelu_a, Poly<float>::gelu_b), Poly<float>::gelu_p)};
}

// x Phi(x) from the parts: Phi(-|x|) 2^64 = e63 erfcx, 0 past kMaxX, where x Phi(x) underflows (and
// -inf gives NaN, as the formula); one rounding into the subnormal range, at the end.
VK_VMATH_INLINE float gelu_of(float x, float ax, GeluParts p) {
  const float tail = select(ax > kGeluMaxX, 0.0f, p.e63 * p.erfcx);
  return select(x < 0.0f, (x * tail) * 0x1p-64f, x * fma_(tail, -0x1p-64f, 1.0f));
}

// Phi(x) + x phi(x) from the parts: e = e^(-x^2 / 2) (rounded once where subnormal), Phi(-|x|) =
// e erfcx / 2.
VK_VMATH_INLINE float gelu_grad_of(float x, GeluParts p) {
  constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
  const float e = p.e63 * 0x1p-63f;
  const float half_tail = (0.5f * e) * p.erfcx;
  const float cdf = select(x < 0.0f, half_tail, 1.0f - half_tail);
  return fma_(x, e * kInvSqrt2Pi, cdf);
}

}  // namespace detail

// gelu(x) = x Phi(x), Phi(x) = erfc(-x / sqrt(2)) / 2. double: near 0, Phi = (1 + erf(x / sqrt(2)))
// / 2; in the tails the erfc form, so that Phi of a negative x keeps its relative accuracy instead
// of cancelling in 1 + erf. The tail's (x / sqrt(2))^2 is computed as x^2 / 2 from the exact x^2.
// float: one formula for every x, Phi(-|x|) = e^(-x^2 / 2) erfcx(t) / 2 with t = |x| / sqrt(2)
// and erfcx(t) = e^(t^2) erfc(t) a polynomial over the whole range of t (gelu_p, gelu_grad's):
// no second polynomial for small x and no select between them. The exponential and the
// polynomial (behind its division) are two independent chains, which the core overlaps; with G
// in the exponent (e^(-t^2 + G(w)), erfc's form) they were one chain of about twice the latency,
// and the loop took 1.5 ns an element instead of 1.2 (AVX2, Zen 3). The tail is carried times
// 2^64 so that it stays normal where e^(-x^2 / 2) alone would not (x < -13.2): one rounding into
// the subnormal range, at the end. Phi(x) = 1 - Phi(-x) for x >= 0 never cancels (it is at least
// 1/2).
template <class T>
VK_VMATH_INLINE T gelu(T x) {
  using namespace detail;
  if constexpr (sizeof(T) == 4) {
    const float ax = abs_(x);
    return gelu_of(x, ax, gelu_parts(select(ax > kGeluMaxX, kGeluMaxX, ax)));
  } else {
    constexpr T kInvSqrt2 = T(0.70710678118654752440);
    constexpr T kMaxX = Traits<T>::kErfcMaxArg * T(1.41421356237309504880);
    const T v = x * kInvSqrt2;
    const T av = abs_(v);
    const T ax = abs_(x);
    const T xc = select(ax > kMaxX, kMaxX, ax);
    const T t = select(av > Traits<T>::kErfcMaxArg, Traits<T>::kErfcMaxArg, av);
    T hi, lo;
    square2(xc, hi, lo);
    const T half_tail = T(0.5) * erfc_tail(t, T(0.5) * hi, T(0.5) * lo);  // Phi(-|x|)
    const T phi_tail = select(x < T(0), half_tail, T(1) - half_tail);
    const T phi = select(av < T(0.9), fma_(T(0.5), erf_small(v), T(0.5)), phi_tail);
    return x * phi;
  }
}

// gelu's derivative Phi(x) + x phi(x), phi(x) = e^(-x^2 / 2) / sqrt(2 pi). float: gelu's parts,
// one e^(-x^2 / 2) serving both terms, Phi(-|x|) = e^(-x^2 / 2) erfcx(t) / 2: one exp, one
// division and one polynomial, where the erf and exp forms take two of each -- and the same ones
// as gelu's, so that gelu_and_grad computes both for little more than one. The two terms never
// cancel badly: they have opposite signs only for x < 0, where x phi(x) is the larger by a factor
// of about x^2 once |x| > 1, and the sum crosses zero at x = -0.75 (there the error is a few ulp
// of the terms, not of the sum). double: erf and exp, as PyTorch's formula.
template <class T>
VK_VMATH_INLINE T gelu_grad(T x) {
  using namespace detail;
  if constexpr (sizeof(T) == 4) {
    const float ax = abs_(x);
    return gelu_grad_of(x, gelu_parts(select(ax > kGeluMaxX, kGeluMaxX, ax)));
  } else {
    constexpr T kInvSqrt2 = T(0.70710678118654752440), kInvSqrt2Pi = T(0.39894228040143267794);
    const T cdf = (erf(x * kInvSqrt2) + T(1)) * T(0.5);
    return cdf + x * (exp(x * x * T(-0.5)) * kInvSqrt2Pi);
  }
}

// gelu(x), with its derivative in d: the same bits as gelu and gelu_grad, for about the cost of
// one of them in float (they share everything but the last few operations).
template <class T>
VK_VMATH_INLINE T gelu_and_grad(T x, T& d) {
  using namespace detail;
  if constexpr (sizeof(T) == 4) {
    const float ax = abs_(x);
    const GeluParts p = gelu_parts(select(ax > kGeluMaxX, kGeluMaxX, ax));
    d = gelu_grad_of(x, p);
    return gelu_of(x, ax, p);
  } else {
    d = gelu_grad(x);
    return gelu(x);
  }
}

// The tanh form 0.5 x (1 + tanh(y)), y = sqrt(2/pi) (x + 0.044715 x^3), computed as
// x sigmoid(2y): the same function, without the cancellation in 1 + tanh(y) for x < 0.
template <class T>
VK_VMATH_INLINE T gelu_tanh(T x) {
  constexpr T k2 = T(1.59576912160573071176);              // 2 sqrt(2/pi)
  constexpr T k2c = T(1.59576912160573071176 * 0.044715);  // 2 sqrt(2/pi) 0.044715
  using namespace detail;
  const T two_y = x * fma_(k2c, x * x, k2);
  const T e = exp_impl(-abs_(two_y));
  return x * select(two_y >= T(0), T(1), e) / (T(1) + e);
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::vmath
