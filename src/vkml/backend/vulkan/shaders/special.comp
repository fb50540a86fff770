// The special functions' shader (issue #15; ops/special.cpp, backend/vulkan/special.cpp): element
// i of the output's shape, located in each tensor by its own offset and strides as in math.comp
// (the same push constants and bindings, launch.h's StridedParams), for one op chosen at compile
// time (-DOP_I0, ...). DTO, DTA, DTB are dtype codes as there (3 float32, 4 float64). The steps
// are backend/cpu/special.cpp's (its comments say why), in double whatever the dtype: float32
// results are the double result rounded once. On a device without float64, the float32 variants
// (NO_FLOAT64) take the same steps in float alone (MR), within a few ulp. Every loop is bounded.
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
#define TYPE_3 float
#define TYPE_4 double
#define TO XCAT(TYPE_, DTO)
#define TA XCAT(TYPE_, DTA)
#define TB XCAT(TYPE_, DTB)

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint shape[6];
  int offset[4];
  int stride[18];
  uint scalar[4];
} p;

layout(std430, binding = 0) buffer Out { TO o[]; };
layout(std430, binding = 1) readonly buffer A { TA a[]; };
#if NIN >= 2
layout(std430, binding = 2) readonly buffer B { TB b[]; };
#endif

#include "vmath.glsl"
#define OP_LOG1P  // divmod.glsl's log1p (in vmath's VT) is compiled under this name
#include "divmod.glsl"

// MR: the type every step computes in (math.comp's): double, or float alone (NO_FLOAT64).
// Literals are written MR(...lf): exact in double, rounded once to float at compile time.
#define MR VT
#include "gamma.glsl"

#if VM_DOUBLE
const MR SP_EPS = 2.220446049250313e-16lf;
const MR SP_TINY = 1e-300lf;  // Lentz's stand-in for a zero denominator
#else
const MR SP_EPS = 1.1920929e-07;
const MR SP_TINY = 1e-30;
#endif
const int SP_MAX_TERMS = 20000;  // the CPU's bound: a up to ~7e6 (NaN past it near x = a)
const int SP_MAX_GRAD_TERMS = 100000;  // standard_gamma_grad's, the CPU's too

MR sp_nan() { return VM_AS_T(kVmInfBits | (VU(1) << (kVmMantBits - 1u))); }

// ---- modified Bessel functions: Cephes' Chebyshev coefficients (S. L. Moshier, Cephes Math
// Library 2.8, i0.c and i1.c), highest order first, as backend/cpu/special.cpp ----

const MR SP_I0_LOW[30] = MR[](
    MR(-4.41534164647933937950e-18lf), MR(3.33079451882223809783e-17lf),
    MR(-2.43127984654795469359e-16lf), MR(1.71539128555513303061e-15lf),
    MR(-1.16853328779934516808e-14lf), MR(7.67618549860493561688e-14lf),
    MR(-4.85644678311192946090e-13lf), MR(2.95505266312963983461e-12lf),
    MR(-1.72682629144155570723e-11lf), MR(9.67580903537323691224e-11lf),
    MR(-5.18979560163526290666e-10lf), MR(2.65982372468238665035e-9lf),
    MR(-1.30002500998624804212e-8lf), MR(6.04699502254191894932e-8lf),
    MR(-2.67079385394061173391e-7lf), MR(1.11738753912010371815e-6lf),
    MR(-4.41673835845875056359e-6lf), MR(1.64484480707288970893e-5lf),
    MR(-5.75419501008210370398e-5lf), MR(1.88502885095841655729e-4lf),
    MR(-5.76375574538582365885e-4lf), MR(1.63947561694133579842e-3lf),
    MR(-4.32430999505057594430e-3lf), MR(1.05464603945949983183e-2lf),
    MR(-2.37374148058994688156e-2lf), MR(4.93052842396707084878e-2lf),
    MR(-9.49010970480476444210e-2lf), MR(1.71620901522208775349e-1lf),
    MR(-3.04682672343198398683e-1lf), MR(6.76795274409476084995e-1lf));
