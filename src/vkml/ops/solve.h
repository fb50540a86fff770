// The solver family (issue #15, linalg): LU factorization with partial pivoting, Cholesky and
// triangular solves are the table's ops; solve, inv, det, slogdet, logdet, matrix_power and the
// Cholesky solves are composed of them, so their gradients follow from the ops' rules.
#pragma once
#include "vkml/core/tensor.h"
#include "vkml/ops/composite.h"

namespace vk {

// P A = L U of each square matrix of A (..., n, n): LU packs L's strict lower part (unit diagonal
// implied) and U; pivots (int32, 1-based, as LAPACK's getrf and torch) says that row i was swapped
// with row pivots[i] - 1 at step i; perm (int64) is the composed permutation: row i of L U is row
// perm[i] of A. A zero pivot is left in place (a singular A factors; U has a zero on its diagonal).
struct LuFactors {
  Tensor LU, pivots, perm;
};
LuFactors lu_factor_ex(const Tensor& A);
// LAPACK's info of each factorization (int32): the 1-based position of the first zero on U's
// diagonal, 0 when there is none. Computed on the device, nothing read on the host.
Tensor lu_info(const Tensor& LU);
// torch.linalg.lu_factor: (LU, pivots); a zero on U's diagonal is a RuntimeError naming the batch
// element, as torch's.
TensorPair lu_factor(const Tensor& A);
// torch.lu_unpack: A = P L U from lu_factor's (LU, pivots) of an m x n A (k = min(m, n)): P
// (m x m), L (m x k, unit diagonal), U (k x n). The pivots become P on the device (a few index ops
// per pivot, nothing read on the host); pivots outside 1..m are an IndexError.
struct LuUnpacked {
  Tensor P, L, U;
};
LuUnpacked lu_unpack(const Tensor& LU, const Tensor& pivots);
// torch.linalg.lu: (P, L, U) of square matrices (lu_factor_ex and lu_unpack's P from its perm).
LuUnpacked lu(const Tensor& A);
// torch.linalg.lu_solve: X with A X = B (A^T X = B when adjoint; X A = B when !left) for A given
// by lu_factor's (LU, pivots); batch dims broadcast.
Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left = true,
                bool adjoint = false);
// The lower-triangular L with A = L L^T of each symmetric positive-definite matrix of A
// (..., n, n), read from A's lower triangle only (LAPACK's potrf, as torch). Where a leading minor
// is not positive-definite, L holds a NaN or zero on its diagonal from there on: cholesky_info
// finds it. upper: U = L^T, read from A's upper triangle.
Tensor cholesky_ex(const Tensor& A, bool upper = false);
// LAPACK's info of each factor (int32): the order of the first leading minor that is not
// positive-definite, 0 when there is none. Computed on the device, nothing read on the host.
Tensor cholesky_info(const Tensor& L);
// torch.linalg.cholesky: cholesky_ex, and a LinAlgError naming the batch element and the minor
// when a matrix is not positive-definite.
Tensor cholesky(const Tensor& A, bool upper = false);
// torch.cholesky_solve: X = A^-1 B for A = L L^T (or U^T U when upper) given its factor; batch
// dims broadcast. The factor's other triangle is not read (nor differentiated).
Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper = false);
// torch.cholesky_inverse: A^-1 for A = L L^T (or U^T U) given its factor.
Tensor cholesky_inverse(const Tensor& L, bool upper = false);
// torch.linalg.solve_triangular: X with A X = B (left) or X A = B; A's other triangle is not read,
// nor its diagonal when unitriangular. Batch dims broadcast.
Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true,
                        bool unitriangular = false);
// torch.linalg.solve: X with A X = B (left) or X A = B; B a vector when it is 1-D or has one dim
// fewer than A with matching batch dims. A singular A is a LinAlgError.
Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left = true);
Tensor inv(const Tensor& A);  // torch.linalg.inv: LinAlgError naming the zero pivot when singular
Tensor det(const Tensor& A);  // 0 for a singular A
// torch.linalg.slogdet: (sign, log|det|); (0, -inf) for a singular A.
TensorPair slogdet(const Tensor& A);
Tensor logdet(const Tensor& A);  // log det: NaN where det < 0, -inf where it is 0
// A^n by repeated squaring; n < 0 is inv(A)^-n, n = 0 the identity.
Tensor matrix_power(const Tensor& A, int64_t n);
// torch.linalg.eigh: the eigenvalues (..., n), ascending, and the eigenvectors (..., n, n, as
// columns) of each symmetric matrix, read from A's lower triangle (upper: its upper one). Each
// eigenvector's largest component (the first of equal ones) is positive, so that results do not
// depend on the device (LAPACK leaves the signs to its algorithm; compare them up to sign).
TensorPair eigh(const Tensor& A, bool upper = false);
// torch.linalg.svd(A, full_matrices=False): A = U diag(S) V^T of each m x n matrix, k = min(m, n):
// U (..., m, k), S (..., k) descending, V (..., n, k) (torch returns Vh = V^T). Each column of the
// taller factor (U when m >= n, else V) has its largest component positive (LAPACK's signs are its
// algorithm's). Where S is 0, U's and V's columns are 0 (torch: some orthonormal completion).
struct SvdResult {
  Tensor U, S, V;
};
SvdResult svd(const Tensor& A);

}  // namespace vk
