// The solver family (#15 linalg). Five ops of the table:
//  - lu_factor: P A = L U of each square matrix, with partial pivoting (LAPACK getf2's order:
//    the pivot is the first largest |a| of the column); its rule is torch's lu_factor_ex_backward
//    written with triangular solves;
//  - cholesky: A = L L^T from A's lower triangle; its rule is torch's cholesky_backward, again
//    with triangular solves;
//  - triangular_solve: X = A^-1 B for a triangular A, left side only (the right side, X A = B, is
//    the transposed problem: transpose views are recorded around the op).
//  - eigh and svd: symmetric eigendecomposition and the SVD of tall matrices by Jacobi rotations,
//    their rules torch's linalg_eig_backward and svd_backward (pinv, matrix_rank, lstsq and the
//    SVD-based norms are composed of svd in Python and composite_linalg.cpp).
// solve, inv, det, slogdet, logdet, matrix_power, cholesky_solve and cholesky_inverse are composed
// of them, so their gradients (and higher derivatives) follow from the three rules. Singular
// matrices are found by a host read of U's diagonal (inv, solve, lu_factor only: det and slogdet
// give 0 and -inf as torch's), matrices that are not positive-definite by one of L's (cholesky).
#include "vkml/ops/solve.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "vkml/core/grad_mode.h"
#include "vkml/core/shape.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/index.h"
#include "vkml/ops/linalg.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/scan.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

Tensor mT(const Tensor& t) { return transpose(t, -1, -2); }

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// The broadcast of A's and B's batch dims; ShapeError naming op and both shapes when they do not.
Shape batch_broadcast(const Tensor& A, const Tensor& B, std::string_view op) {
  const Shape a = batch_of(A), b = batch_of(B);
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i + a.size() >= n ? a[i + a.size() - n] : 1;
    const int64_t db = i + b.size() >= n ? b[i + b.size() - n] : 1;
    VK_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": the batch dims of A ",
             shape_str(A.shape()), " and B ", shape_str(B.shape()), " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void check_square(const Tensor& A, std::string_view op) {
  VK_CHECK(A.ndim() >= 2, ShapeError, op, ": A must have at least 2 dimensions, got shape ",
           shape_str(A.shape()));
  const int64_t rows = A.shape()[A.ndim() - 2], cols = A.shape()[A.ndim() - 1];
  VK_CHECK(rows == cols, ShapeError, op, ": A must be batches of square matrices, but they are ",
           rows, " by ", cols, " matrices (shape ", shape_str(A.shape()), ")");
}

void check_float(const Tensor& t, std::string_view op) {
  VK_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::Float64, DTypeError, op,
           ": expected a float32 or float64 tensor, got ", dtype_name(t.dtype()));
}

Meta infer_lu(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  check_square(in[0], op);
  check_float(in[0], op);
  return {in[0].shape(), in[0].dtype()};
}

// The identity matrices shaped as A (..., n, n), on its device.
Tensor identity_like(const Tensor& A) {
  Shape s(A.shape().begin(), A.shape().end() - 1);
  return diag_embed(full(s, 1, A.dtype(), A.device()));
}

Tensor tri_solve(const Tensor& A, const Tensor& B, bool upper, bool unitriangular) {
  Attrs a;
  a.triangular = {.upper = upper, .unitriangular = unitriangular};
  return dispatch(OpKind::TriangularSolve, {A, B}, a);
}

// torch's lu_factor_ex_backward (square case): with L and U unpacked from LU,
// dA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T, gL = tril(g, -1), gU = triu(g).
Grads lu_grad(const GradCtx& c) {
  const Tensor &LU = c.out, &g = c.grad;
  const Tensor L = tril(LU, -1) + identity_like(LU), U = triu(LU);
  const Tensor phi = tril(matmul(mT(L), tril(g, -1)), -1) + triu(matmul(triu(g), mT(U)));
  const Tensor x = tri_solve(mT(L), phi, true, true);     // L^-T phi
  const Tensor y = mT(tri_solve(U, mT(x), true, false));  // x U^-T
  // P y: row i of y goes to row perm[i].
  const Tensor idx = expand(unsqueeze(c.output(2), -1), LU.shape());
  return {scatter_add(zeros_like(LU), LU.ndim() - 2, idx, y)};
}

