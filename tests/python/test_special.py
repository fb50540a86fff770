"""vk.special (issue #15) against torch.special 2.13: values in float32 and float64 over each
function's domain and at its edges (0, negative, +-inf, NaN, large |x|), gradients against
torch's and against float64 central differences, the tails where the composites keep their
precision (log_ndtr to x = -60, ndtri to p = 5e-324, erfcx to x = 1e10), number arguments, integer
promotion and the typed errors."""

import math

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import check_fd, devices, to_np

INF, NAN = float("inf"), float("nan")
DTYPES = ["float32", "float64"]
DEVICES = devices()
RTOL = {"float32": 2e-6, "float64": 1e-13}

# name -> (lo, hi) of random inputs inside the domain, edge values
UNARY = {
    "expit": (-20, 20, [0.0, -0.0, -100.0, 100.0, -750.0, INF, -INF, NAN]),
    "logit": (0.01, 0.99, [0.0, 1.0, 0.5, 1e-30, 1.5, -0.5, NAN]),
    "erf": (-4, 4, [0.0, -0.0, 1e-30, 6.0, -6.0, INF, -INF, NAN]),
    "erfc": (-4, 4, [0.0, -0.0, 10.0, 26.0, -6.0, INF, -INF, NAN]),
    "erfinv": (-0.99, 0.99, [0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 1e-30, NAN]),
    "exp2": (-10, 10, [0.0, -0.0, 127.0, -150.0, 1100.0, -1100.0, INF, -INF, NAN]),
    "expm1": (-5, 5, [0.0, -0.0, 1e-30, -1e-30, 100.0, -100.0, INF, -INF, NAN]),
    "log1p": (-0.9, 5, [0.0, -0.0, 1e-30, -1.0, -2.0, 1e30, INF, NAN]),
    "gammaln": (0.1, 20, [1.0, 2.0, 0.0, -1.0, -2.5, 1e10, INF, -INF, NAN]),
    "digamma": (0.1, 20, [1.0, 0.5, -0.5, -1.0, 1e10, INF, NAN]),
    "psi": (0.1, 20, [1.0, 0.5, -0.5, -1.0, 1e10, INF, NAN]),
    "sinc": (-5, 5, [0.0, -0.0, 1.0, -2.0, 1e-20, 1e10, INF, NAN]),
    "entr": (0.01, 5, [0.0, -0.0, -1.0, 1e-30, 1e30, INF, -INF, NAN]),
    # torch's own ndtr loses the left tail below x ~ -5 (test_ndtr_left_tail_... below)
    "ndtr": (-5, 5, [0.0, -0.0, -4.0, 8.0, 40.0, INF, -INF, NAN]),
    "log_ndtr": (-30, 8, [0.0, -0.0, -30.0, -40.0, -1e3, 10.0, 40.0, INF, -INF, NAN]),
    "ndtri": (0.01, 0.99, [0.0, 1.0, 0.5, 1e-30, 1 - 1e-7, -0.5, 1.5, NAN]),
    "erfcx": (-5, 30, [0.0, -0.0, -5.0, 5.0, 12.0, 1e3, 1e10, INF, -INF, NAN]),
}


def _inputs(name, dtype, seed=0):
    lo, hi, edges = UNARY[name]
    x = np.random.default_rng(seed).uniform(lo, hi, 64)
    return np.concatenate([x, edges]).astype(dtype)


def _dev(t, device):
    return t if device == "cpu" else t.to(device)


def _check_device(device, dtype):
    if device == "vulkan" and dtype == "float64" and not vk._C._vulkan_features()["float64"]:
        pytest.skip("no float64 on this device")


def _close(actual, expected, dtype, rtol=None, atol=0.0, what=""):
    a, e = to_np(actual), to_np(expected)
    assert a.shape == e.shape and str(a.dtype) == str(e.dtype), (what, a.shape, e.shape, a.dtype, e.dtype)
    np.testing.assert_allclose(a, e, rtol=rtol or RTOL[dtype], atol=max(atol, np.finfo(e.dtype).tiny),
                               equal_nan=True, err_msg=what)


