"""Shape, view and small numeric functions of torch that are compositions of vkml's ops (issue #15,
"shape/index breadth"): hstack ... tile, movedim, tensor_split, rot90, block_diag, the window
functions, trapezoid, cov ... Each is a short arrangement of ops of the C++ op table (cat, reshape,
permute, narrow, flip, pad, cumsum, matmul ...), so values, gradients and devices are theirs; no
element is computed here. Shape arithmetic (which dims, which sizes) is plain Python."""

import itertools as _it
import math as _math
import warnings as _warnings

from . import _C
from ._C import DTypeError, ShapeError, Tensor, dtype

__all__ = [
    "hstack", "vstack", "dstack", "column_stack", "row_stack", "tile", "movedim", "moveaxis",
    "swapdims", "ravel", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors",
    "broadcast_shapes", "tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "rot90",
    "fliplr", "flipud", "diagflat", "block_diag", "cartesian_prod", "combinations", "tril_indices",
    "triu_indices", "logspace", "range", "hann_window", "hamming_window", "blackman_window",
    "bartlett_window", "kaiser_window", "trapezoid", "trapz", "cumulative_trapezoid", "vander",
    "inner", "vdot", "chain_matmul", "cov", "corrcoef", "is_nonzero", "is_same_size",
    "is_signed", "zero_", "fill", "fill_",
]

_builtin_range = range


def _seq(tensors, op):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' must be a tuple or list of Tensors, "
                        "not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return tensors


def _wrap(d, n, op):
    m = max(n, 1)
    if not -m <= d < m:
        raise IndexError(f"{op}: dimension {d} is out of range (expected to be in range of "
                         f"[{-m}, {m - 1}])")
    return d % m


def _atleast(n, args):
    def one(t):
        s = list(t.shape)
        if n == 1:
            return t.reshape(1) if t.ndim == 0 else t
        if n == 2:
            return t.reshape([1] * (2 - len(s)) + s) if len(s) < 2 else t
        if len(s) == 0:
            return t.reshape(1, 1, 1)
        if len(s) == 1:
            return t.reshape(1, s[0], 1)
        return t.reshape(s[0], s[1], 1) if len(s) == 2 else t
    if len(args) == 1 and isinstance(args[0], Tensor):
        return one(args[0])
    seq = args[0] if len(args) == 1 else args
    return tuple(one(t) for t in seq)


def atleast_1d(*tensors):
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    return _atleast(3, tensors)


def hstack(tensors):
    ts = atleast_1d(_seq(tensors, "hstack"))
    return _C.cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    return _C.cat(atleast_2d(_seq(tensors, "vstack")), 0)


row_stack = vstack


def dstack(tensors):
    return _C.cat(atleast_3d(_seq(tensors, "dstack")), 2)


def column_stack(tensors):
    ts = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in _seq(tensors, "column_stack")]
    return _C.cat(ts, 1)


def tile(input, dims):
    dims = list(dims) if isinstance(dims, (tuple, list)) else [dims]
    n = max(len(dims), input.ndim)
    x = input.reshape([1] * (n - input.ndim) + list(input.shape))
    return x.repeat([1] * (n - len(dims)) + dims)


def movedim(input, source, destination):
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    n = input.ndim
    src = [_wrap(d, n, "movedim") for d in src]
    dst = [_wrap(d, n, "movedim") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in source {src} or destination {dst}")
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in _builtin_range(n) if d not in src)
    order = [o if o is not None else next(rest) for o in order]
    return input.permute(order) if n else input


moveaxis = movedim


def swapdims(input, dim0, dim1):
    return input.transpose(dim0, dim1)


def ravel(input):
    return input.reshape(-1)