// torch's cholesky_backward (Murray 2016, arXiv 1602.07527): P = tril(L^T g), S = P with its
// diagonal halved and mirrored to a symmetric matrix, dA = L^-T S L^-1 (symmetric: the gradient
// for symmetric perturbations of A, as torch's).
Grads cholesky_grad(const GradCtx& c) {
  const Tensor& L = c.out;
  const Tensor p = tril(matmul(mT(L), c.grad));
  const Tensor s = (p + mT(tril(p, -1))) * 0.5;
  const Tensor x = tri_solve(mT(L), s, true, false);  // L^-T S
  return {mT(tri_solve(mT(L), mT(x), true, false))};  // (L^-T (L^-T S)^T)^T = L^-T S L^-1
}

// eigh's packed output (..., n + 1, n): row 0 the eigenvalues L, rows 1.. the eigenvectors V.
// torch's linalg_eig_backward for symmetric A: with M = (V^T gV - gV^T V) / 2 (the skew part, the
// tangent space of the orthogonal group) and E_ij = L_j - L_i, dA = V (M / E with diag(gL)) V^T.
// Repeated eigenvalues make E zero off the diagonal: inf or NaN, as torch's.
Grads eigh_grad(const GradCtx& c) {
  const int64_t n = c.out.shape().back();
  const Tensor L = narrow(c.out, -2, 0, 1), V = narrow(c.out, -2, 1, n);
  const Tensor gL = squeeze(narrow(c.grad, -2, 0, 1), -2), gV = narrow(c.grad, -2, 1, n);
  const Tensor vg = matmul(mT(V), gV);
  const Tensor skew = (vg - mT(vg)) * 0.5;
  const Tensor eye = identity_like(V);
  const Tensor gaps = mT(L) * -1.0 + L + eye;  // L_j - L_i, ones on the diagonal
  const Tensor inner = skew / gaps * (1.0 - eye) + diag_embed(gL);
  return {matmul(matmul(V, inner), mT(V))};
}

// svd's packed output (..., m + n + 1, n) of a tall A (m >= n, k = n): row 0 S, rows 1..m U,
// rows m+1.. V. torch's svd_backward (real, reduced): with J = U^T gU, K = V^T gV, skew(X) = X -
// X^T and F_ij = 1 / (s_j^2 - s_i^2) off the diagonal, dA = U ((F o skew(J)) S + S (F o skew(K))
// + diag(gS)) V^T + (I - U U^T) gU S^-1 V^T (V is square: no term for gV's complement).
Grads svd_grad(const GradCtx& c) {
  const int64_t n = c.out.shape().back(), m = c.out.shape()[c.out.ndim() - 2] - n - 1;
  const Tensor S = narrow(c.out, -2, 0, 1), U = narrow(c.out, -2, 1, m),
               V = narrow(c.out, -2, 1 + m, n);
  const Tensor gS = squeeze(narrow(c.grad, -2, 0, 1), -2), gU = narrow(c.grad, -2, 1, m),
               gV = narrow(c.grad, -2, 1 + m, n);
  const Tensor eye = identity_like(V);
  const Tensor S2 = S * S;
  const Tensor gaps = S2 - mT(S2) + eye;  // s_j^2 - s_i^2, ones on the diagonal
  const Tensor J = matmul(mT(U), gU), K = matmul(mT(V), gV);
  const Tensor skewJ = (J - mT(J)) / gaps * (1.0 - eye), skewK = (K - mT(K)) / gaps * (1.0 - eye);
  const Tensor inner = skewJ * S + mT(S) * skewK + diag_embed(gS);
  const Tensor rest = (gU - matmul(U, J)) / S;  // (I - U U^T) gU S^-1
  return {matmul(matmul(U, inner) + rest, mT(V))};
}

