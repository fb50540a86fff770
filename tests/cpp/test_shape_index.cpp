// Forward values, views, gradients and errors of the shape ops (slice, slice_backward, cat, stack,
// pad, flip) and the index ops (index_select, gather, scatter_add, index_add).
#include <limits>
#include <numeric>

#include "test_util.h"

namespace vk::test {
namespace {

// 0, 1, 2, ... in row-major order.
Tensor iota(const Shape& shape, DType dtype = DType::Float64) {
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  return from_vector(v, shape, dtype);
}

Tensor grad_of(const Tensor& y, const Tensor& x) {
  return autograd::grad({y}, {x}, {ones_like(y)})[0];
}

// ---- slice ----

TEST(Slice, ValuesWithStep) {
  Tensor x = iota({3, 4});
  Tensor y = slice(x, 1, 1, 4, 2);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  expect_values(y, {1, 3, 5, 7, 9, 11});
}

TEST(Slice, NegativeAndClampedBounds) {
  Tensor x = iota({5});
  expect_values(slice(x, 0, -3, -1), {2, 3});
  expect_values(slice(x, 0, -100, 100, 2), {0, 2, 4});
  expect_values(slice(x, -1, 3, 100), {3, 4});
  EXPECT_EQ(slice(x, 0, 4, 2).shape(), (Shape{0}));  // stop before start: empty
  EXPECT_EQ(slice(x, 0, 7, 9).shape(), (Shape{0}));  // past the end: empty
  EXPECT_EQ(slice(x, 0, 1, 5, 10).shape(), (Shape{1}));
}

TEST(Slice, IsAViewSharingStorage) {
  Tensor x = iota({3, 4});
  Tensor y = slice(x, 0, 1, 3);
  EXPECT_EQ(y.storage().get(), x.storage().get());  // no copy
  EXPECT_EQ(y.offset(), 4);
  EXPECT_EQ(y.strides(), (Strides{4, 1}));
  Tensor z = slice(y, 1, 0, 4, 3);
  EXPECT_EQ(z.storage().get(), x.storage().get());
  EXPECT_EQ(z.strides(), (Strides{4, 3}));
  x.data<double>()[7] = 100.0;  // a write through x shows through both views
  expect_values(y, {4, 5, 6, 100, 8, 9, 10, 11});
  expect_values(z, {4, 100, 8, 11});
}

TEST(Slice, GradientScattersIntoZeros) {
  Tensor x = values({1, 2, 3, 4, 5, 6}, {6});
  Tensor y = slice(x, 0, -5, -1, 2);  // elements 1 and 3
  expect_values(y, {2, 4});
  expect_values(grad_of(y * y, x), {0, 4, 0, 8, 0, 0});
}

TEST(Slice, SelectDropsTheDim) {
  Tensor x = iota({2, 3});
  Tensor y = select(x, 1, -1);
  EXPECT_EQ(y.shape(), (Shape{2}));
  expect_values(y, {2, 5});
}

TEST(Slice, Errors) {
  Tensor x = iota({3});
  VK_EXPECT_ERROR(slice(x, 0, 0, 3, 0), ShapeError, "slice", "step");
  VK_EXPECT_ERROR(slice(x, 1, 0, 3), IndexError, "slice", "dim 1");
}

TEST(SliceBackward, PlacesGradientInZeros) {
  Tensor g = values({1, 2, 3, 4}, {2, 2});
  Tensor y = slice_backward(g, {2, 5}, 1, 1, 5, 2);
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  expect_values(y, {0, 1, 0, 2, 0, 0, 3, 0, 4, 0});
  // Its own gradient is a slice of the arriving gradient.
  Tensor w = iota({2, 5});
  expect_values(autograd::grad({y}, {g}, {w})[0], {1, 3, 6, 8});
  VK_EXPECT_ERROR(slice_backward(g, {2, 5}, 1, 0, 5, 1), ShapeError, "slice_backward", "[2, 2]",
                  "[2, 5]");
}

// ---- cat / stack ----

TEST(Cat, ThreeTensorsAlongMiddleDim) {
  Tensor a = iota({2, 1, 2}), b = iota({2, 2, 2}) + 10.0, c = iota({2, 1, 2}) + 20.0;
  Tensor y = cat({a, b, c}, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 4, 2}));
  expect_values(y, {0, 1, 10, 11, 12, 13, 20, 21, 2, 3, 14, 15, 16, 17, 22, 23});
}

