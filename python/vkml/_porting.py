"""Names that PyTorch programs use beside the ops (issue #15, porting): vk.Size, vk.finfo /
vk.iinfo, and the Tensor methods
type(), new_zeros(), new_ones(), new_full(), new_empty(), new_tensor().

Presentation and bookkeeping only: every tensor is made by the core's creation functions."""

import numpy as _np

from . import _C
from ._C import DTypeError, Tensor, dtype

__all__ = ["Size", "finfo", "iinfo"]


# ---- vk.Size: the type of Tensor.shape and Tensor.size() ----

class Size(tuple):
    """torch.Size: a tuple of ints that prints as vkml.Size([2, 3]); slicing and concatenating
    give a Size again."""

    __slots__ = ()

    def __repr__(self):
        return f"vkml.Size({list(self)})"

    __str__ = __repr__

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return Size(r) if isinstance(key, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def numel(self):
        """The number of elements of a tensor of this shape."""
        n = 1
        for s in self:
            n *= s
        return n

    def __reduce__(self):
        return (Size, (tuple(self),))


Size.__module__ = "vkml"


def _require_dtype(dt, fn):
    if not isinstance(dt, dtype):
        raise TypeError(f"{fn}(): expected a vkml dtype, got {dt!r}")


# ---- vk.finfo / vk.iinfo: the limits of a dtype (constants, as numpy and torch report them) ----

# bfloat16 (8 exponent bits, 7 stored mantissa bits): numpy has no such type.
_BF16 = dict(bits=16, eps=0.0078125, max=3.3895313892515355e38, min=-3.3895313892515355e38,
             tiny=1.1754943508222875e-38, resolution=0.01)


class finfo:
    """torch.finfo: bits, eps, max, min, tiny (= smallest_normal), resolution and dtype of a
    floating-point dtype (the default dtype when called without one)."""

    def __init__(self, type=None):
        if type is None:
            from . import get_default_dtype
            type = get_default_dtype()
        _require_dtype(type, "finfo")
        if not type.is_floating_point:
            raise TypeError(f"vkml.finfo() requires a floating point input type; got {type!r}. "
                            "Use vkml.iinfo to handle integer types")
        if type == dtype.bfloat16:
            v = _BF16
        else:
            f = _np.finfo(_np.dtype(type.name))
            v = dict(bits=int(f.bits), eps=float(f.eps), max=float(f.max), min=float(f.min),
                     tiny=float(f.smallest_normal), resolution=10.0 ** -int(f.precision))
        self.bits = v["bits"]
        self.eps = v["eps"]
        self.max = v["max"]
        self.min = v["min"]
        self.tiny = self.smallest_normal = v["tiny"]
        self.resolution = v["resolution"]
        self.dtype = type.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """torch.iinfo: bits, max, min and dtype of an integer dtype."""

    def __init__(self, type):
        _require_dtype(type, "iinfo")
        if type == dtype.bool:
            raise TypeError("vkml.bool is not supported by vkml.iinfo")
        if type.is_floating_point:
            raise TypeError(f"vkml.iinfo() requires an integer input type; got {type!r}. "
                            "Use vkml.finfo to handle floating point types")
        i = _np.iinfo(_np.dtype(type.name))
        self.bits = int(i.bits)
        self.max = int(i.max)
        self.min = int(i.min)
        self.dtype = type.name

    def __repr__(self):
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"


# ---- Tensor.type() and the new_* constructors ----

_TYPE_NAMES = {dtype.float32: "FloatTensor", dtype.float64: "DoubleTensor",
               dtype.int32: "IntTensor", dtype.int64: "LongTensor", dtype.bool: "BoolTensor",
               dtype.float16: "HalfTensor", dtype.bfloat16: "BFloat16Tensor",
               dtype.uint8: "ByteTensor", dtype.int8: "CharTensor", dtype.int16: "ShortTensor"}
_NAME_TYPES = {v: k for k, v in _TYPE_NAMES.items()}


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """Tensor.type(): the type name ('vkml.FloatTensor'); Tensor.type(dtype) (a dtype or a name
    such as 'torch.LongTensor'): the tensor converted to that dtype (self when it has it)."""
    if dtype is None:
        prefix = "vkml." if self.device.type == "cpu" else f"vkml.{self.device.type}."
        return prefix + _TYPE_NAMES[self.dtype]
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        if name not in _NAME_TYPES:
            raise DTypeError(f"type(): invalid type {dtype!r}; vkml has "
                             + ", ".join(_NAME_TYPES))
        dtype = _NAME_TYPES[name]
    return self.to(dtype, non_blocking=non_blocking)


def _size_arg(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return size


def _new_zeros(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of zeros of the given size, with self's dtype and device unless given."""
    return _C.zeros(*_size_arg(size), dtype=dtype or self.dtype,
                    device=device or self.device, requires_grad=requires_grad)


def _new_ones(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of ones of the given size, with self's dtype and device unless given."""
    return _C.ones(*_size_arg(size), dtype=dtype or self.dtype,
                   device=device or self.device, requires_grad=requires_grad)


def _new_empty(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
    """An uninitialized tensor of the given size, with self's dtype and device unless given."""
    return _C.empty(*_size_arg(size), dtype=dtype or self.dtype,
                    device=device or self.device, requires_grad=requires_grad)


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of the given size filled with fill_value, with self's dtype and device unless
    given."""
    return _C.full(tuple(size), fill_value, dtype=dtype or self.dtype,
                   device=device or self.device, requires_grad=requires_grad)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False, **kwargs):
    """A new tensor holding a copy of data, with self's dtype and device unless given."""
    if isinstance(data, Tensor):
        data = data.detach()
    t = _C.tensor(data, dtype=dtype or self.dtype, device=device or self.device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def install():
    """Adds the methods above to Tensor (called once by vkml/__init__.py)."""
    Tensor.type = _type
    Tensor.new_zeros = _new_zeros
    Tensor.new_ones = _new_ones
    Tensor.new_empty = _new_empty
    Tensor.new_full = _new_full
    Tensor.new_tensor = _new_tensor
    _C._set_size_type(Size)  # Tensor.shape and Tensor.size() are vkml.Size
