// Accuracy of the vectorised elementary functions (backend/cpu/vmath.h, vmath_trig.h), measured
// through the element-wise ops, which is the code the library runs (vectorised with the library's
// flags), and through the headers themselves compiled with this test's flags (plain x86-64: the
// code without FMA). make test runs it twice: on the AVX2 or AVX-512 copy of the kernels (FMA) and
// on the generic one (VKML_CPU_CAPABILITY=default). Errors are in ulp of the exact result:
// references are libm one precision up (double for float, long double for double), far more
// accurate than the errors measured. Plus the special values and the promise that no loop,
// alignment or thread split changes a result.
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numbers>

#include "test_util.h"
#include "vkml/backend/cpu/vmath.h"
#include "vkml/backend/cpu/vmath_trig.h"
#include "vkml/ops/math.h"

namespace vk::test {
namespace {

// |got - want| in units of the spacing of T at want (the subnormal spacing below the normal
// range). A result beyond T's range must be the infinity the exact value rounds to.
template <class T, class W>
W ulp_of(W v) {  // the spacing of T at |v| (the subnormal spacing below T's normal range)
  const W a = std::fabs(v);
  int e = a == 0 ? std::numeric_limits<T>::min_exponent - 1 : std::ilogb(a);
  e = std::max(e, std::numeric_limits<T>::min_exponent - 1);
  return std::ldexp(W(1), e - (std::numeric_limits<T>::digits - 1));
}

template <class T, class W>
double ulp_error(T got, W want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
  const T rounded = static_cast<T>(want);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0.0 : INFINITY;
  return static_cast<double>(std::fabs(static_cast<W>(got) - want) / ulp_of<T>(want));
}

struct Worst {
  double ulp = 0;
  double at = 0;
};

// Every 4093rd float32 bit pattern (a million values), both signs: normals, subnormals, +-0, +-inf
// and NaNs.
std::vector<float> float_sweep() {
  std::vector<float> v;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4093)
    v.push_back(std::bit_cast<float>(uint32_t(b)));
  for (float x :
       {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72283f, 88.72284f, -103.972f, -104.0f, -87.33654f,
        std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
        std::numeric_limits<float>::max(), 0.625f, 0.9f, -0.9f, 10.5f, 14.849f})
    v.push_back(x);
  return v;
}

// n points evenly spread over [lo, hi].
std::vector<double> double_sweep(double lo, double hi, int n = 100000) {
  std::vector<double> v(n + 1);
  for (int i = 0; i <= n; ++i) v[i] = lo + (hi - lo) * i / n;
  return v;
}

template <class T>
Tensor tensor_of(const std::vector<T>& v) {
  return from_data(v.data(), {static_cast<int64_t>(v.size())}, dtype_of<T>::value);
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  Tensor c = contiguous(t);
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

using Op = std::function<Tensor(const Tensor&)>;

template <class T, class R>
Worst worst_of(const std::vector<T>& x, const std::vector<T>& got, R ref, double lo = -INFINITY,
               double hi = INFINITY) {
  Worst w;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] >= lo && x[i] <= hi) && !std::isnan(x[i])) continue;
    const double e = ulp_error(got[i], ref(x[i]));
    if (e > w.ulp) w = {e, static_cast<double>(x[i])};
  }
  return w;
}

