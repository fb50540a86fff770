// A port of backend/cpu/vmath.h (exp, expm1, log, log1p, tanh, sigmoid, softplus, erf, erfc, gelu,
// gelu's derivative and its tanh form) for the element-wise shader, so that the device rounds as the CPU does rather than
// as the driver's builtins do (GLSL has none at all in double). The same operations in the same
// order, with fma where vmath.h has fma_: results are the CPU's to the last bit where the CPU
// build has FMA, within an ulp otherwise. One source for both precisions: VM_DOUBLE picks the
// type, the bit casts and the coefficients (vmath.h's, printed in decimal: GLSL has no hex floats).
// Every loop runs a fixed, small number of times (the polynomials' lengths).

#if VM_DOUBLE
#define VT double
#define VU uint64_t
#define VI int64_t
#define VM_AS_U(x) doubleBitsToUint64(x)
#define VM_AS_T(u) uint64BitsToDouble(u)
const uint kVmMantBits = 52u;
const VU kVmBias = 1023ul;
const VU kVmSignMask = 0x8000000000000000ul;
const VU kVmInfBits = 0x7ff0000000000000ul;
const VU kVmOneBits = 0x3ff0000000000000ul;
const VU kVmMantMask = 0xffffffffffffful;  // (glslang misreads 0x000f...: no leading zeros)
const VU kVmSqrtHalfBits = 0x3fe6a09e667f3bcdul;
const VU kVmHalfMask = ~0x7fffffful;
const VT kVmRoundShift = 6755399441055744.0lf;
const VT kVmTwoPowMant = 4503599627370496.0lf;
const VT kVmLog2e = 1.4426950408889634lf;
const VT kVmLn2Hi = 0.6931471803691238lf;
const VT kVmLn2Lo = 1.9082149292705877e-10lf;
const VT kVmExpMin = -746.0lf;
const VT kVmExpMax = 710.0lf;
const VT kVmSubnormalScale = 18014398509481984.0lf;
const VT kVmSubnormalLog2 = 54.0lf;
const VT kVmErfcMaxArg = 27.3lf;
const VT kVmMinNormal = 2.2250738585072014e-308lf;
const VT kVmSplit = 134217729.0lf;  // 2^27 + 1: Dekker's split of a double
const VT EXP_Q[10] = VT[](0.5000000000000011lf, 0.16666666666666413lf, 0.04166666666653008lf,
                          0.008333333333494508lf, 0.0013888888943652733lf,
                          0.00019841269506548466lf, 2.4801493074078734e-05lf,
                          2.7557586344269864e-06lf, 2.7630257673343157e-07lf,
                          2.5000087650646056e-08lf);
const VT LOG_P[7] = VT[](0.6666666666666735lf, 0.39999999999410907lf, 0.28571428743305866lf,
                         0.22222198471331495lf, 0.18183569993598997lf, 0.15313896449663467lf,
                         0.14797578722351196lf);
const VT TANH_P[12] = VT[](-0.33333333333333315lf, 0.13333333333329853lf, -0.05396825396611453lf,
                           0.02186948847010748lf, -0.008863234332809807lf,
                           0.0035921141846639434lf, -0.0014557270531402632lf,
                           0.0005894561909976114lf, -0.0002370232273636586lf,
                           9.157745452242975e-05lf, -3.020530408463434e-05lf,
                           6.049968408732616e-06lf);
const VT ERF_P[12] = VT[](0.1283791670955126lf, -0.37612638903183726lf, 0.11283791670953691lf,
                          -0.026866170644803948lf, 0.005223977621574609lf,
                          -0.0008548326753160167lf, 0.00012055320975163352lf,
                          -1.4925298107014063e-05lf, 1.6455188484959532e-06lf,
                          -1.6275230550873783e-07lf, 1.404471160622564e-08lf,
                          -8.478719688097795e-10lf);
const VT ERFC_A = 3.2062476334721697lf;
const VT ERFC_B = -1.2188564937523665lf;
const VT ERFC_G[22] = VT[](
    -0.8296992011416037lf, 0.4008061353375256lf, 0.029794158385542127lf, -0.008033282250067933lf,
    -0.002710772801551755lf, 0.0003644808823343278lf, 0.00027618539990698505lf,
    -2.707867356983798e-05lf, -3.157326157844149e-05lf, 3.561812451602619e-06lf,
    3.8013044631954454e-06lf, -6.626461515590866e-07lf, -4.431559111335754e-07lf,
    1.2904062278998446e-07lf, 4.3609814621297355e-08lf, -2.27543043353776e-08lf,
    -2.403486734390583e-09lf, 3.3343765812223743e-09lf, -1.8753983479793608e-10lf,
    -3.598966862711076e-10lf, 4.5254902255337386e-11lf, 2.1324349855619092e-11lf);