def test_module_is_importable_both_ways():
    import vkml.special as sp

    assert sp is vk.special
    for name in vk.special.__all__:
        assert callable(getattr(vk.special, name)), name
        assert hasattr(torch.special, name), name


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_match_torch(name, dtype, device):
    _check_device(device, dtype)
    x = _inputs(name, dtype)
    got = getattr(vk.special, name)(_dev(vk.tensor(x), device))
    want = getattr(torch.special, name)(torch.tensor(x))
    rtol = 4e-6 if name in ("ndtri", "erfcx") and dtype == "float32" else None
    # torch's ndtr is 0.5 * (1 + erf(x / sqrt 2)): absolute precision only (its left tail is
    # checked against erfc below)
    atol = 2 * np.finfo(dtype).eps if name == "ndtr" else 0.0
    _close(got, want, dtype, rtol, atol=atol, what=f"special.{name} {dtype} {device}")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients_match_torch(name):
    lo, hi, _ = UNARY[name]
    x = np.random.default_rng(1).uniform(lo, hi, 32)
    g = np.random.default_rng(2).uniform(-1, 1, 32)
    xv = vk.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    getattr(vk.special, name)(xv).backward(vk.tensor(g))
    getattr(torch.special, name)(xt).backward(torch.tensor(g))
    # digamma's derivative is the core's polygamma(1), within 1e-9 of torch's
    rtol = 1e-9 if name in ("digamma", "psi") else 1e-12
    _close(xv.grad, xt.grad, "float64", rtol=rtol, what=f"d special.{name}")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients_match_central_differences(name):
    lo, hi, _ = UNARY[name]
    x = np.random.default_rng(3).uniform(lo, hi, 8)
    check_fd(getattr(vk.special, name), [x], rtol=1e-5, atol=1e-8)


def test_log_ndtr_far_left_tail_matches_torch_to_minus_60():
    # float64 erfc underflows near x = -38; the asymptotic series carries on. 1e-14 relative.
    x = np.concatenate([np.linspace(-60, -5, 2001), [-1e5, -1e150]])
    got = vk.special.log_ndtr(vk.tensor(x))
    _close(got, torch.special.log_ndtr(torch.tensor(x)), "float64", rtol=1e-14)
    x32 = np.linspace(-30, -3, 1001).astype("float32")
    _close(vk.special.log_ndtr(vk.tensor(x32)), torch.special.log_ndtr(torch.tensor(x32)),
           "float32", rtol=1e-6)


def test_log_ndtr_gradient_in_the_tails_is_finite_and_matches_torch():
    x = np.array([-60.0, -38.0, -21.0, -20.0, -19.0, 0.0, 9.0, 30.0])
    xv, xt = vk.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    vk.special.log_ndtr(xv).sum().backward()
    torch.special.log_ndtr(xt).sum().backward()
    _close(xv.grad, xt.grad, "float64", rtol=1e-12)


def test_log_ndtr_gradient_far_left_does_not_cancel():
    # phi(x) / ndtr(x) = -x / (1 - 1/x^2 + 3/x^4 ...): 10000.0001 - 2e-12 at x = -1e4, where
    # exp(-x^2/2 - log_ndtr(x)) loses 8 digits (torch's 10000.000154 does)
    xv = vk.tensor([-1e4, -1e3], dtype=vk.float64, requires_grad=True)
    vk.special.log_ndtr(xv).sum().backward()
    np.testing.assert_allclose(to_np(xv.grad), [1e4 + 1e-4 - 2e-12, 1e3 + 1e-3 - 2e-9], rtol=1e-15)


def test_ndtri_small_p_keeps_precision_erfinv_would_lose():
    # sqrt(2) * erfinv(2p - 1) is -inf or rounding noise here: 2p - 1 rounds to -1.
    p = np.concatenate([np.logspace(-307, -2, 2000), [1e-320, 5e-324]])
    got = vk.special.ndtri(vk.tensor(p))
    _close(got, torch.special.ndtri(torch.tensor(p)), "float64", rtol=2e-15)
    p32 = np.concatenate([np.logspace(-37, -2, 500), [1e-40, 1e-45]]).astype("float32")
    _close(vk.special.ndtri(vk.tensor(p32)), torch.special.ndtri(torch.tensor(p32)), "float32",
           rtol=1e-6)


