// The special functions' CPU kernels (ops/special.cpp; issue #15), in double.
//
// I0 and I1: Chebyshev expansions of exp(-x) I0(x) and exp(-x) I1(x) / x on [0, 8] (in
// t = x / 2 - 2) and of exp(-x) sqrt(x) I0(x) and exp(-x) sqrt(x) I1(x) on (8, inf) (in
// t = 32 / x - 2), with the coefficients S. L. Moshier published in the Cephes Math Library
// (release 2.8, i0.c and i1.c), which torch and SciPy use as well. The scaled forms skip the
// exp(|x|); like torch, i0 and i1 are NaN at +-inf (inf * 0-ish / inf), i0e and i1e 0 there.
//
// igamma and igammac: log P(a, x) by its power series where x <= max(a, 1), Q = -expm1(log P),
// and Q(a, x) by Legendre's continued fraction elsewhere (Lentz's method; also from x = 1/4 for
// a < 0.1), P = 1 - Q. The common factor x^a e^-x / Gamma(a + 1) is computed in log space; for
// a >= 10 as a log1pmx((x - a) / a) + log(a / 2pi) / 2 - stirlerr(a) - log a, which does not lose
// the digits that a log x - x - lgamma(a + 1) loses to cancellation for large a (both terms near
// a log a).
#include "vkml/backend/cpu/special.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "vkml/backend/cpu/loops.h"
#include "vkml/backend/cpu/math.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kGrain = kElementwiseGrain / 8;  // tens of nanoseconds an element
constexpr int kMaxGradTerms = 100000;              // the shader's SP_MAX_GRAD_TERMS
constexpr double kTiny = 1e-300;                   // Lentz's stand-in for a zero denominator

// Cephes' Chebyshev coefficients, highest order first (i0.c: A, B; i1.c: A, B).
constexpr double kI0Low[30] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17,  -2.43127984654795469359E-16,
    1.71539128555513303061E-15,  -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12,  -1.72682629144155570723E-11,
    9.67580903537323691224E-11,  -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8,  6.04699502254191894932E-8,   -2.67079385394061173391E-7,
    1.11738753912010371815E-6,   -4.41673835845875056359E-6,  1.64484480707288970893E-5,
    -5.75419501008210370398E-5,  1.88502885095841655729E-4,   -5.76375574538582365885E-4,
    1.63947561694133579842E-3,   -4.32430999505057594430E-3,  1.05464603945949983183E-2,
    -2.37374148058994688156E-2,  4.93052842396707084878E-2,   -9.49010970480476444210E-2,
    1.71620901522208775349E-1,   -3.04682672343198398683E-1,  6.76795274409476084995E-1};
constexpr double kI0High[25] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17,  -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15,  3.81168066935262242075E-15,  -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14,  3.85277838274214270114E-13,
    7.18012445138366623367E-13,  -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11,  4.94060238822496958910E-10,
    3.39623202570838634515E-9,   2.26666899049817806459E-8,   2.04891858946906374183E-7,
    2.89137052083475648297E-6,   6.88975834691682398426E-5,   3.36911647825569408990E-3,
    8.04490411014108831608E-1};
constexpr double kI1Low[29] = {
    2.77791411276104639959E-18,  -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15,  -5.04218550472791168711E-14,
    3.22379336594557470981E-13,  -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10,  -1.88724975172282928790E-9,
    9.38153738649577178388E-9,   -4.44505912879632808065E-8,  2.00329475355213526229E-7,
    -8.56872026469545474066E-7,  3.47025130813767847674E-6,   -1.32731636560394358279E-5,
    4.78156510755005422638E-5,   -1.61760815825896745588E-4,  5.12285956168575772895E-4,
    -1.51357245063125314899E-3,  4.15642294431288815669E-3,   -1.05640848946261981558E-2,
    2.47264490306265168283E-2,   -5.29459812080949914269E-2,  1.02643658689847095384E-1,
    -1.76416518357834055153E-1,  2.52587186443633654823E-1};
