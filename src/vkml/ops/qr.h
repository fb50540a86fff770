// QR and Householder reflectors (#15 linalg): torch.linalg.qr, geqrf, householder_product (orgqr)
// and ormqr.
#pragma once
#include <string_view>

#include "vkml/core/tensor.h"

namespace vk {

struct QrResult {
  Tensor Q, R;
};
// torch.linalg.qr: A = Q R of each m x n matrix, k = min(m, n). mode "reduced": Q (..., m, k),
// R (..., k, n); "complete": Q (..., m, m), R (..., m, n); "r": Q empty, R (..., k, n). Householder
// reflections as LAPACK's geqrf/orgqr, with its signs (R's diagonal is -sign(a) |column|, so it
// can be negative), so Q and R are torch's to rounding. Differentiable as torch's: every mode
// but "complete" with m > n (there Q's last m - n columns are not a function of A).
QrResult qr(const Tensor& A, std::string_view mode = "reduced");
// torch.geqrf: LAPACK's packed reflectors (R on and above the diagonal, the Householder vectors
// below it, their leading 1 implicit) and tau (..., k). Not differentiable (as torch's).
struct GeqrfResult {
  Tensor a, tau;
};
GeqrfResult geqrf(const Tensor& A);
// torch.linalg.householder_product (orgqr): the first n columns of H_1 ... H_k, H_i = I - tau_i
// v_i v_i^T with v_i column i of A below the diagonal and 1 on it. A (..., m, n), m >= n, tau
// (..., k), k <= n. Composed of forward ops (k rank-1 updates), so differentiable in A and tau.
Tensor householder_product(const Tensor& A, const Tensor& tau);
// torch.ormqr: Q C, Q^T C, C Q or C Q^T (left / transpose) for the m x m Q = H_1 ... H_k of
// (A, tau) as geqrf gives them, without forming Q. Composed of forward ops.
Tensor ormqr(const Tensor& A, const Tensor& tau, const Tensor& C, bool left, bool transpose);

}  // namespace vk
