"""torch.linalg.svd and what builds on singular values (#15 linalg): the svd op (one-sided Jacobi,
CPU and Vulkan kernels), svdvals, pinv, matrix_rank, lstsq, matrix_norm's 'nuc', 2 and -2, cond
with p None/2/-2, and torch.svd / pinverse / nuclear_norm. Against torch (LAPACK): singular values,
factors up to sign, reconstruction, gradients of sign-invariant losses and central differences,
second order; bad input as typed errors."""
import numpy as np
import pytest
import torch

import vkml as vk
from conftest import check_fd, devices, to_np

TOL = {"float64": 1e-11, "float32": 3e-5}


def _mat(shape, seed, dtype="float64"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (3, 5), (2, 6, 6), (2, 1, 7, 4), (24, 16),
                                   (16, 24), (0, 3, 2)])
def test_svd_matches_torch_up_to_sign(device, dtype, shape):
    a = _mat(shape, 1, dtype)
    U, S, Vh = vk.linalg.svd(vk.tensor(a, device=device), full_matrices=False)
    tU, tS, tVh = torch.linalg.svd(torch.tensor(a), full_matrices=False)
    assert U.shape == tU.shape and S.shape == tS.shape and Vh.shape == tVh.shape
    U, S, Vh, tU, tS, tVh = map(to_np, (U, S, Vh, tU, tS, tVh))
    scale = max(1.0, float(tS.max())) if tS.size else 1.0
    np.testing.assert_allclose(S, tS, atol=TOL[dtype] * scale, rtol=0)
    sign = np.sign(np.sum(U * tU, axis=-2, keepdims=True))
    np.testing.assert_allclose(U, tU * sign, atol=TOL[dtype] * 50, rtol=0)
    np.testing.assert_allclose(Vh, tVh * np.swapaxes(sign, -1, -2), atol=TOL[dtype] * 50, rtol=0)
    np.testing.assert_allclose((U * S[..., None, :]) @ Vh, a, atol=TOL[dtype] * 10 * scale)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_full_matrices_are_orthogonal_and_reconstruct(device, shape):
    a = _mat(shape, 2)
    U, S, Vh = vk.linalg.svd(vk.tensor(a, device=device))
    m, n = shape
    assert tuple(U.shape) == (m, m) and tuple(Vh.shape) == (n, n)
    U, S, Vh = to_np(U), to_np(S), to_np(Vh)
    np.testing.assert_allclose(U.T @ U, np.eye(m), atol=1e-12)
    np.testing.assert_allclose(Vh @ Vh.T, np.eye(n), atol=1e-12)
    k = min(m, n)
    np.testing.assert_allclose((U[:, :k] * S) @ Vh[:k], a, atol=1e-12)


@pytest.mark.parametrize("device", devices())
def test_svd_gradients_match_torch(device):
    a = _mat((2, 5, 3), 3)
    w = _mat((2, 3), 4)
    m = _mat((2, 5, 5), 5)

    def loss(lib, A):
        U, S, Vh = lib.linalg.svd(A, full_matrices=False)
        dev = A.device.type if lib is vk else "cpu"
        W, M = lib.tensor(w, device=dev), lib.tensor(m, device=dev)
        return (S * W).sum() + ((U * W.unsqueeze(-2)) @ U.mT * M).sum() + (Vh.mT @ Vh * 0.5).sum()

    va, ta = vk.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    loss(vk, va).backward()
    loss(torch, ta).backward()
    np.testing.assert_allclose(to_np(va.grad), ta.grad.numpy(), atol=1e-9)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_svd_gradients_match_central_differences_and_second_order(shape):
    x = _mat(shape, 6)

    def f(t):
        U, S, Vh = vk.linalg.svd(t, full_matrices=False)
        return S.sum() * 0.3 + (U @ (U.mT * S.unsqueeze(-1))).sum() + (Vh.mT @ Vh).sum(-1).sum()

    check_fd(f, [x], rtol=1e-6, atol=1e-7)
    xt = vk.tensor(x, requires_grad=True)
    assert vk.autograd.gradgradcheck(lambda t: vk.linalg.svdvals(t) ** 2, (xt,))


