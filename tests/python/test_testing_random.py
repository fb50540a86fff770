"""vk.testing.assert_close / make_tensor and vk.random against torch.testing and torch.random:
the same pass or fail on the same pairs (tensors of each dtype, NaN with and without equal_nan,
shape / dtype / device mismatches, nested containers, numbers, explicit tolerances) with the
messages' facts, make_tensor's ranges, and fork_rng restoring the generator."""

import numpy as np
import pytest
import torch

import vkml as vk

CASES = [
    lambda L: (L.tensor([1.0, 2.0, 3.0]), L.tensor([1.0, 2.0, 3.0])),
    lambda L: (L.tensor([1.0, 2.0, 3.0]), L.tensor([1.0, 2.1, 3.0])),
    lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0 + 1e-6])),
    lambda L: (L.tensor([1.0, 2.0], dtype=L.float64), L.tensor([1.0, 2.0 + 1e-6], dtype=L.float64)),
    lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0], dtype=L.float64)),
    lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0, 3.0])),
    lambda L: (L.tensor([1, 2]), L.tensor([1, 3])),
    lambda L: (L.tensor([True, False]), L.tensor([True, False])),
    lambda L: (L.tensor([float("nan")]), L.tensor([float("nan")])),
    lambda L: ({"a": L.ones(2), "b": [L.ones(1)]}, {"a": L.ones(2), "b": [L.zeros(1)]}),
    lambda L: ({"a": L.ones(2), "b": (L.ones(1), None)}, {"a": L.ones(2), "b": (L.ones(1), None)}),
    lambda L: (1.0, 1.5),
    lambda L: (1.0, 1.0 + 1e-9),
    lambda L: (3, 3),
    lambda L: (L.tensor(5.0), L.tensor(5.0)),
    lambda L: (L.tensor([1.0, 2.0], dtype=L.float16), L.tensor([1.0, 2.001], dtype=L.float16)),
]


def _outcome(L, pair, **kw):
    try:
        getattr(L.testing, "assert_close")(*pair, **kw)
        return "pass", ""
    except AssertionError as e:
        return "fail", str(e)
    except TypeError as e:
        return "type", str(e)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_assert_close_agrees_with_torch(i):
    for kw in ({}, {"equal_nan": True}, {"check_dtype": False}, {"rtol": 0.1, "atol": 0.0}):
        got, gmsg = _outcome(vk, CASES[i](vk), **kw)
        want, tmsg = _outcome(torch, CASES[i](torch), **kw)
        assert got == want, (i, kw, gmsg, tmsg)
        for fact in ("Mismatched elements", "not close", "not equal", "attribute 'dtype'", "attribute 'shape'",
                     "The failure occurred for item ['b'][0]", "Scalars are not close"):
            assert (fact in gmsg) == (fact in tmsg), (i, kw, fact, gmsg, tmsg)
        if "Mismatched elements" in tmsg:
            assert gmsg.splitlines()[2] == tmsg.splitlines()[2], (gmsg, tmsg)  # "Mismatched elements: 1 / 3 (33.3%)"


def test_assert_close_errors_and_msg():
    with pytest.raises(TypeError, match="No comparison pair"):
        vk.testing.assert_close(vk.ones(2), [1.0, 1.0])
    with pytest.raises(ValueError, match="rtol"):
        vk.testing.assert_close(vk.ones(2), vk.ones(2), atol=1e-3)
    with pytest.raises(AssertionError, match="custom"):
        vk.testing.assert_close(vk.ones(2), vk.zeros(2), msg="custom")
    with pytest.raises(AssertionError, match="wrapped: Tensor-likes"):
        vk.testing.assert_close(vk.ones(2), vk.zeros(2), msg=lambda m: "wrapped: " + m)


def test_make_tensor_ranges():
    vk.manual_seed(0)
    f = vk.testing.make_tensor((200,), dtype=vk.float32, device="cpu", low=-1, high=1)
    assert tuple(f.shape) == (200,) and f.dtype == vk.float32 and -1 <= float(f.min()) and float(f.max()) < 1
    i = vk.testing.make_tensor(3, 4, dtype=vk.int64, device="cpu", low=0, high=5, exclude_zero=True)
    values = set(np.unique(i.numpy()).tolist())
    assert tuple(i.shape) == (3, 4) and values <= {1, 2, 3, 4} and 0 not in values
    b = vk.testing.make_tensor((50,), dtype=vk.bool, device="cpu")
    assert b.dtype == vk.bool
    g = vk.testing.make_tensor((2,), dtype=vk.float64, device="cpu", requires_grad=True)
    assert g.requires_grad
    d = vk.testing.make_tensor((1000,), dtype=vk.float32, device="cpu")
    assert -9 <= float(d.min()) and float(d.max()) < 9


def test_random_fork_rng_restores_the_generator():
    vk.random.manual_seed(11)
    before = vk.random.get_rng_state().tolist()
    with vk.random.fork_rng():
        vk.rand(5)
        assert vk.random.get_rng_state().tolist() != before
    assert vk.random.get_rng_state().tolist() == before
    a = vk.rand(3)
    vk.random.set_rng_state(vk.tensor(before))
    assert bool(vk.equal(a, vk.rand(3)))
    with vk.random.fork_rng(enabled=False):
        vk.rand(1)
    assert vk.random.get_rng_state().tolist() != before
    assert vk.random.initial_seed() == 11
