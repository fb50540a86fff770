// Random sampling (issue 15 item 3): Generator semantics, the exact structure of randperm and
// multinomial, the distributions of every sampler, their errors, thread-count independence and
// Vulkan == CPU for the same seed.
//
// The statistical checks use fixed seeds, so they are deterministic; each bound is set so that a
// correct sampler would exceed it with probability below 1e-6 for a random seed (means: 5.5
// standard errors, two-sided 4e-8; chi-square: the 1 - 1e-6 quantile), so changing a seed cannot
// make one flake, while a wrong distribution (a shifted mean, a wrong category weight) fails.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "test_util.h"
#include "vkml/backend/cpu/creation.h"
#include "vkml/ops/special.h"
#include "vulkan_fixture.h"

namespace vk::test {
namespace {

constexpr double kZ = 5.5;

// The 1 - 1e-6 quantile of chi-square with df degrees of freedom (Wilson-Hilferty, which errs
// high for the few degrees of freedom used here: a conservative bound).
double chi2_bound(double df) {
  const double z = 4.753, h = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - h + z * std::sqrt(h), 3.0);
}

// Pearson's statistic of observed counts against expected probabilities (those > 0).
double chi2(const std::vector<double>& counts, const std::vector<double>& probs, double n) {
  double s = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] <= 0) continue;
    const double e = n * probs[i];
    s += (counts[i] - e) * (counts[i] - e) / e;
  }
  return s;
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
double var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}

// ---- Generator semantics ----

TEST(Generator, SeedRestartsTheStreamAndStateRoundTrips) {
  Generator g(kCPU, 3);
  EXPECT_EQ(g.initial_seed(), 3u);
  const std::vector<double> a = to_vector(rand({5}, DType::Float32, kCPU, &g));
  const RngState mid = g.state();
  EXPECT_EQ(mid.seed, 3u);
  EXPECT_EQ(mid.offset, 5u);  // one counter per element drawn
  const std::vector<double> b = to_vector(randn({4}, DType::Float64, kCPU, &g));
  g.manual_seed(3);
  EXPECT_EQ(to_vector(rand({5}, DType::Float32, kCPU, &g)), a);
  g.set_state(mid);
  EXPECT_EQ(to_vector(randn({4}, DType::Float64, kCPU, &g)), b);
  EXPECT_NE(a, to_vector(rand({5}, DType::Float32, kCPU, &g)));  // the stream moved on
}

TEST(Generator, ExplicitGeneratorsLeaveTheDefaultAlone) {
  manual_seed(11);
  const RngState before = get_rng_state();
  Generator g(kCPU, 11);
  const std::vector<double> from_g = to_vector(rand({6}, DType::Float32, kCPU, &g));
  (void)randperm(10, DType::Int64, kCPU, &g);
  (void)multinomial(from_vector({1, 2, 3}, {3}), 2, false, &g);
  (void)poisson(from_vector({1, 2, 3}, {3}), &g);
  (void)bernoulli(from_vector({0.5, 0.5}, {2}), &g);
  (void)normal(from_vector({0, 0}, {2}), 1.0, &g);
  EXPECT_EQ(get_rng_state().offset, before.offset);
  // The default generator is the one manual_seed seeds: the same seed, the same numbers.
  EXPECT_EQ(to_vector(rand({6})), from_g);
  EXPECT_EQ(&default_generator(), &default_generator());
  EXPECT_EQ(default_generator().initial_seed(), 11u);
}

TEST(Generator, SeedIsFreshAndRemembered) {
  Generator g;
  EXPECT_EQ(g.initial_seed(), Generator::kDefaultSeed);
  const uint64_t s1 = g.seed(), s2 = g.seed();
  EXPECT_NE(s1, s2);  // 64 random bits twice: equal with probability 2^-64
  EXPECT_EQ(g.initial_seed(), s2);
  EXPECT_EQ(g.state().offset, 0u);
}

TEST(Generator, EachOpReservesItsDraws) {
  Generator g(kCPU, 1);
  (void)randperm(7, DType::Int64, kCPU, &g);
  EXPECT_EQ(g.state().offset, 7u);
  (void)multinomial(from_vector({1, 1, 1, 1, 1, 1}, {2, 3}), 5, true, &g);
  EXPECT_EQ(g.state().offset, 17u);  // with replacement: one per sample
  (void)multinomial(from_vector({1, 1, 1, 1, 1, 1}, {2, 3}), 2, false, &g);
  EXPECT_EQ(g.state().offset, 23u);  // without: one per category
  (void)poisson(from_vector({1, 50}, {2}), &g);
  EXPECT_EQ(g.state().offset, 25u);
  (void)normal(from_vector({0, 0, 0}, {3}), from_vector({1}, {1}), &g);
  EXPECT_EQ(g.state().offset, 28u);
}