const MR SP_I0_HIGH[25] = MR[](
    MR(-7.23318048787475395456e-18lf), MR(-4.83050448594418207126e-18lf),
    MR(4.46562142029675999901e-17lf), MR(3.46122286769746109310e-17lf),
    MR(-2.82762398051658348494e-16lf), MR(-3.42548561967721913462e-16lf),
    MR(1.77256013305652638360e-15lf), MR(3.81168066935262242075e-15lf),
    MR(-9.55484669882830764870e-15lf), MR(-4.15056934728722208663e-14lf),
    MR(1.54008621752140982691e-14lf), MR(3.85277838274214270114e-13lf),
    MR(7.18012445138366623367e-13lf), MR(-1.79417853150680611778e-12lf),
    MR(-1.32158118404477131188e-11lf), MR(-3.14991652796324136454e-11lf),
    MR(1.18891471078464383424e-11lf), MR(4.94060238822496958910e-10lf),
    MR(3.39623202570838634515e-9lf), MR(2.26666899049817806459e-8lf),
    MR(2.04891858946906374183e-7lf), MR(2.89137052083475648297e-6lf),
    MR(6.88975834691682398426e-5lf), MR(3.36911647825569408990e-3lf),
    MR(8.04490411014108831608e-1lf));
const MR SP_I1_LOW[29] = MR[](
    MR(2.77791411276104639959e-18lf), MR(-2.11142121435816608115e-17lf),
    MR(1.55363195773620046921e-16lf), MR(-1.10559694773538630805e-15lf),
    MR(7.60068429473540693410e-15lf), MR(-5.04218550472791168711e-14lf),
    MR(3.22379336594557470981e-13lf), MR(-1.98397439776494371520e-12lf),
    MR(1.17361862988909016308e-11lf), MR(-6.66348972350202774223e-11lf),
    MR(3.62559028155211703701e-10lf), MR(-1.88724975172282928790e-9lf),
    MR(9.38153738649577178388e-9lf), MR(-4.44505912879632808065e-8lf),
    MR(2.00329475355213526229e-7lf), MR(-8.56872026469545474066e-7lf),
    MR(3.47025130813767847674e-6lf), MR(-1.32731636560394358279e-5lf),
    MR(4.78156510755005422638e-5lf), MR(-1.61760815825896745588e-4lf),
    MR(5.12285956168575772895e-4lf), MR(-1.51357245063125314899e-3lf),
    MR(4.15642294431288815669e-3lf), MR(-1.05640848946261981558e-2lf),
    MR(2.47264490306265168283e-2lf), MR(-5.29459812080949914269e-2lf),
    MR(1.02643658689847095384e-1lf), MR(-1.76416518357834055153e-1lf),
    MR(2.52587186443633654823e-1lf));
const MR SP_I1_HIGH[25] = MR[](
    MR(7.51729631084210481353e-18lf), MR(4.41434832307170791151e-18lf),
    MR(-4.65030536848935832153e-17lf), MR(-3.20952592199342395980e-17lf),
    MR(2.96262899764595013876e-16lf), MR(3.30820231092092828324e-16lf),
    MR(-1.88035477551078244854e-15lf), MR(-3.81440307243700780478e-15lf),
    MR(1.04202769841288027642e-14lf), MR(4.27244001671195135429e-14lf),
    MR(-2.10154184277266431302e-14lf), MR(-4.08355111109219731823e-13lf),
    MR(-7.19855177624590851209e-13lf), MR(2.03562854414708950722e-12lf),
    MR(1.41258074366137813316e-11lf), MR(3.25260358301548823856e-11lf),
    MR(-1.89749581235054123450e-11lf), MR(-5.58974346219658380687e-10lf),
    MR(-3.83538038596423702205e-9lf), MR(-2.63146884688951950684e-8lf),
    MR(-2.51223623787020892529e-7lf), MR(-3.88256480887769039346e-6lf),
    MR(-1.10588938762623716291e-4lf), MR(-9.76109749136146840777e-3lf),
    MR(7.78576235018280120474e-1lf));

