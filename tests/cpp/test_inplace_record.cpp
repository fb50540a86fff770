// In-place writes recorded by autograd (ops/inplace.h): each returns the tensor that stands for
// the one written, over its memory, with the write's history. Before, every write here raised
// ("writing a value that requires grad into a tensor in place would drop its graph").
#include "test_util.h"

namespace vk::test {
namespace {

using I = IndexItem;

TEST(InPlaceRecord, WriteIntoAResultKeepsTheValuesItsRuleReadsRegression) {
  Tensor x = values({0.5, -1.0, 2.0}, {3});
  Tensor w = values({1.5, 2.0, 3.0}, {3});
  Tensor y = x * 2.0;
  const Tensor z = mul_(y, w);  // mul's rule for w reads y's old values, which the write replaces
  EXPECT_TRUE(z.requires_grad());
  EXPECT_EQ(z.storage(), y.storage());
  expect_values(y, {1.5, -4.0, 12.0});
  autograd::backward(sum(z));
  expect_values(x.grad(), {3.0, 4.0, 6.0});   // 2 w
  expect_values(w.grad(), {1.0, -2.0, 4.0});  // 2 x, not the written values
}

TEST(InPlaceRecord, IndexPutOfAValueRequiringGradRegression) {
  Tensor buf = zeros({4}, DType::Float64);
  Tensor v = values({3.0, 4.0}, {2});
  const Tensor out = index_put_(buf, {I::slice(1, 3, std::nullopt)}, v);
  expect_values(buf, {0, 3, 4, 0});
  autograd::backward(sum(out * values({1, 10, 100, 1000}, {4}, false)));
  expect_values(v.grad(), {10, 100});
}

TEST(InPlaceRecord, EarlierNodesThatDoNotReadTheOverwrittenValuesStillDifferentiate) {
  Tensor a = values({1, -2, 3, -4}, {2, 2});
  Tensor b = values({0.5, 1, -1, 2}, {2, 2}, false);
  Tensor h = matmul(a, b);  // its rule for a reads b, not its output
  const Tensor r = inplace(h, {}, "relu_", [&] { return relu(h); });
  autograd::backward(sum(r));
  Tensor a2 = values({1, -2, 3, -4}, {2, 2});
  autograd::backward(sum(relu(matmul(a2, b))));
  expect_values(a.grad(), to_vector(a2.grad()));
}

TEST(InPlaceRecord, AnEarlierRuleReadingTheOverwrittenValuesRefuses) {
  Tensor a = values({0.5, 1.0}, {2});
  Tensor e = exp(a);  // exp's rule reads its output
  const Tensor e2 = add_(e, full({}, 1.0, DType::Float64));
  VK_EXPECT_ERROR(autograd::backward(sum(e2)), RuntimeError, "output", "exp", "version 1");
}

TEST(InPlaceRecord, AViewTakenBeforeARecordedWriteIsRefusedRegression) {
  Tensor x = values({1, 2, 3, 4}, {4});
  Tensor y = x * 1.0;
  Tensor v = narrow(y, 0, 0, 2);
  const Tensor y2 = index_put_(y, {I::slice(0, 2, std::nullopt)}, narrow(x, 0, 0, 2) * 3.0);
  // v shows the new values; its history (a slice of x * 1) does not explain them
  VK_EXPECT_ERROR(v * 2.0, RuntimeError, "made before an in-place write");
  {
    NoGradGuard no_grad;
    expect_values(v * 2.0, {6, 12});
  }
  autograd::backward(sum(narrow(y2, 0, 0, 2)));  // taken again from the tensor written
  expect_values(x.grad(), {3, 3, 0, 0});
}

TEST(InPlaceRecord, WritesUnderNoGradLeaveViewsUsable) {
  Tensor x = values({1, 2}, {2});
  Tensor y = x * 2.0;
  Tensor v = narrow(y, 0, 0, 1);
  {
    NoGradGuard no_grad;
    add_(y, full({}, 1.0, DType::Float64));
  }
  autograd::backward(sum(v * 1.0));  // mul's rule for x reads only the constant 2
  expect_values(x.grad(), {2, 0});
}

TEST(InPlaceRecord, ALeafRequiringGradOrAViewOfOneIsRefused) {
  Tensor w = values({1, 2}, {2});
  VK_EXPECT_ERROR(add_(w, full({}, 1.0, DType::Float64)), RuntimeError, "add_: a leaf",
                  "float64[2]");
  VK_EXPECT_ERROR(zero_(narrow(w, 0, 0, 1)), RuntimeError, "a view of a leaf");
  NoGradGuard no_grad;  // an optimizer step
  add_(w, full({}, 1.0, DType::Float64));
  expect_values(w, {2, 3});
}

TEST(InPlaceRecord, FillOfAResultKeepsItRequiringGradWithZeroGradients) {
  Tensor x = values({1, 2}, {2});
  const Tensor y = fill_(x * 3.0, 5.0);
  EXPECT_TRUE(y.requires_grad());
  autograd::backward(sum(y));
  expect_values(y, {5, 5});
  expect_values(x.grad(), {0, 0});
}

TEST(InPlaceRecord, AddWithAlphaRecordedAndNot) {
  Tensor x = values({1, 2}, {2});
  Tensor w = values({3, 4}, {2});
  const Tensor y = add_(x * 1.0, w, -0.5);  // x - w / 2
  expect_values(y, {-0.5, 0.0});
  autograd::backward(sum(y));
  expect_values(w.grad(), {-0.5, -0.5});
  Tensor buf = values({1, 1}, {2}, false);
  EXPECT_TRUE(add_(buf, values({2, 4}, {2}, false), 0.25).same(buf));  // unrecorded: x itself
  expect_values(buf, {1.5, 2.0});
}

TEST(InPlaceRecord, AValueCastToIntegersIsNotRecorded) {
  Tensor i = zeros({2}, DType::Int64);
  const Tensor r = copy_(i, values({1.7, -2.2}, {2}));
  EXPECT_TRUE(r.same(i));
  EXPECT_FALSE(i.requires_grad());
  expect_values(i, {1, -2});
}

TEST(InPlaceRecord, SecondOrderThroughAWrite) {
  Tensor x = values({0.5, -1.0, 2.0}, {3});
  Tensor y = x * x;
  const Tensor cube = mul_(y, x);
  auto g = autograd::grad({sum(cube)}, {x}, {}, std::nullopt, /*create_graph=*/true);
  expect_values(g[0], {0.75, 3.0, 12.0});  // 3 x^2
  autograd::backward(sum(g[0]));
  expect_values(x.grad(), {3.0, -6.0, 12.0});  // 6 x
}

}  // namespace
}  // namespace vk::test