TEST(Generator, AnotherDevicesGeneratorIsAnError) {
  Generator g(Device{DeviceType::Vulkan, 0}, 1);
  VK_EXPECT_ERROR(rand({2}, DType::Float32, kCPU, &g), RuntimeError, "rand",
                  "expected a 'cpu' device type for generator but found 'vulkan'");
  VK_EXPECT_ERROR(randperm(3, DType::Int64, kCPU, &g), RuntimeError, "randperm");
}

// ---- exact structure ----

TEST(Randperm, IsAPermutationOfEverySize) {
  Generator g(kCPU, 2);
  for (int64_t n : {0, 1, 2, 5, 1000}) {
    std::vector<double> p = to_vector(randperm(n, DType::Int64, kCPU, &g));
    std::sort(p.begin(), p.end());
    std::vector<double> want(static_cast<size_t>(n));
    std::iota(want.begin(), want.end(), 0.0);
    EXPECT_EQ(p, want) << n;
  }
  for (DType dt : {DType::Int32, DType::Float32, DType::Float64}) {
    const Tensor p = randperm(4, dt, kCPU, &g);
    EXPECT_EQ(p.dtype(), dt);
    std::vector<double> v = to_vector(p);
    std::sort(v.begin(), v.end());
    EXPECT_EQ(v, (std::vector<double>{0, 1, 2, 3}));
  }
}

TEST(Randperm, EveryOrderIsEquallyLikely) {
  Generator g(kCPU, 4);
  constexpr int kDraws = 48000;
  std::map<std::vector<double>, double> seen;
  for (int i = 0; i < kDraws; ++i) seen[to_vector(randperm(4, DType::Int64, kCPU, &g))] += 1;
  ASSERT_EQ(seen.size(), 24u);
  std::vector<double> counts;
  for (const auto& [order, c] : seen) counts.push_back(c);
  EXPECT_LT(chi2(counts, std::vector<double>(24, 1.0 / 24), kDraws), chi2_bound(23));
}

TEST(Multinomial, WithoutReplacementNeverRepeatsNorDrawsZeroWeight) {
  Generator g(kCPU, 5);
  const Tensor probs = from_vector({0, 1, 0, 2, 3, 0, 0.5}, {7});
  for (int i = 0; i < 200; ++i) {
    const std::vector<double> s = to_vector(multinomial(probs, 4, false, &g));
    EXPECT_EQ(std::set<double>(s.begin(), s.end()), (std::set<double>{1, 3, 4, 6}));
  }
  // As torch: with fewer positive weights than samples, the zero-weight ones come last.
  const std::vector<double> s = to_vector(multinomial(from_vector({1, 0}, {2}), 2, false, &g));
  EXPECT_EQ(s, (std::vector<double>{0, 1}));
}

TEST(Multinomial, WithReplacementNeverDrawsZeroWeightAndMatchesTheWeights) {
  Generator g(kCPU, 6);
  constexpr int64_t kN = 200000;
  const std::vector<double> w = {1, 2, 0, 3, 4};
  const Tensor s = multinomial(from_vector(w, {5}), kN, true, &g);
  EXPECT_EQ(s.dtype(), DType::Int64);
  std::vector<double> counts(5, 0.0);
  for (double v : to_vector(s)) counts[static_cast<size_t>(v)] += 1;
  EXPECT_EQ(counts[2], 0.0);
  EXPECT_LT(chi2(counts, {0.1, 0.2, 0.0, 0.3, 0.4}, kN), chi2_bound(3));
}

// Without replacement, the first two draws of a row follow P(i, j) = p_i p_j / (1 - p_i): the
// exponential race must match drawing one at a time and renormalising.
TEST(Multinomial, WithoutReplacementMatchesSequentialDraws) {
  Generator g(kCPU, 7);
  constexpr int64_t kRows = 60000;
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  const Tensor probs = expand(from_vector(p, {1, 4}), {kRows, 4});
  const std::vector<double> s = to_vector(multinomial(probs, 2, false, &g));
  std::vector<double> counts(16, 0.0), expected(16, 0.0);
  for (int64_t r = 0; r < kRows; ++r) counts[static_cast<size_t>(s[r * 2] * 4 + s[r * 2 + 1])] += 1;
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j)
      if (i != j) expected[i * 4 + j] = p[i] * p[j] / (1 - p[i]);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(counts[i * 4 + i], 0.0);
  EXPECT_LT(chi2(counts, expected, kRows), chi2_bound(11));
}

