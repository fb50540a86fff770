"""Indexing and scatter functions of torch as compositions of vkml's index ops (issue #15,
"shape/index breadth"): scatter (src or value, last writer wins as torch's CPU), scatter_reduce
(sum, prod, mean, amax, amin, include_self), take, take_along_dim, index_copy, index_put,
masked_select, masked_scatter, select/slice/diagonal_scatter, put, unique(dim=...) and
unique_consecutive.

Every value is computed by the op table's ops (gather, index_select, scatter_add, sort, cummax,
amax, prod ...), so gradients are theirs: the element a scatter keeps gets the gradient, an
overwritten one none, amax/amin split among ties as torch's scatter_reduce does. Index bounds
are checked on the host on the CPU (one read of the indices) and on the device elsewhere (raised at
the next host read, issue #14), so that a bad index is an IndexError naming the op."""

from contextlib import nullcontext as _nullcontext

from . import _C
from ._grad_mode import no_grad as _no_grad
from ._C import DTypeError, ShapeError, Tensor, dtype

_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_INTS = (dtype.int32, dtype.int64)


def _wrap_dim(d, n, op):
    m = max(n, 1)
    if not -m <= d < m:
        raise IndexError(f"{op}: dim {d} is out of range for a tensor with {n} dims")
    return d % m


