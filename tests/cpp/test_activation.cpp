// The activations with parameters (ops/activation.h) against torch's formulas by hand: the
// pieces, the points between them (0, the bounds, the threshold), NaN and infinities, the
// parameters' conversion to the tensor's dtype, and the dtype errors. Against torch itself:
// tests/python/test_ops_vs_torch.py (the aten backward ops) and test_nn_breadth.py.
#include <cmath>
#include <limits>
#include <tuple>

#include "test_util.h"

namespace vk::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Each element within rel of want, relatively (NaN and inf exactly; results in float32's
// subnormal range to its spacing there).
void expect_close(const Tensor& t, const std::vector<double>& want, double rel = 0) {
  const std::vector<double> got = to_vector(t);
  ASSERT_EQ(got.size(), want.size()) << t.describe();
  const double floor = t.dtype() == DType::Float32 ? 1.5e-45 : 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << " of " << t.describe();
    } else if (std::isinf(want[i]) || rel == 0) {
      EXPECT_EQ(got[i], want[i]) << "at " << i << " of " << t.describe();
    } else {
      EXPECT_LE(std::abs(got[i] - want[i]), rel * std::abs(want[i]) + floor)
          << "at " << i << " of " << t.describe() << ": " << got[i] << " vs " << want[i];
    }
  }
}

Tensor of(const std::vector<double>& v, DType dt) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, dt);
}

TEST(Activation, LeakyReluAndItsGradient) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor x = of({2.0, 0.0, -0.0, -3.0, kNaN, -kInf, kInf}, dt);
    expect_close(leaky_relu(x, 0.1), {2.0, 0.0, 0.0, -0.3, kNaN, -kInf, kInf}, 1e-7);
    const Tensor g = of({1, 2, 3, 4, 5, 6, 7}, dt);
    // g where x > 0, else g * slope: 0 and NaN take the slope, as torch's
    expect_close(leaky_relu_backward(g, x, 0.1), {1, 0.2, 0.3, 0.4, 0.5, 0.6, 7}, 1e-7);
  }
}

TEST(Activation, HardtanhPassesItsGradientStrictlyInside) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor x = of({-2.0, -1.0, -0.5, 0.0, 1.5, 2.0, kNaN}, dt);
    expect_close(hardtanh(x, -1.0, 1.5), {-1.0, -1.0, -0.5, 0.0, 1.5, 1.5, kNaN});
    const Tensor g = of({1, 2, 3, 4, 5, 6, 7}, dt);
    // 0 at and beyond the bounds (clamp's gradient would pass at them); NaN passes, as torch's
    expect_close(hardtanh_backward(g, x, -1.0, 1.5), {0, 0, 3, 4, 0, 0, 7});
  }
  EXPECT_THROW(hardtanh(of({1.0}, DType::Float32), 2.0, 1.0), RuntimeError);
}

// torch's pieces, and its choices at the joins: hardsigmoid's gradient is 0 at +-3, hardswish's
// is g * (x / 3 + 1/2) at both (-0.5 g at -3, 1.5 g at 3), NaN passing g.
TEST(Activation, HardsigmoidAndHardswishAtTheirJoins) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor x = of({-4.0, -3.0, -1.5, 0.0, 1.5, 3.0, 4.0, kNaN}, dt);
    expect_close(hardsigmoid(x), {0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0, kNaN}, 1e-7);
    expect_close(hardswish(x), {-0.0, 0.0, -0.375, 0.0, 1.125, 3.0, 4.0, kNaN}, 1e-7);
    const Tensor g = full_like(x, 6.0);
    expect_close(hardsigmoid_backward(g, x), {0, 0, 1, 1, 1, 0, 0, 0}, 1e-7);
    expect_close(hardswish_backward(g, x), {0, -3, 0, 3, 6, 9, 6, 6}, 1e-7);
  }
}

