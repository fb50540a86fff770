// sin and cos, computed in float64 for float32 arguments (in float32 with a float-float
// reduced argument on a device without float64: NO_FLOAT64), so that the result rounds as the
// CPU's libm (sinf, cosf) does but for rare halfway cases, and within 2 ulp of it for float64
// ones: GLSL's builtins may be far less exact (Vulkan allows them an absolute error of 2^-11,
// lavapipe's are wrong for |x| of 1e20) and float64 has none. The argument is reduced modulo
// pi/2 exactly, with integer arithmetic on the bits of 2/pi (Payne and Hanek's method), for
// every finite value; the reduced r (|r| <= pi/4) then goes through Taylor polynomials whose
// first neglected term is below 2^-55 of the result.

// The first 256 bits of 2/pi (all fractional: 2/pi = 0.a2f9836e... in hex), float32's.
const uint TWO_OVER_PI[8] = uint[](0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
                                   0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u);

#if DTA == 4
// float64 needs 1280 bits of 2/pi: the host passes them as the int32 buffer `b` (as a constant
// array here, lavapipe takes 12 s to compile the variable index into it).
uint tp_table(int k) { return k >= 0 && k < 40 ? uint(b[k]) : 0u; }
#else
uint tp_table(int k) { return k >= 0 && k < 8 ? TWO_OVER_PI[k] : 0u; }
#endif

// 32 bits of 2/pi from bit `first` on (bit 1 is the first after the point; bits before it are
// 0): first is e - 1 for |x| = m 2^e, so that the product below always has the same number of
// fractional bits and every shift is a constant.
uint tp_word(int first) {
  const int at = first + 63;  // >= 0 for every first used (e >= -53)
  const int j = at / 32 - 2, o = at % 32;
  return o == 0 ? tp_table(j) : (tp_table(j) << o) | (tp_table(j + 1) >> (32 - o));
}

#if DTA == 3
// |x| = (q + f) pi/2 with q an integer (returned mod 4) and |f| <= 1/2: |x| is m 2^e with m an
// integer of 24 bits; only the bits of 2/pi from e - 1 on matter modulo 4, and 96 of them leave
// the fraction exact to 2^-70. |f| 2^64 goes to `frac`, f's sign to `negative`.
uint trig_quadrant(float ax, out uint64_t frac, out bool negative) {
  const uint bits = floatBitsToUint(ax);
  const int e = int(bits >> 23) - 150;
  const uint m = (bits & 0x7fffffu) | 0x800000u;
  const int first = e - 1;
  const uint64_t p0 = uint64_t(m) * tp_word(first), p1 = uint64_t(m) * tp_word(first + 32),
                 p2 = uint64_t(m) * tp_word(first + 64);
  // m times the 96 bits: hi * 2^64 + lo, at most 120 bits, whose last 94 bits are fractional
  const uint64_t lo = p2 + (p1 << 32);
  const uint64_t hi = p0 + (p1 >> 32) + (lo < p2 ? 1ul : 0ul);
  uint q = uint(hi >> 30) & 3u;
  frac = (hi << 34) | (lo >> 30);
  negative = (frac >> 63) != 0ul;
  if (negative) {  // past one half: the next quadrant, f negative
    q = (q + 1u) & 3u;
    frac = ~frac + 1ul;
  }
  return q;
}
#endif

#if DTA == 3 && defined(NO_FLOAT64)
#include "ff.glsl"

// As below, for a device without float64: the same exact reduction, r as float-float, and
// float32 polynomials; within 2 ulp of sinf/cosf.
uint trig_reduce(float ax, out float rh, out float rl) {
  uint64_t frac;
  bool negative;
  const uint q = trig_quadrant(ax, frac, negative);
  const float sign = negative ? -1.0 : 1.0;
  // f = frac 2^-64 as fh + fl: frac rounded to a float, and what the rounding dropped
  const float fh = float(frac);
  const float fl = float(int64_t(frac - uint64_t(fh)));
  float ph, pl;
  ff_two_prod(fh, 1.5707963705062866, ph, pl);  // times pi/2 as float-float
  pl += fh * -4.371138828673793e-08 + fl * 1.5707963705062866;
  precise float h = ph + pl;
  precise float l = pl - (h - ph);
  rh = sign * h * 5.421010862427522e-20;  // 2^-64, exact
  rl = sign * l * 5.421010862427522e-20;
  return q;
}

