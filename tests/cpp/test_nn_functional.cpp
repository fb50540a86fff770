// vk::nn::functional: forward values against hand numbers and naive loops written here, first and
// second derivatives against finite differences (gradcheck / gradgradcheck, float64), and the
// typed errors. Every expectation is computed in this file, never by the code under test.
#include <algorithm>
#include <cmath>
#include <limits>

#include "test_util.h"
#include "vkml/core/allocator.h"
#include "vkml/nn/functional.h"

namespace vk::test {
namespace {

namespace F = vk::nn::functional;
using autograd::backward;
using autograd::gradcheck;
using autograd::gradgradcheck;
using V = std::vector<Tensor>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Both derivative orders of fn at inputs agree with finite differences.
void expect_grads_ok(const autograd::TensorFn& fn, const V& inputs) {
  EXPECT_EQ(gradcheck(fn, inputs), "");
  EXPECT_EQ(gradgradcheck(fn, inputs), "");
}

// ================================ linear and activations ================================

TEST(NnFunctional, LinearMatchesLoop) {
  Tensor x = leaf({2, 3}), w = leaf({4, 3}), b = leaf({4});
  std::vector<double> xv = to_vector(x), wv = to_vector(w), bv = to_vector(b), expected;
  for (int i = 0; i < 2; ++i)
    for (int o = 0; o < 4; ++o) {
      double acc = bv[o];
      for (int k = 0; k < 3; ++k) acc += xv[i * 3 + k] * wv[o * 3 + k];
      expected.push_back(acc);
    }
  Tensor y = F::linear(x, w, b);
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  expect_values(y, expected, 1e-12);
  expect_values(
      F::linear(x, w),
      [&] {  // no bias
        std::vector<double> e = expected;
        for (int i = 0; i < 8; ++i) e[i] -= bv[i % 4];
        return e;
      }(),
      1e-12);
  expect_grads_ok([](const V& in) { return F::linear(in[0], in[1], in[2]); }, {x, w, b});
}

TEST(NnFunctional, LinearOneDimensionalInput) {
  Tensor x = values({1, 2}, {2}), w = values({1, 0, 3, -1, 2, 5}, {3, 2});
  expect_values(F::linear(x, w), {1, 1, 12});
  EXPECT_EQ(F::linear(x, w).shape(), (Shape{3}));
}

TEST(NnFunctional, LinearErrors) {
  Tensor x = leaf({2, 3}), w = leaf({4, 5});
  VK_EXPECT_ERROR(F::linear(x, w), ShapeError, "linear", "[2, 3]", "[4, 5]");
  VK_EXPECT_ERROR(F::linear(x, leaf({3})), ShapeError, "linear", "2-D");
  VK_EXPECT_ERROR(F::linear(x, leaf({4, 3}), leaf({3})), ShapeError, "linear", "bias", "[3]");
  VK_EXPECT_ERROR(F::linear(x, from_vector({1, 2, 3}, {1, 3}, DType::Float32)), DTypeError,
                  "linear", "float32");
}

TEST(NnFunctional, ActivationsMatchFormulas) {
  Tensor x = values({-2.0, -0.5, 0.0, 0.7, 3.0}, {5});
  std::vector<double> silu, sigm, th, relu;
  for (double v : to_vector(x)) {
    sigm.push_back(1.0 / (1.0 + std::exp(-v)));
    silu.push_back(v / (1.0 + std::exp(-v)));
    th.push_back(std::tanh(v));
    relu.push_back(std::max(v, 0.0));
  }
  expect_values(F::silu(x), silu, 1e-12);
  expect_values(F::sigmoid(x), sigm, 1e-12);
  expect_values(F::tanh(x), th, 1e-12);
  expect_values(F::relu(x), relu, 1e-12);
  // gelu(x) = x * Phi(x); Phi(0.7) = 0.758036...
  expect_values(F::gelu(values({0.7}, {1})), {0.7 * 0.5 * (1.0 + std::erf(0.7 / std::sqrt(2.0)))},
                1e-12);
  expect_grads_ok([](const V& in) { return F::silu(in[0]); }, {leaf({5})});
  expect_grads_ok([](const V& in) { return F::gelu(in[0], "tanh"); }, {leaf({5})});
  VK_EXPECT_ERROR(F::gelu(x, "erf"), RuntimeError, "gelu", "erf");
}

TEST(NnFunctional, SoftmaxPassthrough) {
  Tensor x = values({1, 2, 3}, {1, 3});
  double z = std::exp(1) + std::exp(2) + std::exp(3);
  expect_values(F::softmax(x, 1), {std::exp(1) / z, std::exp(2) / z, std::exp(3) / z}, 1e-12);
  expect_values(F::log_softmax(x, -1), {1 - std::log(z), 2 - std::log(z), 3 - std::log(z)}, 1e-12);
}

// ================================ cross entropy and nll ================================

// torch's cross entropy for class-index targets on (N, C) rows, written as plainly as possible:
// per row the nll part -w[t] log p_t and the smoothing part -sum_c w_c log p_c.
struct CeReference {
  std::vector<double> none;
  double sum = 0, mean = 0;
};

CeReference reference_cross_entropy(const std::vector<double>& logits, int64_t n, int64_t c,
                                    const std::vector<int64_t>& target,
                                    const std::vector<double>& weight, int64_t ignore,
                                    double smoothing) {
  double nll_sum = 0, smooth_sum = 0, weight_sum = 0;
  CeReference r;
  for (int64_t i = 0; i < n; ++i) {
    if (target[i] == ignore) {
      r.none.push_back(0.0);
      continue;
    }
    double z = 0;
    for (int64_t j = 0; j < c; ++j) z += std::exp(logits[i * c + j]);
    auto log_p = [&](int64_t j) { return logits[i * c + j] - std::log(z); };
    auto w = [&](int64_t j) { return weight.empty() ? 1.0 : weight[j]; };
    double nll = -w(target[i]) * log_p(target[i]), smooth = 0;
    for (int64_t j = 0; j < c; ++j) smooth -= w(j) * log_p(j);
    r.none.push_back((1 - smoothing) * nll + smoothing / c * smooth);
    nll_sum += nll;
    smooth_sum += smooth;
    weight_sum += w(target[i]);
  }
  r.sum = (1 - smoothing) * nll_sum + smoothing / c * smooth_sum;
  r.mean = (1 - smoothing) * nll_sum / weight_sum + smoothing / c * smooth_sum / weight_sum;
  return r;
}

TEST(NnFunctional, CrossEntropyByHand) {
  // Row [1, 2, 3] with target 2: log(e + e^2 + e^3) - 3 = log(1 + e^-1 + e^-2) = 0.40760596...
  // Row [1, 0, -1] with target 0: log(e + 1 + e^-1) - 1 = the same 0.40760596...; target 1 adds 1.
  Tensor logits = values({1, 2, 3, 1, 0, -1}, {2, 3});
  const double base = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  EXPECT_NEAR(base, 0.4076059644443803, 1e-15);
  expect_values(F::cross_entropy(logits, ints({2, 0}, {2}), Tensor(), -100, "none"), {base, base},
                1e-12);
  expect_values(F::cross_entropy(logits, ints({2, 1}, {2})), {(base + base + 1) / 2}, 1e-12);
  expect_values(F::cross_entropy(logits, ints({2, 1}, {2}), Tensor(), -100, "sum"),
                {base + base + 1}, 1e-12);
  // Ignoring row 1 leaves row 0 alone in the mean.
  expect_values(F::cross_entropy(logits, ints({2, -100}, {2})), {base}, 1e-12);
}

TEST(NnFunctional, CrossEntropyWeightsIgnoreSmoothingMatchReference) {
  std::vector<double> x = {0.5, -1.0, 2.0, 0.3, 0.0, 1.5, -0.7, 0.2, 0.9, 1.1, -2.0, 0.4};
  std::vector<int64_t> t = {2, 0, 7, 1};  // 7 is the ignore_index here
  std::vector<double> w = {0.2, 1.0, 3.0};
  Tensor logits = values(x, {4, 3}), target = ints({2, 0, 7, 1}, {4}),
         weight = values(w, {3}, false);
  for (double smoothing : {0.0, 0.2}) {
    for (bool weighted : {false, true}) {
      CeReference r =
          reference_cross_entropy(x, 4, 3, t, weighted ? w : std::vector<double>{}, 7, smoothing);
      Tensor wt = weighted ? weight : Tensor();
      SCOPED_TRACE(::testing::Message() << "smoothing " << smoothing << " weighted " << weighted);
      expect_values(F::cross_entropy(logits, target, wt, 7, "none", smoothing), r.none, 1e-12);
      expect_values(F::cross_entropy(logits, target, wt, 7, "sum", smoothing), {r.sum}, 1e-12);
      expect_values(F::cross_entropy(logits, target, wt, 7, "mean", smoothing), {r.mean}, 1e-12);
    }
  }
}

TEST(NnFunctional, CrossEntropySpatialTargets) {
  // (N, C, d) logits with (N, d) targets: the same as moving C last and flattening.
  Tensor logits = leaf({2, 3, 4});
  std::vector<double> x = to_vector(logits), rows;
  std::vector<int64_t> t = {0, 1, 2, 1, 2, 2, -100, 0};
  for (int n = 0; n < 2; ++n)
    for (int d = 0; d < 4; ++d)
      for (int c = 0; c < 3; ++c) rows.push_back(x[n * 12 + c * 4 + d]);
  std::vector<double> w = {0.5, 2.0, 1.0};
  CeReference r = reference_cross_entropy(rows, 8, 3, t, w, -100, 0.1);
  Tensor target = ints({0, 1, 2, 1, 2, 2, -100, 0}, {2, 4}), weight = values(w, {3}, false);
  Tensor none = F::cross_entropy(logits, target, weight, -100, "none", 0.1);
  EXPECT_EQ(none.shape(), (Shape{2, 4}));
  expect_values(none, r.none, 1e-12);
  expect_values(F::cross_entropy(logits, target, weight, -100, "mean", 0.1), {r.mean}, 1e-12);
  expect_grads_ok(
      [&](const V& in) { return F::cross_entropy(in[0], target, weight, -100, "mean", 0.1); },
      {logits});
}

TEST(NnFunctional, CrossEntropyUnbatched) {
  Tensor logits = values({1, 2, 3}, {3});
  Tensor loss = F::cross_entropy(logits, ints({2}, {}), Tensor(), -100, "none");
  EXPECT_EQ(loss.shape(), Shape{});
  expect_values(loss, {std::log(1 + std::exp(-1.0) + std::exp(-2.0))}, 1e-12);
}

TEST(NnFunctional, CrossEntropyAllIgnoredMeanIsNaN) {  // 0 / 0, as torch
  Tensor loss = F::cross_entropy(leaf({2, 3}), ints({-100, -100}, {2}));
  EXPECT_TRUE(std::isnan(loss.item()));
}

TEST(NnFunctional, CrossEntropyGradients) {
  Tensor logits = leaf({4, 3}, -2, 2);
  Tensor target = ints({2, 0, 7, 1}, {4}), weight = values({0.2, 1.0, 3.0}, {3}, false);
  for (const char* reduction : {"mean", "sum", "none"}) {
    SCOPED_TRACE(reduction);
    expect_grads_ok(
        [&](const V& in) { return F::cross_entropy(in[0], target, weight, 7, reduction, 0.3); },
        {logits});
  }
  // d(mean CE)/dlogits = (softmax - onehot) / N without weights: row 0 by hand.
  Tensor x = values({1, 2, 3}, {1, 3});
  backward(F::cross_entropy(x, ints({2}, {1})));
  double z = std::exp(1) + std::exp(2) + std::exp(3);
  expect_values(x.grad(), {std::exp(1) / z, std::exp(2) / z, std::exp(3) / z - 1}, 1e-12);
}

TEST(NnFunctional, CrossEntropyProbabilityTargets) {
  std::vector<double> x = {0.5, -1.0, 2.0, 0.3, 0.0, 1.5};
  std::vector<double> y = {0.2, 0.3, 0.5, 1.0, 0.0, 0.0};
  std::vector<double> w = {0.2, 1.0, 3.0};
  const double eps = 0.3;
  // loss_i = -sum_c w_c y'_c log p_c with y' = (1 - eps) y + eps / C; mean divides by N.
  std::vector<double> none;
  for (int i = 0; i < 2; ++i) {
    double z = 0, loss = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(x[i * 3 + c]);
    for (int c = 0; c < 3; ++c)
      loss -= w[c] * ((1 - eps) * y[i * 3 + c] + eps / 3) * (x[i * 3 + c] - std::log(z));
    none.push_back(loss);
  }
  Tensor logits = values(x, {2, 3}), target = values(y, {2, 3}, false);
  Tensor weight = values(w, {3}, false);
  expect_values(F::cross_entropy(logits, target, weight, -100, "none", eps), none, 1e-12);
  expect_values(F::cross_entropy(logits, target, weight, -100, "sum", eps), {none[0] + none[1]},
                1e-12);
  expect_values(F::cross_entropy(logits, target, weight, -100, "mean", eps),
                {(none[0] + none[1]) / 2}, 1e-12);
  expect_grads_ok(
      [&](const V& in) { return F::cross_entropy(in[0], in[1], weight, -100, "mean", eps); },
      {leaf({2, 3}), leaf({2, 3}, 0, 1)});
}

TEST(NnFunctional, CrossEntropyErrors) {
  Tensor logits = leaf({2, 3});
  VK_EXPECT_ERROR(F::cross_entropy(logits, ints({0, 3}, {2})), IndexError, "cross_entropy",
                  "class 3", "3 classes");
  VK_EXPECT_ERROR(F::cross_entropy(logits, ints({0, -1}, {2})), IndexError, "cross_entropy", "-1");
  VK_EXPECT_ERROR(F::cross_entropy(logits, ints({0, 1, 2}, {3})), ShapeError, "cross_entropy",
                  "[3]", "[2, 3]");
  VK_EXPECT_ERROR(F::cross_entropy(logits, leaf({2, 4}, 0, 1, false)), ShapeError, "cross_entropy",
                  "[2, 4]");
  VK_EXPECT_ERROR(F::cross_entropy(logits, ints({0, 1}, {2}), values({1, 1}, {2}, false)),
                  ShapeError, "cross_entropy", "weight", "[2]");
  VK_EXPECT_ERROR(F::cross_entropy(logits, from_vector({1, 0}, {2}, DType::Bool)), DTypeError,
                  "cross_entropy", "bool");
  VK_EXPECT_ERROR(F::cross_entropy(ints({1, 2}, {1, 2}), ints({0}, {1})), DTypeError,
                  "cross_entropy", "int64");
  VK_EXPECT_ERROR(F::cross_entropy(logits, ints({0, 1}, {2}), Tensor(), -100, "average"),
                  RuntimeError, "cross_entropy", "average");
  VK_EXPECT_ERROR(F::cross_entropy(logits, ints({0, 1}, {2}), Tensor(), -100, "mean", 1.5),
                  RuntimeError, "label_smoothing");
}

TEST(NnFunctional, NllLossMatchesReference) {
  // nll on log-probabilities is cross entropy without the log_softmax and without smoothing.
  std::vector<double> x = {0.5, -1.0, 2.0, 0.3, 0.0, 1.5, -0.7, 0.2, 0.9};
  std::vector<double> w = {0.2, 1.0, 3.0};
  std::vector<double> none;
  double sum = 0, weight_sum = 0;
  std::vector<int64_t> t = {2, -100, 1};
  for (int i = 0; i < 3; ++i) {
    double loss = t[i] == -100 ? 0.0 : -w[t[i]] * x[i * 3 + t[i]];
    none.push_back(loss);
    sum += loss;
    if (t[i] != -100) weight_sum += w[t[i]];
  }
  Tensor log_probs = values(x, {3, 3}), target = ints({2, -100, 1}, {3});
  Tensor weight = values(w, {3}, false);
  expect_values(F::nll_loss(log_probs, target, weight, -100, "none"), none, 1e-12);
  expect_values(F::nll_loss(log_probs, target, weight, -100, "sum"), {sum}, 1e-12);
  expect_values(F::nll_loss(log_probs, target, weight), {sum / weight_sum}, 1e-12);
  expect_values(F::nll_loss(log_probs, target), {(-x[2] - x[7]) / 2}, 1e-12);
  expect_grads_ok([&](const V& in) { return F::nll_loss(in[0], target, weight); }, {leaf({3, 3})});
  VK_EXPECT_ERROR(F::nll_loss(log_probs, ints({0, 1, 5}, {3})), IndexError, "nll_loss", "5");
  VK_EXPECT_ERROR(F::nll_loss(log_probs, values({0, 1, 2}, {3}, false)), DTypeError, "nll_loss",
                  "float64");
  VK_EXPECT_ERROR(F::nll_loss(log_probs, ints({0, 1}, {2})), ShapeError, "nll_loss", "[2]",
                  "[3, 3]");
}

// ================================ regression losses ================================

TEST(NnFunctional, MseAndL1Loss) {
  Tensor a = values({1.0, -2.0, 0.5, 3.0}, {2, 2}), b = values({0.5, 1.0, 0.5, -1.0}, {2, 2});
  // differences 0.5, -3, 0, 4
  expect_values(F::mse_loss(a, b, "none"), {0.25, 9, 0, 16});
  expect_values(F::mse_loss(a, b, "sum"), {25.25});
  expect_values(F::mse_loss(a, b), {25.25 / 4});
  expect_values(F::l1_loss(a, b, "none"), {0.5, 3, 0, 4});
  expect_values(F::l1_loss(a, b), {7.5 / 4});
  expect_values(F::mse_loss(a, values({1}, {1}, false), "sum"), {0 + 9 + 0.25 + 4});  // broadcasts
  expect_grads_ok([](const V& in) { return F::mse_loss(in[0], in[1]); },
                  {leaf({2, 3}), leaf({2, 3})});
  // l1 away from ties: inputs in [1, 2) and targets in [-2, -1) never meet.
  expect_grads_ok([](const V& in) { return F::l1_loss(in[0], in[1], "sum"); },
                  {leaf({2, 3}, 1, 2), leaf({2, 3}, -2, -1)});
  VK_EXPECT_ERROR(F::mse_loss(a, leaf({3})), ShapeError, "mse_loss", "[2, 2]", "[3]");
  VK_EXPECT_ERROR(F::l1_loss(a, b, "mean "), RuntimeError, "l1_loss");
  VK_EXPECT_ERROR(F::mse_loss(a, from_vector({1, 2, 3, 4}, {2, 2}, DType::Float32)), DTypeError,
                  "mse_loss", "float32");
}

// ================================ binary cross entropy ================================

TEST(NnFunctional, BinaryCrossEntropyMatchesFormula) {
  std::vector<double> p = {0.1, 0.9, 0.5, 0.25}, y = {0.0, 1.0, 0.3, 1.0}, w = {1, 2, 0.5, 3};
  std::vector<double> none;
  for (int i = 0; i < 4; ++i)
    none.push_back(-w[i] * (y[i] * std::log(p[i]) + (1 - y[i]) * std::log(1 - p[i])));
  Tensor pt = values(p, {2, 2}), yt = values(y, {2, 2}, false), wt = values(w, {2, 2}, false);
  expect_values(F::binary_cross_entropy(pt, yt, wt, "none"), none, 1e-12);
  expect_values(F::binary_cross_entropy(pt, yt, wt), {(none[0] + none[1] + none[2] + none[3]) / 4},
                1e-12);
  // -log(0.1) = 2.302585...: the first element without weight
  expect_values(F::binary_cross_entropy(values({0.1}, {1}), values({0}, {1}, false)),
                {-std::log(0.9)}, 1e-12);
  expect_grads_ok([&](const V& in) { return F::binary_cross_entropy(in[0], in[1], wt); },
                  {leaf({2, 2}, 0.1, 0.9), leaf({2, 2}, 0, 1)});
}

TEST(NnFunctional, BinaryCrossEntropyClampsLogAtMinus100) {
  // p = 0 with y = 1 and p = 1 with y = 0: each log is clamped at -100, so the loss is 100 and
  // the gradient is finite (zero, as the clamp is flat there).
  Tensor p = values({0.0, 1.0, 0.5}, {3}), y = values({1.0, 0.0, 1.0}, {3}, false);
  Tensor loss = F::binary_cross_entropy(p, y, Tensor(), "none");
  expect_values(loss, {100, 100, std::log(2.0)}, 1e-12);
  backward(sum(loss));
  expect_values(p.grad(), {0, 0, -2}, 1e-12);  // d(-log p)/dp = -1/p at p = 0.5
  VK_EXPECT_ERROR(F::binary_cross_entropy(values({1.5, 0.5}, {2}), values({1, 0}, {2}, false)),
                  RuntimeError, "binary_cross_entropy", "[0, 1]", "1.5");
  VK_EXPECT_ERROR(F::binary_cross_entropy(p, values({1, 0}, {2}, false)), ShapeError,
                  "binary_cross_entropy", "[2]", "[3]");
}

TEST(NnFunctional, BinaryCrossEntropyWithLogitsMatchesFormula) {
  std::vector<double> x = {0.1, -3, 0.8, -0.4, 0, 2}, y = {0, 1, 0.3, 1, 0, 0.5};
  std::vector<double> w = {1, 2, 0.5, 3, 1, 1}, pw = {2, 0.5, 3};
  // -w [pw y log s(x) + (1 - y) log(1 - s(x))], pw along the last dim
  std::vector<double> none;
  for (int i = 0; i < 6; ++i) {
    double s = 1 / (1 + std::exp(-x[i]));
    none.push_back(-w[i] * (pw[i % 3] * y[i] * std::log(s) + (1 - y[i]) * std::log(1 - s)));
  }
  Tensor xt = values(x, {2, 3}), yt = values(y, {2, 3}, false);
  Tensor wt = values(w, {2, 3}, false), pwt = values(pw, {3}, false);
  expect_values(F::binary_cross_entropy_with_logits(xt, yt, wt, pwt, "none"), none, 1e-12);
  double total = 0;
  for (double v : none) total += v;
  expect_values(F::binary_cross_entropy_with_logits(xt, yt, wt, pwt), {total / 6}, 1e-12);
  expect_grads_ok(
      [&](const V& in) { return F::binary_cross_entropy_with_logits(in[0], in[1], wt, pwt); },
      {leaf({2, 3}, -3, 3), leaf({2, 3}, 0, 1)});
}

TEST(NnFunctional, BinaryCrossEntropyWithLogitsIsStable) {
  // Huge logits: the naive log(sigmoid) form gives inf; the loss is |x| on the wrong side.
  Tensor x = values({1000, -1000, 0}, {3}), y = values({0, 1, 1}, {3}, false);
  Tensor loss = F::binary_cross_entropy_with_logits(x, y, Tensor(), Tensor(), "none");
  expect_values(loss, {1000, 1000, std::log(2.0)}, 1e-9);
  backward(sum(loss));
  // d/dx = sigmoid(x) - y: 1, -1, and -0.5 exactly at x = 0.
  expect_values(x.grad(), {1, -1, -0.5}, 1e-12);
  VK_EXPECT_ERROR(F::binary_cross_entropy_with_logits(x, values({1}, {1}, false)), ShapeError,
                  "binary_cross_entropy_with_logits", "[1]");
  VK_EXPECT_ERROR(F::binary_cross_entropy_with_logits(x, y, Tensor(), values({1, 2}, {2}, false)),
                  ShapeError, "pos_weight", "[2]");
}

// ================================ normalisation ================================

TEST(NnFunctional, LayerNormMatchesLoop) {
  Tensor x = leaf({2, 3, 4}), w = leaf({3, 4}), b = leaf({3, 4});
  std::vector<double> xv = to_vector(x), wv = to_vector(w), bv = to_vector(b), expected;
  const double eps = 1e-5;
  for (int row = 0; row < 2; ++row) {
    double mean = 0, var = 0;
    for (int i = 0; i < 12; ++i) mean += xv[row * 12 + i] / 12;
    for (int i = 0; i < 12; ++i) var += (xv[row * 12 + i] - mean) * (xv[row * 12 + i] - mean) / 12;
    for (int i = 0; i < 12; ++i)
      expected.push_back((xv[row * 12 + i] - mean) / std::sqrt(var + eps) * wv[i] + bv[i]);
  }
  expect_values(F::layer_norm(x, {3, 4}, w, b), expected, 1e-12);
  expect_grads_ok([](const V& in) { return F::layer_norm(in[0], {4}, in[1], in[2]); },
                  {leaf({2, 3, 4}), leaf({4}), leaf({4})});
  expect_grads_ok([](const V& in) { return F::layer_norm(in[0], {3}); }, {leaf({2, 3})});
  VK_EXPECT_ERROR(F::layer_norm(x, {3}), ShapeError, "layer_norm", "[2, 3, 4]", "[3]");
  VK_EXPECT_ERROR(F::layer_norm(x, {4}, leaf({3})), ShapeError, "layer_norm", "weight", "[3]");
}

// Batch statistics per channel of (N, C, H*W) data, the naive way.
struct ChannelStats {
  std::vector<double> mean, biased_var, unbiased_var;
};

ChannelStats channel_stats(const std::vector<double>& x, int n, int c, int hw) {
  ChannelStats s;
  const int count = n * hw;
  for (int ch = 0; ch < c; ++ch) {
    double mean = 0, ss = 0;
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < hw; ++k) mean += x[(i * c + ch) * hw + k] / count;
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < hw; ++k) {
        double d = x[(i * c + ch) * hw + k] - mean;
        ss += d * d;
      }
    s.mean.push_back(mean);
    s.biased_var.push_back(ss / count);
    s.unbiased_var.push_back(ss / (count - 1));
  }
  return s;
}