Meta infer_svd(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  const Tensor& A = in[0];
  VK_CHECK(A.ndim() >= 2, ShapeError, op, ": A must have at least 2 dimensions, got shape ",
           shape_str(A.shape()));
  check_float(A, op);
  const int64_t m = A.shape()[A.ndim() - 2], n = A.shape().back();
  VK_CHECK(m >= n, ShapeError, op,
           ": the op takes tall matrices (m >= n; linalg.svd transposes "
           "wide ones), got shape ",
           shape_str(A.shape()));
  Shape s = A.shape();
  s[s.size() - 2] = m + n + 1;
  return {s, A.dtype()};
}

Meta infer_eigh(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  check_square(in[0], op);
  check_float(in[0], op);
  Shape s = in[0].shape();
  s[s.size() - 2] += 1;
  return {s, in[0].dtype()};
}

// The batch dims of A and B broadcast by recorded expand views (as matmul's).
void prepare_solve(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  prepare_common_dtype(in, a, op);
  if (in[0].ndim() < 2 || in[1].ndim() < 2) return;  // infer reports it
  const Shape batch = batch_broadcast(in[0], in[1], op);
  for (auto& t : in) {
    Shape s = batch;
    s.push_back(t.shape()[t.ndim() - 2]);
    s.push_back(t.shape()[t.ndim() - 1]);
    if (s != t.shape()) t = expand(t, s);
  }
}

Meta infer_tri_solve(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  const Tensor &A = in[0], &B = in[1];
  check_square(A, op);
  check_float(A, op);
  VK_CHECK(B.ndim() >= 2, ShapeError, op, ": the input tensor B must have at least 2 dimensions, ",
           "got shape ", shape_str(B.shape()));
  VK_CHECK(batch_of(A) == batch_of(B) && B.shape()[B.ndim() - 2] == A.shape().back(), ShapeError,
           op, ": incompatible shapes of A and B for the equation AX = B (", shape_str(A.shape()),
           " and ", shape_str(B.shape()), ")");
  return {B.shape(), B.dtype()};
}

// X = A^-1 B: dB = A^-T g (the transposed triangle), dA = -dB X^T on A's triangle only (without
// the diagonal when it is taken as ones), as torch's.
Grads tri_solve_grad(const GradCtx& c) {
  const TriangularAttrs& t = c.attrs.triangular;
  const Tensor gB = tri_solve(mT(c.in[0]), c.grad, !t.upper, t.unitriangular);
  Tensor gA;
  if (c.needs[0]) {
    const Tensor full_grad = -matmul(gB, mT(c.out));
    const int64_t skip = t.unitriangular ? 1 : 0;
    gA = t.upper ? triu(full_grad, skip) : tril(full_grad, -skip);
  }
  return {gA, c.needs[1] ? gB : Tensor()};
}

// The flattened batch element and the 1-based position of the first zero on U's diagonal, if
// any. A host read: on the Vulkan device the host waits for the factorization here.
std::optional<std::pair<int64_t, int64_t>> zero_pivot(const Tensor& LU) {
  NoGradGuard no_grad;
  const Tensor d = diagonal(LU, 0, -2, -1);
  const Tensor z = host_read(eq(d, zeros({}, d.dtype(), d.device())));
  const bool* p = z.data<bool>();
  const int64_t n = LU.shape().back();
  for (int64_t i = 0; i < z.numel(); ++i)
    if (p[i]) return std::make_pair(i / n, i % n + 1);
  return std::nullopt;
}

std::string batch_prefix(const Tensor& A, int64_t b) {
  return A.ndim() > 2 ? "(Batch element " + std::to_string(b) + "): " : "";
}

