// Element-wise ops: forward values against hand-computed numbers, gradients by hand, dtype rules
// and errors. (Finite-difference checks of every rule are in the op-table sweep.)
#include <functional>
#include <limits>
#include <numbers>

#include "test_util.h"

namespace vk::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(const std::vector<double>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, DType::Float64);
}
Tensor f32(const std::vector<double>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, DType::Float32);
}

// Like expect_values, but infinities must match exactly (EXPECT_NEAR fails on inf - inf).
void expect_close(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_TRUE(t.defined());
  std::vector<double> got = to_vector(t);
  ASSERT_EQ(got.size(), want.size()) << t.describe();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": " << got[i];
    else if (std::isinf(want[i]))
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    else
      EXPECT_NEAR(got[i], want[i], tol) << "at flat index " << i << " of " << t.describe();
  }
}

// d sum(y * upstream) / dx for a one-input function at x.
std::vector<double> grad_of(const std::function<Tensor(const Tensor&)>& fn,
                            const std::vector<double>& x, double upstream = 1.0) {
  Tensor t = values(x, {static_cast<int64_t>(x.size())});
  Tensor y = fn(t);
  autograd::backward(y, full_like(y, upstream));
  return to_vector(t.grad());
}

void expect_vec(const std::vector<double>& got, const std::vector<double>& want,
                double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// ---- forward values ----

TEST(Elementwise, LogExpFamily) {
  expect_close(log(f64({1.0, std::exp(2.0), 0.5})), {0.0, 2.0, -0.6931471805599453}, 1e-15);
  expect_close(log1p(f64({0.0, 1.0})), {0.0, 0.6931471805599453}, 1e-15);
  expect_close(expm1(f64({0.0, 1.0})), {0.0, 1.718281828459045}, 1e-15);
  // accurate where log(1 + x) and exp(x) - 1 lose digits (those are off by ~1e-17 here)
  expect_close(log1p(f64({1e-10})), {9.999999999500001e-11}, 1e-25);
  expect_close(expm1(f64({1e-10})), {1.00000000005e-10}, 1e-25);
  expect_close(log(f64({0.0, -1.0})), {-kInf, kNaN});
}

TEST(Elementwise, RootsAndReciprocal) {
  expect_close(sqrt(f64({4.0, 2.25, 0.0})), {2.0, 1.5, 0.0}, 1e-15);
  expect_close(rsqrt(f64({4.0, 0.25})), {0.5, 2.0}, 1e-15);
  expect_close(reciprocal(f64({4.0, -0.5})), {0.25, -2.0}, 1e-15);
  expect_close(reciprocal(f64({0.0})), {kInf});
}

TEST(Elementwise, AbsSignRelu) {
  expect_close(abs(f64({-2.5, 0.0, 3.0})), {2.5, 0.0, 3.0}, 0);
  expect_close(sign(f64({-2.5, 0.0, 3.0, kNaN})), {-1.0, 0.0, 1.0, 0.0}, 0);
  expect_close(relu(f64({-1.0, 2.0, 0.0, -3.0, 5.0})), {0.0, 2.0, 0.0, 0.0, 5.0}, 0);
  expect_close(relu(f64({kNaN})), {kNaN});
  // integers stay integers
  Tensor i = ints({-3, 0, 4}, {3});
  EXPECT_EQ(abs(i).dtype(), DType::Int64);
  expect_close(abs(i), {3, 0, 4}, 0);
  expect_close(sign(i), {-1, 0, 1}, 0);
  expect_close(relu(i), {0, 0, 4}, 0);
  EXPECT_EQ(relu(i).dtype(), DType::Int64);
}

TEST(Elementwise, Trigonometry) {
  const double pi = std::numbers::pi;
  expect_close(sin(f64({0.0, pi / 2, pi / 6})), {0.0, 1.0, 0.5}, 1e-15);
  expect_close(cos(f64({0.0, pi, pi / 3})), {1.0, -1.0, 0.5}, 1e-15);
  expect_close(tanh(f64({0.0, 0.5, -0.5})), {0.0, 0.46211715726000974, -0.46211715726000974},
               1e-15);
  expect_close(sigmoid(f64({0.0, 1.0, -1.0})), {0.5, 0.7310585786300049, 1 - 0.7310585786300049},
               1e-15);
  // float32 saturates without NaN
  expect_close(sigmoid(f32({-200.0, 200.0})), {0.0, 1.0}, 0);
}

TEST(Elementwise, ErfAndGelu) {
  expect_close(erf(f64({0.0, 0.5, 1.0, -2.0})),
               {0.0, 0.5204998778130465, 0.8427007929497149, -0.9953222650189527}, 1e-15);
  expect_close(erfc(f64({1.0, -0.5, 3.0})),
               {0.15729920705028513, 1.5204998778130465, 2.2090496998585438e-05}, 1e-15);
  // x * Phi(x)
  expect_close(
      gelu(f64({-1.0, 0.5, 1.0, 2.0, 0.0})),
      {-0.15865525393145707, 0.34573123063700656, 0.8413447460685429, 1.9544997361036416, 0.0},
      1e-14);
  expect_close(
      gelu(f64({-1.0, 0.5, 1.0, 2.0, 0.0}), true),
      {-0.15880800939172324, 0.34571400982514394, 0.8411919906082768, 1.954597694087775, 0.0},
      1e-14);
  expect_close(gelu(f32({1.0}), false), {0.8413447460685429}, 1e-6);
  // g * (Phi(x) + x phi(x)), from math.erf / math.exp
  expect_close(
      gelu_backward(f64({2.0, 1.0, 1.0, -0.5, 1.0}), f64({1.0, -1.0, 0.0, 2.0, -3.0})),
      {2.166630941175373, -0.08331547058768629, 0.5, -0.5426159005390985, -0.011945647204183918},
      1e-14);
  expect_close(gelu_backward(f32({2.0}), f32({1.0})), {2.166630941175373}, 1e-6);
  EXPECT_THROW(gelu_backward(ints({1}, {1}), ints({1}, {1})), DTypeError);
}

// Regression (#18: relu's gradient was where(gt(x, 0), g, 0), two passes and a bool temporary,
// 3.1x torch's time over 1M elements): one op, torch's threshold_backward(g, x, 0) value for value,
// a NaN input passing g as torch's does (the rule it replaced gave 0 there), 0 at x = +-0.
TEST(Elementwise, ReluBackwardIsTorchsThresholdBackward) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor g = from_vector({1.5, -2.0, 3.0, 4.0, 5.0, kNaN, 7.0}, {7}, dt);
    const Tensor x = from_vector({2.0, 0.5, 0.0, -0.0, -1.0, 1.0, kNaN}, {7}, dt);
    expect_close(relu_backward(g, x), {1.5, -2.0, 0.0, 0.0, 0.0, kNaN, 7.0});
    // relu's rule runs it: the gradient of relu at those points
    Tensor xr = from_vector({2.0, 0.5, 0.0, -0.0, -1.0, 1.0, kNaN}, {7}, dt);
    xr.set_requires_grad(true);
    autograd::backward(sum(relu(xr) * from_vector({1.5, -2.0, 3.0, 4.0, 5.0, 6.0, 7.0}, {7}, dt)));
    expect_close(xr.grad(), {1.5, -2.0, 0.0, 0.0, 0.0, 6.0, 7.0});
  }
  EXPECT_THROW(relu_backward(ints({1}, {1}), ints({1}, {1})), DTypeError);
}