TEST(NnFunctional, BatchNormTrainingMatchesLoopAndUpdatesRunningStats) {
  const int n = 3, c = 2, hw = 4;
  Tensor x = leaf({n, c, 2, 2}), w = values({1.5, -0.5}, {2}), b = values({0.1, 0.2}, {2});
  Tensor running_mean = values({0.5, -1.0}, {2}, false),
         running_var = values({2.0, 0.5}, {2}, false);
  std::vector<double> xv = to_vector(x), expected(xv.size());
  ChannelStats s = channel_stats(xv, n, c, hw);
  const double eps = 1e-5, momentum = 0.1;
  for (int i = 0; i < n; ++i)
    for (int ch = 0; ch < c; ++ch)
      for (int k = 0; k < hw; ++k) {
        int at = (i * c + ch) * hw + k;
        expected[at] =
            (xv[at] - s.mean[ch]) / std::sqrt(s.biased_var[ch] + eps) * to_vector(w)[ch] +
            to_vector(b)[ch];
      }
  const uint32_t version = running_mean.version();
  Tensor y = F::batch_norm(x, running_mean, running_var, w, b, true, momentum, eps);
  expect_values(y, expected, 1e-12);
  // running = 0.9 * running + 0.1 * batch statistic, with the UNBIASED variance.
  expect_values(running_mean, {0.9 * 0.5 + 0.1 * s.mean[0], 0.9 * -1.0 + 0.1 * s.mean[1]}, 1e-12);
  expect_values(running_var,
                {0.9 * 2.0 + 0.1 * s.unbiased_var[0], 0.9 * 0.5 + 0.1 * s.unbiased_var[1]}, 1e-12);
  // Bookkeeping only: written in place, never on the tape.
  EXPECT_GT(running_mean.version(), version);
  EXPECT_FALSE(running_mean.requires_grad());
  EXPECT_TRUE(running_mean.is_leaf());
  EXPECT_TRUE(y.requires_grad());
}

