// The solver family (#15 linalg). Two ops of the table:
//  - lu_factor: P A = L U of each square matrix, with partial pivoting (LAPACK getf2's order:
//    the pivot is the first largest |a| of the column); its rule is torch's lu_factor_ex_backward
//    written with triangular solves;
//  - triangular_solve: X = A^-1 B for a triangular A, left side only (the right side, X A = B, is
//    the transposed problem: transpose views are recorded around the op).
// solve, inv, det, slogdet, logdet and matrix_power are composed of them, so their gradients
// (and higher derivatives) follow from the two rules. Singular matrices are found by a host read
// of U's diagonal (inv, solve, lu_factor only: det and slogdet give 0 and -inf as torch's).
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
