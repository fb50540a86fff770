// Indexing (vk::index / vk::index_put_) and the in-place ops.
#include "test_util.h"

namespace vk::test {
namespace {

using I = IndexItem;

Tensor grid() { return values({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}); }

TEST(Indexing, IntsAndSlicesAreViews) {
  Tensor x = grid();
  Tensor r = index(x, {I::integer(1), I::slice(1, std::nullopt, 2)});
  expect_values(r, {5, 7});
  EXPECT_EQ(r.storage(), x.storage());
  expect_values(index(x, {I::integer(-1)}), {8, 9, 10, 11});
  expect_values(index(x, {I::slice(std::nullopt, std::nullopt, std::nullopt), I::integer(0)}),
                {0, 4, 8});
}

TEST(Indexing, NoneAndEllipsis) {
  Tensor x = grid();
  EXPECT_EQ(index(x, {I::none()}).shape(), Shape({1, 3, 4}));
  EXPECT_EQ(index(x, {I::ellipsis(), I::none()}).shape(), Shape({3, 4, 1}));
  expect_values(index(x, {I::ellipsis(), I::integer(2)}), {2, 6, 10});
}

TEST(Indexing, IntegerListRepeatedIndicesAccumulate) {  // seed 004: x[[0, 2, 0]]
  Tensor x = grid();
  Tensor r = index(x, {I::of(ints({0, 2, 0}, {3}))});
  expect_values(r, {0, 1, 2, 3, 8, 9, 10, 11, 0, 1, 2, 3});
  autograd::backward(sum(r));
  expect_values(x.grad(), {2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1});
}

TEST(Indexing, NegativeIndexTensor) {
  Tensor x = grid();
  expect_values(index(x, {I::of(ints({-1}, {1})), I::integer(0)}), {8});
}

TEST(Indexing, TwoAdvancedIndicesPairUp) {
  Tensor x = grid();
  Tensor r = index(x, {I::of(ints({0, 2}, {2})), I::of(ints({1, 3}, {2}))});
  expect_values(r, {1, 11});
  autograd::backward(sum(r));
  expect_values(x.grad(), {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
}

TEST(Indexing, AdvancedIndexAfterSliceKeepsPlace) {
  Tensor x = leaf({2, 3, 4});
  Tensor r = index(
      x, {I::slice(std::nullopt, std::nullopt, std::nullopt), I::of(ints({0, 2, 2, 1}, {2, 2}))});
  EXPECT_EQ(r.shape(), Shape({2, 2, 2, 4}));
}

TEST(Indexing, BoolMask) {
  Tensor x = grid();
  Tensor mask = gt(x, full({}, 6.5, DType::Float64));
  Tensor r = index(x, {I::of(mask)});
  expect_values(r, {7, 8, 9, 10, 11});
  autograd::backward(sum(r * r));
  expect_values(x.grad(), {0, 0, 0, 0, 0, 0, 0, 14, 16, 18, 20, 22});
}

TEST(Indexing, Errors) {
  Tensor x = grid();
  VK_EXPECT_ERROR(index(x, {I::integer(3)}), IndexError, "3", "size 3");
  VK_EXPECT_ERROR(index(x, {I::integer(-4)}), IndexError, "-4");
  VK_EXPECT_ERROR(index(x, {I::integer(0), I::integer(0), I::integer(0)}), IndexError, "too many");
  VK_EXPECT_ERROR(index(x, {I::of(ints({5}, {1}))}), IndexError, "out of bounds");
  VK_EXPECT_ERROR(index(x, {I::of(ints({-4}, {1}))}), IndexError, "out of bounds");
  VK_EXPECT_ERROR(index(x, {I::of(values({0.0}, {1}, false))}), DTypeError, "float64");
}

// interpolate_dim's rule names what is wrong: an index past the dim (the kernel's check), weights
// of another dtype or length, a non-floating input.
TEST(Indexing, InterpolateDimErrors) {
  const Tensor x = ones({2, 3}), i = ints({0, 2}, {2}), w = values({0.5, 0.5}, {2}, false);
  const Tensor wf = cast(w, DType::Float32);
  VK_EXPECT_ERROR(interpolate_dim(cast(x, DType::Float64), 1, i, ints({0, 3}, {2}), w, w),
                  IndexError, "interpolate_dim", "3", "size 3");
  VK_EXPECT_ERROR(interpolate_dim(x, 1, i, i, w, wf), DTypeError, "interpolate_dim", "float64");
  VK_EXPECT_ERROR(interpolate_dim(x, 1, i, i, wf, cast(values({0.5}, {1}, false), DType::Float32)),
                  ShapeError, "1-D", "length 2");
  VK_EXPECT_ERROR(interpolate_dim(cast(x, DType::Int64), 1, i, i, w, w), DTypeError, "floating");
}

TEST(Indexing, SetItem) {
  Tensor x = values({0, 0, 0, 0, 0, 0}, {2, 3}, false);
  uint32_t v0 = x.version();
  index_put_(x, {I::integer(1)}, values({1, 2, 3}, {3}, false));
  index_put_(x, {I::slice(std::nullopt, std::nullopt, std::nullopt), I::integer(0)},
             full({}, 9.0, DType::Float64));
  index_put_(x, {I::of(gt(x, full({}, 2.5, DType::Float64)))}, full({}, -1.0, DType::Float64));
  expect_values(x, {-1, 0, 0, -1, 2, -1});
  EXPECT_GT(x.version(), v0);
}

TEST(Indexing, SetItemOnTransposedView) {
  Tensor x = values({0, 1, 2, 3, 4, 5}, {2, 3}, false);
  Tensor t = transpose(x, 0, 1);  // (3, 2), not contiguous
  index_put_(t, {I::integer(2)}, values({7, 8}, {2}, false));
  expect_values(x, {0, 1, 7, 3, 4, 8});
}

TEST(Indexing, SetItemRequiringGradRaises) {
  Tensor x = values({0, 0}, {2});
  VK_EXPECT_ERROR(index_put_(x, {I::integer(0)}, full({}, 1.0, DType::Float64)), RuntimeError,
                  "requires grad");
}

TEST(InPlace, OpsAndVersion) {
  Tensor x = values({1, 2, 3}, {3}, false);
  uint32_t v = x.version();
  add_(x, values({1, 1, 1}, {3}, false), 2.0);
  expect_values(x, {3, 4, 5});
  mul_(x, 2.0);
  sub_(x, values({1}, {1}, false));
  div_(x, full({}, 5.0, DType::Float64));
  expect_values(x, {1, 1.4, 1.8});
  clamp_(x, 1.2, 1.5);
  expect_values(x, {1.2, 1.4, 1.5});
  fill_(x, 4);
  copy_(x, values({7, 8, 9}, {3}, false));
  expect_values(x, {7, 8, 9});
  zero_(x);
  expect_values(x, {0, 0, 0});
  EXPECT_EQ(x.version(), v + 8);
}

TEST(InPlace, ShapeAndDTypeErrors) {
  Tensor x = values({1, 2, 3}, {3}, false);
  VK_EXPECT_ERROR(add_(x, values({1, 2, 3, 4, 5, 6}, {2, 3}, false)), ShapeError, "add_", "[2, 3]",
                  "[3]");
  Tensor i = from_vector({1, 2}, {2}, DType::Int64);
  // as PyTorch: a float result cannot be written into an int tensor (RuntimeError)
  VK_EXPECT_ERROR(mul_(i, 0.5), RuntimeError, "mul_", "float32", "int64");
  VK_EXPECT_ERROR(add_(i, 2.0), RuntimeError, "add_", "float32", "int64");
  add_(i, 2);
  expect_values(i, {3, 4});
}

TEST(InPlace, ElementwiseWriteIntoExpandedViewRaises) {
  // Elements of an expanded view share memory: as torch, element-wise writes into it raise and
  // change nothing; one value (fill_, zero_) and a region without shared elements are fine.
  Tensor base = values({1, 2, 3}, {1, 3}, false);
  Tensor e = expand(base, {2, 3});
  VK_EXPECT_ERROR(add_(e, 1.0), RuntimeError, "add_", "single memory location");
  VK_EXPECT_ERROR(copy_(e, zeros({2, 3}, DType::Float64)), RuntimeError, "copy_");
  VK_EXPECT_ERROR(clamp_(e, 0.0, 1.0), RuntimeError, "clamp_");
  VK_EXPECT_ERROR(index_put_(e, {I::slice(std::nullopt, std::nullopt, std::nullopt), I::integer(0)},
                             full({}, 5.0, DType::Float64)),
                  RuntimeError, "index_put_", "single memory location");
  expect_values(base, {1, 2, 3});
  fill_(e, 4);
  expect_values(base, {4, 4, 4});
  index_put_(e, {I::integer(1)}, values({7, 8, 9}, {3}, false));
  expect_values(base, {7, 8, 9});
}

TEST(InPlace, CopyFromOverlappingView) {
  Tensor x = values({1, 2, 3}, {3}, false);
  copy_(x, flip(x, {0}));
  expect_values(x, {3, 2, 1});
}

}  // namespace
}  // namespace vk::test