#else
#define VT float
#define VU uint
#define VI int
#define VM_AS_U(x) floatBitsToUint(x)
#define VM_AS_T(u) uintBitsToFloat(u)
const uint kVmMantBits = 23u;
const VU kVmBias = 127u;
const VU kVmSignMask = 0x80000000u;
const VU kVmInfBits = 0x7f800000u;
const VU kVmOneBits = 0x3f800000u;
const VU kVmMantMask = 0x007fffffu;
const VU kVmSqrtHalfBits = 0x3f3504f3u;
const VU kVmHalfMask = ~0xfffu;
const VT kVmRoundShift = 12582912.0;
const VT kVmTwoPowMant = 8388608.0;
const VT kVmLog2e = 1.4426950216293335;
const VT kVmLn2Hi = 0.693145751953125;
const VT kVmLn2Lo = 1.428606765330187e-06;
const VT kVmExpMin = -104.0;
const VT kVmExpMax = 89.0;
const VT kVmSubnormalScale = 33554432.0;
const VT kVmSubnormalLog2 = 25.0;
const VT kVmErfcMaxArg = 10.5;
const VT kVmMinNormal = 1.1754943508222875e-38;
const VT kVmSplit = 4097.0;  // 2^12 + 1: Dekker's split of a float
const VT EXP_Q[5] = VT[](0.4999999403953552, 0.1666652113199234, 0.04166825860738754,
                         0.008368673734366894, 0.0013821442844346166);
const VT LOG_P[3] = VT[](0.6666677594184875, 0.3997756838798523, 0.29871469736099243);
const VT TANH_P[5] = VT[](-0.3333328366279602, 0.1333148330450058, -0.053742777556180954,
                          0.020648092031478882, -0.005714120343327522);
const VT ERF_P[7] = VT[](0.12837916612625122, -0.37612631916999817, 0.11283683031797409,
                         -0.026859140023589134, 0.005201048217713833, -0.0008148010238073766,
                         8.40869324747473e-05);
const VT ERFC_G[9] = VT[](-1.2654930353164673, 0.9995479583740234, 0.3793177902698517,
                          0.06268611550331116, -0.0405891127884388, -0.1373991072177887,
                          -0.3545205593109131, 0.5737127661705017, -0.21822711825370789);
const VT GELU_A = 2.3809523582458496;
const VT GELU_B = -1.3809523582458496;
const VT GELU_G[11] = VT[](-0.56315678358078, 0.5746099948883057, 0.016716057434678078,
                           -0.03014731965959072, -0.0012322233524173498, 0.003873458132147789,
                           -0.00025814204127527773, -0.000576330756302923,
                           0.00013348858919925988, 6.200197094585747e-05,
                           -2.419138945697341e-05);
const VT GELU_P[10] = VT[](0.3302570581436157, 0.42892056703567505, 0.19746078550815582,
                           0.04713868722319603, -0.001016942784190178, -0.0030516034457832575,
                           6.800051050959155e-05, 0.0002692746347747743, -2.297237551829312e-05,
                           -2.2891033950145356e-05);
#endif

// a * b + c with one rounding, as the CPU's fma (nearly always; within an ulp otherwise), from
// products and sums only: lavapipe lowers GLSL's fma to a multiply and an add, which it may then
// regroup with their neighbours (n * ln2hi + n * ln2lo became n * (ln2hi + ln2lo), 4 ulp off in
// exp). Dekker's exact product and Knuth's exact sum, every step `precise` so nothing regroups.
VT vm_fma(VT a, VT b, VT c) {
  precise VT p = a * b;
  precise VT ca = kVmSplit * a, cb = kVmSplit * b;
  if (isinf(p) || isnan(p) || isinf(ca) || isinf(cb) || p == VT(0)) return p + c;
  precise VT ah = ca - (ca - a), bh = cb - (cb - b);
  precise VT al = a - ah, bl = b - bh;
  precise VT e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;  // a * b = p + e exactly
  precise VT s = p + c;
  precise VT bv = s - p;
  precise VT t = (p - (s - bv)) + (c - bv);  // p + c = s + t exactly
  return s + (t + e);
}