// tanh's and sigmoid's gradients from their outputs, one op each (three before): by hand, and
// what their rules give through autograd.
TEST(Elementwise, TanhAndSigmoidBackwardFromTheOutput) {
  expect_close(tanh_backward(f64({2.0, -1.0, 3.0}), f64({0.5, -0.25, 1.0})), {1.5, -0.9375, 0.0},
               1e-15);
  expect_close(sigmoid_backward(f64({2.0, -1.0, 3.0}), f64({0.5, 0.25, 1.0})), {0.5, -0.1875, 0.0},
               1e-15);
  Tensor x = f64({-1.3, 0.2, 2.5});
  x.set_requires_grad(true);
  const Tensor g = f64({0.7, -1.1, 2.0});
  autograd::backward(sum(tanh(x) * g));
  expect_close(x.grad(), to_vector(g * (1.0 - tanh(x) * tanh(x))), 1e-15);
  Tensor z = f64({-1.3, 0.2, 2.5});
  z.set_requires_grad(true);
  autograd::backward(sum(sigmoid(z) * g));
  expect_close(z.grad(), to_vector(g * sigmoid(z) * (1.0 - sigmoid(z))), 1e-15);
  EXPECT_THROW(tanh_backward(ints({1}, {1}), ints({1}, {1})), DTypeError);
}

TEST(Elementwise, RoundingHalfToEven) {
  expect_close(round(f64({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6})),
               {0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 2.0, 3.0, -3.0}, 0);
  expect_close(round(f32({0.5, 1.5, 2.5, 3.5})), {0.0, 2.0, 2.0, 4.0}, 0);
  expect_close(floor(f64({-1.5, -0.2, 0.0, 2.7})), {-2.0, -1.0, 0.0, 2.0}, 0);
  expect_close(ceil(f64({-1.5, -0.2, 0.0, 2.2})), {-1.0, -0.0, 0.0, 3.0}, 0);
  Tensor i = ints({-3, 7}, {2});
  for (const Tensor& r : {floor(i), ceil(i), round(i)}) {
    EXPECT_EQ(r.dtype(), DType::Int64);
    expect_close(r, {-3, 7}, 0);
  }
}

