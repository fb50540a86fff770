"""gelu's forward computes its derivative along with its value when a graph is recorded, and the
backward (without create_graph) multiplies by it instead of evaluating gelu_backward again. The
gradient must not change: against torch and finite differences, at first and second order, on
every device, and bit for bit against gelu_backward, whichever path made it.
"""

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import devices

torch.set_num_threads(1)

X = np.concatenate([np.linspace(-6, 6, 1201), [-13.5, -14.5, -20.0, 9.0, 0.0, -0.0, 1e-20]])


def _vk_grad(x_np, g_np, dtype, device, create_graph=False, transpose=False):
    """gelu's gradient at x_np (or, with transpose, at the strided view x.t() of it, g_np being of
    the view's shape), with respect to the leaf x."""
    x = vk.tensor(x_np, dtype=dtype, device=device).requires_grad_()
    g = vk.tensor(g_np, dtype=dtype, device=device)
    y = vk.nn.functional.gelu(x.t() if transpose else x)
    (dx,) = vk.autograd.grad([y], [x], [g], create_graph=create_graph)
    return x, g, dx


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_gradient_matches_torch(device, dtype):
    g_np = np.random.default_rng(0).standard_normal(X.size)
    _, _, dx = _vk_grad(X, g_np, getattr(vk, dtype), device)
    # float32 against torch's float64: torch's float32 erf is off by up to ~2e-7 absolutely
    # (1e-5 relative near the derivative's zero at x = -0.75), vkml's by a few ulp of the terms
    # (|Phi| + |x phi| ~ 0.45 there, times |g| up to 3).
    g32 = g_np.astype(np.float32).astype(np.float64) if dtype == "float32" else g_np
    xt = torch.tensor(X.astype(dtype).astype(np.float64), requires_grad=True)
    torch.nn.functional.gelu(xt).backward(torch.tensor(g32))
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == "float64" else dict(rtol=1e-6, atol=1.5e-7)
    np.testing.assert_allclose(dx.cpu().numpy(), xt.grad.numpy(), **tol)


def test_gelu_gradient_matches_finite_differences():
    x0 = np.linspace(-4, 4, 33)
    _, _, dx = _vk_grad(x0, np.ones_like(x0), vk.float64, "cpu")
    h = 1e-6
    f = lambda v: vk.nn.functional.gelu(vk.tensor(v, dtype=vk.float64)).numpy()  # noqa: E731
    np.testing.assert_allclose(dx.numpy(), (f(x0 + h) - f(x0 - h)) / (2 * h), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_gelu_gradient_has_gelu_backwards_bits(dtype, layout):
    rng = np.random.default_rng(1)
    n = X.size // 2 * 2
    x_np = X[:n].reshape(2, n // 2)
    strided = layout == "strided"  # gelu of x.t(): a non-contiguous input, two passes
    g_np = rng.standard_normal(x_np.T.shape if strided else x_np.shape)
    x, g, plain = _vk_grad(x_np, g_np, getattr(vk, dtype), "cpu", transpose=strided)
    _, _, built = _vk_grad(x_np, g_np, getattr(vk, dtype), "cpu", True, transpose=strided)
    xin = x.detach().t() if strided else x.detach()
    assert xin.is_contiguous() != strided
    want = vk._C.gelu_backward(g, xin).numpy()
    for got in (plain, built):
        got = got.detach().numpy()
        got = got.T.copy() if strided else got
        same = (got.view(np.uint8) == want.view(np.uint8)).reshape(*got.shape, -1).all(-1)
        assert (same | (np.isnan(got) & np.isnan(want))).all(), np.argwhere(~same)[:5]


@pytest.mark.parametrize("device", devices())
def test_gelu_second_order_matches_torch(device):
    x0 = np.linspace(-3, 3, 25)
    x = vk.tensor(x0, dtype=vk.float64, device=device).requires_grad_()
    (dy,) = vk.autograd.grad([vk.nn.functional.gelu(x).sum()], [x], create_graph=True)
    (d2,) = vk.autograd.grad([(dy * dy).sum()], [x])
    xt = torch.tensor(x0, requires_grad=True)
    (dyt,) = torch.autograd.grad([torch.nn.functional.gelu(xt).sum()], [xt], create_graph=True)
    (d2t,) = torch.autograd.grad([(dyt * dyt).sum()], [xt])
    np.testing.assert_allclose(d2.cpu().numpy(), d2t.numpy(), rtol=1e-11, atol=1e-13)


def test_module_training_step_matches_torch():
    """A Linear + GELU + Linear step, the shape of a transformer's MLP, float32: gradients as
    torch's."""
    rng = np.random.default_rng(2)
    w1, w2 = rng.standard_normal((64, 16)) * 0.3, rng.standard_normal((8, 64)) * 0.3
    xin = rng.standard_normal((32, 16))
    grads = []
    for lib in (vk, torch):
        a = lib.tensor(w1.astype(np.float32), requires_grad=True)
        b = lib.tensor(w2.astype(np.float32), requires_grad=True)
        h = lib.nn.functional.gelu(lib.tensor(xin.astype(np.float32)) @ a.t())
        (h @ b.t()).square().mean().backward()
        grads.append([a.grad.numpy().copy(), b.grad.numpy().copy()])
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