float trig_sin_poly(float r) {
  const float S[5] = float[](-0.16666666666666666, 0.008333333333333333, -0.0001984126984126984,
                             2.7557319223985893e-06, -2.505210838544172e-08);
  precise float z = r * r;
  precise float s = S[4];
  for (int k = 3; k >= 0; --k) s = s * z + S[k];
  precise float result = r + r * z * s;
  return result;
}

float trig_cos_poly(float r) {
  const float C[6] = float[](-0.5, 0.041666666666666664, -0.001388888888888889,
                             2.48015873015873e-05, -2.755731922398589e-07, 2.08767569878681e-09);
  precise float z = r * r;
  precise float c = C[5];
  for (int k = 4; k >= 0; --k) c = c * z + C[k];
  precise float result = 1.0 + z * c;
  return result;
}

// sin or cos of x: of rh + rl, to first order in rl.
float trig(float x, bool want_cos) {
  if (isnan(x) || isinf(x)) return uintBitsToFloat(0x7fc00000u);
  const float ax = abs(x);
  float rh = ax, rl = 0.0;
  const uint q = ax < 0.5 ? 0u : trig_reduce(ax, rh, rl);
  precise float s = trig_sin_poly(rh) + rl * trig_cos_poly(rh);
  precise float c = trig_cos_poly(rh) - rl * trig_sin_poly(rh);
  const uint k = want_cos ? q : (q + 3u) & 3u;  // sin x = cos(x - pi/2)
  const float v = k == 0u ? c : k == 1u ? -s : k == 2u ? -c : s;
  return !want_cos && floatBitsToUint(x) >= 0x80000000u ? -v : v;
}
#elif DTA == 3
// r = f pi/2 in double (trig_quadrant's f).
uint trig_reduce(float ax, out double r) {
  uint64_t frac;
  bool negative;
  const uint q = trig_quadrant(ax, frac, negative);
  const double f = double(frac) * 5.421010862427522e-20lf;  // 2^-64
  r = (negative ? -f : f) * 1.5707963267948966lf;
  return q;
}

double trig_sin_poly(double r) {
  const double S[7] = double[](-0.16666666666666666lf, 0.008333333333333333lf,
                               -0.0001984126984126984lf, 2.7557319223985893e-06lf,
                               -2.505210838544172e-08lf, 1.6059043836821613e-10lf,
                               -7.647163731819816e-13lf);
  precise double z = r * r;
  precise double s = S[6];
  for (int k = 5; k >= 0; --k) s = s * z + S[k];
  precise double result = r + r * z * s;
  return result;
}

double trig_cos_poly(double r) {
  const double C[8] = double[](-0.5lf, 0.041666666666666664lf, -0.001388888888888889lf,
                               2.48015873015873e-05lf, -2.755731922398589e-07lf,
                               2.08767569878681e-09lf, -1.1470745597729725e-11lf,
                               4.779477332387385e-14lf);
  precise double z = r * r;
  precise double c = C[7];
  for (int k = 6; k >= 0; --k) c = c * z + C[k];
  precise double result = 1.0lf + z * c;
  return result;
}

// sin (want_cos false) or cos of x.
float trig(float x, bool want_cos) {
  if (isnan(x) || isinf(x)) return uintBitsToFloat(0x7fc00000u);  // (x - x may fold to 0)
  const float ax = abs(x);
  double r = double(ax);
  const uint q = ax < 0.5 ? 0u : trig_reduce(ax, r);
  const bool negative = floatBitsToUint(x) >= 0x80000000u;
  double v;
  if (want_cos) {  // cos(-x) = cos(x)
    const uint k = q & 3u;
    v = k == 0u ? trig_cos_poly(r) : k == 1u ? -trig_sin_poly(r) : k == 2u ? -trig_cos_poly(r)
                                                                           : trig_sin_poly(r);
  } else {  // sin(-x) = -sin(x), -0 included
    const uint k = q & 3u;
    v = k == 0u ? trig_sin_poly(r) : k == 1u ? trig_cos_poly(r) : k == 2u ? -trig_sin_poly(r)
                                                                          : -trig_cos_poly(r);
    v = negative ? -v : v;
  }
  return float(v);
}
#else
#include "dd.glsl"