TEST(Elementwise, Pow) {
  expect_close(pow(f64({2.0, 9.0, 4.0, 0.0}), f64({3.0, 0.5, -1.0, 0.0})), {8.0, 3.0, 0.25, 1.0},
               1e-15);
  expect_close(pow(f64({-2.0, -2.0}), f64({2.0, 3.0})), {4.0, -8.0}, 0);
  expect_close(pow(f64({-2.0}), f64({0.5})), {kNaN});
  expect_close(pow(f64({1.5, 3.0}), 2.0), {2.25, 9.0}, 1e-15);
  // integer powers stay exact integers
  Tensor p = pow(ints({3, -2, 5, 1, -1, 2}, {6}), ints({4, 3, 0, 2, 3, 1}, {6}));
  EXPECT_EQ(p.dtype(), DType::Int64);
  expect_close(p, {81, -8, 1, 1, -1, 2}, 0);
  // a tensor of negative integer exponents truncates 1 / base^-e, as PyTorch; a negative scalar
  // exponent has no integer result: an error, as PyTorch
  expect_close(pow(ints({2, 1, -1, -1, -3}, {5}), ints({-1, -5, -3, -2, -2}, {5})),
               {0, 1, -1, 1, 0}, 0);
  EXPECT_THROW(pow(ints({2, 2}, {2}), Scalar(int64_t{-1})), RuntimeError);
  // a fractional exponent makes an integer base float32
  Tensor q = pow(ints({4}, {1}), 0.5);
  EXPECT_EQ(q.dtype(), DType::Float32);
  expect_close(q, {2.0}, 0);
}