TEST(Multinomial, RaisesAsTorch) {
  auto t = [](std::vector<double> v, Shape s) { return from_vector(v, s); };
  VK_EXPECT_ERROR(multinomial(t({0, 0}, {2}), 1), RuntimeError, "multinomial",
                  "sum of probabilities <= 0");
  VK_EXPECT_ERROR(multinomial(t({1, 1, 0, 0}, {2, 2}), 1), RuntimeError, "row 1");
  VK_EXPECT_ERROR(multinomial(t({-1, 1}, {2}), 1), RuntimeError, "`inf`, `nan` or element < 0");
  VK_EXPECT_ERROR(multinomial(t({INFINITY, 1}, {2}), 1), RuntimeError, "element < 0");
  VK_EXPECT_ERROR(multinomial(t({NAN, 1}, {2}), 1), RuntimeError, "element < 0");
  VK_EXPECT_ERROR(multinomial(t({1, 1}, {2}), 3), RuntimeError,
                  "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  VK_EXPECT_ERROR(multinomial(t({1, 1}, {2}), 0), RuntimeError, "n_sample <= 0");
  VK_EXPECT_ERROR(multinomial(t({1, 1}, {1, 1, 2}), 1), ShapeError, "1 or 2 dim");
  VK_EXPECT_ERROR(multinomial(ints({1, 1}, {2}), 1), DTypeError, "floating");
  EXPECT_EQ(multinomial(t({1, 1}, {2}), 3, true).shape(), (Shape{3}));
  EXPECT_EQ(multinomial(zeros({0, 3}), 2).shape(), (Shape{0, 2}));
}

// ---- distributions ----

TEST(Bernoulli, FrequencyIsP) {
  Generator g(kCPU, 8);
  constexpr int64_t kN = 200000;
  for (double p : {0.0, 0.03, 0.5, 0.9, 1.0}) {
    const Tensor b = bernoulli(full({kN}, p, DType::Float64), &g);
    EXPECT_EQ(b.dtype(), DType::Float64);
    const double m = mean_of(to_vector(b));
    EXPECT_LE(std::abs(m - p), kZ * std::sqrt(p * (1 - p) / kN)) << p;
  }
  const std::vector<double> v = to_vector(bernoulli(full({1000}, 0.5), &g));
  for (double x : v) EXPECT_TRUE(x == 0.0 || x == 1.0);
}

TEST(Bernoulli, RaisesAsTorch) {
  VK_EXPECT_ERROR(bernoulli(from_vector({0.5, 1.5}, {2})), RuntimeError, "bernoulli", "[0, 1]");
  VK_EXPECT_ERROR(bernoulli(from_vector({NAN}, {1})), RuntimeError, "bernoulli");
  VK_EXPECT_ERROR(bernoulli(ints({1}, {1})), DTypeError, "bernoulli");
}

TEST(Normal, MeanAndVarianceMatch) {
  Generator g(kCPU, 9);
  constexpr int64_t kN = 200000;
  const double mu = 2.0, sigma = 3.0;
  const std::vector<double> v = to_vector(normal(mu, sigma, {kN}, DType::Float64, kCPU, &g));
  EXPECT_LE(std::abs(mean_of(v) - mu), kZ * sigma / std::sqrt(kN));
  EXPECT_LE(std::abs(var_of(v) - sigma * sigma), kZ * sigma * sigma * std::sqrt(2.0 / kN));
  // The shape of the bell, not only its moments: P(|z| < 1) and P(|z| < 2).
  double in1 = 0, in2 = 0;
  for (double x : v) {
    in1 += std::abs(x - mu) < sigma;
    in2 += std::abs(x - mu) < 2 * sigma;
  }
  const double p1 = std::erf(1 / std::sqrt(2.0)), p2 = std::erf(2 / std::sqrt(2.0));
  EXPECT_LE(std::abs(in1 / kN - p1), kZ * std::sqrt(p1 * (1 - p1) / kN));
  EXPECT_LE(std::abs(in2 / kN - p2), kZ * std::sqrt(p2 * (1 - p2) / kN));
}

TEST(Normal, ElementwiseMeanAndStdBroadcast) {
  Generator g(kCPU, 10);
  constexpr int64_t kN = 50000;
  // Column c has mean c and std c + 1: every column's statistics must follow its own parameters.
  const Tensor mean = from_vector({0, 1, 2}, {1, 3}, DType::Float64);
  const Tensor std = from_vector({1, 2, 3}, {1, 3}, DType::Float64);
  const Tensor s = normal(expand(mean, {kN, 3}), std, &g);
  EXPECT_EQ(s.shape(), (Shape{kN, 3}));
  const std::vector<double> all = to_vector(s);
  for (int c = 0; c < 3; ++c) {
    std::vector<double> col;
    for (int64_t r = 0; r < kN; ++r) col.push_back(all[static_cast<size_t>(r * 3 + c)]);
    const double sd = c + 1.0;
    EXPECT_LE(std::abs(mean_of(col) - c), kZ * sd / std::sqrt(kN)) << c;
    EXPECT_LE(std::abs(var_of(col) - sd * sd), kZ * sd * sd * std::sqrt(2.0 / kN)) << c;
  }
  EXPECT_EQ(normal(from_vector({1, 2}, {2}), 0.0, &g).shape(), (Shape{2}));
  EXPECT_EQ(to_vector(normal(from_vector({1, 2}, {2}), 0.0, &g)), (std::vector<double>{1, 2}));
  EXPECT_EQ(to_vector(normal(5.0, zeros({3}), &g)), (std::vector<double>{5, 5, 5}));
  EXPECT_EQ(
      normal(from_vector({1}, {1}, DType::Float32), from_vector({1}, {1}, DType::Float64)).dtype(),
      DType::Float32);  // mean's dtype, as torch
}

TEST(Normal, RaisesAsTorch) {
  VK_EXPECT_ERROR(normal(zeros({2}), -1.0), RuntimeError, "normal expects std >= 0.0");
  VK_EXPECT_ERROR(normal(zeros({2}), from_vector({1, -1}, {2})), RuntimeError, "normal",
                  "expects all elements of std >= 0.0");
  VK_EXPECT_ERROR(normal(zeros({2}), zeros({3})), ShapeError, "normal");
  VK_EXPECT_ERROR(normal(ints({1}, {1}), 1.0), DTypeError, "normal");
}

// As torch: the sample does not carry the gradient of a reparameterisation; mean and std get
// zeros (and the result requires grad, so backward works).
TEST(Normal, GradientIsZeroAsTorch) {
  Tensor mean = values({1, 2}, {2}), std = values({1, 3}, {2});
  Tensor y = normal(mean, std);
  ASSERT_TRUE(y.requires_grad());
  autograd::backward(sum(y));
  expect_values(mean.grad(), {0, 0});
  expect_values(std.grad(), {0, 0});
  Tensor p = values({0.2, 0.7}, {2});
  autograd::backward(sum(bernoulli(p) + poisson(p)));
  expect_values(p.grad(), {0, 0});
}

// Mean and variance both equal the rate; rates around 10 use both of the sampler's algorithms.
TEST(Poisson, MeanAndVarianceAreTheRate) {
  Generator g(kCPU, 12);
  constexpr int64_t kN = 100000;
  for (double lam : {0.05, 0.5, 4.0, 9.99, 10.0, 30.0, 1000.0, 1e6}) {
    const std::vector<double> v = to_vector(poisson(full({kN}, lam, DType::Float64), &g));
    for (double x : v) ASSERT_TRUE(x >= 0 && x == std::floor(x)) << lam;
    EXPECT_LE(std::abs(mean_of(v) - lam), kZ * std::sqrt(lam / kN)) << lam;
    EXPECT_LE(std::abs(var_of(v) - lam), kZ * std::sqrt((lam + 2 * lam * lam) / kN)) << lam;
  }
  EXPECT_EQ(to_vector(poisson(zeros({3}), &g)), (std::vector<double>{0, 0, 0}));
}

// The whole probability mass function, by chi-square, below (Knuth) and above (PTRS) rate 10.
TEST(Poisson, FollowsThePmf) {
  Generator g(kCPU, 13);
  constexpr int64_t kN = 200000;
  for (double lam : {4.0, 30.0}) {
    const std::vector<double> v = to_vector(poisson(full({kN}, lam, DType::Float64), &g));
    // Bins k = lo .. hi, the tails folded into the end bins, each expecting >= 20 samples.
    const int lo = lam < 10 ? 0 : 12, hi = lam < 10 ? 13 : 52;
    std::vector<double> pmf(static_cast<size_t>(hi - lo + 1), 0.0), counts(pmf.size(), 0.0);
    double below = 0;
    for (int k = 0; k <= hi; ++k) {
      const double pk = std::exp(-lam + k * std::log(lam) - std::lgamma(k + 1.0));
      if (k <= lo) below += pk;
      if (k == lo) pmf[0] = below;
      if (k > lo) pmf[static_cast<size_t>(k - lo)] = pk;
    }
    pmf.back() = 1.0 - std::accumulate(pmf.begin(), pmf.end() - 1, 0.0);
    for (double x : v)
      counts[static_cast<size_t>(std::clamp(static_cast<int>(x), lo, hi) - lo)] += 1;
    EXPECT_LT(chi2(counts, pmf, kN), chi2_bound(static_cast<double>(pmf.size() - 1))) << lam;
  }
}

TEST(Poisson, RaisesForBadRates) {
  VK_EXPECT_ERROR(poisson(from_vector({1, -1}, {2})), RuntimeError, "poisson",
                  "expected rate to be non-negative");
  VK_EXPECT_ERROR(poisson(from_vector({NAN}, {1})), RuntimeError, "poisson");
  VK_EXPECT_ERROR(poisson(from_vector({INFINITY}, {1})), RuntimeError, "poisson");
  VK_EXPECT_ERROR(poisson(ints({1}, {1})), DTypeError, "poisson");
  VK_EXPECT_ERROR(randperm(-1), SizeError, "randperm");
  VK_EXPECT_ERROR(randperm(3, DType::Bool), NotImplementedError, "randperm");
  VK_EXPECT_ERROR(randperm((int64_t{1} << 24) + 2, DType::Float32), RuntimeError, "randperm");
}

// Mean and variance are both alpha (scale 1), on both sides of the alpha < 1 boost and for large
// alpha; the smallest normal stands in for a sample that underflows.
TEST(StandardGamma, MeanAndVarianceAreTheConcentration) {
  Generator g(kCPU, 14);
  constexpr int64_t kN = 100000;
  for (double alpha : {0.05, 0.5, 0.999, 1.0, 2.5, 40.0, 1e5}) {
    const std::vector<double> v = to_vector(standard_gamma(full({kN}, alpha, DType::Float64), &g));
    for (double x : v) ASSERT_TRUE(x > 0 && std::isfinite(x)) << alpha;
    EXPECT_LE(std::abs(mean_of(v) - alpha), kZ * std::sqrt(alpha / kN)) << alpha;
    // Var(sample variance) ~ (mu4 - sigma^4) / n, mu4 = 3 alpha^2 + 6 alpha for Gamma(alpha)
    EXPECT_LE(std::abs(var_of(v) - alpha), kZ * std::sqrt((2 * alpha * alpha + 6 * alpha) / kN))
        << alpha;
  }
  const std::vector<double> tiny = to_vector(standard_gamma(full({4}, 1e-3, DType::Float32), &g));
  for (double x : tiny) EXPECT_GE(x, std::numeric_limits<float>::min());
  EXPECT_EQ(to_vector(standard_gamma(full({2}, 0.0, DType::Float32), &g)),
            std::vector<double>(2, std::numeric_limits<float>::min()));
  EXPECT_EQ(to_vector(standard_gamma(full({1}, INFINITY), &g))[0], INFINITY);
}

// The distribution function by chi-square over 20 equiprobable bins (edges from the sample's own
// igamma: P(alpha, x) of a Gamma(alpha) sample is uniform), for the boost and Marsaglia-Tsang.
TEST(StandardGamma, FollowsTheDistributionFunction) {
  Generator g(kCPU, 15);
  constexpr int64_t kN = 200000;
  for (double alpha : {0.3, 3.0}) {
    const Tensor a = full({kN}, alpha, DType::Float64);
    const std::vector<double> u = to_vector(igamma(a, standard_gamma(a, &g)));
    std::vector<double> counts(20, 0.0), probs(20, 1.0 / 20);
    for (double p : u) counts[static_cast<size_t>(std::min(p * 20, 19.0))] += 1;
    EXPECT_LT(chi2(counts, probs, kN), chi2_bound(19)) << alpha;
  }
}

// The sample's gradient is standard_gamma_grad at (alpha, sample), and on average it is the
// derivative of the moments: dE[x]/dalpha = 1, dE[x^2]/dalpha = 2 alpha + 1.
TEST(StandardGamma, GradientIsTheImplicitDerivative) {
  constexpr int64_t kN = 100000;
  for (double alpha : {0.4, 3.0}) {
    Tensor a = leaf({kN}, alpha, alpha);
    Generator g(kCPU, 16);
    const Tensor x = standard_gamma(a, &g);
    autograd::backward(sum(x));
    EXPECT_EQ(to_vector(a.grad()), to_vector(standard_gamma_grad(a.detach(), x.detach())));
    const std::vector<double> dx = to_vector(a.grad());
    EXPECT_LE(std::abs(mean_of(dx) - 1), kZ * std::sqrt(var_of(dx) / kN)) << alpha;
    Tensor b = leaf({kN}, alpha, alpha);
    Generator g2(kCPU, 17);
    const Tensor y = standard_gamma(b, &g2);
    autograd::backward(sum(y * y));
    const std::vector<double> d2 = to_vector(b.grad());
    EXPECT_LE(std::abs(mean_of(d2) - (2 * alpha + 1)), kZ * std::sqrt(var_of(d2) / kN)) << alpha;
  }
}

TEST(StandardGamma, RaisesForBadConcentrations) {
  VK_EXPECT_ERROR(standard_gamma(from_vector({1, -1}, {2})), RuntimeError, "standard_gamma",
                  "non-negative", "-1");
  VK_EXPECT_ERROR(standard_gamma(from_vector({NAN}, {1})), RuntimeError, "standard_gamma");
  VK_EXPECT_ERROR(standard_gamma(ints({1}, {1})), DTypeError, "standard_gamma");
  VK_EXPECT_ERROR(standard_gamma_grad(ints({1}, {1}), ints({1}, {1})), NotImplementedError,
                  "standard_gamma_grad");
  Tensor a = leaf({2}, 1.0, 2.0);
  Tensor x = standard_gamma_grad(a, from_vector({0.5, 1.5}, {2}));
  VK_EXPECT_ERROR(autograd::backward(sum(x)), NotImplementedError, "standard_gamma_grad: alpha");
}

// ---- reproducibility ----

std::vector<std::vector<double>> draw_all(Device d) {
  Generator g(d, 77);
  const Tensor probs = to_device(from_vector({1, 0, 3, 2, 2, 2, 0, 1}, {2, 4}), d);
  const Tensor rates = to_device(from_vector({0.3, 2, 9, 11, 25, 400}, {6}), d);
  const Tensor p = to_device(from_vector({0, 0.25, 0.5, 0.75, 1}, {5}), d);
  return {to_vector(randperm(50, DType::Int64, d, &g)),
          to_vector(multinomial(probs, 3, false, &g)),
          to_vector(multinomial(probs, 9, true, &g)),
          to_vector(poisson(rates, &g)),
          to_vector(standard_gamma(rates, &g)),
          to_vector(bernoulli(p, &g)),
          to_vector(normal(rates, 2.0, &g)),
          to_vector(normal(p, p + 1.0, &g)),
          to_vector(rand({1000}, DType::Float32, d, &g)),
          to_vector(randint(-5, 5, {1000}, DType::Int64, d, &g))};
}

// A uniform in [0, 1) from a Philox draw's two words, 53 bits (as rand and randn make them).
double u53(uint32_t hi, uint32_t lo) {
  return static_cast<double>((uint64_t{hi} << 21) ^ (lo >> 11)) * 0x1.0p-53;
}

// Regression (#18: rand took 12.7 ns per float32, one scalar Philox per element; now 64 counters
// per vectorised call): every element of rand and randint is still its own counter's draw, in
// whole blocks and the tail, with counters crossing the 32-bit boundary of the counter's words.
TEST(Random, EachElementIsItsCountersPhiloxDraw) {
  const uint64_t seed = 1234567, offset = (uint64_t{1} << 32) - 300;
  const int64_t n = 1000;
  Generator g(kCPU, seed);
  g.set_state({seed, offset});
  const std::vector<double> f32 = to_vector(rand({n}, DType::Float32, kCPU, &g));
  const std::vector<double> f64 = to_vector(rand({n}, DType::Float64, kCPU, &g));
  const std::vector<double> ints = to_vector(randint(-5, 5, {n}, DType::Int64, kCPU, &g));
  for (int64_t i = 0; i < n; ++i) {
    uint32_t w[4];
    cpu::philox(seed, offset + static_cast<uint64_t>(i), w);
    ASSERT_EQ(f32[i], static_cast<double>(w[0] >> 8) * 0x1.0p-24) << i;
    cpu::philox(seed, offset + static_cast<uint64_t>(n + i), w);
    ASSERT_EQ(f64[i], u53(w[0], w[1])) << i;
    cpu::philox(seed, offset + static_cast<uint64_t>(2 * n + i), w);
    ASSERT_EQ(ints[i], -5.0 + static_cast<double>(((uint64_t{w[0]} << 32) | w[1]) % 10)) << i;
  }
}

// randn's elements 2q and 2q + 1 are the Box-Muller pair of counter q's four words: r cos(2 pi v)
// and r sin(2 pi v), r = sqrt(-2 log(1 - u)), u and v 53-bit uniforms, to within a few ulp of
// long double libm (vmath's log and cos_sin_2pi, vectorised; the regressions: libm per element
// took 25 ns, 7x torch's time, and a counter per element, its cosine alone, 1.5x); float32 is the
// double rounded. An odd count ends with its last pair's cosine; each call reserves a counter
// per element.
TEST(Random, RandnIsBoxMullerPairsOnItsCountersDraws) {
  const uint64_t seed = 97531, offset = (uint64_t{1} << 32) - 300;
  const int64_t n = 1001;
  Generator g(kCPU, seed);
  g.set_state({seed, offset});
  const std::vector<double> f64 = to_vector(randn({n}, DType::Float64, kCPU, &g));
  const std::vector<double> f32 = to_vector(randn({n}, DType::Float32, kCPU, &g));
  EXPECT_EQ(g.state().offset, offset + 2 * n);
  const long double two_pi = 6.283185307179586476925286766559L;
  for (int64_t i = 0; i < n; ++i) {
    for (int part = 0; part < 2; ++part) {
      uint32_t w[4];
      cpu::philox(seed, offset + static_cast<uint64_t>(part * n + i / 2), w);
      const long double r =
          std::sqrt(-2.0L * std::log(static_cast<long double>(1.0 - u53(w[0], w[1]))));
      // the angle reduced to its quarter exactly (t - n/4), so sin next to t = 1/2 keeps its
      // relative accuracy in the reference too; sin(2 pi t) is cos one quarter back
      const double t = u53(w[2], w[3]);
      const long double n = std::nearbyint(4.0L * t), x = two_pi * (t - n / 4);
      const long double by_quarter[4] = {std::cos(x), -std::sin(x), -std::cos(x), std::sin(x)};
      const int quarter = (static_cast<int>(n) + (i % 2 == 0 ? 0 : 3)) % 4;
      const long double want = r * by_quarter[quarter];
      const double got = part == 0 ? f64[i] : f32[i];
      const double tol = part == 0 ? 8e-16 : 1.2e-7;  // 4 ulp; float32: its own rounding too
      ASSERT_LE(std::abs(static_cast<long double>(got) - want), tol * std::abs(want) + 1e-300)
          << (part == 0 ? "float64 " : "float32 ") << i;
    }
  }
}

// Philox4x32-10 itself: Random123's known answer for a zero counter and key.
TEST(Random, PhiloxKnownAnswer) {
  uint32_t w[4];
  cpu::philox(0, 0, w);
  EXPECT_EQ(w[0], 0x6627e8d5u);
  EXPECT_EQ(w[1], 0xe169c58du);
  EXPECT_EQ(w[2], 0xbc57ac4cu);
  EXPECT_EQ(w[3], 0x9b00dbd8u);
}

// Without replacement, row r's samples are its k smallest keys -log(1 - u_c) / p_c in order, u_c
// the 53-bit uniform of counter offset + r * categories + c (zero weights: key infinity, after
// every positive one, lowest index first). Against scalar Philox and libm's log1p; the
// regression: those per category took 1.6 ms for a row of 50257, one sample (torch's default).
TEST(Multinomial, WithoutReplacementTakesTheSmallestKeysRegression) {
  const uint64_t seed = 4242, offset = (uint64_t{1} << 32) - 1000;
  constexpr int64_t kRows = 3, kCategories = 1000;
  std::vector<double> p(kRows * kCategories);
  for (size_t i = 0; i < p.size(); ++i) p[i] = i % 7 == 3 ? 0.0 : 1.0 + std::sin(0.37 * i);
  for (int64_t k : {int64_t{1}, int64_t{5}, kCategories}) {
    Generator g(kCPU, seed);
    g.set_state({seed, offset});
    const std::vector<double> got =
        to_vector(multinomial(from_vector(p, {kRows, kCategories}), k, false, &g));
    for (int64_t r = 0; r < kRows; ++r) {
      std::vector<std::pair<double, int64_t>> key;
      for (int64_t c = 0; c < kCategories; ++c) {
        uint32_t w[4];
        cpu::philox(seed, offset + static_cast<uint64_t>(r * kCategories + c), w);
        const double pc = p[static_cast<size_t>(r * kCategories + c)];
        key.push_back({pc > 0 ? -std::log1p(-u53(w[0], w[1])) / pc : INFINITY, c});
      }
      std::stable_sort(key.begin(), key.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (int64_t j = 0; j < k; ++j)
        ASSERT_EQ(got[static_cast<size_t>(r * k + j)], static_cast<double>(key[j].second))
            << "k " << k << " row " << r << " sample " << j;
    }
  }
}

// randperm is Fisher-Yates from the top, position i swapping with r_i mod (i + 1), r_i the 64
// bits of counter offset + i: against scalar Philox, for counts on both sides of the 64-counter
// blocks, counters crossing 2^32 (the regression: a scalar Philox per position, 3.4x torch's time;
// the draws now come 64 at a time).
TEST(Randperm, IsFisherYatesOnItsCountersDrawsRegression) {
  const uint64_t seed = 31337, offset = (uint64_t{1} << 32) - 100;
  for (int64_t n : {1, 2, 63, 64, 65, 66, 129, 1000}) {
    Generator g(kCPU, seed);
    g.set_state({seed, offset});
    const std::vector<double> got = to_vector(randperm(n, DType::Int64, kCPU, &g));
    std::vector<double> want(static_cast<size_t>(n));
    std::iota(want.begin(), want.end(), 0.0);
    for (int64_t i = n - 1; i > 0; --i) {
      uint32_t w[4];
      cpu::philox(seed, offset + static_cast<uint64_t>(i), w);
      const uint64_t r = (uint64_t{w[0]} << 32) | w[1];
      std::swap(want[static_cast<size_t>(i)], want[r % static_cast<uint64_t>(i + 1)]);
    }
    EXPECT_EQ(got, want) << n;
  }
}

TEST(RandomThreads, SameNumbersAtAnyThreadCount) {
  const int before = cpu::num_threads();
  cpu::set_num_threads(1);
  Generator g1(kCPU, 5);
  const std::vector<double> a = to_vector(poisson(full({20000}, 7.0), &g1));
  const std::vector<double> b =
      to_vector(multinomial(expand(from_vector({1, 2, 3}, {1, 3}), {3000, 3}), 2, false, &g1));
  const auto all1 = draw_all(kCPU);
  cpu::set_num_threads(4);
  Generator g4(kCPU, 5);
  EXPECT_EQ(to_vector(poisson(full({20000}, 7.0), &g4)), a);
  EXPECT_EQ(
      to_vector(multinomial(expand(from_vector({1, 2, 3}, {1, 3}), {3000, 3}), 2, false, &g4)), b);
  EXPECT_EQ(draw_all(kCPU), all1);
  cpu::set_num_threads(before);
}

class VulkanRandom : public VulkanTest {};

TEST_F(VulkanRandom, SameSeedSameNumbersAsTheCpu) {
  const auto cpu = draw_all(kCPU);
  const auto dev = draw_all(kVulkan);
  ASSERT_EQ(cpu.size(), dev.size());
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_EQ(dev[i], cpu[i]) << "draw " << i;
}

TEST_F(VulkanRandom, ResultsLiveOnTheDevice) {
  Generator g(kVulkan, 1);
  const Tensor p = to_device(from_vector({0.5, 0.5}, {2}), kVulkan);
  EXPECT_EQ(randperm(4, DType::Int64, kVulkan, &g).device(), kVulkan);
  EXPECT_EQ(multinomial(p, 1, false, &g).device(), kVulkan);
  EXPECT_EQ(bernoulli(p, &g).device(), kVulkan);
  EXPECT_EQ(normal(p, 1.0, &g).device(), kVulkan);
  EXPECT_EQ(poisson(p, &g).device(), kVulkan);
  // A non-contiguous input reads back in its logical order.
  const Tensor probs = to_device(from_vector({0, 1, 0, 0, 0, 1, 1, 0, 0}, {3, 3}), kVulkan);
  EXPECT_EQ(host(multinomial(probs, 1, false, &g)), (std::vector<double>{1, 2, 0}));
  EXPECT_EQ(host(multinomial(permute(probs, {1, 0}), 1, false, &g)),
            (std::vector<double>{2, 0, 1}));
  VK_EXPECT_ERROR(multinomial(to_device(from_vector({-1, 1}, {2}), kVulkan), 1), RuntimeError,
                  "multinomial");
}

}  // namespace
}  // namespace vk::test
