"""Shared helpers for the vkml Python tests.

PyTorch is the oracle (a test dependency only); numpy gives exact reference values; gradients
are also checked against central finite differences computed here in Python.
"""

import os

import numpy as np
import pytest
import torch  # the oracle: a test dependency (pyproject's [test] extra), never vkml's

import vkml as vk

torch.set_num_threads(1)


def devices():
    """The devices a test runs on: the CPU, and the Vulkan device where there is one. With
    VKML_REQUIRE_VULKAN=1 (CI) a missing Vulkan device fails the test module, never skips it."""
    out = ["cpu"]
    if vk.vulkan.is_available():
        out.append("vulkan")
    elif os.environ.get("VKML_REQUIRE_VULKAN") == "1":
        raise RuntimeError("VKML_REQUIRE_VULKAN=1 but the vulkan device is not available")
    return out


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """Runs a test at one and at two threads of vkml's pool (restored after)."""
    before = vk.get_num_threads()
    vk.set_num_threads(request.param)
    yield request.param
    vk.set_num_threads(before)


def same_bits(a, b, what):
    """Equal values (vkml / torch tensors or numpy arrays), NaN where NaN, zeros of the same sign."""
    a, b = (x if isinstance(x, np.ndarray) else to_np(x) for x in (a, b))
    assert a.dtype == b.dtype and a.shape == b.shape, f"{what}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=what)
    ok = ~np.isnan(a)
    np.testing.assert_array_equal(a[ok], b[ok], err_msg=what)
    np.testing.assert_array_equal(np.signbit(a[ok]), np.signbit(b[ok]), err_msg=what + " (zero signs)")


def to_np(t):
    """numpy copy of a vkml or torch tensor (detached)."""
    if isinstance(t, vk.Tensor):
        return np.array(t.detach().cpu().numpy(), copy=True)
    t = t.detach()
    if t._is_zerotensor():  # torch's symbolic zeros (some second derivatives)
        return np.zeros(tuple(t.shape), dtype=torch.empty(0, dtype=t.dtype).numpy().dtype)
    return t.cpu().numpy().copy()


TOL = {
    # float64: tight. float32: 1e-5 relative (absolute floor scaled by the values' size).
    "float64": dict(rtol=1e-10, atol=1e-10),
    "float32": dict(rtol=1e-5, atol=1e-5),
}


def assert_close(actual, expected, dtype="float64", what="", scale_atol=True):
    a = to_np(actual) if not isinstance(actual, np.ndarray) else actual
    e = to_np(expected) if not isinstance(expected, np.ndarray) else expected
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    tol = dict(TOL[dtype])
    if scale_atol and e.size and np.issubdtype(e.dtype, np.floating):
        finite = np.abs(e[np.isfinite(e)])
        if finite.size:
            tol["atol"] = tol["atol"] * max(1.0, float(finite.max()))
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        np.testing.assert_array_equal(a, e, err_msg=what)
    else:
        np.testing.assert_allclose(a, e, err_msg=what, equal_nan=True, **tol)


def numeric_grad(f, arrays, upstream, eps=1e-6):
    """Central differences of sum(f(*arrays) * upstream) w.r.t. every array (float64 numpy).

    f maps numpy float64 arrays to a vkml tensor (evaluated under no_grad)."""
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        flat = a.reshape(-1)
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + eps
            with vk.no_grad():
                plus = float(np.sum(to_np(f(*arrays)) * upstream))
            flat[i] = orig - eps
            with vk.no_grad():
                minus = float(np.sum(to_np(f(*arrays)) * upstream))
            flat[i] = orig
            g.reshape(-1)[i] = (plus - minus) / (2 * eps)
        grads.append(g)
    return grads


def check_fd(f, arrays, rtol=1e-6, atol=1e-7, seed=0):
    """Analytic gradients of f (vkml backward) against numeric_grad, in float64."""
    rng = np.random.default_rng(seed)
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    xs = [vk.tensor(a, requires_grad=True) for a in arrays]
    y = f(*xs)
    upstream = rng.uniform(-1.0, 1.0, size=y.shape)
    y.backward(vk.tensor(upstream))
    num = numeric_grad(lambda *arrs: f(*[vk.tensor(a) for a in arrs]), arrays, upstream)
    for k, (x, n) in enumerate(zip(xs, num)):
        assert x.grad is not None, f"input {k} got no gradient"
        np.testing.assert_allclose(to_np(x.grad), n, rtol=rtol, atol=atol,
                                   err_msg=f"input {k}: analytic vs central differences")