// The references, one precision up.
double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
long double ref_sigmoid(long double x) { return 1 / (1 + std::exp(-x)); }
template <class W>
W ref_softplus(W x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
template <class W>
W ref_gelu(W x) {
  return x * W(0.5) * std::erfc(-x / std::sqrt(W(2)));
}
template <class W>
W ref_gelu_tanh(W x) {  // 0.5 x (1 + tanh(y)) = x / (1 + e^(-2y))
  const W y =
      std::sqrt(W(2) / W(3.14159265358979323846264338327950288L)) * (x + W(0.044715L) * x * x * x);
  return x / (1 + std::exp(-2 * y));
}

struct Case {
  const char* name;
  Op op;
  double (*ref32)(double);
  long double (*ref64)(long double);
  double max_ulp32;  // over the whole float range
  double max_ulp64;  // over [lo64, hi64]
  double lo64, hi64;
};

// Bounds: the largest errors measured (bench/cpp/vmath_sweep over every 257th float32, both
// builds: with FMA and without), with a little room.
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); },
       [](long double x) { return std::exp(x); }, 1.25, 1.5, -745.5, 710},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); },
       [](long double x) { return std::log(x); }, 1.0, 1.0, 0, 1e300},
      // measured (every 257th float; 2M doubles per range): log1p 1.44 / 1.0, expm1 1.53 / 2.2
      // (near |x| = ln2 / 2, where the reduction's n turns 1), both builds
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double x) { return std::log1p(x); },
       [](long double x) { return std::log1p(x); }, 1.75, 1.5, -1, 1e300},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](double x) { return std::expm1(x); },
       [](long double x) { return std::expm1(x); }, 1.75, 2.5, -750, 710},
      // log(1 + e^x) = max(x, 0) + log1p(e^-|x|): 1.8 / 1.8 measured
      {"softplus", [](const Tensor& x) { return softplus(x, 1.0, INFINITY); }, ref_softplus<double>,
       ref_softplus<long double>, 2.25, 2.25, -800, 800},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); },
       [](long double x) { return std::tanh(x); }, 1.5, 2.0, -25, 25},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, ref_sigmoid, ref_sigmoid, 3.0, 2.5,
       -745, 40},
      {"erf", [](const Tensor& x) { return erf(x); }, [](double x) { return std::erf(x); },
       [](long double x) { return std::erf(x); }, 1.5, 1.5, -7, 7},
      {"erfc", [](const Tensor& x) { return erfc(x); }, [](double x) { return std::erfc(x); },
       [](long double x) { return std::erfc(x); }, 5.0, 5.0, -7, 27},
      // gelu, float: x e^(-x^2 / 2) erfcx(t) / 2; measured over every 257th float 6.8 ulp with
      // FMA and 9.7 without (x near -12.7, results near the subnormal range). Unscaled, the tail
      // would round into the subnormal range before the product with x: 10.8 and 14.6.
      {"gelu", [](const Tensor& x) { return gelu(x); }, ref_gelu<double>, ref_gelu<long double>,
       10.0, 6.0, -37, 10},
      // float: vmath's within |x| <= 2^20 (TrigWithinHalfAnUlp), libm's sinf, cosf and tanf
      // beyond (tanf 1.2 ulp measured); double: libm
      {"sin", [](const Tensor& x) { return vk::sin(x); }, [](double x) { return std::sin(x); },
       [](long double x) { return std::sin(x); }, 1.5, 1.0, -1e4, 1e4},
      {"cos", [](const Tensor& x) { return vk::cos(x); }, [](double x) { return std::cos(x); },
       [](long double x) { return std::cos(x); }, 1.5, 1.0, -1e4, 1e4},
      {"tan", [](const Tensor& x) { return vk::tan(x); }, [](double x) { return std::tan(x); },
       [](long double x) { return std::tan(x); }, 1.5, 1.5, -1e4, 1e4},
      // float: vmath_trig.h's for every argument (measured over every float: 0.5007 ulp for
      // atan, 0.5003 for asin and acos); double: libm
      {"atan", [](const Tensor& x) { return vk::atan(x); }, [](double x) { return std::atan(x); },
       [](long double x) { return std::atan(x); }, 0.6, 1.0, -1e4, 1e4},
      {"asin", [](const Tensor& x) { return vk::asin(x); }, [](double x) { return std::asin(x); },
       [](long double x) { return std::asin(x); }, 0.6, 1.0, -1, 1},
      {"acos", [](const Tensor& x) { return vk::acos(x); }, [](double x) { return std::acos(x); },
       [](long double x) { return std::acos(x); }, 0.6, 1.0, -1, 1},
  };
  return c;
}

TEST(Vmath, Float32AccuracyOverTheWholeRange) {
  const std::vector<float> x = float_sweep();
  const Tensor tx = tensor_of(x);
  for (const Case& c : cases()) {
    Worst w = worst_of(x, values_of<float>(c.op(tx)), c.ref32);
    EXPECT_LE(w.ulp, c.max_ulp32) << c.name << " at x = " << w.at;
  }
  // gelu where activations live: a few ulp (measured 5.2 with FMA, 5.7 without: the rounding of
  // w = 1 / (1 + t / 2), which the polynomial magnifies, is corrected; see vmath.h)
  Worst g = worst_of(x, values_of<float>(gelu(tx)), ref_gelu<double>, -5, 5);
  EXPECT_LE(g.ulp, 6.0) << "gelu at x = " << g.at;
}

