// Op cases for the solver family (#15 linalg): lu_factor (with row swaps: the matrices are a
// permutation scaled by 4 plus noise, so the pivots stay put under finite differences), cholesky
// (of P P^T for such a P: symmetric positive-definite) and triangular_solve (lower, upper, unit
// diagonal, broadcast batch dims, the right side), and the composites built on them (solve, inv,
// det, slogdet, matrix_power, lu_solve, lu_unpack, cholesky_solve and cholesky_inverse), whose
// gradients are the ops' rules together.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

// 4 * (a permutation that swaps rows at every step) + x: well conditioned, pivots fixed.
Tensor permuted(const Tensor& x) {
  const int64_t n = x.shape().back();
  std::vector<double> p(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i * n + (i + 1) % n)] = 4.0;
  return x + to_device(values(p, {n, n}, false, x.dtype()), x.device());
}

// A symmetric positive-definite matrix: P P^T for P = permuted(x).
Tensor spd(const Tensor& x) {
  const Tensor p = permuted(x);
  return matmul(p, transpose(p, -1, -2));
}

// x with 3 added on the diagonal: a well-conditioned triangle.
Tensor dominant(const Tensor& x) {
  const int64_t n = x.shape().back();
  return x + to_device(diag_embed(full({n}, 3.0, x.dtype())), x.device());
}

RegisterOpCases solve_cases({
    {OpKind::LuFactor, "lu_factor/pivoted",
     [] {
       return V{leaf({4, 4})};
     },
     [](const V& x) { return lu_factor_ex(permuted(x[0])).LU; }},
    {OpKind::LuFactor, "lu_factor/batched",
     [] {
       return V{leaf({2, 3, 3})};
     },
     [](const V& x) { return lu_factor_ex(permuted(x[0])).LU; }},
    {OpKind::LuFactor, "lu_factor/solve",
     [] {
       return V{leaf({3, 3}), leaf({3, 2})};
     },
     [](const V& x) { return linalg_solve(permuted(x[0]), x[1]); }},
    {OpKind::LuFactor, "lu_factor/solve_batched_vector",
     [] {
       return V{leaf({2, 3, 3}), leaf({2, 3})};
     },
     [](const V& x) { return linalg_solve(permuted(x[0]), x[1]); }},
    {OpKind::LuFactor, "lu_factor/solve_right",
     [] {
       return V{leaf({3, 3}), leaf({2, 3})};
     },
     [](const V& x) { return linalg_solve(permuted(x[0]), x[1], false); }},
    {OpKind::LuFactor, "lu_factor/inv",
     [] {
       return V{leaf({3, 3})};
     },
     [](const V& x) { return inv(permuted(x[0])); }},
    {OpKind::LuFactor, "lu_factor/det",
     [] {
       return V{leaf({2, 3, 3})};
     },
     [](const V& x) { return det(permuted(x[0])); }},
    {OpKind::LuFactor, "lu_factor/slogdet",
     [] {
       return V{leaf({3, 3})};
     },
     [](const V& x) { return slogdet(permuted(x[0])).second; }},
    {OpKind::LuFactor, "lu_factor/matrix_power_negative",
     [] {
       return V{leaf({3, 3})};
     },
     [](const V& x) { return matrix_power(permuted(x[0]), -2); }},
    {OpKind::LuFactor, "lu_factor/lu_solve_adjoint",
     [] {
       return V{leaf({2, 3, 3}), leaf({3, 2})};
     },
     [](const V& x) {
       const LuFactors f = lu_factor_ex(permuted(x[0]));
       return lu_solve(f.LU, f.pivots, x[1], true, true);
     }},
    {OpKind::LuFactor, "lu_factor/lu_unpack",
     [] {
       return V{leaf({3, 3})};
     },
     [](const V& x) {
       const LuFactors f = lu_factor_ex(permuted(x[0]));
       const LuUnpacked u = lu_unpack(f.LU, f.pivots);
       return matmul(u.P, matmul(u.L, u.U));  // A again
     }},
    {OpKind::Cholesky, "cholesky/batched",
     [] {
       return V{leaf({2, 3, 3})};
     },
     [](const V& x) { return cholesky(spd(x[0])); }},
    {OpKind::Cholesky, "cholesky/upper",
     [] {
       return V{leaf({3, 3})};
     },
     [](const V& x) { return cholesky(spd(x[0]), true); }},
    {OpKind::Cholesky, "cholesky/solve_broadcast",
     [] {
       return V{leaf({3, 3}), leaf({2, 3, 2})};
     },
     [](const V& x) { return cholesky_solve(x[1], cholesky(spd(x[0]))); }},
    {OpKind::Cholesky, "cholesky/inverse_upper",
     [] {
       return V{leaf({3, 3})};
     },
     [](const V& x) { return cholesky_inverse(cholesky(spd(x[0]), true), true); }},
    {OpKind::Eigh, "eigh/values_and_vectors",  // of a symmetric A: x + x^T
     [] {
       return V{leaf({2, 4, 4})};
     },
     [](const V& x) {
       const TensorPair r = eigh(x[0] + transpose(x[0], -1, -2));
       return cat({unsqueeze(r.first, -2), r.second}, -2);
     }},
    {OpKind::Eigh, "eigh/upper_reconstructed",  // V diag(L) V^T from A's upper triangle
     [] {
       return V{leaf({3, 3})};
     },
     [](const V& x) {
       const TensorPair r = eigh(triu(x[0]) + transpose(triu(x[0], 1), -1, -2), true);
       return matmul(r.second * unsqueeze(r.first, -2), transpose(r.second, -1, -2));
     }},
    {OpKind::Svd, "svd/tall_factors",  // S, and U and V through sign-invariant products
     [] {
       return V{leaf({2, 4, 3})};
     },
     [](const V& x) {
       const SvdResult r = svd(x[0]);
       const Tensor s = unsqueeze(r.S, -2);
       return cat({r.S, reshape(matmul(r.U * s, transpose(r.U, -1, -2)), {2, -1}),
                   reshape(matmul(r.V * s, transpose(r.V, -1, -2)), {2, -1})},
                  -1);
     }},
    {OpKind::Svd, "svd/wide_packed",  // a wide matrix through its transpose: every factor
     [] {
       return V{leaf({2, 4})};
     },
     [](const V& x) {
       const SvdResult r = svd(x[0]);
       return cat({unsqueeze(r.S, -2), r.U, r.V}, -2);
     }},
    {OpKind::TriangularSolve, "triangular_solve/lower",
     [] {
       return V{leaf({3, 3}), leaf({3, 2})};
     },
     [](const V& x) { return solve_triangular(dominant(x[0]), x[1], false); }},
    {OpKind::TriangularSolve, "triangular_solve/upper_batched_broadcast",
     [] {
       return V{leaf({3, 3}), leaf({2, 3, 2})};
     },
     [](const V& x) { return solve_triangular(dominant(x[0]), x[1], true); }},
    {OpKind::TriangularSolve, "triangular_solve/unitriangular",
     [] {
       return V{leaf({3, 3}), leaf({3, 1})};
     },
     [](const V& x) { return solve_triangular(x[0], x[1], false, true, true); }},
    {OpKind::TriangularSolve, "triangular_solve/right_upper",
     [] {
       return V{leaf({3, 3}), leaf({2, 3})};
     },
     [](const V& x) { return solve_triangular(dominant(x[0]), x[1], true, false); }},
});

}  // namespace
}  // namespace vk::test
