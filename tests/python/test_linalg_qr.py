"""torch.linalg.qr and the Householder family (#15 linalg): the qr and geqrf ops (CPU and Vulkan
kernels, LAPACK geqrf/orgqr's order and signs, so Q and R are torch's to rounding, signs
included), torch.qr, geqrf, householder_product / orgqr and ormqr composed of forward ops.
Against torch (LAPACK): values in every mode, gradients (float64) vs torch and central
differences, second order; bad input as typed errors."""
import numpy as np
import pytest
import torch

import vkml as vk
from conftest import check_fd, devices, to_np

TOL = {"float64": 1e-12, "float32": 2e-5}
SHAPES = [(1, 1), (5, 3), (3, 5), (4, 4), (2, 6, 2), (2, 1, 7, 4), (20, 12), (12, 20), (0, 3, 2),
          (3, 0), (0, 4)]


def _mat(shape, seed, dtype="float64"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", SHAPES)
def test_qr_matches_torch_with_lapacks_signs(device, dtype, mode, shape):
    a = _mat(shape, 1, dtype)
    Q, R = vk.linalg.qr(vk.tensor(a, device=device), mode=mode)
    tQ, tR = torch.linalg.qr(torch.tensor(a), mode=mode)
    assert tuple(Q.shape) == tuple(tQ.shape) and tuple(R.shape) == tuple(tR.shape)
    assert Q.dtype == getattr(vk, dtype) and R.dtype == getattr(vk, dtype)
    np.testing.assert_allclose(to_np(R), tR.numpy(), atol=TOL[dtype] * 10, rtol=0)
    np.testing.assert_allclose(to_np(Q), tQ.numpy(), atol=TOL[dtype] * 10, rtol=0)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (6, 1)])
def test_geqrf_matches_lapack(device, dtype, shape):
    a = _mat(shape, 2, dtype)
    g, tau = vk.geqrf(vk.tensor(a, device=device))
    tg, ttau = torch.geqrf(torch.tensor(a))
    np.testing.assert_allclose(to_np(g), tg.numpy(), atol=TOL[dtype] * 10, rtol=0)
    np.testing.assert_allclose(to_np(tau), ttau.numpy(), atol=TOL[dtype] * 10, rtol=0)
    if shape[-2] < shape[-1]:
        return
    np.testing.assert_allclose(to_np(vk.linalg.householder_product(g, tau)),
                               torch.linalg.householder_product(tg, ttau).numpy(),
                               atol=TOL[dtype] * 10, rtol=0)


def test_columns_already_reduced_are_not_reflected():
    # dlarfg: a column zero below the diagonal has tau 0 (H = I) and keeps its sign in R
    a = np.array([[-2.0, 1.0, 3.0], [0.0, 4.0, 1.0], [0.0, 0.0, -5.0]])
    for device in devices():
        g, tau = vk.geqrf(vk.tensor(a, device=device))
        np.testing.assert_array_equal(to_np(tau), [0.0, 0.0, 0.0])
        Q, R = vk.linalg.qr(vk.tensor(a, device=device))
        np.testing.assert_array_equal(to_np(Q), np.eye(3))
        np.testing.assert_array_equal(to_np(R), a)


def test_nan_in_a_column_spreads_instead_of_vanishing():
    a = np.array([[1.0, 2.0], [np.nan, 3.0], [0.5, 1.0]])
    for device in devices():
        Q, R = vk.linalg.qr(vk.tensor(a, device=device))
        assert np.isnan(to_np(R)[0, 0]) and np.isnan(to_np(Q)).any()


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr_matches_torch(device, left, transpose):
    a = _mat((2, 5, 3), 3)
    c = _mat((2, 5, 4) if left else (2, 4, 5), 4)
    tg, ttau = torch.geqrf(torch.tensor(a))
    want = torch.ormqr(tg, ttau, torch.tensor(c), left=left, transpose=transpose)
    g, tau = vk.geqrf(vk.tensor(a, device=device))
    got = vk.ormqr(g, tau, vk.tensor(c, device=device), left=left, transpose=transpose)
    np.testing.assert_allclose(to_np(got), want.numpy(), atol=1e-12)
    got = g.ormqr(tau, vk.tensor(c, device=device), left, transpose)
    np.testing.assert_allclose(to_np(got), want.numpy(), atol=1e-12)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 4, 6)])
def test_qr_gradients_match_torch(device, shape):
    a = _mat(shape, 5)
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    wq, wr = _mat(shape[:-2] + (m, k), 6), _mat(shape[:-2] + (k, n), 7)

    def loss(lib, A):
        Q, R = lib.linalg.qr(A)
        dev = A.device.type if lib is vk else "cpu"
        WQ, WR = lib.tensor(wq, device=dev), lib.tensor(wr, device=dev)
        return (Q * WQ).sum() + (R * WR).sum() + (R ** 2).sum() * 0.1

    va, ta = vk.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    loss(vk, va).backward()
    loss(torch, ta).backward()
    np.testing.assert_allclose(to_np(va.grad), ta.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4)])
