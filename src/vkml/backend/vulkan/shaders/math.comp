// The math family's shader (issue #15; ops/math.cpp, backend/vulkan/math.cpp): element i of the
// output's shape, located in each tensor by its own offset and strides as in elementwise.comp
// (the same push constants and bindings, launch.h's StridedParams), for one op chosen at compile
// time (-DOP_ASIN, ...). DTO, DTA, DTB are dtype codes as there (3 float32, 4 float64; fmod also
// 1 int32, 2 int64). Every float op computes in double whatever its dtype, with vmath.glsl's
// exp/log/erf (GLSL has none in double; the float builtins may be far less exact than the CPU's
// libm): float32 results are the double result rounded once; float64 results are within a few
// ulp. On a device without float64, the float32 variants (NO_FLOAT64) compute the same steps in
// float alone (MR), within a few ulp. Every loop is bounded (lavapipe allows 65535 iterations per invocation in all).
#version 450

#ifndef DTO
#define DTO 3
#endif
#ifndef DTA
#define DTA DTO
#endif
#ifndef DTB
#define DTB DTA
#endif
#ifdef NO_FLOAT64  // float32 alone, for a device without float64
#define VM_DOUBLE 0
#else
#define VM_DOUBLE 1
#endif

#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)
#define TYPE_1 int
#define TYPE_2 int64_t
#define TYPE_3 float
#define TYPE_4 double
#define UTYPE_1 uint
#define UTYPE_2 uint64_t
#define TO XCAT(TYPE_, DTO)
#define TA XCAT(TYPE_, DTA)
#define TB XCAT(TYPE_, DTB)

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint shape[6];
  int offset[4];
  int stride[18];
  uint scalar[4];  // scalar[0]: polygamma's n
} p;

#if defined(FLAG)
#define IN_BINDING(k) (2 + k)
#else
#define IN_BINDING(k) (1 + k)
#endif

layout(std430, binding = 0) buffer Out { TO o[]; };
#if defined(FLAG)
layout(std430, binding = 1) buffer Flag { uint flag[]; };
#endif
layout(std430, binding = IN_BINDING(0)) readonly buffer A { TA a[]; };
#if NIN >= 2
layout(std430, binding = IN_BINDING(1)) readonly buffer B { TB b[]; };
#endif

#if DTA >= 3
#include "vmath.glsl"
#define OP_LOG1P  // divmod.glsl's log1p and expm1 (in vmath's VT) are compiled under this name
#endif
#include "divmod.glsl"
#if defined(OP_TAN)
#include "trig.glsl"
#endif

// The deferred error of this launch (the host's Context::expect_valid): the first to raise one
// names its slot, passed as scalar[3].
void raise_flag() {
#if defined(FLAG)
  atomicCompSwap(flag[0], 0u, p.scalar[3]);
#endif
}

#if DTA >= 3
// MR: the type the float ops compute in: double (float32 results rounded once), or float alone on
// a device without float64 (NO_FLOAT64, float32 only: within a few ulp). Literals are written
// MR(...lf): exact in double, rounded once to float at compile time (no float64 in the module).
#define MR VT
#if VM_DOUBLE
const MR MT_PI = 3.141592653589793lf;
const MR MT_PI_LO = 1.2246467991473532e-16lf;  // pi - MT_PI
const MR MT_PI_2 = 1.5707963267948966lf;
const MR MT_PI_2_LO = 6.123233995736766e-17lf;
#else
const MR MT_PI = 3.1415927410125732;
const MR MT_PI_LO = -8.742278e-08;
const MR MT_PI_2 = 1.5707963705062866;
const MR MT_PI_2_LO = -4.371139e-08;
#endif
const MR MT_LN2 = MR(0.6931471805599453lf);
#if VM_DOUBLE
const MR MT_EPS = 2.220446049250313e-16lf;  // the spacing of MR at 1
#else
const MR MT_EPS = 1.1920929e-07;
#endif

MR mt_inf() { return VM_AS_T(kVmInfBits); }
MR mt_nan() { return VM_AS_T(kVmInfBits | (VU(1) << (kVmMantBits - 1u))); }
bool mt_negative(MR x) { return VM_AS_U(x) >= kVmSignMask; }

// ---- trigonometric ----

