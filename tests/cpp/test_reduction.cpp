// Reductions and the softmax family: values by hand, tie and zero gradients, agreement with a
// naive reference on every kernel path, stability, thread-count determinism and errors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "test_util.h"

namespace vk::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f32(const std::vector<double>& v, const Shape& s) {
  return from_vector(v, s, DType::Float32);
}
Tensor f64(const std::vector<double>& v, const Shape& s) {
  return from_vector(v, s, DType::Float64);
}

Tensor grad_of(const Tensor& y, const Tensor& x) {
  return autograd::grad({y}, {x}, {ones_like(y)})[0];
}

// ---- forward values by hand ----

TEST(Reduction, SumAndMeanByHand) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(sum(x), {21});
  expect_values(sum(x, {0}), {5, 7, 9});
  expect_values(sum(x, {1}), {6, 15});
  EXPECT_EQ(sum(x, {1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(sum(x, {-1}).shape(), (Shape{2}));
  expect_values(mean(x), {3.5});
  expect_values(mean(x, {1}), {2, 5});
  expect_values(mean(x, {0}, true), {2.5, 3.5, 4.5});
  EXPECT_EQ(mean(x, {0}, true).shape(), (Shape{1, 3}));
  // integer sums stay integers (int32 and bool give int64, as in PyTorch)
  Tensor xi = from_vector({1, 2, 3, 4}, {2, 2}, DType::Int32);
  EXPECT_EQ(sum(xi).dtype(), DType::Int64);
  expect_values(sum(xi, {0}), {4, 6});
  expect_values(sum(from_vector({1, 0, 1}, {3}, DType::Bool)), {2});
}

TEST(Reduction, AmaxAminMaxMinByHand) {
  Tensor x = f32({1, 5, 3, 4, 2, 6}, {2, 3});
  expect_values(amax(x), {6});
  expect_values(amax(x, {1}), {5, 6});
  expect_values(amin(x, {0}), {1, 2, 3});
  expect_values(amin(x, {0, 1}, true), {1});
  EXPECT_EQ(amin(x, {0, 1}, true).shape(), (Shape{1, 1}));
  ValuesIndices mx = max(x, 1);
  expect_values(mx.values, {5, 6});
  ASSERT_TRUE(mx.indices.defined());
  EXPECT_EQ(mx.indices.dtype(), DType::Int64);
  expect_values(mx.indices, {1, 2});
  ValuesIndices mn = min(x, 0, true);
  EXPECT_EQ(mn.values.shape(), (Shape{1, 3}));
  EXPECT_EQ(mn.indices.shape(), (Shape{1, 3}));
  expect_values(mn.values, {1, 2, 3});
  expect_values(mn.indices, {0, 1, 0});
  // ties: first occurrence
  ValuesIndices t = max(f32({1, 5, 3, 5}, {4}), 0);
  expect_values(t.values, {5});
  expect_values(t.indices, {1});
  // integers and bools
  Tensor xi = from_vector({3, -7, 9, 2}, {2, 2}, DType::Int64);
  expect_values(amax(xi, {1}), {3, 9});
  expect_values(amin(xi), {-7});
  EXPECT_EQ(amax(xi).dtype(), DType::Int64);
  Tensor b = from_vector({0, 1, 0, 0}, {2, 2}, DType::Bool);
  expect_values(amax(b, {1}), {1, 0});
  expect_values(argmax(b), {1});
}

TEST(Reduction, ArgmaxArgminByHand) {
  Tensor x = f32({3, 1, 3, 1, 0, 7, 7, 0}, {2, 4});
  expect_values(argmax(x, 1), {0, 1});  // first of the tied maxima
  expect_values(argmin(x, 1), {1, 0});
  expect_values(argmax(x, 0), {0, 1, 1, 0});
  expect_values(argmin(x, -2, true), {1, 0, 0, 1});
  EXPECT_EQ(argmin(x, -2, true).shape(), (Shape{1, 4}));
  EXPECT_EQ(argmax(x).dtype(), DType::Int64);
  expect_values(argmax(x), {5});  // flattened
  expect_values(argmin(x), {4});
  expect_values(argmax(from_vector({2, 9, 9}, {3}, DType::Int32), 0), {1});
}

TEST(Reduction, ProdByHand) {
  Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(prod(x), {720});
  expect_values(prod(x, {1}), {6, 120});
  expect_values(prod(x, {0}, true), {4, 10, 18});
  Tensor xi = from_vector({2, 3, -4}, {3}, DType::Int32);
  EXPECT_EQ(prod(xi).dtype(), DType::Int64);
  expect_values(prod(xi), {-24});
  expect_values(prod(f32({2, 0, 3}, {3})), {0});
}

TEST(Reduction, LogsumexpByHand) {
  expect_values(logsumexp(f64({0, 0}, {2})), {std::log(2.0)}, 1e-12);
  expect_values(logsumexp(f64({1, 2, 3}, {3})), {std::log(std::exp(1) + std::exp(2) + std::exp(3))},
                1e-12);
  // stable: no overflow for large inputs, no underflow for very negative ones
  expect_values(logsumexp(f32({1000, 1000}, {2})), {1000 + std::log(2.0)}, 1e-3);
  expect_values(logsumexp(f64({1000, 1001}, {2})), {1001 + std::log1p(std::exp(-1.0))}, 1e-12);
  expect_values(logsumexp(f64({-1000, -1000}, {2})), {-1000 + std::log(2.0)}, 1e-12);
  std::vector<double> with_inf = to_vector(logsumexp(f64({-kInf, -kInf, 0, 1}, {2, 2}), {1}));
  EXPECT_EQ(with_inf[0], -kInf);  // all -inf: -inf, not NaN
  EXPECT_NEAR(with_inf[1], std::log(1 + std::exp(1.0)), 1e-12);
  EXPECT_EQ(logsumexp(f64({kInf, 1}, {2})).item(), kInf);
  // integers give float32, as in PyTorch
  Tensor li = logsumexp(from_vector({0, 0}, {2}, DType::Int64));
  EXPECT_EQ(li.dtype(), DType::Float32);
  expect_values(li, {std::log(2.0)});
}

TEST(Reduction, VarByHand) {
  Tensor x = f64({1, 2, 3, 4}, {4});
  expect_values(var(x), {5.0 / 3.0}, 1e-12);
  expect_values(var(x, {}, 0.0), {1.25}, 1e-12);
  Tensor m = f32({1, 2, 3, 4, 6, 8}, {2, 3});
  expect_values(var(m, {1}), {1, 4});
  expect_values(var(m, {0}, 0.0, true), {2.25, 4, 6.25});
  // large offset: two-pass (centred) variance keeps its accuracy
  expect_values(var(f32({1e4 + 1, 1e4 + 2, 1e4 + 3}, {3})), {1.0}, 1e-6);
  // N - correction <= 0 gives NaN (0/0) as PyTorch does
  EXPECT_TRUE(std::isnan(var(f64({3}, {1})).item()));
}

TEST(Reduction, SoftmaxByHand) {
  Tensor x = f64({1, 2, 3}, {3});
  double z = std::exp(1) + std::exp(2) + std::exp(3);
  expect_values(softmax(x, 0), {std::exp(1) / z, std::exp(2) / z, std::exp(3) / z}, 1e-15);
  expect_values(log_softmax(x, 0), {1 - std::log(z), 2 - std::log(z), 3 - std::log(z)}, 1e-14);
  // along dim 0 of a matrix: columns
  Tensor m = f32({0, 1, 0, 1, std::log(3.0), 2}, {2, 3});
  double e = std::exp(1.0);
  expect_values(softmax(m, 0), {1 / (1 + e), e / (e + 3), 1 / (1 + e * e), e / (1 + e), 3 / (e + 3),
                                e * e / (1 + e * e)});
  // stable for large inputs
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor big = from_vector({1000, 1001}, {2}, dt);
    double p = 1 / (1 + std::exp(1.0));
    expect_values(softmax(big, 0), {p, 1 - p}, 1e-6);
    expect_values(log_softmax(big, 0), {std::log(p), std::log1p(-p)}, 1e-5);
    Tensor neg = from_vector({-1000, -1001}, {2}, dt);
    expect_values(softmax(neg, -1), {1 - p, p}, 1e-6);
  }
  // 0-d
  expect_values(softmax(f64({3}, {}), 0), {1});
  expect_values(log_softmax(f64({3}, {}), -1), {0});
}

TEST(Reduction, SoftmaxRowsSumToOne) {
  manual_seed(7);
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor x = cast(randn({37, 1000}) * 30.0, dt);
    for (int64_t dim : {0, 1}) {
      Tensor s = sum(cast(softmax(x, dim), DType::Float64), {dim});
      for (double v : to_vector(s)) EXPECT_NEAR(v, 1.0, dt == DType::Float32 ? 1e-5 : 1e-12);
      Tensor ls = sum(exp(cast(log_softmax(x, dim), DType::Float64)), {dim});
      for (double v : to_vector(ls)) EXPECT_NEAR(v, 1.0, dt == DType::Float32 ? 1e-4 : 1e-12);
    }
  }
}