// Python's // and % on every sign combination; -7 // 2 = -4 and -7 % 2 = 1, as Python and PyTorch.
TEST(Elementwise, FloorDivideAndRemainderFollowPython) {
  Tensor a = ints({7, -7, 7, -7, 6, -6, 0}, {7}), b = ints({2, 2, -2, -2, 3, -3, 5}, {7});
  Tensor q = floor_divide(a, b), r = remainder(a, b);
  EXPECT_EQ(q.dtype(), DType::Int64);
  expect_close(q, {3, -4, -4, 3, 2, 2, 0}, 0);
  expect_close(r, {1, 1, -1, -1, 0, 0, 0}, 0);
  expect_close(floor_divide(f64({7.5, -7.5, 7.5, 1.0}), f64({2.0, 2.0, -2.0, 0.1})),
               {3.0, -4.0, -4.0, 9.0}, 0);  // 1.0 // 0.1 is 9.0 in Python: 0.1 is a bit above 1/10
  expect_close(remainder(f64({7.5, -7.5, 7.5}), f64({2.0, 2.0, -2.0})), {1.5, 0.5, -0.5}, 0);
  expect_close(floor_divide(f64({1.0, -1.0}), f64({0.0, 0.0})), {kInf, -kInf});
  // the minimum integer over -1 wraps (no UB), as PyTorch
  Tensor lo = ints({std::numeric_limits<int64_t>::min()}, {1});
  EXPECT_EQ(*floor_divide(lo, ints({-1}, {1})).data<int64_t>(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*remainder(lo, ints({-1}, {1})).data<int64_t>(), 0);
}

TEST(ElementwiseErrors, IntegerFloorDivideByZeroRaises) {
  for (auto* f : {&floor_divide, &remainder}) {
    try {
      (*f)(ints({1, 2}, {2}), ints({1, 0}, {2}));
      ADD_FAILURE() << "no error";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
    }
  }
}

TEST(Elementwise, MaximumMinimum) {
  Tensor a = f64({1.0, -2.0, 3.0, kNaN, 0.0});
  Tensor b = f64({0.5, 4.0, 3.0, 1.0, kNaN});
  expect_close(maximum(a, b), {1.0, 4.0, 3.0, kNaN, kNaN}, 0);
  expect_close(minimum(a, b), {0.5, -2.0, 3.0, kNaN, kNaN}, 0);
  // broadcasting, mixed integer dtypes
  Tensor m = maximum(ints({1, 5}, {2, 1}), from_vector({3, 2, 7}, {1, 3}, DType::Int32));
  EXPECT_EQ(m.dtype(), DType::Int64);
  EXPECT_EQ(m.shape(), (Shape{2, 3}));
  expect_close(m, {3, 2, 7, 5, 5, 7}, 0);
}

TEST(Elementwise, Where) {
  Tensor c = from_vector({1, 0, 1}, {3}, DType::Bool);
  expect_close(where(c, f64({1, 2, 3}), f64({-1, -2, -3})), {1, -2, 3}, 0);
  // all three broadcast; int and float branches promote to float
  Tensor r = where(from_vector({1, 0}, {2, 1}, DType::Bool), ints({1, 2, 3}, {1, 3}),
                   from_vector({0.5}, {}, DType::Float32));
  EXPECT_EQ(r.dtype(), DType::Float32);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  expect_close(r, {1, 2, 3, 0.5, 0.5, 0.5}, 0);
}

TEST(Elementwise, Clamp) {
  Tensor x = f64({-2.0, -0.5, 0.0, 0.7, 3.0, kNaN});
  expect_close(clamp(x, -1.0, 1.0), {-1.0, -0.5, 0.0, 0.7, 1.0, kNaN}, 0);
  expect_close(clamp(x, 0.0, kInf), {0.0, 0.0, 0.0, 0.7, 3.0, kNaN}, 0);
  expect_close(clamp(x, -kInf, 0.0), {-2.0, -0.5, 0.0, 0.0, 0.0, kNaN}, 0);
  expect_close(clamp(f64({-1.0, 5.0}), 2.0, 1.0), {1.0, 1.0}, 0);  // min > max: all max
  Tensor i = ints({-5, 2, 9}, {3});
  Tensor ci = clamp(i, 0, 4);
  EXPECT_EQ(ci.dtype(), DType::Int64);
  expect_close(ci, {0, 2, 4}, 0);
  Tensor open_low = clamp(i, std::nullopt, 4);
  EXPECT_EQ(open_low.dtype(), DType::Int64);
  expect_close(open_low, {-5, 2, 4}, 0);
  Tensor cf = clamp(i, 0.5, 3.5);
  EXPECT_EQ(cf.dtype(), DType::Float32);
  expect_close(cf, {0.5, 2.0, 3.5}, 0);
  // by kind, not value: a float bound gives float32 even when it is whole, or infinite
  EXPECT_EQ(clamp(i, 0.0, 4.0).dtype(), DType::Float32);
  EXPECT_EQ(clamp(i, -kInf, 4).dtype(), DType::Float32);
  // int64 bounds stay exact; a bound that int32 cannot hold is an error, as PyTorch
  const int64_t big = (int64_t{1} << 53) + 1;
  Tensor cb = clamp(full({1}, 0, DType::Int64), big, std::nullopt);
  EXPECT_EQ(*cb.data<int64_t>(), big);
  VK_EXPECT_ERROR(clamp(full({1}, 0, DType::Int32), int64_t{1} << 40, std::nullopt), RuntimeError,
                  "clamp", "1099511627776", "int32");
  // a NaN bound gives NaN, as torch.clamp
  expect_close(clamp(f64({1.0}), std::nullopt, kNaN), {kNaN}, 0);
}

TEST(Elementwise, Comparisons) {
  Tensor a = f64({1.0, 2.0, 3.0});
  Tensor b = f64({2.0, 2.0, 2.0});
  struct Case {
    Tensor got;
    std::vector<double> want;
  };
  for (const Case& c : {Case{lt(a, b), {1, 0, 0}}, Case{le(a, b), {1, 1, 0}},
                        Case{gt(a, b), {0, 0, 1}}, Case{ge(a, b), {0, 1, 1}}}) {
    EXPECT_EQ(c.got.dtype(), DType::Bool);
    expect_close(c.got, c.want, 0);
  }
  // mixed dtypes compare after promotion; broadcasting
  Tensor g = gt(ints({1, 2}, {2, 1}), from_vector({1.5}, {1}, DType::Float32));
  EXPECT_EQ(g.shape(), (Shape{2, 1}));
  expect_close(g, {0, 1}, 0);
  // comparisons never record a graph
  Tensor x = values({1.0, 2.0}, {2});
  EXPECT_FALSE(lt(x, x * 2.0).requires_grad());
}

TEST(Elementwise, StridedAndLargeInputs) {
  // a transposed (non-contiguous) input takes the strided path
  Tensor x = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64);
  expect_close(sqrt(transpose(x, 0, 1)),
               {1.0, 2.0, std::sqrt(2.0), std::sqrt(5.0), std::sqrt(3.0), std::sqrt(6.0)}, 1e-15);
  // enough elements to be split among threads; every element still gets its own value
  const int64_t n = 200000;
  Tensor big = arange(0, static_cast<double>(n), 1, DType::Float64);
  std::vector<double> got = to_vector(maximum(big * -1.0 + 100.0, big * 0.0));
  for (int64_t i = 0; i < n; i += 997)
    EXPECT_EQ(got[static_cast<size_t>(i)], std::max(100.0 - static_cast<double>(i), 0.0));
}

// Each element is computed on its own, so a result cannot depend on how the elements are split:
// the big tensor (split among the pool's threads, contiguous fast path), a transposed view of it
// (strided walker) and small pieces (run inline) must agree bit for bit.
TEST(Elementwise, BitwiseIdenticalHoweverSplit) {
  const int64_t rows = 600, cols = 500;
  Tensor x = randn({rows * cols}, DType::Float32);
  auto f = [](const Tensor& t) { return gelu(t) + sigmoid(t) * tanh(t) - pow(abs(t), t); };
  std::vector<double> whole = to_vector(f(x));
  std::vector<double> xs = to_vector(x);
  // transposed view: element [j][i] of f(x^T) is element i * cols + j of f(x)
  std::vector<double> strided = to_vector(f(transpose(reshape(x, {rows, cols}), 0, 1)));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(strided[static_cast<size_t>(j * rows + i)],
                whole[static_cast<size_t>(i * cols + j)]);
  for (int64_t start = 0; start < rows * cols; start += 7919) {
    int64_t n = std::min<int64_t>(257, rows * cols - start);
    std::vector<double> piece(xs.begin() + start, xs.begin() + start + n);
    std::vector<double> got = to_vector(f(from_vector(piece, {n}, DType::Float32)));
    for (int64_t k = 0; k < n; ++k)
      ASSERT_EQ(got[static_cast<size_t>(k)], whole[static_cast<size_t>(start + k)]) << start + k;
  }
}

