// Floor division, remainder, pow, log1p and expm1 for the element-wise shader, with the CPU's
// semantics (backend/cpu/divmod.cpp, elementwise.cpp): Python's signs, C's fmod computed exactly,
// integer powers by squaring with wrap-around. Loops are bounded by the bits of one number.

// fmod(a, b), exact as C's: the remainder of the significands by long division, a few bits per
// step (as many as the significand's word leaves free), then scaled back by b's exponent. No
// rounding happens anywhere, and no subnormal is made by arithmetic (a device may flush those).
#define DM_FMOD(name, T, U, AS_U, AS_T, MANT, STEP, SIGN, INF)                                   \
  T name(T a, T b) {                                                                    \
    const U sign = SIGN, inf_bits = INF;                                                \
    const U ua = AS_U(a) & ~sign, ub = AS_U(b) & ~sign;                                 \
    if (ua >= inf_bits || ub > inf_bits || ub == U(0)) return (a - a) / (b - b);        \
    if (ua < ub) return a;                                                              \
    const U implicit_bit = U(1) << MANT, mant_mask = implicit_bit - U(1);               \
    const int ea = max(int(ua >> MANT), 1), eb = max(int(ub >> MANT), 1);               \
    const U mb = (ub >> MANT) != U(0) ? (ub & mant_mask) | implicit_bit : ub;           \
    U r = ((ua >> MANT) != U(0) ? (ua & mant_mask) | implicit_bit : ua) % mb;           \
    for (int left = ea - eb; left > 0; left -= int(STEP)) {                             \
      r = (r << min(uint(left), STEP)) % mb;                                            \
    }                                                                                   \
    int e = eb;                                                                         \
    for (int k = 0; k < int(MANT) && r != U(0) && r < implicit_bit && e > 1; ++k) {     \
      r <<= 1;                                                                          \
      --e;                                                                              \
    }                                                                                   \
    const U mag = r >= implicit_bit ? (U(e) << MANT) | (r & mant_mask) : r;             \
    return AS_T(mag | (AS_U(a) & sign));                                                \
  }

#if DTA == 3
DM_FMOD(dm_fmod, float, uint, floatBitsToUint, uintBitsToFloat, 23u, 8u, 0x80000000u, 0x7f800000u)
#elif DTA == 4
DM_FMOD(dm_fmod, double, uint64_t, doubleBitsToUint64, uint64BitsToDouble, 52u, 11u,
        0x8000000000000000ul, 0x7ff0000000000000ul)
#endif

#if DTA >= 3
#define DT_F XCAT(TYPE_, DTA)
// PyTorch's div_floor (divmod.cpp's float_floor_divide).
DT_F dm_floor_divide(DT_F a, DT_F b) {
  if (b == DT_F(0)) return a / b;
  precise DT_F mod = dm_fmod(a, b);
  precise DT_F div = (a - mod) / b;
  if (mod != DT_F(0) && (b < DT_F(0)) != (mod < DT_F(0))) div -= DT_F(1);
  if (div == DT_F(0)) {  // copysign(0, a / b)
    const DT_F q = a / b;
    return q < DT_F(0) || (q == DT_F(0) && DT_F(1) / q < DT_F(0)) ? DT_F(-1) * DT_F(0) : DT_F(0);
  }
  precise DT_F floor_div = floor(div);
  if (div - floor_div > DT_F(0.5)) floor_div += DT_F(1);
  return floor_div;
}

DT_F dm_remainder(DT_F a, DT_F b) {
  precise DT_F mod = dm_fmod(a, b);
  if (mod != DT_F(0) && (b < DT_F(0)) != (mod < DT_F(0))) mod += b;
  return mod;
}
#else
#define DT_I XCAT(TYPE_, DTA)
#define DT_U XCAT(UTYPE_, DTA)
// Integers (divisor non-zero): on magnitudes, where unsigned division has one meaning on every
// device; the minimum value divided by -1 wraps, as on the CPU.
DT_I dm_floor_divide(DT_I a, DT_I b) {
  if (b == DT_I(-1)) return -a;
  const DT_U ua = DT_U(a < DT_I(0) ? -a : a), ub = DT_U(b < DT_I(0) ? -b : b);
  const DT_U q = ua / ub;
  const bool negative = (a < DT_I(0)) != (b < DT_I(0));
  const DT_I qi = negative ? -DT_I(q) : DT_I(q);
  return negative && q * ub != ua ? qi - DT_I(1) : qi;
}

DT_I dm_remainder(DT_I a, DT_I b) {
  if (b == DT_I(-1)) return DT_I(0);
  const DT_U ua = DT_U(a < DT_I(0) ? -a : a), ub = DT_U(b < DT_I(0) ? -b : b);
  const DT_U r = ua % ub;
  const DT_I ri = a < DT_I(0) ? -DT_I(r) : DT_I(r);
  return ri != DT_I(0) && (ri < DT_I(0)) != (b < DT_I(0)) ? ri + b : ri;
}