TEST(Cat, StridedInputAndPromotion) {
  Tensor a = iota({2, 2}, DType::Int64);
  Tensor b = transpose(iota({2, 2}, DType::Float32), 0, 1);  // [[0, 2], [1, 3]], not contiguous
  Tensor y = cat({a, b}, -1);
  EXPECT_EQ(y.dtype(), DType::Float32);
  expect_values(y, {0, 1, 0, 2, 2, 3, 1, 3});
}

TEST(Cat, SkipsLegacyEmptyTensors) {
  Tensor acc = zeros({0}, DType::Float64);
  Tensor y = cat({acc, iota({1, 2}), iota({1, 2})}, -1);
  EXPECT_EQ(y.shape(), (Shape{1, 4}));
  expect_values(y, {0, 1, 0, 1});
}

TEST(Cat, GradientSplitsIntoSlices) {
  Tensor a = values({1, 2}, {1, 2}), b = values({3, 4, 5, 6}, {2, 2});
  Tensor y = cat({a, b}, 0);
  std::vector<Tensor> g = autograd::grad({y * y}, {a, b}, {ones_like(y)});
  expect_values(g[0], {2, 4});
  expect_values(g[1], {6, 8, 10, 12});
}

TEST(Cat, Errors) {
  VK_EXPECT_ERROR(cat({iota({2, 3}), iota({2, 4})}, 0), ShapeError, "cat", "[2, 3]", "[2, 4]",
                  "dim 0");
  VK_EXPECT_ERROR(cat({iota({2, 3}), iota({2, 3, 1})}, 0), ShapeError, "cat", "[2, 3, 1]");
  VK_EXPECT_ERROR(cat({iota({}), iota({})}, 0), ShapeError, "cat", "zero-dimensional");
  VK_EXPECT_ERROR(cat({}, 0), ShapeError, "cat");
}

TEST(Stack, NewDimAndGradient) {
  Tensor a = values({1, 2, 3}, {3}), b = values({4, 5, 6}, {3});
  Tensor y = stack({a, b}, 1);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  expect_values(y, {1, 4, 2, 5, 3, 6});
  Tensor w = iota({3, 2});
  std::vector<Tensor> g = autograd::grad({y}, {a, b}, {w});
  expect_values(g[0], {0, 2, 4});
  expect_values(g[1], {1, 3, 5});
  VK_EXPECT_ERROR(stack({a, iota({4})}, 0), ShapeError, "stack", "[3]", "[4]");
}

// ---- pad / flip ----

TEST(Pad, LastTwoDims) {
  Tensor x = iota({1, 2, 2}).set_requires_grad(true);
  Tensor y = pad(x, {1, 0, 0, 1}, -1.0);  // last dim: 1 before; second last: 1 after
  EXPECT_EQ(y.shape(), (Shape{1, 3, 3}));
  expect_values(y, {-1, 0, 1, -1, 2, 3, -1, -1, -1});
  expect_values(grad_of(y * 2.0, x), {2, 2, 2, 2});
}

TEST(Pad, NegativeWidthsCrop) {
  Tensor x = values({1, 2, 3, 4}, {4});
  Tensor y = pad(x, {-1, 2}, 9.0);
  expect_values(y, {2, 3, 4, 9, 9});
  expect_values(grad_of(y * y, x), {0, 4, 6, 8});
}

TEST(Pad, IntegerValueAndErrors) {
  Tensor x = iota({2}, DType::Int64);
  Tensor y = pad(x, {2, 1}, 7.0);
  EXPECT_EQ(y.dtype(), DType::Int64);
  expect_values(y, {7, 7, 0, 1, 7});
  VK_EXPECT_ERROR(pad(x, {1, 1, 1, 1}), ShapeError, "pad", "[2]");
  VK_EXPECT_ERROR(pad(x, {1}), ShapeError, "pad", "pairs");
  VK_EXPECT_ERROR(pad(x, {-2, -1}), ShapeError, "pad", "negative size");
  VK_EXPECT_ERROR(pad(x, {1, 1}, std::numeric_limits<double>::infinity()), DTypeError, "pad",
                  "int64");
}