constexpr double kI1High[25] = {
    7.51729631084210481353E-18,  4.41434832307170791151E-18,  -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16,  3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14,  -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12,  1.41258074366137813316E-11,
    3.25260358301548823856E-11,  -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9,  -2.63146884688951950684E-8,  -2.51223623787020892529E-7,
    -3.88256480887769039346E-6,  -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
    7.78576235018280120474E-1};

// sum' c_k T_k(t / 2) (the first term halved) by Clenshaw's recurrence, for t in [-2, 2]: the
// form the coefficients above are published in.
template <size_t N>
double chebyshev(double t, const double (&c)[N]) {
  double b0 = c[0], b1 = 0, b2 = 0;
  for (size_t k = 1; k < N; ++k) {
    b2 = b1;
    b1 = b0;
    b0 = t * b1 - b2 + c[k];
  }
  return 0.5 * (b0 - b2);
}

// ---- incomplete gamma ----

// The shader's bound too. The series needs about 7.5 sqrt(a) terms where x is near a: enough up
// to a ~ 7e6; past that, such x give NaN rather than an unconverged sum.
constexpr int kMaxTerms = 20000;
constexpr double kEps = std::numeric_limits<double>::epsilon();

// log(1 + t) - t for |t| <= 1/2, without the cancellation of the difference: with u = t / (2 + t),
// log(1 + t) = 2 atanh(u) = 2 (u + u^3/3 + ...) and t - 2u = u t.
double log1pmx(double t) {
  const double u = t / (2 + t), u2 = u * u;
  double sum = 0, power = u * u2;
  for (int k = 3; k < 60 && std::abs(power) > kEps * kEps; k += 2) {
    sum += power / k;
    power *= u2;
  }
  return 2 * sum - u * t;
}

// lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2) for a >= 10: Stirling's series.
double stirling_error(double a) {
  const double z = 1 / (a * a);
  return (1.0 / 12 -
          z * (1.0 / 360 -
               z * (1.0 / 1260 -
                    z * (1.0 / 1680 - z * (1.0 / 1188 - z * (691.0 / 360360 - z / 156)))))) /
         a;
}

// log(x^a e^-x / Gamma(a + 1)) for a > 0 and x > 0, finite: Gamma(a + 1), not Gamma(a), so that
// a tiny a (lgamma(a) ~ -log a) loses nothing. Far from a (|x - a| > a / 2) the difference
// a log(x / a) - (x - a) does not cancel, and (x - a) / a would lose x's digits when x << a.
double log_gamma_factor(double a, double x) {
  if (a < 10) return a * std::log(x) - x - std::lgamma(a + 1);
  const double t = (x - a) / a;
  const double main = std::abs(t) <= 0.5 ? a * log1pmx(t) : a * std::log(x / a) - (x - a);
  return main + 0.5 * std::log(a / (2 * std::numbers::pi)) - stirling_error(a) - std::log(a);
}

// Q by the continued fraction (P as its complement) past x = max(a, 1), and for a < 0.1 from
// x = 1/4 on: there P is close to 1, and 1 - P would lose Q's digits. Elsewhere P by the series.
// (The fraction needs about 70 / x terms, so not below 1/4.)
bool use_fraction(double a, double x) { return x > a && (x > 1 || (a < 0.1 && x > 0.25)); }

// log P(a, x) by the series P = x^a e^-x / Gamma(a + 1) * (1 + sum_n x^n / ((a + 1) ... (a + n))):
// its logarithm gives Q = -expm1(log P) without the cancellation of 1 - P where P is near 1.
double log_lower_series(double a, double x) {
  double term = 1, rest = 0, denom = a;
  int n = 0;
  for (; n < kMaxTerms && term > kEps * (1 + rest); ++n) {
    denom += 1;
    term *= x / denom;
    rest += term;
  }
  return n == kMaxTerms ? kNaN : log_gamma_factor(a, x) + std::log1p(rest);
}

// Q(a, x) = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)),
// evaluated forwards by Lentz's method (tiny stands in for a zero denominator).
double upper_fraction(double a, double x) {
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int n = 1; n < kMaxTerms; ++n) {
    const double an = -n * (n - a);
    b += 2;
    d = an * d + b;
    d = std::abs(d) < kTiny ? kTiny : d;
    c = b + an / c;
    c = std::abs(c) < kTiny ? kTiny : c;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::abs(step - 1) <= kEps) break;
  }
  return a * std::exp(log_gamma_factor(a, x)) * h;
}

