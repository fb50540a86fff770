// sin and cos of float32 arguments, computed in float64 so that the result rounds as the CPU's
// libm (sinf, cosf) does but for rare halfway cases: GLSL's builtins may be far less exact
// (Vulkan allows them an absolute error of 2^-11, and lavapipe's are wrong for |x| of 1e20).
// The argument is reduced modulo pi/2 exactly, with integer arithmetic on the bits of 2/pi
// (Payne and Hanek's method), for every finite float; the reduced r (|r| <= pi/4) then goes
// through Taylor polynomials whose first neglected term is below 2^-55 of the result.

// The first 256 bits of 2/pi (all fractional: 2/pi = 0.a2f9836e... in hex).
const uint TWO_OVER_PI[8] = uint[](0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
                                   0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u);

uint tp_table(int k) { return k >= 0 && k < 8 ? TWO_OVER_PI[k] : 0u; }

// 32 bits of 2/pi from bit `first` on (bit 1 is the first after the point; bits before it are
// 0): first is e - 1 for |x| = m 2^e, so that the product below always has the same number of
// fractional bits and every shift is a constant.
uint tp_word(int first) {
  const int b = first + 63;  // >= 0 for every first used (e >= -24)
  const int j = b / 32 - 2, o = b % 32;
  return o == 0 ? tp_table(j) : (tp_table(j) << o) | (tp_table(j + 1) >> (32 - o));
}

// |x| = (q + f) pi/2 with q an integer (returned mod 4) and |f| <= 1/2; r = f pi/2. |x| is
// m 2^e with m an integer of 24 bits; only the bits of 2/pi from e - 1 on matter modulo 4, and
// 96 of them leave the fraction exact to 2^-70.
uint trig_reduce(float ax, out double r) {
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
  const uint64_t frac = (hi << 34) | (lo >> 30);
  double f;
  if ((frac >> 63) != 0ul) {  // past one half: the next quadrant, f negative
    q = (q + 1u) & 3u;
    f = -double(~frac + 1ul) * 5.421010862427522e-20lf;  // 2^-64
  } else {
    f = double(frac) * 5.421010862427522e-20lf;
  }
  r = f * 1.5707963267948966lf;
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