TEST(NnFunctional, BatchNormTrainingGradients) {
  Tensor running_mean = zeros({3}, DType::Float64), running_var = ones({3}, DType::Float64);
  auto fn = [&](const V& in) {
    return F::batch_norm(in[0], running_mean, running_var, in[1], in[2], true);
  };
  expect_grads_ok(fn, {leaf({4, 3}), leaf({3}), leaf({3})});
  expect_grads_ok(
      [](const V& in) { return F::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); },
      {leaf({2, 3, 2, 2}), leaf({3}), leaf({3})});
}

TEST(NnFunctional, BatchNormEvalUsesRunningStats) {
  Tensor x = values({1, 2, 3, 4, 5, 6}, {3, 2}), rm = values({1, 2}, {2}, false);
  Tensor rv = values({4, 9}, {2}, false), w = values({2, 1}, {2}), b = values({0, 1}, {2});
  const double eps = 1e-5;
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i) {
    expected.push_back((1 + 2 * i - 1) / std::sqrt(4 + eps) * 2 + 0);
    expected.push_back((2 + 2 * i - 2) / std::sqrt(9 + eps) * 1 + 1);
  }
  expect_values(F::batch_norm(x, rm, rv, w, b, false), expected, 1e-12);
  expect_values(rm, {1, 2});  // eval leaves the running stats alone
  expect_grads_ok([&](const V& in) { return F::batch_norm(in[0], rm, rv, in[1], in[2], false); },
                  {leaf({3, 2}), leaf({2}), leaf({2})});
}