def _check_index(index, size, op, what="index"):
    """index as int64 with negative entries wrapped; IndexError naming op when one is outside
    [-size, size)."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}: {what} must be a Tensor, got {type(index).__name__}")
    if index.dtype not in _INTS:
        raise DTypeError(f"{op}: {what} must be an int64 or int32 tensor, got {index.dtype}")
    index = index.to(dtype.int64)
    if index.numel() and index.device.type != "cpu":
        # hostwait (issue #14): checked on the device, raised at its next host read (reading the
        # bounds here would wait for the device); the index wraps as below
        _C._expect_all((index >= -size) & (index < size), True, op,
                       f"an index is out of bounds for size {size}")
        return _C.where(index < 0, index + size, index)
    if index.numel():
        lo, hi = int(index.min().item()), int(index.max().item())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise IndexError(f"{op}: index {bad} is out of bounds for size {size}")
        if lo < 0:
            index = _C.where(index < 0, index + size, index)
    return index


def _check_scatter_shapes(x, d, index, src, op):
    if index.ndim != x.ndim and not (x.ndim == 0 and index.ndim <= 1):
        raise ShapeError(f"{op}: index of shape {list(index.shape)} must have as many dims as "
                         f"self of shape {list(x.shape)}")
    for k, n in enumerate(index.shape):
        if (k != d and x.ndim and n > x.shape[k]) or (src is not None and n > src.shape[k]):
            raise ShapeError(f"{op}: index of shape {list(index.shape)} does not fit self of "
                             f"shape {list(x.shape)} (or src of shape "
                             f"{list(src.shape) if src is not None else None}) in dim {k}")


def _src_like_index(src, index):
    """The part of src that index addresses (torch reads src only where index has elements)."""
    for k, n in enumerate(index.shape):
        if src.shape[k] != n:
            src = src.narrow(k, 0, n)
    return src


def _destinations(x, d, index):
    """For each element of index, the flat (row-major) position in x it writes to."""
    n = x.ndim
    if n == 0:
        return index.reshape(-1) * 0
    strides = [1] * n
    for k in range(n - 2, -1, -1):
        strides[k] = strides[k + 1] * x.shape[k + 1]
    key = index * strides[d]
    for k in range(n):
        if k != d:
            shape = [1] * n
            shape[k] = index.shape[k]
            pos = _C.arange(0, index.shape[k], dtype=dtype.int64, device=index.device)
            key = key + pos.reshape(shape) * strides[k]
    return key.reshape(-1)


def _run_reduce(ks, vs, combine, longest):
    """Each run of equal keys in ks (sorted, 1-D) reduced with combine into the run's first
    position of vs (whose first dim follows ks), without a host read (issue #14): by doubling,
    after the round of step s position i holds combine over vs[i : i + 2s] within its run, so
    ceil(log2(longest)) rounds cover runs of up to `longest` values (a bound known from the
    shapes). Exact for max and min; a product is formed in tree order."""
    m, s = ks.shape[0], 1
    while s < min(longest, m):
        same = (ks[s:] == ks[:-s]).reshape((m - s,) + (1,) * (vs.ndim - 1))
        head = vs[:-s]
        vs = _C.cat([_C.where(same, combine(head, vs[s:]), head), vs[m - s:]])
        s *= 2
    return vs


def _last_writes(x, keys, values):
    """The last value (in row-major order of keys) written to each flat position of x, and the
    mask of the positions written, without a host read (issue #14, hostwait: _slots reads the
    width back): keys sorted stably, the last of each run of equal keys kept and added to zeros
    (one value per position, so the sum is that value; the others are where'd to 0, not
    multiplied, so that an inf or NaN among them stays out). The kept value gets the gradient."""
    m, n = keys.numel(), x.numel()
    order = _C.argsort(keys, stable=True)
    ks = keys.index_select(0, order)
    last = _C.ones(m, dtype=dtype.bool, device=keys.device)
    if m > 1:
        last = _C.cat([ks[1:] != ks[:-1], last[:1]])
    kept = _C.where(last, values.reshape(-1).index_select(0, order), 0)
    buf = _C.scatter_add(_C.zeros(n, dtype=values.dtype, device=values.device), 0, ks, kept)
    hit = _C.scatter_add(_C.zeros(n, dtype=dtype.int64, device=keys.device), 0, ks,
                         _C.ones_like(ks)) > 0
    return buf, hit


def _scatter_sum(x, keys, src, reduce, include_self):
    """scatter_reduce's sum and mean as scatter_add (no host read, issue #14), in x's flat
    positions; the count of values per position beside it."""
    flat = x.reshape(-1)
    base = flat if include_self else _C.zeros_like(flat)
    r = _C.scatter_add(base, 0, keys, src.reshape(-1))
    count = _C.scatter_add(_C.zeros(flat.numel(), dtype=dtype.int64, device=keys.device), 0, keys,
                           _C.ones_like(keys))
    if include_self:
        count = count + 1
    if reduce == "mean":
        c = _C.clamp(count, min=1)
        r = r / c.to(r.dtype) if r.is_floating_point() else _C.floor_divide(r, c)
    return r, count


_COMBINE = {"prod": _C.mul, "amax": _C.maximum, "amin": _C.minimum}


def _scatter_extreme(x, keys, src, reduce, include_self, longest):
    """scatter_reduce's prod, amax and amin in x's flat positions without a host read: the values
    sorted by destination, each destination's run reduced (_run_reduce) and read at its start.
    prod's gradient is that of the products; amax/amin give theirs by the rule below."""
    n, m = x.numel(), keys.numel()
    flat, combine = x.reshape(-1), _COMBINE[reduce]
    if m == 0:
        return flat.clone()
    count = _C.scatter_add(_C.zeros(n, dtype=dtype.int64, device=keys.device), 0, keys,
                           _C.ones_like(keys))
    hit = count > 0
    order = _C.argsort(keys, stable=True)
    src_flat = src.reshape(-1)
    extreme = reduce != "prod"
    with _no_grad() if extreme else _nullcontext():
        runs = _run_reduce(keys.index_select(0, order), src_flat.index_select(0, order), combine,
                           longest)
        first = _C.clamp(_C.cumsum(count, 0) - count, max=max(m - 1, 0))
        r = runs.index_select(0, first)
        if include_self:
            r = combine(flat, r)
        out = _C.where(hit, r, flat)
    if not extreme or not _C.is_grad_enabled() or not (flat.requires_grad or src_flat.requires_grad):
        return out
    # torch's rule: the gradient of a destination split evenly among the values equal to its
    # result. Unlike torch's, an excluded self (include_self=False) is not counted among them
    # (torch counts it, then zeroes its share: the values' gradient no longer sums to one).
    self_is = (flat == out) & ~hit if not include_self else flat == out
    src_is = src_flat == out.index_select(0, keys)
    dt = out.dtype

    def rule(g):
        ties = self_is.to(dt).index_add(0, keys, src_is.to(dt))
        share = g / _C.clamp(ties, min=1)
        zero = _C.zeros((), dtype=dt, device=g.device)
        grad_self = _C.where(hit, _C.where(self_is, share, zero), g)
        return [grad_self, _C.where(src_is, share.index_select(0, keys), zero)]

    return _C.from_op(out, [flat, src_flat], rule, f"scatter_reduce_{reduce}", False)


def _scatter_reduce(x, dim, index, src, reduce, include_self, op):
    if reduce not in _REDUCES:
        raise RuntimeError(f"{op}: reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    d = _wrap_dim(dim, x.ndim, op)
    _check_scatter_shapes(x, d, index, src, op)
    index = _check_index(index, x.shape[d] if x.ndim else 1, op)
    src = _src_like_index(src, index).to(x.dtype)
    if src.dtype == dtype.bool:
        raise DTypeError(f"{op}: bool tensors cannot be reduced")
    keys = _destinations(x, d, index)
    if reduce in ("sum", "mean"):
        r, count = _scatter_sum(x, keys, src, reduce, include_self)
        return _C.where((count > 0).reshape(x.shape), r.reshape(x.shape), x)
    longest = index.shape[d] if x.ndim else index.numel()  # the most values one place receives
    out = _scatter_extreme(x, keys, src, reduce, include_self, longest)
    return out.reshape(x.shape)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    return _scatter_reduce(input, dim, index, src, reduce, include_self, "scatter_reduce")


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """torch.scatter: src's (or value's) elements written into input at index along dim; where
    several write one place the last in row-major order wins (torch's CPU order, made
    deterministic). reduce='add'/'multiply' is scatter_reduce's sum/prod with include_self."""
    op = "scatter"
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    if not isinstance(src, Tensor):
        value, src = (src if value is None else value), None
    d = _wrap_dim(dim, input.ndim, op)
    if src is None:
        src = _C.full(list(index.shape), value, dtype=input.dtype, device=input.device)
    if reduce is not None:
        names = {"add": "sum", "multiply": "prod"}
        if reduce not in names:
            raise RuntimeError(f"{op}: reduce argument must be either add or multiply, got "
                               f"{reduce}")
        return _scatter_reduce(input, d, index, src, names[reduce], True, op)
    _check_scatter_shapes(input, d, index, src, op)
    index = _check_index(index, input.shape[d] if input.ndim else 1, op)
    src = _src_like_index(src, index).to(input.dtype)
    buf, hit = _last_writes(input, _destinations(input, d, index), src)
    return _C.where(hit.reshape(input.shape), buf.reshape(input.shape), input)


def take(input, index):
    idx = _check_index(index, input.numel(), "take")
    return input.reshape(-1).index_select(0, idx.reshape(-1)).reshape(index.shape)


def take_along_dim(input, indices, dim=None):
    if dim is None:
        return take(input, indices)
    d = _wrap_dim(dim, input.ndim, "take_along_dim")
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    idx = _check_index(indices, input.shape[d], "take_along_dim")
    xs, ids = list(input.shape), list(idx.shape)
    xs[d] = ids[d] = 1
    from ._shape_fns import broadcast_shapes
    common = list(broadcast_shapes(xs, ids))
    xs_shape, id_shape = list(common), list(common)
    xs_shape[d], id_shape[d] = input.shape[d], idx.shape[d]
    return _C.gather(input.broadcast_to(xs_shape), d, idx.broadcast_to(id_shape))


def _along(index, d, like):
    """A 1-D index placed along dim d and expanded to like's shape (index_copy's scatter)."""
    shape = [1] * like.ndim
    shape[d] = index.numel()
    return index.reshape(shape).broadcast_to(list(like.shape))


def index_copy(input, dim, index, source):
    op = "index_copy"
    d = _wrap_dim(dim, input.ndim, op)
    if index.ndim > 1:
        raise IndexError(f"{op}: index should have dimension 1 or 0 (got {index.ndim})")
    src = source.reshape([1] * input.ndim) if source.ndim == 0 and input.ndim else source
    if input.ndim and (src.ndim != input.ndim or src.shape[d] != index.numel() or any(
            src.shape[k] != input.shape[k] for k in range(input.ndim) if k != d)):
        raise ShapeError(f"{op}: source of shape {list(source.shape)} does not match self of "
                         f"shape {list(input.shape)} with {index.numel()} indices along dim {d}")
    index = _check_index(index, input.shape[d] if input.ndim else 1, op)
    if input.ndim == 0:
        return scatter(input, 0, index.reshape(-1)[:1], src.reshape(-1)[:1])
    return scatter(input, d, _along(index, d, src), src)


def _flat_positions(input, indices, op):
    """index_put's tensor indices (ints or bool masks over the leading dims) as flat positions
    over those dims, and the number of dims they cover."""
    idx = []
    for t in indices:
        if t is None:
            raise NotImplementedError(f"{op}: None in indices is not supported by vkml")
        if t.dtype == dtype.bool:
            idx.extend(t.nonzero(as_tuple=True))
        else:
            idx.append(t)
    k = len(idx)
    if k > input.ndim:
        raise IndexError(f"{op}: too many indices for tensor of dimension {input.ndim} (got {k})")
    from ._shape_fns import broadcast_tensors
    idx = broadcast_tensors(*[_check_index(t, input.shape[j], op) for j, t in enumerate(idx)])
    key = idx[0] * 0
    for j, t in enumerate(idx):
        key = key * input.shape[j] + t
    return key, k


def index_put(input, indices, values, accumulate=False):
    op = "index_put"
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}(): argument 'indices' must be a tuple of Tensors, not "
                        f"{type(indices).__name__}")
    key, k = _flat_positions(input, list(indices), op)
    rest = list(input.shape[k:])
    lead = 1
    for s in input.shape[:k]:
        lead *= s
    x2 = input.reshape([lead] + rest)
    vals = values.to(input.dtype) if isinstance(values, Tensor) else _C.full(
        [], values, dtype=input.dtype, device=input.device)
    try:
        vals = vals.broadcast_to(list(key.shape) + rest)
    except Exception:
        raise ShapeError(f"{op}: shape mismatch: value tensor of shape {list(vals.shape)} cannot "
                         f"be broadcast to indexing result of shape {list(key.shape) + rest}")
    vals = vals.reshape([key.numel()] + rest)
    if accumulate:
        return _C.index_add(x2, 0, key.reshape(-1), vals).reshape(input.shape)
    return index_copy(x2, 0, key.reshape(-1), vals).reshape(input.shape)