TEST(Flip, ValuesAndGradient) {
  Tensor x = iota({2, 3});
  expect_values(flip(x, {1}), {2, 1, 0, 5, 4, 3});
  expect_values(flip(x, {0, 1}), {5, 4, 3, 2, 1, 0});
  expect_values(flip(transpose(x, 0, 1), {0}), {2, 5, 1, 4, 0, 3});
  expect_values(flip(x, {}), {0, 1, 2, 3, 4, 5});  // no dims: nothing reversed, as torch
  VK_EXPECT_ERROR(flip(x, {1, -1}), IndexError, "flip", "[1, 1]");
  VK_EXPECT_ERROR(flip(x, {2}), IndexError, "flip", "dim 2");
  Tensor v = values({1, 2, 3}, {3});
  Tensor w = values({10, 20, 30}, {3}, false);
  expect_values(autograd::grad({flip(v, {0})}, {v}, {w})[0], {30, 20, 10});
}

// ---- index_select ----

TEST(IndexSelect, Values) {
  Tensor x = iota({3, 2});
  expect_values(index_select(x, 0, ints({2, 0, 2}, {3})), {4, 5, 0, 1, 4, 5});
  expect_values(index_select(x, 1, ints({1, 1, 0}, {3})), {1, 1, 0, 3, 3, 2, 5, 5, 4});
  Tensor i32 = from_vector({1}, {1}, DType::Int32);
  expect_values(index_select(x, -1, i32), {1, 3, 5});
  // A non-contiguous input takes the strided path.
  expect_values(index_select(transpose(x, 0, 1), 1, ints({2, 0}, {2})), {4, 0, 5, 1});
  expect_values(index_select(transpose(x, 0, 1), 1, ints({2, 0, 1, 2}, {4})),
                {4, 0, 2, 4, 5, 1, 3, 5});
  Tensor b = from_vector({1, 0, 1}, {3}, DType::Bool);
  expect_values(index_select(b, 0, ints({1, 2}, {2})), {0, 1});
}

// seed-004: x[[0, 2, 0]] — row 0 gets both upstream rows.
TEST(IndexSelect, RepeatedIndicesAccumulateGradient) {
  Tensor x = leaf({3, 2});
  Tensor y = index_select(x, 0, ints({0, 2, 0}, {3}));
  autograd::backward(sum(y));
  expect_values(x.grad(), {2, 2, 0, 0, 1, 1});
}

TEST(IndexSelect, Errors) {
  Tensor x = iota({3, 2});
  VK_EXPECT_ERROR(index_select(x, 0, ints({0, 3}, {2})), IndexError, "index_select", "index 3",
                  "dim 0", "size 3");
  VK_EXPECT_ERROR(index_select(x, 1, ints({-1}, {1})), IndexError, "index_select", "index -1",
                  "dim 1", "size 2");
  VK_EXPECT_ERROR(index_select(x, 0, from_vector({0}, {1}, DType::Float32)), DTypeError,
                  "index_select", "float32");
  VK_EXPECT_ERROR(index_select(x, 0, from_vector({1}, {1}, DType::Bool)), DTypeError,
                  "index_select", "bool");
  VK_EXPECT_ERROR(index_select(x, 0, ints({0, 1}, {1, 2})), ShapeError, "index_select", "1-D");
}

// ---- gather ----

TEST(Gather, Values) {
  Tensor x = iota({2, 3});
  expect_values(gather(x, 1, ints({2, 0, 1, 1}, {2, 2})), {2, 0, 4, 4});
  expect_values(gather(x, 0, ints({1, 0, 1}, {1, 3})), {3, 1, 5});
  expect_values(gather(transpose(x, 0, 1), 1, ints({1, 0, 1}, {3, 1})), {3, 1, 5});
}

TEST(Gather, GradientAddsRepeats) {
  Tensor x = values({1, 2, 3, 4}, {2, 2});
  Tensor y = gather(x, 1, ints({1, 1, 1, 0, 0, 0}, {2, 3}));
  expect_values(grad_of(y, x), {0, 3, 3, 0});
}

