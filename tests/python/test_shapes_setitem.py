"""Issue 12, items 14, 16 and part of 17: size arithmetic that overflowed or accepted bad sizes,
view() that silently copied, x[True], numpy() of > 64 dims, range checks of eye/normal_/uniform_,
setitem writing in place at the cost of what it writes, set_num_threads, zero-sized layers and
autograd.Function errors. PyTorch is the oracle for values, shapes and exception types."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import to_np


def _raises_like_torch(vk_fn, torch_fn, *parts):
    """vk_fn raises an exception of the type torch_fn raises (vkml's may be a subclass), and its
    message names every part."""
    with pytest.raises(Exception) as t_info:
        torch_fn()
    with pytest.raises(type(t_info.value)) as v_info:
        vk_fn()
    for p in parts:
        assert p in str(v_info.value), f"{p!r} not in {str(v_info.value)!r}"
    return v_info.value


# ------------------------------------------------------------------------------------------
# size arithmetic


def test_expand_uncountable_shape_raises():
    e = _raises_like_torch(lambda: vk.ones(1, 1).expand(2**32, 2**32),
                           lambda: torch.ones(1, 1).expand(2**32, 2**32), "expand", "[4294967296, 4294967296]")
    assert isinstance(e, vk.SizeError) and isinstance(e, vk.ShapeError)


def test_expand_large_countable_shape_has_right_numel():
    assert vk.ones(1, 1).expand(2**31, 2**31).numel() == torch.ones(1, 1).expand(2**31, 2**31).numel() == 2**62


def test_expand_negative_size_raises():
    _raises_like_torch(lambda: vk.ones(1).expand(-2), lambda: torch.ones(1).expand(-2), "expand", "-2")
    _raises_like_torch(lambda: vk.ones(1).expand(-1, 1), lambda: torch.ones(1).expand(-1, 1), "expand")


def test_broadcast_of_uncountable_shapes_raises():
    a = vk.ones(1, 1).expand(2**32, 1)
    b = vk.ones(1, 1).expand(1, 2**32)
    with pytest.raises(vk.SizeError, match="add"):
        a + b


def test_pad_huge_sizes_raises():
    for widths in [(2**62, 2**62), (2**63 - 1, 1)]:
        _raises_like_torch(lambda: vk.pad(vk.ones(2), widths), lambda: torch.nn.functional.pad(torch.ones(2), widths),
                           "pad")


def test_cat_size_overflow_raises():
    big = vk.ones(1).expand(2**62)
    with pytest.raises(vk.SizeError, match="cat"):
        vk.cat([big, big])


@pytest.mark.parametrize("sizes", [[5, -1], [-1, 5], [11, -1]])
def test_split_negative_sizes_raise(sizes):
    _raises_like_torch(lambda: vk.ones(10).split(sizes), lambda: torch.ones(10).split(sizes), "split", str(sizes))


def test_split_sizes_sum_checked_before_slicing():
    with pytest.raises(vk.ShapeError, match="split"):
        vk.ones(10).split([5, 6])
    assert [p.shape for p in vk.ones(10).split([0, 10, 0])] == [(0,), (10,), (0,)]


def test_repeat_negative_and_overflowing_raise():
    _raises_like_torch(lambda: vk.ones(2).repeat(-1), lambda: torch.ones(2).repeat(-1), "repeat")
    with pytest.raises(vk.SizeError, match="repeat"):
        vk.ones(1).expand(2**62).repeat(4)


def test_reshape_with_overflowing_known_sizes_raises():
    _raises_like_torch(lambda: vk.ones(2, 3).reshape(2**62, 2**62, -1),
                       lambda: torch.ones(2, 3).reshape(2**62, 2**62, -1), "reshape")
    _raises_like_torch(lambda: vk.ones(2, 3).reshape(-2, 3), lambda: torch.ones(2, 3).reshape(-2, 3), "reshape")