def test_ndtri_near_one_and_round_trip_through_ndtr():
    p = 1.0 - np.logspace(-16, -1, 300)
    _close(vk.special.ndtri(vk.tensor(p)), torch.special.ndtri(torch.tensor(p)), "float64")
    x = np.linspace(-37, 0, 500)  # (right of 0, ndtr(x) rounds towards 1 and x's digits go)
    back = vk.special.ndtri(vk.special.ndtr(vk.tensor(x)))
    np.testing.assert_allclose(to_np(back), x, rtol=1e-12)


def test_ndtri_gradient_for_small_p():
    p = np.array([1e-300, 1e-100, 1e-10, 0.3, 0.5, 0.9])
    pv, pt = vk.tensor(p, requires_grad=True), torch.tensor(p, requires_grad=True)
    vk.special.ndtri(pv).sum().backward()
    torch.special.ndtri(pt).sum().backward()
    _close(pv.grad, pt.grad, "float64", rtol=1e-12)


def test_ndtr_left_tail_keeps_relative_precision_where_torch_ndtr_does_not():
    # torch 2.13's ndtr gives 0.0 below x ~ -8.3 (float64) and 2.98e-7 for 2.87e-7 at x = -5
    # (float32); 0.5 * erfc(-x / sqrt 2) is the reference (torch's erfc keeps the tail).
    x = np.linspace(-37, -5, 500)
    want = 0.5 * torch.special.erfc(torch.tensor(-x / math.sqrt(2)))
    # (2 z^2 eps = 1.5e-13 at z = 26: the rounding of -x / sqrt 2 differs between the two)
    _close(vk.special.ndtr(vk.tensor(x)), want, "float64", rtol=5e-13)
    x32 = np.linspace(-13, -5, 200).astype("float32")
    want32 = (0.5 * torch.special.erfc(torch.tensor(-x32.astype("float64") / math.sqrt(2)))).float()
    _close(vk.special.ndtr(vk.tensor(x32)), want32, "float32", rtol=1e-5)


def test_erfcx_is_more_accurate_than_the_direct_product():
    # Against torch's float64 erfcx (5e-14 relative), rounded: float32 within 2 ulp; float64
    # agrees with torch's far tail (x = 1e10, where exp(x^2) erfc(x) would be inf * 0).
    x32 = np.linspace(-9, 40, 2000).astype("float32")
    want = torch.special.erfcx(torch.tensor(x32.astype("float64"))).float()
    _close(vk.special.erfcx(vk.tensor(x32)), want, "float32", rtol=2.5e-7)
    x = np.concatenate([np.linspace(-26, 60, 2000), [1e5, 1e10, 1e300]])
    _close(vk.special.erfcx(vk.tensor(x)), torch.special.erfcx(torch.tensor(x)), "float64",
           rtol=1e-13)


def test_entr_gradient_at_zero_and_below_is_torchs():
    x = np.array([0.0, -1.0, 2.0])
    xv, xt = vk.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    vk.special.entr(xv).sum().backward()
    torch.special.entr(xt).sum().backward()
    _close(xv.grad, xt.grad, "float64")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_binary_values_and_gradients_match_torch(name, dtype):
    edges_x = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, -2.0, 2.0, NAN, 0.0]
    edges_y = [-1.0, NAN, 3.0, 0.0, -1.0, NAN, INF, -INF, 1.0, INF]
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(-3, 3, 32), edges_x]).astype(dtype)
    y = np.concatenate([rng.uniform(0.1, 3, 32), edges_y]).astype(dtype)
    xv, yv = vk.tensor(x, requires_grad=True), vk.tensor(y, requires_grad=True)
    xt, yt = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    got, want = getattr(vk.special, name)(xv, yv), getattr(torch.special, name)(xt, yt)
    _close(got, want, dtype, what=name)
    got.sum().backward()
    want.sum().backward()
    _close(xv.grad, xt.grad, dtype, what=f"d{name}/dx")
    _close(yv.grad, yt.grad, dtype, what=f"d{name}/dy")


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_binary_take_a_number_on_either_side_and_broadcast(name):
    y = np.array([[0.5], [2.0]])
    x = np.array([1, 2, 3])
    f, g = getattr(vk.special, name), getattr(torch.special, name)
    _close(f(2.0, vk.tensor(y)), g(2.0, torch.tensor(y)), "float64")
    _close(f(vk.tensor(y), 0.5), g(torch.tensor(y), 0.5), "float64")
    _close(f(vk.tensor(x), vk.tensor(y)), g(torch.tensor(x), torch.tensor(y)), "float64")
    _close(f(3, vk.tensor(x)), g(3, torch.tensor(x)), "float32")  # integers: the default dtype
    check_fd(f, [np.array([[0.5, 2.0]]), np.array([[1.0], [3.0]])], rtol=1e-6)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_binary_of_two_numbers_is_a_type_error(name):
    with pytest.raises(TypeError, match=name):
        getattr(vk.special, name)(1.0, 2.0)