// sin(u) and cos(u) for |u| <= pi/4 by their Taylor series (to u^21, u^20: below 2^-60).
MR mt_sin_series(MR u) {
  precise MR z = u * u;
  precise MR s = MR(1.9572941063391263e-20lf);
  s = MR(-8.22063524662433e-18lf) + z * s;
  s = MR(2.8114572543455206e-15lf) + z * s;
  s = MR(-7.647163731819816e-13lf) + z * s;
  s = MR(1.6059043836821613e-10lf) + z * s;
  s = MR(-2.505210838544172e-08lf) + z * s;
  s = MR(2.7557319223985893e-06lf) + z * s;
  s = MR(-0.0001984126984126984lf) + z * s;
  s = MR(0.008333333333333333lf) + z * s;
  s = MR(-0.16666666666666666lf) + z * s;
  s = MR(1.0lf) + z * s;
  precise MR r = u * s;
  return r;
}
MR mt_cos_series(MR u) {
  precise MR z = u * u;
  precise MR c = MR(4.110317623312165e-19lf);
  c = MR(-1.5619206968586225e-16lf) + z * c;
  c = MR(4.779477332387385e-14lf) + z * c;
  c = MR(-1.1470745597729725e-11lf) + z * c;
  c = MR(2.08767569878681e-09lf) + z * c;
  c = MR(-2.755731922398589e-07lf) + z * c;
  c = MR(2.48015873015873e-05lf) + z * c;
  c = MR(-0.001388888888888889lf) + z * c;
  c = MR(0.041666666666666664lf) + z * c;
  c = MR(-0.5lf) + z * c;
  c = MR(1.0lf) + z * c;
  return c;
}

// sin(pi x) with the argument reduced exactly (pi x itself would round): x mod 2, then the
// symmetries of sine down to [0, 1/4].
MR mt_sinpi(MR x) {
  // of |x| (sine is odd): x mod 2 of a small negative x would round x + 2
  const MR ax = abs(x);
  precise MR r = ax - MR(2.0lf) * floor(ax * MR(0.5lf));  // in [0, 2), exact
  const MR sign = (r >= MR(1.0lf)) != (x < MR(0.0lf)) ? MR(-1.0lf) : MR(1.0lf);
  r = r >= MR(1.0lf) ? r - MR(1.0lf) : r;
  r = r > MR(0.5lf) ? MR(1.0lf) - r : r;
  return sign * (r > MR(0.25lf) ? mt_cos_series(MT_PI * (MR(0.5lf) - r)) : mt_sin_series(MT_PI * r));
}
MR mt_cospi(MR x) { return mt_sinpi(x + MR(0.5lf)); }

// atan(t) for t >= 0 (inf included): 1/t past 1, then twice atan(u) = 2 atan(u / (1 + sqrt(1 +
// u^2))) down to u <= tan(pi/16), then the series u (1 - z/3 + z^2/5 - ...) to z^12.
MR mt_atan_pos(MR t) {
  const bool inv = t > MR(1.0lf);
  precise MR u = inv ? MR(1.0lf) / t : t;
  for (int k = 0; k < 2; ++k) u = u / (MR(1.0lf) + sqrt(MR(1.0lf) + u * u));
  precise MR z = u * u;
  precise MR s = MR(1.0lf) / MR(25.0lf);
  for (int k = 11; k >= 0; --k) s = ((k & 1) == 0 ? MR(1.0lf) : MR(-1.0lf)) / MR(2 * k + 1) + z * s;
  precise MR r = MR(4.0lf) * (u * s);
  precise MR inverted = (MT_PI_2 - r) + MT_PI_2_LO;
  return inv ? inverted : r;
}

// C's atan2, its signed zeros and infinities included.
MR mt_atan2(MR y, MR x) {
  if (isnan(x) || isnan(y)) return x + y;
  const bool xneg = mt_negative(x);
  MR r;
  if (y == MR(0.0lf)) {
    r = xneg ? MT_PI : MR(0.0lf);
  } else if (isinf(x) && isinf(y)) {
    r = xneg ? MR(2.356194490192345lf) : MR(0.7853981633974483lf);
  } else if (x == MR(0.0lf) || isinf(y)) {
    r = MT_PI_2;
  } else if (isinf(x)) {
    r = xneg ? MT_PI : MR(0.0lf);
  } else {
    const MR t = mt_atan_pos(abs(y) / abs(x));
    precise MR from_pi = (MT_PI - t) + MT_PI_LO;
    r = xneg ? from_pi : t;
  }
  return vm_with_sign_of(r, y);
}

