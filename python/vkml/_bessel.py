"""The special functions at the Python level (issue #15): the in-place forms of the table ops
bound in C++ (x.i0_(), vk.i0_(x), x.igamma_(other), x.igammac_(other); python/src/
bind_special.cpp) and torch.special's i0e, i1 and i1e as special_i0e, special_i1, special_i1e
(with special_i0, torch.special.i0), for the vkml.special namespace to take up. install() puts
the in-place forms on Tensor and into the vkml namespace."""

from . import _C
from ._math import _inplace_method

Tensor = _C.Tensor


def special_i0(input):
    """The modified Bessel function of the first kind of order 0, as torch.special.i0."""
    return _C.i0(input)


def special_i0e(input):
    """exp(-|input|) * i0(input), without overflow, as torch.special.i0e."""
    return _C._special_i0e(input)


def special_i1(input):
    """The modified Bessel function of the first kind of order 1, as torch.special.i1."""
    return _C._special_i1(input)


def special_i1e(input):
    """exp(-|input|) * i1(input), without overflow, as torch.special.i1e."""
    return _C._special_i1e(input)


def i0_(input):
    """In place: input.i0_() (torch.i0_)."""
    return input.i0_()


def install(namespace):
    """Tensor.i0_, igamma_ and igammac_ (torch has no torch.igamma_), and vk.i0_."""
    for name in ("i0", "igamma", "igammac"):
        setattr(Tensor, name + "_", _inplace_method(name, getattr(_C, name)))
    namespace["i0_"] = i0_
