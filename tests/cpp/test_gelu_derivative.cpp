// gelu's forward returns its derivative as output 1 when a graph is recorded (float32 / float64,
// the erf form), and the rule multiplies by it when the backward builds no graph, instead of
// evaluating gelu_backward's exponential and polynomial again. These tests hold the contract of
// that shortcut: it is taken exactly when a graph is recorded, and every path gives a gradient of
// the same bits as gelu_backward.
#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

#include "test_util.h"
#include "vkml/autograd/engine.h"

namespace vk::test {
namespace {

// Inputs through the whole range: the centre, both tails, where x phi(x) underflows, +-0, +-inf,
// NaN.
template <class T>
std::vector<T> gelu_inputs() {
  std::vector<T> v;
  for (int i = -4000; i <= 4000; ++i) v.push_back(static_cast<T>(i) * T(0.00431));
  for (T x : {T(-13.3), T(-14.0), T(-14.9), T(-15.0), T(-30.0), T(13.5), T(40.0), T(1e-30),
              T(-1e-30), T(0.0), T(-0.0), T(INFINITY), T(-INFINITY), T(NAN)})
    v.push_back(x);
  return v;
}

template <class T>
Tensor tensor_from(const std::vector<T>& v) {
  return from_data(v.data(), {static_cast<int64_t>(v.size())}, dtype_of<T>::value);
}

// Bit-for-bit equality, any NaN equal to any NaN (which NaN propagates depends on operand order).
template <class T>
void expect_same_bits(const Tensor& got, const Tensor& want, const char* what) {
  ASSERT_EQ(got.numel(), want.numel()) << what;
  const Tensor a = contiguous(got), b = contiguous(want);
  const T *pa = a.data<T>(), *pb = b.data<T>();
  int64_t differ = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(&pa[i], &pb[i], sizeof(T)) != 0 && !(std::isnan(pa[i]) && std::isnan(pb[i])))
      if (differ++ < 3)
        ADD_FAILURE() << what << ": element " << i << " " << pa[i] << " vs " << pb[i];
  EXPECT_EQ(differ, 0) << what;
}

const Tensor& derivative_kept(const Tensor& y) {
  static const Tensor none;
  const auto& others = y.impl()->other_outputs;
  return others.empty() ? none : others[0];
}

TEST(GeluDerivative, KeptExactlyWhenAGraphIsRecorded) {
  const Tensor x = tensor_from(gelu_inputs<float>());
  Tensor xg = x.detach();
  xg.set_requires_grad(true);
  const Tensor d = derivative_kept(gelu(xg));
  ASSERT_TRUE(d.defined()) << "a recorded gelu keeps no derivative";
  expect_same_bits<float>(d, gelu_backward(ones({1}), x), "the kept derivative");
  {
    NoGradGuard ng;  // nothing recorded, so nothing kept
    EXPECT_EQ(gelu(xg).impl()->op, nullptr);
    EXPECT_TRUE(gelu(xg).impl()->other_outputs.empty());
  }
  EXPECT_TRUE(gelu(x).impl()->other_outputs.empty());  // x needs no gradient
  EXPECT_FALSE(derivative_kept(gelu(xg, true)).defined()) << "the tanh form";
  Tensor h = cast(x, DType::BFloat16).detach();
  h.set_requires_grad(true);
  EXPECT_FALSE(derivative_kept(gelu(h)).defined()) << "bfloat16 rounds gelu_backward once";
}

// backward without create_graph (the kept derivative), with create_graph (gelu_backward) and
// gelu_backward itself: the same bits, for contiguous and strided inputs.
template <class T>
void check_paths() {
  const std::vector<T> v = gelu_inputs<T>();
  const int64_t n = static_cast<int64_t>(v.size()) / 2 * 2;
  for (bool strided : {false, true}) {
    Tensor base = tensor_from(std::vector<T>(v.begin(), v.begin() + n));
    if (strided) base = transpose(reshape(base, {2, n / 2}), 0, 1);  // (n/2, 2), not contiguous
    Tensor x = base.detach();
    x.set_requires_grad(true);
    Tensor g;
    {
      NoGradGuard ng;
      g = cast(randn(x.shape(), DType::Float64), x.dtype());
    }
    const Tensor want = gelu_backward(g, x.detach());
    const Tensor y = gelu(x);
    EXPECT_TRUE(derivative_kept(y).defined());  // strided: two passes, still kept
    const Tensor plain = autograd::grad({y}, {x}, {g}, true)[0];
    const Tensor built = autograd::grad({y}, {x}, {g}, true, true)[0];
    EXPECT_TRUE(built.requires_grad()) << "create_graph's gradient is differentiable";
    const char* layout = strided ? "strided" : "contiguous";
    SCOPED_TRACE(layout);
    expect_same_bits<T>(plain, want, "backward with the kept derivative");
    expect_same_bits<T>(built.detach(), want, "backward with create_graph");
  }
}

TEST(GeluDerivative, EveryPathGivesGeluBackwardsBitsFloat32) { check_paths<float>(); }
TEST(GeluDerivative, EveryPathGivesGeluBackwardsBitsFloat64) { check_paths<double>(); }

// Second order through the create_graph path, against the closed form phi(x) (2 - x^2) (float64).
TEST(GeluDerivative, SecondOrderStillDifferentiates) {
  const Tensor x = values({-2.5, -0.75, -0.1, 0.0, 0.3, 1.2, 3.0}, {7});
  const Tensor y = gelu(x);
  const Tensor dy = autograd::grad({sum(y, {0}, false)}, {x}, {}, true, true)[0];
  const Tensor d2 = autograd::grad({sum(dy, {0}, false)}, {x})[0];
  std::vector<double> want;
  for (double xv : to_vector(x))
    want.push_back(std::exp(-xv * xv / 2) / std::sqrt(2 * std::numbers::pi) * (2 - xv * xv));
  expect_values(d2, want, 1e-12);
}

}  // namespace
}  // namespace vk::test
