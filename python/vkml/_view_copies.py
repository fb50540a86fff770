"""Tensor.unfold, torch's *_copy functions, unsafe_chunk/unsafe_split and the adjoint names (issue
#15, porting breadth), composed of the op table's ops. install() puts them on Tensor and the vkml
namespace.

torch's *_copy functions are its view ops followed by a copy: here each is the vkml op followed by
clone(), so the result never shares memory with the input and its gradient is the view op's."""

import warnings

from . import _C
from ._shape_fns import _wrap, split_with_sizes

Tensor = _C.Tensor
_int64 = _C.dtype.int64


# ---- Tensor.unfold: sliding windows ----

def unfold(self, dimension, size, step):
    """Windows of `size` elements every `step` along `dimension`, as a new last dimension (torch's
    Tensor.unfold). torch returns a strided view; here one index_select of the computed window
    indices gives the same values, and its backward (a scatter-add) the same gradient, where
    windows overlap too; being a copy, writing into the result leaves self unchanged."""
    if self.ndim == 0:
        _wrap(dimension, 0, "unfold")
        return unfold(self.reshape(1), 0, size, step).reshape(-1)
    d = _wrap(dimension, self.ndim, "unfold")
    length = self.shape[d]
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    n = (length - size) // step + 1
    starts = _C.arange(n, dtype=_int64, device=self.device) * step
    index = starts.unsqueeze(1) + _C.arange(size, dtype=_int64, device=self.device)
    picked = self.index_select(d, index.reshape(-1))
    shape = tuple(self.shape)
    return picked.reshape(shape[:d] + (n, size) + shape[d + 1:]).movedim(d + 1, -1)


# ---- the *_copy functions: a view op, then a copy ----

def view_copy(input, size):
    """input's elements in `size`, copied. torch's view_copy takes any input, a non-contiguous one
    too (it is the functional form of view): reshape, then a copy."""
    return input.reshape(size).clone()


def permute_copy(input, dims):
    return input.permute(*dims).clone()


def transpose_copy(input, dim0, dim1):
    return input.transpose(dim0, dim1).clone()


def t_copy(input):
    return input.t().clone()


def squeeze_copy(input, dim=None):
    return (input.squeeze() if dim is None else input.squeeze(dim)).clone()


def unsqueeze_copy(input, dim):
    return input.unsqueeze(dim).clone()


def select_copy(input, dim, index):
    return input.select(dim, index).clone()


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """input[start:end:step] along dim, copied (torch.slice_copy)."""
    d = _wrap(dim, input.ndim, "slice_copy")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return input[(slice(None),) * d + (slice(start, end, step),)].clone()


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return input.diagonal(offset, dim1, dim2).clone()


def expand_copy(input, size, *, implicit=False):
    return input.expand(*size).clone()


def narrow_copy(input, dim, start, length):
    return input.narrow(dim, start, length).clone()


def split_copy(input, split_size, dim=0):
    return tuple(t.clone() for t in input.split(split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    return tuple(t.clone() for t in split_with_sizes(input, split_sizes, dim))


def unbind_copy(input, dim=0):
    return tuple(t.clone() for t in input.unbind(dim))


def alias_copy(input):
    return input.clone()


def detach_copy(input):
    return input.detach().clone()


def unfold_copy(input, dimension, size, step):
    return unfold(input, dimension, size, step).clone()


# ---- unsafe_chunk / unsafe_split: torch's chunk and split without view tracking ----

def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def unsafe_split(input, split_size, dim=0):
    """split(input, split_size, dim) with an int split_size, as torch.unsafe_split."""
    if not isinstance(split_size, int):
        raise TypeError(f"unsafe_split(): argument 'split_size' must be int, not "
                        f"{type(split_size).__name__}")
    return input.split(split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return split_with_sizes(input, split_sizes, dim)


# ---- adjoint, mH, H: the conjugate transpose, a transpose for vkml's real dtypes ----

def adjoint(input):
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {input.ndim}-D tensor.")
    return input.transpose(-2, -1)


def _mH(self):
    if self.ndim == 0:
        warnings.warn("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().", UserWarning,
                      stacklevel=2)
        return self
    if self.ndim < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return self.transpose(-2, -1)


def _H(self):
    if self.ndim == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning,
                      stacklevel=2)
        return self
    if self.ndim != 2:
        hint = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D "
                           f"tensor.{hint}")
    return self.t()


_FUNCTIONS = (view_copy, permute_copy, transpose_copy, t_copy, squeeze_copy, unsqueeze_copy, select_copy,
              slice_copy, diagonal_copy, expand_copy, narrow_copy, split_copy, split_with_sizes_copy,
              unbind_copy, alias_copy, detach_copy, unfold_copy, unsafe_chunk, unsafe_split,
              unsafe_split_with_sizes, adjoint)
_METHODS = (unfold, narrow_copy, unsafe_chunk, unsafe_split, unsafe_split_with_sizes, adjoint)


def install(namespace):
    """Puts the functions into `namespace` (the vkml module's globals) and the methods on Tensor."""
    for fn in _FUNCTIONS:
        namespace[fn.__name__] = fn
    for fn in _METHODS:
        setattr(Tensor, fn.__name__, fn)
    Tensor.mH = property(_mH, doc="The conjugate transpose of the last two dims (a transpose: real dtypes).")
    Tensor.H = property(_H, doc="The conjugate transpose of a 2-D tensor (a transpose: real dtypes).")