def broadcast_shapes(*shapes):
    out = []
    for s in shapes:
        s = [s] if isinstance(s, int) else list(s)
        if any(d < 0 for d in s):
            raise RuntimeError(f"broadcast_shapes: trying to create tensor with negative "
                               f"dimension in {s}")
        pad = len(s) - len(out)
        out = [1] * max(pad, 0) + out
        for i, d in enumerate(s[::-1]):
            j = len(out) - 1 - i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise ShapeError(f"broadcast_shapes: shape mismatch: {tuple(shapes)} cannot be "
                                 "broadcast to a single shape")
    from ._porting import Size
    return Size(out)


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.broadcast_to(shape) for t in tensors)


def tensor_split(input, indices_or_sections, dim=0):
    d = _wrap(dim, input.ndim, "tensor_split")
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    size = input.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype not in (dtype.int64, dtype.int32) or ios.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-"
                               "dimensional or one-dimensional tensor of int64, but got a tensor "
                               f"of shape {tuple(ios.shape)} and dtype {ios.dtype}")
        ios = ios.item() if ios.ndim == 0 else ios.tolist()
    if isinstance(ios, int):
        if ios <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {ios}")
        q, r = divmod(size, ios)
        bounds, start = [], 0
        for i in _builtin_range(ios):
            start += q + (1 if i < r else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = list(ios)
    out, start = [], 0
    for b in bounds + [size]:
        b = min(max(b + size if b < 0 else b, 0), size)
        s = min(start, size)
        out.append(input.narrow(d, s, max(b - s, 0)))
        start = max(start, b)
    return tuple(out)


def _nsplit(input, ios, dim, op, need):
    if input.ndim < need:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {need} dimension, but "
                           f"got a tensor with {input.ndim} dimensions!")
    if isinstance(ios, int) and (ios == 0 or input.shape[dim] % ios):
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size "
                           f"of the dimension {input.shape[dim]} is not divisible by the split_"
                           f"size {ios}!")
    return tensor_split(input, ios, dim)


def hsplit(input, indices_or_sections):
    return _nsplit(input, indices_or_sections, 0 if input.ndim == 1 else 1, "hsplit", 1)


