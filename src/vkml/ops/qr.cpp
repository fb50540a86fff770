// QR and Householder reflectors (#15 linalg). Two ops of the table share one kernel per device:
//  - qr: the reduced Q and R of each matrix, packed (..., m + k, n), with torch's rule
//    (linalg_qr_backward: the square/tall case, and the wide case through its leading block);
//  - geqrf: LAPACK's packed reflectors and tau, (..., m + 1, n), without a rule (as torch's).
// householder_product (orgqr) and ormqr apply the reflectors one rank-1 update at a time with
// forward ops, so they differentiate in both A and tau; linalg.qr's complete Q of a tall matrix
// is householder_product of geqrf's reflectors padded to m columns.
#include "vkml/ops/qr.h"

#include <algorithm>
#include <string>

#include "vkml/core/shape.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/linalg.h"
#include "vkml/ops/op.h"
#include "vkml/ops/scan.h"
#include "vkml/ops/shape.h"
#include "vkml/ops/solve.h"

namespace vk {
namespace {

Tensor mT(const Tensor& t) { return transpose(t, -1, -2); }

int64_t rows_of(const Tensor& t) { return t.shape()[t.ndim() - 2]; }

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

void check_matrices(const Tensor& A, std::string_view op, std::string_view name) {
  VK_CHECK(A.ndim() >= 2, ShapeError, op, ": ", name,
           " must have at least 2 dimensions, got shape ", shape_str(A.shape()));
  VK_CHECK(A.dtype() == DType::Float32 || A.dtype() == DType::Float64, DTypeError, op,
           ": expected a float32 or float64 tensor as ", name, ", got ", dtype_name(A.dtype()));
}

// The m x n matrix with ones on its diagonal, in like's dtype and device.
Tensor unit_columns(int64_t m, int64_t n, const Tensor& like) {
  const Tensor rows = unsqueeze(arange(0, m, 1, DType::Int64, like.device()), -1);
  return cast(eq(rows, arange(0, n, 1, DType::Int64, like.device())), like.dtype());
}

Meta infer_qr(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  check_matrices(in[0], op, "A");
  Shape s = in[0].shape();
  s[s.size() - 2] += std::min(s[s.size() - 2], s.back());  // Q's m rows, then R's k
  return {s, in[0].dtype()};
}

Meta infer_geqrf(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  check_matrices(in[0], op, "A");
  Shape s = in[0].shape();
  s[s.size() - 2] += 1;  // the reflectors' m rows, then tau
  return {s, in[0].dtype()};
}

// m >= n: with M = R gR^T - gQ^T Q and copyltu(M) its lower triangle mirrored up,
// dA = (gQ + Q copyltu(M)) R^-T (torch's linalg_qr_backward, Walter and Lehmann's form).
Tensor tall_qr_grad(const Tensor& Q, const Tensor& R, const Tensor& gQ, const Tensor& gR) {
  const Tensor M = matmul(R, mT(gR)) - matmul(mT(gQ), Q);
  const Tensor sym = tril(M) + mT(tril(M, -1));
  const Tensor b = gQ + matmul(Q, sym);
  return mT(solve_triangular(R, mT(b), true, true, false));
}

// The packed (..., m + k, n): rows 0..m-1 Q in the first k columns, rows m.. R. A wide A = [X Y]
// (m < n) has Q R_X = X and R_Y = Q^T Y, so X's gradient is the square rule's with gQ + Y gR_Y^T
// and Y's is Q gR_Y.
Grads qr_grad(const GradCtx& c) {
  const Tensor& A = c.in[0];
  const int64_t m = rows_of(A), n = A.shape().back(), k = std::min(m, n);
  const auto q_of = [&](const Tensor& t) { return narrow(narrow(t, -2, 0, m), -1, 0, k); };
  const Tensor Q = q_of(c.out), gQ = q_of(c.grad);
  const Tensor R = narrow(c.out, -2, m, k), gR = narrow(c.grad, -2, m, k);
  if (m >= n) return {tall_qr_grad(Q, R, gQ, gR)};
  const Tensor gRY = narrow(gR, -1, m, n - m);
  const Tensor gQX = gQ + matmul(narrow(A, -1, m, n - m), mT(gRY));
  const Tensor gX = tall_qr_grad(Q, narrow(R, -1, 0, m), gQX, narrow(gR, -1, 0, m));
  return {cat({gX, matmul(Q, gRY)}, -1)};
}

// The reflector v_i (..., m, 1) and tau_i (..., 1, 1) of the unit-lower V and tau.
Tensor reflector(const Tensor& V, int64_t i) { return narrow(V, -1, i, 1); }
Tensor tau_of(const Tensor& tau, int64_t i) { return unsqueeze(narrow(tau, -1, i, 1), -1); }

// tau (..., k) beside A (..., rows, cols): k <= cols, tau's batch A's.
void check_tau(const Tensor& A, const Tensor& tau, std::string_view op) {
  VK_CHECK(tau.dtype() == A.dtype(), DTypeError, op, ": tau dtype ", dtype_name(tau.dtype()),
           " does not match input dtype ", dtype_name(A.dtype()));
  VK_CHECK(tau.ndim() == A.ndim() - 1, ShapeError, op,
           ": expected tau to have one dimension less than input, but got tau of shape ",
           shape_str(tau.shape()), " and input of shape ", shape_str(A.shape()));
  VK_CHECK(Shape(tau.shape().begin(), tau.shape().end() - 1) == batch_of(A), ShapeError, op,
           ": expected the batch dimensions of tau ", shape_str(tau.shape()),
           " to be input.shape[:-2] ", shape_str(A.shape()));
  VK_CHECK(tau.shape().back() <= A.shape().back(), ShapeError, op,
           ": input.shape[-1] must be greater than or equal to tau.shape[-1], got input ",
           shape_str(A.shape()), " and tau ", shape_str(tau.shape()));
}

}  // namespace

void add_qr_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::Qr,
       .name = "qr",
       .arity = 1,
       .signature = "qr(A) -> (..., m + k, n)",
       .summary =
           "the reduced QR decomposition A = Q R of each matrix (batched; float32/float64), "
           "k = min(m, n), by Householder reflections in LAPACK geqrf's order and signs (R's "
           "diagonal -sign(a_jj) times the column's norm; a column already zero below the "
           "diagonal is not reflected), Q formed as orgqr does: rows 0..m-1 of the result "
           "hold Q (m x k, zero beyond column k), rows m.. R (k x n)",
       .infer = infer_qr,
       .grad = qr_grad,
       .grad_doc = "torch's linalg_qr_backward: m >= n, M = R gR^T - gQ^T Q, dA = (gQ + Q "
                   "copyltu(M)) R^-T by a triangular_solve; m < n, A = [X Y]: X's by the same "
                   "rule with gQ + Y gR_Y^T, Y's Q gR_Y"});
  ops.push_back({.kind = OpKind::Geqrf,
                 .name = "geqrf",
                 .arity = 1,
                 .signature = "geqrf(A) -> (..., m + 1, n)",
                 .summary = "LAPACK geqrf's packed Householder QR of each matrix (batched; "
                            "float32/float64): rows 0..m-1 hold R on and above the diagonal and "
                            "the reflectors' vectors below it (their leading 1 implicit), row m "
                            "the k = min(m, n) scalars tau, zero beyond",
                 .infer = infer_geqrf,
                 .grad_doc = "none: torch's geqrf is not differentiable either (linalg.qr and "
                             "householder_product are)"});
}