// X = A^-1 B for square A (..., n, n) and B (..., n, k), batch dims broadcast: P^T B, then the
// two triangular solves with the packed factors. LinAlgError naming op when A is singular.
Tensor solve_left(const Tensor& A, const Tensor& B, const char* op, bool inverse) {
  const Shape batch = batch_broadcast(A, B, op);
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), A.shape().end() - 2, A.shape().end());
  sb.insert(sb.end(), B.shape().end() - 2, B.shape().end());
  const Tensor a = sa == A.shape() ? A : expand(A, sa);
  const Tensor b = sb == B.shape() ? B : expand(B, sb);
  const LuFactors f = lu_factor_ex(a);
  if (const auto z = zero_pivot(f.LU)) {
    if (inverse)
      throw LinAlgError(detail::cat(op, ": ", batch_prefix(a, z->first), "The diagonal element ",
                                    z->second,
                                    " is zero, the inversion could not be completed because the "
                                    "input matrix is singular."));
    throw LinAlgError(detail::cat(op, ": ", batch_prefix(a, z->first),
                                  "The solver failed because the input matrix is singular (U[",
                                  z->second, ",", z->second, "] is zero)."));
  }
  const Tensor pb = gather(b, b.ndim() - 2, expand(unsqueeze(f.perm, -1), b.shape()));
  return tri_solve(f.LU, tri_solve(f.LU, pb, false, true), true, false);
}

// The sign of each factorization's row permutation: -1 for each step that swapped rows.
Tensor permutation_sign(const LuFactors& f, const Tensor& like) {
  const int64_t n = f.pivots.shape().back();
  const Tensor steps = arange(1, n + 1, 1, DType::Int32, f.pivots.device());
  const Tensor minus = full({}, -1, like.dtype(), like.device());
  const Tensor plus = full({}, 1, like.dtype(), like.device());
  return prod(where(ne(f.pivots, steps), minus, plus), {-1});
}

void check_matrix_op(const Tensor& A, const char* op) {
  check_square(A, op);
  check_float(A, op);
}

// LU (..., m, n) and pivots (..., min(m, n)), int32 or int64, as lu_factor gives them.
void check_pivots(const Tensor& LU, const Tensor& pivots, const char* op) {
  VK_CHECK(LU.ndim() >= 2, ShapeError, op, ": LU must have at least 2 dimensions, got shape ",
           shape_str(LU.shape()));
  check_float(LU, op);
  VK_CHECK(pivots.dtype() == DType::Int32 || pivots.dtype() == DType::Int64, DTypeError, op,
           ": pivots must be an int32 or int64 tensor, got ", dtype_name(pivots.dtype()));
  Shape want = batch_of(LU);
  want.push_back(std::min(LU.shape()[LU.ndim() - 2], LU.shape().back()));
  VK_CHECK(pivots.shape() == want, ShapeError, op, ": expected pivots of shape ", shape_str(want),
           " for LU of shape ", shape_str(LU.shape()), ", got ", shape_str(pivots.shape()));
}

// The permutation LAPACK's 1-based pivots describe, as lu_factor_ex's perm (row i of L U is row
// perm[i] of A): the swaps applied in order to 0 .. m-1, each a few index ops on the device.
Tensor perm_of_pivots(const Tensor& pivots, int64_t m) {
  NoGradGuard no_grad;
  Shape shape = pivots.shape();
  shape.back() = m;
  const Tensor pos = arange(0, m, 1, DType::Int64, pivots.device());
  const Tensor rows = cast(pivots, DType::Int64) - 1;
  Tensor perm = expand(pos, shape);
  for (int64_t s = 0; s < pivots.shape().back(); ++s) {
    const Tensor j = narrow(rows, -1, s, 1);
    const Tensor at_s = narrow(perm, -1, s, 1), at_j = gather(perm, -1, j);
    const Tensor is_s = eq(pos, full({}, s, DType::Int64, pos.device()));
    perm = where(is_s, at_j, where(eq(pos, j), at_s, perm));
  }
  return perm;
}