// gelu_backward(1, x) = Phi(x) + x phi(x) in float, against long double libm. The sum crosses
// zero at x = -0.75, so errors are counted in ulp of the larger term (|Phi| + |x phi|), which is
// the result's own ulp everywhere else. The float kernel evaluates Phi(-|x|) as e^(-x^2 / 2)
// erfcx(t) / 2, which keeps its relative accuracy in the tail where 1 + erf(x / sqrt(2)) (the
// double kernel's form, as PyTorch's) cancels: at x = -5 that form is off by ~16000 ulp.
// Measured: 6.0 ulp within |x| <= 5 (just below Phi = 1/2, at x = -0.001, where a float's ulp
// halves) and 9.3 over the whole range (x = -14.1, results near the subnormal range) at -O3
// without FMA, 7.0 and 9.3 in the ASan build, 4.8 and 10.3 with FMA.
TEST(Vmath, GeluGradAccuracy) {
  const std::vector<float> x = float_sweep();
  const std::vector<float> got = values_of<float>(gelu_backward(ones({1}), tensor_of(x)));
  double worst_center = 0, worst_all = 0, at_center = 0, at_all = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isinf(x[i])) continue;
    const long double xl = x[i];
    const long double cdf = 0.5L * std::erfc(-xl / std::sqrt(2.0L));
    const long double xpdf =
        xl * std::exp(-xl * xl / 2) / std::sqrt(2 * std::numbers::pi_v<long double>);
    const long double terms = std::fabs(cdf) + std::fabs(xpdf);
    const double e = static_cast<double>(std::fabs(got[i] - (cdf + xpdf)) / ulp_of<float>(terms));
    if (std::fabs(x[i]) <= 5 && e > worst_center) worst_center = e, at_center = x[i];
    if (e > worst_all) worst_all = e, at_all = x[i];
  }
  EXPECT_LE(worst_center, 8.0) << "at x = " << at_center;
  EXPECT_LE(worst_all, 12.0) << "at x = " << at_all;
  // NaN propagates; +-inf give NaN (inf * phi(inf) = inf * 0), as PyTorch's formula does
  const std::vector<float> special = values_of<float>(
      gelu_backward(ones({1}), tensor_of(std::vector<float>{NAN, INFINITY, -INFINITY, 0.0f})));
  EXPECT_TRUE(std::isnan(special[0]) && std::isnan(special[1]) && std::isnan(special[2]));
  EXPECT_EQ(special[3], 0.5f);
}

// The tanh form evaluates its polynomial argument y (and its constants) in the tensor's
// precision, and e^(2y) multiplies y's relative rounding error by 2y: a few ulp times 2|y|,
// which dominates for |x| > 2 (2|y| = 6.7 at x = 3, 16 at x = 5), in any evaluation of the
// formula in that precision. It never cancels (1 + tanh(y) would, for x < 0).
TEST(Vmath, GeluTanhFormAccuracy) {
  const std::vector<float> x = float_sweep();
  const std::vector<float> got = values_of<float>(gelu(tensor_of(x), true));
  EXPECT_LE(worst_of(x, got, ref_gelu_tanh<double>, -2, 2).ulp, 6.0);
  EXPECT_LE(worst_of(x, got, ref_gelu_tanh<double>, -5, 5).ulp, 40.0);
  const std::vector<double> xd = double_sweep(-3, 3);
  EXPECT_LE(
      worst_of(xd, values_of<double>(gelu(tensor_of(xd), true)), ref_gelu_tanh<long double>).ulp,
      16.0);
}

TEST(Vmath, Float64Accuracy) {
  for (const Case& c : cases()) {
    // dense near the origin, where the polynomial branches meet, and over the whole range
    for (auto [lo, hi] : {std::pair{-2.0, 2.0}, std::pair{c.lo64, c.hi64}}) {
      lo = std::max(lo, c.lo64);
      hi = std::min(hi, c.hi64);
      const std::vector<double> x = double_sweep(lo, hi);
      Worst w = worst_of(x, values_of<double>(c.op(tensor_of(x))), c.ref64);
      EXPECT_LE(w.ulp, c.max_ulp64) << c.name << " at x = " << w.at;
    }
  }
  // small arguments keep their relative accuracy
  const std::vector<double> tiny = double_sweep(-1e-6, 1e-6, 20000);
  for (const Case& c : cases()) {
    if (std::string(c.name) == "log") continue;
    Worst w = worst_of(tiny, values_of<double>(c.op(tensor_of(tiny))), c.ref64);
    EXPECT_LE(w.ulp, c.max_ulp64) << c.name << " near 0, at x = " << w.at;
  }
}

