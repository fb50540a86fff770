"""vk.linalg: torch.linalg's functions that vkml has (composites of the core's ops, bound in C++).

vector_norm, matrix_norm ('fro', 1, -1, inf, -inf; 'nuc', 2 and -2 need an SVD and raise
NotImplementedError), norm, cross; vecdot and matmul are the core's own.
"""

from . import _C

vector_norm = _C._linalg.vector_norm
matrix_norm = _C._linalg.matrix_norm
norm = _C._linalg.norm
cross = _C._linalg.cross
matmul = _C.matmul


def vecdot(x, y, *, dim=-1):
    """Dot products of x and y along dim (broadcasting), as torch.linalg.vecdot for real dtypes."""
    return (x * y).sum(dim)


__all__ = ["vector_norm", "matrix_norm", "norm", "cross", "matmul", "vecdot"]


# ---- solvers (#15 linalg): LU factorization, triangular solves and what they compose ----
from collections import namedtuple as _namedtuple  # noqa: E402

LinAlgError = _C.LinAlgError
_lu_factor_type = _namedtuple("linalg_lu_factor", ["LU", "pivots"], module="vkml.return_types")
_lu_factor_ex_type = _namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"],
                                 module="vkml.return_types")
_slogdet_type = _namedtuple("linalg_slogdet", ["sign", "logabsdet"], module="vkml.return_types")

_lu_type = _namedtuple("linalg_lu", ["P", "L", "U"], module="vkml.return_types")
_lu_unpack_type = _namedtuple("lu_unpack", ["P", "L", "U"], module="vkml.return_types")
_cholesky_ex_type = _namedtuple("linalg_cholesky_ex", ["L", "info"], module="vkml.return_types")

cholesky = _C._linalg.cholesky
solve_triangular = _C._linalg.solve_triangular
solve = _C._linalg.solve
inv = _C._linalg.inv
det = _C._linalg.det
matrix_power = _C._linalg.matrix_power


def _pivot_only(pivot, op):
    if not pivot:
        raise NotImplementedError(f"{op}: pivot=False (LU without pivoting) is not supported; "
                                  "vkml always pivots")


def lu_factor(A, *, pivot=True):
    """(LU, pivots) of P A = L U, as torch.linalg.lu_factor; a singular A is a RuntimeError."""
    _pivot_only(pivot, "linalg.lu_factor")
    return _lu_factor_type(*_C._linalg.lu_factor(A))


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """(LU, pivots, info) as torch.linalg.lu_factor_ex: info > 0 marks a zero pivot."""
    _pivot_only(pivot, "linalg.lu_factor_ex")
    if check_errors:
        LU, pivots = lu_factor(A)
        info = _C.zeros(tuple(pivots.shape[:-1]), dtype=_C.int32, device=pivots.device)
        return _lu_factor_ex_type(LU, pivots, info)
    return _lu_factor_ex_type(*_C._linalg.lu_factor_ex(A))


def lu(A, *, pivot=True):
    """(P, L, U) with A = P L U, as torch.linalg.lu (square matrices)."""
    _pivot_only(pivot, "linalg.lu")
    return _lu_type(*_C._linalg.lu(A))


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (A^T X = B when adjoint, X A = B when not left) for A = P L U given by
    lu_factor's (LU, pivots), as torch.linalg.lu_solve."""
    return _C._linalg.lu_solve(LU, pivots, B, left=left, adjoint=adjoint)


def _lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """torch.lu_unpack: (P, L, U) from lu_factor's output; the parts not asked for are empty."""
    P, L, U = _C._linalg.lu_unpack(LU_data, LU_pivots)
    empty = _C.empty(0, dtype=LU_data.dtype, device=LU_data.device)
    return _lu_unpack_type(P if unpack_pivots else empty, L if unpack_data else empty,
                           U if unpack_data else empty)


def _lu_solve(b, LU_data, LU_pivots):
    """torch.lu_solve (deprecated there): linalg.lu_solve(LU_data, LU_pivots, b)."""
    return lu_solve(LU_data, LU_pivots, b)


def _lu(A, pivot=True, get_infos=False):
    """torch.lu (deprecated there): (LU, pivots), and infos when get_infos (no error then)."""
    if get_infos:
        return tuple(lu_factor_ex(A, pivot=pivot))
    return tuple(lu_factor(A, pivot=pivot))


def cholesky_ex(A, *, upper=False, check_errors=False):
    """(L, info) as torch.linalg.cholesky_ex: info > 0 is the order of the first leading minor
    that is not positive-definite (L is not meaningful there)."""
    if check_errors:
        L = cholesky(A, upper=upper)
        return _cholesky_ex_type(L, _C.zeros(tuple(L.shape[:-2]), dtype=_C.int32, device=L.device))
    return _cholesky_ex_type(*_C._linalg.cholesky_ex(A, upper=upper))


def slogdet(A):
    """(sign, log|det|) as torch.linalg.slogdet: (0, -inf) for a singular A."""
    return _slogdet_type(*_C._linalg.slogdet(A))


_triangular_solve_type = _namedtuple("triangular_solve", ["solution", "cloned_coefficient"],
                                     module="vkml.return_types")


def _triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """torch.triangular_solve (deprecated there): X with op(A) X = b, op(A) = A or A^T."""
    X = solve_triangular(A.mT if transpose else A, b, upper=upper != transpose,
                         unitriangular=unitriangular)
    return _triangular_solve_type(X, A.clone())


__all__ += ["LinAlgError", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "cholesky", "cholesky_ex", "solve_triangular",
            "solve", "inv", "det", "slogdet", "matrix_power"]
# ---- end of solvers (#15 linalg) ----