TEST(Activation, EluAgainstExpm1InLongDouble) {
  const std::vector<double> xs{-30.0, -2.0, -1e-9, -0.0, 0.0, 1e-9, 3.0};
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (auto [alpha, scale] : {std::pair{1.0, 1.0}, std::pair{0.7, 1.3}}) {
      std::vector<double> want, want_grad;
      for (double v : xs) {
        // x * input_scale rounds in the tensor's dtype first, as torch's (and any float) kernel
        const long double s =
            dt == DType::Float32 ? static_cast<long double>(float(v) * float(scale)) : v * scale;
        want.push_back(v > 0 ? v : static_cast<double>(alpha * std::expm1(s)));
        want_grad.push_back(v > 0 ? 2.0 : static_cast<double>(2.0L * scale * alpha * std::exp(s)));
      }
      const Tensor x = of(xs, dt);
      const double tol = dt == DType::Float32 ? 3e-7 : 1e-15;
      expect_close(elu(x, alpha, scale), want, tol);
      expect_close(elu_backward(full_like(x, 2.0), x, alpha, scale), want_grad, tol);
    }
    // NaN stays NaN forward; its gradient passes g (torch's x <= 0 test is false)
    expect_close(elu(of({kNaN, -kInf, kInf}, dt)), {kNaN, -1.0, kInf});
    expect_close(elu_backward(of({3.0, 3.0}, dt), of({kNaN, -kInf}, dt), 1.0, 1.0), {3.0, 0.0});
  }
}

TEST(Activation, SoftplusIsStableAndKeepsItsThreshold) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    const double tol = dt == DType::Float32 ? 3e-7 : 1e-15;
    // no threshold: log(1 + e^x) far into both tails (e^x itself at -100, x itself at 100)
    const std::vector<double> xs{-100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 100.0};
    std::vector<double> want;
    for (double v : xs) want.push_back(static_cast<double>(std::log1p(std::exp((long double)v))));
    expect_close(softplus(of(xs, dt), 1.0, kInf), want, tol);
    // beta 2, threshold 3: x itself where 2x > 3, else log(1 + e^(2x)) / 2
    const Tensor x = of({1.0, 1.5, 1.6}, dt);
    expect_close(
        softplus(x, 2.0, 3.0),
        {static_cast<double>(std::log1p(std::exp(2.0L)) / 2), std::log1p(std::exp(3.0)) / 2, 1.6},
        tol);
    // gradient: g * sigmoid(2x), g itself past the threshold
    expect_close(softplus_backward(of({2, 2, 2}, dt), x, 2.0, 3.0),
                 {2 / (1 + std::exp(-2.0)), 2 / (1 + std::exp(-3.0)), 2.0}, tol);
    expect_close(softplus(of({kNaN, kInf, -kInf}, dt), 1.0, kInf), {kNaN, kInf, 0.0});
  }
}

TEST(Activation, IntegerInputsAreDTypeErrors) {
  const Tensor i = ints({1, -2}, {2});
  EXPECT_THROW(leaky_relu(i), DTypeError);
  EXPECT_THROW(hardtanh(i), DTypeError);
  EXPECT_THROW(elu(i), DTypeError);
  EXPECT_THROW(softplus(i), DTypeError);
  EXPECT_THROW(hardsigmoid(i), DTypeError);
  EXPECT_THROW(hardswish_backward(i, i), DTypeError);
  EXPECT_THROW(leaky_relu_backward(i, i, 0.1), DTypeError);
  EXPECT_THROW(softplus_backward(i, i, 1.0, 20.0), DTypeError);
  EXPECT_THROW(silu(i), DTypeError);
  EXPECT_THROW(silu_backward(i, i), DTypeError);
  EXPECT_THROW(smooth_l1(i, 1.0), DTypeError);
  EXPECT_THROW(huber_backward(i, i, 1.0), DTypeError);
}

// As torch's losses: smooth_l1's beta >= 0 (0 is the l1 loss), huber's delta > 0; NaN neither.
TEST(Activation, LossPiecesRefuseBadWidths) {
  const Tensor x = values({-1.0, 0.5}, {2});
  EXPECT_THROW(smooth_l1(x, -0.5), RuntimeError);
  EXPECT_THROW(smooth_l1_backward(x, x, std::nan("")), RuntimeError);
  EXPECT_THROW(huber(x, 0.0), RuntimeError);
  EXPECT_THROW(huber_backward(x, x, -1.0), RuntimeError);
  EXPECT_NO_THROW(smooth_l1(x, 0.0));
}

