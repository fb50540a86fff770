// The solver family (issue #15, linalg): LU factorization with partial pivoting and triangular
// solves are the table's ops; solve, inv, det, slogdet, logdet and matrix_power are composed of
// them, so their gradients follow from the two ops' rules.
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

}  // namespace vk