TEST(Gather, Errors) {
  Tensor x = iota({2, 3});
  VK_EXPECT_ERROR(gather(x, 1, ints({0, 3}, {2, 1})), IndexError, "gather", "index 3", "dim 1",
                  "size 3");
  VK_EXPECT_ERROR(gather(x, 0, ints({-2}, {1, 1})), IndexError, "gather", "index -2", "dim 0",
                  "size 2");
  VK_EXPECT_ERROR(gather(x, 0, from_vector({0}, {1, 1}, DType::Float64)), DTypeError, "gather",
                  "float64");
  VK_EXPECT_ERROR(gather(x, 0, ints({0}, {1})), ShapeError, "gather", "[1]", "[2, 3]");
  VK_EXPECT_ERROR(gather(x, 0, ints({0, 0, 0, 0}, {1, 4})), ShapeError, "gather", "[1, 4]");
}

// ---- scatter_add / index_add ----

TEST(ScatterAdd, RepeatedIndicesAccumulate) {
  Tensor base = from_vector({1, 1, 1}, {3}, DType::Float64);
  Tensor src = from_vector({10, 20, 30, 40}, {4}, DType::Float64);
  expect_values(scatter_add(base, 0, ints({2, 0, 2, 2}, {4}), src), {21, 1, 81});
  EXPECT_EQ(to_vector(base), (std::vector<double>{1, 1, 1}));  // base is not modified
  // 2-D along dim 1, index smaller than src.
  Tensor b2 = zeros({2, 3}, DType::Float64);
  Tensor s2 = iota({2, 4}) + 1.0;
  expect_values(scatter_add(b2, 1, ints({0, 0, 2, 1}, {2, 2}), s2), {3, 0, 0, 0, 6, 5});
  // Integer tensors too.
  Tensor bi = iota({3}, DType::Int64);
  expect_values(scatter_add(bi, 0, ints({1, 1}, {2}), iota({2}, DType::Int64) + 5.0), {0, 12, 2});
}

TEST(ScatterAdd, GradientsOfBaseAndSrc) {
  Tensor base = values({0, 0, 0}, {3}), src = values({1, 2, 3, 4}, {4});
  Tensor y = scatter_add(base, 0, ints({1, 1, 0, 1}, {4}), src);  // [3, 7, 0]
  Tensor w = values({10, 20, 30}, {3}, false);
  std::vector<Tensor> g = autograd::grad({y}, {base, src}, {w});
  expect_values(g[0], {10, 20, 30});
  expect_values(g[1], {20, 20, 10, 20});
}

TEST(ScatterAdd, Errors) {
  Tensor base = zeros({2, 3}, DType::Float64), src = iota({2, 3});
  VK_EXPECT_ERROR(scatter_add(base, 1, ints({0, 3}, {1, 2}), src), IndexError, "scatter_add",
                  "index 3", "dim 1", "size 3");
  VK_EXPECT_ERROR(scatter_add(base, 0, ints({-1}, {1, 1}), src), IndexError, "scatter_add",
                  "index -1", "dim 0", "size 2");
  VK_EXPECT_ERROR(scatter_add(base, 0, from_vector({0}, {1, 1}, DType::Float32), src), DTypeError,
                  "scatter_add", "float32");
  VK_EXPECT_ERROR(scatter_add(base, 0, ints({0, 0, 0, 0}, {1, 4}), src), ShapeError, "scatter_add",
                  "[1, 4]");
}

TEST(IndexAdd, AddsSlicesAtIndices) {
  Tensor base = zeros({3, 2}, DType::Float64);
  Tensor src = iota({3, 2}) + 1.0;  // rows [1, 2], [3, 4], [5, 6]
  expect_values(index_add(base, 0, ints({2, 0, 2}, {3}), src), {3, 4, 0, 0, 6, 8});
  expect_values(index_add(zeros({2, 3}, DType::Float64), 1, ints({1, 1}, {2}), iota({2, 2})),
                {0, 1, 0, 0, 5, 0});
  VK_EXPECT_ERROR(index_add(base, 0, ints({0}, {1}), src), ShapeError, "index_add", "[3, 2]");
  VK_EXPECT_ERROR(index_add(base, 0, ints({5, 0, 0}, {3}), src), IndexError, "index 5");
  VK_EXPECT_ERROR(index_add(base, 0, from_vector({0, 1, 2}, {3}), src), DTypeError, "index_add");
}