// c[0] + c[1] x + ..., by Horner's rule (vmath.h's horner).
#define VM_HORNER(name, C)                                          \
  VT name(VT x) {                                                   \
    precise VT r = C[C.length() - 1];                               \
    for (int k = C.length() - 2; k >= 0; --k) r = vm_fma(r, x, C[k]);  \
    return r;                                                       \
  }
VM_HORNER(vm_exp_q, EXP_Q)
VM_HORNER(vm_log_p, LOG_P)
VM_HORNER(vm_tanh_p, TANH_P)
VM_HORNER(vm_erf_p, ERF_P)
VM_HORNER(vm_erfc_g, ERFC_G)

VT vm_with_sign_of(VT mag, VT s) { return VM_AS_T(VM_AS_U(mag) | (VM_AS_U(s) & kVmSignMask)); }

VT vm_pow2i(VI n) { return VM_AS_T(VU(n + VI(kVmBias)) << kVmMantBits); }

// e^(x + lo) (vmath.h's exp_impl; two_part false ignores lo, clamp false trusts the range).
VT vm_exp_impl(VT xin, VT lo, bool two_part, bool clamp_x) {
  precise VT x = xin;
  if (clamp_x) {
    x = x < kVmExpMin ? kVmExpMin : x;  // NaN passes
    x = x > kVmExpMax ? kVmExpMax : x;
  }
  precise VT sum = two_part ? x + lo : x;
  precise VT shifted = vm_fma(sum, kVmLog2e, kVmRoundShift);
  precise VT n = shifted - kVmRoundShift;
  precise VT r = vm_fma(n, -kVmLn2Hi, x);
  if (two_part) r = r + lo;
  r = vm_fma(n, -kVmLn2Lo, r);
  precise VT p = vm_fma(r * r, vm_exp_q(r), r) + VT(1);
  const VI ni = VI(VM_AS_U(shifted) - VM_AS_U(kVmRoundShift));
  const VI n1 = ni >> 1;
  return p * vm_pow2i(n1) * vm_pow2i(ni - n1);
}

// t * t = hi + lo with hi exact.
void vm_square2(VT t, out VT hi, out VT lo) {
  precise VT th = VM_AS_T(VM_AS_U(t) & kVmHalfMask);
  hi = th * th;
  lo = (t - th) * (t + th);
}

VT vm_erfc_tail(VT t, VT t2hi, VT t2lo) {
  precise VT w = VT(1) / vm_fma(t, VT(0.5), VT(1));
#if VM_DOUBLE
  precise VT g = vm_erfc_g(vm_fma(w, ERFC_A, ERFC_B));
#else
  precise VT g = vm_erfc_g(w);
#endif
  return w * vm_exp_impl(-t2hi, g - t2lo, true, true);
}

VT vm_erf_small(VT t) { return vm_fma(t, vm_erf_p(t * t), t); }

VT vm_exp(VT x) { return vm_exp_impl(x, VT(0), false, true); }

VT vm_log(VT x) {
  const bool tiny = x < kVmMinNormal;
  precise VT xs = tiny ? x * kVmSubnormalScale : x;
  const VU ix = VM_AS_U(xs) + (kVmOneBits - kVmSqrtHalfBits);
  const VU biased = ix >> kVmMantBits;
  precise VT k = VM_AS_T(biased | VM_AS_U(kVmTwoPowMant)) - (kVmTwoPowMant + VT(kVmBias));
  k = tiny ? k - kVmSubnormalLog2 : k;
  precise VT f = VM_AS_T((ix & kVmMantMask) + kVmSqrtHalfBits) - VT(1);
  precise VT s = f / (f + VT(2));
  precise VT z = s * s;
  precise VT hfsq = VT(0.5) * f * f;
  precise VT tail = vm_fma(s, vm_fma(z, vm_log_p(z), hfsq), k * kVmLn2Lo);
  precise VT r = vm_fma(k, kVmLn2Hi, (tail - hfsq) + f);
  const VT inf = VM_AS_T(kVmInfBits);
  r = x == VT(0) ? -inf : r;
  r = x < VT(0) ? (x - x) / (x - x) : r;
  r = x == inf ? inf : r;
  return isnan(x) ? x : r;
}