// asin(x) = atan2(x, sqrt((1 - x)(1 + x))), acos(x) = atan2(sqrt((1 - x)(1 + x)), x): 1 - x is
// exact near 1, where 1 - x^2 would cancel. NaN outside [-1, 1] (the square root's).
MR mt_cosine_side(MR x) {
  precise MR q = (MR(1.0lf) - x) * (MR(1.0lf) + x);
  return sqrt(q);
}

#if defined(OP_TAN) && DTA == 3 && VM_DOUBLE
float mt_tan(float x) {
  if (isnan(x) || isinf(x)) return uintBitsToFloat(0x7fc00000u);
  const float ax = abs(x);
  double r = double(ax);
  const uint q = ax < 0.5 ? 0u : trig_reduce(ax, r);
  const double s = trig_sin_poly(r), c = trig_cos_poly(r);
  precise double t = (q & 1u) == 0u ? s / c : -c / s;
  return float(floatBitsToUint(x) >= 0x80000000u ? -t : t);
}
#elif defined(OP_TAN)
// float64, and float32 without float64: r = rh + rl, to first order in rl
MR mt_tan(MR x) {
  if (isnan(x) || isinf(x)) return mt_nan();
  const MR ax = abs(x);
  MR rh = ax, rl = MR(0);
  const uint q = ax < MR(0.5) ? 0u : trig_reduce(ax, rh, rl);
  precise MR s = trig_sin_poly(rh) + rl * trig_cos_poly(rh);
  precise MR c = trig_cos_poly(rh) - rl * trig_sin_poly(rh);
  precise MR t = (q & 1u) == 0u ? s / c : -c / s;
  return mt_negative(x) ? -t : t;
}
#endif

// ---- hyperbolic ----

MR mt_sinh(MR x) {
  const MR ax = abs(x);
  precise MR r;
  if (ax < MR(1.0lf)) {
    const MR e = dm_expm1(ax);
    r = MR(0.5lf) * (e + e / (e + MR(1.0lf)));
  } else if (ax < MR(22.0lf)) {
    const MR e = vm_exp(ax);
    r = MR(0.5lf) * (e - MR(1.0lf) / e);
  } else {  // e^-x is below an ulp; e^(x/2) squared reaches the top of the range
    const MR h = vm_exp(MR(0.5lf) * ax);
    r = (MR(0.5lf) * h) * h;
  }
  return vm_with_sign_of(r, x);
}

MR mt_cosh(MR x) {
  const MR ax = abs(x);
  precise MR r;
  if (ax < MR(22.0lf)) {
    const MR e = vm_exp(ax);
    r = MR(0.5lf) * (e + MR(1.0lf) / e);
  } else {
    const MR h = vm_exp(MR(0.5lf) * ax);
    r = (MR(0.5lf) * h) * h;
  }
  return r;
}

MR mt_asinh(MR x) {
  const MR ax = abs(x);
  precise MR r;
  if (ax > MR(268435456.0lf)) {  // 2^28: sqrt(1 + x^2) is |x| to MR precision
    r = vm_log(ax) + MT_LN2;
  } else {
    precise MR x2 = ax * ax;
    r = dm_log1p(ax + x2 / (MR(1.0lf) + sqrt(MR(1.0lf) + x2)));
  }
  return vm_with_sign_of(r, x);
}

MR mt_acosh(MR x) {
  if (x < MR(1.0lf)) return mt_nan();
  if (x > MR(268435456.0lf)) return vm_log(x) + MT_LN2;
  precise MR t = x - MR(1.0lf);
  precise MR r = dm_log1p(t + sqrt(MR(2.0lf) * t + t * t));
  return r;
}

MR mt_atanh(MR x) {
  const MR ax = abs(x);
  precise MR r = MR(0.5lf) * dm_log1p(MR(2.0lf) * ax / (MR(1.0lf) - ax));
  return vm_with_sign_of(r, x);
}

// ---- gamma and its derivatives ----

#include "gamma.glsl"  // mt_lgamma_pos and mt_digamma_pos, shared with special.comp

// inf at 0, the negative integers and +-inf; below 0 by reflection: lgamma(x) =
// log(pi / |sin(pi x)|) - lgamma(1 - x).
MR mt_lgamma(MR x) {
  if (isnan(x)) return x;
  if (isinf(x) || (x <= MR(0.0lf) && x == floor(x))) return mt_inf();
  if (x > MR(0.0lf)) return mt_lgamma_pos(x);
  precise MR r = vm_log(MT_PI / abs(mt_sinpi(x))) - mt_lgamma_pos(MR(1.0lf) - x);
  return r;
}