def masked_select(input, mask):
    if mask.dtype != dtype.bool:
        raise DTypeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    from ._shape_fns import broadcast_tensors
    x, m = broadcast_tensors(input, mask)
    return x.reshape(-1)[m.reshape(-1)]


def masked_scatter(input, mask, source):
    op = "masked_scatter"
    if mask.dtype != dtype.bool:
        raise DTypeError(f"{op}: expected BoolTensor for mask, got {mask.dtype}")
    m = mask.broadcast_to(list(input.shape)).reshape(-1)
    flat = input.reshape(-1)
    # hostwait (issue #14): no nonzero (a host read): the k-th masked place takes source's k-th
    # element, k from a cumulative sum; too small a source is checked on the device
    k = _C.cumsum(m.to(dtype.int64), 0) - 1
    have = source.numel()
    if flat.numel():
        _C._expect_all(~m | (k < have), False, op,
                       f"Number of elements of source ({have}) < number of ones in mask")
    if have == 0:
        return input.clone()
    src = source.reshape(-1).to(input.dtype).index_select(0, _C.clamp(k, 0, have - 1))
    return _C.where(m, src, flat).reshape(input.shape)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """torch.index_reduce: source's slices reduced into input's slices at index along dim
    (prod, mean, amax, amin), as scatter_reduce with the index spread over source's shape."""
    op = "index_reduce"
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"{op}: reduce argument must be either prod, mean, amax or amin, got "
                           f"{reduce}")
    d = _wrap_dim(dim, input.ndim, op)
    if index.ndim > 1:
        raise IndexError(f"{op}: index should have dimension 1 or 0 (got {index.ndim})")
    if input.ndim and (source.ndim != input.ndim or source.shape[d] != index.numel() or any(
            source.shape[k] != input.shape[k] for k in range(input.ndim) if k != d)):
        raise ShapeError(f"{op}: source of shape {list(source.shape)} does not match self of "
                         f"shape {list(input.shape)} with {index.numel()} indices along dim {d}")
    index = _check_index(index, input.shape[d] if input.ndim else 1, op)
    return _scatter_reduce(input, d, _along(index, d, source), source, reduce, include_self, op)