// softmax(x, -1, scale, causal) is the composed softmax(where(j <= i, x * scale, -inf)) (to the
// last bit or two: x * scale - max may be one fused rounding), with exact zeros where masked;
// scaled along a middle dim too; a causal mask needs scores along the last dim.
TEST(Reduction, ScaledCausalSoftmaxIsTheComposedOps) {
  manual_seed(8);
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor x = cast(randn({2, 3, 50, 40}) * 4.0, dt);
    Tensor keys = unsqueeze(arange(0.0, 40.0), 0), queries = unsqueeze(arange(0.0, 50.0), 1);
    Tensor masked = where(le(keys, queries), x * 0.3, scalar_like(-INFINITY, x));
    const double tol = dt == DType::Float32 ? 1e-6 : 1e-15;
    const std::vector<double> want = to_vector(softmax(masked, -1));
    const std::vector<double> got = to_vector(softmax(x, -1, 0.3, true));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (want[i] == 0.0) {
        EXPECT_EQ(got[i], 0.0) << i;  // masked: exactly 0
      }
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, want[i])) << i << " " << dtype_name(dt);
    }
    const std::vector<double> mid = to_vector(softmax(x, 1, 0.3));
    const std::vector<double> mid_want = to_vector(softmax(x * 0.3, 1));
    for (size_t i = 0; i < mid.size(); ++i) ASSERT_NEAR(mid[i], mid_want[i], tol) << i;
  }
  VK_EXPECT_ERROR(softmax(randn({3, 4}), 0, 1.0, true), ShapeError, "causal", "[3, 4]");
  VK_EXPECT_ERROR(softmax(randn({4}), 0, 1.0, true), ShapeError, "causal");
}

