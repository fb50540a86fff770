// Accuracy of vmath.h against libm: every float32 (or a strided subset of the float64 range),
// reporting the largest error in ulp of the correctly rounded result and where it occurs.
//
//   vmath_sweep [step]     float32 inputs: every step-th bit pattern (default 1: all 2^32)
// The references are libm in the next wider type (double for float, long double for double),
// so they are exact to well below the errors measured. Compile with the same flags as the
// library to measure what the kernels run (FMA or not makes a small difference).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "vkml/backend/cpu/vmath.h"

namespace {

// |got - want| in units of the spacing of T at want (the spacing of subnormals below them).
template <class T, class W>
double ulp_error(T got, W want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
  const T rounded = static_cast<T>(want);  // beyond T's range: only inf is right
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0.0 : INFINITY;
  W a = std::fabs(want);
  int e = a == 0 ? -100000 : std::ilogb(a);
  e = std::max(e, std::numeric_limits<T>::min_exponent - 1);
  W ulp = std::ldexp(W(1), e - (std::numeric_limits<T>::digits - 1));
  // a reference beyond T's range: any finite result is wrong unless it rounds there too
  return static_cast<double>(std::fabs(static_cast<W>(got) - want) / ulp);
}

struct Worst {
  double ulp = 0;
  double at = 0;
};

template <class F, class R>
Worst sweep_float(F f, R ref, uint64_t step, float lo, float hi) {
  const int nt = std::max(1u, std::thread::hardware_concurrency());
  std::vector<Worst> w(nt);
  std::vector<std::thread> ts;
  for (int t = 0; t < nt; ++t)
    ts.emplace_back([&, t] {
      for (uint64_t b = uint64_t(t) * step; b < (uint64_t{1} << 32); b += step * nt) {
        uint32_t bits = static_cast<uint32_t>(b);
        float x;
        std::memcpy(&x, &bits, 4);
        if (!(x >= lo && x <= hi) && !std::isnan(x)) continue;
        double e = ulp_error(f(x), ref(static_cast<double>(x)));
        if (e > w[t].ulp || std::isnan(e)) w[t] = {e, x};
      }
    });
  for (auto& t : ts) t.join();
  Worst r;
  for (auto& x : w)
    if (x.ulp > r.ulp) r = x;
  return r;
}

template <class F, class R>
Worst sweep_double(F f, R ref, double lo, double hi, int64_t n) {
  Worst r;
  for (int64_t i = 0; i <= n; ++i) {
    double x = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n);
    double e = ulp_error(f(x), ref(static_cast<long double>(x)));
    if (e > r.ulp) r = {e, x};
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  namespace vm = vk::vmath;
  const uint64_t step = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const float inf = INFINITY;
  auto report = [](const char* name, Worst w) {
    std::printf("  %-16s max %8.3f ulp  at %.9g\n", name, w.ulp, w.at);
  };
  std::printf("float32, every %llu-th bit pattern\n", static_cast<unsigned long long>(step));
  report("exp", sweep_float([](float x) { return vm::exp(x); },
                            [](double x) { return std::exp(x); }, step, -inf, inf));
  report("log", sweep_float([](float x) { return vm::log(x); },
                            [](double x) { return std::log(x); }, step, -inf, inf));
  report("tanh", sweep_float([](float x) { return vm::tanh(x); },
                             [](double x) { return std::tanh(x); }, step, -inf, inf));
  report("sigmoid", sweep_float([](float x) { return vm::sigmoid(x); },
                                [](double x) { return 1 / (1 + std::exp(-x)); }, step, -inf, inf));
  report("erf", sweep_float([](float x) { return vm::erf(x); },
                            [](double x) { return std::erf(x); }, step, -inf, inf));
  report("erfc", sweep_float([](float x) { return vm::erfc(x); },
                             [](double x) { return std::erfc(x); }, step, -inf, inf));
  report("gelu", sweep_float([](float x) { return vm::gelu(x); },
                             [](double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); },
                             step, -inf, inf));
  report(
      "gelu |x|<=5",
      sweep_float([](float x) { return vm::gelu(x); },
                  [](double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); }, step, -5, 5));
  report("gelu_tanh |x|<=5", sweep_float([](float x) { return vm::gelu_tanh(x); },
                                         [](double x) {
                                           double y =
                                               std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
                                           return x / (1 + std::exp(-2 * y));
                                         },
                                         step, -5, 5));
  report("gelu_tanh", sweep_float([](float x) { return vm::gelu_tanh(x); },
                                  [](double x) {
                                    double y = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
                                    return x / (1 + std::exp(-2 * y));
                                  },
                                  step, -inf, inf));
  std::printf("float64, 2,000,001 points per range\n");
  const int64_t n = 2000000;
  auto d = [&](const char* name, auto f, auto ref, double lo, double hi) {
    char label[64];
    std::snprintf(label, sizeof label, "%s [%g,%g]", name, lo, hi);
    std::printf("  %-28s max %8.3f ulp  at %.17g\n", label, sweep_double(f, ref, lo, hi, n).ulp,
                sweep_double(f, ref, lo, hi, n).at);
  };
  d(
      "exp", [](double x) { return vm::exp(x); }, [](long double x) { return std::exp(x); }, -745,
      710);
  d(
      "exp", [](double x) { return vm::exp(x); }, [](long double x) { return std::exp(x); }, -1, 1);
  d(
      "log", [](double x) { return vm::log(x); }, [](long double x) { return std::log(x); }, 1e-300,
      1e300);
  d(
      "log", [](double x) { return vm::log(x); }, [](long double x) { return std::log(x); }, 0.5,
      2);
  d(
      "tanh", [](double x) { return vm::tanh(x); }, [](long double x) { return std::tanh(x); }, -20,
      20);
  d(
      "tanh", [](double x) { return vm::tanh(x); }, [](long double x) { return std::tanh(x); }, -1,
      1);
  d(
      "sigmoid", [](double x) { return vm::sigmoid(x); },
      [](long double x) { return 1 / (1 + std::exp(-x)); }, -745, 40);
  d(
      "erf", [](double x) { return vm::erf(x); }, [](long double x) { return std::erf(x); }, -7, 7);
  d(
      "erf", [](double x) { return vm::erf(x); }, [](long double x) { return std::erf(x); }, -1e-3,
      1e-3);
  d(
      "erfc", [](double x) { return vm::erfc(x); }, [](long double x) { return std::erfc(x); }, -7,
      27.2);
  d(
      "gelu", [](double x) { return vm::gelu(x); },
      [](long double x) { return x * 0.5L * std::erfc(-x / std::sqrt(2.0L)); }, -38, 10);
  d(
      "gelu_tanh", [](double x) { return vm::gelu_tanh(x); },
      [](long double x) {
        long double y =
            std::sqrt(2 / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x);
        return x / (1 + std::exp(-2 * y));
      },
      -20, 20);
  return 0;
}