// torch's pieces, the joins (|x| equal to beta or delta: both pieces agree there, value and
// slope), NaN passing.
TEST(Activation, LossPiecesMatchTorchsFormulas) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    const double tol = dt == DType::Float32 ? 1e-7 : 1e-15;
    const Tensor x = of({-3.0, -0.5, -0.25, 0.0, 0.25, 0.5, 2.0, kNaN}, dt);
    const Tensor g = of({2, 2, 2, 2, 2, 2, 2, 2}, dt);
    // beta 0.5: 0.5 x^2 / 0.5 = x^2 inside, |x| - 0.25 outside
    expect_close(smooth_l1(x, 0.5), {2.75, 0.25, 0.0625, 0.0, 0.0625, 0.25, 1.75, kNaN}, tol);
    expect_close(smooth_l1_backward(g, x, 0.5), {-2, -2, -1, 0, 1, 2, 2, kNaN}, tol);
    // delta 0.5: 0.5 x^2 inside, 0.5 (|x| - 0.25) outside
    expect_close(huber(x, 0.5), {1.375, 0.125, 0.03125, 0.0, 0.03125, 0.125, 0.875, kNaN}, tol);
    expect_close(huber_backward(g, x, 0.5), {-1, -1, -0.5, 0, 0.5, 1, 1, kNaN}, tol);
    // silu and its gradient at the tails, 0 and NaN: x sigmoid(x); g s (1 + x (1 - s))
    const Tensor t = of({-20.0, -1.0, 0.0, 1.0, 20.0, kNaN, -kInf, kInf}, dt);
    std::vector<double> want, dwant;
    for (double v : {-20.0, -1.0, 0.0, 1.0, 20.0}) {
      const double s = 1.0 / (1.0 + std::exp(-v));
      want.push_back(v * s);
      dwant.push_back(2.0 * s * (1.0 + v * (1.0 - s)));
    }
    want.insert(want.end(), {kNaN, kNaN, kInf});  // -inf * 0 is NaN, as torch's x * sigmoid(x)
    dwant.insert(dwant.end(), {kNaN, kNaN, kNaN});
    const bool f32 = dt == DType::Float32;  // sigmoid's rounding, then the products'
    expect_close(silu(t), want, f32 ? 5e-7 : 1e-15);
    expect_close(silu_backward(of({2, 2, 2, 2, 2, 2, 2, 2}, dt), t), dwant, f32 ? 1e-6 : 4e-15);
  }
}

// The regression: each of these was a composition of three to ten element-wise ops, forward and
// backward (leaky_relu 3.6x torch's time, elu 5.5x, softplus 4.9x, hardswish 5.6x over 1M
// floats, one thread);
// now one op each way: the result's op is the activation itself, straight from x, and the
// gradient's (taken with create_graph) is its fused backward op.
TEST(Activation, FunctionalActivationsAreOneOpEachWay) {
  namespace F = nn::functional;
  const Tensor x = leaf({4, 5}, -2.0, 2.0);
  const std::vector<std::tuple<const char*, Tensor, OpKind, OpKind>> cases{
      {"leaky_relu", F::leaky_relu(x, 0.1), OpKind::LeakyRelu, OpKind::LeakyReluBackward},
      {"hardtanh", F::hardtanh(x, -1.0, 1.0), OpKind::Hardtanh, OpKind::HardtanhBackward},
      {"relu6", F::relu6(x), OpKind::Hardtanh, OpKind::HardtanhBackward},
      {"elu", F::elu(x, 0.5), OpKind::Elu, OpKind::EluBackward},
      {"celu", F::celu(x, 2.0), OpKind::Elu, OpKind::EluBackward},
      {"softplus", F::softplus(x, 2.0, 10.0), OpKind::Softplus, OpKind::SoftplusBackward},
      {"logsigmoid", F::logsigmoid(x), OpKind::Softplus, OpKind::SoftplusBackward},
      {"hardsigmoid", F::hardsigmoid(x), OpKind::Hardsigmoid, OpKind::HardsigmoidBackward},
      {"hardswish", F::hardswish(x), OpKind::Hardswish, OpKind::HardswishBackward},
      {"silu", F::silu(x), OpKind::Silu, OpKind::SiluBackward}};
  for (const auto& [name, y, forward, backward] : cases) {
    ASSERT_NE(y.op(), nullptr) << name;
    EXPECT_EQ(y.op()->kind, forward) << name;
    ASSERT_EQ(y.parents().size(), 1u) << name;
    EXPECT_TRUE(y.parents()[0].same(x)) << name;
    const Tensor g = autograd::grad({y}, {x}, {ones_like(y)}, /*retain_graph=*/true,
                                    /*create_graph=*/true)[0];
    ASSERT_NE(g.op(), nullptr) << name;
    EXPECT_EQ(g.op()->kind, backward) << name;
  }
}

}  // namespace
}  // namespace vk::test
