// Composite ops (ops/composite.h) from C++: values, gradients against finite differences, the
// generic in-place path. The Python suite (tests/python/test_composite_ops.py) compares every
// composite with PyTorch; these check the C++ API that C++ users call.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace vk::test {
namespace {

TEST(Composite, LerpAddcmulAddcdivValuesAndGradients) {
  Tensor a = values({1, 2}, {2}), b = values({3, 6}, {2});
  expect_values(lerp(a, b, 0.25), {1.5, 3});
  expect_values(addcmul(a, a, b, 2), {7, 26});
  expect_values(addcdiv(a, a, b, 3), {2, 3});
  auto f = [](const std::vector<Tensor>& x) { return lerp(x[0], x[1], x[2]) * x[0]; };
  EXPECT_EQ(autograd::gradcheck(f, {leaf({3}), leaf({3}), leaf({3})}), "");
  VK_EXPECT_ERROR(lerp(a, cast(b, DType::Float32), 0.5), RuntimeError, "lerp", "float32");
}

TEST(Composite, NormsAndTheirGradientAtZero) {
  Tensor x = values({3, -4}, {2});
  expect_values(vector_norm(x), {5});
  expect_values(vector_norm(x, 1), {7});
  expect_values(vector_norm(x, std::numeric_limits<double>::infinity()), {4});
  expect_values(vector_norm(x, 0), {2});
  Tensor z = values({0, 0}, {2});
  autograd::backward(vector_norm(z, 0.5));
  expect_values(z.grad(), {0, 0});  // torch's subgradient, not NaN
  Tensor m = values({1, -2, 3, 4}, {2, 2});
  expect_values(matrix_norm(m, 1.0), {6});
  expect_values(matrix_norm(m, -std::numeric_limits<double>::infinity()), {3});
  expect_values(matrix_norm(m, "nuc"), {std::sqrt(50.0)}, 1e-5);  // (s1 + s2)^2 = tr(m^T m) + 2 det
  VK_EXPECT_ERROR(matrix_norm(m, "max"), RuntimeError, "max");
}

TEST(Composite, EinsumMatchesMatmulAndTrace) {
  Tensor a = leaf({2, 3}), b = leaf({3, 4});
  expect_values(einsum("ij,jk->ik", {a, b}), to_vector(matmul(a, b)), 1e-12);
  expect_values(einsum("ij,jk", {a, b}), to_vector(matmul(a, b)), 1e-12);
  Tensor s = leaf({3, 3});
  expect_values(einsum("ii", {s}), to_vector(trace(s)), 1e-12);
  auto f = [](const std::vector<Tensor>& x) { return einsum("bij,bjk->bik", {x[0], x[1]}); };
  EXPECT_EQ(autograd::gradcheck(f, {leaf({2, 2, 3}), leaf({2, 3, 2})}), "");
  VK_EXPECT_ERROR(einsum("ij,jk", {a, a}), RuntimeError, "subscript j");
}

TEST(Composite, ShapeComposites) {
  Tensor x = values({1, 2, 4, 7}, {4});
  expect_values(diff(x), {1, 2, 3});
  expect_values(diff(x, 2), {1, 1});
  expect_values(roll(x, {1}), {7, 1, 2, 4});
  expect_values(repeat_interleave(x, 2), {1, 1, 2, 2, 4, 4, 7, 7});
  expect_values(repeat_interleave(x, ints({0, 1, 2, 0}, {4})), {2, 4, 4});
  auto g = meshgrid({values({1, 2}, {2}), values({3, 4, 5}, {3})});
  EXPECT_EQ(g[1].shape(), (Shape{2, 3}));
  expect_values(g[1], {3, 4, 5, 3, 4, 5});
  expect_values(cross(values({1, 0, 0}, {3}), values({0, 1, 0}, {3})), {0, 0, 1});
  expect_values(kron(values({1, 2}, {2}), values({1, 10}, {2})), {1, 10, 2, 20});
}

TEST(Composite, GenericInPlaceChecksAndVersion) {
  Tensor x = values({1, 4}, {2}, false);
  const uint32_t v = x.version();
  inplace(x, {}, "sqrt_", [&] { return sqrt(x); });
  expect_values(x, {1, 2});
  EXPECT_GT(x.version(), v);
  Tensor w = values({1, 1}, {2});
  VK_EXPECT_ERROR(inplace(w, {}, "exp_", [&] { return exp(w); }), RuntimeError, "exp_");
  // A value that requires grad is recorded: the returned tensor stands for x, over x's memory.
  Tensor y = inplace(x, {w}, "lerp_", [&] { return lerp(x, w, 0.5); });
  expect_values(x, {1, 1.5});
  EXPECT_EQ(y.storage(), x.storage());
  autograd::backward(sum(y));
  expect_values(w.grad(), {0.5, 0.5});
  Tensor i = ints({1, 2}, {2});
  VK_EXPECT_ERROR(inplace(i, {}, "sqrt_", [&] { return sqrt(i); }), RuntimeError, "sqrt_");
}

}  // namespace
}  // namespace vk::test