// sum' c_k T_k(t / 2) by Clenshaw's recurrence (one loop per table: GLSL passes arrays by value).
#define SP_CHEBYSHEV(name, C, N)                 \
  MR name(MR t) {                                \
    precise MR b0 = C[0], b1 = MR(0), b2 = MR(0); \
    for (int k = 1; k < N; ++k) {                \
      b2 = b1;                                   \
      b1 = b0;                                   \
      b0 = t * b1 - b2 + C[k];                   \
    }                                            \
    precise MR r = MR(0.5lf) * (b0 - b2);        \
    return r;                                    \
  }
SP_CHEBYSHEV(sp_i0_low, SP_I0_LOW, 30)
SP_CHEBYSHEV(sp_i0_high, SP_I0_HIGH, 25)
SP_CHEBYSHEV(sp_i1_low, SP_I1_LOW, 29)
SP_CHEBYSHEV(sp_i1_high, SP_I1_HIGH, 25)

MR sp_i0e(MR x) {
  const MR ax = abs(x);
  if (ax <= MR(8.0lf)) return sp_i0_low(MR(0.5lf) * ax - MR(2.0lf));
  precise MR r = sp_i0_high(MR(32.0lf) / ax - MR(2.0lf)) / sqrt(ax);
  return r;
}

MR sp_i1e(MR x) {
  const MR ax = abs(x);
  precise MR r = ax <= MR(8.0lf) ? sp_i1_low(MR(0.5lf) * ax - MR(2.0lf)) * ax
                                 : sp_i1_high(MR(32.0lf) / ax - MR(2.0lf)) / sqrt(ax);
  return x < MR(0.0lf) ? -r : r;
}

// ---- regularized incomplete gamma ----

// log(1 + t) - t for |t| <= 1/2, through u = t / (2 + t): 2 (u^3/3 + u^5/5 + ...) - u t.
MR sp_log1pmx(MR t) {
  precise MR u = t / (MR(2.0lf) + t);
  precise MR u2 = u * u;
  precise MR power = u * u2;
  precise MR sum = MR(0.0lf);
  for (int k = 3; k < 60 && abs(power) > SP_EPS * SP_EPS; k += 2) {
    sum += power / MR(k);
    power *= u2;
  }
  precise MR r = MR(2.0lf) * sum - u * t;
  return r;
}

// lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2) for a >= 10 (Stirling's series).
MR sp_stirling_error(MR a) {
  precise MR z = MR(1.0lf) / (a * a);
  precise MR s = MR(691.0lf) / MR(360360.0lf) - z / MR(156.0lf);
  s = MR(1.0lf) / MR(1188.0lf) - z * s;
  s = MR(1.0lf) / MR(1680.0lf) - z * s;
  s = MR(1.0lf) / MR(1260.0lf) - z * s;
  s = MR(1.0lf) / MR(360.0lf) - z * s;
  s = MR(1.0lf) / MR(12.0lf) - z * s;
  precise MR r = s / a;
  return r;
}

// log(x^a e^-x / Gamma(a + 1)) for finite a, x > 0 (the CPU's steps).
MR sp_log_gamma_factor(MR a, MR x) {
  precise MR r;
  if (a < MR(10.0lf)) {
    r = a * vm_log(x) - x - mt_lgamma_pos(a + MR(1.0lf));
  } else {
    const MR t = (x - a) / a;
    precise MR main = abs(t) <= MR(0.5lf) ? a * sp_log1pmx(t) : a * vm_log(x / a) - (x - a);
    r = main + MR(0.5lf) * vm_log(a / MR(6.283185307179586lf)) - sp_stirling_error(a) - vm_log(a);
  }
  return r;
}

