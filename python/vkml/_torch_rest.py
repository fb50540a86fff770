"""The rest of the torch namespace's porting names (issue #15): torch.gradient, as_strided and its
copy/scatter forms, histogramdd, nonzero_static, frobenius_norm, norm_except_dim, the legacy
Tensor.new/resize_ family, Tensor.apply_/map_/map2_, the anomaly and default-type switches, and
small Tensor attributes (output_nr, name, dim_order, const_data_ptr, as_subclass). Each is a
composition of the op table's ops; install() puts them on Tensor and the vkml namespace."""

import collections
import warnings

from . import _C
from ._porting_breadth import _bin_edges, _check_histogram

Tensor = _C.Tensor
_dt = _C.dtype

# (hist, bin_edges), as torch.return_types.histogramdd
histogramdd_type = collections.namedtuple("histogramdd", ["hist", "bin_edges"])


def _wrap_dim(dim, ndim):
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim % max(ndim, 1)


# ---- torch.gradient: central differences, one-sided (first or second order) at the edges ----

def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of `input` sampled on a grid, one tensor per dim in `dim` (all dims by
    default), as torch.gradient: central differences inside, one-sided ones of order `edge_order`
    (1 or 2) at both ends. `spacing` is one scalar for every dim, one scalar per dim, or one 1-D
    coordinate tensor per dim (an uneven grid). Differentiable; integers give the default float."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _gradient_dims(input, dim)
    spacings = _gradient_spacings(input, spacing, dims, dim is None)
    x = input if input.is_floating_point() else input.to(_C._get_default_dtype())
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    return tuple(_gradient_along(x, d, h, edge_order) for d, h in zip(dims, spacings))


def _gradient_dims(input, dim):
    if dim is None:
        return list(range(input.ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, input.ndim) for d in dims]
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return dims


def _gradient_spacings(input, spacing, dims, all_dims):
    """One entry per dim: a Python number (an even grid) or a 1-D coordinate tensor."""
    if not isinstance(spacing, (list, tuple)):
        if isinstance(spacing, Tensor) and spacing.ndim > 0:
            raise RuntimeError("torch.gradient expected spacing to be a scalar or a list of 1-D tensors")
        return [spacing.item() if isinstance(spacing, Tensor) else spacing] * len(dims)
    if len(spacing) != len(dims) and all_dims:
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                           f"equal to 'self.dim() = {len(dims)}', since dim argument was not given, but got a "
                           f"list of length {len(spacing)}")
    if len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length "
                           f"{len(spacing)} and a dim argument of length {len(dims)}.")
    out = []
    for d, h in zip(dims, spacing):
        if isinstance(h, Tensor) and h.ndim > 0:
            if h.ndim != 1 or h.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each coordinate tensor to be 1-D with "
                                   f"{input.shape[d]} elements (dim {d}), but got shape {list(h.shape)}")
            out.append(h)
        else:
            out.append(h.item() if isinstance(h, Tensor) else h)
    return out


def _gradient_along(f, d, h, edge_order):
    n = f.shape[d]
    if not isinstance(h, Tensor):
        return _even_gradient(f, d, n, float(h), edge_order)
    shape = [1] * f.ndim
    shape[d] = n
    x = h.to(f.dtype).reshape(shape)
    return _uneven_gradient(f, d, n, x, edge_order)