TEST(NnFunctional, BatchNormErrors) {
  Tensor rm = zeros({3}, DType::Float64), rv = ones({3}, DType::Float64);
  VK_EXPECT_ERROR(F::batch_norm(leaf({1, 3}), rm, rv, Tensor(), Tensor(), true), ShapeError,
                  "batch_norm", "more than 1 value per channel");
  VK_EXPECT_ERROR(F::batch_norm(leaf({4, 3}), Tensor(), Tensor()), RuntimeError, "batch_norm",
                  "evaluation mode");
  VK_EXPECT_ERROR(F::batch_norm(leaf({4, 2}), rm, rv), ShapeError, "batch_norm", "running_mean",
                  "[3]", "[4, 2]");
  VK_EXPECT_ERROR(F::batch_norm(leaf({4}), rm, rv), ShapeError, "batch_norm", "[4]");
}

// ================================ dropout ================================

TEST(NnFunctional, DropoutIdentityCases) {
  Tensor x = leaf({10});
  EXPECT_TRUE(F::dropout(x, 0.0, true).same(x));
  EXPECT_TRUE(F::dropout(x, 0.7, false).same(x));
  expect_values(F::dropout(x, 1.0, true), std::vector<double>(10, 0.0));
  VK_EXPECT_ERROR(F::dropout(x, 1.5), RuntimeError, "dropout", "1.5");
  VK_EXPECT_ERROR(F::dropout(ints({1}, {1}), 0.5), DTypeError, "dropout", "int64");
}

