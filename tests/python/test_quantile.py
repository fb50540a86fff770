"""quantile / nanquantile and the method forms of vkml/_stats.py against torch (issue #15 item 4):
values and shapes for every interpolation, dim and keepdim, NaN rows, gradients (float64), the
Vulkan device, and torch's errors."""
import numpy as np
import pytest
import torch

import vkml as vk
from conftest import devices, to_np

MODES = ["linear", "lower", "higher", "midpoint", "nearest"]
RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4, 5))
X[1, 2, 3] = X[1, 2, 1]  # a tie
WITH_NAN = X.copy()
WITH_NAN[0, 1, 2] = np.nan
WITH_NAN[2, 3, :] = np.nan  # a row of NaNs only


def _q(lib, q, dtype):
    return lib.tensor(q, dtype=getattr(lib, dtype)) if isinstance(q, list) else q


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
@pytest.mark.parametrize("q", [0.37, [0.0, 0.25, 0.5, 1.0], [0.5]])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (0, False), (1, True), (-1, False)])
def test_matches_torch(device, fn, q, dim, keepdim):
    for data in (X, WITH_NAN):
        for mode in MODES:
            want = getattr(torch, fn)(torch.tensor(data), _q(torch, q, "float64"), dim=dim, keepdim=keepdim,
                                      interpolation=mode)
            got = getattr(vk, fn)(vk.tensor(data).to(device), _q(vk, q, "float64"), dim=dim, keepdim=keepdim,
                                  interpolation=mode)
            assert tuple(got.shape) == tuple(want.shape), (fn, q, dim, mode)
            np.testing.assert_allclose(to_np(got), want.numpy(), rtol=1e-12, atol=1e-12, equal_nan=True,
                                       err_msg=f"{fn} q={q} dim={dim} {mode}")


@pytest.mark.parametrize("device", devices())
def test_method_forms_and_float32(device):
    data = X.astype(np.float32)
    got = vk.tensor(data).to(device).quantile(vk.tensor([0.1, 0.9]), dim=2)
    want = torch.tensor(data).quantile(torch.tensor([0.1, 0.9]), dim=2)
    np.testing.assert_allclose(to_np(got), want.numpy(), rtol=1e-6, atol=1e-6)
    got = vk.tensor(WITH_NAN).to(device).nanquantile(0.5)
    assert float(got) == pytest.approx(float(torch.tensor(WITH_NAN).nanquantile(0.5)), rel=1e-12)
    zero_d = vk.quantile(vk.tensor(2.5, dtype=vk.float64), 0.5, dim=0)
    assert zero_d.shape == () and float(zero_d) == 2.5


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("mode", MODES)
def test_gradients_match_torch(device, mode):
    q = [0.2, 0.5, 0.75]
    xt = torch.tensor(X, requires_grad=True)
    w = torch.tensor(RNG.standard_normal((3, 3, 5)))
    (torch.quantile(xt, torch.tensor(q, dtype=torch.float64), dim=1, interpolation=mode) * w).sum().backward()
    xv = vk.tensor(X).to(device).requires_grad_()
    (vk.quantile(xv, vk.tensor(q, dtype=vk.float64), dim=1, interpolation=mode) * vk.tensor(w.numpy()).to(device)
     ).sum().backward()
    np.testing.assert_allclose(to_np(xv.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_finite_differences():
    x = vk.tensor(RNG.standard_normal((4, 6)), requires_grad=True)
    assert vk.autograd.gradcheck(lambda t: vk.quantile(t, vk.tensor([0.3, 0.8], dtype=vk.float64), dim=1), (x,))


def test_errors_as_torch():
    x = vk.tensor(X)
    cases = [
        (lambda L, t: L.quantile(t.to(L.int64), 0.5), RuntimeError),  # integer input
        (lambda L, t: L.quantile(t, 1.5), RuntimeError),  # q out of range
        (lambda L, t: L.quantile(t, L.tensor([0.5], dtype=L.float32)), RuntimeError),  # q dtype
        (lambda L, t: L.quantile(t, L.tensor([[0.5]], dtype=L.float64)), RuntimeError),  # q 2-D
        (lambda L, t: L.quantile(t, 0.5, dim=3), IndexError),
        (lambda L, t: L.quantile(t, 0.5, interpolation="cubic"), (RuntimeError, ValueError)),
        (lambda L, t: L.quantile(t[:, :0], 0.5, dim=1), RuntimeError),  # empty
    ]
    for make, kind in cases:
        with pytest.raises(kind):
            make(torch, torch.tensor(X))
        with pytest.raises(kind):
            make(vk, x)


def test_bitwise_not_addmm_equal_detach_as_torch():
    for data in ([True, False], [0, 5, -7, 2**40]):
        want = torch.bitwise_not(torch.tensor(data))
        np.testing.assert_array_equal(to_np(vk.bitwise_not(vk.tensor(data))), want.numpy())
        t = vk.tensor(data)
        t.bitwise_not_()
        np.testing.assert_array_equal(to_np(t), want.numpy())
    with pytest.raises(RuntimeError):
        vk.tensor([1.0]).bitwise_not()
    a, b, c = (RNG.standard_normal(s) for s in ((2, 3), (2, 4), (4, 3)))
    want = torch.tensor(a).addmm(torch.tensor(b), torch.tensor(c), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(to_np(vk.tensor(a).addmm(vk.tensor(b), vk.tensor(c), beta=0.5, alpha=2.0)),
                               want.numpy(), rtol=1e-12)
    t = vk.tensor(a)
    t.addmm_(vk.tensor(b), vk.tensor(c))
    np.testing.assert_allclose(to_np(t), (torch.tensor(a) + torch.tensor(b) @ torch.tensor(c)).numpy(), rtol=1e-12)
    assert vk.tensor(a).equal(vk.tensor(a)) and not vk.tensor(a).equal(vk.tensor(a) + 1)
    x = vk.tensor(a, requires_grad=True)
    assert not vk.detach(x).requires_grad