TEST(Elementwise, BitwiseIdenticalAt1And2Threads) {
  Tensor x = randn({1 << 18}, DType::Float32), y = randn({1 << 18}, DType::Float32);
  auto f = [&] {
    return to_vector(gelu(x) * maximum(x, y) + pow(sigmoid(y), x) - where(gt(x, y), erf(x), y));
  };
  const int saved = cpu::num_threads();
  cpu::set_num_threads(1);
  std::vector<double> one = f();
  cpu::set_num_threads(2);
  std::vector<double> two = f();
  cpu::set_num_threads(saved);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(one[i], two[i]) << "at " << i;
}

// ---- gradients by hand ----

TEST(ElementwiseGrad, ReluSeed003) {
  expect_vec(grad_of([](const Tensor& x) { return relu(x); }, {-1, 2, 0, -3, 5}), {0, 1, 0, 0, 1});
}

TEST(ElementwiseGrad, SigmoidTanhAtZeroWithUpstream2) {
  expect_vec(grad_of([](const Tensor& x) { return sigmoid(x); }, {0.0}, 2.0), {0.5});
  expect_vec(grad_of([](const Tensor& x) { return tanh(x); }, {0.0}, 2.0), {2.0});
}

TEST(ElementwiseGrad, UnaryByHand) {
  expect_vec(grad_of([](const Tensor& x) { return log(x); }, {2.0, 0.5}), {0.5, 2.0});
  expect_vec(grad_of([](const Tensor& x) { return sqrt(x); }, {4.0}), {0.25});
  expect_vec(grad_of([](const Tensor& x) { return rsqrt(x); }, {4.0}), {-1.0 / 16});
  expect_vec(grad_of([](const Tensor& x) { return reciprocal(x); }, {2.0}), {-0.25});
  expect_vec(grad_of([](const Tensor& x) { return log1p(x); }, {1.0}), {0.5});
  expect_vec(grad_of([](const Tensor& x) { return expm1(x); }, {0.0}), {1.0});
  expect_vec(grad_of([](const Tensor& x) { return abs(x); }, {-2.0, 0.0, 3.0}), {-1.0, 0.0, 1.0});
  expect_vec(grad_of([](const Tensor& x) { return sin(x); }, {0.0}), {1.0});
  expect_vec(grad_of([](const Tensor& x) { return cos(x); }, {std::numbers::pi / 2}), {-1.0});
  // erf'(0) = 2/sqrt(pi); erfc' = -erf'
  expect_vec(grad_of([](const Tensor& x) { return erf(x); }, {0.0, 1.0}),
             {2 / std::sqrt(std::numbers::pi), 2 / std::sqrt(std::numbers::pi) * std::exp(-1.0)});
  expect_vec(grad_of([](const Tensor& x) { return erfc(x); }, {0.0}),
             {-2 / std::sqrt(std::numbers::pi)});
  // gelu'(0) = 0.5 in both forms; gelu'(1) = Phi(1) + phi(1)
  expect_vec(grad_of([](const Tensor& x) { return gelu(x); }, {0.0, 1.0}),
             {0.5, 0.8413447460685429 + std::exp(-0.5) / std::sqrt(2 * std::numbers::pi)}, 1e-14);
  expect_vec(grad_of([](const Tensor& x) { return gelu(x, true); }, {0.0}), {0.5});
  // step functions: zero almost everywhere
  for (auto fn :
       {+[](const Tensor& x) { return floor(x); }, +[](const Tensor& x) { return ceil(x); },
        +[](const Tensor& x) { return round(x); }, +[](const Tensor& x) { return sign(x); }})
    expect_vec(grad_of(fn, {-1.3, 0.4}), {0.0, 0.0});
}

TEST(ElementwiseGrad, DivPowLogByHand) {
  // y = a / b at a = 3, b = 2: dy/da = 1/2, dy/db = -3/4
  Tensor a = values({3.0}, {1}), b = values({2.0}, {1});
  autograd::backward(sum(a / b));
  expect_vec(to_vector(a.grad()), {0.5});
  expect_vec(to_vector(b.grad()), {-0.75});
  // y = a^b at a = 2, b = 3: dy/da = 3 * 2^2 = 12, dy/db = 8 ln 2
  Tensor p = values({2.0}, {1}), e = values({3.0}, {1});
  autograd::backward(sum(pow(p, e)));
  expect_vec(to_vector(p.grad()), {12.0});
  expect_vec(to_vector(e.grad()), {8.0 * std::log(2.0)}, 1e-14);
}