@pytest.mark.parametrize("name", ["entr", "ndtr", "log_ndtr", "ndtri", "erfcx"])
def test_composites_reject_non_tensors_and_promote_integers(name):
    with pytest.raises(TypeError, match=f"special.{name}"):
        getattr(vk.special, name)([0.5])
    i = np.array([0, 1, 2])
    got = getattr(vk.special, name)(vk.tensor(i))
    _close(got, getattr(torch.special, name)(torch.tensor(i)), "float32", rtol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_matches_torch(n):
    # the core's polygamma: within 1e-9 of torch; at +inf it gives the limit 0 where torch 2.13
    # gives NaN for n >= 2, so inf is not among the edges
    x = np.concatenate([np.random.default_rng(5).uniform(0.1, 10, 32), [1.0, -0.5, 1e10, NAN]])
    _close(vk.special.polygamma(n, vk.tensor(x)), torch.special.polygamma(n, torch.tensor(x)),
           "float64", rtol=1e-9)
    check_fd(lambda t: vk.special.polygamma(n, t), [x[:6]], rtol=1e-5)


@pytest.mark.parametrize("p", [1, 2, 5])
def test_multigammaln_matches_torch(p):
    x = np.random.default_rng(6).uniform(p, p + 10, 16)
    xv, xt = vk.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = vk.special.multigammaln(xv, p), torch.special.multigammaln(xt, p)
    _close(got, want, "float64")
    got.sum().backward()
    want.sum().backward()
    _close(xv.grad, xt.grad, "float64")


@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_with_decimals_matches_torch(decimals, dtype):
    x = np.concatenate([np.random.default_rng(7).uniform(-2000, 2000, 64),
                        [0.5, 1.5, 2.5, -0.5, 1250.0, 1.2345, INF, -INF, NAN]]).astype(dtype)
    _close(vk.special.round(vk.tensor(x), decimals=decimals),
           torch.special.round(torch.tensor(x), decimals=decimals), dtype)
    xv = vk.tensor(x[:4], requires_grad=True)
    vk.special.round(xv, decimals=decimals).sum().backward()
    assert np.all(to_np(xv.grad) == 0.0)  # as torch: round has a zero gradient


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_family_with_dtype_matches_torch(name):
    x = np.random.default_rng(8).normal(size=(3, 5)).astype("float32")
    for dim in (0, 1, -1):
        _close(getattr(vk.special, name)(vk.tensor(x), dim),
               getattr(torch.special, name)(torch.tensor(x), dim), "float32", rtol=1e-6)
        _close(getattr(vk.special, name)(vk.tensor(x), dim, dtype=vk.float64),
               getattr(torch.special, name)(torch.tensor(x), dim, dtype=torch.float64), "float64",
               rtol=1e-12)
    check_fd(lambda t: getattr(vk.special, name)(t, 1), [x.astype("float64")])


def test_logsumexp_logit_eps_and_sinc_gradients():
    x = np.random.default_rng(9).normal(size=(4, 3))
    _close(vk.special.logsumexp(vk.tensor(x), 1, keepdim=True),
           torch.special.logsumexp(torch.tensor(x), 1, keepdim=True), "float64")
    p = np.array([0.001, 0.2, 0.5, 0.95, 0.999])
    for eps in (None, 0.01):
        pv, pt = vk.tensor(p, requires_grad=True), torch.tensor(p, requires_grad=True)
        vk.special.logit(pv, eps).sum().backward()
        torch.special.logit(pt, eps).sum().backward()
        _close(pv.grad, pt.grad, "float64", what=f"logit eps={eps}")
    s = np.array([0.0, 1e-9, 0.5, 2.0])
    sv, st = vk.tensor(s, requires_grad=True), torch.tensor(s, requires_grad=True)
    vk.special.sinc(sv).sum().backward()
    torch.special.sinc(st).sum().backward()
    _close(sv.grad, st.grad, "float64", rtol=1e-9)