def _view_scatter(input, src, view, op):
    """input with src written where view (a view op) reads: the positions come from applying the
    view to a tensor of flat positions."""
    pos = view(_C.arange(0, input.numel(), dtype=dtype.int64,
                         device=input.device).reshape(input.shape))
    if list(src.shape) != list(pos.shape):
        raise ShapeError(f"{op}: expected src to have a size equal to the slice of self. src "
                         f"size = {list(src.shape)}, slice size = {list(pos.shape)}")
    flat = input.reshape(-1)
    return scatter(flat, 0, pos.reshape(-1), src.reshape(-1).to(input.dtype)).reshape(input.shape)


def _region_scatter(input, src, view, op):
    """input with src written into the region a basic view (select, slice) cuts from it: one
    strided_scatter over input's row-major order (a copy of input, the region written)."""
    base = input.contiguous()
    region = view(base.detach())  # a view of base's memory: its strides and offset locate it
    if list(src.shape) != list(region.shape):
        raise ShapeError(f"{op}: expected src to have a size equal to the slice of self. src "
                         f"size = {list(src.shape)}, slice size = {list(region.shape)}")
    return _C._strided_scatter(base, src.to(input.dtype), list(region.shape), list(region.stride()),
                               region.storage_offset() - base.storage_offset())