TEST(ElementwiseGrad, PowAtZeroBaseIsFinite) {
  // a = 0: b = 1 gives 1, b = 2 gives 0, b = 0 gives 0 (not NaN); db at a = 0, b >= 0 is 0
  Tensor a = values({0.0, 0.0, 0.0}, {3}), b = values({1.0, 2.0, 0.0}, {3});
  autograd::backward(sum(pow(a, b)));
  expect_vec(to_vector(a.grad()), {1.0, 0.0, 0.0});
  expect_vec(to_vector(b.grad()), {0.0, 0.0, 0.0});
  // scalar exponents too: x^2 at 0
  expect_vec(grad_of([](const Tensor& x) { return pow(x, 2.0); }, {0.0, -3.0}), {0.0, -6.0});
}

TEST(ElementwiseGrad, MaximumTieSplitsHalfAndHalf) {
  Tensor a = values({1.0, 2.0, 5.0}, {3}), b = values({1.0, 3.0, 4.0}, {3});
  autograd::backward(maximum(a, b), from_vector({2.0, 1.0, 1.0}, {3}, DType::Float64));
  expect_vec(to_vector(a.grad()), {1.0, 0.0, 1.0});
  expect_vec(to_vector(b.grad()), {1.0, 1.0, 0.0});
  // the total leaving the node equals the total arriving
  double total = to_vector(sum(a.grad()))[0] + to_vector(sum(b.grad()))[0];
  EXPECT_DOUBLE_EQ(total, 4.0);

  Tensor c = values({1.0, 2.0}, {2}), d = values({1.0, 3.0}, {2});
  autograd::backward(sum(minimum(c, d)));
  expect_vec(to_vector(c.grad()), {0.5, 1.0});
  expect_vec(to_vector(d.grad()), {0.5, 0.0});
}

TEST(ElementwiseGrad, MaximumBroadcastSumsBack) {
  Tensor a = values({1.0, 5.0, -1.0, 0.0}, {2, 2}), s = values({0.5}, {});
  autograd::backward(sum(maximum(a, s)));
  expect_vec(to_vector(a.grad()), {1, 1, 0, 0});
  expect_vec(to_vector(s.grad()), {2.0});
}

TEST(ElementwiseGrad, WhereAndClamp) {
  Tensor c = from_vector({1, 0, 1}, {3}, DType::Bool);
  Tensor a = values({1, 2, 3}, {3}), b = values({4.0}, {});
  autograd::backward(sum(where(c, a, b) * 3.0));
  expect_vec(to_vector(a.grad()), {3, 0, 3});
  expect_vec(to_vector(b.grad()), {3});
  // gradient passes where min <= x <= max, bounds included (as PyTorch)
  expect_vec(grad_of([](const Tensor& x) { return clamp(x, -1.0, 1.0); }, {-2, -1, 0, 1, 2}),
             {0, 1, 1, 1, 0});
  expect_vec(grad_of([](const Tensor& x) { return clamp(x, -kInf, 1.0); }, {-5, 2}), {1, 0});
}

TEST(ElementwiseGrad, SecondDerivativesByHand) {
  // d2/dx2 tanh = -2 tanh (1 - tanh^2); d2/dx2 sigmoid = s (1 - s)(1 - 2 s); d2/dx2 log = -1/x^2
  const double x0 = 0.5, t = std::tanh(x0), s = 1 / (1 + std::exp(-x0));
  auto second = [](const std::function<Tensor(const Tensor&)>& fn, double x) {
    Tensor t = values({x}, {1});
    Tensor g = autograd::grad({sum(fn(t))}, {t}, {}, true, true)[0];
    return to_vector(autograd::grad({sum(g)}, {t})[0])[0];
  };
  EXPECT_NEAR(second([](const Tensor& x) { return tanh(x); }, x0), -2 * t * (1 - t * t), 1e-14);
  EXPECT_NEAR(second([](const Tensor& x) { return sigmoid(x); }, x0), s * (1 - s) * (1 - 2 * s),
              1e-14);
  EXPECT_NEAR(second([](const Tensor& x) { return log(x); }, x0), -4.0, 1e-12);
  EXPECT_NEAR(second([](const Tensor& x) { return pow(x, 3.0); }, x0), 6 * x0, 1e-12);
}

// ---- dtypes ----

TEST(ElementwiseDType, ScalarsKeepOrPromote) {
  Tensor i = ints({1, 2}, {2});
  Tensor r = i + 0.5;
  EXPECT_EQ(r.dtype(), DType::Float32);
  expect_close(r, {1.5, 2.5}, 0);
  EXPECT_EQ((f32({1.0}) * 0.5).dtype(), DType::Float32);
  EXPECT_EQ((f32({1.0}) * from_vector({0.5}, {}, DType::Float64)).dtype(), DType::Float32);
  EXPECT_EQ((f32({1.0}) * f64({0.5})).dtype(), DType::Float64);
  EXPECT_EQ((i * 2.0).dtype(), DType::Float32);  // by kind, not value: 2.0 is a float
  EXPECT_EQ((i * 2).dtype(), DType::Int64);
  EXPECT_EQ((from_vector({1}, {1}, DType::Int32) * int64_t{3}).dtype(), DType::Int32);
  EXPECT_EQ((from_vector({1}, {1}, DType::Bool) + 1).dtype(), DType::Int64);
  EXPECT_EQ((from_vector({1}, {1}, DType::Bool) + true).dtype(), DType::Bool);
}