// The fused kernel's exp against the C library's over the whole useful range.
TEST(Reduction, SoftmaxExpAccuracy) {
  std::vector<double> v;
  for (int i = 0; i <= 4000; ++i) v.push_back(-740.0 + 0.18 * i - 1e-3 * (i % 7));
  // log_softmax(x) = x - logsumexp(x); softmax of [x, 0] = 1 / (1 + exp(-x)): check it elementwise
  // with pairs [x, 0] (dim 1) so every x goes through exp(x - max) with max 0 or x.
  std::vector<double> pairs;
  for (double x : v) {
    pairs.push_back(x);
    pairs.push_back(0.0);
  }
  Tensor p64 = softmax(f64(pairs, {static_cast<int64_t>(v.size()), 2}), 1);
  std::vector<double> got = to_vector(p64);
  for (size_t i = 0; i < v.size(); ++i) {
    double want = v[i] < 0 ? std::exp(v[i]) / (1 + std::exp(v[i])) : 1 / (1 + std::exp(-v[i]));
    EXPECT_NEAR(got[2 * i], want, 1e-15 * want + 1e-300) << "x = " << v[i];
  }
  std::vector<double> small;
  for (double x : v)
    if (x > -100 && x < 88) {
      small.push_back(x);
      small.push_back(0.0);
    }
  Tensor p32 = softmax(f32(small, {static_cast<int64_t>(small.size() / 2), 2}), 1);
  got = to_vector(p32);
  for (size_t i = 0; i < small.size(); i += 2) {
    float x = static_cast<float>(small[i]);
    double want =
        x < 0 ? std::exp(double(x)) / (1 + std::exp(double(x))) : 1 / (1 + std::exp(-double(x)));
    EXPECT_NEAR(got[i], want, 4e-7 * want + 1e-44) << "x = " << x;
  }
}