def vsplit(input, indices_or_sections):
    return _nsplit(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    return _nsplit(input, indices_or_sections, 2, "dsplit", 3)


def split_with_sizes(input, split_sizes, dim=0):
    d = _wrap(dim, input.ndim, "split_with_sizes")
    sizes = list(split_sizes)
    if any(s < 0 for s in sizes) or sum(sizes) != input.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[d]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={sizes}")
    return input.split(sizes, d)


def rot90(input, k=1, dims=(0, 1)):
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (_wrap(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"rot90: expected rotation dims to be different, but got dim0 = {d0} "
                           f"and dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip([d0]).transpose(d0, d1)
    return input.clone()


def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("fliplr: Input must be >= 2-d.")
    return input.flip([1])


def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("flipud: Input must be >= 1-d.")
    return input.flip([0])


def diagflat(input, offset=0):
    return _C.diag(input.reshape(-1), offset)


def block_diag(*tensors):
    ms = [t.reshape(1, -1) if t.ndim == 1 else t.reshape(1, 1) if t.ndim == 0 else t
          for t in tensors]
    for t in ms:
        if t.ndim != 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions."
                               f" Input has {t.ndim} dimensions")
    if not ms:
        return _C.zeros(1, 0)
    common = ms[0].dtype
    for t in ms[1:]:
        common = promote_types(common, t.dtype)
    width = sum(t.shape[1] for t in ms)
    rows, left = [], 0
    for t in ms:
        w = t.shape[1]
        rows.append(_pad_cols(t.to(common), left, width - left - w))
        left += w
    return _C.cat(rows, 0)


def _pad_cols(t, left, right):
    from .nn import functional as F
    return F.pad(t, (left, right))


def cartesian_prod(*tensors):
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"cartesian_prod: Expect a 1D vector, but got shape "
                               f"{list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = _C.meshgrid(*tensors, indexing="ij")
    return _C.stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.zeros(0, dtype=input.dtype, device=input.device)
    pick = _it.combinations_with_replacement if with_replacement else _it.combinations
    idx = list(pick(_builtin_range(input.shape[0]), r))
    if not idx:
        return _C.zeros(0, r, dtype=input.dtype, device=input.device)
    cols = _C.tensor(idx, dtype=dtype.int64, device=input.device).t()
    return _C.stack([input.index_select(0, c) for c in cols.unbind(0)], 1)


def _tri_indices(row, col, offset, lower, dtype_, device):
    pairs = [(i, j) for i in _builtin_range(row) for j in _builtin_range(col)
             if (j - i <= offset if lower else j - i >= offset)]
    if not pairs:
        return _C.zeros(2, 0, dtype=dtype_ or dtype.int64, device=device)
    return _C.tensor(pairs, dtype=dtype_ or dtype.int64, device=device).t().contiguous()


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, False, dtype, device)


def _fdtype(dtype_):
    from . import get_default_dtype
    return dtype_ or get_default_dtype()


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    dt = _fdtype(dtype)
    e = _C.linspace(start, end, steps, dtype=dt, device=device)
    r = _C.pow(_C.full((), float(base), dtype=dt, device=device), e)
    return r.requires_grad_() if requires_grad else r


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    _warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                   "behavior is inconsistent with Python's range builtin. Instead, use torch.arange,"
                   " which produces values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    n = int(_math.floor((end - start) / step)) + 1
    if n < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    r = _C.arange(0, n, dtype=_fdtype(dtype), device=device) * step + start
    return r.requires_grad_() if requires_grad else r


def _window(name, n, periodic, dtype_, device, requires_grad, fn):
    dt = _fdtype(dtype_)
    if not isinstance(n, int) or n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if not dt.is_floating_point:
        raise DTypeError(f"{name} expects floating point dtypes, got: {dt}")
    if n <= 1:
        r = _C.ones(n, dtype=dt, device=device)
    else:
        m = n if periodic else n - 1
        r = fn(_C.arange(0, n, dtype=dt, device=device), m)
    return r.requires_grad_() if requires_grad else r


def _cosine_window(a, b, c=0.0):
    def fn(k, m):
        w = a - b * _C.cos(k * (2 * _math.pi / m))
        return w + c * _C.cos(k * (4 * _math.pi / m)) if c else w
    return fn


def hann_window(window_length, periodic=True, *, dtype=None, device=None, layout=None,
                requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_window(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   device=None, layout=None, requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_window(alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None, device=None, layout=None,
                    requires_grad=False):
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_window(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None, layout=None,
                    requires_grad=False):
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 1 - _C.abs(k * (2.0 / m) - 1))


def _i0(x):
    # The modified Bessel function I0 by its power series, sum_k ((x/2)^k / k!)^2, summed to
    # float64 precision for the window's arguments (|x| <= beta, at most a few tens).
    q = (x * 0.5) ** 2
    term, total = q * 0 + 1, q * 0 + 1
    for k in _builtin_range(1, 60):
        term = term * q / (k * k)
        total = total + term
    return total


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None,
                  layout=None, requires_grad=False):
    def fn(k, m):
        r = k * (2.0 / m) - 1
        return _i0(beta * _C.sqrt(_C.clamp(1 - r * r, min=0.0))) / _i0(k[:1] * 0 + beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, fn)


def _diff_along(y, d):
    n = y.shape[d]
    return y.narrow(d, 1, n - 1) - y.narrow(d, 0, n - 1), y.narrow(d, 1, n - 1) + \
        y.narrow(d, 0, n - 1)


def _trap_terms(y, x, dx, dim, op):
    d = _wrap(dim, y.ndim, op)
    if y.shape[d] == 0:
        return None, d
    _, pair = _diff_along(y, d)
    if x is None:
        return pair * (0.5 * (1.0 if dx is None else dx)), d
    if isinstance(x, Tensor):
        if x.ndim == 1:
            if x.shape[0] != y.shape[d]:
                raise ShapeError(f"{op}: There must be one `x` value for each sample point "
                                 f"({x.shape[0]} given, {y.shape[d]} expected)")
            dxs = x[1:] - x[:-1]
            shape = [1] * y.ndim
            shape[d] = dxs.shape[0]
            dxs = dxs.reshape(shape)
        else:
            dxs, _ = _diff_along(x, _wrap(dim, x.ndim, op))
        return pair * dxs * 0.5, d
    return pair * (0.5 * x), d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    terms, d = _trap_terms(y, x, dx, dim, "trapezoid")
    if terms is None:
        return y.sum(d)
    return terms.sum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    terms, d = _trap_terms(y, x, dx, dim, "cumulative_trapezoid")
    if terms is None:
        return y.narrow(d, 0, 0)
    return _C.cumsum(terms, d)


def vander(x, N=None, increasing=False):
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n == 0:
        return _C.zeros(x.shape[0], 0, dtype=_vander_dtype(x), device=x.device)
    xs = x.to(_vander_dtype(x))
    cols = [_C.ones_like(xs).reshape(-1, 1)]
    if n > 1:
        cols.append(_C.cumprod(xs.reshape(-1, 1).expand(x.shape[0], n - 1), 1))
    r = _C.cat(cols, 1)
    return r if increasing else r.flip([1])


def _vander_dtype(x):
    return dtype.int64 if not x.dtype.is_floating_point else x.dtype


def inner(input, other):
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise ShapeError(f"inner() the last dimension must match on both input tensors but got "
                         f"shapes {list(input.shape)} and {list(other.shape)}")
    return _C.tensordot(input, other, ([-1], [-1]))


def vdot(input, other):
    return _C.dot(input, other)


def chain_matmul(*matrices):
    if len(matrices) == 1 and isinstance(matrices[0], (tuple, list)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Tensor dimension is {m.ndim}, expected 2 "
                               "instead.")
    r = matrices[0]
    for m in matrices[1:]:
        r = r @ m
    return r if len(matrices) > 1 else r.clone()


def cov(input, *, correction=1, fweights=None, aweights=None):
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not x.is_floating_point():
        x = x.to(_fdtype(None))
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1, keepdim=True)
        norm = n - correction
        xc = x - avg
        c = (xc @ xc.t()) / max(norm, 0)
    else:
        w = w.to(x.dtype)
        wsum = w.sum()
        avg = (x * w).sum(1, keepdim=True) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights.to(x.dtype)).sum() / wsum
        xc = x - avg
        c = ((xc * w) @ xc.t()) / _C.clamp(norm, min=0.0)
    return c.reshape(()) if input.ndim < 2 else c


