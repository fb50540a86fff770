"""The names torch programs call on any tensor that mean something only for complex, sparse,
quantized, meta or pinned tensors -- generic library code asks them of every tensor (`if
x.is_complex(): ...`, `x.conj()`, `x.real`) -- with torch's answers for the real, dense tensors
vkml has: x.real and x.conj() are x itself, x.imag raises as torch's, is_complex() and is_neg()
are False, isreal() is all True, angle() is 0 or pi (NaN kept) with a zero gradient, and the
storage-kind flags (is_sparse, is_quantized, is_meta, is_mkldnn, is_nested) are False. install()
puts them on the vkml namespace and on Tensor."""

import math

from . import _C
from ._grad_mode import no_grad as _no_grad

Tensor = _C.Tensor


def real(input):
    """The real part: a real tensor itself, as torch's."""
    return input


def imag(input):
    """The imaginary part: a RuntimeError for a real tensor, as torch's."""
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def conj(input):
    """The complex conjugate: a real tensor itself, as torch's (conj_physical, resolve_conj and
    resolve_neg too: a real tensor carries no lazy conjugation or negation)."""
    return input


def is_complex(input):
    return False


def is_neg(input):
    return False


def isreal(input):
    """True where the imaginary part is 0: everywhere for a real tensor."""
    return _C.ones_like(input, dtype=_C.dtype.bool)


def angle(input):
    """The argument of each element as a complex number: pi for x < 0, 0 for x >= 0 (-0 too), NaN
    for NaN, in the default float dtype for integers; its gradient is 0 everywhere, as torch's."""
    x = input if input.is_floating_point() else input.to(_C._get_default_dtype())
    with _no_grad():
        values = _C.where(x < 0, _C.full_like(x, math.pi), _C.zeros_like(x))
        values = _C.where(_C.isnan(x), x, values)
    if not (_C.is_grad_enabled() and x.requires_grad):
        return values
    return _C.from_op(values, [x], lambda g: [_C.zeros_like(g)], "angle")


def _false(self):
    return False


def install(ns):
    fns = {"conj": conj, "conj_physical": conj, "resolve_conj": conj, "resolve_neg": conj,
           "is_complex": is_complex, "is_neg": is_neg, "isreal": isreal, "angle": angle}
    for name, fn in fns.items():
        ns.setdefault(name, fn)
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    ns.setdefault("real", real)
    ns.setdefault("imag", imag)
    Tensor.real = property(real)
    Tensor.imag = property(imag)
    Tensor.conj_physical_ = conj
    for flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn",
                 "is_nested"):
        if not hasattr(Tensor, flag):
            setattr(Tensor, flag, property(_false))