TEST(ElementwiseDType, FloatMathOnIntegersGivesFloat32) {
  Tensor i = ints({1, 4}, {2});
  for (const Tensor& r : {exp(i), log(i), sqrt(i), rsqrt(i), reciprocal(i), sin(i), cos(i), tanh(i),
                          sigmoid(i), gelu(i), erf(i), erfc(i), log1p(i), expm1(i)})
    EXPECT_EQ(r.dtype(), DType::Float32);
  expect_close(sqrt(i), {1.0, 2.0}, 0);
  expect_close(reciprocal(i), {1.0, 0.25}, 0);
  // bool into float math promotes, like torch.exp(bool_tensor)
  Tensor bl = from_vector({1, 0}, {2}, DType::Bool);
  EXPECT_EQ(exp(bl).dtype(), DType::Float32);
  expect_close(exp(bl), {std::exp(1.0), 1.0}, 1e-6);
  // float32 stays float32, float64 stays float64
  EXPECT_EQ(gelu(f32({1})).dtype(), DType::Float32);
  EXPECT_EQ(erf(f64({1})).dtype(), DType::Float64);
}

TEST(ElementwiseDType, GradientsKeepTheInputDtype) {
  Tensor x = from_vector({0.5, 2.0}, {2}, DType::Float32);
  x.set_requires_grad(true);
  autograd::backward(sum(pow(x, 2.0) + sigmoid(x) * gelu(x)));
  EXPECT_EQ(x.grad().dtype(), DType::Float32);
}

// ---- errors ----

TEST(ElementwiseErrors, ShapeMismatchNamesOpAndShapes) {
  Tensor a = zeros({2, 3}), b = zeros({4});
  VK_EXPECT_ERROR(add(a, b), ShapeError, "add", "[2, 3]", "[4]");
  VK_EXPECT_ERROR(pow(a, b), ShapeError, "pow", "[2, 3]", "[4]");
  VK_EXPECT_ERROR(maximum(a, b), ShapeError, "maximum", "[2, 3]", "[4]");
  VK_EXPECT_ERROR(lt(a, b), ShapeError, "lt", "[2, 3]", "[4]");
  VK_EXPECT_ERROR(where(from_vector({1, 0, 1}, {3}, DType::Bool), a, b), ShapeError, "where",
                  "[4]");
}

TEST(ElementwiseErrors, WhereNeedsBoolCondition) {
  VK_EXPECT_ERROR(where(ones({3}), ones({3}), zeros({3})), DTypeError, "where", "bool", "float32");
  VK_EXPECT_ERROR(where(ints({1, 0}, {2}), ones({2}), zeros({2})), DTypeError, "where", "int64");
}

TEST(ElementwiseErrors, BoolArithmeticIsDTypeError) {
  Tensor b = from_vector({1, 0}, {2}, DType::Bool);
  VK_EXPECT_ERROR(neg(b), DTypeError, "neg", "bool");
  VK_EXPECT_ERROR(abs(b), DTypeError, "abs", "bool");
  VK_EXPECT_ERROR(relu(b), DTypeError, "relu", "bool");
  // as PyTorch: no bool kernel for ** // % (NotImplementedError), bool - bool is a RuntimeError
  VK_EXPECT_ERROR(pow(b, b), NotImplementedError, "pow", "bool");
  VK_EXPECT_ERROR(floor_divide(b, b), NotImplementedError, "floor_divide", "bool");
  VK_EXPECT_ERROR(remainder(b, b), NotImplementedError, "remainder", "bool");
  VK_EXPECT_ERROR(sub(b, b), RuntimeError, "sub", "bool");
  VK_EXPECT_ERROR(clamp(b, false, true), NotImplementedError, "clamp", "bool");
  expect_close(pow(b, true), {1, 0}, 0);  // PyTorch's special cases of a bool scalar exponent
  expect_close(pow(b, false), {1, 1}, 0);
  EXPECT_EQ(pow(b, false).dtype(), DType::Bool);
  VK_EXPECT_ERROR(sub(b, full({2}, 1, DType::Int64)), RuntimeError, "sub", "bool");  // any bool
  VK_EXPECT_ERROR(ints({1}, {1}) - true, RuntimeError, "sub", "bool");
  // bool + bool is `or`, bool * bool is `and` (bool results); an int bound promotes to int64
  Tensor c = from_vector({1, 1}, {2}, DType::Bool);
  EXPECT_EQ(add(b, c).dtype(), DType::Bool);
  expect_close(add(b, c), {1, 1}, 0);
  expect_close(mul(b, c), {1, 0}, 0);
  EXPECT_EQ(clamp(b, 0, 1).dtype(), DType::Int64);
  // comparisons, where and maximum accept bool, as PyTorch
  expect_close(maximum(b, from_vector({0, 0}, {2}, DType::Bool)), {1, 0}, 0);
  expect_close(lt(b, from_vector({1, 1}, {2}, DType::Bool)), {0, 1}, 0);
}