// P (..., m, m) with P[perm[i], i] = 1, in dtype.
Tensor permutation_matrix(const Tensor& perm, DType dtype) {
  const int64_t m = perm.shape().back();
  const Tensor pos = arange(0, m, 1, DType::Int64, perm.device());
  return mT(cast(eq(unsqueeze(perm, -1), pos), dtype));
}

// P, L (unit diagonal, m x k) and U (k x n) from LU (..., m, n) and its perm.
LuUnpacked unpack(const Tensor& LU, const Tensor& perm) {
  const int64_t m = LU.shape()[LU.ndim() - 2], n = LU.shape().back(), k = std::min(m, n);
  const Tensor rows = unsqueeze(arange(0, m, 1, DType::Int64, LU.device()), -1);
  const Tensor unit = cast(eq(rows, arange(0, k, 1, DType::Int64, LU.device())), LU.dtype());
  const Tensor L = tril(narrow(LU, -1, 0, k), -1) + unit;
  return {permutation_matrix(perm, LU.dtype()), L, triu(narrow(LU, -2, 0, k))};
}

}  // namespace

void add_solve_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::LuFactor,
       .name = "lu_factor",
       .arity = 1,
       .outputs = 3,
       .signature = "lu_factor_ex(A) -> (LU, pivots, perm)",
       .summary = "P A = L U of each square matrix (batched; float32/float64) with partial "
                  "pivoting, the first largest |a| of each column as pivot (LAPACK getf2's "
                  "order): LU packs L's strict lower part and U; pivots (output 1, int32, "
                  "1-based as torch) the row swapped in at each step; perm (output 2, int64) the "
                  "composed permutation, row i of L U being row perm[i] of A. A zero pivot is "
                  "left in place (a singular A factors)",
       .infer = infer_lu,
       .grad = lu_grad,
       .grad_doc = "torch's lu_factor_ex_backward: dA = P L^-T (tril(L^T tril(g, -1), -1) + "
                   "triu(triu(g) U^T)) U^-T, the solves by triangular_solve and P by scatter_add "
                   "along perm"});
  ops.push_back(
      {.kind = OpKind::Cholesky,
       .name = "cholesky",
       .arity = 1,
       .signature = "cholesky(A) -> L",
       .summary = "A = L L^T of each symmetric positive-definite matrix (batched; "
                  "float32/float64), read from A's lower triangle (LAPACK potrf's): "
                  "right-looking, L's strict upper triangle zero. A leading minor that is not "
                  "positive-definite leaves a NaN or zero on L's diagonal from there on "
                  "(cholesky_info reads it on the device)",
       .infer = infer_lu,
       .grad = cholesky_grad,
       .grad_doc = "torch's cholesky_backward: P = tril(L^T g), S = (P + tril(P, -1)^T) / 2, "
                   "dA = L^-T S L^-1 by two triangular_solves (symmetric)"});
  ops.push_back(
      {.kind = OpKind::Eigh,
       .name = "eigh",
       .arity = 1,
       .signature = "eigh(A) -> (..., n + 1, n)",
       .summary = "the eigendecomposition A = V diag(L) V^T of each symmetric matrix (batched; "
                  "float32/float64), read from A's lower triangle, by cyclic Jacobi rotations in "
                  "round-robin order until a sweep rotates nothing: row 0 of the result holds "
                  "the eigenvalues L, ascending, rows 1..n the eigenvectors V as columns, each "
                  "with its largest component positive",
       .infer = infer_eigh,
       .grad = eigh_grad,
       .grad_doc = "torch's linalg_eig_backward for symmetric A: M = skew(V^T gV), E_ij = L_j - "
                   "L_i, dA = V (M / E + diag(gL)) V^T"});
  ops.push_back(
      {.kind = OpKind::Svd,
       .name = "svd",
       .arity = 1,
       .signature = "svd(A) -> (..., m + n + 1, n)",
       .summary = "the reduced singular value decomposition A = U diag(S) V^T of each tall "
                  "matrix (m >= n, batched; float32/float64) by one-sided Jacobi rotations of "
                  "its columns (Hestenes) in round-robin order until a sweep rotates nothing: "
                  "row 0 of the result holds S, descending, rows 1..m U and the last n rows V, "
                  "each U column's largest component positive (zero columns where S is 0)",
       .infer = infer_svd,
       .grad = svd_grad,
       .grad_doc = "torch's svd_backward (reduced): J = U^T gU, K = V^T gV, F_ij = 1 / (s_j^2 - "
                   "s_i^2), dA = U ((F o skew J) S + S (F o skew K) + diag(gS)) V^T + (I - U U^T) "
                   "gU S^-1 V^T"});
  ops.push_back(
      {.kind = OpKind::TriangularSolve,
       .name = "triangular_solve",
       .arity = 2,
       .signature = "triangular_solve(A, B, upper, unitriangular)",
       .summary = "X = A^-1 B for triangular square A (..., n, n) and B (..., n, k), batch dims "
                  "broadcast (float32/float64): forward substitution (lower) or backward "
                  "(upper); A's other triangle is not read, nor its diagonal when unitriangular. "
                  "linalg.solve_triangular's left=False is this op between transpose views",
       .prepare = prepare_solve,
       .infer = infer_tri_solve,
       .grad = tri_solve_grad,
       .grad_doc = "dB = triangular_solve(A^T, g, !upper), dA = -(dB X^T) on A's triangle (its "
                   "strict part when unitriangular)"});
}