TEST(IndexOps, ZeroDimTensorsAndInt32Indices) {
  Tensor s = from_vector({5}, {}, DType::Float64);
  Tensor zero = from_vector({0}, {}, DType::Int32);
  Tensor y = index_select(s, 0, ints({0}, {1}));
  EXPECT_EQ(y.shape(), (Shape{}));
  expect_values(y, {5});
  expect_values(gather(s, 0, zero), {5});
  expect_values(scatter_add(s, 0, zero, s), {10});
  VK_EXPECT_ERROR(gather(s, 0, from_vector({1}, {}, DType::Int32)), IndexError, "gather", "index 1",
                  "size 1");
  Tensor x = iota({2, 3});
  Tensor i32 = from_vector({2, 2, 0, 1}, {2, 2}, DType::Int32);
  expect_values(gather(x, 1, i32), {2, 2, 3, 4});
  expect_values(scatter_add(zeros({2, 3}, DType::Float64), 1, i32, iota({2, 2}) + 1.0),
                {0, 0, 3, 3, 4, 0});
}

// ---- large inputs: parallel paths agree with the strided ones and with any thread count ----

TEST(ShapeIndexLarge, ContiguousAndStridedPathsAgree) {
  manual_seed(7);
  Tensor x = rand({300, 257}, DType::Float64);
  Tensor xt = contiguous(transpose(x, 0, 1));  // the same values, laid out transposed
  for (int64_t k : {500, 200}) {  // more rows than x has (strided x is laid out first), fewer
    Tensor idx = randint(0, 300, {k});
    Tensor fast = index_select(x, 0, idx);
    Tensor strided = index_select(transpose(xt, 0, 1), 0, idx);
    EXPECT_EQ(to_vector(fast), to_vector(strided));
    std::vector<double> f = to_vector(fast), xv = to_vector(x), iv = to_vector(idx);
    EXPECT_EQ(f[257 * (k - 1) + 3], xv[257 * static_cast<int64_t>(iv[k - 1]) + 3]);
  }
  Tensor c1 = cat({x, x * 2.0, x}, 1);
  Tensor c2 = cat({transpose(xt, 0, 1), transpose(xt, 0, 1) * 2.0, x}, 1);
  EXPECT_EQ(to_vector(c1), to_vector(c2));
  std::vector<double> cv = to_vector(c1), xv = to_vector(x);
  EXPECT_EQ(cv[257 + 5], 2 * xv[5]);
  EXPECT_EQ(cv[3 * 257 * 10 + 2 * 257 + 9], xv[257 * 10 + 9]);
}

// Restores the pool's thread count on exit.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(cpu::num_threads()) { cpu::set_num_threads(n); }
  ~ThreadCount() { cpu::set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

TEST(ShapeIndexLarge, ScatterAddBitwiseIdenticalAtAnyThreadCount) {
  manual_seed(5);
  Tensor src = randn({3000, 40}, DType::Float32);
  Tensor idx = randint(0, 7, {3000, 40});
  Tensor base = randn({7, 40}, DType::Float32);
  std::vector<std::vector<double>> results;
  for (int n : {1, 2, 3, 8}) {
    ThreadCount threads(n);
    results.push_back(to_vector(scatter_add(base, 0, idx, src)));
    results.push_back(to_vector(index_add(base, 0, select(idx, 1, 0), src)));
  }
  for (size_t k = 2; k < results.size(); ++k) EXPECT_EQ(results[k], results[k % 2]) << k;
}

// The lines along dim are split among the pool's threads (64 lines, grain 8); each destination
// must still get its contributions added serially in index order, bit for bit.
TEST(ShapeIndexLarge, ScatterAddSumsInIndexOrder) {
  manual_seed(11);
  Tensor src = randn({4000, 64}, DType::Float32);
  Tensor idx = randint(0, 50, {4000});
  Tensor base = zeros({50, 64}, DType::Float32);
  Tensor first = index_add(base, 0, idx, src);
  std::vector<double> s = to_vector(src), i = to_vector(idx);
  std::vector<float> acc(50 * 64, 0.0f);
  for (size_t r = 0; r < 4000; ++r)
    for (size_t c = 0; c < 64; ++c)
      acc[static_cast<size_t>(i[r]) * 64 + c] += static_cast<float>(s[r * 64 + c]);
  std::vector<double> got = to_vector(first);
  for (size_t k = 0; k < acc.size(); ++k) ASSERT_EQ(got[k], static_cast<double>(acc[k])) << k;
  EXPECT_EQ(to_vector(index_add(base, 0, idx, src)), got);
}

}  // namespace
}  // namespace vk::test
