"""Integer bits and steps (#15): bitwise_left_shift / bitwise_right_shift (and << >>), gcd, lcm and
nextafter, on the CPU and the Vulkan device, against torch over random and edge operands
(shifts past the width or below 0, zeros, the extreme integers, signed zeros, subnormals, inf
and NaN). Where the minimum integer makes torch's signed arithmetic go wrong (a negative gcd, a
SIGFPE that kills the process in lcm), vkml gives the gcd and lcm of the magnitudes."""
import numpy as np
import pytest
import torch

import vkml as vk
from conftest import devices

RNG = np.random.default_rng(0)


def _same(got, want):
    g, w = got.cpu().numpy(), want.numpy()
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(g, w)


def _ints(dt, lo=-1000, hi=1000, n=300, extra=()):
    info = np.iinfo(dt)
    edge = [0, 1, -1, info.max, info.min + 1, *extra]
    return np.concatenate([RNG.integers(lo, hi, n), edge]).astype(dt)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_shifts_match_torch_including_out_of_range_amounts(device, dt):
    a = _ints(dt, extra=[np.iinfo(dt).min])
    bits = np.iinfo(dt).bits
    s = np.concatenate([RNG.integers(-3, bits + 5, a.size - 6), [0, bits - 1, bits, bits + 1, -1, 100]])
    s = s.astype(dt)
    va, vs, ta, ts = vk.tensor(a, device=device), vk.tensor(s, device=device), torch.tensor(a), torch.tensor(s)
    _same(vk.bitwise_left_shift(va, vs), torch.bitwise_left_shift(ta, ts))
    _same(vk.bitwise_right_shift(va, vs), torch.bitwise_right_shift(ta, ts))
    _same(va << 3, ta << 3)
    _same(va >> vs, ta >> ts)
    _same(5 << vs.abs() % 8, 5 << ts.abs() % 8)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_gcd_and_lcm_match_torch(device, dt):
    a, b = _ints(dt), _ints(dt)[::-1].copy()
    small_a, small_b = a % 5000 - 2500, b % 5000 - 2500  # lcm within range
    for x, y, fn in ((a, b, "gcd"), (small_a, small_b, "lcm")):
        got = getattr(vk, fn)(vk.tensor(x, device=device), vk.tensor(y, device=device))
        _same(got, getattr(torch, fn)(torch.tensor(x), torch.tensor(y)))


@pytest.mark.parametrize("device", devices())
def test_lcm_of_the_minimum_integer_does_not_trap(device):
    # torch's lcm(-2^63, 2^63 - 1) divides -2^63 by its negative gcd -1: SIGFPE, the process dies.
    lo, hi = -2 ** 63, 2 ** 63 - 1
    a, b = vk.tensor([lo, lo, lo, 6], device=device), vk.tensor([hi, 6, 0, lo], device=device)
    assert vk.gcd(a, b).tolist() == [1, 2, lo, 2]  # 2^63 itself wraps to -2^63, as torch's
    assert vk.lcm(a, b).tolist() == [lo, lo, 0, lo]  # 2^63 (2^63 - 1) and 3 * 2^63 wrap
    assert vk.gcd(vk.tensor([-2 ** 31], dtype=vk.int32, device=device),
                  vk.tensor([-1], dtype=vk.int32, device=device)).tolist() == [1]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nextafter_matches_torch_including_zeros_subnormals_and_nan(device, dt):
    fi = np.finfo(dt)
    tiny = fi.smallest_subnormal
    x = np.concatenate([RNG.standard_normal(200), [0, -0.0, 0, tiny, -tiny, tiny, fi.max, fi.max,
                                                   np.inf, -np.inf, np.nan, 1, 1, 2 * tiny]])
    y = np.concatenate([RNG.standard_normal(200), [1, -1, -0.0, 0, 0, 1, np.inf, 0, 0, 0, 1,
                                                   np.nan, 1, 0]])
    x, y = x.astype(dt), y.astype(dt)
    got = vk.nextafter(vk.tensor(x, device=device), vk.tensor(y, device=device)).cpu().numpy()
    want = torch.nextafter(torch.tensor(x), torch.tensor(y)).numpy()
    np.testing.assert_array_equal(got.view(np.uint32 if dt == np.float32 else np.uint64)[~np.isnan(want)],
                                  want.view(np.uint32 if dt == np.float32 else np.uint64)[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()


def test_bad_dtypes_are_typed_errors_naming_the_op():
    for fn, args, what in ((vk.gcd, (vk.tensor([1.0]), vk.tensor([2.0])), "gcd"),
                           (vk.bitwise_left_shift, (vk.tensor([True]), vk.tensor([True])),
                            "bitwise_left_shift"),
                           (vk.nextafter, (vk.tensor([1]), vk.tensor([2])), "nextafter")):
        with pytest.raises(vk.DTypeError, match=what):
            fn(*args)
    with pytest.raises(vk.DTypeError, match="bitwise_right_shift"):
        vk.tensor([3]) >> 1.5


def test_in_place_forms():
    x = vk.tensor([1, 2, 3])
    assert x.bitwise_left_shift_(2) is x and x.tolist() == [4, 8, 12]
    x.gcd_(vk.tensor([6, 6, 6]))
    assert x.tolist() == [2, 2, 6]
    y = vk.tensor([1.0, 2.0])
    y.nextafter_(vk.tensor([2.0, 1.0]))
    assert y.tolist() == torch.nextafter(torch.tensor([1.0, 2.0]), torch.tensor([2.0, 1.0])).tolist()