template <class F>
Tensor unary_in_double(const Tensor& x, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(
      x.dtype(), name,
      map_elements<T, T>(
          out, {&x}, [&](T v) -> T { return static_cast<T>(f(static_cast<double>(v))); }, kGrain));
  return out;
}

template <class F>
Tensor binary_in_double(const std::vector<Tensor>& in, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(m.dtype, name,
                    map_elements<T, T, T>(
                        out, {&in[0], &in[1]},
                        [&](T a, T x) -> T {
                          return static_cast<T>(f(static_cast<double>(a), static_cast<double>(x)));
                        },
                        kGrain));
  return out;
}

// dx/dalpha = -P_alpha / p with p = x^(alpha - 1) e^-x / Gamma(alpha), three ways (the shader's
// steps; NaN where the series or the fraction would take kMaxGradTerms terms: alpha past ~1e9
// with x far below its mean):
//
// x <= alpha + 1: P = sum_n e^-x x^(alpha + n) / Gamma(alpha + n + 1), so P_alpha / p =
// x sum_n c_n (log x - psi(alpha + n + 1)) with c_0 = 1 / alpha, c_n = c_(n-1) x / (alpha + n).
// Every term has the sign of log x - psi(...) < 0 here, so nothing cancels.
double gamma_grad_series(double alpha, double x) {
  const double log_x = std::log(x);
  double c = 1 / alpha, psi = digamma_value(alpha + 1);
  double sum = c * (log_x - psi);
  int n = 1;
  for (; n < kMaxGradTerms; ++n) {
    const double inv = 1 / (alpha + n);  // one division a term
    c *= x * inv;
    psi += inv;
    const double term = c * (log_x - psi);
    sum += term;
    if (std::abs(term) <= 0x1p-56 * std::abs(sum)) break;
  }
  return n == kMaxGradTerms ? kNaN : -x * sum;
}

// x > alpha + 1: Q = x p h with h Legendre's continued fraction 1 / (x + 1 - alpha - 1 (1 - alpha)
// / (x + 3 - alpha - ...)), so dx/dalpha = Q_alpha / p = x ((log x - psi(alpha)) h + h_alpha).
// Lentz's method carries each quantity with its alpha-derivative (forward mode); x > alpha + 1
// keeps every denominator away from zero, and the fraction converges in tens of steps.
struct Dual {
  double v, d;  // a value and its derivative in alpha
};
Dual operator+(Dual p, Dual q) { return {p.v + q.v, p.d + q.d}; }
Dual operator*(Dual p, Dual q) { return {p.v * q.v, p.d * q.v + p.v * q.d}; }
Dual inverse(Dual p) { return {1 / p.v, -p.d / (p.v * p.v)}; }

double gamma_grad_fraction(double alpha, double x) {
  const double log_term = std::log(x) - digamma_value(alpha);
  Dual b{x + 1 - alpha, -1};
  Dual c{1 / kTiny, 0}, d = inverse(b), h = d;
  int i = 1;
  for (; i < kMaxGradTerms; ++i) {
    const Dual an{-i * (i - alpha), static_cast<double>(i)};
    b.v += 2;
    d = inverse(an * d + b);
    c = b + an * inverse(c);
    const Dual step = d * c;
    h = h * step;
    if (std::abs(step.v - 1) <= 0x1p-53 &&
        std::abs(step.d) <= 0x1p-53 * (std::abs(h.d / h.v) + std::abs(log_term)))
      break;
  }
  return i == kMaxGradTerms ? kNaN : x * (log_term * h.v + h.d);
}