TEST(NnFunctional, DropoutMaskIsReproducibleAndScaled) {
  Tensor x = leaf({2000}, 1, 2);
  manual_seed(1234);
  std::vector<double> first = to_vector(F::dropout(x, 0.3, true));
  manual_seed(1234);
  std::vector<double> again = to_vector(F::dropout(x, 0.3, true));
  std::vector<double> next = to_vector(F::dropout(x, 0.3, true));
  EXPECT_EQ(first, again);
  EXPECT_NE(first, next);  // the RNG moved on
  std::vector<double> xv = to_vector(x);
  int dropped = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (first[i] == 0.0) {
      ++dropped;
      continue;
    }
    EXPECT_NEAR(first[i], xv[i] / 0.7, 1e-12) << i;
  }
  EXPECT_GT(dropped, 500);  // 600 expected; 500..700 is over 4 standard deviations either side
  EXPECT_LT(dropped, 700);
}

TEST(NnFunctional, DropoutGradientIsTheMaskEvenUnderCheckpoint) {
  Tensor x = leaf({256}, 1, 2);
  manual_seed(99);
  Tensor y = autograd::checkpoint([](const V& in) { return F::dropout(in[0], 0.5, true); }, {x});
  F::dropout(x, 0.5, true);  // moves the RNG on: the recomputation must restore its own state
  backward(sum(y));
  std::vector<double> yv = to_vector(y), xv = to_vector(x), g = to_vector(x.grad());
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(g[i], yv[i] / xv[i], 1e-12) << i;
}