// The header compiled with this file's flags: plain x86-64, so no FMA (the kernels' AVX2 and
// AVX-512 copies above have it). Same bounds.
// float sin, cos and tan where vmath computes them (|x| <= 2^20, in double, rounded once): within
// about half an ulp, also at 252.898209, the float closest to a multiple of pi/2 in that range
// (|r| = 4.2e-9, found by a search of every float; its neighbours are near the same multiple), and
// right at the bound. Measured 0.53 (sin), 0.52 (cos) and 0.54 (tan), with FMA and without.
TEST(Vmath, TrigWithinHalfAnUlp) {
  std::vector<float> x = float_sweep();
  float near = 252.898209f;
  for (int i = 0; i < 64; ++i, near = std::nextafter(near, 0.0f)) x.insert(x.end(), {near, -near});
  for (float b : {vmath::kTrigMaxArg, std::nextafter(vmath::kTrigMaxArg, 0.0f)})
    x.insert(x.end(), {b, -b});
  const Tensor tx = tensor_of(x);
  const double lo = -vmath::kTrigMaxArg, hi = vmath::kTrigMaxArg;
  Worst s = worst_of(
      x, values_of<float>(vk::sin(tx)), [](double v) { return std::sin(v); }, lo, hi);
  Worst c = worst_of(
      x, values_of<float>(vk::cos(tx)), [](double v) { return std::cos(v); }, lo, hi);
  Worst t = worst_of(
      x, values_of<float>(vk::tan(tx)), [](double v) { return std::tan(v); }, lo, hi);
  EXPECT_LE(s.ulp, 0.6) << "sin at x = " << s.at;
  EXPECT_LE(c.ulp, 0.6) << "cos at x = " << c.at;
  EXPECT_LE(t.ulp, 0.6) << "tan at x = " << t.at;
}

// A block of 256 floats with one argument past 2^20 (or a NaN or inf) is computed again element
// by element, vmath's within the bound and libm's beyond: every value is the one it has alone,
// whatever its neighbours.
TEST(Vmath, TrigBlocksWithLargeArgumentsKeepEveryValue) {
  manual_seed(11);
  std::vector<float> x = values_of<float>(randn({5000}) * 100.0);
  for (size_t i = 0; i < x.size(); i += 997) x[i] = 3e7f + static_cast<float>(i);
  x[1500] = INFINITY;
  x[2500] = NAN;
  const Tensor tx = tensor_of(x);
  struct Trig {
    const char* name;
    Tensor (*op)(const Tensor&);
    float (*libm)(float);
  };
  const Trig trigs[] = {{"sin", vk::sin, [](float v) { return std::sin(v); }},
                        {"cos", vk::cos, [](float v) { return std::cos(v); }},
                        {"tan", vk::tan, [](float v) { return std::tan(v); }}};
  for (const auto& [name, op, libm] : trigs) {
    const std::vector<float> got = values_of<float>(op(tx));
    for (size_t i = 0; i < x.size(); ++i) {
      const std::vector<float> alone = values_of<float>(op(tensor_of(std::vector<float>{x[i]})));
      if (std::isnan(x[i]) || std::isinf(x[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << name << " at " << i;
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(alone[0]))
            << name << " at x = " << x[i];
      }
      if (std::fabs(x[i]) > vmath::kTrigMaxArg && std::isfinite(x[i])) {
        EXPECT_EQ(got[i], libm(x[i])) << name << " at x = " << x[i];
      }
    }
  }
}

// float atan2 over pairs of a float sweep (every 2^32 / 1499th bit pattern of each argument:
// normals, subnormals, +-0, +-inf, NaN): vmath's quotient in double for finite pairs not both 0,
// libm's for the rest; within about half an ulp of atan2 in double (measured 0.5004), and the sign
// of a zero result as atan2's.
TEST(Vmath, Atan2WithinHalfAnUlp) {
  std::vector<float> v;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += (uint64_t{1} << 32) / 1499)
    v.push_back(std::bit_cast<float>(uint32_t(b)));
  v.insert(v.end(), {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN});
  std::vector<float> ys, xs;
  for (float y : v)
    for (float x : v) {
      ys.push_back(y);
      xs.push_back(x);
    }
  const std::vector<float> got = values_of<float>(vk::atan2(tensor_of(ys), tensor_of(xs)));
  Worst w;
  for (size_t i = 0; i < ys.size(); ++i) {
    const double want = std::atan2(static_cast<double>(ys[i]), static_cast<double>(xs[i]));
    const double e = ulp_error(got[i], want);
    if (e > w.ulp) w = {e, static_cast<double>(ys[i])};
    if (want == 0) {
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want)) << ys[i] << ", " << xs[i];
    }
  }
  EXPECT_LE(w.ulp, 0.6) << "atan2 at y = " << w.at;
}