MR mt_digamma(MR x) {
  if (x == MR(0.0lf)) return mt_negative(x) ? mt_inf() : -mt_inf();
  if (x < MR(0.0lf)) {
    if (x == floor(x)) return mt_nan();
    const MR r = x - trunc(x);
    precise MR v = mt_digamma_pos(MR(1.0lf) - x) - MT_PI * mt_cospi(r) / mt_sinpi(r);
    return v;
  }
  return mt_digamma_pos(x);
}

// y^-s for an integer s and y != 0 (negative y too).
MR mt_pow_neg(MR y, MR s) {
  const MR m = vm_exp(-s * vm_log(abs(y)));
  const bool odd = floor(s * MR(0.5lf)) * MR(2.0lf) != s;
  return y < MR(0.0lf) && odd ? -m : m;
}

// backend/cpu/math.cpp's hurwitz_zeta: zeta(s, x) for an integer s >= 2; NaN below -50000.
MR mt_hurwitz_zeta(MR s, MR x) {
  if (x < MR(-50000.0lf)) return mt_nan();
  precise MR sum = MR(0.0lf);
  precise MR y = x;
  for (int k = 0; k < 65000 && y < MR(10.0lf) + s; ++k) {
    sum += mt_pow_neg(y, s);
    y += MR(1.0lf);
  }
  const MR C[7] = MR[](MR(0.08333333333333333lf), MR(-0.001388888888888889lf),
                               MR(3.3068783068783067e-05lf), MR(-8.267195767195767e-07lf),
                               MR(2.08767569878681e-08lf), MR(-5.284190138687493e-10lf),
                               MR(1.3382536530684679e-11lf));
  precise MR pw = s * mt_pow_neg(y, s + MR(1.0lf));
  precise MR tail = MR(0.0lf);
  for (int j = 0; j < 7; ++j) {
    tail += C[j] * pw;
    pw *= (s + MR(2 * j + 1)) * (s + MR(2 * j + 2)) / (y * y);
  }
  precise MR r = sum + mt_pow_neg(y, s - MR(1.0lf)) / (s - MR(1.0lf)) + MR(0.5lf) * mt_pow_neg(y, s) + tail;
  return r;
}

MR mt_polygamma(uint n, MR x) {
  if (isnan(x)) return x;
  const MR sign = (n & 1u) == 1u ? MR(1.0lf) : MR(-1.0lf);
  if (x <= MR(0.0lf) && x == floor(x)) return sign * mt_inf();
  if (n == 1u) {
    if (x < MR(0.0lf)) {  // psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x)
      const MR sp = mt_sinpi(x);
      precise MR v = MT_PI * MT_PI / (sp * sp) - mt_hurwitz_zeta(MR(2.0lf), MR(1.0lf) - x);
      return v;
    }
    return isinf(x) ? MR(0.0lf) : mt_hurwitz_zeta(MR(2.0lf), x);
  }
  if (isinf(x)) return MR(0.0lf);
  precise MR factorial = MR(1.0lf);
  for (uint k = 2u; k <= n && k < 172u; ++k) factorial *= MR(k);
  if (n >= 172u) factorial = mt_inf();
  precise MR v = sign * factorial * mt_hurwitz_zeta(MR(n + 1u), x);
  return v;
}

// ---- base-2 and base-10 logarithms, 2^x ----

// log_b(x) = k log_b(2) + log(m) / log(b) for x = 2^k m, m in [sqrt(1/2), sqrt(2)) (vm_log's
// split): k joins exactly for base 2, so the powers of two are exact in float64 too; zero,
// negatives, inf and NaN take vm_log's value, scaled.
MR mt_log_base(MR x, MR log_b_of_2, MR inv_ln_b) {
  if (!(x > MR(0.0lf)) || isinf(x)) return vm_log(x) * inv_ln_b;
  const bool tiny = x < kVmMinNormal;
  precise MR xs = tiny ? x * kVmSubnormalScale : x;
  const VU ix = VM_AS_U(xs) + (kVmOneBits - kVmSqrtHalfBits);
  precise MR k = MR(VI(ix >> kVmMantBits) - VI(kVmBias)) - (tiny ? kVmSubnormalLog2 : MR(0.0lf));
  const MR m = VM_AS_T((ix & kVmMantMask) + kVmSqrtHalfBits);
  precise MR r = k * log_b_of_2 + vm_log(m) * inv_ln_b;
  return r;
}