TEST(Elementwise, BitwiseOpsPromoteAsPyTorch) {
  Tensor i = from_vector({12, -3, 5}, {3}, DType::Int64);
  Tensor j = from_vector({10, 7, 0}, {3}, DType::Int64);
  expect_close(bitwise_and(i, j), {8, 5, 0}, 0);
  expect_close(bitwise_or(i, j), {14, -1, 5}, 0);
  expect_close(bitwise_xor(i, j), {6, -6, 5}, 0);
  Tensor b = from_vector({1, 0, 1}, {3}, DType::Bool);
  Tensor r = bitwise_and(b, from_vector({1, 1, 0}, {3}, DType::Bool));
  EXPECT_EQ(r.dtype(), DType::Bool);
  expect_close(r, {1, 0, 0}, 0);
  // bool with int promotes to the int (bitwise, not logical: 12 & True is 0)
  Tensor bi = bitwise_and(i, b);
  EXPECT_EQ(bi.dtype(), DType::Int64);
  expect_close(bi, {0, 0, 1}, 0);
  EXPECT_EQ(bitwise_or(from_vector({1}, {1}, DType::Int32), full({}, 2, DType::Int64)).dtype(),
            DType::Int32);
  VK_EXPECT_ERROR(bitwise_and(i, full({}, 1.5, DType::Float32)), NotImplementedError, "bitwise_and",
                  "float32");
}

TEST(ElementwiseErrors, NoSilentZeroForComparisons) {
  // A bool result has no graph: backward from it is a DTypeError, never a silent zero gradient.
  Tensor x = values({1.0, 2.0}, {2});
  VK_EXPECT_ERROR(autograd::backward(gt(x, x * 0.5)), DTypeError, "bool");
}

// Regression (#18: x.add_(y) took 2.6x torch's time, x.mul_(0.5) 5x, through an out-of-place
// result and a copy; add_, sub_, mul_ and div_ now write straight into x where they can): the
// bits of the out-of-place op in every case the direct path takes (contiguous, broadcast, a 0-d
// scalar, a strided x, x op x, alpha) and every one it leaves to the copy (an operand overlapping
// x elsewhere, another dtype, integers), each write counted once in the version.
TEST(InPlace, ArithmeticWritesEqualTheOutOfPlaceOps) {
  using Fn = std::function<void(const Tensor&, const Tensor&)>;
  using Ref = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<Fn, Ref>> ops = {
      {[](auto& x, auto& y) { add_(x, y); }, [](auto& x, auto& y) { return x + y; }},
      {[](auto& x, auto& y) { add_(x, y, -0.3); }, [](auto& x, auto& y) { return x + y * -0.3; }},
      {[](auto& x, auto& y) { sub_(x, y); }, [](auto& x, auto& y) { return x - y; }},
      {[](auto& x, auto& y) { mul_(x, y); }, [](auto& x, auto& y) { return x * y; }},
      {[](auto& x, auto& y) { div_(x, y); }, [](auto& x, auto& y) { return x / y; }}};
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (size_t k = 0; k < ops.size(); ++k) {
      SCOPED_TRACE(testing::Message() << dtype_name(dt) << " op " << k);
      const auto& [op, ref] = ops[k];
      const auto check = [&](const Tensor& x, const Tensor& y, const char* what) {
        SCOPED_TRACE(what);
        const Tensor want = ref(clone(x), clone(y));
        const uint32_t version = x.version();
        op(x, y);
        EXPECT_EQ(to_vector(x), to_vector(cast(want, x.dtype())));
        EXPECT_EQ(x.version(), version + 1);
      };
      const Tensor base = cast(randn({37, 29}), dt) + 3.0;  // no zeros: div_ stays finite
      check(clone(base), cast(randn({37, 29}), dt) + 3.0, "same shape");
      check(clone(base), cast(randn({29}), dt), "a broadcast row");
      check(clone(base), cast(randn({37, 1}), dt), "a broadcast column");
      check(clone(base), scalar_like(1.7, base), "a 0-d scalar");
      check(transpose(clone(base), 0, 1), cast(randn({29, 37}), dt), "a transposed x");
      const Tensor self = clone(base);
      check(self, self, "x op x");
      const Tensor row = clone(base);
      check(slice(row, 0, 1, 37), slice(row, 0, 0, 36), "an operand overlapping x elsewhere");
      check(clone(base),
            cast(randn({37, 29}), dt == DType::Float32 ? DType::Float64 : DType::Float32),
            "another dtype");
    }
  }
  const Tensor i = ints({1, 2, 3}, {3});
  add_(i, ints({4, 5, 6}, {3}));
  EXPECT_EQ(to_vector(i), (std::vector<double>{5, 7, 9}));
}

}  // namespace
}  // namespace vk::test