// ================================ embeddings and encodings ================================

TEST(NnFunctional, EmbeddingGathersRowsAndAccumulatesRepeats) {
  Tensor weight = values({0, 1, 10, 11, 20, 21, 30, 31, 40, 41}, {5, 2});
  Tensor idx = ints({1, 3, 1, 1}, {2, 2});
  Tensor out = F::embedding(idx, weight);
  EXPECT_EQ(out.shape(), (Shape{2, 2, 2}));
  expect_values(out, {10, 11, 30, 31, 10, 11, 10, 11});
  backward(sum(out * values({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}, false)));
  // row 1 is used at positions 0, 2, 3: (1+5+7, 2+6+8); row 3 at position 1.
  expect_values(weight.grad(), {0, 0, 13, 16, 0, 0, 3, 4, 0, 0});
  expect_grads_ok([&](const V& in) { return F::embedding(idx, in[0]); }, {leaf({5, 2})});
}

TEST(NnFunctional, EmbeddingPaddingIdxGetsNoGradient) {
  Tensor weight = values({0, 0, 10, 11, 20, 21}, {3, 2});
  Tensor out = F::embedding(ints({0, 2, 0, 1}, {4}), weight, 0);
  expect_values(out, {0, 0, 20, 21, 0, 0, 10, 11});
  backward(sum(out));
  expect_values(weight.grad(), {0, 0, 1, 1, 1, 1});
}

TEST(NnFunctional, EmbeddingErrors) {
  Tensor weight = leaf({5, 2});
  VK_EXPECT_ERROR(F::embedding(ints({0, 5}, {2}), weight), IndexError, "embedding", "index 5",
                  "5 embeddings");
  VK_EXPECT_ERROR(F::embedding(ints({-1}, {1}), weight), IndexError, "embedding", "-1");
  VK_EXPECT_ERROR(F::embedding(values({0}, {1}, false), weight), DTypeError, "embedding",
                  "float64");
  VK_EXPECT_ERROR(F::embedding(ints({0}, {1}), leaf({5})), ShapeError, "embedding", "[5]");
}