// 2^x = e^(f ln 2) 2^n, n = floor(x + 1/2), f = x - n exact (|x| clamped far past the range):
// at an integer e^0 is 1 exactly; 2^n in two factors, so a subnormal result rounds once.
MR mt_exp2(MR x) {
  if (isnan(x)) return x;
#if VM_DOUBLE
  const MR c = clamp(x, MR(-1100.0lf), MR(1100.0lf));
#else
  const MR c = clamp(x, MR(-200.0lf), MR(200.0lf));
#endif
  const MR n = floor(c + MR(0.5lf));
  const VI ni = VI(n), n1 = ni / VI(2);
  precise MR r = vm_exp((c - n) * MT_LN2) * vm_pow2i(n1) * vm_pow2i(ni - n1);
  return r;
}

// backend/cpu/math.cpp's erfinv: Giles' single-precision approximation, then Newton steps until
// they stop moving (MT_EPS of t), past |x| = 1/2 on erfc(|y|) - (1 - |x|) (1 - |x| exact).
MR mt_erfinv(MR x) {
  if (isnan(x) || x < MR(-1.0lf) || x > MR(1.0lf)) return mt_nan();
  if (abs(x) == MR(1.0lf)) return vm_with_sign_of(mt_inf(), x);
  precise MR w = -vm_log((MR(1.0lf) - x) * (MR(1.0lf) + x));
  precise MR q;
  if (w < MR(5.0lf)) {
    w = w - MR(2.5lf);
    q = MR(2.81022636e-08lf);
    q = MR(3.43273939e-07lf) + q * w;
    q = MR(-3.5233877e-06lf) + q * w;
    q = MR(-4.39150654e-06lf) + q * w;
    q = MR(0.00021858087lf) + q * w;
    q = MR(-0.00125372503lf) + q * w;
    q = MR(-0.00417768164lf) + q * w;
    q = MR(0.246640727lf) + q * w;
    q = MR(1.50140941lf) + q * w;
  } else {
    w = sqrt(w) - MR(3.0lf);
    q = MR(-0.000200214257lf);
    q = MR(0.000100950558lf) + q * w;
    q = MR(0.00134934322lf) + q * w;
    q = MR(-0.00367342844lf) + q * w;
    q = MR(0.00573950773lf) + q * w;
    q = MR(-0.0076224613lf) + q * w;
    q = MR(0.00943887047lf) + q * w;
    q = MR(1.00167406lf) + q * w;
    q = MR(2.83297682lf) + q * w;
  }
  const MR ax = abs(x);
  precise MR t = abs(q * x);
  // The start drifts past 1 - |x| ~ 1e-9 (a float approximation: 8% off at 1 - 2^-53); the steps
  // go on until they stop moving, at most 32 (backend/cpu/math.cpp's erfinv_value).
  for (int k = 0; k < 32; ++k) {
    precise MR residual = ax <= MR(0.5lf) ? vm_erf(t) - ax : (MR(1.0lf) - ax) - vm_erfc(t);
    precise MR step = residual * MR(0.886226925452758lf) * vm_exp(t * t);
    t -= step;
    if (!(abs(step) > t * MT_EPS)) break;  // NaN stops too
  }
  return vm_with_sign_of(t, x);
}
#endif

#if DTA == 1 || DTA == 2
#define TU XCAT(UTYPE_, DTA)
const TA kBits = TA(DTA == 2 ? 64 : 32);
// gcd and lcm on the magnitudes as unsigned numbers, as the CPU's (backend/cpu/math.cpp): GLSL's
// % of negative operands is undefined, and |-2^63| fits only unsigned.
TU mt_magnitude(TA a) { return a < TA(0) ? TU(0) - TU(a) : TU(a); }
TU mt_gcd(TA x, TA y) {
  TU a = mt_magnitude(x), b = mt_magnitude(y);
  for (int k = 0; k < 200 && a != TU(0); ++k) {  // Euclid: under 100 steps for 64 bits
    const TU c = a;
    a = b % a;
    b = c;
  }
  return b;
}
#endif