LuFactors lu_factor_ex(const Tensor& A) {
  const Outputs o = dispatch_outputs(OpKind::LuFactor, {A});
  return {o[0], o[1], o[2]};
}

Tensor lu_info(const Tensor& LU) {
  NoGradGuard no_grad;
  const Tensor d = diagonal(LU, 0, -2, -1);
  const Tensor z = cast(eq(d, zeros({}, d.dtype(), d.device())), DType::Int32);
  if (d.shape().back() == 0)
    return zeros(Shape(d.shape().begin(), d.shape().end() - 1), DType::Int32, d.device());
  const Tensor any = amax(z, {-1});
  return cast(any * (argmax(z, -1) + 1), DType::Int32);
}

LuUnpacked lu_unpack(const Tensor& LU, const Tensor& pivots) {
  check_pivots(LU, pivots, "lu_unpack");
  return unpack(LU, perm_of_pivots(pivots, LU.shape()[LU.ndim() - 2]));
}

LuUnpacked lu(const Tensor& A) {
  check_matrix_op(A, "linalg.lu");
  const LuFactors f = lu_factor_ex(A);
  return unpack(f.LU, f.perm);
}

Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
  check_matrix_op(LU, op);
  check_pivots(LU, pivots, op);
  VK_CHECK(B.ndim() >= 2, ShapeError, op,
           ": the input tensor B must have at least 2 dimensions, got shape ",
           shape_str(B.shape()));
  if (!left) return mT(lu_solve(LU, pivots, mT(B), true, !adjoint));
  const int64_t n = LU.shape().back();
  VK_CHECK(B.shape()[B.ndim() - 2] == n, ShapeError, op,
           ": incompatible shapes of A and B for the equation AX = B (", shape_str(LU.shape()),
           " and ", shape_str(B.shape()), ")");
  const Shape batch = batch_broadcast(LU, B, op);
  Shape sa = batch, sb = batch, sp = batch;
  sa.insert(sa.end(), {n, n});
  sb.insert(sb.end(), {n, B.shape().back()});
  sp.push_back(n);
  const Tensor lu_e = expand(LU, sa), b = expand(B, sb);
  const Tensor idx = expand(unsqueeze(perm_of_pivots(expand(pivots, sp), n), -1), sb);
  if (!adjoint)  // L U X = P^T B: B's rows gathered by perm, then the two triangles
    return tri_solve(lu_e, tri_solve(lu_e, gather(b, -2, idx), false, true), true, false);
  // U^T L^T (P^T X) = B: the transposed triangles, then row i of the result goes to row perm[i]
  const Tensor z = tri_solve(mT(lu_e), tri_solve(mT(lu_e), b, false, false), true, true);
  return scatter_add(zeros_like(z), -2, idx, z);
}