def _even_gradient(f, d, n, h, edge_order):
    inner = (f.narrow(d, 2, n - 2) - f.narrow(d, 0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / h
        last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / h
    else:
        first = (-1.5 * f.narrow(d, 0, 1) + 2 * f.narrow(d, 1, 1) - 0.5 * f.narrow(d, 2, 1)) / h
        last = (0.5 * f.narrow(d, n - 3, 1) - 2 * f.narrow(d, n - 2, 1) + 1.5 * f.narrow(d, n - 1, 1)) / h
    return _C.cat([first, inner, last], d)


def _uneven_gradient(f, d, n, x, edge_order):
    """Second-order central differences on the grid x: the derivative at i of the parabola
    through the samples i - 1, i, i + 1."""
    dx = x.narrow(d, 1, n - 1) - x.narrow(d, 0, n - 1)
    hl, hr = dx.narrow(d, 0, n - 2), dx.narrow(d, 1, n - 2)
    f0, f1, f2 = f.narrow(d, 0, n - 2), f.narrow(d, 1, n - 2), f.narrow(d, 2, n - 2)
    inner = (hl * hl * f2 - hr * hr * f0 + (hr * hr - hl * hl) * f1) / (hl * hr * (hl + hr))
    if edge_order == 1:
        first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / dx.narrow(d, 0, 1)
        last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / dx.narrow(d, n - 2, 1)
    else:
        first = _parabola_slope(f.narrow(d, 0, 1), f.narrow(d, 1, 1), f.narrow(d, 2, 1),
                                dx.narrow(d, 0, 1), dx.narrow(d, 1, 1), at_start=True)
        last = _parabola_slope(f.narrow(d, n - 3, 1), f.narrow(d, n - 2, 1), f.narrow(d, n - 1, 1),
                               dx.narrow(d, n - 3, 1), dx.narrow(d, n - 2, 1), at_start=False)
    return _C.cat([first, inner, last], d)


def _parabola_slope(f0, f1, f2, h1, h2, at_start):
    """The slope at the first (or last) of three samples spaced h1, h2 of the parabola through them."""
    s = h1 + h2
    if at_start:
        return -(2 * h1 + h2) / (h1 * s) * f0 + s / (h1 * h2) * f1 - h1 / (h2 * s) * f2
    return h2 / (h1 * s) * f0 - s / (h1 * h2) * f1 + (2 * h2 + h1) / (h2 * s) * f2


# ---- as_strided: a copy gathered from the flat memory of a contiguous input ----

def _strided_positions(op, input, size, stride, storage_offset):
    """The flat indices into input.reshape(-1) that torch's strided view would read, as an int64
    tensor of shape `size`, after torch's checks (bounds against input's own elements)."""
    size, stride = [int(s) for s in size], [int(s) for s in stride]
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"{op}: Negative strides are not supported at the moment, got strides: {stride}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"{op}: negative size in {size}")
    if not input.is_contiguous():
        raise RuntimeError(f"{op}: vkml reads the flat memory of a contiguous input only (its strided "
                           f"result is a copy); got a non-contiguous input of strides {list(input.stride())}")
    base = input.storage_offset()
    offset = base if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    empty = any(s == 0 for s in size)
    end = offset + (0 if empty else 1 + sum((n - 1) * s for n, s in zip(size, stride)))
    if not empty and (offset < base or end > base + input.numel()):
        raise RuntimeError(f"{op}: sizes {size}, strides {stride}, storage offset {offset} reach elements "
                           f"[{offset}, {end}) but the input holds [{base}, {base + input.numel()})")
    pos = _C.full((), offset - base, dtype=_dt.int64, device=input.device)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        pos = pos + (_C.arange(n, dtype=_dt.int64, device=input.device) * s).reshape(shape)
    return pos.expand(size) if size else pos


def as_strided(input, size, stride, storage_offset=None):
    """torch.as_strided's elements: element i of the result is the input's memory element
    storage_offset + sum(i_k * stride_k). vkml returns a copy, gathered with index_select from a
    contiguous input (writes into it do not reach the input); its gradient is index_add's, which
    sums the gradient of elements read more than once, as torch's."""
    pos = _strided_positions("as_strided", input, size, stride, storage_offset)
    return input.reshape(-1).index_select(0, pos.reshape(-1)).reshape(list(pos.shape))


def as_strided_copy(input, size, stride, storage_offset=None):
    """torch.as_strided_copy: as_strided's elements, a copy (vkml's as_strided is one already)."""
    return as_strided(input, size, stride, storage_offset)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input with the elements as_strided(input, size, stride, storage_offset) reads
    replaced by src (of shape `size`), as torch.as_strided_scatter; differentiable in both."""
    pos = _strided_positions("as_strided_scatter", input, size, stride, storage_offset)
    if tuple(src.shape) != tuple(pos.shape):
        raise RuntimeError(f"as_strided_scatter: expected src to have a size equal to the slice of self. src "
                           f"size = {list(src.shape)}, slice size = {list(pos.shape)}")
    flat = input.reshape(-1)
    return flat.index_copy(0, pos.reshape(-1), src.reshape(-1).to(input.dtype)).reshape(list(input.shape))


def _as_strided_(self, size, stride, storage_offset=None):
    raise NotImplementedError("as_strided_: vkml has no views of arbitrary strides from Python (as_strided "
                              "returns a copy); use x = x.as_strided(size, stride) instead")


# ---- histogramdd ----

def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of the points input[..., :] (the last dim holds each point's D
    coordinates), as torch.histogramdd: `bins` is one count for every dim, one per dim, or one
    1-D edge tensor per dim; `range` is [lo0, hi0, lo1, hi1, ...]. Points outside any dim's
    edges are dropped; weight= (the leading shape) sums weights, density=True normalises."""
    _check_histogram(input, None)
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    D = input.shape[-1]
    pts = input.detach().reshape(-1, D)
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * D
    if len(per_dim) != D:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if any(not isinstance(b, (int, Tensor)) or isinstance(b, bool) for b in per_dim):
        raise TypeError("histogramdd(): argument 'bins' must be an int, a list of ints or a list of 1-D tensors")
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should have {2 * D} "
                           f"elements, but got {len(range)}")
    edges = [_bin_edges(pts[:, k], per_dim[k], None if range is None else range[2 * k:2 * k + 2])
             for k in builtin_range(D)]
    counts = [e.numel() - 1 for e in edges]
    flat, inside = _joint_bin(pts, edges, counts)
    total = _numel(counts)
    if total >= 2 ** 31:
        raise RuntimeError(f"torch.histogramdd: {total} bins in all ({' x '.join(map(str, counts))}) are too many")
    dump = _C.full((), total, dtype=_dt.int64, device=input.device)
    w = None if weight is None else _histogramdd_weight(input, weight).reshape(-1)
    hist = _C.bincount(_C.where(inside, flat, dump), w, total + 1)[:total].to(input.dtype).reshape(counts)
    if density:
        hist = hist / hist.sum()
        for k, e in enumerate(edges):
            shape = [1] * D
            shape[k] = counts[k]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return histogramdd_type(hist, tuple(edges))


builtin_range = range  # histogramdd's `range` argument shadows the builtin inside it


def _joint_bin(pts, edges, counts):
    """Each point's bin as one row-major index over the D dims, and whether it is inside all edges."""
    flat = _C.zeros((pts.shape[0],), dtype=_dt.int64, device=pts.device)
    inside = _C.ones((pts.shape[0],), dtype=_dt.bool, device=pts.device)
    for k, (e, n) in enumerate(zip(edges, counts)):
        col = pts[:, k].contiguous()
        inside = inside & (col >= e[0]) & (col <= e[-1])
        pos = (_C.bucketize(col, e, right=True) - 1).clamp(0, n - 1)
        flat = flat * n + pos
    return flat, inside


def _histogramdd_weight(input, weight):
    if tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError(f"torch.histogramdd: weight should have the shape of the input without its last "
                           f"dim {list(input.shape[:-1])}, but got {list(weight.shape)}")
    if weight.dtype != input.dtype:
        raise RuntimeError(f"torch.histogramdd: input and weight should have the same dtype, but got input "
                           f"{input.dtype} and weight {weight.dtype}")
    return weight.detach()


# ---- nonzero_static, frobenius_norm, norm_except_dim ----

def nonzero_static(input, *, size, fill_value=-1):
    """nonzero(input) with exactly `size` rows, as torch.nonzero_static: the first `size` indices,
    padded with rows of fill_value when there are fewer (a shape known before the data is read)."""
    if not isinstance(fill_value, int) or isinstance(fill_value, bool):
        raise TypeError(f"nonzero_static(): argument 'fill_value' must be int, not {type(fill_value).__name__}")
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got {size}")
    nz = _C.nonzero(input)
    have = nz.shape[0]
    if have >= size:
        return nz[:size].contiguous()
    pad = _C.full((size - have, input.ndim), fill_value, dtype=_dt.int64, device=input.device)
    return _C.cat([nz, pad], 0)


def frobenius_norm(input, dim=(), keepdim=False):
    """The 2-norm over `dim` (all dims when empty), as torch.frobenius_norm, which torch keeps for
    TorchScript; linalg.vector_norm(input, 2, dim, keepdim) is the same."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    return _C._linalg.vector_norm(input, 2, dims or None, keepdim)


def norm_except_dim(v, pow=2, dim=0):
    """The `pow`-norm of v over every dim but `dim`, kept as size-1 dims (weight_norm's norm);
    dim=-1 means the norm of the whole tensor, a 0-d result, as torch's."""
    if dim == -1:
        return _C._linalg.vector_norm(v, pow, None, False)
    d = _wrap_dim(dim, v.ndim)
    others = [k for k in range(v.ndim) if k != d]
    if not others:
        return v.abs() if pow != 0 else (v != 0).to(v.dtype)
    return _C._linalg.vector_norm(v, pow, others, True)


# ---- switches: default tensor type, anomaly mode ----

_FLOAT_TYPES = {"torch.FloatTensor": "float32", "torch.DoubleTensor": "float64",
                "vkml.FloatTensor": "float32", "vkml.DoubleTensor": "float64"}
_OTHER_TYPES = {"torch.IntTensor", "torch.LongTensor", "torch.BoolTensor", "torch.ByteTensor",
                "torch.CharTensor", "torch.ShortTensor", "torch.HalfTensor", "torch.BFloat16Tensor"}


def set_default_tensor_type(t):
    """Sets the default float dtype from a legacy tensor type name ('torch.FloatTensor',
    'torch.DoubleTensor'), as torch's deprecated set_default_tensor_type. vkml has no typed
    tensor classes, so only the names are taken; CUDA types and integer types are refused."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if not isinstance(t, str):
        raise TypeError("invalid type object: only floating-point types are supported as the default type"
                        if isinstance(t, _dt) else f"set_default_tensor_type: expected a type name such as "
                        f"'torch.FloatTensor', got {type(t).__name__} (vkml has no typed tensor classes)")
    if t in _FLOAT_TYPES:
        _C._set_default_dtype(getattr(_dt, _FLOAT_TYPES[t]))
    elif t in _OTHER_TYPES:
        raise TypeError("only floating-point types are supported as the default type")
    elif ".cuda." in t:
        raise TypeError(f"type {t} not available. vkml has no CUDA device.")
    else:
        raise TypeError(f"set_default_tensor_type: invalid type '{t}' (expected 'torch.FloatTensor' or "
                        "'torch.DoubleTensor')")


_anomaly_check_nan = [True]


def set_anomaly_enabled(enabled, check_nan=True):
    """Turns vkml's anomaly mode on or off, as torch.set_anomaly_enabled. vkml's mode always
    checks gradients for NaN/Inf: check_nan=False is recorded (is_anomaly_check_nan_enabled
    reports it) and warned about, not honoured."""
    if enabled and not check_nan:
        warnings.warn("vkml's anomaly mode always checks gradients for NaN: check_nan=False is recorded "
                      "but the check still runs", UserWarning, stacklevel=2)
    _C._set_anomaly_enabled(bool(enabled))
    _anomaly_check_nan[0] = bool(check_nan)


def is_anomaly_check_nan_enabled():
    """The check_nan flag last given to set_anomaly_enabled (True until then), as torch's."""
    return _anomaly_check_nan[0]


# ---- torch-namespace forms of Tensor methods ----

def detach_(input):
    """input.detach_(): cuts input out of its graph, in place."""
    return input.detach_()


def addmv_(input, mat, vec, *, beta=1, alpha=1):
    """input.addmv_(mat, vec): input = beta * input + alpha * (mat @ vec), in place."""
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


def put(input, index, source, accumulate=False):
    """A copy of input with source written at the flat positions index (summed when accumulate),
    the functional form of Tensor.put_."""
    return input.put(index, source, accumulate)


def resize_as_(input, the_template, *, memory_format=None):
    """input.resize_as_(the_template)."""
    return _resize_(input, *the_template.shape)


# ---- Tensor.new: the legacy constructor ----

def _new(self, *args, device=None):
    """The legacy constructor, self's dtype and device: new() is empty, new(*sizes) or
    new(Size) uninitialized of that shape, new(sequence) a copy of the data, new(tensor) the
    tensor itself detached (same memory; its dtype must be self's)."""
    device = self.device if device is None else device
    if not args:
        return _C.empty((0,), dtype=self.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype != self.dtype:
            raise TypeError(f"new(): expected a tensor of dtype {self.dtype} (got {other.dtype})")
        return other.detach()
    if len(args) == 1 and isinstance(args[0], (list, tuple)) and not _is_size(args[0]):
        return _C.tensor(args[0], dtype=self.dtype, device=device)
    sizes = list(args[0]) if len(args) == 1 and _is_size(args[0]) else list(args)
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
        raise TypeError(f"new(): argument 'size' must be a sequence of ints, got {sizes}")
    return _C.empty(sizes, dtype=self.dtype, device=device)


def _is_size(obj):
    return type(obj).__name__ == "Size" and isinstance(obj, tuple)


# ---- resize_: the same memory under a new shape, or new memory when it grows ----

def _sizes(args, op):
    sizes = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    if any(not isinstance(s, int) or s < 0 for s in sizes):
        raise RuntimeError(f"{op}: sizes must be non-negative integers, got {sizes}")
    return sizes


def _numel(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def _dense_order(x):
    """x's elements in memory order, as a 1-D view of its memory: x permuted so its strides
    descend (a dense layout read as stored), or None when x has gaps or repeats in memory."""
    order = sorted(range(x.ndim), key=lambda d: -x.stride(d))
    p = x.permute(order)
    return p.reshape(-1) if p.is_contiguous() else None


def _resize_(self, *args, memory_format=None):
    """Tensor.resize_: self takes `sizes` with contiguous strides over its memory, as torch's.
    Fewer (or as many) elements keep the memory (torch keeps the storage); more are allowed
    when self is contiguous from its memory's start: self then gets new memory holding its old
    elements first (views of the old memory no longer share it). Refused when self requires grad."""
    sizes = _sizes(args, "resize_")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if sizes == list(self.shape):
        return self  # torch keeps the strides when the shape does not change
    n = _numel(sizes)
    if n <= self.numel():
        flat = _dense_order(self)
        if flat is None:
            raise RuntimeError("resize_: vkml can resize a tensor whose elements fill one block of memory only "
                               f"(got strides {list(self.stride())} for shape {list(self.shape)})")
        return _C._inplace_view(self, "resize_", lambda x, f: f[:n].view(sizes), (flat,))
    if not self.is_contiguous() or self.storage_offset() != 0:
        raise RuntimeError("resize_: growing a view (non-contiguous, or starting inside its memory) needs "
                           "torch's resizable storage, which vkml does not have; resize a contiguous tensor")
    grown = _C.zeros((n,), dtype=self.dtype, device=self.device)
    grown[:self.numel()] = self.reshape(-1)
    self.data = grown.view(sizes)
    return self


def _resize_as_(self, the_template, *, memory_format=None):
    return _resize_(self, *the_template.shape)


def _resize(self, *args):
    """The deprecated out-of-place resize: self's elements under a new shape of as many elements
    (a differentiable reshape), as torch.Tensor.resize."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _reshape_same_numel(self, _sizes(args, "resize"))


def _resize_as(self, tensor):
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _reshape_same_numel(self, list(tensor.shape))


def _reshape_same_numel(self, sizes):
    if _numel(sizes) != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({_numel(sizes)} elements in total), "
                           f"but the given tensor has a size of {'x'.join(map(str, self.shape))} "
                           f"({self.numel()} elements). autograd's resize can only change the shape of a "
                           "given tensor, while preserving the number of elements. ")
    return self.contiguous().view(sizes).clone()


# ---- apply_ / map_ / map2_: a Python callable per element, CPU only ----

def _elementwise_python(op, self, others, fn):
    """Writes fn(self[i], *(o[i] for o in others)) into self, each operand broadcast to self's
    shape; a Python call per element, as torch's (CPU tensors only, none requiring grad)."""
    if not callable(fn):
        raise TypeError(f"{op}(): argument 'callable' must be callable, not {type(fn).__name__}")
    for t in (self, *others):
        if t.device.type != "cpu":
            raise TypeError(f"{op} is only implemented on CPU tensors")
        if t.requires_grad:
            raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")
    for o in others:
        if o.dtype != self.dtype:
            raise TypeError(f"{op}: expected {self.type()} for 'other' (got {o.type()})")
    cols = [self.reshape(-1).tolist()] + [o.expand(self.shape).reshape(-1).tolist() for o in others]
    values = [fn(*vals) for vals in zip(*cols)]
    self.copy_(_C.tensor(values, dtype=self.dtype).reshape(list(self.shape)))
    return self


def _apply_(self, callable):
    return _elementwise_python("apply_", self, (), callable)


def _map_(self, tensor, callable):
    return _elementwise_python("map_", self, (tensor,), callable)


def _map2_(self, x, y, callable):
    return _elementwise_python("map2_", self, (x, y), callable)


# ---- small attributes ----

def _as_subclass(self, cls):
    """self as an instance of cls (a Tensor subclass) sharing its memory. torch's result stays in
    self's graph; vkml's is a new leaf, so a tensor that requires grad is refused."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                        "possible. Make sure your class inherits from Tensor.")
    if self.requires_grad:
        raise RuntimeError("as_subclass: vkml's subclass instance would be a new leaf, cut from self's graph; "
                           "call it on a tensor that does not require grad (or on self.detach())")
    return Tensor._make_subclass(cls, self, False)


def _dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (strides descending, ties in dim order)."""
    if ambiguity_check:
        strides = [self.stride(d) for d in range(self.ndim) if self.shape[d] != 1]
        if len(set(strides)) != len(strides):
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one "
                               "of the given memory formats.")
    return tuple(sorted(range(self.ndim), key=lambda d: -self.stride(d)))


def install(namespace):
    """Puts the functions into `namespace` (the vkml module's globals) and the methods on Tensor."""
    for fn in (gradient, as_strided, as_strided_copy, as_strided_scatter, histogramdd, nonzero_static,
               frobenius_norm, norm_except_dim, set_default_tensor_type, set_anomaly_enabled,
               is_anomaly_check_nan_enabled, detach_, addmv_, put, resize_as_):
        namespace[fn.__name__] = fn
    namespace["as_strided_"] = _as_strided_
    methods = {"as_strided": as_strided, "as_strided_scatter": as_strided_scatter, "as_strided_": _as_strided_,
               "nonzero_static": nonzero_static, "new": _new, "resize_": _resize_, "resize_as_": _resize_as_,
               "resize": _resize, "resize_as": _resize_as, "apply_": _apply_, "map_": _map_, "map2_": _map2_,
               "as_subclass": _as_subclass, "dim_order": _dim_order,
               "const_data_ptr": lambda self: self.data_ptr()}
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    # vkml's graph nodes have one output each, and it has no named tensors
    Tensor.output_nr = property(lambda self: 0)
    Tensor.name = property(lambda self: None)
    namespace["return_types"].histogramdd = histogramdd_type
