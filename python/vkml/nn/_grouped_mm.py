"""F.grouped_mm (#15): torch's grouped matrix multiply of Mixture-of-Experts layers, one matmul
per group. The group offsets are read on the host (one small int32 tensor): they fix the output's
slices, as the jagged shapes of torch's kernel do."""

from .. import _C

__all__ = ["grouped_mm"]


def _check(mat_a, mat_b, offs, bias, out_dtype):
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m.ndim not in (2, 3):
            raise RuntimeError(f"grouped_mm: {name} has to be 2 or 3d")
        if not m.is_floating_point():
            raise RuntimeError(f"grouped_mm: expected {name} to be a floating matrix, got "
                               f"{m.dtype}")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError(f"grouped_mm: expected mat_a and mat_b to have the same dtype, got "
                           f"{mat_a.dtype} and {mat_b.dtype}")
    if (offs is None) != (mat_a.ndim == 3 and mat_b.ndim == 3):
        raise RuntimeError("grouped_mm: have to provide offsets if there is a 2d matrix, or no "
                           "offset if both matrices are 3d")
    if mat_a.shape[-1] != mat_b.shape[-2 if mat_b.ndim == 3 else 0]:
        raise RuntimeError("grouped_mm: contraction dimension of mat_a and mat_b must match")
    if bias is not None:
        raise NotImplementedError("grouped_mm: bias is not supported yet (as torch's kernels)")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise RuntimeError("grouped_mm: output dtype must match `mat_a` dtype")


def _group_bounds(offs, groups, length):
    """(start, end) of each group along the jagged dimension of `length`."""
    if not isinstance(offs, _C.Tensor):
        raise TypeError(f"grouped_mm: offs must be a Tensor, not {type(offs).__name__}")
    if offs.dtype != _C.dtype.int32 or offs.ndim != 1:
        raise RuntimeError("grouped_mm: offsets have to be a 1-d int32 tensor")
    if groups is not None and offs.shape[0] != groups:
        raise RuntimeError("grouped_mm: matrix batch sizes have to match")
    ends = offs.tolist()  # host read: the slices' bounds
    starts = [0] + ends[:-1]
    if any(e < s for s, e in zip(starts, ends)) or (ends and (ends[0] < 0 or ends[-1] > length)):
        raise RuntimeError(f"grouped_mm: offs must be non-decreasing within [0, {length}], "
                           f"got {ends}")
    return list(zip(starts, ends))


def _padded_cat(pieces, covered, total, dim, like_shape, like):
    """pieces joined along dim, with zeros for the tail past the last group (torch leaves it
    uninitialized)."""
    if covered < total:
        shape = list(like_shape)
        shape[dim] = total - covered
        pieces = pieces + [_C.zeros(tuple(shape), dtype=like.dtype, device=like.device)]
    return _C.cat(pieces, dim)


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Grouped matrix products, as torch.nn.functional.grouped_mm:

    - mat_a (G, M, K), mat_b (G, K, N): a batched product, (G, M, N);
    - mat_a (T, K), mat_b (G, K, N): rows offs[g-1]:offs[g] of mat_a times mat_b[g], (T, N);
    - mat_a (G, M, K), mat_b (K, T): mat_a[g] times columns offs[g-1]:offs[g] of mat_b, (M, T);
    - mat_a (M, T), mat_b (T, N): the g-th slices of the shared dimension, (G, M, N).

    offs is a 1-D int32 tensor of the groups' ends (read on the host); rows or columns past
    offs[-1] are 0 (torch leaves them uninitialized). float32 and float64 (torch: float32 and
    half precision); gradients flow through each group's matmul."""
    _check(mat_a, mat_b, offs, bias, out_dtype)
    if mat_a.ndim == 3 and mat_b.ndim == 3:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError("grouped_mm: batched dimension has to match")
        return _C.matmul(mat_a, mat_b)
    if mat_a.ndim == 2 and mat_b.ndim == 3:
        t = mat_a.shape[0]
        bounds = _group_bounds(offs, mat_b.shape[0], t)
        pieces = [_C.matmul(mat_a[s:e], mat_b[g]) for g, (s, e) in enumerate(bounds)]
        return _padded_cat(pieces, bounds[-1][1], t, 0, (t, mat_b.shape[-1]), mat_a)
    if mat_a.ndim == 3:
        t = mat_b.shape[1]
        bounds = _group_bounds(offs, mat_a.shape[0], t)
        pieces = [_C.matmul(mat_a[g], mat_b[:, s:e]) for g, (s, e) in enumerate(bounds)]
        return _padded_cat(pieces, bounds[-1][1], t, 1, (mat_a.shape[1], t), mat_a)
    bounds = _group_bounds(offs, None, mat_a.shape[1])
    return _C.stack([_C.matmul(mat_a[:, s:e], mat_b[s:e]) for s, e in bounds])