Tensor cholesky_ex(const Tensor& A, bool upper) {
  if (upper) return mT(dispatch(OpKind::Cholesky, {mT(A)}));
  return dispatch(OpKind::Cholesky, {A});
}

Tensor cholesky_info(const Tensor& L) {
  NoGradGuard no_grad;
  const Tensor d = diagonal(L, 0, -2, -1);
  if (d.shape().back() == 0)
    return zeros(Shape(d.shape().begin(), d.shape().end() - 1), DType::Int32, d.device());
  // Not "d <= 0": a NaN pivot fails too, as LAPACK's.
  const Tensor bad = cast(logical_not(gt(d, zeros({}, d.dtype(), d.device()))), DType::Int32);
  return cast(amax(bad, {-1}) * (argmax(bad, -1) + 1), DType::Int32);
}

TensorPair eigh(const Tensor& A, bool upper) {
  const Tensor packed = dispatch(OpKind::Eigh, {upper && A.ndim() >= 2 ? mT(A) : A});
  const int64_t n = packed.shape().back();
  return {squeeze(narrow(packed, -2, 0, 1), -2), narrow(packed, -2, 1, n)};
}

SvdResult svd(const Tensor& A) {
  const bool wide = A.ndim() >= 2 && A.shape()[A.ndim() - 2] < A.shape().back();
  const Tensor packed = dispatch(OpKind::Svd, {wide ? mT(A) : A});  // A^T = V S U^T when wide
  const int64_t n = packed.shape().back(), m = packed.shape()[packed.ndim() - 2] - n - 1;
  const Tensor S = squeeze(narrow(packed, -2, 0, 1), -2);
  const Tensor U = narrow(packed, -2, 1, m), V = narrow(packed, -2, 1 + m, n);
  return wide ? SvdResult{V, S, U} : SvdResult{U, S, V};
}

Tensor cholesky(const Tensor& A, bool upper) {
  const char* op = "linalg.cholesky";
  check_matrix_op(A, op);
  const Tensor L = cholesky_ex(A, upper);
  const Tensor info = host_read(cholesky_info(L));  // on the Vulkan device: waits for the factor
  const int32_t* p = info.data<int32_t>();
  for (int64_t b = 0; b < info.numel(); ++b)
    if (p[b] != 0)
      throw LinAlgError(detail::cat(
          op, ": ", batch_prefix(A, b),
          "The factorization could not be completed because the input is not positive-definite "
          "(the leading minor of order ",
          p[b], " is not positive-definite)."));
  return L;
}

Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper) {
  const char* op = "cholesky_solve";
  check_matrix_op(L, op);
  VK_CHECK(B.ndim() >= 2 && B.shape()[B.ndim() - 2] == L.shape().back(), ShapeError, op,
           ": incompatible shapes of A and B for the equation AX = B (", shape_str(L.shape()),
           " and ", shape_str(B.shape()), ")");
  const Tensor lower = upper ? mT(L) : L;  // A = lower lower^T
  return tri_solve(mT(lower), tri_solve(lower, B, false, false), true, false);
}

Tensor cholesky_inverse(const Tensor& L, bool upper) {
  check_matrix_op(L, "cholesky_inverse");
  return cholesky_solve(identity_like(L), L, upper);
}

