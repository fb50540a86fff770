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

TEST(InPlaceRecord, AViewTakenBeforeARecordedWriteIsRegeneratedRegression) {
  Tensor x = values({1, 2, 3, 4}, {4});
  Tensor y = x * 1.0;
  Tensor v = narrow(y, 0, 0, 2);
  const Tensor y2 = index_put_(y, {I::slice(0, 2, std::nullopt)}, narrow(x, 0, 0, 2) * 3.0);
  // v shows the new values: as torch, its history is taken again from the write's (it was
  // refused, the old history -- a slice of x * 1 -- not explaining them)
  autograd::backward(sum(v * 2.0));
  expect_values(x.grad(), {6, 6, 0, 0});
}

TEST(InPlaceRecord, AStaleViewWhoseWriteNoTensorHoldsIsRefused) {
  Tensor x = values({1, 2, 3, 4}, {4});
  Tensor y = x * 1.0;
  Tensor v = narrow(y, 0, 0, 2);
  (void)index_put_(y, {I::slice(0, 2, std::nullopt)}, narrow(x, 0, 0, 2) * 3.0);
  // the write's node is gone (its result dropped): nothing to take v's history from
  VK_EXPECT_ERROR(v * 2.0, RuntimeError, "made before an in-place write", "cannot be taken again");
  NoGradGuard no_grad;
  expect_values(v * 2.0, {6, 12});  // the values are there, without a graph
}

TEST(InPlaceRecord, AWriteThroughAViewReachesItsBaseRegression) {
  Tensor x = values({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = x * 2.0;
  const Tensor col = mul_(select(y, 1, 1), values({10, 100}, {2}, false));  // y[:, 1] *= [10, 100]
  expect_values(y, {2, 40, 6, 8, 1000, 12});
  // y itself is stale: taken again from the node its memory has had since the write
  autograd::backward(sum(y * y) + sum(col));
  // d/dx of sum(y^2) + sum(col): 8x off the column, 8 x k^2 + 2k on it (c = 2 x k)
  expect_values(x.grad(), {8, 8 * 2 * 100 + 20, 24, 32, 8 * 5 * 10000 + 200, 48});
}

TEST(InPlaceRecord, AWriteThroughAViewOfANonContiguousBaseLeavesItRefused) {
  // the base's row-major order does not hold the view's region: no node can follow the write,
  // and the base refuses to be used with a history that does not explain its values
  Tensor w = values({5, 6}, {2});
  Tensor base = zeros({2, 3}, DType::Float64).alias({3, 2}, {1, 3}, 0);  // a transposed leaf
  const Tensor row = copy_(select(base, 0, 1), w);
  expect_values(row, {5, 6});
  VK_EXPECT_ERROR(base * 2.0, RuntimeError, "made before an in-place write");
  autograd::backward(sum(row * 3.0));  // the view written stands for the write
  expect_values(w.grad(), {3, 3});
}

TEST(InPlaceRecord, WritesThroughViewsLeaveNoCycleBehindRegression) {
  // the base holds the node that succeeds it weakly (it is among that node's parents): a loop
  // of writes through views frees every node and the memory once its tensors are dropped
  std::weak_ptr<TensorImpl> base, last;
  {
    Tensor x = values({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor buf = zeros({2, 3}, DType::Float64);
    base = buf.impl_ptr();
    Tensor row;
    for (int t = 0; t < 3; ++t) {
      row = copy_(select(buf, 1, t), select(x, 1, t) * (t + 1.0));
      // buf[:, 1] = buf[:, 0] * 2 (the value reads the base too)
      if (t == 1) row = copy_(select(buf, 1, 1), select(buf, 1, 0) * 2.0);
    }
    last = row.parents()[0].impl_ptr();  // the base's node after the last write
    ASSERT_FALSE(base.expired());
    autograd::backward(sum(buf * 1.0));  // buf is stale: taken again
    expect_values(x.grad(), {1 + 2, 0, 3, 1 + 2, 0, 3});
  }
  EXPECT_TRUE(base.expired());
  EXPECT_TRUE(last.expired());
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