#if defined(OP_NEXTAFTER)
// The next float after x towards y, on the bits (compares of subnormals may flush to zero): the
// magnitude steps up or down by one unit in the last place.
#if DTA == 4
#define NU uint64_t
#define NI int64_t
#define AS_NU doubleBitsToUint64
#define AS_NT uint64BitsToDouble
const NU kNaSign = 0x8000000000000000ul;
#else
#define NU uint
#define NI int
#define AS_NU floatBitsToUint
#define AS_NT uintBitsToFloat
const NU kNaSign = 0x80000000u;
#endif
NI mt_order(NU bits) { return (bits & kNaSign) != NU(0) ? -NI(bits & ~kNaSign) : NI(bits); }
TA mt_nextafter(TA x, TA y) {
  if (isnan(x) || isnan(y)) return x + y;
  const NU bx = AS_NU(x), by = AS_NU(y);
  const NI ox = mt_order(bx), oy = mt_order(by);
  if (ox == oy) return y;  // equal (+0 and -0 too): y, as C's
  if ((bx & ~kNaSign) == NU(0)) return AS_NT((by & kNaSign) | NU(1));  // from zero: the smallest
  const bool away = (oy > ox) == ((bx & kNaSign) == NU(0));  // the magnitude grows
  return AS_NT(away ? bx + NU(1) : bx - NU(1));
}
#endif

TO compute(int ia, int ib) {
  const TA x = a[ia];
#if NIN >= 2
  const TB y = b[ib];
#endif
#if defined(OP_TAN)
  return mt_tan(x);
#elif defined(OP_ASIN)
  return TO(mt_atan2(MR(x), mt_cosine_side(MR(x))));
#elif defined(OP_ACOS)
  return TO(mt_atan2(mt_cosine_side(MR(x)), MR(x)));
#elif defined(OP_ATAN)
  return TO(vm_with_sign_of(mt_atan_pos(abs(MR(x))), MR(x)));
#elif defined(OP_SINH)
  return TO(mt_sinh(MR(x)));
#elif defined(OP_COSH)
  return TO(mt_cosh(MR(x)));
#elif defined(OP_ASINH)
  return TO(mt_asinh(MR(x)));
#elif defined(OP_ACOSH)
  return TO(mt_acosh(MR(x)));
#elif defined(OP_ATANH)
  return TO(mt_atanh(MR(x)));
#elif defined(OP_LGAMMA)
  return TO(mt_lgamma(MR(x)));
#elif defined(OP_DIGAMMA)
  return TO(mt_digamma(MR(x)));
#elif defined(OP_POLYGAMMA)
  return TO(mt_polygamma(p.scalar[0], MR(x)));
#elif defined(OP_ERFINV)
  return TO(mt_erfinv(MR(x)));
#elif defined(OP_LOG2)
  return TO(mt_log_base(MR(x), MR(1.0lf), MR(1.4426950408889634lf)));
#elif defined(OP_LOG10)
  return TO(mt_log_base(MR(x), MR(0.3010299956639812lf), MR(0.4342944819032518lf)));
#elif defined(OP_EXP2)
  return TO(mt_exp2(MR(x)));
#elif defined(OP_ATAN2)
  return TO(mt_atan2(MR(x), MR(y)));
#elif defined(OP_BITWISE_LEFT_SHIFT)
  return y < TA(0) || y >= kBits ? TA(0) : TA(TU(x) << TU(y));
#elif defined(OP_BITWISE_RIGHT_SHIFT)
  return x >> (y < TA(0) || y >= kBits ? kBits - TA(1) : y);  // arithmetic: the sign fills
#elif defined(OP_GCD)
  return TA(mt_gcd(x, y));
#elif defined(OP_LCM)
  const TU g = mt_gcd(x, y);
  return g == TU(0) ? TA(0) : TA(mt_magnitude(x) / g * mt_magnitude(y));
#elif defined(OP_NEXTAFTER)
  return mt_nextafter(x, y);
#elif defined(OP_FMOD) && DTA >= 3
  return dm_fmod(x, y);
#elif defined(OP_FMOD)
  // C's %, on magnitudes (the sign of x): defined for every sign on every device
  if (y == TA(0)) {
    raise_flag();
    return TA(0);
  }
  if (y == TA(-1)) return TA(0);
  const XCAT(UTYPE_, DTA) ux = XCAT(UTYPE_, DTA)(x < TA(0) ? -x : x),
                          uy = XCAT(UTYPE_, DTA)(y < TA(0) ? -y : y);
  const TA r = TA(ux % uy);
  return x < TA(0) ? -r : r;
#endif
}

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  uint n = 1u;
  for (int d = 0; d < 6; ++d) n *= p.shape[d];
  if (i >= n) return;
  int at[3] = int[](p.offset[0], p.offset[1], p.offset[2]);
  uint r = i;
  for (int d = 5; d >= 0 && r != 0u; --d) {
    const uint coord = r % p.shape[d];
    r /= p.shape[d];
    for (int k = 0; k < 3; ++k) at[k] += int(coord) * p.stride[6 * k + d];
  }
  o[at[0]] = compute(at[1], at[2]);
}