def corrcoef(input):
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = _C.diagonal(c, 0, 0, 1)
    s = _C.sqrt(d)
    c = c / s.reshape(-1, 1) / s.reshape(1, -1)
    return _C.clamp(c, min=-1.0, max=1.0)


def is_nonzero(input):
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    return input.dtype.is_signed


def zero_(input):
    return input.zero_()


def fill(input, value):
    v = value.to(input.dtype) if isinstance(value, Tensor) else value
    if isinstance(v, Tensor) and v.ndim != 0:
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with "
                           f"{v.ndim} dimensions.")
    return _C.zeros_like(input) + v if isinstance(v, Tensor) else _C.full_like(input, v)


def fill_(input, value):
    return input.fill_(value)


def promote_types(type1, type2):
    """The dtype torch's promotion gives two tensors of these dtypes (the core's rule: an empty
    where() of them, which computes nothing)."""
    cond = _C.zeros((), dtype=dtype.bool)
    return _C.where(cond, _C.zeros(0, dtype=type1), _C.zeros(0, dtype=type2)).dtype


def sum_to_size(self, *size):
    shape = list(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else list(size)
    if len(shape) > self.ndim or any(
            s != 1 and s != d for s, d in zip(shape[::-1], list(self.shape)[::-1])):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size "
                           f"{{{list(self.shape)}}}.")
    lead = self.ndim - len(shape)
    dims = list(_builtin_range(lead)) + [lead + i for i, s in enumerate(shape)
                                          if s == 1 and self.shape[lead + i] != 1]
    r = self.sum(dims, keepdim=True) if dims else self
    return r.reshape(shape)