TEST(NnFunctional, OneHot) {
  Tensor hot = F::one_hot(ints({2, 0, 1, 2}, {2, 2}), 4);
  EXPECT_EQ(hot.dtype(), DType::Int64);
  EXPECT_EQ(hot.shape(), (Shape{2, 2, 4}));
  expect_values(hot, {0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  EXPECT_EQ(F::one_hot(ints({0, 3}, {2})).shape(), (Shape{2, 4}));  // num_classes inferred
  // torch's errors (RuntimeError), raised by the check that runs on the device (hostwait)
  VK_EXPECT_ERROR(F::one_hot(ints({0, 4}, {2}), 4), RuntimeError, "one_hot",
                  "Class values must be smaller than num_classes (4)");
  VK_EXPECT_ERROR(F::one_hot(ints({-1}, {1}), 4), RuntimeError, "one_hot",
                  "Class values must be non-negative");
  VK_EXPECT_ERROR(F::one_hot(ints({-1}, {1})), RuntimeError, "one_hot", "non-negative");
  VK_EXPECT_ERROR(F::one_hot(values({1}, {1}, false), 4), DTypeError, "one_hot");
}

TEST(NnFunctional, PadPassthrough) {
  Tensor x = values({1, 2, 3, 4}, {2, 2});
  expect_values(F::pad(x, {1, 0}, "constant", 9), {9, 1, 2, 9, 3, 4});
  expect_values(F::pad(x, {1, 1}, "reflect"), {2, 1, 2, 1, 4, 3, 4, 3});  // as torch's
  VK_EXPECT_ERROR(F::pad(x, {1, 1}, "bogus"), NotImplementedError, "pad", "bogus");
}

// ================================ attention ================================

// softmax(q k^T * scale + bias) v for one (L, E) x (S, E) x (S, Ev) head, by loops; `allowed`
// (L * S, empty = all) masks with -inf, `bias` (L * S, empty = none) is added.
std::vector<double> reference_attention(const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, int L, int S, int E, int Ev,
                                        double scale, const std::vector<bool>& allowed,
                                        const std::vector<double>& bias) {
  std::vector<double> out;
  for (int i = 0; i < L; ++i) {
    std::vector<double> score(S);
    double top = -kInf;
    for (int j = 0; j < S; ++j) {
      double dot = 0;
      for (int e = 0; e < E; ++e) dot += q[i * E + e] * k[j * E + e];
      score[j] = dot * scale + (bias.empty() ? 0.0 : bias[i * S + j]);
      if (!allowed.empty() && !allowed[i * S + j]) score[j] = -kInf;
      top = std::max(top, score[j]);
    }
    double z = 0;
    for (int j = 0; j < S; ++j) z += std::exp(score[j] - top);
    for (int f = 0; f < Ev; ++f) {
      double acc = 0;
      for (int j = 0; j < S; ++j) acc += std::exp(score[j] - top) / z * v[j * Ev + f];
      out.push_back(acc);
    }
  }
  return out;
}

TEST(NnFunctional, AttentionCausalMatchesLoop) {
  const int L = 3, S = 4, E = 4, Ev = 2;
  Tensor q = leaf({1, L, E}), k = leaf({1, S, E}), v = leaf({1, S, Ev});
  std::vector<bool> causal;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < S; ++j) causal.push_back(j <= i);  // top-left aligned, as torch's tril
  expect_values(
      F::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true),
      reference_attention(to_vector(q), to_vector(k), to_vector(v), L, S, E, Ev, 0.5, causal, {}),
      1e-12);
  // The same mask given as a bool tensor, and an explicit scale.
  std::vector<double> mask_values(causal.begin(), causal.end());
  Tensor mask = cast(from_vector(mask_values, {L, S}, DType::Int64), DType::Bool);
  expect_values(
      F::scaled_dot_product_attention(q, k, v, mask, 0.0, false, 0.3),
      reference_attention(to_vector(q), to_vector(k), to_vector(v), L, S, E, Ev, 0.3, causal, {}),
      1e-12);
  expect_grads_ok(
      [](const V& in) {
        return F::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0.0, true);
      },
      {q, k, v});
}

// The CPU kernel runs a causal row's exp on whole vectors past its last visible key (softmax.cpp
// softmax_row_scaled) and discards those values: a key no query sees may be huge or NaN. With S - 1
// queries the last key is never seen; every row must match the loop, which masks before the exp.
TEST(NnFunctional, AttentionCausalIgnoresKeysPastTheMask) {
  for (DType dtype : {DType::Float64, DType::Float32})
    for (const double bad : {1e30, std::nan("")})
      for (const int S : {4, 13, 64}) {
        const int L = S - 1, E = 3, Ev = 2;
        Tensor q = leaf({1, L, E}, -1, 1, false), v = leaf({1, S, Ev}, -1, 1, false);
        std::vector<double> kv = to_vector(leaf({1, S, E}, -1, 1, false));
        for (int e = 0; e < E; ++e) kv[(S - 1) * E + e] = bad;
        Tensor k = from_vector(kv, {1, S, E}, DType::Float64);
        std::vector<bool> causal;
        for (int i = 0; i < L; ++i)
          for (int j = 0; j < S; ++j) causal.push_back(j <= i);
        const std::vector<double> want = reference_attention(to_vector(q), kv, to_vector(v), L, S,
                                                             E, Ev, 1 / std::sqrt(3.0), causal, {});
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " S=" + std::to_string(S));
        expect_values(F::scaled_dot_product_attention(cast(q, dtype), cast(k, dtype),
                                                      cast(v, dtype), Tensor(), 0.0, true),
                      want, dtype == DType::Float32 ? 1e-5 : 1e-12);
      }
}

TEST(NnFunctional, AttentionFloatMaskMatchesLoop) {
  const int L = 2, S = 3, E = 2, Ev = 3;
  Tensor q = leaf({2, L, E}), k = leaf({2, S, E}), v = leaf({2, S, Ev}), bias = leaf({L, S});
  std::vector<double> qv = to_vector(q), kv = to_vector(k), vv = to_vector(v), expected;
  for (int head = 0; head < 2; ++head) {
    auto part = [head](const std::vector<double>& all, int size) {
      return std::vector<double>(all.begin() + head * size, all.begin() + (head + 1) * size);
    };
    std::vector<double> one =
        reference_attention(part(qv, L * E), part(kv, S * E), part(vv, S * Ev), L, S, E, Ev,
                            1 / std::sqrt(2.0), {}, to_vector(bias));
    expected.insert(expected.end(), one.begin(), one.end());
  }
  expect_values(F::scaled_dot_product_attention(q, k, v, bias), expected, 1e-12);
  expect_grads_ok(
      [](const V& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); },
      {q, k, v, bias});
}

TEST(NnFunctional, AttentionErrors) {
  Tensor q = leaf({2, 3}), k = leaf({4, 3}), v = leaf({4, 5});
  VK_EXPECT_ERROR(F::scaled_dot_product_attention(q, leaf({4, 2}), v), ShapeError,
                  "scaled_dot_product_attention", "[2, 3]", "[4, 2]");
  VK_EXPECT_ERROR(F::scaled_dot_product_attention(q, k, leaf({3, 5})), ShapeError,
                  "scaled_dot_product_attention", "[3, 5]");
  VK_EXPECT_ERROR(F::scaled_dot_product_attention(q, k, v, leaf({2, 4}), 0.0, true), RuntimeError,
                  "scaled_dot_product_attention", "is_causal");
  VK_EXPECT_ERROR(F::scaled_dot_product_attention(q, k, v, leaf({3, 4})), ShapeError,
                  "scaled_dot_product_attention", "[3, 4]");
}