// vmath.h's log1p: log of w = 1 + x plus the rounding error of w over w (Fast2Sum).
VT vm_log1p(VT x) {
  precise VT w = VT(1) + x;
  precise VT e = x > VT(1) ? VT(1) - (w - x) : x - (w - VT(1));
  precise VT r = vm_log(w) + (w == VT(0) ? VT(0) : e / w);
  r = isinf(w) && w > VT(0) ? w : r;
  return x == VT(0) ? x : r;
}

// vmath.h's expm1: 2^n (e^r - 1) + (2^n - 1) in one fma, e^x itself once the 1 no longer shows.
VT vm_expm1(VT xin) {
#if VM_DOUBLE
  const VT kDigits = VT(53);
#else
  const VT kDigits = VT(24);
#endif
  const VT low = -(kDigits + VT(2)) * VT(0.6931471805599453);
  precise VT x = xin < low ? low : xin;  // NaN passes
  x = x > kVmExpMax ? kVmExpMax : x;
  precise VT shifted = vm_fma(x, kVmLog2e, kVmRoundShift);
  precise VT n = shifted - kVmRoundShift;
  precise VT r = vm_fma(n, -kVmLn2Lo, vm_fma(n, -kVmLn2Hi, x));
  precise VT em = vm_fma(r * r, vm_exp_q(r), r);
  const VI ni = VI(VM_AS_U(shifted) - VM_AS_U(kVmRoundShift));
  precise VT scale = vm_pow2i(ni);
  precise VT near_ = vm_fma(scale, em, scale - VT(1));
  const VI n1 = ni >> 1;
  precise VT far_ = (em + VT(1)) * vm_pow2i(n1) * vm_pow2i(ni - n1);
  return xin == VT(0) ? xin : (n > kDigits + VT(1) ? far_ : near_);
}

// vmath.h's softplus: max(x, 0) + log1p(e^-|x|).
VT vm_softplus(VT x) {
  precise VT r = (x > VT(0) ? x : VT(0)) + vm_log1p(vm_exp(-abs(x)));
  return r;
}

VT vm_tanh(VT x) {
  const VT ax = abs(x);
  precise VT z = ax * ax;
  precise VT small_ = vm_fma(ax * z, vm_tanh_p(z), ax);
  precise VT large_ = VT(1) - VT(2) / (vm_exp(ax + ax) + VT(1));
  return vm_with_sign_of(ax < VT(0.625) ? small_ : large_, x);
}

VT vm_sigmoid(VT x) {
  precise VT e = vm_exp(-abs(x));
  return (x >= VT(0) ? VT(1) : e) / (VT(1) + e);
}

VT vm_erf(VT x) {
  const VT ax = abs(x);
  const VT t = ax > kVmErfcMaxArg ? kVmErfcMaxArg : ax;
  VT hi, lo;
  vm_square2(t, hi, lo);
  precise VT large_ = VT(1) - vm_erfc_tail(t, hi, lo);
  return vm_with_sign_of(ax < VT(0.9) ? vm_erf_small(ax) : large_, x);
}

VT vm_erfc(VT x) {
  const VT ax = abs(x);
  const VT t = ax > kVmErfcMaxArg ? kVmErfcMaxArg : ax;
  VT hi, lo;
  vm_square2(t, hi, lo);
  precise VT tail = vm_erfc_tail(t, hi, lo);
  precise VT e = vm_erf_small(ax);
  const bool small_ = ax < VT(0.9);
  precise VT pos = small_ ? VT(1) - e : tail;
  precise VT neg = small_ ? VT(1) + e : VT(2) - tail;
  return x < VT(0) ? neg : pos;
}

#if !VM_DOUBLE
// vmath.h's estrin for gelu's polynomials: pairs, then pairs of pairs, ... (a fixed tree).
#define VM_ESTRIN(name, C)                                           \
  float name(float x) {                                              \
    precise float v[C.length()];                                     \
    for (int k = 0; k < C.length(); ++k) v[k] = C[k];                \
    precise float pw = x;                                            \
    int count = C.length();                                          \
    for (int level = 0; level < 4 && count > 1; ++level) {           \
      const int next = (count + 1) / 2;                              \
      for (int j = 0; j < next; ++j)                                 \
        v[j] = 2 * j + 1 < count ? vm_fma(v[2 * j + 1], pw, v[2 * j]) : v[2 * j]; \
      count = next;                                                  \
      pw = pw * pw;                                                  \
    }                                                                \
    return v[0];                                                     \
  }