TEST(Reduction, NaNPropagates) {
  Tensor x = f32({1, kNaN, 3, kNaN}, {4});
  EXPECT_TRUE(std::isnan(amax(x).item()));
  EXPECT_TRUE(std::isnan(amin(x).item()));
  expect_values(argmax(x), {1});
  expect_values(argmin(x), {1});
  ValuesIndices m = max(x, 0);
  EXPECT_TRUE(std::isnan(m.values.item()));
  expect_values(m.indices, {1});
  for (double v : to_vector(softmax(x, 0))) EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(std::isnan(sum(x).item()));
}

TEST(Reduction, EmptyAndZeroDim) {
  Tensor e = zeros({0, 3});
  expect_values(sum(e), {0});
  expect_values(sum(e, {0}), {0, 0, 0});
  expect_values(prod(e, {0}), {1, 1, 1});
  EXPECT_TRUE(std::isnan(mean(e).item()));
  for (double v : to_vector(logsumexp(e, {0}))) EXPECT_EQ(v, -kInf);
  EXPECT_EQ(amax(e, {1}).shape(), (Shape{0}));  // reducing a non-empty dim is fine
  EXPECT_EQ(softmax(e, 1).shape(), (Shape{0, 3}));
  Tensor s = f64({4}, {});
  expect_values(sum(s), {4});
  expect_values(amax(s), {4});
  expect_values(max(s, 0).values, {4});
  expect_values(max(s, -1).indices, {0});
  expect_values(argmax(s), {0});
  expect_values(prod(s), {4});
  EXPECT_EQ(mean(s).shape(), Shape{});
}

// ---- gradients ----

// Seed 003's trap: ties must split the gradient, never duplicate it.
TEST(ReductionGrad, AmaxTiesSplitEvenly) {
  Tensor x = values({1, 5, 3, 5}, {4});
  expect_values(grad_of(amax(x), x), {0, 0.5, 0, 0.5});
  Tensor y = values({5, 1, 3, 1}, {4});
  expect_values(grad_of(amin(y), y), {0, 0.5, 0, 0.5});
  // along a dim, with keepdim: each row splits its own gradient
  Tensor m = values({2, 2, 2, 1, 7, 0}, {2, 3});
  expect_values(grad_of(amax(m, {1}, true), m), {1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 1, 0}, 1e-12);
  Tensor n = values({2, 2, 2, 1, 7, 0}, {2, 3});
  Tensor g = grad_of(amin(n, {0}) * f64({1, 2, 3}, {3}), n);
  expect_values(g, {0, 2, 0, 1, 0, 3});
  // the total leaving equals the total arriving
  Tensor all = values({4, 4, 4, 4, 1}, {5});
  EXPECT_NEAR(sum(grad_of(amax(all), all)).item(), 1.0, 1e-15);
}

TEST(ReductionGrad, MaxDimRoutesToIndex) {
  Tensor x = values({1, 5, 3, 5}, {4});
  expect_values(grad_of(max(x, 0).values, x), {0, 1, 0, 0});
  Tensor y = values({1, 5, 3, 5}, {4});
  expect_values(grad_of(min(y, 0).values, y), {1, 0, 0, 0});
  Tensor m = values({2, 2, 2, 1, 7, 7}, {2, 3});
  expect_values(grad_of(max(m, 1, true).values, m), {1, 0, 0, 0, 1, 0});
  Tensor k = values({2, 9, 2, 1, 7, 7}, {2, 3});
  expect_values(grad_of(max(k, 0).values * f64({1, 2, 3}, {3}), k), {1, 2, 0, 0, 0, 3});
}

