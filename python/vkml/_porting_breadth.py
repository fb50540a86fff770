"""Porting breadth (issue #15): mvlgamma, histogram, the tensor predicates torch programs call
(get_device, is_conj, is_inference) and the creation functions asarray, frombuffer, empty_strided,
empty_permuted, Tensor.new_empty_strided. Compositions of the op table's ops; numpy only reads
Python buffers. install() puts them on Tensor and the vkml namespace."""

import collections
import math

import numpy as _np

from . import _C
from ._randint import _finite

Tensor = _C.Tensor
_dt = _C.dtype

# (hist, bin_edges), as torch.return_types.histogram
histogram_type = collections.namedtuple("histogram", ["hist", "bin_edges"])


# ---- mvlgamma: the multivariate log-gamma function ----

def mvlgamma(input, p):
    """log of the multivariate gamma function of dimension p: sum over j < p of
    lgamma(input - j/2) plus p(p-1)/4 log(pi), as torch.mvlgamma (integers become the default float
    dtype; the gradient is lgamma's, summed). torch 2.13 checks only p >= 1 (no domain check on
    input: lgamma's poles give inf, as there)."""
    if input.dtype == _dt.bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input if input.is_floating_point() else input.to(_C._get_default_dtype())
    halves = _C.arange(1 - p, 1, dtype=x.dtype, device=x.device) * 0.5
    return _C.lgamma(x.unsqueeze(-1) + halves).sum(-1) + 0.25 * p * (p - 1) * math.log(math.pi)


def _mvlgamma_(self, p):
    return _C._inplace(self, "mvlgamma_", mvlgamma, (p,), {})


# ---- histogram ----

