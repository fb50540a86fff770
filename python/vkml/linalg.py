"""vk.linalg: torch.linalg's functions that vkml has (composites of the core's ops, bound in C++).

vector_norm, matrix_norm ('fro', 1, -1, inf, -inf; 'nuc', 2 and -2 need an SVD and raise
NotImplementedError), norm, cross; vecdot and matmul are the core's own.
"""

from . import _C
from ._C import Tensor
from ._grad_mode import no_grad as _no_grad

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


# ---- more of torch.linalg (#15 linalg): compositions of the ops above and of the core's ----
import math as _math  # noqa: E402

_inv_ex_type = _namedtuple("linalg_inv_ex", ["inverse", "info"], module="vkml.return_types")
_solve_ex_type = _namedtuple("linalg_solve_ex", ["result", "info"], module="vkml.return_types")


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch.linalg.diagonal: Tensor.diagonal with the matrix dims last by default."""
    return _C.diagonal(A, offset, dim1, dim2)


def inv_ex(A, *, check_errors=False):
    """(inverse, info) as torch.linalg.inv_ex: info > 0 is the zero pivot of a singular matrix,
    whose 'inverse' then holds infs and NaNs (nothing raised unless check_errors)."""
    if check_errors:
        inverse = inv(A)
        return _inv_ex_type(inverse, _C.zeros(tuple(A.shape[:-2]), dtype=_C.int32, device=A.device))
    LU, pivots, info = _C._linalg.lu_factor_ex(A)
    eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return _inv_ex_type(lu_solve(LU, pivots, eye.expand(tuple(A.shape))), info)


def solve_ex(A, B, *, left=True, check_errors=False):
    """(result, info) as torch.linalg.solve_ex (info as inv_ex's)."""
    if check_errors:
        result = solve(A, B, left=left)
        return _solve_ex_type(result, _C.zeros(tuple(A.shape[:-2]), dtype=_C.int32, device=A.device))
    LU, pivots, info = _C._linalg.lu_factor_ex(A)
    # B a vector when 1-D or one dim short of A with A's batch dims, as linalg.solve's rule
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape[:-1]) == tuple(A.shape[:-2]))
    b = B.unsqueeze(-1) if vector else B
    if not left:
        b = b.mT
    x = lu_solve(LU, pivots, b, adjoint=not left)
    x = x.squeeze(-1) if vector else x if left else x.mT
    return _solve_ex_type(x, info)