// By squaring, wrapping as unsigned arithmetic does (e >= 0).
DT_I dm_int_pow(DT_I base, DT_I e) {
  DT_U r = DT_U(1), b = DT_U(base);
  for (DT_U k = DT_U(e); k != DT_U(0); k >>= 1) {
    if ((k & DT_U(1)) != DT_U(0)) r *= b;
    b *= b;
  }
  return DT_I(r);
}
#endif

#if defined(OP_LOG1P) || defined(OP_EXPM1) || (defined(OP_POW) && DTA >= 3)
// log1p, expm1 and pow through vmath's exp and log in its type VT: double for float32 arguments
// where the device has float64 (correctly rounded but for rare halfway cases, as the CPU's libm)
// and for float64 ones (within a few ulp); float for float32 ones on a device without float64
// (NO_FLOAT64: within a few ulp).
VT dm_log1p(VT x) {
  precise VT u = VT(1) + x;  // precise: (1 + x) - 1 must not simplify to x
  if (u == VT(1)) return x;  // also -0
  if (isinf(x) && x > VT(0)) return x;
  precise VT d = u - VT(1);
  return vm_log(u) * (x / d);  // the log of the rounded 1 + x, corrected (Goldberg)
}

VT dm_expm1(VT x) {
  precise VT u = vm_exp(x);
  if (u == VT(1)) return x;  // also -0
  if (isinf(u)) return u;
  precise VT um1 = u - VT(1);
  if (um1 == VT(-1)) return VT(-1);
  return um1 * (x / vm_log(u));  // (Kahan; the ratio first: (u - 1) x overflows near exp's limit)
}

#if defined(OP_POW) && defined(NO_FLOAT64)
#include "ff.glsl"

// log(x) = hi + lo for finite x > 0 in float-float, to about 2^-40 of itself: dm_log_dd's steps
// in float32 (x = 2^k m, log(m) = 2 atanh(s), s = (m - 1) / (m + 1), z = s^2 <= 0.0295).
void dm_log_ff(float x, out float hi, out float lo) {
  const bool tiny = x < kVmMinNormal;
  precise float xs = tiny ? x * kVmSubnormalScale : x;
  const uint ix = floatBitsToUint(xs) + (kVmOneBits - kVmSqrtHalfBits);
  const float k = float(int(ix >> 23) - 127) - (tiny ? kVmSubnormalLog2 : 0.0);
  precise float f = uintBitsToFloat((ix & kVmMantMask) + kVmSqrtHalfBits) - 1.0;  // exact
  float dh, dl, p, pe, s2h, s2l, s3h, s3l, ch, cl, kh, kl, h, l;
  ff_two_sum(2.0, f, dh, dl);
  precise float sh = f / dh;
  ff_two_prod(sh, dh, p, pe);
  precise float sl = (((f - p) - pe) - sh * dl) / dh;
  ff_two_prod(sh, sh, s2h, s2l);
  s2l += 2.0 * sh * sl;
  ff_two_prod(s2h, sh, s3h, s3l);
  s3l += s2h * sl + s2l * sh;
  const float third_hi = 0.6666666865348816, third_lo = -1.9868215517249155e-08;  // 2/3
  ff_two_prod(third_hi, s3h, ch, cl);
  cl += third_hi * s3l + third_lo * s3h;
  const float R[6] = float[](0.2, 0.14285714285714285, 0.1111111111111111, 0.09090909090909091,
                             0.07692307692307693, 0.06666666666666667);
  precise float z = sh * sh;
  precise float r = R[5];
  for (int j = 4; j >= 0; --j) r = r * z + R[j];
  precise float tail = 2.0 * sh * z * z * r;
  ff_two_prod(k, 0.6931471824645996, kh, kl);  // k ln2, ln2 as float-float
  kl += k * -1.9046542121259336e-09;
  ff_add(kh, kl, 2.0 * sh, 2.0 * sl, h, l);
  ff_add(h, l, ch, cl, h, l);
  ff_add(h, l, tail, 0.0, hi, lo);
}

// e^(y log |x|) for finite x != 0 with y log |x| in float-float, so that only vmath's float exp
// rounds.
float dm_exp_y_log(float ax, float y) {
  float lh, ll, th, tl;
  dm_log_ff(ax, lh, ll);
  ff_two_prod(y, lh, th, tl);
  if (!(abs(th) < 200.0)) return th > 0.0 ? uintBitsToFloat(0x7f800000u) : 0.0;
  tl += y * ll;
  precise float hi = th + tl;  // normalised: exp_impl's second part must be small
  precise float lo = tl - (hi - th);
  return vm_exp_impl(hi, lo, true, true);
}
#endif

#if DTA == 4
#include "dd.glsl"