TEST(Vmath, HeaderWithoutNativeFlags) {
  namespace vm = vk::vmath;
  struct F32 {
    const char* name;
    float (*f)(float);
    double (*ref)(double);
    double bound;
  };
  const F32 f32[] = {
      {"exp", [](float v) { return vm::exp(v); }, [](double v) { return std::exp(v); }, 1.25},
      {"log", [](float v) { return vm::log(v); }, [](double v) { return std::log(v); }, 1.0},
      {"tanh", [](float v) { return vm::tanh(v); }, [](double v) { return std::tanh(v); }, 1.5},
      {"sigmoid", [](float v) { return vm::sigmoid(v); }, ref_sigmoid, 3.0},
      {"erf", [](float v) { return vm::erf(v); }, [](double v) { return std::erf(v); }, 1.5},
      {"erfc", [](float v) { return vm::erfc(v); }, [](double v) { return std::erfc(v); }, 5.0},
      {"gelu", [](float v) { return vm::gelu(v); }, ref_gelu<double>, 10.0},
      {"log1p", [](float v) { return vm::log1p(v); }, [](double v) { return std::log1p(v); }, 1.75},
      {"expm1", [](float v) { return vm::expm1(v); }, [](double v) { return std::expm1(v); }, 1.75},
      {"softplus", [](float v) { return vm::softplus(v); }, ref_softplus<double>, 2.25},
      {"atan", [](float v) { return vm::atan(v); }, [](double v) { return std::atan(v); }, 0.6},
      {"asin", [](float v) { return vm::asin(v); }, [](double v) { return std::asin(v); }, 0.6},
      {"acos", [](float v) { return vm::acos(v); }, [](double v) { return std::acos(v); }, 0.6},
  };
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 65521)
    x.push_back(std::bit_cast<float>(uint32_t(b)));
  for (const F32& c : f32) {
    std::vector<float> got(x.size());
    for (size_t i = 0; i < x.size(); ++i) got[i] = c.f(x[i]);
    Worst w = worst_of(x, got, c.ref);
    EXPECT_LE(w.ulp, c.bound) << c.name << " at x = " << w.at;
  }

  // sin, cos and tan are vmath's only within kTrigMaxArg (the kernels take libm beyond)
  const F32 trig[] = {
      {"sin", [](float v) { return vm::sin(v); }, [](double v) { return std::sin(v); }, 0.6},
      {"cos", [](float v) { return vm::cos(v); }, [](double v) { return std::cos(v); }, 0.6},
      {"tan", [](float v) { return vm::tan(v); }, [](double v) { return std::tan(v); }, 0.6},
  };
  for (const F32& c : trig) {
    std::vector<float> got(x.size());
    for (size_t i = 0; i < x.size(); ++i) got[i] = c.f(x[i]);
    Worst w = worst_of(x, got, c.ref, -vm::kTrigMaxArg, vm::kTrigMaxArg);
    EXPECT_LE(w.ulp, c.bound) << c.name << " at x = " << w.at;
  }

  struct F64 {
    const char* name;
    double (*f)(double);
    long double (*ref)(long double);
    double bound;
  };
  const F64 f64[] = {
      {"exp", [](double v) { return vm::exp(v); }, [](long double v) { return std::exp(v); }, 1.5},
      {"tanh", [](double v) { return vm::tanh(v); }, [](long double v) { return std::tanh(v); },
       2.0},
      {"erf", [](double v) { return vm::erf(v); }, [](long double v) { return std::erf(v); }, 1.5},
      {"gelu", [](double v) { return vm::gelu(v); }, ref_gelu<long double>, 6.0},
      {"log1p", [](double v) { return vm::log1p(v); }, [](long double v) { return std::log1p(v); },
       1.5},
      {"expm1", [](double v) { return vm::expm1(v); }, [](long double v) { return std::expm1(v); },
       2.5},
      {"softplus", [](double v) { return vm::softplus(v); }, ref_softplus<long double>, 2.25},
  };
  const std::vector<double> xd = double_sweep(-30, 30, 200000);
  for (const F64& c : f64) {
    std::vector<double> got(xd.size());
    for (size_t i = 0; i < xd.size(); ++i) got[i] = c.f(xd[i]);
    Worst w = worst_of(xd, got, c.ref);
    EXPECT_LE(w.ulp, c.bound) << c.name << " (float64) at x = " << w.at;
  }
}

