"""More of torch.linalg (#15 linalg), composed in vkml/linalg.py of the solver family and the
core's ops: diagonal, inv_ex, solve_ex, multi_dot, vander, tensorinv, tensorsolve, matrix_exp and
cond, against torch: values (float64 to 1e-10, float32 to 1e-4), gradients against torch and
finite differences, the Vulkan device, singular matrices and typed errors."""
import numpy as np
import pytest
import torch

import vkml as vk
from conftest import devices, to_np

RNG = np.random.default_rng(1515)


def arr(*shape, scale=1.0):
    return RNG.uniform(-1, 1, size=shape) * scale


def invertible(*shape):
    n = shape[-1]
    return arr(*shape) + 4.0 * np.roll(np.eye(n), 1, axis=1)


def close(v, t, dtype="float64"):
    tol = 1e-10 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(to_np(v), t if isinstance(t, np.ndarray) else to_np(t), rtol=tol, atol=tol)


CASES = [
    ("diagonal", lambda m, a: m.linalg.diagonal(a, offset=1), lambda: [arr(2, 3, 4)]),
    ("diagonal-dims", lambda m, a: m.linalg.diagonal(a, dim1=0, dim2=2), lambda: [arr(3, 2, 3)]),
    ("inv_ex", lambda m, a: tuple(m.linalg.inv_ex(a)), lambda: [invertible(2, 3, 3)]),
    ("solve_ex", lambda m, a, b: tuple(m.linalg.solve_ex(a, b)), lambda: [invertible(3, 3), arr(3, 2)]),
    ("solve_ex-vector", lambda m, a, b: tuple(m.linalg.solve_ex(a, b)), lambda: [invertible(2, 3, 3), arr(2, 3)]),
    ("solve_ex-right", lambda m, a, b: tuple(m.linalg.solve_ex(a, b, left=False)),
     lambda: [invertible(3, 3), arr(4, 3)]),
    ("multi_dot", lambda m, a, b, c, d: m.linalg.multi_dot([a, b, c, d]),
     lambda: [arr(2, 7), arr(7, 3), arr(3, 9), arr(9, 2)]),
    ("multi_dot-vectors", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), lambda: [arr(4), arr(4, 5), arr(5)]),
    ("multi_dot-two", lambda m, a, b: m.linalg.multi_dot((a, b)), lambda: [arr(3, 4), arr(4)]),
    ("vander", lambda m, x: m.linalg.vander(x), lambda: [arr(4)]),
    ("vander-batched-N", lambda m, x: m.linalg.vander(x, N=5), lambda: [arr(2, 3)]),
    ("tensorinv", lambda m, a: m.linalg.tensorinv(a, ind=1), lambda: [invertible(4, 4).reshape(4, 2, 2)]),
    ("tensorinv-2", lambda m, a: m.linalg.tensorinv(a), lambda: [invertible(6, 6).reshape(2, 3, 6)]),
    ("tensorsolve", lambda m, a, b: m.linalg.tensorsolve(a, b), lambda: [invertible(6, 6).reshape(2, 3, 6), arr(2, 3)]),
    ("tensorsolve-dims", lambda m, a, b: m.linalg.tensorsolve(a, b, dims=(0,)),
     lambda: [invertible(6, 6).reshape(6, 2, 3).transpose(0, 1, 2), arr(2, 3)]),
    ("matrix_exp-small", lambda m, a: m.linalg.matrix_exp(a), lambda: [arr(3, 3, scale=0.1)]),
    ("matrix_exp-scaled", lambda m, a: m.linalg.matrix_exp(a), lambda: [arr(2, 4, 4, scale=6.0)]),
    ("matrix_exp-top", lambda m, a: m.matrix_exp(a), lambda: [arr(3, 3)]),
    ("cond-fro", lambda m, a: m.linalg.cond(a, "fro"), lambda: [invertible(2, 3, 3)]),
    ("cond-1", lambda m, a: m.linalg.cond(a, 1), lambda: [invertible(3, 3)]),
    ("cond-inf", lambda m, a: m.linalg.cond(a, float("inf")), lambda: [invertible(3, 3)]),
    ("cond--1", lambda m, a: m.linalg.cond(a, -1), lambda: [invertible(3, 3)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, fn, make, dtype, device):
    arrays = make()
    vins = [vk.tensor(a, dtype=getattr(vk, dtype)).to(device).requires_grad_(True) for a in arrays]
    tins = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in arrays]
    vout, tout = fn(vk, *vins), fn(torch, *tins)
    vout = vout if isinstance(vout, tuple) else (vout,)
    tout = tout if isinstance(tout, tuple) else (tout,)
    for v, t in zip(vout, tout, strict=True):
        assert tuple(v.shape) == tuple(t.shape), name
        if t.dtype.is_floating_point:
            close(v, t, dtype)
        else:
            assert v.tolist() == t.tolist(), name
    if name.startswith("cond"):
        return  # torch's cond has no working backward (an in-place write into inv_ex's output)
    floats = [k for k, t in enumerate(tout) if t.dtype.is_floating_point]
    ups = [RNG.uniform(-1, 1, size=tuple(tout[k].shape)) for k in floats]
    vg = vk.autograd.grad([vout[k] for k in floats], vins,
                          [vk.tensor(u, dtype=getattr(vk, dtype)).to(device) for u in ups], allow_unused=True)
    tg = torch.autograd.grad([tout[k] for k in floats], tins,
                             [torch.tensor(u, dtype=getattr(torch, dtype)) for u in ups], allow_unused=True)
    for a, b, t in zip(vg, tg, tins):
        close(a, torch.zeros_like(t) if b is None else b, dtype)