QrResult qr(const Tensor& A, std::string_view mode) {
  const char* op = "linalg.qr";
  VK_CHECK(mode == "reduced" || mode == "complete" || mode == "r", RuntimeError, op,
           ": unrecognized mode '", mode,
           "', expected one of 'reduced' (default), 'r', or 'complete'");
  check_matrices(A, op, "A");
  const int64_t m = rows_of(A), n = A.shape().back(), k = std::min(m, n);
  const Tensor packed = dispatch(OpKind::Qr, {A});
  const Tensor R = narrow(packed, -2, m, k);
  if (mode == "r") return {zeros({0}, A.dtype(), A.device()), R};
  if (mode == "reduced" || m <= n) return {narrow(narrow(packed, -2, 0, m), -1, 0, k), R};
  // complete, m > n: the reflectors padded with identity steps (tau 0) to m of them
  const GeqrfResult g = geqrf(A);
  Shape pad_a = A.shape(), pad_tau = g.tau.shape();
  pad_a.back() = m - n;
  pad_tau.back() = m - n;
  const Tensor Q = householder_product(cat({g.a, zeros(pad_a, A.dtype(), A.device())}, -1),
                                       cat({g.tau, zeros(pad_tau, A.dtype(), A.device())}, -1));
  Shape pad_r = A.shape();
  pad_r[pad_r.size() - 2] = m - n;
  return {Q, cat({R, zeros(pad_r, A.dtype(), A.device())}, -2)};
}