// log(x) = hi + lo for finite x > 0, to about 2^-66 of itself: x = 2^k m, log(m) = 2 atanh(s) =
// 2s + (2/3) s^3 + 2 s z^2 (1/5 + z/7 + ...), s = (m - 1) / (m + 1), z = s^2 <= 0.0295; the
// first two terms in double-double, the rest (below 2^-12 of the whole) in double.
void dm_log_dd(double x, out double hi, out double lo) {
  const bool tiny = x < kVmMinNormal;
  precise double xs = tiny ? x * kVmSubnormalScale : x;
  const uint64_t ix = doubleBitsToUint64(xs) + (kVmOneBits - kVmSqrtHalfBits);
  const double k = double(int(ix >> 52) - 1023) - (tiny ? kVmSubnormalLog2 : 0.0lf);
  precise double f = uint64BitsToDouble((ix & kVmMantMask) + kVmSqrtHalfBits) - 1.0lf;  // exact
  double dh, dl, p, pe, s2h, s2l, s3h, s3l, ch, cl, kh, kl, h, l;
  dd_two_sum(2.0lf, f, dh, dl);
  precise double sh = f / dh;
  dd_two_prod(sh, dh, p, pe);
  precise double sl = (((f - p) - pe) - sh * dl) / dh;
  dd_two_prod(sh, sh, s2h, s2l);
  s2l += 2.0lf * sh * sl;
  dd_two_prod(s2h, sh, s3h, s3l);
  s3l += s2h * sl + s2l * sh;
  const double third_hi = 0.6666666666666666lf, third_lo = 3.700743415417188e-17lf;  // 2/3
  dd_two_prod(third_hi, s3h, ch, cl);
  cl += third_hi * s3l + third_lo * s3h;
  const double R[12] = double[](
      0.2lf, 0.14285714285714285lf, 0.1111111111111111lf, 0.09090909090909091lf,
      0.07692307692307693lf, 0.06666666666666667lf, 0.058823529411764705lf,
      0.05263157894736842lf, 0.047619047619047616lf, 0.043478260869565216lf, 0.04lf,
      0.037037037037037035lf);
  precise double z = sh * sh;
  precise double r = R[11];
  for (int j = 10; j >= 0; --j) r = r * z + R[j];
  precise double tail = 2.0lf * sh * z * z * r;
  dd_two_prod(k, 0.6931471805599453lf, kh, kl);  // k ln2, ln2 as double-double
  kl += k * 2.3190468138462996e-17lf;
  dd_add(kh, kl, 2.0lf * sh, 2.0lf * sl, h, l);
  dd_add(h, l, ch, cl, h, l);
  dd_add(h, l, tail, 0.0lf, hi, lo);
}
#endif

#if defined(OP_POW)
// C's pow for float32 arguments: its special cases, then |x|^y as e^(y log |x|) in double (in
// float-float without float64).
float dm_pow_f32(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return x + y;
  const float ax = abs(x);
  const float inf = uintBitsToFloat(0x7f800000u);
  if (isinf(y)) return ax == 1.0 ? 1.0 : ((ax < 1.0) == (y < 0.0) ? inf : 0.0);
  const bool y_int = floor(y) == y;
  if (x < 0.0 && !isinf(x) && !y_int) return (x - x) / (x - x);
  const bool y_odd = y_int && floor(y * 0.5) * 2.0 != y;
  float m;
  if (ax == 0.0)
    m = y < 0.0 ? inf : 0.0;
  else if (isinf(ax))
    m = y < 0.0 ? 0.0 : inf;
  else
#if defined(NO_FLOAT64)
    m = dm_exp_y_log(ax, y);
#else
    m = float(vm_exp(double(y) * vm_log(double(ax))));
#endif
  return y_odd && floatBitsToUint(x) >= 0x80000000u ? -m : m;
}
#endif
#endif

#if DTA == 4 && defined(OP_POW)
// C's pow for float64: the special cases as float32's, then e^(y log |x|) with y log |x| in
// double-double, so that only vmath's exp rounds (within an ulp of a correctly rounded pow).
double dm_pow_f64(double x, double y) {
  if (y == 0.0lf || x == 1.0lf) return 1.0lf;
  if (isnan(x) || isnan(y)) return x + y;
  const double ax = abs(x), inf = uint64BitsToDouble(0x7ff0000000000000ul);
  if (isinf(y)) return ax == 1.0lf ? 1.0lf : ((ax < 1.0lf) == (y < 0.0lf) ? inf : 0.0lf);
  const bool y_int = floor(y) == y;
  if (x < 0.0lf && !isinf(x) && !y_int) return uint64BitsToDouble(0x7ff8000000000000ul);
  const bool y_odd = y_int && floor(y * 0.5lf) * 2.0lf != y;
  double m;
  if (ax == 0.0lf) {
    m = y < 0.0lf ? inf : 0.0lf;
  } else if (isinf(ax)) {
    m = y < 0.0lf ? 0.0lf : inf;
  } else {
    double lh, ll, th, tl;
    dm_log_dd(ax, lh, ll);
    dd_two_prod(y, lh, th, tl);
    if (!(abs(th) < 1000.0lf)) {  // far past exp's range (and the product's error term)
      m = th > 0.0lf ? inf : 0.0lf;
    } else {
      tl += y * ll;
      precise double hi = th + tl;  // normalised: exp_impl's second part must be small
      precise double lo = tl - (hi - th);
      m = vm_exp_impl(hi, lo, true, true);
    }
  }
  return y_odd && doubleBitsToUint64(x) >= 0x8000000000000000ul ? -m : m;
}
#endif