@pytest.mark.parametrize("name,fn,make", [
    ("multi_dot", lambda a, b, c: vk.linalg.multi_dot([a, b, c]), lambda: [arr(2, 3), arr(3, 4), arr(4)]),
    ("vander", lambda x: vk.linalg.vander(x, N=4), lambda: [arr(3)]),
    ("matrix_exp", lambda a: vk.linalg.matrix_exp(a), lambda: [arr(3, 3, scale=4.0)]),
    ("tensorsolve", lambda a, b: vk.linalg.tensorsolve(a, b), lambda: [invertible(4, 4).reshape(2, 2, 4), arr(2, 2)]),
    ("cond", lambda a: vk.linalg.cond(a, "fro"), lambda: [invertible(3, 3)]),
], ids=lambda c: c if isinstance(c, str) else "")
def test_gradients_match_finite_differences(name, fn, make):
    ins = [vk.tensor(a, requires_grad=True) for a in make()]
    assert vk.autograd.gradcheck(fn, ins, eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("device", devices())
def test_singular_inv_ex_solve_ex_cond_as_torch(device):
    s = np.stack([np.eye(3), [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]]])
    v, t = vk.tensor(s).to(device), torch.tensor(s)
    got, want = vk.linalg.inv_ex(v), torch.linalg.inv_ex(t)
    assert got.info.tolist() == want.info.tolist() == [0, 3]
    close(got.inverse[0], want.inverse[0])
    assert not np.isfinite(to_np(got.inverse[1])).all()
    with pytest.raises(vk.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        vk.linalg.inv_ex(v, check_errors=True)
    assert vk.linalg.solve_ex(v, vk.ones(2, 3, dtype=vk.float64).to(device)).info.tolist() == [0, 3]
    for p in ("fro", 1, float("inf")):
        assert vk.linalg.cond(v, p).tolist()[1] == torch.linalg.cond(t, p).tolist()[1] == float("inf")


def test_matrix_exp_of_known_matrices():
    # a rotation generator, a nilpotent matrix, zero, an empty batch, inf/NaN
    th = 0.7
    got = vk.linalg.matrix_exp(vk.tensor([[0.0, -th], [th, 0.0]], dtype=vk.float64))
    close(got, np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]))
    close(vk.linalg.matrix_exp(vk.tensor([[0.0, 1.0], [0.0, 0.0]], dtype=vk.float64)), np.array([[1.0, 1.0], [0, 1]]))
    close(vk.linalg.matrix_exp(vk.zeros(3, 3, dtype=vk.float64)), np.eye(3))
    assert tuple(vk.linalg.matrix_exp(vk.zeros(0, 2, 2)).shape) == (0, 2, 2)
    assert np.isnan(to_np(vk.linalg.matrix_exp(vk.tensor([[float("nan"), 0.0], [0.0, 1.0]])))).any()
    big = arr(3, 3, scale=40.0)  # 1-norm ~ 60: scaled by 2^4 and squared back
    np.testing.assert_allclose(to_np(vk.linalg.matrix_exp(vk.tensor(big))),
                               to_np(torch.linalg.matrix_exp(torch.tensor(big))), rtol=1e-9)


@pytest.mark.parametrize("call,err,match", [
    (lambda: vk.linalg.multi_dot([vk.ones(2)]), RuntimeError, r"expected at least 2 tensors but got 1"),
    (lambda: vk.linalg.multi_dot([vk.ones(2, 2), vk.ones(3, 2)]), RuntimeError,
     r"tensors 0 and 1 with shapes \[2, 2\] and \[3, 2\] cannot be multiplied"),
    (lambda: vk.linalg.multi_dot([vk.ones(2, 2, 2), vk.ones(2, 2)]), RuntimeError,
     r"the first tensor must be 1D or 2D but got 3D"),
    (lambda: vk.linalg.multi_dot([vk.ones(2, 2), vk.ones(2), vk.ones(2, 2)]), RuntimeError,
     r"the 1th tensor must be 2D but got 1D"),
    (lambda: vk.linalg.vander(vk.ones(3), N=1), RuntimeError, r"N must be greater than 1"),
    (lambda: vk.linalg.vander(vk.tensor(1.0)), RuntimeError, r"N must be greater than 1"),
    (lambda: vk.linalg.tensorinv(vk.ones(2, 3), 1), RuntimeError, r"3 != 2"),
    (lambda: vk.linalg.tensorinv(vk.ones(2, 2), 0), RuntimeError, r"strictly positive"),
    (lambda: vk.linalg.tensorsolve(vk.ones(2, 3, 5), vk.ones(2, 3)), RuntimeError, r"5 != 6"),
    (lambda: vk.linalg.matrix_exp(vk.ones(2, 3)), vk.ShapeError, r"matrix_exp: A must be batches of square"),
    (lambda: vk.linalg.matrix_exp(vk.ones(2, 2, dtype=vk.int64)), vk.DTypeError, r"matrix_exp: expected a float"),
    (lambda: vk.linalg.cond(vk.ones(2, 3), "fro"), vk.ShapeError, r"cond\(ord=fro\): A must be batches of square"),
])
def test_bad_input_is_a_typed_error(call, err, match):
    with pytest.raises(err, match=match):
        call()
