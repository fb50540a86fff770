"""Element-wise maps whose every input is one broadcast value (an expanded scalar): the CPU map
evaluates the op once and fills the output run (backend/cpu/loops.h, map_elements). Regression for
cross_entropy's slow backward (issue 18, Zen 3): scatter_add copied its expanded zero base element
by element through the strided loop, 2.1 of the 9.5 ms of a 4096 x 1024 cross_entropy step. These
check the values that path writes (every element, every dtype the maps take, across the thread
split, NaN and -0.0 kept, strided destinations) against NumPy and torch."""

import numpy as np
import pytest
import torch

import vkml as vk

SHAPES = [(7,), (3, 5), (1000, 1037)]  # the last splits among threads


@pytest.fixture(params=[1, 2])
def threads(request):
    saved = vk.get_num_threads()
    vk.set_num_threads(request.param)
    yield request.param
    vk.set_num_threads(saved)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_all_broadcast_inputs_fill_every_element(shape, dtype, threads):
    dt, npdt = getattr(vk, dtype), np.dtype(dtype)
    a = vk.full((), 5, dtype=dt).expand(*shape)
    b = vk.full((), -3, dtype=dt).expand(*shape)
    np.testing.assert_array_equal((a + b).numpy(), np.full(shape, 2, npdt))
    np.testing.assert_array_equal((a * b).numpy(), np.full(shape, -15, npdt))
    np.testing.assert_array_equal(a.contiguous().numpy(), np.full(shape, 5, npdt))
    np.testing.assert_array_equal(a.to(vk.float64).numpy(), np.full(shape, 5.0))
    if dtype.startswith("float"):
        want = vk.exp(vk.full((1,), 5, dtype=dt)).numpy()[0]  # the same op on one element
        np.testing.assert_array_equal(vk.exp(a).numpy(), np.full(shape, want, npdt))


@pytest.mark.parametrize("shape", SHAPES)
def test_broadcast_nan_and_negative_zero_are_kept(shape, threads):
    nan = vk.full((), float("nan")).expand(*shape)
    assert np.isnan((nan + 1.0).numpy()).all()
    negz = vk.full((), -0.0).expand(*shape).contiguous().numpy()
    assert (negz == 0).all() and np.signbit(negz).all()


def test_broadcast_value_into_strided_destination(threads):
    x = vk.zeros(600, 800)
    x[:, ::2] = 3.0
    want = np.zeros((600, 800), np.float32)
    want[:, ::2] = 3.0
    np.testing.assert_array_equal(x.numpy(), want)


@pytest.mark.parametrize("rows,classes", [(64, 10), (512, 1000)])
def test_cross_entropy_backward_zero_base_matches_torch(rows, classes, threads):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, classes)).astype(np.float32)
    y = rng.integers(0, classes, rows)
    xv = vk.tensor(x, requires_grad=True)
    vk.nn.functional.cross_entropy(xv, vk.tensor(y)).backward()
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.cross_entropy(xt, torch.tensor(y)).backward()
    np.testing.assert_allclose(xv.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-8)
    # a gather's gradient alone: the zero base everywhere but the gathered places
    g = vk.tensor(x, requires_grad=True)
    g.gather(1, vk.tensor(y).reshape(-1, 1)).sum().backward()
    want = np.zeros_like(x)
    want[np.arange(rows), y] = 1.0
    np.testing.assert_array_equal(g.grad.numpy(), want)
