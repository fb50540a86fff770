// vk::optim: fused SGD / Adam / AdamW / Adadelta steps against sequences of three steps computed
// here with plain double arithmetic (torch.optim's documented update), clip_grad_norm_, the
// bookkeeping (version counters, no graph) and the errors.
#include <algorithm>
#include <cmath>

#include "test_util.h"
#include "vkml/optim/optim.h"

namespace vk::test {
namespace {

using optim::adadelta_step_;
using optim::adam_step_;
using optim::clip_grad_norm_;
using optim::sgd_step_;
using Vec = std::vector<double>;

const Vec kStart = {1.0, -2.0, 0.5};
const std::vector<Vec> kGrads = {{0.1, -0.2, 0.3}, {0.4, 0.1, -0.5}, {-0.2, 0.3, 0.05}};

// ================================ SGD ================================

struct SgdConfig {
  double lr = 0.1, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
};

// torch.optim.SGD's documented algorithm, one element at a time, in doubles.
Vec reference_sgd(const SgdConfig& c) {
  Vec p = kStart, buf(p.size());
  for (size_t step = 0; step < kGrads.size(); ++step)
    for (size_t i = 0; i < p.size(); ++i) {
      double g = (c.maximize ? -kGrads[step][i] : kGrads[step][i]) + c.weight_decay * p[i];
      if (c.momentum != 0) {
        buf[i] = step == 0 ? g : c.momentum * buf[i] + (1 - c.dampening) * g;
        g = c.nesterov ? g + c.momentum * buf[i] : buf[i];
      }
      p[i] -= c.lr * g;
    }
  return p;
}

// Three steps of sgd_step_ on a fresh parameter of dtype `dtype`.
Tensor run_sgd(const SgdConfig& c, DType dtype = DType::Float64) {
  Tensor param = from_vector(kStart, {3}, dtype), buffer;
  for (const Vec& g : kGrads)
    buffer = sgd_step_(param, from_vector(g, {3}, dtype), buffer, c.lr, c.momentum, c.dampening,
                       c.nesterov, c.weight_decay, c.maximize);
  return param;
}

TEST(Optim, SgdPlainByHand) {
  // p -= 0.1 * (g1 + g2 + g3): sums 0.3, 0.2, -0.15
  expect_values(run_sgd({}), {1.0 - 0.03, -2.0 - 0.02, 0.5 + 0.015}, 1e-15);
}

TEST(Optim, SgdMomentumDampeningWeightDecay) {
  SgdConfig c{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01};
  expect_values(run_sgd(c), reference_sgd(c), 1e-14);
  // First element by hand: g = 0.1 + 0.01 = 0.11, buf = 0.11, p = 0.989;
  // g = 0.4 + 0.00989 = 0.40989, buf = 0.099 + 0.9 * 0.40989 = 0.467901, p = 0.9422099;
  // g = -0.2 + 0.009422099 = -0.190577901, buf = 0.4211109 - 0.1715201109 = 0.2495907891,
  // p = 0.9422099 - 0.02495907891 = 0.91725082109.
  expect_values(run_sgd(c), {0.91725082109, reference_sgd(c)[1], reference_sgd(c)[2]}, 1e-12);
}

TEST(Optim, SgdNesterovAndMaximize) {
  SgdConfig nesterov{.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true};
  expect_values(run_sgd(nesterov), reference_sgd(nesterov), 1e-14);
  SgdConfig maximize{.lr = 0.1, .momentum = 0.5, .maximize = true};
  expect_values(run_sgd(maximize), reference_sgd(maximize), 1e-14);
  // Plain maximize moves along the gradient: p += 0.1 * sum(g).
  expect_values(run_sgd({.maximize = true}), {1.03, -1.98, 0.485}, 1e-15);
}

TEST(Optim, SgdFloat32) {
  SgdConfig c{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01};
  Tensor p = run_sgd(c, DType::Float32);
  EXPECT_EQ(p.dtype(), DType::Float32);
  expect_values(p, reference_sgd(c), 1e-6);
}

TEST(Optim, SgdMomentumBufferLifecycle) {
  Tensor param = values({1.0, 2.0}, {2}, false), grad = values({0.5, -1.0}, {2}, false);
  // momentum 0: no buffer at all
  EXPECT_FALSE(sgd_step_(param, grad, Tensor(), 0.1).defined());
  // first step with momentum: a new buffer holding the (decayed) gradient
  Tensor buffer = sgd_step_(param, grad, Tensor(), 0.1, 0.9, 0.0, false, 0.5);
  ASSERT_TRUE(buffer.defined());
  // param was 0.95, 2.1 after the plain step: g + 0.5 p = 0.975, 0.05
  expect_values(buffer, {0.975, 0.05}, 1e-15);
  // later steps update the same buffer in place and return it
  Tensor again = sgd_step_(param, grad, buffer, 0.1, 0.9);
  EXPECT_TRUE(again.same(buffer));
  expect_values(buffer, {0.9 * 0.975 + 0.5, 0.9 * 0.05 - 1.0}, 1e-15);
}

// ================================ Adam / AdamW ================================

struct AdamConfig {
  double lr = 0.1, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false, amsgrad = false, maximize = false;
};

// torch.optim.Adam / AdamW's documented algorithm, one element at a time, in doubles.
Vec reference_adam(const AdamConfig& c, const std::vector<Vec>& grads = kGrads) {
  Vec p = kStart, m(3, 0.0), v(3, 0.0), vmax(3, 0.0);
  for (size_t step = 1; step <= grads.size(); ++step)
    for (size_t i = 0; i < p.size(); ++i) {
      double g = c.maximize ? -grads[step - 1][i] : grads[step - 1][i];
      if (c.decoupled)
        p[i] *= 1 - c.lr * c.weight_decay;
      else
        g += c.weight_decay * p[i];
      m[i] = c.beta1 * m[i] + (1 - c.beta1) * g;
      v[i] = c.beta2 * v[i] + (1 - c.beta2) * g * g;
      vmax[i] = std::max(vmax[i], v[i]);
      const double m_hat = m[i] / (1 - std::pow(c.beta1, step));
      const double second = c.amsgrad ? vmax[i] : v[i];
      const double v_hat_sqrt = std::sqrt(second) / std::sqrt(1 - std::pow(c.beta2, step));
      p[i] -= c.lr * m_hat / (v_hat_sqrt + c.eps);
    }
  return p;
}

Tensor run_adam(const AdamConfig& c, DType dtype = DType::Float64,
                const std::vector<Vec>& grads = kGrads) {
  Tensor param = from_vector(kStart, {3}, dtype);
  Tensor m = zeros({3}, dtype), v = zeros({3}, dtype), vmax = zeros({3}, dtype);
  for (size_t step = 1; step <= grads.size(); ++step)
    adam_step_(param, from_vector(grads[step - 1], {3}, dtype), m, v, static_cast<int64_t>(step),
               c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, c.decoupled, c.amsgrad,
               c.amsgrad ? vmax : Tensor(), c.maximize);
  return param;
}

TEST(Optim, AdamFirstStepByHand) {
  // Step 1: m_hat = g and v_hat = g^2, so p -= lr * g / (|g| + eps).
  Tensor param = values({1.0}, {1}, false), m = zeros({1}, DType::Float64);
  Tensor v = zeros({1}, DType::Float64);
  adam_step_(param, values({0.5}, {1}, false), m, v, 1, 0.1);
  expect_values(param, {1.0 - 0.1 * 0.5 / (0.5 + 1e-8)}, 1e-15);
  EXPECT_NEAR(param.item(), 0.900000002, 1e-12);
  expect_values(m, {0.05}, 1e-15);     // (1 - 0.9) * 0.5
  expect_values(v, {0.00025}, 1e-15);  // (1 - 0.999) * 0.25
}

TEST(Optim, AdamThreeSteps) {
  AdamConfig c{.lr = 0.1, .weight_decay = 0.1};
  expect_values(run_adam(c), reference_adam(c), 1e-13);
  AdamConfig plain{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6};
  expect_values(run_adam(plain), reference_adam(plain), 1e-13);
}

TEST(Optim, AdamWDecaysDecoupled) {
  AdamConfig c{.lr = 0.1, .weight_decay = 0.1, .decoupled = true};
  Vec expected = reference_adam(c);
  expect_values(run_adam(c), expected, 1e-13);
  // Decoupled differs from L2: the decay bypasses the moment estimates.
  AdamConfig l2 = c;
  l2.decoupled = false;
  EXPECT_GT(std::abs(reference_adam(l2)[0] - expected[0]), 1e-4);
}

TEST(Optim, AdamAmsgradKeepsTheMaximum) {
  // beta2 = 0.5 with a shrinking gradient: v falls (0.5, 0.255, 0.1325), its maximum stays 0.5.
  const std::vector<Vec> shrinking = {{1, 1, 1}, {0.1, 0.1, 0.1}, {0.1, 0.1, 0.1}};
  AdamConfig c{.lr = 0.1, .beta2 = 0.5, .amsgrad = true};
  Vec expected = reference_adam(c, shrinking);
  expect_values(run_adam(c, DType::Float64, shrinking), expected, 1e-13);
  AdamConfig without = c;
  without.amsgrad = false;
  EXPECT_GT(std::abs(reference_adam(without, shrinking)[0] - expected[0]), 1e-3);
  AdamConfig maximize{.lr = 0.1, .decoupled = true, .amsgrad = true, .maximize = true};
  expect_values(run_adam(maximize), reference_adam(maximize), 1e-13);
}

TEST(Optim, AdamFloat32) {
  AdamConfig c{.lr = 0.1, .weight_decay = 0.1, .decoupled = true, .amsgrad = true};
  Tensor p = run_adam(c, DType::Float32);
  EXPECT_EQ(p.dtype(), DType::Float32);
  expect_values(p, reference_adam(c), 1e-6);
}

// ================================ Adadelta ================================

struct AdadeltaConfig {
  double lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0;
  bool maximize = false;
};

// torch.optim.Adadelta's documented algorithm, one element at a time, in doubles.
Vec reference_adadelta(const AdadeltaConfig& c) {
  Vec p = kStart, sq(p.size()), acc(p.size());
  for (const Vec& grads : kGrads)
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = (c.maximize ? -grads[i] : grads[i]) + c.weight_decay * p[i];
      sq[i] = c.rho * sq[i] + (1 - c.rho) * g * g;
      const double delta = std::sqrt(acc[i] + c.eps) / std::sqrt(sq[i] + c.eps) * g;
      acc[i] = c.rho * acc[i] + (1 - c.rho) * delta * delta;
      p[i] -= c.lr * delta;
    }
  return p;
}

Tensor run_adadelta(const AdadeltaConfig& c, DType dtype = DType::Float64) {
  Tensor param = from_vector(kStart, {3}, dtype);
  Tensor sq = zeros({3}, dtype), acc = zeros({3}, dtype);
  for (const Vec& g : kGrads)
    adadelta_step_(param, from_vector(g, {3}, dtype), sq, acc, c.lr, c.rho, c.eps, c.weight_decay,
                   c.maximize);
  return param;
}

TEST(Optim, AdadeltaThreeSteps) {
  for (const AdadeltaConfig& c :
       {AdadeltaConfig{}, AdadeltaConfig{.lr = 0.5, .rho = 0.8, .eps = 1e-5, .weight_decay = 0.05},
        AdadeltaConfig{.weight_decay = 0.1, .maximize = true}}) {
    expect_values(run_adadelta(c), reference_adadelta(c), 1e-13);
    Tensor p = run_adadelta(c, DType::Float32);
    EXPECT_EQ(p.dtype(), DType::Float32);
    expect_values(p, reference_adadelta(c), 1e-6);
  }
}

// ================================ bookkeeping ================================

TEST(Optim, StepsBumpVersionsAndRecordNothing) {
  Tensor param = values({1.0, 2.0}, {2});  // requires grad, grad mode on
  Tensor saved = param * param;            // a graph that saved param before the step
  Tensor m = zeros({2}, DType::Float64), v = zeros({2}, DType::Float64);
  const uint32_t before = param.version(), m_before = m.version();
  adam_step_(param, values({1, 1}, {2}, false), m, v, 1, 0.1);
  Tensor buffer = sgd_step_(param, values({1, 1}, {2}, false), Tensor(), 0.1, 0.9);
  EXPECT_GE(param.version(), before + 2);
  EXPECT_GT(m.version(), m_before);
  EXPECT_TRUE(param.is_leaf());
  EXPECT_TRUE(param.requires_grad());
  EXPECT_FALSE(buffer.requires_grad());
  EXPECT_TRUE(GradMode::is_enabled());
  VK_EXPECT_ERROR(autograd::backward(sum(saved)), RuntimeError, "modified by an in-place", "mul");
}

TEST(Optim, NonContiguousParamIsWrittenBack) {
  Tensor base = values({1, 2, 3, 4, 5, 6}, {3, 2}, false);
  Tensor param = transpose(base, 0, 1);  // (2, 3) view, not contiguous
  ASSERT_FALSE(param.is_contiguous());
  sgd_step_(param, values({1, 1, 1, 2, 2, 2}, {2, 3}, false), Tensor(), 0.5);
  // param row 0 (base column 0) loses 0.5, row 1 (base column 1) loses 1.
  expect_values(base, {0.5, 1, 2.5, 3, 4.5, 5}, 1e-15);
}

TEST(Optim, LargeTensorsUseEveryElement) {
  // Big enough for the thread pool to split the work; each element checked against its formula.
  const int64_t n = 100003;
  Tensor param = arange(0, static_cast<double>(n), 1, DType::Float64) * 1e-3;
  Tensor grad = full({n}, 0.25, DType::Float64);
  Tensor m = zeros({n}, DType::Float64), v = zeros({n}, DType::Float64);
  adam_step_(param, grad, m, v, 1, 0.01, 0.9, 0.999, 1e-8, 0.5, true);
  std::vector<double> got = to_vector(param);
  for (int64_t i = 0; i < n; i += 997) {
    double expected = i * 1e-3 * (1 - 0.01 * 0.5) - 0.01 * 0.25 / (0.25 + 1e-8);
    EXPECT_NEAR(got[i], expected, 1e-12) << i;
  }
  EXPECT_NEAR(got[n - 1], (n - 1) * 1e-3 * 0.995 - 0.01 * 0.25 / (0.25 + 1e-8), 1e-12);
}

TEST(Optim, StepErrors) {
  Tensor param = leaf({2, 3}, -1, 1, false);
  Tensor grad = leaf({2, 3}, -1, 1, false);
  VK_EXPECT_ERROR(sgd_step_(param, leaf({3, 2}), Tensor(), 0.1), ShapeError, "sgd_step_", "[3, 2]",
                  "[2, 3]");
  VK_EXPECT_ERROR(sgd_step_(param, zeros({2, 3}), Tensor(), 0.1), DTypeError, "sgd_step_",
                  "float32", "float64");
  VK_EXPECT_ERROR(sgd_step_(param, grad, zeros({3}, DType::Float64), 0.1, 0.9), ShapeError,
                  "sgd_step_", "momentum_buffer");
  VK_EXPECT_ERROR(sgd_step_(param, grad, Tensor(), 0.1, 0.0, 0.0, true), RuntimeError, "sgd_step_",
                  "nesterov");
  VK_EXPECT_ERROR(sgd_step_(param, grad, Tensor(), 0.1, 0.9, 0.5, true), RuntimeError, "nesterov",
                  "dampening");
  VK_EXPECT_ERROR(sgd_step_(ints({1, 2}, {2}), ints({1, 2}, {2}), Tensor(), 0.1), DTypeError,
                  "sgd_step_", "int64");
  Tensor m = zeros({2, 3}, DType::Float64), v = zeros({2, 3}, DType::Float64);
  VK_EXPECT_ERROR(adam_step_(param, grad, m, v, 0, 0.1), RuntimeError, "adam_step_", "1-based");
  VK_EXPECT_ERROR(adam_step_(param, grad, m, zeros({2, 3}), 1, 0.1), DTypeError, "adam_step_",
                  "exp_avg_sq");
  VK_EXPECT_ERROR(adam_step_(param, grad, zeros({6}, DType::Float64), v, 1, 0.1), ShapeError,
                  "adam_step_", "exp_avg", "[6]");
  VK_EXPECT_ERROR(adam_step_(param, grad, m, v, 1, 0.1, 0.9, 0.999, 1e-8, 0.0, true, true),
                  RuntimeError, "adamw_step_", "max_exp_avg_sq");
  VK_EXPECT_ERROR(adadelta_step_(param, grad, m, zeros({2, 3}, DType::Float32)), DTypeError,
                  "adadelta_step_", "acc_delta");
  VK_EXPECT_ERROR(adadelta_step_(param, grad, zeros({3, 2}, DType::Float64), v), ShapeError,
                  "adadelta_step_", "square_avg", "[3, 2]");
  // A failed check leaves everything untouched.
  expect_values(m, std::vector<double>(6, 0.0));
}

// ================================ clip_grad_norm_ ================================

TEST(Optim, ClipGradNormScalesAllGradientsTogether) {
  // ||(3, 4, 12)|| = 13 across two tensors; max_norm 6.5 halves them (up to the 1e-6).
  Tensor a = values({3, 4}, {2}, false), b = values({12}, {1}, false);
  Tensor total = clip_grad_norm_({a, Tensor(), b}, 6.5);
  EXPECT_EQ(total.ndim(), 0);
  EXPECT_NEAR(total.item(), 13.0, 1e-12);
  const double coef = 6.5 / (13.0 + 1e-6);
  expect_values(a, {3 * coef, 4 * coef}, 1e-15);
  expect_values(b, {12 * coef}, 1e-15);
}

TEST(Optim, ClipGradNormLeavesSmallGradientsAlone) {
  Tensor a = values({3, 4}, {2}, false);
  EXPECT_NEAR(clip_grad_norm_({a}, 10.0).item(), 5.0, 1e-12);
  expect_values(a, {3, 4}, 1e-15);
}

TEST(Optim, ClipGradNormOtherNorms) {
  Tensor a = values({3, -4}, {2}, false), b = values({-2}, {1}, false);
  EXPECT_NEAR(clip_grad_norm_({a, b}, 100.0, INFINITY).item(), 4.0, 1e-12);
  EXPECT_NEAR(clip_grad_norm_({a, b}, 100.0, 1.0).item(), 9.0, 1e-12);
  // p = 3: (27 + 64 + 8)^(1/3)
  EXPECT_NEAR(clip_grad_norm_({a, b}, 100.0, 3.0).item(), std::cbrt(99.0), 1e-12);
  Tensor total = clip_grad_norm_({a, b}, 2.0, INFINITY);
  EXPECT_NEAR(total.item(), 4.0, 1e-12);
  expect_values(a, {3 * 2 / (4 + 1e-6), -4 * 2 / (4 + 1e-6)}, 1e-15);
  VK_EXPECT_ERROR(clip_grad_norm_({a}, 1.0, 0.0), RuntimeError, "clip_grad_norm_", "norm_type");
  VK_EXPECT_ERROR(clip_grad_norm_({ints({1}, {1})}, 1.0), DTypeError, "clip_grad_norm_", "int64");
  EXPECT_EQ(clip_grad_norm_({}, 1.0).item(), 0.0);
}

}  // namespace
}  // namespace vk::test
