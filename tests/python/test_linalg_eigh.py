"""torch.linalg.eigh / eigvalsh (#15 linalg): the eigh op (cyclic Jacobi rotations, CPU and Vulkan
kernels). Eigenvalues against torch's (LAPACK's) on both devices, float32 and float64, batched,
either triangle; eigenvectors up to sign (LAPACK leaves the sign to its algorithm; vkml makes each
vector's largest component positive); gradients of sign-invariant losses against torch's and
central differences, and second order; bad input as typed errors."""
import numpy as np
import pytest
import torch

import vkml as vk
from conftest import check_fd, devices, to_np

TOL = {"float64": 1e-11, "float32": 3e-5}


def _sym(shape, seed, dtype="float64"):
    x = np.random.default_rng(seed).standard_normal(shape)
    return (x + np.swapaxes(x, -1, -2)).astype(dtype)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 6, 6), (2, 1, 9, 9), (24, 24),
                                   (0, 3, 3)])
def test_eigh_matches_torch_up_to_sign(device, dtype, shape):
    a = _sym(shape, 1, dtype)
    L, V = vk.linalg.eigh(vk.tensor(a, device=device))
    tL, tV = torch.linalg.eigh(torch.tensor(a))
    assert L.device.type == device and V.shape == tV.shape and L.shape == tL.shape
    L, V, tL, tV = to_np(L), to_np(V), tL.numpy(), tV.numpy()
    scale = max(1.0, float(np.abs(tL).max())) if tL.size else 1.0
    np.testing.assert_allclose(L, tL, atol=TOL[dtype] * scale, rtol=0)
    sign = np.sign(np.sum(V * tV, axis=-2, keepdims=True))
    np.testing.assert_allclose(V, tV * sign, atol=TOL[dtype] * 50, rtol=0)
    if V.size:  # the sign convention: each vector's largest component is positive
        big = np.take_along_axis(V, np.abs(V).argmax(-2)[..., None, :], -2)
        assert (big > 0).all()


@pytest.mark.parametrize("device", devices())
def test_eigh_reads_one_triangle_and_eigvalsh(device):
    a = _sym((4, 4), 2)
    junk = a.copy()
    junk[np.triu_indices(4, 1)] = 99.0  # the upper triangle is not read with UPLO='L'
    got = vk.linalg.eigvalsh(vk.tensor(junk, device=device))
    np.testing.assert_allclose(to_np(got), np.linalg.eigvalsh(a), atol=1e-12)
    junk_u = a.copy()
    junk_u[np.tril_indices(4, -1)] = -7.0
    got = vk.linalg.eigh(vk.tensor(junk_u, device=device), UPLO="U").eigenvalues
    np.testing.assert_allclose(to_np(got), np.linalg.eigvalsh(a), atol=1e-12)


@pytest.mark.parametrize("device", devices())
def test_eigh_gradients_match_torch(device):
    a = _sym((2, 5, 5), 3)
    w = np.random.default_rng(4).standard_normal((2, 5))
    m = np.random.default_rng(5).standard_normal((2, 5, 5))

    def loss(lib, A):
        L, V = lib.linalg.eigh(A)
        # sign-invariant in V: V diag(w) V^T, weighted
        return (L * lib.tensor(w, device=A.device.type if lib is vk else "cpu")).sum() + \
            ((V * lib.tensor(w, device=A.device.type if lib is vk else "cpu").unsqueeze(-2)) @ V.mT
             * lib.tensor(m, device=A.device.type if lib is vk else "cpu")).sum()

    va = vk.tensor(a, device=device, requires_grad=True)
    ta = torch.tensor(a, requires_grad=True)
    loss(vk, va).backward()
    loss(torch, ta).backward()
    np.testing.assert_allclose(to_np(va.grad), ta.grad.numpy(), atol=1e-9)


def test_eigh_gradients_match_central_differences_and_second_order():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 4))

    def f(t):
        L, V = vk.linalg.eigh(t + t.mT)
        return L * 0.3 + (V * V).sum(-2) + (V @ V.mT).sum(-1)

    check_fd(f, [x], rtol=1e-6, atol=1e-7)
    xt = vk.tensor(x, requires_grad=True)
    assert vk.autograd.gradgradcheck(lambda t: vk.linalg.eigvalsh(t + t.mT) ** 2, (xt,))


def test_eigh_bad_input_is_typed():
    with pytest.raises(vk.ShapeError, match="eigh"):
        vk.linalg.eigh(vk.zeros(2, 3))
    with pytest.raises(vk.DTypeError, match="eigh"):
        vk.linalg.eigh(vk.zeros(2, 2, dtype=vk.int64))
    with pytest.raises(RuntimeError, match="UPLO"):
        vk.linalg.eigh(vk.zeros(2, 2), UPLO="X")
    if "vulkan" in devices():
        with pytest.raises(vk.SizeError, match="eigh.*65 x 65.*cpu"):
            vk.linalg.eigh(vk.zeros(65, 65, device="vulkan"))


def test_eigh_of_repeated_eigenvalues_and_diagonal_matrices():
    # the identity: nothing to rotate; a diagonal matrix: sorted, unit vectors
    L, V = vk.linalg.eigh(vk.eye(3, dtype=vk.float64))
    assert to_np(L).tolist() == [1.0, 1.0, 1.0] and np.allclose(to_np(V), np.eye(3))
    L, V = vk.linalg.eigh(vk.tensor(np.diag([3.0, -1.0, 2.0])))
    assert to_np(L).tolist() == [-1.0, 2.0, 3.0]
    np.testing.assert_array_equal(np.abs(to_np(V)), np.eye(3)[:, [1, 2, 0]])