// alpha >= 1e5 within 6 standard deviations of the mean: the Cornish-Fisher expansion of the
// quantile, x = alpha + r z + (z^2 - 1) / 3 + (z^3 - 7 z) / (36 r) + O(1 / alpha), r = sqrt(alpha),
// differentiated at fixed z: 1 + z / (2 r) - (z^3 - 7 z) / (72 r^3). z solves the expansion for x
// (Newton from Wilson and Hilferty's cube root). Within 1e-9 of the exact derivative there
// (against mpmath), where the series and the fraction would take thousands of terms.
double gamma_grad_large(double alpha, double x) {
  const double r = std::sqrt(alpha);
  double z = (std::cbrt(x / alpha) - 1 + 1 / (9 * alpha)) * 3 * r;
  for (int i = 0; i < 3; ++i) {
    const double quantile = alpha + r * z + (z * z - 1) / 3 + (z * z * z - 7 * z) / (36 * r);
    z -= (quantile - x) / (r + 2 * z / 3 + (3 * z * z - 7) / (36 * r));
  }
  return 1 + z / (2 * r) - (z * z * z - 7 * z) / (72 * alpha * r);
}

}  // namespace

double bessel_i0e_value(double x) {
  const double ax = std::abs(x);
  if (ax <= 8) return chebyshev(0.5 * ax - 2, kI0Low);
  return chebyshev(32 / ax - 2, kI0High) / std::sqrt(ax);
}

double bessel_i1e_value(double x) {
  const double ax = std::abs(x);
  const double r = ax <= 8 ? chebyshev(0.5 * ax - 2, kI1Low) * ax
                           : chebyshev(32 / ax - 2, kI1High) / std::sqrt(ax);
  return x < 0 ? -r : r;
}

double igamma_value(double a, double x, bool upper) {
  // torch's edges, in its order (so a NaN a with x = 0 gives 0, a NaN x with a = inf 0)
  double p;
  if (x < 0 || a < 0) return kNaN;
  if (a == 0) {
    if (!(x > 0)) return kNaN;
    p = 1;
  } else if (x == 0) {
    p = 0;
  } else if (std::isinf(a)) {
    if (std::isinf(x)) return kNaN;
    p = 0;
  } else if (std::isinf(x)) {
    p = 1;
  } else if (std::isnan(a) || std::isnan(x)) {
    return kNaN;
  } else if (use_fraction(a, x)) {
    const double q = upper_fraction(a, x);
    return upper ? q : 1 - q;
  } else {
    const double log_p = log_lower_series(a, x);
    return upper ? -std::expm1(log_p) : std::exp(log_p);
  }
  return upper ? 1 - p : p;
}

double standard_gamma_grad_value(double alpha, double x) {
  if (std::isnan(alpha) || std::isnan(x) || !(alpha > 0) || x < 0 || std::isinf(x) ||
      std::isinf(alpha))
    return kNaN;
  if (x == 0) return 0;  // the limit of x times the series' log x
  if (alpha >= 1e5 && std::abs(x - alpha) < 6 * std::sqrt(alpha)) return gamma_grad_large(alpha, x);
  return x <= alpha + 1 ? gamma_grad_series(alpha, x) : gamma_grad_fraction(alpha, x);
}

VK_KERNEL(i0) {
  (void)a;
  return unary_in_double(in[0], m, "i0",
                         [](double x) { return std::exp(std::abs(x)) * bessel_i0e_value(x); });
}
VK_KERNEL(i0e) {
  (void)a;
  return unary_in_double(in[0], m, "i0e", bessel_i0e_value);
}
VK_KERNEL(i1) {
  (void)a;
  return unary_in_double(in[0], m, "i1",
                         [](double x) { return std::exp(std::abs(x)) * bessel_i1e_value(x); });
}
VK_KERNEL(i1e) {
  (void)a;
  return unary_in_double(in[0], m, "i1e", bessel_i1e_value);
}
VK_KERNEL(igamma) {
  (void)a;
  return binary_in_double(in, m, "igamma",
                          [](double p, double x) { return igamma_value(p, x, false); });
}
VK_KERNEL(igammac) {
  (void)a;
  return binary_in_double(in, m, "igammac",
                          [](double p, double x) { return igamma_value(p, x, true); });
}
VK_KERNEL(standard_gamma_grad) {
  (void)a;
  return binary_in_double(in, m, "standard_gamma_grad", standard_gamma_grad_value);
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