// float64: the same reduction with a 53-bit m and 224 bits of 2/pi, in 32-bit limbs, keeping
// 128 bits of the fraction (a double can lie within 2^-61 of a multiple of pi/2); r = rh + rl.
uint trig_reduce(double ax, out double rh, out double rl) {
  const uint64_t bits = doubleBitsToUint64(ax);
  const int e = int(bits >> 52) - 1075;
  const uint64_t m = (bits & 0xffffffffffffful) | 0x10000000000000ul;
  const int first = e - 1;
  uint w[7];
  uint limb[9] = uint[](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
  for (int j = 0; j < 7; ++j) w[j] = tp_word(first + 32 * (6 - j));  // least significant first
  const uint mpart[2] = uint[](uint(m), uint(m >> 32));
  for (int i = 0; i < 2; ++i) {
    uint64_t carry = 0ul;
    for (int j = 0; j < 7; ++j) {
      const uint64_t t = uint64_t(mpart[i]) * w[j] + limb[i + j] + carry;
      limb[i + j] = uint(t);
      carry = t >> 32;
    }
    limb[i + 7] = uint(carry);
  }
  // The product's last 222 bits are fractional. word[0]: the 32 bits from there up; then the
  // fraction's, most significant first.
  uint word[5];
  for (int k = 0; k < 5; ++k) word[k] = (limb[6 - k] >> 30) | (limb[7 - k] << 2);
  uint q = word[0] & 3u;
  uint64_t hi = (uint64_t(word[1]) << 32) | word[2], lo = (uint64_t(word[3]) << 32) | word[4];
  double sign = 1.0lf;
  if ((hi >> 63) != 0ul) {  // past one half: the next quadrant, the fraction negated
    q = (q + 1u) & 3u;
    sign = -1.0lf;
    lo = ~lo + 1ul;
    hi = ~hi + (lo == 0ul ? 1ul : 0ul);
  }
  const double dh = double(hi);
  const int64_t below = int64_t(hi - uint64_t(dh));  // what rounding hi to a double dropped
  const double fh = sign * dh * 5.421010862427522e-20lf;  // 2^-64
  const double fl =
      sign * (double(below) + double(lo) * 5.421010862427522e-20lf) * 5.421010862427522e-20lf;
  double ph, pl;
  dd_two_prod(fh, 1.5707963267948966lf, ph, pl);  // times pi/2 as double-double
  pl += fh * 6.123233995736766e-17lf + fl * 1.5707963267948966lf;
  precise double h = ph + pl;
  precise double l = pl - (h - ph);
  rh = h;
  rl = l;
  return q;
}

double trig_sin_poly(double r) {
  const double S[10] = double[](
      -0.16666666666666666lf, 0.008333333333333333lf, -0.0001984126984126984lf,
      2.7557319223985893e-06lf, -2.505210838544172e-08lf, 1.6059043836821613e-10lf,
      -7.647163731819816e-13lf, 2.8114572543455206e-15lf, -8.22063524662433e-18lf,
      1.9572941063391263e-20lf);
  precise double z = r * r;
  precise double s = S[9];
  for (int k = 8; k >= 0; --k) s = s * z + S[k];
  precise double result = r + r * z * s;
  return result;
}

double trig_cos_poly(double r) {
  const double C[11] = double[](
      -0.5lf, 0.041666666666666664lf, -0.001388888888888889lf, 2.48015873015873e-05lf,
      -2.755731922398589e-07lf, 2.08767569878681e-09lf, -1.1470745597729725e-11lf,
      4.779477332387385e-14lf, -1.5619206968586225e-16lf, 4.110317623312165e-19lf,
      -8.896791392450574e-22lf);
  precise double z = r * r;
  precise double c = C[10];
  for (int k = 9; k >= 0; --k) c = c * z + C[k];
  precise double result = 1.0lf + z * c;
  return result;
}

// sin or cos of x: of rh + rl, to first order in rl.
double trig(double x, bool want_cos) {
  if (isnan(x) || isinf(x)) return uint64BitsToDouble(0x7ff8000000000000ul);
  const double ax = abs(x);
  double rh = ax, rl = 0.0lf;
  const uint q = ax < 0.5lf ? 0u : trig_reduce(ax, rh, rl);
  precise double s = trig_sin_poly(rh) + rl * trig_cos_poly(rh);
  precise double c = trig_cos_poly(rh) - rl * trig_sin_poly(rh);
  const uint k = want_cos ? q : (q + 3u) & 3u;  // sin x = cos(x - pi/2)
  const double v = k == 0u ? c : k == 1u ? -s : k == 2u ? -c : s;
  const bool negative = doubleBitsToUint64(x) >= 0x8000000000000000ul;
  return !want_cos && negative ? -v : v;
}
#endif