TEST(ReductionGrad, ProdWithZeros) {
  Tensor none = values({2, 3, 4}, {3});
  expect_values(grad_of(prod(none), none), {12, 8, 6}, 1e-12);
  Tensor one = values({2, 0, 3}, {3});
  expect_values(grad_of(prod(one), one), {0, 6, 0});
  Tensor two = values({2, 0, 0, 3}, {4});
  expect_values(grad_of(prod(two), two), {0, 0, 0, 0});
  Tensor rows = values({2, 0, 3, 1, 2, 3, 0, 5, 0}, {3, 3});
  expect_values(grad_of(prod(rows, {1}), rows), {0, 6, 0, 6, 3, 2, 0, 0, 0}, 1e-12);
  // second order at a zero: d2 prod / dx0 dx1 of [2, 0, 3] is x2 = 3, of x1 with itself is 0
  Tensor x = values({2, 0, 3}, {3});
  Tensor g = autograd::grad({prod(x)}, {x}, {}, true, true)[0];
  Tensor h1 = autograd::grad({sum(g * f64({0, 1, 0}, {3}))}, {x})[0];  // d/dx (x0 * x2)
  expect_values(h1, {3, 0, 2}, 1e-12);
  Tensor x2 = values({2, 0, 0, 5}, {4});
  Tensor g2 = autograd::grad({prod(x2)}, {x2}, {}, true, true)[0];
  Tensor h2 = autograd::grad({sum(g2 * f64({0, 1, 0, 0}, {4}))}, {x2})[0];  // d/dx (x0 x2 x3)
  expect_values(h2, {0, 0, 10, 0}, 1e-12);
}

TEST(ReductionGrad, SoftmaxFamily) {
  // d softmax_i / dx_j = s_i (delta_ij - s_j): for a sum weighted by w, s * (w - s.w)
  Tensor x = values({0.5, -1, 2}, {3});
  Tensor w = f64({1, 2, 3}, {3});
  Tensor s = softmax(x.detach(), 0);
  std::vector<double> sv = to_vector(s);
  double dot = sv[0] * 1 + sv[1] * 2 + sv[2] * 3;
  expect_values(grad_of(sum(softmax(x, 0) * w), x),
                {sv[0] * (1 - dot), sv[1] * (2 - dot), sv[2] * (3 - dot)}, 1e-14);
  Tensor y = values({0.5, -1, 2}, {3});
  expect_values(grad_of(sum(log_softmax(y, 0) * w), y),
                {1 - 6 * sv[0], 2 - 6 * sv[1], 3 - 6 * sv[2]}, 1e-14);
  Tensor z = values({0.5, -1, 2}, {3});
  std::vector<double> lg = to_vector(grad_of(logsumexp(z), z));
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(lg[i], sv[i], 1e-15);
}