// The CPU's choice: Q by the fraction past max(a, 1), and for a < 0.1 from x = 1/4 on.
bool sp_use_fraction(MR a, MR x) {
  return x > a && (x > MR(1.0lf) || (a < MR(0.1lf) && x > MR(0.25lf)));
}

// log P(a, x) by the power series.
MR sp_log_lower_series(MR a, MR x) {
  precise MR term = MR(1.0lf);
  precise MR rest = MR(0.0lf);
  precise MR denom = a;
  int n = 0;
  for (; n < SP_MAX_TERMS && term > SP_EPS * (MR(1.0lf) + rest); ++n) {
    denom += MR(1.0lf);
    term *= x / denom;
    rest += term;
  }
  if (n == SP_MAX_TERMS) return sp_nan();  // not converged
  precise MR r = sp_log_gamma_factor(a, x) + dm_log1p(rest);
  return r;
}

MR sp_upper_fraction(MR a, MR x) {
  precise MR bn = x + MR(1.0lf) - a;
  precise MR c = MR(1.0lf) / SP_TINY;
  precise MR d = MR(1.0lf) / bn;
  precise MR h = d;
  for (int n = 1; n < SP_MAX_TERMS; ++n) {
    precise MR an = -MR(n) * (MR(n) - a);
    bn += MR(2.0lf);
    d = an * d + bn;
    d = abs(d) < SP_TINY ? SP_TINY : d;
    c = bn + an / c;
    c = abs(c) < SP_TINY ? SP_TINY : c;
    d = MR(1.0lf) / d;
    precise MR step = d * c;
    h *= step;
    if (abs(step - MR(1.0lf)) <= SP_EPS) break;
  }
  precise MR r = a * vm_exp(sp_log_gamma_factor(a, x)) * h;
  return r;
}

// P(a, x), or Q(a, x) when upper, with torch's values at the edges (in its order).
MR sp_igamma(MR a, MR x, bool upper) {
  MR lower;
  if (x < MR(0.0lf) || a < MR(0.0lf)) return sp_nan();
  if (a == MR(0.0lf)) {
    if (!(x > MR(0.0lf))) return sp_nan();
    lower = MR(1.0lf);
  } else if (x == MR(0.0lf)) {
    lower = MR(0.0lf);
  } else if (isinf(a)) {
    if (isinf(x)) return sp_nan();
    lower = MR(0.0lf);
  } else if (isinf(x)) {
    lower = MR(1.0lf);
  } else if (isnan(a) || isnan(x)) {
    return sp_nan();
  } else if (sp_use_fraction(a, x)) {
    const MR q = sp_upper_fraction(a, x);
    return upper ? q : MR(1.0lf) - q;
  } else {
    const MR log_p = sp_log_lower_series(a, x);
    return upper ? -dm_expm1(log_p) : vm_exp(log_p);
  }
  return upper ? MR(1.0lf) - lower : lower;
}

// backend/cpu/special.cpp's standard_gamma_grad, step for step: dx/dalpha of a Gamma(alpha)
// sample x at its quantile, by the series below x = alpha + 1, Legendre's fraction with its
// alpha-derivatives (forward mode) above, Cornish-Fisher's expansion for alpha >= 1e5 near the mean.
MR sp_gamma_grad_series(MR alpha, MR x) {
  const MR log_x = vm_log(x);
  precise MR c = MR(1.0lf) / alpha;
  precise MR psi = mt_digamma_pos(alpha + MR(1.0lf));
  precise MR sum = c * (log_x - psi);
  int n = 1;
  for (; n < SP_MAX_GRAD_TERMS; ++n) {
    precise MR inv = MR(1.0lf) / (alpha + MR(n));
    c *= x * inv;
    psi += inv;
    precise MR term = c * (log_x - psi);
    sum += term;
    if (abs(term) <= SP_EPS * MR(0.0625lf) * abs(sum)) break;
  }
  if (n == SP_MAX_GRAD_TERMS) return sp_nan();  // not converged
  precise MR r = -x * sum;
  return r;
}

