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
// log1p, expm1 and pow through vmath's double exp and log: float32 arguments come out correctly
// rounded but for rare halfway cases (the CPU's libm is as close); float64 ones within a few ulp.
double dm_log1p(double x) {
  precise double u = 1.0lf + x;  // precise: (1 + x) - 1 must not simplify to x
  if (u == 1.0lf) return x;  // also -0
  if (isinf(x) && x > 0.0lf) return x;
  precise double d = u - 1.0lf;
  return vm_log(u) * (x / d);  // the log of the rounded 1 + x, corrected (Goldberg)
}

double dm_expm1(double x) {
  precise double u = vm_exp(x);
  if (u == 1.0lf) return x;  // also -0
  if (isinf(u)) return u;
  precise double um1 = u - 1.0lf;
  if (um1 == -1.0lf) return -1.0lf;
  return um1 * x / vm_log(u);  // (Kahan)
}

// C's pow for float32 arguments: its special cases, then |x|^y as e^(y log |x|) in double.
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
    m = float(vm_exp(double(y) * vm_log(double(ax))));
  return y_odd && floatBitsToUint(x) >= 0x80000000u ? -m : m;
}
#endif