TEST(ReductionGrad, MeanAndVar) {
  Tensor x = values({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(grad_of(mean(x, {1}), x), std::vector<double>(6, 1.0 / 3), 1e-15);
  Tensor y = values({1, 2, 3, 4}, {4});
  // d var / dx = 2 (x - mean) / (N - 1)
  expect_values(grad_of(var(y), y), {-1, -1.0 / 3, 1.0 / 3, 1}, 1e-15);
  Tensor z = values({1, 2, 3, 4}, {4});
  expect_values(grad_of(var(z, {0}, 0.0), z), {-0.75, -0.25, 0.25, 0.75}, 1e-15);
}

// ---- every kernel path against a naive reference ----

struct Ref {
  std::vector<double> sum, prod, max, min, argmax, lse;
};

// Reduces v (row-major, `shape`) over `dims` in the obvious way, in double.
Ref reference(const std::vector<double>& v, const Shape& shape, const std::vector<int64_t>& dims) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  Shape out_shape = reduced_shape(shape, dims, false);
  int64_t n_out = numel_of(out_shape);
  Ref r;
  r.sum.assign(n_out, 0);
  r.prod.assign(n_out, 1);
  r.max.assign(n_out, -kInf);
  r.min.assign(n_out, kInf);
  r.argmax.assign(n_out, -1);
  std::vector<int64_t> count(n_out, 0);
  std::vector<std::vector<double>> members(n_out);
  std::vector<int64_t> idx(nd, 0);
  for (size_t flat = 0; flat < v.size(); ++flat) {
    int64_t o = 0, ri = 0;
    for (int64_t d = 0; d < nd; ++d) {
      if (std::binary_search(dims.begin(), dims.end(), d))
        ri = ri * shape[d] + idx[d];
      else
        o = o * shape[d] + idx[d];
    }
    double x = v[flat];
    r.sum[o] += x;
    r.prod[o] *= x;
    if (x > r.max[o]) {
      r.max[o] = x;
      r.argmax[o] = static_cast<double>(ri);
    }
    r.min[o] = std::min(r.min[o], x);
    members[o].push_back(x);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  for (int64_t o = 0; o < n_out; ++o) {
    double s = 0;
    for (double x : members[o]) s += std::exp(x - r.max[o]);
    r.lse.push_back(r.max[o] + std::log(s));
  }
  return r;
}

void check_against_reference(const Tensor& x, const std::vector<int64_t>& dims, DType dt,
                             const std::string& label) {
  SCOPED_TRACE(label);
  std::vector<double> v = to_vector(x);
  Ref r = reference(v, x.shape(), dims);
  double tol = dt == DType::Float32 ? 1e-6 : 1e-13;
  expect_values(sum(x, dims), r.sum, tol * x.numel());
  expect_values(amax(x, dims), r.max, 0);
  expect_values(amin(x, dims), r.min, 0);
  expect_values(logsumexp(x, dims), r.lse, tol * 20);
  std::vector<double> rp = r.prod;
  std::vector<double> gp = to_vector(prod(x, dims));
  for (size_t i = 0; i < rp.size(); ++i) EXPECT_NEAR(gp[i], rp[i], tol * 10 * std::abs(rp[i]));
  if (dims.size() == 1) {
    expect_values(argmax(x, dims[0]), r.argmax, 0);
    expect_values(max(x, dims[0]).indices, r.argmax, 0);
  }
}

TEST(ReductionPaths, MatchReferenceOnEveryLayout) {
  manual_seed(11);
  const std::vector<std::vector<int64_t>> dim_sets = {{0},    {1},    {2},      {0, 1},
                                                      {0, 2}, {1, 2}, {0, 1, 2}};
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (Shape shape : {Shape{3, 4, 5}, Shape{2, 1, 7}, Shape{5, 300, 3}, Shape{1, 2, 20000}}) {
      // positive, and close to 1 for long reductions, so that prod stays finite
      Tensor base = numel_of(shape) > 1000 ? cast(rand(shape) * 0.02 + 0.99, dt)
                                           : cast(rand(shape) * 2.0 + 0.1, dt);
      for (const auto& dims : dim_sets) {
        check_against_reference(base, dims, dt,
                                "contiguous " + shape_str(shape) + " dims " + shape_str(dims));
        Tensor p = permute(base, {2, 0, 1});  // non-contiguous views take the strided paths
        check_against_reference(p, dims, dt,
                                "permuted " + shape_str(p.shape()) + " dims " + shape_str(dims));
      }
    }
  }
}

TEST(ReductionPaths, LongRowsAndColumns) {
  manual_seed(5);
  // row blocks (20000 > one block), column blocks (few columns, many rows), a full reduction
  for (Shape shape : {Shape{3, 20000}, Shape{20000, 3}, Shape{70001}}) {
    Tensor x = rand(shape, DType::Float64);
    std::vector<int64_t> dims = {static_cast<int64_t>(shape.size()) - 1};
    check_against_reference(x, dims, DType::Float64, "last " + shape_str(shape));
    check_against_reference(x, {0}, DType::Float64, "first " + shape_str(shape));
  }
  // ties across block boundaries keep the first index
  std::vector<double> v(30000, 1.0);
  v[20000] = 5;
  v[25000] = 5;
  v[29999] = 5;
  expect_values(argmax(f32(v, {30000}), 0), {20000});
  expect_values(max(f32(v, {30000, 1}), 0).indices, {20000});
  std::vector<double> w(3 * 30000, 0.0);  // the same along dim 0 of a [30000, 3] matrix
  for (int64_t c = 0; c < 3; ++c) {
    w[20000 * 3 + c] = 5;
    w[25000 * 3 + c] = 5;
  }
  expect_values(argmax(f64(w, {30000, 3}), 0), {20000, 20000, 20000});
  expect_values(argmin(f64(w, {30000, 3}), 0), {0, 0, 0});
}

TEST(ReductionPaths, IntegersMatchReference) {
  manual_seed(8);
  for (DType dt : {DType::Int32, DType::Int64}) {
    for (Shape shape : {Shape{300, 3}, Shape{3, 300}, Shape{7, 40, 9}}) {
      Tensor x = randint(-50, 50, shape, dt);
      std::vector<double> v = to_vector(x);
      for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(shape) + " dim " +
                     std::to_string(d));
        Ref r = reference(v, shape, {d});
        expect_values(sum(x, {d}), r.sum, 0);
        expect_values(amax(x, {d}), r.max, 0);
        expect_values(amin(x, {d}), r.min, 0);
        expect_values(argmax(x, d), r.argmax, 0);
        EXPECT_EQ(amax(x, {d}).dtype(), dt);
        EXPECT_EQ(sum(x, {d}).dtype(), DType::Int64);
      }
    }
  }
}