// cos(2 pi t) and sin(2 pi t) over a turn (randn's Box-Muller pair), against long double libm
// with 2 pi in long double: relative to the result everywhere, also next to the zeros at t = 0,
// 1/4, 1/2, 3/4 and 1 (where cos or sin of a rounded 2 pi t loses its relative accuracy).
// Measured: 1.8 ulp (with FMA and without). The reference reduces as exactly in long double
// (t - n/4 is exact there too) before its cos or sin: cos of 2 pi t itself is off near the zeros
// by long double's rounding of 2 pi t. sin(2 pi t) is cos(2 pi (t - 1/4)): the quarter one back.
long double ref_cos_quarters(double t, int shift) {
  const long double two_pi = 6.283185307179586476925286766559L;
  const long double n = std::nearbyint(4.0L * t), x = two_pi * (t - n / 4);
  switch ((static_cast<int>(n) + shift) % 4) {
    case 1:
      return -std::sin(x);
    case 2:
      return -std::cos(x);
    case 3:
      return std::sin(x);
    default:
      return std::cos(x);
  }
}
long double ref_cos_turn(double t) { return ref_cos_quarters(t, 0); }
long double ref_sin_turn(double t) { return ref_cos_quarters(t, 3); }

TEST(Vmath, CosAndSinOfATurnAccuracy) {
  namespace vm = vk::vmath;
  std::vector<double> t = double_sweep(0, 1, 2000000);
  for (double c : {0.25, 0.75, 0.5, 0.125, 0.375, 1.0})
    for (int k = -3; k <= 3; ++k)
      if (k != 0) t.push_back(c + k * 0x1p-53);
  for (int k = 1; k <= 3; ++k) t.push_back(k * 0x1p-60);  // sin next to 0
  std::vector<double> cos(t.size()), sin(t.size());
  for (size_t i = 0; i < t.size(); ++i) vm::cos_sin_2pi(t[i], cos[i], sin[i]);
  Worst wc = worst_of(t, cos, ref_cos_turn), ws = worst_of(t, sin, ref_sin_turn);
  EXPECT_LE(wc.ulp, 2.0) << "cos at t = " << wc.at;
  EXPECT_LE(ws.ulp, 2.0) << "sin at t = " << ws.at;
  const double turns[] = {0.0, 0.25, 0.5, 0.75, 1.0};
  const double want_cos[] = {1.0, 0.0, -1.0, 0.0, 1.0}, want_sin[] = {0.0, 1.0, 0.0, -1.0, 0.0};
  for (int i = 0; i < 5; ++i) {
    double c, s;
    vm::cos_sin_2pi(turns[i], c, s);
    EXPECT_EQ(c, want_cos[i]) << turns[i];
    EXPECT_EQ(s, want_sin[i]) << turns[i];
  }
}

// exp_nonpositive (softmax's exp of x - max) drops exp's upper clamp and scales by one exponent,
// 2^(n + 64) 2^-64: for every argument up to 40 (where 2^(n + 64) is still finite) it must return
// exp's bits, including -inf, NaN, the underflow range and the small positives a rounding leaves
// (scaled attention's softmax takes it for x * scale - max, which can be half an ulp above 0).
TEST(Vmath, ExpNonpositiveIsExp) {
  namespace vm = vk::vmath;
  std::vector<float> x = float_sweep();
  x.insert(x.end(), {1e-7f, 0x1p-20f, 0.5f, -0.0f, 40.0f});
  for (float v : x) {
    if (v > 40.0f) continue;
    const float a = vm::exp_nonpositive(v), b = vm::exp(v);
    EXPECT_TRUE(std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) ||
                (std::isnan(a) && std::isnan(b)))
        << "x = " << v;
  }
  for (double v : double_sweep(-800, 40, 20000))
    EXPECT_EQ(std::bit_cast<uint64_t>(vm::exp_nonpositive(v)), std::bit_cast<uint64_t>(vm::exp(v)))
        << "x = " << v;
}

// exp_normal_range (the element-wise exp's blocks whose every x is in [-87, 88]) scales by 2^n
// alone: over that range it must return exp's bits, down to -87, where 2^n is 2^-126.
TEST(Vmath, ExpNormalRangeIsExp) {
  namespace vm = vk::vmath;
  std::vector<float> x = float_sweep();
  x.insert(x.end(), {-87.0f, -86.99f, 88.0f, std::nextafter(88.0f, 0.0f), 0x1p-30f, -0x1p-30f});
  for (uint32_t b = std::bit_cast<uint32_t>(-87.0f); b > 0x80000000u; b -= 509)  // dense below 0
    x.push_back(std::bit_cast<float>(b));
  for (float v : x) {
    if (!(v >= vm::kExpNormalLo<float> && v <= vm::kExpNormalHi<float>)) continue;
    EXPECT_EQ(std::bit_cast<uint32_t>(vm::exp_normal_range(v)), std::bit_cast<uint32_t>(vm::exp(v)))
        << "x = " << v;
  }
  static_assert(vm::kExpNormalLo<float> == -87.0f && vm::kExpNormalHi<float> == 88.0f);
  for (double v : double_sweep(vm::kExpNormalLo<double>, vm::kExpNormalHi<double>, 20000))
    EXPECT_EQ(std::bit_cast<uint64_t>(vm::exp_normal_range(v)), std::bit_cast<uint64_t>(vm::exp(v)))
        << "x = " << v;
}