// The fused attention op keeps its inputs for the backward, not the (Tq, Tk) scores or weights:
// recording a causal sdpa over 1024 positions in float64 adds its output (64 KB) to the memory in
// use, where the unfused ops kept 8 MB of weights.
TEST(NnFunctional, AttentionGraphKeepsNoScores) {
  const int64_t T = 1024, E = 8;
  Tensor q = leaf({1, T, E}), k = leaf({1, T, E}), v = leaf({1, T, E});
  const size_t before = allocator_stats().in_use_bytes;
  Tensor y = F::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true);
  const size_t kept = allocator_stats().in_use_bytes - before;
  EXPECT_EQ(y.op()->name, "attention");
  EXPECT_LT(kept, size_t{T * T * sizeof(double) / 16}) << kept << " bytes kept";
  autograd::backward(sum(y));  // and its gradient runs: each of q, k, v gets one
  EXPECT_TRUE(q.grad().defined() && k.grad().defined() && v.grad().defined());
}

// ================================ convolution and pooling ================================

TEST(NnFunctional, Conv2dArgumentsMatchLoop) {
  // stride 2, padding 1, dilation 1 on (1, 2, 4, 5) with a (3, 2, 3, 3) kernel and bias.
  const int C = 2, H = 4, W = 5, O = 3, K = 3, stride = 2, padding = 1;
  Tensor x = leaf({1, C, H, W}), w = leaf({O, C, K, K}), b = leaf({O});
  const int OH = (H + 2 * padding - K) / stride + 1, OW = (W + 2 * padding - K) / stride + 1;
  std::vector<double> xv = to_vector(x), wv = to_vector(w), bv = to_vector(b), expected;
  for (int o = 0; o < O; ++o)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow) {
        double acc = bv[o];
        for (int c = 0; c < C; ++c)
          for (int i = 0; i < K; ++i)
            for (int j = 0; j < K; ++j) {
              int h = oh * stride - padding + i, ww = ow * stride - padding + j;
              if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
              acc += xv[(c * H + h) * W + ww] * wv[((o * C + c) * K + i) * K + j];
            }
        expected.push_back(acc);
      }
  Tensor y = F::conv2d(x, w, b, {stride, stride}, {padding, padding});
  EXPECT_EQ(y.shape(), (Shape{1, O, OH, OW}));
  expect_values(y, expected, 1e-12);
  Tensor unbatched = F::conv2d(reshape(x, {C, H, W}), w, b, {2, 2}, {1, 1});
  EXPECT_EQ(unbatched.shape(), (Shape{O, OH, OW}));
  expect_values(unbatched, expected, 1e-12);
  VK_EXPECT_ERROR(F::conv2d(leaf({4, 4}), w), ShapeError, "conv2d", "[4, 4]");
}

TEST(NnFunctional, PoolingStrideDefaultsToKernel) {
  Tensor x = values({1, 5, 2, 0, 3, 4, 8, 1, 7, 6, 0, 2, 9, 1, 3, 4}, {1, 1, 4, 4});
  // 2x2 windows with stride 2 (the default): maxima 5, 8 / 9, 4; means 3.25, 2.75 / 5.75, 2.25
  expect_values(F::max_pool2d(x, {2, 2}), {5, 8, 9, 4});
  expect_values(F::avg_pool2d(x, {2, 2}), {3.25, 2.75, 5.75, 2.25});
  F::PoolWithIndices r = F::max_pool2d_with_indices(x, {2, 2});
  expect_values(r.indices, {1, 6, 12, 15});
  // stride 1 given explicitly: 3x3 outputs
  EXPECT_EQ(F::max_pool2d(x, {2, 2}, F::Size2{1, 1}).shape(), (Shape{1, 1, 3, 3}));
  // unbatched (C, H, W)
  expect_values(F::max_pool2d(reshape(x, {1, 4, 4}), {2, 2}), {5, 8, 9, 4});
  EXPECT_EQ(F::max_pool2d_with_indices(reshape(x, {1, 4, 4}), {2, 2}).indices.shape(),
            (Shape{1, 2, 2}));
}

TEST(NnFunctional, UnfoldMatchesLoopAndFoldInvertsNonOverlapping) {
  // kernel 2x2, dilation 1, padding 1, stride 2 on (1, 1, 3, 3): a 2x2 grid of windows.
  Tensor x = values({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  Tensor cols = F::unfold(x, {2, 2}, {1, 1}, {1, 1}, {2, 2});
  EXPECT_EQ(cols.shape(), (Shape{1, 4, 4}));
  // row (i, j) of the kernel, column l = window; window (wh, ww) starts at (2 wh - 1, 2 ww - 1)
  std::vector<double> xv = to_vector(x), expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int wh = 0; wh < 2; ++wh)
        for (int ww = 0; ww < 2; ++ww) {
          int h = 2 * wh - 1 + i, w = 2 * ww - 1 + j;
          expected.push_back(h < 0 || h >= 3 || w < 0 || w >= 3 ? 0.0 : xv[h * 3 + w]);
        }
  expect_values(cols, expected);
  // Non-overlapping windows that tile the input: fold(unfold(x)) == x.
  Tensor y = leaf({2, 3, 4, 6});
  Tensor tiles = F::unfold(y, {2, 3}, {1, 1}, {0, 0}, {2, 3});
  expect_values(F::fold(tiles, {4, 6}, {2, 3}, {1, 1}, {0, 0}, {2, 3}), to_vector(y), 1e-15);
  expect_grads_ok([](const V& in) { return F::fold(in[0], {3, 3}, {2, 2}); }, {leaf({1, 4, 4})});
}

}  // namespace
}  // namespace vk::test