TEST(ReductionPaths, Float32SumIsAccurate) {
  manual_seed(3);
  const int64_t n = 1 << 22;
  Tensor x = rand({n});
  std::vector<double> v = to_vector(x);
  double ref = 0;
  for (double d : v) ref += d;  // exact enough in double
  double got = sum(x).item();
  EXPECT_NEAR(got, ref, std::abs(ref) * 1e-7);  // float32 rounding of the result only
  EXPECT_NEAR(mean(x).item(), ref / n, 1e-7);
  // a float32 running sum would stall at 2^24: ones beyond that must still count
  Tensor ones_big = ones({(1 << 24) + 4});
  EXPECT_EQ(sum(ones_big).item(), static_cast<double>((1 << 24) + 4));
}

// ---- determinism: the same bits at any thread count ----

std::vector<char> bytes_of(const Tensor& t) {
  Tensor c = contiguous(t);
  const char* p = static_cast<const char*>(c.raw_data());
  return std::vector<char>(p, p + c.numel() * dtype_size(c.dtype()));
}

struct ThreadCountGuard {
  int saved = cpu::num_threads();
  ~ThreadCountGuard() { cpu::set_num_threads(saved); }
};

// Every result computed with one thread, then with two and three: identical bit for bit.
TEST(ReductionDeterminism, BitwiseIdenticalAcrossThreadCounts) {
  ThreadCountGuard guard;
  manual_seed(2024);
  Tensor flat = randn({1 << 20});
  Tensor mat = randn({513, 2049});
  Tensor mat_t = transpose(mat, 0, 1);
  // float32 sums accumulate in double, which hides most order changes once rounded to float32:
  // float64 inputs show any change of summation order in the last bit.
  Tensor flat64 = randn({1 << 20}, DType::Float64);
  Tensor mat64 = randn({513, 2049}, DType::Float64);
  using Fn = std::function<Tensor()>;
  std::vector<std::pair<std::string, Fn>> runs = {
      {"sum all", [&] { return sum(flat); }},
      {"mean all", [&] { return mean(flat); }},
      {"var all", [&] { return var(flat); }},
      {"logsumexp all", [&] { return logsumexp(flat); }},
      {"softmax flat", [&] { return softmax(flat, 0); }},
      {"log_softmax flat", [&] { return log_softmax(flat, 0); }},
      {"argmax flat", [&] { return argmax(flat); }},
      {"amax flat", [&] { return amax(flat); }},
      {"sum matrix all", [&] { return sum(mat); }},
      {"sum all f64", [&] { return sum(flat64); }},
      {"mean all f64", [&] { return mean(flat64); }},
      {"var all f64", [&] { return var(flat64); }},
      {"logsumexp all f64", [&] { return logsumexp(flat64); }},
      {"softmax flat f64", [&] { return softmax(flat64, 0); }},
      {"sum matrix all f64", [&] { return sum(mat64); }},
  };
  for (int64_t d : {0, 1}) {
    std::string s = " dim " + std::to_string(d);
    runs.push_back({"sum" + s, [&, d] { return sum(mat, {d}); }});
    runs.push_back({"mean" + s, [&, d] { return mean(mat, {d}); }});
    runs.push_back({"var" + s, [&, d] { return var(mat, {d}); }});
    runs.push_back({"logsumexp" + s, [&, d] { return logsumexp(mat, {d}); }});
    runs.push_back({"softmax" + s, [&, d] { return softmax(mat, d); }});
    runs.push_back({"log_softmax" + s, [&, d] { return log_softmax(mat, d); }});
    runs.push_back({"sum transposed" + s, [&, d] { return sum(mat_t, {d}); }});
    runs.push_back({"mean transposed" + s, [&, d] { return mean(mat_t, {d}); }});
    runs.push_back({"prod" + s, [&, d] { return prod(mat, {d}); }});
    runs.push_back({"argmax" + s, [&, d] { return argmax(mat, d); }});
    runs.push_back({"sum f64" + s, [&, d] { return sum(mat64, {d}); }});
    runs.push_back({"var f64" + s, [&, d] { return var(mat64, {d}); }});
    runs.push_back({"logsumexp f64" + s, [&, d] { return logsumexp(mat64, {d}); }});
    runs.push_back({"softmax f64" + s, [&, d] { return softmax(mat64, d); }});
  }
  cpu::set_num_threads(1);
  std::vector<std::vector<char>> one;
  for (auto& run : runs) one.push_back(bytes_of(run.second()));
  for (int threads : {2, 3}) {  // 3: other range boundaries
    cpu::set_num_threads(threads);
    for (size_t i = 0; i < runs.size(); ++i) {
      std::vector<char> many = bytes_of(runs[i].second());
      ASSERT_EQ(many.size(), one[i].size()) << runs[i].first;
      EXPECT_EQ(std::memcmp(one[i].data(), many.data(), many.size()), 0)
          << runs[i].first << " differs between 1 and " << threads << " threads";
    }
  }
}