TEST(Vmath, SpecialValues) {
  constexpr double inf = INFINITY, nan = NAN;
  for (DType dt : {DType::Float32, DType::Float64}) {
    auto at = [&](Tensor (*f)(const Tensor&), std::vector<double> x) {
      return to_vector(f(from_vector(x, {static_cast<int64_t>(x.size())}, dt)));
    };
    auto same = [](const std::vector<double>& got, const std::vector<double>& want) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
        } else {
          EXPECT_EQ(got[i], want[i]) << "at " << i;
          EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << "sign at " << i;
        }
      }
    };
    same(at(exp, {0.0, -0.0, inf, -inf, nan}), {1, 1, inf, 0, nan});
    same(at(log, {0.0, -0.0, -1.0, inf, -inf, nan, 1.0}), {-inf, -inf, nan, inf, nan, nan, 0});
    same(at(tanh, {0.0, -0.0, inf, -inf, nan, 30.0, -30.0}), {0.0, -0.0, 1, -1, nan, 1, -1});
    same(at(sigmoid, {0.0, inf, -inf, nan}), {0.5, 1, 0, nan});
    same(at(erf, {0.0, -0.0, inf, -inf, nan, 30.0}), {0.0, -0.0, 1, -1, nan, 1});
    same(at(erfc, {0.0, inf, -inf, nan, 30.0}), {1, 0, 2, nan, 0});
    // past the clamp x Phi(x) is -0, and -inf * Phi(-inf) NaN: the float tail is carried times
    // 2^64, so a nonzero tail there would give -1e-11 at -3e38 and -inf at -inf
    same(at([](const Tensor& x) { return gelu(x); }, {0.0, -0.0, inf, -inf, nan, -40.0, -3e38}),
         {0.0, -0.0, inf, nan, nan, -0.0, -0.0});
    same(at([](const Tensor& x) { return gelu(x, true); }, {0.0, inf, nan, -40.0}),
         {0.0, inf, nan, -0.0});
    same(at(log1p, {0.0, -0.0, -1.0, -2.0, inf, -inf, nan}), {0.0, -0.0, -inf, nan, inf, nan, nan});
    same(at(expm1, {0.0, -0.0, inf, -inf, nan, -800.0, 800.0}), {0.0, -0.0, inf, -1, nan, -1, inf});
    same(at(vk::sin, {0.0, -0.0, inf, -inf, nan}), {0.0, -0.0, nan, nan, nan});
    same(at(vk::cos, {0.0, -0.0, inf, -inf, nan}), {1, 1, nan, nan, nan});
    same(at(vk::tan, {0.0, -0.0, inf, -inf, nan}), {0.0, -0.0, nan, nan, nan});
    // pi/2 and pi as the dtype rounds them
    const double half_pi = dt == DType::Float32 ? static_cast<double>(std::numbers::pi_v<float> / 2)
                                                : std::numbers::pi / 2;
    const double pi =
        dt == DType::Float32 ? static_cast<double>(std::numbers::pi_v<float>) : std::numbers::pi;
    same(at(vk::atan, {0.0, -0.0, inf, -inf, nan, 1e30, -1e30}),
         {0.0, -0.0, half_pi, -half_pi, nan, half_pi, -half_pi});
    same(at(vk::asin, {0.0, -0.0, 1.0, -1.0, 1.5, -2.0, inf, nan}),
         {0.0, -0.0, half_pi, -half_pi, nan, nan, nan, nan});
    same(at(vk::acos, {1.0, -1.0, 0.0, -0.0, 1.5, -inf, nan}),
         {0.0, pi, half_pi, half_pi, nan, nan, nan});
  }
  // float32 thresholds: the largest finite exp, the first inf, the subnormal range, the first 0
  auto exp32 = [](float x) { return to_vector(exp(from_vector({x}, {1})))[0]; };
  EXPECT_TRUE(std::isfinite(exp32(88.72283f)));
  EXPECT_EQ(exp32(88.72284f), INFINITY);
  EXPECT_EQ(exp32(-87.33654f), static_cast<double>(std::exp(-87.33654f)));  // ~ FLT_MIN
  EXPECT_EQ(exp32(-103.0f), static_cast<double>(std::exp(-103.0f)));        // subnormal
  EXPECT_EQ(exp32(-104.0f), 0.0);
  // subnormal arguments
  const float d = std::numeric_limits<float>::denorm_min() * 1000;
  const Tensor sub = from_vector({d, -d}, {2});
  EXPECT_EQ(to_vector(exp(sub)), (std::vector<double>{1, 1}));
  EXPECT_EQ(to_vector(tanh(sub)), (std::vector<double>{d, -d}));
  EXPECT_EQ(to_vector(sigmoid(sub)), (std::vector<double>{0.5, 0.5}));
  EXPECT_NEAR(to_vector(log(sub))[0], std::log(static_cast<double>(d)), 1e-5);
  EXPECT_NEAR(to_vector(erf(sub))[0], 2 * std::numbers::inv_sqrtpi * d, 2e-45);
}