@pytest.mark.parametrize("device", devices())
def test_pinv_matrix_rank_lstsq_norms_and_cond_match_torch(device):
    a = _mat((2, 6, 4), 7)
    low = a[0] @ _mat((4, 2), 8) @ _mat((2, 4), 9)  # rank 2
    b = _mat((2, 6, 3), 10)
    V, T = (lambda x: vk.tensor(x, device=device)), torch.tensor
    close = lambda v, t: np.testing.assert_allclose(to_np(v), to_np(t), atol=1e-10, rtol=1e-10)
    close(vk.linalg.pinv(V(a)), torch.linalg.pinv(T(a)))
    close(vk.linalg.pinv(V(low)), torch.linalg.pinv(T(low)))
    close(vk.linalg.pinv(V(a), rtol=0.5), torch.linalg.pinv(T(a), rtol=0.5))
    close(vk.linalg.pinv(V(a), atol=1.0), torch.linalg.pinv(T(a), atol=1.0))
    assert vk.linalg.matrix_rank(V(low)).item() == torch.linalg.matrix_rank(T(low)).item() == 2
    assert to_np(vk.linalg.matrix_rank(V(a))).tolist() == [4, 4]
    got, want = vk.linalg.lstsq(V(a), V(b)), torch.linalg.lstsq(T(a), T(b))
    close(got.solution, want.solution)
    assert got.residuals.numel() == 0 and got.singular_values.numel() == 0
    close(vk.linalg.lstsq(V(a[0]), V(b[0, :, 0])).solution, torch.linalg.lstsq(T(a[0]), T(b[0, :, :1])).solution[:, 0])
    for ord in ("nuc", 2, -2):
        close(vk.linalg.matrix_norm(V(a), ord), torch.linalg.matrix_norm(T(a), ord))
        close(vk.linalg.matrix_norm(V(a), ord, dim=(0, 2), keepdim=True),
              torch.linalg.matrix_norm(T(a), ord, dim=(0, 2), keepdim=True))
    close(vk.linalg.norm(V(a[0]), "nuc"), torch.linalg.norm(T(a[0]), "nuc"))
    for p in (None, 2, -2):
        close(vk.linalg.cond(V(a), p), torch.linalg.cond(T(a), p))
    close(vk.nuclear_norm(V(a[0])), torch.nuclear_norm(T(a[0])))
    close(vk.pinverse(V(a[0])), torch.pinverse(T(a[0])))
    U, S, Vm = vk.svd(V(a[0]))
    tU, tS, tV = torch.svd(T(a[0]))
    close(S, tS)
    assert tuple(Vm.shape) == tuple(tV.shape)


def test_norm_gradients_through_singular_values():
    x = _mat((4, 3), 11)
    check_fd(lambda t: vk.linalg.matrix_norm(t, "nuc") + vk.linalg.matrix_norm(t, 2), [x])
    check_fd(lambda t: vk.linalg.pinv(t), [x], rtol=1e-5, atol=1e-6)


def test_svd_bad_input_is_typed():
    with pytest.raises(vk.ShapeError, match="svd"):
        vk.linalg.svd(vk.zeros(3))
    with pytest.raises(vk.DTypeError, match="svd"):
        vk.linalg.svd(vk.zeros(2, 2, dtype=vk.int64))
    with pytest.raises(RuntimeError, match="driver"):
        vk.linalg.svd(vk.zeros(2, 2), driver="gesvd")
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
        vk.zeros(2, 2).lstsq(vk.zeros(2, 2))
    if "vulkan" in devices():
        with pytest.raises(vk.SizeError, match="svd.*65 x 3.*cpu"):
            vk.linalg.svd(vk.zeros(65, 3, device="vulkan"))


def test_svd_of_rank_deficient_and_zero_matrices():
    # a zero singular value leaves zero columns in U and V (torch: an arbitrary orthonormal
    # completion); S, the reconstruction and pinv are torch's
    a = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])
    U, S, Vh = vk.linalg.svd(vk.tensor(a), full_matrices=False)
    np.testing.assert_allclose(to_np(S), torch.linalg.svdvals(torch.tensor(a)).numpy(), atol=1e-12)
    np.testing.assert_allclose((to_np(U) * to_np(S)) @ to_np(Vh), a, atol=1e-12)
    np.testing.assert_allclose(to_np(vk.linalg.pinv(vk.tensor(a))), np.linalg.pinv(a), atol=1e-12)
    assert to_np(vk.linalg.svdvals(vk.zeros(3, 2, dtype=vk.float64))).tolist() == [0.0, 0.0]