MR sp_gamma_grad_fraction(MR alpha, MR x) {
  const MR log_term = vm_log(x) - mt_digamma_pos(alpha);
  // (value, d/dalpha) pairs: b, c, d, h as the CPU's Dual
  precise MR b = x + MR(1.0lf) - alpha;
  const MR db = MR(-1.0lf);
  precise MR c = MR(1.0lf) / SP_TINY, dc = MR(0.0lf);
  precise MR d = MR(1.0lf) / b, dd = -db / (b * b);
  precise MR h = d, dh = dd;
  int i = 1;
  for (; i < SP_MAX_GRAD_TERMS; ++i) {
    const MR an = -MR(i) * (MR(i) - alpha), dan = MR(i);
    b += MR(2.0lf);
    precise MR e = an * d + b, de = dan * d + an * dd + db;  // an d + b
    d = MR(1.0lf) / e;
    dd = -de / (e * e);
    precise MR ic = MR(1.0lf) / c, dic = -dc / (c * c);  // c = b + an / c
    c = b + an * ic;
    dc = db + dan * ic + an * dic;
    precise MR step = d * c, dstep = dd * c + d * dc;
    dh = dh * step + h * dstep;
    h = h * step;
    if (abs(step - MR(1.0lf)) <= SP_EPS * MR(0.5lf) &&
        abs(dstep) <= SP_EPS * MR(0.5lf) * (abs(dh / h) + abs(log_term)))
      break;
  }
  if (i == SP_MAX_GRAD_TERMS) return sp_nan();
  precise MR r = x * (log_term * h + dh);
  return r;
}

MR sp_gamma_grad_large(MR alpha, MR x) {
  const MR r = sqrt(alpha);
  precise MR z = (vm_exp(vm_log(x / alpha) / MR(3.0lf)) - MR(1.0lf) + MR(1.0lf) / (MR(9.0lf) * alpha)) *
                 MR(3.0lf) * r;
  for (int i = 0; i < 3; ++i) {
    precise MR quantile = alpha + r * z + (z * z - MR(1.0lf)) / MR(3.0lf) +
                          (z * z * z - MR(7.0lf) * z) / (MR(36.0lf) * r);
    z -= (quantile - x) / (r + MR(2.0lf) * z / MR(3.0lf) + (MR(3.0lf) * z * z - MR(7.0lf)) / (MR(36.0lf) * r));
  }
  precise MR v = MR(1.0lf) + z / (MR(2.0lf) * r) - (z * z * z - MR(7.0lf) * z) / (MR(72.0lf) * alpha * r);
  return v;
}

MR sp_gamma_grad(MR alpha, MR x) {
  if (isnan(alpha) || isnan(x) || !(alpha > MR(0.0lf)) || x < MR(0.0lf) || isinf(x) || isinf(alpha))
    return sp_nan();
  if (x == MR(0.0lf)) return MR(0.0lf);
  if (alpha >= MR(1e5lf) && abs(x - alpha) < MR(6.0lf) * sqrt(alpha)) return sp_gamma_grad_large(alpha, x);
  return x <= alpha + MR(1.0lf) ? sp_gamma_grad_series(alpha, x) : sp_gamma_grad_fraction(alpha, x);
}

TO compute(int ia, int ib) {
  const MR x = MR(a[ia]);
#if NIN >= 2
  const MR y = MR(b[ib]);
#endif
#if defined(OP_I0)
  return TO(vm_exp(abs(x)) * sp_i0e(x));
#elif defined(OP_I0E)
  return TO(sp_i0e(x));
#elif defined(OP_I1)
  return TO(vm_exp(abs(x)) * sp_i1e(x));
#elif defined(OP_I1E)
  return TO(sp_i1e(x));
#elif defined(OP_IGAMMA)
  return TO(sp_igamma(x, y, false));
#elif defined(OP_IGAMMAC)
  return TO(sp_igamma(x, y, true));
#elif defined(OP_STANDARD_GAMMA_GRAD)
  return TO(sp_gamma_grad(x, y));
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