// Every element runs the same code whichever loop computes it: the vectorised body, its
// scalar tail (at any alignment), the strided walker, or another thread's range.
TEST(Vmath, ResultsDoNotDependOnTheLoopOrTheSplit) {
  const int saved = cpu::num_threads();
  manual_seed(7);
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor x = randn({3 * 65536 + 77}, dt) * 6.0;
    for (const Case& c : cases()) {
      cpu::set_num_threads(1);
      const Tensor whole = c.op(c.name == std::string("log") ? abs(x) : x);
      const Tensor in = c.name == std::string("log") ? abs(x) : x;
      const int64_t es = static_cast<int64_t>(dtype_size(dt));
      for (int threads : {1, 2}) {
        cpu::set_num_threads(threads);
        EXPECT_EQ(std::memcmp(c.op(in).raw_data(), whole.raw_data(), whole.numel() * es), 0)
            << c.name << " at " << threads << " threads";
        for (int64_t off : {1, 3, 5, 13}) {  // other alignments: other tails and peels
          const int64_t n = in.numel() - off;
          Tensor part = c.op(slice(in, 0, off, in.numel()));
          EXPECT_EQ(std::memcmp(part.raw_data(),
                                static_cast<const char*>(whole.raw_data()) + off * es, n * es),
                    0)
              << c.name << " from offset " << off << " at " << threads << " threads";
        }
        // a strided view: the walker's scalar loop
        Tensor stepped = c.op(slice(in, 0, 0, in.numel(), 3));
        Tensor expect = slice(whole, 0, 0, whole.numel(), 3);
        EXPECT_EQ(
            std::memcmp(stepped.raw_data(), contiguous(expect).raw_data(), stepped.numel() * es), 0)
            << c.name << " strided at " << threads << " threads";
      }
    }
  }
  cpu::set_num_threads(saved);
}

// The strided walker's fast paths (loops.h) against plain indexing: a column broadcast
// (x[N, C] + b[N, 1], stride 0 along the run), transposed operands (the tiled walk, with
// partial tiles at the edges), and a batch of transposes.
TEST(StridedLoops, BroadcastAndTransposedOperandsMatchIndexing) {
  manual_seed(3);
  for (auto [n, c] :
       {std::pair<int64_t, int64_t>{100, 70}, {64, 64}, {131, 257}, {300, 77}, {5, 300}}) {
    const Tensor x = randn({n, c}), b = randn({n, 1}), y = randn({c, n});
    const std::vector<double> xv = to_vector(x), bv = to_vector(b), yv = to_vector(y);
    const std::vector<double> col = to_vector(x + b);
    const std::vector<double> tr = to_vector(x + transpose(y, 0, 1));
    const std::vector<double> tr2 = to_vector(contiguous(transpose(y, 0, 1)));
    const std::vector<double> flipped = to_vector(exp(transpose(flip(y, {1}), 0, 1)));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < c; ++j) {
        const int64_t k = i * c + j;
        ASSERT_EQ(col[k],
                  static_cast<double>(static_cast<float>(xv[k]) + static_cast<float>(bv[i])));
        ASSERT_EQ(tr[k], static_cast<double>(static_cast<float>(xv[k]) +
                                             static_cast<float>(yv[j * n + i])));
        ASSERT_EQ(tr2[k], yv[j * n + i]);
        ASSERT_EQ(flipped[k], to_vector(exp(from_vector({yv[j * n + (n - 1 - i)]}, {1})))[0]);
      }
  }
  const Tensor z = randn({3, 70, 90});
  const Tensor zt = contiguous(transpose(z, 1, 2));
  const std::vector<double> zv = to_vector(z), ztv = to_vector(zt);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 90; ++i)
      for (int64_t j = 0; j < 70; ++j)
        ASSERT_EQ(ztv[(b * 90 + i) * 70 + j], zv[(b * 70 + j) * 90 + i]);
}

}  // namespace
}  // namespace vk::test
