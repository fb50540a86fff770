// Op cases for the reductions (gradcheck + gradgradcheck in float64).
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

// Distinct values spread over [-1, 1] (a random permutation of an evenly spaced grid), so that
// max/min have no ties within finite-difference reach.
Tensor distinct(const Shape& shape) {
  int64_t n = numel_of(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = -1.0 + 2.0 * static_cast<double>((i * 7919) % n) / n;
  return values(v, shape);
}

RegisterOpCases reduction_cases({
    // sum's basic cases are in cases_core.cpp; these take the other kernel paths.
    {OpKind::Sum, "sum/leading_dims",
     [] {
       return V{leaf({3, 4, 5})};
     },
     [](const V& x) {
       return sum(x[0] * x[0], {0, 1});
     }},
    {OpKind::Sum, "sum/middle_dim_transposed",
     [] {
       return V{leaf({3, 4, 5})};
     },
     [](const V& x) { return sum(transpose(x[0], 0, 2), {1}, true); }},

    {OpKind::Mean, "mean/all",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return mean(x[0]); }},
    {OpKind::Mean, "mean/dims_keepdim",
     [] {
       return V{leaf({2, 3, 4})};
     },
     [](const V& x) {
       return mean(x[0], {0, 2}, true);
     }},
    {OpKind::Mean, "mean/negative_dim",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return mean(x[0] * x[0], {-1}); }},

    {OpKind::Amax, "amax/all",
     [] {
       return V{distinct({2, 3})};
     },
     [](const V& x) { return amax(x[0]); }},
    {OpKind::Amax, "amax/dims_keepdim",
     [] {
       return V{distinct({2, 3, 4})};
     },
     [](const V& x) {
       return amax(x[0], {0, 2}, true);
     }},
    {OpKind::Amax, "amax/negative_dim",
     [] {
       return V{distinct({3, 4})};
     },
     [](const V& x) { return amax(x[0] * 2.0, {-1}); }},
    {OpKind::Amin, "amin/all",
     [] {
       return V{distinct({2, 3})};
     },
     [](const V& x) { return amin(x[0]); }},
    {OpKind::Amin, "amin/dim0",
     [] {
       return V{distinct({3, 4})};
     },
     [](const V& x) { return amin(x[0], {0}); }},
    {OpKind::Amin, "amin/negative_dim_keepdim",
     [] {
       return V{distinct({2, 3, 4})};
     },
     [](const V& x) { return amin(x[0], {-2}, true); }},

    {OpKind::MaxDim, "max_dim/dim1",
     [] {
       return V{distinct({3, 4})};
     },
     [](const V& x) { return max(x[0], 1).values; }},
    {OpKind::MaxDim, "max_dim/negative_keepdim",
     [] {
       return V{distinct({2, 3, 4})};
     },
     [](const V& x) { return max(x[0], -3, true).values; }},
    {OpKind::MinDim, "min_dim/dim0",
     [] {
       return V{distinct({3, 4})};
     },
     [](const V& x) { return min(x[0], 0).values; }},
    {OpKind::MinDim, "min_dim/negative_keepdim",
     [] {
       return V{distinct({2, 3, 4})};
     },
     [](const V& x) { return min(x[0], -1, true).values; }},

    {OpKind::Prod, "prod/all",
     [] {
       return V{leaf({2, 3}, 0.5, 1.5)};
     },
     [](const V& x) { return prod(x[0]); }},
    {OpKind::Prod, "prod/dims_keepdim",
     [] {
       return V{leaf({2, 3, 4}, 0.5, 1.5)};
     },
     [](const V& x) {
       return prod(x[0], {0, 2}, true);
     }},
    {OpKind::Prod, "prod/negative_dim",
     [] {
       return V{leaf({3, 4}, -1.5, -0.5)};
     },
     [](const V& x) { return prod(x[0], {-1}); }},
    // At zeros the rule switches formulas; its values and its own derivative must stay right.
    {OpKind::Prod, "prod/one_zero",
     [] {
       return V{values({0.5, 0.0, -1.5, 2.0, 1.25, 0.75}, {2, 3})};
     },
     [](const V& x) { return prod(x[0], {1}); }},
    {OpKind::Prod, "prod/two_zeros",
     [] {
       return V{values({0.5, 0.0, -1.5, 0.0, 1.25, 0.75}, {6})};
     },
     [](const V& x) { return prod(x[0]); }},
    {OpKind::Prod, "prod/three_zeros",
     [] {
       return V{values({0.0, 0.5, 0.0, -1.5, 0.0, 1.25}, {2, 3})};
     },
     [](const V& x) {
       return prod(x[0], {0, 1}, true);
     }},

    {OpKind::ArgMax, "argmax",
     [] {
       return V{distinct({3, 4})};
     },
     [](const V& x) { return argmax(x[0], 1); }},
    {OpKind::ArgMin, "argmin",
     [] {
       return V{distinct({3, 4})};
     },
     [](const V& x) { return argmin(x[0], -2, true); }},

    {OpKind::LogSumExp, "logsumexp/all",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return logsumexp(x[0]); }},
    {OpKind::LogSumExp, "logsumexp/dims_keepdim",
     [] {
       return V{leaf({2, 3, 4}, -3.0, 3.0)};
     },
     [](const V& x) {
       return logsumexp(x[0], {0, 2}, true);
     }},
    {OpKind::LogSumExp, "logsumexp/negative_dim",
     [] {
       return V{leaf({3, 4}, -3.0, 3.0)};
     },
     [](const V& x) { return logsumexp(x[0], {-1}); }},

    {OpKind::Var, "var/correction1_all",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return var(x[0]); }},
    {OpKind::Var, "var/correction0_dims",
     [] {
       return V{leaf({2, 3, 4})};
     },
     [](const V& x) {
       return var(x[0], {0, 2}, 0.0);
     }},
    {OpKind::Var, "var/negative_dim_keepdim",
     [] {
       return V{leaf({3, 4})};
     },
     [](const V& x) { return var(x[0], {-1}, 1.0, true); }},
    {OpKind::SumSquares, "sum_squares/all",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return sum_squares(x[0]); }},
    {OpKind::SumSquares, "sum_squares/dims_keepdim",
     [] {
       return V{leaf({2, 3, 4})};
     },
     [](const V& x) {
       return sum_squares(x[0], {0, 2}, true);
     }},
    {OpKind::SumSquares, "sum_squares/negative_dim",
     [] {
       return V{leaf({3, 4})};
     },
     [](const V& x) { return sum_squares(x[0], {-1}); }},

    {OpKind::Sum, "sum/all",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return sum(x[0]); }},
    {OpKind::Sum, "sum/dims_keepdim",
     [] {
       return V{leaf({2, 3, 4})};
     },
     [](const V& x) {
       return sum(x[0], {0, 2}, true);
     }},
    {OpKind::Sum, "sum/negative_dim",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return sum(x[0], {-1}); }},

});

}  // namespace
}  // namespace vk::test