def multi_dot(tensors):
    """The product of a chain of matrices, as torch.linalg.multi_dot: the first may be a row
    vector and the last a column vector (dropped from the result); parenthesized in the order of
    fewest multiplications (the classic dynamic programme), which changes only the rounding."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, n - 1) else (2,)
        if t.ndim not in allowed:
            where = "first" if i == 0 else "last" if i == n - 1 else f"{i}th"
            want = "1D or 2D" if len(allowed) == 2 else "2D"
            raise RuntimeError(f"multi_dot(): the {where} tensor must be {want} but got {t.ndim}D")
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vector:
        mats[0] = mats[0].unsqueeze(0)
    if last_vector:
        mats[-1] = mats[-1].unsqueeze(1)
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    split = _chain_order(dims)
    # Evaluate the order iteratively (an explicit stack, no recursion over the user's chain).
    results, stack = {}, [(0, n - 1, False)]
    while stack:
        i, j, ready = stack.pop()
        if i == j:
            results[(i, j)] = mats[i]
        elif ready:
            k = split[i][j]
            results[(i, j)] = results.pop((i, k)) @ results.pop((k + 1, j))
        else:
            k = split[i][j]
            stack += [(i, j, True), (i, k, False), (k + 1, j, False)]
    out = results[(0, n - 1)]
    if first_vector:
        out = out.squeeze(0)
    if last_vector:
        out = out.squeeze(-1)
    return out


def _chain_order(dims):
    """split[i][j]: where the cheapest parenthesization of matrices i..j splits (dims[i] x
    dims[i + 1] is matrix i's shape)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def vander(x, *, N=None):
    """The Vandermonde matrix of x (..., n): columns x^0, x^1, ..., x^(N-1) (increasing powers,
    as torch.linalg.vander; N defaults to n), by a cumulative product."""
    n = x.shape[-1] if x.ndim >= 1 else 1
    N = n if N is None else N
    if x.ndim < 1 or N <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x.unsqueeze(-1).expand(tuple(x.shape) + (N - 1,)).cumprod(-1)
    return _C.cat([_C.ones_like(x).unsqueeze(-1), powers], -1)


def tensorinv(A, ind=2):
    """The inverse of A for tensordot over its first ind dims, as torch.linalg.tensorinv."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    prod_rows, prod_cols = _math.prod(rows), _math.prod(cols)
    if prod_rows != prod_cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {prod_cols} != {prod_rows}")
    return inv(A.reshape(prod_rows, prod_cols)).reshape(cols + rows)


def tensorsolve(A, B, dims=None):
    """X with tensordot(A, X, X.ndim) = B, as torch.linalg.tensorsolve (dims of A moved last first)."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.permute(*([d for d in range(A.ndim) if d not in dims] + dims))
    rest = tuple(A.shape[B.ndim:])
    if tuple(A.shape[:B.ndim]) != tuple(B.shape) or _math.prod(rest) != B.numel():
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {_math.prod(rest)} != {B.numel()}")
    return solve(A.reshape(B.numel(), _math.prod(rest)), B.reshape(-1)).reshape(rest)


# Higham's [13/13] Pade approximant of exp (SIAM J. Matrix Anal. Appl. 26, 2005): its
# coefficients, and the 1-norm up to which it is accurate to double precision without scaling.
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def matrix_exp(A):
    """e^A of each square matrix, as torch.linalg.matrix_exp: scaling and squaring with the
    [13/13] Pade approximant (one scaling for the whole batch, from its largest 1-norm: a host
    read). Its gradient is that of these ops (matmul, solve), exact for the computed function."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise _C.ShapeError(f"linalg.matrix_exp: A must be batches of square matrices, got shape {list(A.shape)}")
    if not A.is_floating_point():
        raise _C.DTypeError(f"linalg.matrix_exp: expected a float32 or float64 tensor, got {A.dtype}")
    if A.numel() == 0:
        return A.clone()
    norm = float(A.detach().abs().sum(-2).amax().item())
    s = max(0, _math.ceil(_math.log2(norm / _THETA13))) if _math.isfinite(norm) and norm > 0 else 0
    if s:
        A = A / float(2 ** s)
    b = _PADE13
    eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    R = solve(V - U, V + U)
    for _ in range(s):
        R = R @ R
    return R


def cond(A, p=None):
    """The condition number ||A||_p ||A^-1||_p, as torch.linalg.cond: p None or 2 (-2) is the
    ratio of the largest and smallest singular values (inverted), for any shape; 'fro', 'nuc',
    inf, -inf, 1 and -1 take square matrices (inf for a singular one, as torch's)."""
    if p is None or p in (2, -2):
        s = svdvals(A)
        hi, lo = s.amax(-1), s.amin(-1)
        return hi / lo if p != -2 else lo / hi
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise _C.ShapeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                               f"{A.shape[-2] if A.ndim >= 2 else A.ndim} by {A.shape[-1] if A.ndim else 0} matrices")
    inverse, info = inv_ex(A)
    c = matrix_norm(A, p) * matrix_norm(inverse, p)
    return _C.where(info > 0, _C.full_like(c, float("inf")), c)


__all__ += ["diagonal", "inv_ex", "solve_ex", "multi_dot", "vander", "tensorinv", "tensorsolve", "matrix_exp",
            "cond"]
# ---- end of more of torch.linalg (#15 linalg) ----


# ---- symmetric eigendecomposition (#15 linalg): the eigh op (Jacobi rotations, both devices) ----
_eigh_type = _namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"], module="vkml.return_types")


def _uplo(UPLO, op):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


def eigh(A, UPLO="L"):
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric matrix, as
    torch.linalg.eigh, read from A's lower (UPLO='L') or upper triangle. An eigenvector's sign is
    arbitrary in torch (LAPACK's); vkml makes each one's largest component positive."""
    return _eigh_type(*_C._linalg.eigh(A, upper=_uplo(UPLO, "linalg.eigh")))


def eigvalsh(A, UPLO="L"):
    """The eigenvalues of each symmetric matrix, ascending (torch.linalg.eigvalsh)."""
    return eigh(A, UPLO)[0]


__all__ += ["eigh", "eigvalsh"]
# ---- end of symmetric eigendecomposition (#15 linalg) ----


# ---- singular values (#15 linalg): the svd op (one-sided Jacobi, both devices) and what builds on
# them: svdvals, pinv, matrix_rank, lstsq; matrix_norm's 'nuc', 2 and -2 are the core's ----
_svd_type = _namedtuple("linalg_svd", ["U", "S", "Vh"], module="vkml.return_types")
_lstsq_type = _namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"],
                          module="vkml.return_types")


def _complement(Q):
    """An orthonormal basis (..., m, m - k) of the complement of Q's k orthonormal columns: the
    eigenvectors of I - Q Q^T for its eigenvalue 1 (the last m - k, eigenvalues ascending)."""
    m, k = Q.shape[-2], Q.shape[-1]
    with _no_grad():
        eye = _C.eye(m, dtype=Q.dtype, device=Q.device)
        return eigh(eye - Q @ Q.mT)[1][..., k:]


def svd(A, full_matrices=True, *, driver=None):
    """(U, S, Vh) as torch.linalg.svd: S descending. With full_matrices U (..., m, m) and Vh
    (..., n, n) complete the reduced factors with an orthonormal basis of their complement (no
    gradient flows there: torch's is not defined either). Signs: LAPACK's are its algorithm's;
    vkml makes the largest component of each column of the taller factor positive."""
    if driver is not None:
        raise RuntimeError("linalg.svd: keyword argument `driver=` is only supported on CUDA inputs "
                           "with cuSOLVER backend.")
    U, S, V = _C._linalg.svd(A)
    m, n = A.shape[-2], A.shape[-1]
    if full_matrices and m != n:
        if m > n:
            U = _C.cat([U, _complement(U)], -1)
        else:
            V = _C.cat([V, _complement(V)], -1)
    return _svd_type(U, S, V.mT)


def svdvals(A, *, driver=None):
    """The singular values of each matrix, descending (torch.linalg.svdvals)."""
    return svd(A, full_matrices=False, driver=driver).S


def _tolerance(S, atol, rtol, shape, op):
    """torch's max(atol, rtol * S_max), rtol = eps * max(m, n) when neither is given."""
    if rtol is None:
        eps = 2.220446049250313e-16 if S.dtype == _C.dtype.float64 else 1.1920928955078125e-07
        rtol = eps * max(shape[-2], shape[-1]) if atol is None else 0.0
    hi = S.amax(-1, keepdim=True) if S.shape[-1] else _C.zeros(tuple(S.shape[:-1]) + (1,),
                                                                 dtype=S.dtype, device=S.device)
    tol = hi * rtol
    if atol is not None:
        tol = _C.maximum(tol, _C.full((), float(atol), dtype=S.dtype, device=S.device)
                         if not isinstance(atol, Tensor) else atol.to(S.dtype))
    return tol


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudoinverse V diag(1/s) U^T over the singular values above
    max(atol, rtol * s_max) (torch.linalg.pinv; hermitian: from eigh, the same result)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.pinv(" + str(A.dtype) + "{[" + ", ".join(map(str, A.shape)) +
                           "]}): expected a tensor with 2 or more dimensions of float, double, "
                           "cfloat or cdouble types")
    U, S, Vh = svd(A, full_matrices=False)
    keep = S > _tolerance(S, atol, rtol, A.shape, "linalg.pinv")
    inverse = _C.where(keep, 1.0 / _C.where(keep, S, _C.ones_like(S)), _C.zeros_like(S))
    return (Vh.mT * inverse.unsqueeze(-2)) @ U.mT


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None):
    """The number of singular values above max(atol, rtol * s_max), int64 (torch.linalg.matrix_rank;
    the deprecated tol is atol)."""
    if tol is not None:
        atol = tol if atol is None else atol
    S = svdvals(A)
    return (S > _tolerance(S, atol, rtol, A.shape, "linalg.matrix_rank")).sum(-1)


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution X of A X = B (torch.linalg.lstsq), as pinv(A) @ B with the
    singular values below rcond * s_max dropped (rcond None: eps * max(m, n)). residuals and
    singular_values are empty and rank is A's numerical rank, as torch's default driver on the CPU
    ('gelsy') gives them."""
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           f"gelss), got {driver}")
    vector = B.ndim == A.ndim - 1
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got "
                           f"{A.shape[-2]} and {rhs.shape[-2]}")
    X = pinv(A, rtol=rcond) @ rhs
    empty = _C.zeros(0, dtype=A.dtype, device=A.device)
    return _lstsq_type(X.squeeze(-1) if vector else X, empty, matrix_rank(A, rtol=rcond), empty)


_torch_svd_type = _namedtuple("svd", ["U", "S", "V"], module="vkml.return_types")


def _torch_svd(input, some=True, compute_uv=True):
    """torch.svd (deprecated there): (U, S, V) with V itself, reduced when some; without
    compute_uv, U and V are zeros of the full shapes (as torch's)."""
    U, S, Vh = svd(input, full_matrices=not some)
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return _torch_svd_type(_C.zeros(batch + (m, m), dtype=S.dtype, device=S.device), S,
                               _C.zeros(batch + (n, n), dtype=S.dtype, device=S.device))
    return _torch_svd_type(U, S, Vh.mT)


def _pinverse(input, rcond=1e-15):
    """torch.pinverse: pinv with rtol = rcond."""
    return pinv(input, rtol=rcond)


def _nuclear_norm(input, dim=None, keepdim=False):
    """torch.nuclear_norm: the sum of the singular values over dim (the last two by default)."""
    return matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else dim, keepdim=keepdim)


def _removed(name, instead):
    def method(*args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. "
                           f"`torch.{name}` is deprecated in favor of `torch.linalg.{instead}`.")
    method.__name__ = name
    return method


__all__ += ["svd", "svdvals", "pinv", "matrix_rank", "lstsq"]
# ---- end of singular values (#15 linalg) ----


# ---- QR (#15 linalg): the qr and geqrf ops (Householder, both devices) and the reflectors'
# products composed of forward ops ----
_qr_type = _namedtuple("linalg_qr", ["Q", "R"], module="vkml.return_types")
_torch_qr_type = _namedtuple("qr", ["Q", "R"], module="vkml.return_types")
_geqrf_type = _namedtuple("geqrf", ["a", "tau"], module="vkml.return_types")


def qr(A, mode="reduced"):
    """(Q, R) as torch.linalg.qr, with LAPACK's signs (R's diagonal may be negative): mode
    'reduced' Q (..., m, k), 'complete' Q (..., m, m), 'r' R only (Q empty)."""
    return _qr_type(*_C._linalg.qr(A, mode))


householder_product = _C._linalg.householder_product


def _torch_qr(input, some=True):
    """torch.qr (deprecated there): linalg.qr, reduced when some, else complete."""
    return _torch_qr_type(*_C._linalg.qr(input, "reduced" if some else "complete"))


def _geqrf(input):
    """torch.geqrf: LAPACK's packed reflectors and tau (not differentiable, as torch's)."""
    return _geqrf_type(*_C._linalg.geqrf(input))


def _ormqr(input, input2, input3, left=True, transpose=False):
    """torch.ormqr: input3 multiplied by the Q of geqrf's (input, input2) without forming it."""
    return _C._linalg.ormqr(input, input2, input3, left, transpose)


__all__ += ["qr", "householder_product"]



def _orgqr(input, input2):
    """torch.orgqr / Tensor.orgqr: householder_product (a Python function, so it binds as a method)."""
    return householder_product(input, input2)
# ---- end of QR (#15 linalg) ----