GeqrfResult geqrf(const Tensor& A) {
  check_matrices(A, "geqrf", "A");
  const int64_t m = rows_of(A), k = std::min(m, A.shape().back());
  const Tensor packed = dispatch(OpKind::Geqrf, {A});
  return {narrow(packed, -2, 0, m), squeeze(narrow(narrow(packed, -2, m, 1), -1, 0, k), -2)};
}

Tensor householder_product(const Tensor& A, const Tensor& tau) {
  const char* op = "linalg.householder_product";
  check_matrices(A, op, "input");
  const int64_t m = rows_of(A), n = A.shape().back();
  VK_CHECK(m >= n, ShapeError, op,
           ": input.shape[-2] must be greater than or equal to input.shape[-1], got shape ",
           shape_str(A.shape()));
  check_tau(A, tau, op);
  const Tensor unit = unit_columns(m, n, A);
  const Tensor V = tril(A, -1) + unit;
  Tensor Q = expand(unit, A.shape());
  for (int64_t i = tau.shape().back() - 1; i >= 0; --i) {  // H_i (H_i+1 ... H_k-1 I)
    const Tensor v = reflector(V, i);
    Q = Q - matmul(v * tau_of(tau, i), matmul(mT(v), Q));
  }
  return Q;
}

Tensor ormqr(const Tensor& A, const Tensor& tau, const Tensor& C, bool left, bool transpose) {
  const char* op = "ormqr";
  check_matrices(A, op, "input");
  check_matrices(C, op, "other");
  check_tau(A, tau, op);
  VK_CHECK(C.dtype() == A.dtype(), DTypeError, op, ": other dtype ", dtype_name(C.dtype()),
           " does not match input dtype ", dtype_name(A.dtype()));
  VK_CHECK(batch_of(C) == batch_of(A), ShapeError, op, ": expected the batch dimensions of other ",
           shape_str(C.shape()), " to be input.shape[:-2] ", shape_str(A.shape()));
  const int64_t mn = left ? rows_of(C) : C.shape().back();
  VK_CHECK(rows_of(A) == mn, ShapeError, op, ": input.shape[-2] must equal other.shape[",
           left ? "-2" : "-1", "], got input ", shape_str(A.shape()), " and other ",
           shape_str(C.shape()));
  VK_CHECK(tau.shape().back() <= mn, ShapeError, op,
           ": tau.shape[-1] must be at most input.shape[-2], got input ", shape_str(A.shape()),
           " and tau ", shape_str(tau.shape()));
  const int64_t k = tau.shape().back();
  const Tensor V = tril(A, -1) + unit_columns(mn, A.shape().back(), A);
  // Q = H_0 ... H_k-1: Q C and C Q^T apply H_k-1 first, Q^T C and C Q apply H_0 first.
  const bool descending = left != transpose;
  Tensor out = C;
  for (int64_t s = 0; s < k; ++s) {
    const int64_t i = descending ? k - 1 - s : s;
    const Tensor v = reflector(V, i), t = tau_of(tau, i);
    out = left ? out - matmul(v * t, matmul(mT(v), out)) : out - matmul(matmul(out, v) * t, mT(v));
  }
  return out;
}

}  // namespace vk
