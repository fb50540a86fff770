// The rules of DESIGN.md "Autograd rules", one named test each, plus the worked numbers of
// seeds 003 and 004.
#include <cmath>
#include <thread>

#include "test_util.h"

namespace vk::test {
namespace {

using autograd::backward;

TEST(Autograd, RecordsOnlyWhenGradModeOnAndInputRequiresGrad) {
  Tensor a = values({1, 2}, {2});
  Tensor c = values({3, 4}, {2}, false);
  Tensor y = a * c;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(y.parents().size(), 2u);
  Tensor k = c * c;
  EXPECT_FALSE(k.requires_grad());
  EXPECT_TRUE(k.parents().empty());
  NoGradGuard ng;
  Tensor z = a * c;
  EXPECT_FALSE(z.requires_grad());
  EXPECT_TRUE(z.parents().empty());
  EXPECT_TRUE(z.is_leaf());
}

TEST(Autograd, NoGradRestoresAfterException) {
  EXPECT_TRUE(GradMode::is_enabled());
  try {
    NoGradGuard ng;
    throw std::runtime_error("failed batch");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(GradMode::is_enabled());
}

TEST(Autograd, NoGradNests) {
  {
    NoGradGuard outer;
    {
      NoGradGuard inner;
      EXPECT_FALSE(GradMode::is_enabled());
    }
    EXPECT_FALSE(GradMode::is_enabled());  // the inner block restores the outer "off"
    {
      EnableGradGuard on;
      EXPECT_TRUE(GradMode::is_enabled());
    }
    EXPECT_FALSE(GradMode::is_enabled());
  }
  EXPECT_TRUE(GradMode::is_enabled());
}

TEST(Autograd, GradModeIsPerThread) {
  NoGradGuard ng;
  bool other = false;
  std::thread t([&] { other = GradMode::is_enabled(); });
  t.join();
  EXPECT_TRUE(other);
  EXPECT_FALSE(GradMode::is_enabled());
}

TEST(Autograd, IntegerRootIsDTypeError) {
  Tensor i = from_vector({1, 2}, {2}, DType::Int64);
  VK_EXPECT_ERROR(backward(sum(i)), DTypeError, "int64");
}

TEST(Autograd, IntegerTensorCannotRequireGrad) {
  Tensor i = from_vector({1, 2}, {2}, DType::Int64);
  VK_EXPECT_ERROR(i.set_requires_grad(true), DTypeError, "int64");
  Tensor b = from_vector({1, 0}, {2}, DType::Bool);
  VK_EXPECT_ERROR(b.set_requires_grad(true), DTypeError, "bool");
}

TEST(Autograd, BackwardOnConstantRaises) {
  Tensor c = values({1, 2}, {2}, false);
  VK_EXPECT_ERROR(backward(sum(c)), RuntimeError, "does not require grad");
}

TEST(Autograd, BackwardWithoutGradNeedsOneElement) {
  Tensor a = values({1, 2}, {2});
  VK_EXPECT_ERROR(backward(a * 2.0), RuntimeError, "one-element", "[2]");
  backward(a * 2.0, values({1, 1}, {2}, false));
  expect_values(a.grad(), {2, 2});
}

TEST(Autograd, SeedShapeMustMatch) {
  Tensor a = values({1, 2}, {2});
  VK_EXPECT_ERROR(backward(a * 2.0, values({1, 1, 1}, {3}, false)), ShapeError, "[3]", "[2]");
}

TEST(Autograd, SharedInputAccumulates) {  // seed 004: a*a + a at a = 3 gives 7
  Tensor a = values({3}, {});
  backward(a * a + a);
  expect_values(a.grad(), {7});
}

TEST(Autograd, DiamondGraph) {  // seed 004: d = 2a * a^2 at a = 2 gives 24
  Tensor a = values({2}, {});
  Tensor b = a * 2.0, c = a * a;
  backward(b * c);
  expect_values(a.grad(), {24});
}

TEST(Autograd, SeedChainRuleExample) {  // seed 003 16.1: w = x*y + x at x=5, y=2
  Tensor x = values({5}, {}), y = values({2}, {});
  backward(x * y + x);
  expect_values(x.grad(), {3});
  expect_values(y.grad(), {5});
}

TEST(Autograd, HandExampleBroadcastBackward) {  // seed 004 section 3
  Tensor x = values({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = values({10, 20, 30}, {3});
  Tensor y = x * w + w;
  expect_values(y, {20, 60, 120, 50, 120, 210});
  backward(y, ones({2, 3}, DType::Float64));
  expect_values(w.grad(), {7, 9, 11});
  expect_values(x.grad(), {10, 20, 30, 10, 20, 30});
}

TEST(Autograd, ManySharedPathsCostLinearTime) {
  // y_{k+1} = y_k + y_k: 2^60 paths from the root to x, 120 nodes. A walk per path never ends.
  Tensor x = values({1}, {});
  Tensor y = x;
  for (int k = 0; k < 60; ++k) y = y + y;
  backward(y);  // a walk per path would not finish: ctest's timeout turns that into a failure
  expect_values(x.grad(), {std::ldexp(1.0, 60)}, 1.0);
}

TEST(Autograd, LeavesAccumulateAcrossCalls) {
  Tensor a = values({1, 2}, {2});
  backward(sum(a * 3.0));
  backward(sum(a * 3.0));
  expect_values(a.grad(), {6, 6});
}

TEST(Autograd, OnlyLeavesKeepGradUnlessRetained) {
  Tensor a = values({1, 2}, {2});
  Tensor h = a * 2.0;
  Tensor k = a * 3.0;
  k.retain_grad();
  backward(sum(h * k));
  EXPECT_FALSE(h.grad().defined());
  expect_values(k.grad(), {2, 4});  // d(h*k)/dk = h
  expect_values(a.grad(), {12, 24});
}

TEST(Autograd, GradHoldsAValueNotAGraph) {
  Tensor a = values({1, 2}, {2});
  backward(sum(a * a));
  EXPECT_TRUE(a.grad().is_leaf());
  EXPECT_FALSE(a.grad().requires_grad());
  EXPECT_TRUE(a.grad().is_contiguous());
}

TEST(Autograd, GradOfBroadcastSeedOwnsItsMemory) {
  Tensor a = values({1, 2, 3}, {3});
  backward(sum(a));  // the gradient arriving is an expanded (stride 0) view
  Tensor g = a.grad();
  EXPECT_TRUE(g.is_contiguous());
  EXPECT_EQ(g.strides(), Strides({1}));
  expect_values(g, {1, 1, 1});
}

TEST(Autograd, GradDtypeMatchesData) {
  Tensor a = values({1, 2}, {2}, true, DType::Float32);
  Tensor y = cast(a, DType::Float64) * 2.0;
  backward(sum(y));
  EXPECT_EQ(a.grad().dtype(), DType::Float32);
}

TEST(Autograd, Float32StaysFloat32WithScalars) {
  Tensor a = values({1, 2}, {2}, true, DType::Float32);
  EXPECT_EQ((a * 0.5).dtype(), DType::Float32);
  EXPECT_EQ((0.5 + a).dtype(), DType::Float32);
  Tensor i = from_vector({1, 2}, {2}, DType::Int64);
  // the kind of the number decides, never its value (PyTorch's promotion)
  EXPECT_EQ((i * 2).dtype(), DType::Int64);
  EXPECT_EQ((i * 2.0).dtype(), DType::Float32);
  EXPECT_EQ((i * 2.5).dtype(), DType::Float32);
}

TEST(Autograd, DetachStopsGradient) {
  Tensor a = values({1, 2}, {2});
  Tensor d = (a * 2.0).detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.storage(), d.storage());
  backward(sum(a * d));
  expect_values(a.grad(), {2, 4});
}

TEST(Autograd, WrongShapeFromRuleIsRuntimeErrorNamingOp) {
  Tensor a = values({1, 2}, {2});
  Tensor y = autograd::from_op(
      a.detach() * 2.0, {a}, [](const Tensor& g) { return std::vector<Tensor>{sum(g)}; },
      "double_it");
  VK_EXPECT_ERROR(backward(sum(y)), RuntimeError, "double_it", "[]", "[2]");
}

TEST(Autograd, WrongCountFromRuleIsRuntimeErrorNamingOp) {
  Tensor a = values({1, 2}, {2});
  Tensor y = autograd::from_op(
      a.detach() * 2.0, {a},
      [](const Tensor& g) {
        return std::vector<Tensor>{g, g};
      },
      "twice");
  VK_EXPECT_ERROR(backward(sum(y)), RuntimeError, "twice", "2 gradients for 1 inputs");
}

TEST(Autograd, FromOpWithConstantParent) {
  Tensor a = values({1, 2}, {2});
  Tensor c = values({3, 4}, {2}, false);
  Tensor y = autograd::from_op(
      a.detach() * c, {a, c},
      [a, c](const Tensor& g) {
        return std::vector<Tensor>{g * c, Tensor()};
      },
      "scale");
  backward(sum(y));
  expect_values(a.grad(), {3, 4});
  EXPECT_FALSE(c.grad().defined());
}

TEST(Autograd, InPlaceOnSavedTensorRaisesNamingOp) {
  Tensor a = values({1, 2}, {2});
  Tensor c = values({3, 4}, {2}, false);
  Tensor y = a * c;
  mul_(c, 2.0);
  VK_EXPECT_ERROR(backward(sum(y)), RuntimeError, "mul", "modified by an in-place");
}

// Defect: a write into an op's other output (max's indices) before backward went unnoticed, and
// the rule sent the gradient where the new indices pointed (a silent wrong gradient; torch raises).
TEST(Autograd, InPlaceOnOtherOutputRaisesRegression) {
  Tensor a = values({1, 5, 2, 4, 0, 3}, {2, 3});
  auto [vals, idx] = max(a, 0, false);
  {
    NoGradGuard ng;
    fill_(idx, 0);
  }
  VK_EXPECT_ERROR(backward(sum(vals)), RuntimeError, "output 1", "modified by an in-place");
  auto [vals2, idx2] = max(a, 0, false);
  backward(sum(vals2));  // nothing written: the gradient goes to each column's maximum
  expect_values(a.grad(), {0, 1, 0, 1, 0, 1});
}

TEST(Autograd, InPlaceOnRecordedOutputRaisesNamingOp) {
  // exp's rule is g * out: a write into its output after recording (under no_grad, or through
  // a detached alias) would change the gradient, so backward refuses.
  Tensor a = values({0.5, 1.0}, {2});
  Tensor y = exp(a);
  {
    NoGradGuard ng;
    mul_(y, 2.0);
  }
  VK_EXPECT_ERROR(backward(sum(y)), RuntimeError, "output", "of exp", "modified by an in-place");
  Tensor z = exp(a);
  backward(sum(z));  // nothing written: the gradient is exp(a)
  expect_values(a.grad(), {std::exp(0.5), std::exp(1.0)});
}

TEST(Autograd, InPlaceOnTensorRequiringGradRaisesUnderGradMode) {
  Tensor a = values({1, 2}, {2});
  VK_EXPECT_ERROR(add_(a, 1.0), RuntimeError, "add_", "requires grad");
  {
    NoGradGuard ng;
    add_(a, 1.0);  // an optimizer step
  }
  expect_values(a, {2, 3});
}

TEST(Autograd, SecondBackwardWithoutRetainGraphRaises) {
  Tensor a = values({1, 2}, {2});
  Tensor y = sum(a * a);
  backward(y);
  VK_EXPECT_ERROR(backward(y), RuntimeError, "second time", "retain_graph");
}

TEST(Autograd, RetainGraphAllowsSecondBackward) {
  Tensor a = values({1, 2}, {2});
  Tensor y = sum(a * a);
  backward(y, Tensor(), true);
  backward(y);
  expect_values(a.grad(), {4, 8});
}

TEST(Autograd, BackwardFreesSavedTensors) {
  Tensor a = values({1, 2}, {2});
  Tensor h = a * a;
  Tensor y = sum(h);
  backward(y);
  EXPECT_TRUE(h.parents().empty());
  EXPECT_TRUE(y.parents().empty());
}

TEST(Autograd, GradReturnsWithoutTouchingDotGrad) {
  Tensor a = values({1, 2}, {2});
  Tensor b = values({3, 4}, {2});
  auto g = autograd::grad({sum(a * b)}, {a});
  expect_values(g[0], {3, 4});
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
}

TEST(Autograd, GradUnusedInput) {
  Tensor a = values({1}, {});
  Tensor b = values({2}, {});
  VK_EXPECT_ERROR(autograd::grad({a * 2.0}, {b}), RuntimeError, "not used");
  auto g = autograd::grad({a * 2.0}, {b}, {}, std::nullopt, false, true);
  EXPECT_FALSE(g[0].defined());
}

TEST(Autograd, GradThroughIntermediateInput) {
  // d/dx of y = h * x with h = 3x: both paths count, also when h is itself an input.
  Tensor x = values({2}, {});
  Tensor h = x * 3.0;
  Tensor y = h * x;
  auto g = autograd::grad({y}, {x, h});
  expect_values(g[0], {12});  // 6x
  expect_values(g[1], {2});   // x
}

TEST(Autograd, HigherOrderDerivatives) {
  Tensor x = values({2}, {});
  Tensor y = x * x * x;  // 3x^2, 6x, 6
  Tensor d1 = autograd::grad({y}, {x}, {}, std::nullopt, true)[0];
  expect_values(d1, {12});
  Tensor d2 = autograd::grad({d1}, {x}, {}, std::nullopt, true)[0];
  expect_values(d2, {12});
  Tensor d3 = autograd::grad({d2}, {x}, {}, std::nullopt, true)[0];
  expect_values(d3, {6});
}

TEST(Autograd, BackwardCreateGraphKeepsGraphInGrad) {
  Tensor x = values({3}, {});
  backward(x * x * x, Tensor(), std::nullopt, true);
  Tensor g = x.grad();  // 3x^2 = 27, with history
  EXPECT_TRUE(g.requires_grad());
  Tensor gg = autograd::grad({g}, {x})[0];
  expect_values(gg, {18});
}

// Gradients of several slices of one tensor (q, k, v of a qkv product) are summed into the
// input's pending gradient region by region; the sums must be exactly what slice_backward plus
// a full-size add gives: each element of x.grad here is the sum of the weights that saw it.
TEST(Autograd, OverlappingSlicesOfOneTensorSumTheirGradients) {
  Tensor x = leaf({4, 6});
  const std::vector<double> v1{1, 2, 3, 4, 5, 6, 7, 8}, v2{10, 20, 30, 40, 50, 60, 70, 80},
      v3{-1, -2, -3, -4, -5, -6, -7, -8};
  const Tensor w1 = values(v1, {2, 4}, false), w2 = values(v2, {2, 4}, false),
               w3 = values(v3, {2, 4}, false);
  // p = x^T (6, 4), strided; its pending gradient is a contiguous buffer. Rows 1-2, 2 and 4,
  // 3 and 5: every slice starts past row 0 and two of them overlap.
  auto loss_of = [&](const Tensor& p) {
    return sum(slice(p, 0, 1, 3, 1) * w1) + sum(slice(p, 0, 2, 6, 2) * w2) +
           sum(slice(p, 0, 3, 6, 2) * w3);
  };
  backward(loss_of(transpose(x, 0, 1)));
  std::vector<double> gp(24, 0.0);  // p's gradient, row-major (6, 4)
  auto add_row = [&](int row, const std::vector<double>& w, int wrow) {
    for (int j = 0; j < 4; ++j) gp[row * 4 + j] += w[wrow * 4 + j];
  };
  add_row(1, v1, 0);
  add_row(2, v1, 1);
  add_row(2, v2, 0);
  add_row(4, v2, 1);
  add_row(3, v3, 0);
  add_row(5, v3, 1);
  std::vector<double> gx(24);  // x = p^T
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) gx[i * 6 + j] = gp[j * 4 + i];
  expect_values(x.grad(), gx, 0);
  // The same through the rules (create_graph keeps every slice_backward and add on the graph).
  expect_values(autograd::grad({loss_of(transpose(x, 0, 1))}, {x}, {}, std::nullopt, true)[0], gx,
                0);
}

TEST(Autograd, HookReplacesGradient) {
  Tensor a = values({1, 2}, {2});
  Tensor h = a * 2.0;
  h.register_hook([](const Tensor& g) { return g * 10.0; });
  backward(sum(h));
  expect_values(a.grad(), {20, 20});
}

TEST(Autograd, DeepChainNoRecursion) {
  Tensor x = values({1}, {});
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y + 1.0;
  backward(y);
  expect_values(x.grad(), {1});
}

TEST(Autograd, DeepChainCreateGraphNoRecursion) {
  Tensor x = values({1}, {});
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * x;  // x^100001 at x = 1
  Tensor g = autograd::grad({y}, {x}, {}, std::nullopt, true)[0];
  expect_values(g, {100001});
  EXPECT_TRUE(g.requires_grad());  // the recorded backward is itself a 100,000-deep graph
  Tensor gg = autograd::grad({g}, {x})[0];
  expect_values(gg, {100001.0 * 100000.0});
}

TEST(Autograd, DeepChainFreedWithoutBackward) {
  std::weak_ptr<TensorImpl> first;
  {
    Tensor x = values({1}, {});
    Tensor y = x * 1.0;
    first = y.impl_ptr();
    for (int i = 0; i < 100000; ++i) y = y + 1.0;
  }  // destroying the last link must not recurse 100,000 deep
  EXPECT_TRUE(first.expired());
}

TEST(Autograd, AnomalyModeNamesTheOp) {
  Tensor a = values({1, 2}, {2});
  Tensor y = autograd::from_op(
      a.detach() * 1.0, {a}, [](const Tensor& g) { return std::vector<Tensor>{g / 0.0}; },
      "bad_rule");
  AnomalyModeGuard on(true);
  VK_EXPECT_ERROR(backward(sum(y)), RuntimeError, "bad_rule", "NaN or Inf", "float64[2]");
}

// seed 003 16.7: sqrt(c) by bisection, differentiated with the implicit-function theorem:
// x(c) solves x^2 - c = 0, so dx/dc = -(df/dc)/(df/dx) = 1 / (2x).
double bisect_sqrt(double c) {
  double lo = 0, hi = std::max(1.0, c);
  for (int i = 0; i < 200; ++i) {
    double mid = 0.5 * (lo + hi);
    (mid * mid > c ? hi : lo) = mid;
  }
  return 0.5 * (lo + hi);
}

Tensor sqrt_by_bisection(const Tensor& c) {
  return autograd::apply_function(
      "sqrt_bisection", {c},
      [](autograd::FunctionCtx&, const std::vector<Tensor>& in) {
        return from_vector({bisect_sqrt(in[0].item())}, {}, DType::Float64);
      },
      [](autograd::FunctionCtx& ctx, const Tensor& g) {
        return std::vector<Tensor>{g / (ctx.output * 2.0)};  // forward ops: differentiable again
      });
}

// Defect: a tensor saved by a custom function and then written in place before backward gave its
// gradient from the new values (torch raises). Under ASAN it also checks that a backward that
// throws lets its graph go (the context kept the output: a cycle, leaked).
TEST(CustomFunction, SavedTensorWrittenInPlaceRaisesRegression) {
  Tensor w = values({2, 3}, {2}, false);
  auto scale = [&w](const Tensor& x) {
    return autograd::apply_function(
        "scale", {x},
        [&w](autograd::FunctionCtx& ctx, const std::vector<Tensor>& in) {
          ctx.save_for_backward({w});
          return in[0] * w;
        },
        [](autograd::FunctionCtx& ctx, const Tensor& g) {
          return std::vector<Tensor>{g * ctx.saved_tensors()[0]};
        });
  };
  Tensor x = values({1, 1}, {2});
  Tensor y = scale(x);
  mul_(w, 10.0);
  VK_EXPECT_ERROR(backward(sum(y)), RuntimeError, "saved tensor 0", "modified by an in-place");
  Tensor x2 = values({1, 1}, {2});
  backward(sum(scale(x2)));  // saved after the write: backward uses what forward used
  expect_values(x2.grad(), {20, 30});
}

TEST(CustomFunction, BisectionSqrtImplicitGradient) {
  Tensor c = values({2}, {});
  Tensor x = sqrt_by_bisection(c);
  expect_values(x, {std::sqrt(2.0)}, 1e-12);
  backward(x);
  expect_values(c.grad(), {1.0 / (2 * std::sqrt(2.0))}, 1e-12);
  // The finite difference through the solver itself (both sides carried to full precision).
  double h = 1e-6;
  double fd = (bisect_sqrt(2 + h) - bisect_sqrt(2 - h)) / (2 * h);
  EXPECT_NEAR(c.grad().item(), fd, 1e-8);
}

TEST(CustomFunction, BisectionSqrtSecondDerivative) {
  Tensor c = values({2}, {});
  Tensor x = sqrt_by_bisection(c);
  Tensor d1 = autograd::grad({x}, {c}, {}, std::nullopt, true)[0];
  Tensor d2 = autograd::grad({d1}, {c})[0];
  expect_values(d2, {-0.25 * std::pow(2.0, -1.5)}, 1e-10);
}

TEST(CustomFunction, GradcheckOnBisection) {
  Tensor c = values({2.5}, {});
  auto fn = [](const std::vector<Tensor>& in) { return sqrt_by_bisection(in[0]); };
  EXPECT_EQ(autograd::gradcheck(fn, {c}), "");
  EXPECT_EQ(autograd::gradgradcheck(fn, {c}), "");
}

TEST(Checkpoint, SameGradientsAsWithout) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor h = in[0] * in[1];
    return sum(exp(h * h) + h);
  };
  Tensor a = leaf({3, 4}), b = leaf({3, 4});
  backward(fn({a, b}));
  Tensor ga = a.grad(), gb = b.grad();
  Tensor a2 = a.detach(), b2 = b.detach();
  a2 = clone(a2).set_requires_grad(true);
  b2 = clone(b2).set_requires_grad(true);
  Tensor y = autograd::checkpoint(fn, {a2, b2});
  EXPECT_EQ(y.parents().size(), 2u);  // only the inputs are kept, not fn's intermediates
  backward(y);
  expect_values(a2.grad(), to_vector(ga), 1e-12);
  expect_values(b2.grad(), to_vector(gb), 1e-12);
}

TEST(Checkpoint, WorksWithGradAndCreateGraph) {
  auto fn = [](const std::vector<Tensor>& in) { return sum(in[0] * in[0] * in[0]); };
  Tensor x = values({1, 2}, {2});
  Tensor y = autograd::checkpoint(fn, {x});
  Tensor g = autograd::grad({y}, {x}, {}, std::nullopt, true)[0];  // 3x^2
  expect_values(g, {3, 12});
  Tensor gg = autograd::grad({sum(g)}, {x})[0];  // 6x
  expect_values(gg, {6, 12});
}

TEST(Checkpoint, RecomputesIdenticalRandomness) {
  // A dropout-like mask drawn inside fn must be the same when backward recomputes fn.
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor mask = cast(gt(rand(in[0].shape(), DType::Float64), full({}, 0.5, DType::Float64)),
                       DType::Float64);
    return sum(in[0] * mask);
  };
  manual_seed(7);
  Tensor x = leaf({64});
  Tensor y = autograd::checkpoint(fn, {x});
  rand({10});  // other draws between forward and backward must not matter
  backward(y);
  manual_seed(7);
  leaf({64});
  Tensor expected_mask =
      cast(gt(rand({64}, DType::Float64), full({}, 0.5, DType::Float64)), DType::Float64);
  expect_values(x.grad(), to_vector(expected_mask));
}

}  // namespace
}  // namespace vk::test