def test_qr_gradients_match_central_differences_and_second_order(shape):
    x = _mat(shape, 8)
    w = _mat(shape, 9)

    def f(t):
        Q, R = vk.linalg.qr(t)
        return (Q.sum(-1) * 0.7).sum() + (R * vk.tensor(w[:R.shape[0]])).sum()

    check_fd(f, [x], rtol=1e-6, atol=1e-7)
    xt = vk.tensor(x, requires_grad=True)
    assert vk.autograd.gradgradcheck(lambda t: vk.linalg.qr(t).R.sum(0), (xt,))


def test_householder_product_gradients_in_both_inputs_match_torch():
    a, tau = _mat((5, 3), 10), _mat((2,), 11)
    w = _mat((5, 3), 12)
    va, vt = vk.tensor(a, requires_grad=True), vk.tensor(tau, requires_grad=True)
    ta, tt = torch.tensor(a, requires_grad=True), torch.tensor(tau, requires_grad=True)
    (vk.linalg.householder_product(va, vt) * vk.tensor(w)).sum().backward()
    (torch.linalg.householder_product(ta, tt) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(va.grad), ta.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(to_np(vt.grad), tt.grad.numpy(), atol=1e-12)
    check_fd(lambda x, t: vk.orgqr(x, t) * vk.tensor(w), [a, tau], rtol=1e-6, atol=1e-8)


def test_torch_qr_and_tensor_methods():
    a = _mat((5, 3), 13)
    for some in (True, False):
        Q, R = vk.qr(vk.tensor(a), some=some)
        tQ, tR = torch.qr(torch.tensor(a), some=some)
        np.testing.assert_allclose(to_np(Q), tQ.numpy(), atol=1e-12)
        np.testing.assert_allclose(to_np(R), tR.numpy(), atol=1e-12)
    Q, R = vk.tensor(a).qr()
    assert type(Q).__name__ == "Tensor" and vk.linalg.qr(vk.tensor(a)).Q.shape == Q.shape
    g = vk.tensor(a).geqrf()
    assert tuple(g.a.shape) == (5, 3) and tuple(g.tau.shape) == (3,)
    np.testing.assert_allclose(to_np(g.a.orgqr(g.tau)), to_np(Q), atol=1e-12)


def test_geqrf_is_not_differentiable_and_complete_tall_q_neither():
    x = vk.tensor(_mat((4, 3), 14), requires_grad=True)
    with pytest.raises(NotImplementedError, match="geqrf"):
        vk.geqrf(x).a.sum().backward()
    Q, R = vk.linalg.qr(x, mode="complete")
    R.sum().backward()  # R is differentiable in every mode
    with pytest.raises(NotImplementedError, match="geqrf"):
        Q.sum().backward()


def test_bad_input_is_a_typed_error():
    with pytest.raises(vk.ShapeError, match="linalg.qr"):
        vk.linalg.qr(vk.ones(3))
    with pytest.raises(vk.DTypeError, match="linalg.qr"):
        vk.linalg.qr(vk.ones(3, 3, dtype=vk.int64))
    with pytest.raises(RuntimeError, match="unrecognized mode 'full'"):
        vk.linalg.qr(vk.ones(3, 3), mode="full")
    with pytest.raises(vk.ShapeError, match="householder_product.*greater than or equal"):
        vk.linalg.householder_product(vk.ones(3, 4), vk.ones(3))
    with pytest.raises(vk.ShapeError, match="householder_product.*tau"):
        vk.linalg.householder_product(vk.ones(4, 3), vk.ones(4))
    with pytest.raises(vk.DTypeError, match="householder_product: tau dtype"):
        vk.linalg.householder_product(vk.ones(4, 3), vk.ones(3, dtype=vk.float64))
    with pytest.raises(vk.ShapeError, match="ormqr"):
        vk.ormqr(vk.ones(4, 3), vk.ones(3), vk.ones(5, 2))


@pytest.mark.skipif("vulkan" not in devices(), reason="no Vulkan device")
def test_vulkan_refuses_matrices_beyond_its_loop_budget():
    with pytest.raises(vk.SizeError, match="qr: .*factor them on the cpu"):
        vk.linalg.qr(vk.ones(4, 200, device="vulkan"))
    Q, R = vk.linalg.qr(vk.tensor(_mat((1024, 16), 15), device="vulkan"))
    tQ, tR = torch.linalg.qr(torch.tensor(_mat((1024, 16), 15)))
    np.testing.assert_allclose(to_np(R), tR.numpy(), atol=1e-11)
    np.testing.assert_allclose(to_np(Q), tQ.numpy(), atol=1e-12)
