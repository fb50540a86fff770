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