VM_ESTRIN(vm_gelu_g, GELU_G)
VM_ESTRIN(vm_gelu_p, GELU_P)
#endif

VT vm_gelu(VT x) {
#if VM_DOUBLE
  const VT kInvSqrt2 = 0.7071067811865476lf;
  const VT kMaxX = kVmErfcMaxArg * 1.4142135623730951lf;
  precise VT v = x * kInvSqrt2;
  const VT av = abs(v);
  const VT ax = abs(x);
  const VT xc = ax > kMaxX ? kMaxX : ax;
  const VT t = av > kVmErfcMaxArg ? kVmErfcMaxArg : av;
  VT hi, lo;
  vm_square2(xc, hi, lo);
  precise VT half_tail = VT(0.5) * vm_erfc_tail(t, VT(0.5) * hi, VT(0.5) * lo);
  precise VT phi_tail = x < VT(0) ? half_tail : VT(1) - half_tail;
  precise VT phi = av < VT(0.9) ? vm_fma(VT(0.5), vm_erf_small(v), VT(0.5)) : phi_tail;
  return x * phi;
#else
  const float kInvSqrt2 = 0.7071067811865476;
  const float kMaxX = kVmErfcMaxArg * 1.4142135623730951;
  const float ax = abs(x);
  const float xc = ax > kMaxX ? kMaxX : ax;
  precise float t = xc * kInvSqrt2;
  float hi, lo;
  vm_square2(xc, hi, lo);
  precise float w = 1.0 / vm_fma(t, 0.5, 1.0);
  precise float g = vm_gelu_g(vm_fma(w, GELU_A, GELU_B));
  precise float half_tail = (0.5 * w) * vm_exp_impl(-0.5 * hi, vm_fma(-0.5, lo, g), true, false);
  return x * (x < 0.0 ? half_tail : 1.0 - half_tail);
#endif
}

#if !VM_DOUBLE
// vmath.h's recip_one_plus (its FMA form): 1 / (1 + s) with one Newton step from the exact
// remainders of the sum and of the quotient.
float vm_recip_one_plus(float s) {
  precise float d = s + 1.0;
  precise float d_lo = s - (d - 1.0);
  precise float w = 1.0 / d;
  precise float rest = vm_fma(-w, d_lo, vm_fma(-w, d, 1.0));
  return vm_fma(w, rest, w);
}
#endif

VT vm_gelu_grad(VT x) {
#if VM_DOUBLE
  const VT kInvSqrt2 = 0.7071067811865476lf, kInvSqrt2Pi = 0.3989422804014327lf;
  precise VT cdf = (vm_erf(x * kInvSqrt2) + VT(1)) * VT(0.5);
  return cdf + x * (vm_exp(x * x * VT(-0.5)) * kInvSqrt2Pi);
#else
  const float kInvSqrt2Pi = 0.3989422804014327;
  const float kMaxX = kVmErfcMaxArg * 1.4142135623730951;
  const float ax = abs(x);
  const float xc = ax > kMaxX ? kMaxX : ax;
  // -x^2 / 2 = h + l as vmath.h's neg_half_square (its FMA form), w as its gelu_parts
  precise float a = -0.5 * xc;
  precise float h = a * xc;
  precise float l = vm_fma(a, xc, -h);
  precise float w = vm_recip_one_plus(xc * 0.3535533905932738);  // 1 / (1 + t / 2)
  precise float erfcx = vm_gelu_p(vm_fma(w, GELU_A, GELU_B));
  precise float e = vm_exp_impl(h, l, true, false);
  precise float half_tail = (0.5 * e) * erfcx;
  precise float cdf = x < 0.0 ? half_tail : 1.0 - half_tail;
  return vm_fma(x, e * kInvSqrt2Pi, cdf);
#endif
}

VT vm_gelu_tanh(VT x) {
#if VM_DOUBLE
  const VT k2 = 1.5957691216057308lf, k2c = 0.07135481627260025lf;
#else
  const VT k2 = 1.5957691216057308, k2c = 0.07135481627260025;
#endif
  precise VT two_y = x * vm_fma(k2c, x * x, k2);
  precise VT e = vm_exp(-abs(two_y));
  return x * (two_y >= VT(0) ? VT(1) : e) / (VT(1) + e);
}
