// Op cases for the scan family: cumsum, cumprod (with and without zeros: the rule's two forms),
// cummax and cummin (ties and NaN in a constant input, so that finite differences stay away from
// them) along first, middle and last dims and strided; tril/triu are where's cases here.
// Outputs are squared so that gradgradcheck goes through the rules' own ops.
#include <cmath>
#include <limits>

#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

Tensor sq(const Tensor& y) { return y * y; }
Tensor as_float(const Tensor& i) { return cast(i, DType::Float64); }

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor ties_and_nan() {
  return values({1, 3, 3, 2, kNaN, 5, kNaN, 0, 2, 2, 1, 1, 4, 1, 1, 0}, {2, 8}, false);
}

RegisterOpCases scan_cases({
    {OpKind::CumSum, "cumsum/last",
     [] {
       return V{leaf({3, 5})};
     },
     [](const V& x) { return sq(cumsum(x[0], -1)); }},
    {OpKind::CumSum, "cumsum/dim0_strided",
     [] {
       return V{leaf({4, 3, 2})};
     },
     [](const V& x) { return sq(cumsum(transpose(x[0], 0, 2), 0)); }},
    {OpKind::CumSum, "cumsum/scalar", [] { return V{leaf({})}; },
     [](const V& x) { return sq(cumsum(x[0], 0)); }},
    {OpKind::CumProd, "cumprod/no_zeros",
     [] {
       return V{leaf({3, 5}, 0.5, 1.5)};
     },
     [](const V& x) { return sq(cumprod(x[0], 1)); }},
    {OpKind::CumProd, "cumprod/middle_negative",
     [] {
       return V{leaf({2, 4, 3}, -1.5, 1.5)};
     },
     [](const V& x) { return sq(cumprod(x[0], 1)); }},
    // One zero, two zeros and a zero first: the rule's other form, and its own derivative.
    {OpKind::CumProd, "cumprod/zeros",
     [] {
       return V{
           values({0.5, 0, 1.5, -2, 0.7, 1.1, 0, 0.9, 0, 2, 0, 0.8, 1.2, 0.6, -1, 1.3}, {4, 4})};
     },
     [](const V& x) { return sq(cumprod(x[0], 1)); }},
    {OpKind::CumProd, "cumprod/zeros_dim0",
     [] {
       return V{values({0.5, 0, 1.5, 0, 0.7, 1.1, 0, 0.9, 2}, {3, 3})};
     },
     [](const V& x) { return sq(cumprod(x[0], 0)); }},
    {OpKind::CumMax, "cummax/last",
     [] {
       return V{leaf({3, 6})};
     },
     [](const V& x) {
       ValuesIndices c = cummax(x[0], -1);
       return sq(c.values) + as_float(c.indices);
     }},
    {OpKind::CumMax, "cummax/ties_and_nan",
     [] {
       return V{leaf({2, 8}), ties_and_nan()};
     },
     [](const V& x) {
       return sq(cummax(x[0], 1).values) + as_float(cummax(x[1], 1).indices) * 0.5 +
              as_float(cummin(x[1], 1).indices) * 0.25;
     }},
    {OpKind::CumMin, "cummin/dim0_strided",
     [] {
       return V{leaf({4, 3})};
     },
     [](const V& x) {
       ValuesIndices c = cummin(transpose(x[0], 0, 1), 1);
       return sq(c.values) + as_float(c.indices);
     }},
    {OpKind::Where, "tril/diagonals",
     [] {
       return V{leaf({2, 3, 4})};
     },
     [](const V& x) { return sq(tril(x[0])) + sq(tril(x[0], 1)) * 2.0 + tril(x[0], -2) * 3.0; }},
    {OpKind::Where, "triu/diagonals",
     [] {
       return V{leaf({4, 3})};
     },
     [](const V& x) { return sq(triu(x[0])) + sq(triu(x[0], -1)) * 2.0 + triu(x[0], 2) * 3.0; }},
});

TEST(Scan, CumExtremesTakeTheLatestTieAndPropagateNaN) {
  const Tensor x = ties_and_nan();
  // torch.cummax(x, 1).indices and torch.cummin(x, 1).indices
  expect_values(cummax(x, 1).indices, {0, 1, 2, 2, 4, 4, 6, 6, 0, 1, 1, 1, 4, 4, 4, 4});
  expect_values(cummin(x, 1).indices, {0, 0, 0, 0, 4, 4, 6, 6, 0, 1, 2, 3, 3, 5, 6, 7});
  const std::vector<double> v = to_vector(cummax(x, 1).values);
  EXPECT_TRUE(std::isnan(v[5]));
}

TEST(Scan, CumsumOfIntegersIsInt64AndTrilNeedsTwoDims) {
  EXPECT_EQ(cumsum(ints({1, 2, 3}, {3}), 0).dtype(), DType::Int64);
  expect_values(cumsum(ints({1, 2, 3}, {3}), 0), {1, 3, 6});
  expect_values(cumprod(values({2, 0, 3}, {3}, false), 0), {2, 0, 0});
  VK_EXPECT_ERROR(tril(zeros({3})), RuntimeError, "tril");
  VK_EXPECT_ERROR(cumsum(zeros({3}), 1), IndexError, "cumsum");
  expect_values(triu(values({1, 2, 3, 4, 5, 6}, {2, 3}, false), 1), {0, 2, 3, 0, 0, 6});
}

}  // namespace
}  // namespace vk::test