TensorPair lu_factor(const Tensor& A) {
  const LuFactors f = lu_factor_ex(A);
  if (const auto z = zero_pivot(f.LU))
    throw RuntimeError(detail::cat(
        "linalg.lu_factor: ", batch_prefix(A, z->first), "U[", z->second, ",", z->second,
        "] is zero and using it on lu_solve would result in a division by zero. If you still "
        "want to perform the factorization, consider calling linalg.lu_factor_ex(A)"));
  return {f.LU, f.pivots};
}

Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left,
                        bool unitriangular) {
  const char* op = "linalg.solve_triangular";
  check_matrix_op(A, op);
  VK_CHECK(B.ndim() >= 2, ShapeError, op,
           ": the input tensor B must have at least 2 dimensions, got shape ",
           shape_str(B.shape()));
  const int64_t n = A.shape().back();
  const int64_t bn = left ? B.shape()[B.ndim() - 2] : B.shape().back();
  VK_CHECK(bn == n, ShapeError, op, ": incompatible shapes of A and B for the equation ",
           left ? "AX = B (" : "XA = B (", shape_str(A.shape()), " and ", shape_str(B.shape()),
           ")");
  if (left) return tri_solve(A, B, upper, unitriangular);
  return mT(tri_solve(mT(A), mT(B), !upper, unitriangular));
}

Tensor linalg_solve(const Tensor& A, const Tensor& B, bool left) {
  const char* op = "linalg.solve";
  check_matrix_op(A, op);
  const int64_t n = A.shape().back();
  const bool vector =
      B.ndim() == 1 ||
      (B.ndim() == A.ndim() - 1 && Shape(B.shape().begin(), B.shape().end() - 1) == batch_of(A));
  const Tensor a = left ? A : mT(A);
  const Tensor b = vector ? unsqueeze(B, -1) : left ? B : mT(B);
  VK_CHECK(b.ndim() >= 2 && b.shape()[b.ndim() - 2] == n, ShapeError, op,
           ": incompatible shapes of A and B for the equation ", left ? "AX = B (" : "XA = B (",
           shape_str(A.shape()), " and ", shape_str(B.shape()), ")");
  const Tensor x = solve_left(a, b, op, false);
  return vector ? squeeze(x, -1) : left ? x : mT(x);
}

Tensor inv(const Tensor& A) {
  check_matrix_op(A, "linalg.inv");
  return solve_left(A, identity_like(A), "linalg.inv", true);
}

Tensor det(const Tensor& A) {
  check_matrix_op(A, "linalg.det");
  const LuFactors f = lu_factor_ex(A);
  return permutation_sign(f, A) * prod(diagonal(f.LU, 0, -2, -1), {-1});
}

TensorPair slogdet(const Tensor& A) {
  check_matrix_op(A, "linalg.slogdet");
  const LuFactors f = lu_factor_ex(A);
  const Tensor d = diagonal(f.LU, 0, -2, -1);
  return {permutation_sign(f, A) * prod(sign(d), {-1}), sum(log(abs(d)), {-1})};
}

Tensor logdet(const Tensor& A) {
  check_matrix_op(A, "logdet");
  const TensorPair s = slogdet(A);
  const Tensor nan = full({}, std::numeric_limits<double>::quiet_NaN(), A.dtype(), A.device());
  return where(lt(s.first, zeros({}, A.dtype(), A.device())), nan, s.second);
}

Tensor matrix_power(const Tensor& A, int64_t n) {
  const char* op = "linalg.matrix_power";
  check_square(A, op);
  if (n == 0) return identity_like(A);
  if (n == 1) return clone(A);  // a new tensor, as torch's
  Tensor base = n < 0 ? inv(A) : A;
  uint64_t k = n < 0 ? static_cast<uint64_t>(-(n + 1)) + 1 : static_cast<uint64_t>(n);
  Tensor result;
  for (;;) {
    if (k & 1) result = result.defined() ? matmul(result, base) : base;
    k >>= 1;
    if (k == 0) return result;
    base = matmul(base, base);
  }
}

}  // namespace vk