def histogram(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of input's elements (all of them, flattened), as torch.histogram: `bins`
    equal bins over `range` (default: the data's [min, max], widened by 0.5 each side when flat),
    or the edges given as a 1-D tensor. Element x is in bin i when edge[i] <= x < edge[i + 1], the
    last edge belonging to the last bin; others and NaN are dropped. weight= sums weights instead of
    counting; density=True divides by the total and by the bin widths. No gradient, as torch."""
    _check_histogram(input, weight)
    x = input.detach().reshape(-1)
    edges = _bin_edges(x, bins, range)
    n = edges.numel() - 1
    if n < 1:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {n} for dimension 0")
    inside = (x >= edges[0]) & (x <= edges[-1])
    pos = (_C.bucketize(x, edges, right=True) - 1).clamp(0, n - 1)
    pos = _C.where(inside, pos, _C.full((), n, dtype=_dt.int64, device=x.device))
    w = None if weight is None else weight.detach().reshape(-1)
    hist = _C.bincount(pos, w, n + 1)[:n].to(input.dtype)
    if density:
        hist = hist / hist.sum() / (edges[1:] - edges[:-1])
    return histogram_type(hist, edges)


def _check_histogram(input, weight):
    if not isinstance(input, Tensor):
        raise TypeError(f"histogram(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.is_floating_point():
        raise NotImplementedError(f'"histogram" not implemented for {input.dtype}')
    if weight is None:
        return
    if tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("torch.histogram: weight should have the same shape as the input, but got input "
                           f"with shape {list(input.shape)} and weight with shape {list(weight.shape)}")
    if weight.dtype != input.dtype:
        raise RuntimeError("torch.histogram: input and weight should have the same dtype, but got "
                           f"input {input.dtype} and weight {weight.dtype}")


def _bin_edges(x, bins, range):
    """The bin edges: the given 1-D tensor, or bins + 1 equally spaced in the range, in x's dtype."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError("torch.histogram: bins tensor should have one dimension, but got "
                               f"{bins.ndim} dimensions")
        if bins.dtype != x.dtype:
            raise RuntimeError(f"torch.histogram: input and bins should have the same dtype, but got input "
                               f"{x.dtype} and bins {bins.dtype}")
        return bins.detach().to(x.device)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if range is not None:
        lo, hi = float(range[0]), float(range[1])
    elif x.numel():
        lo, hi = x.min().item(), x.max().item()  # a host read, as torch's
    else:
        lo, hi = 0.0, 1.0  # an empty input's default range in torch
    if lo > hi:
        raise RuntimeError(f"torch.histogram: min should not exceed max, but got min {lo} max {hi}")
    if not (_finite(lo) and _finite(hi)):
        raise RuntimeError(f"torch.histogram: range [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _even_edges(lo, hi, bins, x.dtype, x.device)


def _even_edges(lo, hi, bins, dtype, device):
    """bins + 1 edges from lo to hi computed as torch's linspace: the first half from lo upwards,
    the second from hi downwards, so the last edge is hi itself (an element equal to the maximum
    is in the last bin, never past it) and the edges equal torch's bit for bit."""
    lo_t, hi_t = _C.full((), lo, dtype=dtype, device=device), _C.full((), hi, dtype=dtype, device=device)
    step = (hi_t - lo_t) / bins
    i = _C.arange(bins + 1, dtype=dtype, device=device)
    return _C.where(i < (bins + 1) // 2, lo_t + step * i, hi_t - step * (bins - i))


# ---- predicates ----

def _tensor_arg(fn, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(input).__name__}")


def get_device(input):
    """-1 for a CPU tensor, the device index otherwise (torch.get_device)."""
    _tensor_arg("get_device", input)
    return input.get_device()


def is_conj(input):
    """False: vkml has no complex dtypes, so no conjugate views."""
    _tensor_arg("is_conj", input)
    return False


def is_inference(input):
    """False: vkml's inference_mode is no_grad, which makes no inference tensors."""
    _tensor_arg("is_inference", input)
    return False


# ---- creation ----

def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """obj as a tensor, as torch.asarray: a tensor is returned itself when dtype and device already
    match and copy is not True; a numpy array (or any object with the buffer protocol) of a dtype
    vkml has is shared, not copied, on the CPU unless copy=True; sequences and numbers are copied
    (copy=False is then a ValueError, as torch). requires_grad=None keeps a tensor's flag."""
    if isinstance(obj, Tensor):
        out = _asarray_tensor(obj, dtype, device, copy)
    else:
        out = _asarray_other(obj, dtype, device, copy)
    if requires_grad is not None and out.requires_grad != requires_grad:
        out = out.requires_grad_(True) if requires_grad else out.detach()
    return out


def _asarray_tensor(obj, dtype, device, copy):
    wanted_dtype = obj.dtype if dtype is None else dtype
    # the device as a tensor made there reports it ("vulkan" and "vulkan:0" are one device)
    wanted_device = obj.device if device is None else _C.empty(0, device=device).device
    if wanted_dtype != obj.dtype or wanted_device != obj.device:
        if copy is False:
            raise ValueError(f"can't alias tensor with dtype {obj.dtype} on {obj.device} into dtype "
                             f"{wanted_dtype} on {wanted_device}.")
        return obj.to(device=wanted_device, dtype=wanted_dtype)
    return obj.clone() if copy else obj


def _asarray_other(obj, dtype, device, copy):
    if isinstance(obj, _np.ndarray) or (hasattr(obj, "__array_interface__") or _has_buffer(obj)):
        arr = _np.asarray(obj)
        shared = _shareable(arr, dtype, device)
        if copy is False and not shared:
            raise ValueError(f"can't alias the {arr.dtype} array into a vkml tensor with dtype {dtype} on "
                             f"{device or 'cpu'}.")
        if shared and not copy:
            return _C.from_numpy(arr)
        return _C.tensor(arr, dtype=dtype, device=device)
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return _C.tensor(obj, dtype=dtype, device=device)


def _has_buffer(obj):
    try:
        memoryview(obj)
    except TypeError:
        return False
    return not isinstance(obj, (bytes, bytearray))  # raw bytes are frombuffer's (torch: a sequence)


def _shareable(arr, dtype, device):
    """Whether from_numpy can share arr's memory: a dtype vkml holds, the one asked for, the CPU."""
    names = {"float32", "float64", "int32", "int64", "bool"}
    if arr.dtype.name not in names or (dtype is not None and dtype.name != arr.dtype.name):
        return False
    return device is None or str(device) == "cpu"


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor of `count` elements of `dtype` read from a Python buffer from byte `offset`
    (count=-1: all that follow), with torch.frombuffer's checks. Unlike torch's, the tensor is a
    copy: writing to the buffer afterwards does not change it."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    nbytes, size = view.nbytes, dtype.itemsize
    if nbytes == 0 or count == 0:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if not 0 <= offset < nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({nbytes} bytes) minus 1")
    if count < 0:
        if (nbytes - offset) % size:
            raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({size})")
        count = (nbytes - offset) // size
    elif offset + count * size > nbytes:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) "
                         f"must not be greater than actual buffer length ({nbytes} bytes)")
    arr = _np.frombuffer(view, dtype=_np.dtype(dtype.name), count=count, offset=offset)
    return _C.tensor(arr.copy(), dtype=dtype, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialized tensor of `size`. vkml tensors are made contiguous: `stride` is a layout
    hint torch honours and vkml checks only for its length (the values are the same either way)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    return _C.empty(size, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialized tensor of `size`; physical_layout (torch's memory order of the dims) is
    checked to be a permutation and otherwise a hint: vkml's result is contiguous."""
    size, order = tuple(size), tuple(physical_layout)
    if len(size) != len(order):
        raise RuntimeError("Number of dimensions in size does not match the length of the physical_layout; "
                           f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    if any(not 0 <= d < len(order) for d in order):
        raise IndexError(f"empty_permuted: physical_layout {list(order)} is not a permutation of the dims")
    return _C.empty(size, dtype=dtype, device=device, requires_grad=requires_grad)


def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                       pin_memory=False):
    """empty_strided with self's dtype and device unless given (contiguous: stride is a hint)."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def install(namespace):
    """Puts the functions into `namespace` (the vkml module's globals) and the methods on Tensor."""
    for fn in (mvlgamma, histogram, get_device, is_conj, is_inference, asarray, frombuffer, empty_strided,
               empty_permuted):
        namespace[fn.__name__] = fn
    Tensor.mvlgamma = mvlgamma
    Tensor.mvlgamma_ = _mvlgamma_
    Tensor.histogram = histogram
    Tensor.is_conj = is_conj
    Tensor.is_inference = is_inference
    Tensor.new_empty_strided = _new_empty_strided
    namespace["return_types"].histogram = histogram_type