def select_scatter(input, src, dim, index):
    d = _wrap_dim(dim, input.ndim, "select_scatter")
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select_scatter: index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    return _region_scatter(input, src, lambda p: p.select(d, index), "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    d = _wrap_dim(dim, input.ndim, "slice_scatter")
    if step <= 0:
        raise ValueError("slice_scatter: slice step must be positive")
    sl = [slice(None)] * input.ndim
    sl[d] = slice(start, end, step)
    return _region_scatter(input, src, lambda p: p[tuple(sl)], "slice_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return _view_scatter(input, src, lambda p: _C.diagonal(p, offset, dim1, dim2),
                         "diagonal_scatter")


def put(input, index, source, accumulate=False):
    idx = _check_index(index, input.numel(), "put").reshape(-1)
    src = source.reshape(-1).to(input.dtype)
    if src.numel() != idx.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {src.numel()}, index.numel() = "
                           f"{idx.numel()}")
    flat = input.reshape(-1)
    r = _C.index_add(flat, 0, idx, src) if accumulate else index_copy(flat, 0, idx, src)
    return r.reshape(input.shape)


# ---- unique over a dim and unique_consecutive: groups of equal slices, by the op table ----


def _rows(input, dim, op):
    if dim is None:
        return input.reshape(-1, 1), None
    d = _wrap_dim(dim, input.ndim, op)
    moved = input.movedim(d, 0) if hasattr(input, "movedim") else input.transpose(0, d)
    return moved.reshape(moved.shape[0], -1), d


def _group(rows, op):
    """Start-of-group mask of consecutive equal rows (all elements equal)."""
    n = rows.shape[0]
    new = _C.ones(n, dtype=dtype.bool, device=rows.device)
    if n > 1 and rows.shape[1]:
        new = _C.cat([new[:1], (rows[1:] != rows[:-1]).any(1)])
    elif n > 1:
        new = _C.cat([new[:1], _C.zeros(n - 1, dtype=dtype.bool, device=rows.device)])
    return new


def _finish(input, rows, d, order, new, return_inverse, return_counts):
    ids = _C.cumsum(new.to(dtype.int64), 0) - 1
    first = new.nonzero().reshape(-1)
    vals = rows.index_select(0, first)
    if d is None:
        values = vals.reshape(-1)
    else:
        moved_shape = [first.numel()] + [s for k, s in enumerate(input.shape) if k != d]
        values = vals.reshape(moved_shape)
        values = values.movedim(0, d) if hasattr(values, "movedim") else values.transpose(0, d)
    out = [values]
    if return_inverse:
        inv = ids if order is None else _C.scatter_add(_C.zeros_like(ids), 0, order, ids)
        out.append(inv.reshape(input.shape) if d is None else inv)
    if return_counts:
        out.append(_C.bincount(ids, minlength=first.numel()) if ids.numel() else
                   _C.zeros(0, dtype=dtype.int64, device=input.device))
    return out[0] if len(out) == 1 else tuple(out)


def unique_dim(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """unique over slices along dim: rows sorted lexicographically (a stable argsort per column,
    last column first), then grouped."""
    rows, d = _rows(input, dim, "unique")
    n = rows.shape[0]
    order = _C.arange(0, n, dtype=dtype.int64, device=input.device)
    for c in range(rows.shape[1] - 1, -1, -1):
        col = rows[:, c].index_select(0, order)
        order = order.index_select(0, _C.argsort(col, stable=True))
    srt = rows.index_select(0, order)
    return _finish(input, srt, d, order, _group(srt, "unique"), return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    rows, d = _rows(input, dim, "unique_consecutive")
    return _finish(input, rows, d, None, _group(rows, "unique_consecutive"), return_inverse,
                   return_counts)
