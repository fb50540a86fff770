// Bindings: the solver family (ops/solve.cpp, #15 linalg): vk.linalg's lu_factor, lu_factor_ex,
// lu, lu_unpack, lu_solve, cholesky, cholesky_ex, solve_triangular, solve, inv, det, slogdet and
// matrix_power (in the _C._linalg submodule, arranged by vkml/linalg.py), torch's top-level
// inverse, cholesky, cholesky_solve, cholesky_inverse, det, slogdet, logdet and matrix_power
// (functions and methods), and vk.linalg.LinAlgError.
#include "bind_ops.h"
#include "vkml/ops/solve.h"

namespace vkpy {

using namespace bindings;

void bind_solve(nb::module_& m, nb::class_<Tensor>& c) {
  nb::module_ l = nb::borrow<nb::module_>(m.attr("_linalg"));
  l.def("lu_factor", [](const Tensor& A) {
    const vk::TensorPair r = vk::lu_factor(A);
    return nb::make_tuple(r.first, r.second);
  });
  // info: the 1-based position of the first zero on U's diagonal, 0 when none (LAPACK's).
  l.def("lu_factor_ex", [](const Tensor& A) {
    const vk::LuFactors f = vk::lu_factor_ex(A);
    return nb::make_tuple(f.LU, f.pivots, vk::lu_info(f.LU));
  });
  l.def(
      "lu",
      [](const Tensor& A) {
        const vk::LuUnpacked r = vk::lu(A);
        return nb::make_tuple(r.P, r.L, r.U);
      },
      "A"_a);
  l.def(
      "lu_unpack",
      [](const Tensor& LU, const Tensor& pivots) {
        const vk::LuUnpacked r = vk::lu_unpack(LU, pivots);
        return nb::make_tuple(r.P, r.L, r.U);
      },
      "LU_data"_a, "LU_pivots"_a);
  l.def(
      "lu_solve",
      [](const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
        return vk::lu_solve(LU, pivots, B, left, adjoint);
      },
      "LU"_a, "pivots"_a, "B"_a, nb::kw_only(), "left"_a = true, "adjoint"_a = false);
  l.def(
      "cholesky", [](const Tensor& A, bool upper) { return vk::cholesky(A, upper); }, "A"_a,
      nb::kw_only(), "upper"_a = false);
  // info: the order of the first leading minor that is not positive-definite, 0 when none.
  l.def(
      "cholesky_ex",
      [](const Tensor& A, bool upper) {
        const Tensor L = vk::cholesky_ex(A, upper);
        return nb::make_tuple(L, vk::cholesky_info(L));
      },
      "A"_a, nb::kw_only(), "upper"_a = false);
  // (eigenvalues, eigenvectors) of symmetric matrices, read from the lower triangle (upper: the
  // upper one); python/vkml/linalg.py names them
  l.def(
      "eigh",
      [](const Tensor& A, bool upper) {
        const vk::TensorPair r = without_gil(heavy(A), [&] { return vk::eigh(A, upper); });
        return nb::make_tuple(r.first, r.second);
      },
      "A"_a, nb::kw_only(), "upper"_a = false);
  // (U, S, V) of the reduced SVD (python/vkml/linalg.py: Vh, full_matrices, and what builds on S)
  l.def(
      "svd",
      [](const Tensor& A) {
        const vk::SvdResult r = without_gil(heavy(A), [&] { return vk::svd(A); });
        return nb::make_tuple(r.U, r.S, r.V);
      },
      "A"_a);
  l.def(
      "solve_triangular",
      [](const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
        return vk::solve_triangular(A, B, upper, left, unitriangular);
      },
      "A"_a, "B"_a, nb::kw_only(), "upper"_a, "left"_a = true, "unitriangular"_a = false);
  l.def(
      "solve",
      [](const Tensor& A, const Tensor& B, bool left) { return vk::linalg_solve(A, B, left); },
      "A"_a, "B"_a, nb::kw_only(), "left"_a = true);
  l.def(
      "inv", [](const Tensor& A) { return vk::inv(A); }, "A"_a);
  l.def(
      "det", [](const Tensor& A) { return vk::det(A); }, "A"_a);
  l.def(
      "slogdet",
      [](const Tensor& A) {
        const vk::TensorPair r = vk::slogdet(A);
        return nb::make_tuple(r.first, r.second);
      },
      "A"_a);
  l.def(
      "matrix_power", [](const Tensor& A, int64_t n) { return vk::matrix_power(A, n); }, "A"_a,
      "n"_a);
  both(m, c, "inverse", [](const Tensor& x) { return vk::inv(x); });
  both(
      m, c, "cholesky", [](const Tensor& x, bool upper) { return vk::cholesky(x, upper); },
      "upper"_a = false);
  both(
      m, c, "cholesky_solve",
      [](const Tensor& x, const Tensor& L, bool upper) { return vk::cholesky_solve(x, L, upper); },
      "input2"_a, "upper"_a = false);
  both(
      m, c, "cholesky_inverse",
      [](const Tensor& x, bool upper) { return vk::cholesky_inverse(x, upper); },
      "upper"_a = false);
  both(m, c, "det", [](const Tensor& x) { return vk::det(x); });
  both(m, c, "logdet", [](const Tensor& x) { return vk::logdet(x); });
  both(
      m, c, "matrix_power", [](const Tensor& x, int64_t n) { return vk::matrix_power(x, n); },
      "n"_a);
}

}  // namespace vkpy