// ---- errors ----

TEST(ReductionErrors, DimOutOfRangeNamesTheOp) {
  Tensor x = zeros({2, 3});
  VK_EXPECT_ERROR(sum(x, {2}), IndexError, "sum", "2 dims");
  VK_EXPECT_ERROR(mean(x, {-3}), IndexError, "mean", "2 dims");
  VK_EXPECT_ERROR(amax(x, {5}), IndexError, "amax");
  VK_EXPECT_ERROR(amin(x, {0, 2}), IndexError, "amin");
  VK_EXPECT_ERROR(max(x, 2), IndexError, "max", "2 dims");
  VK_EXPECT_ERROR(min(x, -3), IndexError, "min");
  VK_EXPECT_ERROR(prod(x, {3}), IndexError, "prod");
  VK_EXPECT_ERROR(argmax(x, 2), IndexError, "argmax");
  VK_EXPECT_ERROR(argmin(x, -3), IndexError, "argmin");
  VK_EXPECT_ERROR(logsumexp(x, {2}), IndexError, "logsumexp");
  VK_EXPECT_ERROR(var(x, {2}), IndexError, "var");
  VK_EXPECT_ERROR(softmax(x, 2), IndexError, "softmax", "2 dims");
  VK_EXPECT_ERROR(log_softmax(x, -3), IndexError, "log_softmax");
}

TEST(ReductionErrors, EmptyAndDtypes) {
  VK_EXPECT_ERROR(amax(zeros({0})), ShapeError, "amax", "size 0");
  VK_EXPECT_ERROR(amin(zeros({2, 0}), {1}), ShapeError, "amin");
  VK_EXPECT_ERROR(max(zeros({2, 0}), 1), ShapeError, "max");
  VK_EXPECT_ERROR(argmax(zeros({0, 2}), 0), ShapeError, "argmax");
  VK_EXPECT_ERROR(argmin(zeros({0})), ShapeError, "argmin");
  Tensor xi = from_vector({1, 2}, {2}, DType::Int64);
  VK_EXPECT_ERROR(mean(xi), DTypeError, "mean", "int64");
  VK_EXPECT_ERROR(var(xi), DTypeError, "var", "int64");
  VK_EXPECT_ERROR(softmax(xi, 0), DTypeError, "softmax", "int64");
  VK_EXPECT_ERROR(log_softmax(xi, 0), DTypeError, "log_softmax");
}

}  // namespace
}  // namespace vk::test
