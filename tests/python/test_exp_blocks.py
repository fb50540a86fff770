"""The element-wise exp of a contiguous float32 tensor runs blocks of 256 whose every x lies in
[-87, 88] without exp's clamps and two-step scaling, and any other block through exp itself. Both
must give exp's bits: the strided path (every element through exp) is the reference, and the values
at the range's edges (subnormal results, the last finite ones, inf, NaN) go into blocks that would
be wrong if the range check let them through.
"""

import numpy as np
import pytest

import vkml as vk

EDGES = [-87.9, -87.5, -87.0, -86.99, 88.0, 88.5, 88.72, 88.73, 89.0, -104.0, -1e4, 1e4,
         np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30]


def _bits(t):
    return t.numpy().view(np.uint32)


@pytest.mark.parametrize("n", [1, 255, 256, 257, 4096 + 3, 70000])
def test_contiguous_exp_blocks_match_the_strided_exp(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 30).astype(np.float32)
    x[rng.integers(0, n, size=min(n, 40))] = rng.choice(np.array(EDGES, np.float32), size=min(n, 40))
    if n >= 512:
        x[256:512] = rng.uniform(-87, 88, 256).astype(np.float32)  # a block wholly inside
    t = vk.tensor(x)
    strided = vk.tensor(np.stack([x, x], 1))[:, 0]  # not contiguous: exp element by element
    assert n == 1 or not strided.is_contiguous()
    got, want = vk.exp(t), vk.exp(strided)
    np.testing.assert_array_equal(_bits(got), _bits(want.contiguous()))
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    finite = np.isfinite(ref) & (ref > np.finfo(np.float32).tiny) & (ref < np.finfo(np.float32).max)
    np.testing.assert_allclose(got.numpy()[finite], ref[finite], rtol=2.5e-7)


@pytest.mark.parametrize("edge", EDGES)
def test_one_edge_value_in_a_block_of_normal_ones(edge):
    x = np.linspace(-5, 5, 600).astype(np.float32)
    x[300] = edge  # in the second block of 256
    got = vk.exp(vk.tensor(x))
    want = vk.exp(vk.tensor(np.stack([x, x], 1))[:, 0])
    np.testing.assert_array_equal(_bits(got), _bits(want.contiguous()))
    with np.errstate(over="ignore"):
        ref = np.float32(np.exp(np.float64(np.float32(edge))))
    value = got.numpy()[300]
    assert (np.isnan(value) and np.isnan(ref)) or value == pytest.approx(ref, rel=2.5e-7, abs=1e-44)
