"""The math family (issue #15, "math ops (#15)") against PyTorch, on the CPU and on the Vulkan
device, in float32 and float64: forward values (within a few ulp of torch), gradients against
torch's, the special values torch handles (inf, NaN, +-0, the edges of each domain, the poles of
lgamma and digamma), integer promotion, the in-place forms and the errors. The finite-difference
gradient checks in float64 are the C++ op sweep's (tests/cpp/cases_math.cpp) and
test_ops_vs_torch.py's."""

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import devices, to_np

INF, NAN = float("inf"), float("nan")


DEVICES = devices()
DTYPES = ["float32", "float64"]

# Relative tolerance of forward values: a few ulp of each dtype (the kernels compute in double;
# float64 results are within a few ulp of libm's).
RTOL = {"float32": 5e-7, "float64": 5e-14}


def _vk(a, device, requires_grad=False):
    t = vk.tensor(a)
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_()
    return t


def _check_device(device, dtype):
    if device == "vulkan":
        if not vk.vulkan.is_available():
            pytest.fail("VKML_REQUIRE_VULKAN=1 but the vulkan device is not available")
        if dtype == "float64" and not vk._C._vulkan_features()["float64"]:
            pytest.skip("no float64 on this device")


def _close(actual, expected, dtype, rtol=None, atol=0.0, what=""):
    a, e = to_np(actual), to_np(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    assert str(a.dtype) == str(e.dtype), f"{what}: dtype {a.dtype} != {e.dtype}"
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        np.testing.assert_array_equal(a, e, err_msg=what)
        return
    tiny = np.finfo(e.dtype).tiny
    np.testing.assert_allclose(a, e, rtol=rtol or RTOL[dtype], atol=max(atol, tiny),
                               equal_nan=True, err_msg=what)


# name -> (lo, hi) of the random inputs (inside the domain), special values
UNARY = {
    "tan": (-1.5, 1.5, [0.0, -0.0, 1.5707963, -1.5707964, 100.0, 1e6, INF, -INF, NAN]),
    "asin": (-1.0, 1.0, [0.0, -0.0, 1.0, -1.0, 1.5, -1.0000001, 1e-30, INF, NAN]),
    "acos": (-1.0, 1.0, [0.0, -0.0, 1.0, -1.0, 1.5, 0.9999999, INF, NAN]),
    "atan": (-8.0, 8.0, [0.0, -0.0, 1.0, -1.0, 1e30, -1e30, 1e-30, INF, -INF, NAN]),
    "sinh": (-5.0, 5.0, [0.0, -0.0, 1e-8, -1e-30, 20.0, 89.0, -89.0, 89.5, 700.0, 720.0, INF, -INF, NAN]),
    "cosh": (-5.0, 5.0, [0.0, -0.0, 1e-8, 20.0, 89.0, -89.0, 89.5, 700.0, 720.0, INF, -INF, NAN]),
    "asinh": (-10.0, 10.0, [0.0, -0.0, 1e-8, -1e-30, 1e20, -1e30, INF, -INF, NAN]),
    "acosh": (1.0, 10.0, [1.0, 1.0000001, 0.5, 0.0, -1.0, 1e20, INF, -INF, NAN]),
    "atanh": (-1.0, 1.0, [0.0, -0.0, 1.0, -1.0, 0.9999999, 1e-8, 1.5, -2.0, INF, NAN]),
    "lgamma": (-4.0, 12.0, [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -2.5, 0.5, 1e-30, 1e30, 3.5e36,
                            1.0000001, 1.9999999, INF, -INF, NAN]),
    "digamma": (-4.0, 12.0, [0.0, -0.0, -1.0, -2.0, -2.5, 1.4616321, 1e-8, 1e10, 1.0, INF, -INF,
                             NAN]),
    "erfinv": (-1.0, 1.0, [0.0, -0.0, 1.0, -1.0, 0.5, 0.9999999, -0.9999, 1e-10, 1.5, -INF,
                           NAN]),
}
ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh"}


def _unary_input(name, dtype, n=64, seed=0):
    lo, hi, special = UNARY[name]
    rng = np.random.default_rng(seed)
    a = rng.uniform(lo, hi, size=n)
    if name in ("lgamma", "digamma"):  # off the poles, where float32 rounding would dominate
        a = np.where(np.abs(a - np.round(a)) < 0.05, a + 0.1, a)
    return np.concatenate([a, np.array(special)]).astype(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_torch(name, dtype, device):
    _check_device(device, dtype)
    a = _unary_input(name, dtype)
    got = getattr(vk, name)(_vk(a, device)).cpu()
    # float32 against torch's float64 result rounded to float32: torch's own float32 kernels are
    # a few ulp off in places (digamma near its root), vkml's are the double result rounded
    want = getattr(torch, name)(torch.tensor(a, dtype=torch.float64)).to(getattr(torch, dtype))
    # digamma crosses 0 at 1.46163...: an absolute floor of an ulp of its neighbours there
    atol = 1e-15 if (name == "digamma" and dtype == "float64") else 0.0
    _close(got, want, dtype, atol=atol, what=f"{name} on {device}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradient_matches_torch(name, dtype, device):
    _check_device(device, dtype)
    lo, hi, _ = UNARY[name]
    rng = np.random.default_rng(1)
    a = rng.uniform(max(lo, -0.95) if hi <= 1.0 else lo, min(hi, 0.95) if hi <= 1.0 else hi,
                    size=(3, 5))
    if name == "acosh":
        a = a + 0.1
    if name in ("lgamma", "digamma"):
        a = np.where(np.abs(a - np.round(a)) < 0.1, a + 0.25, a)
    a = a.astype(dtype)
    g = rng.uniform(-1, 1, size=a.shape).astype(dtype)
    x = _vk(a, device, requires_grad=True)
    getattr(vk, name)(x).backward(_vk(g, device))
    t = torch.tensor(a, requires_grad=True)
    getattr(torch, name)(t).backward(torch.tensor(g))
    # digamma's gradient is trigamma, which torch computes to about 1e-9 (6 steps of the
    # recurrence, 4 terms of the asymptotic series); vkml's is within ulps (test below)
    rtol = 2e-5 if dtype == "float32" else (2e-9 if name == "digamma" else 1e-11)
    _close(x.grad.cpu(), t.grad, dtype, rtol=rtol, what=f"d {name} on {device}")


@pytest.mark.parametrize("alias,name", sorted(ALIASES.items()))
def test_aliases_are_the_ops(alias, name):
    a = np.linspace(-0.9, 0.9, 7) if name != "acosh" else np.linspace(1.1, 3, 7)
    x = vk.tensor(a)
    np.testing.assert_array_equal(to_np(getattr(vk, alias)(x)), to_np(getattr(vk, name)(x)))
    np.testing.assert_array_equal(to_np(getattr(x, alias)()), to_np(getattr(x, name)()))


@pytest.mark.parametrize("name", sorted(UNARY) + ["log2", "log10", "exp2", "sinc", "deg2rad",
                                                   "rad2deg", "logit"])
def test_integer_and_bool_inputs_promote_as_torch(name):
    for data in ([1, 2, 3], [True, False]):
        got = getattr(vk, name)(vk.tensor(data))
        want = getattr(torch, name)(torch.tensor(data))
        assert got.dtype == vk.float32, name
        np.testing.assert_allclose(to_np(got), want.numpy(), rtol=1e-6, equal_nan=True)


# ---- the gamma family: polygamma, second derivatives ----

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_polygamma_matches_torch(n, dtype, device):
    _check_device(device, dtype)
    a = np.concatenate([np.linspace(0.05, 30, 40), [1e-3, 1.0, 100.0, 0.0, NAN]])
    if n == 1:  # the reflection below 0 (torch's for n = 1 only), and inf (torch: NaN for n > 1)
        a = np.concatenate([a, [INF, -0.5, -2.3, -1e3 - 0.5, -1.0]])
    a = a.astype(dtype)
    got = vk.polygamma(n, _vk(a, device)).cpu()
    want = torch.polygamma(n, torch.tensor(a, dtype=torch.float64)).to(getattr(torch, dtype))
    if n == 1:  # torch: 1.29e15 at -1 (sin(pi x) rounded), vkml the pole's inf
        want[-1] = INF
    # torch's trigamma (n = 1) is about 1e-9 off; test_polygamma_against_mpmath is the tight one
    rtol = 1e-5 if dtype == "float32" else (2e-9 if n == 1 else 1e-12)
    _close(got, want, dtype, rtol=rtol, what=f"polygamma({n}) on {device}")
    np.testing.assert_array_equal(to_np(vk.tensor(a).polygamma(n)), to_np(vk.polygamma(n, vk.tensor(a))))


@pytest.mark.parametrize("device", DEVICES)
def test_lgamma_second_and_third_derivatives_match_torch(device):
    _check_device(device, "float64")
    a = np.array([0.3, 1.7, 4.2, -0.6, -2.4])
    x = _vk(a, device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    yx, yt = vk.lgamma(x), torch.lgamma(t)
    for order in range(3):  # digamma, polygamma(1), polygamma(2)
        (yx,) = vk.autograd.grad(yx.sum(), x, create_graph=True)
        (yt,) = torch.autograd.grad(yt.sum(), t, create_graph=True)
        _close(yx.detach().cpu(), yt.detach(), "float64", rtol=2e-9 if order == 1 else 1e-11,
               what=f"order {order + 1} on {device}")


@pytest.mark.parametrize("device", DEVICES)
def test_gamma_family_against_mpmath(device):
    # float64 within a few ulp of the true values (mpmath, 40 digits), where torch's trigamma is not
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    _check_device(device, "float64")
    x = np.array([0.3, 0.9, 1.05, 1.5, 1.9999, 2.3, 4.7, 9.9, 13.5, 250.0, -0.6, -2.4, -7.3])
    t = _vk(x, device)
    for name, f, rtol in [("lgamma", lambda v: mpmath.log(abs(mpmath.gamma(v))), 2e-15),
                          ("digamma", mpmath.digamma, 1e-14),
                          ("polygamma1", lambda v: mpmath.polygamma(1, v), 2e-15),
                          ("polygamma3", lambda v: mpmath.polygamma(3, v), 1e-14)]:
        got = vk.polygamma(int(name[-1]), t) if name.startswith("poly") else getattr(vk, name)(t)
        want = np.array([float(f(mpmath.mpf(float(v)))) for v in x])
        np.testing.assert_allclose(to_np(got.cpu()), want, rtol=rtol, atol=1e-300, err_msg=name)
    p = np.array([-0.999, -0.5, 1e-12, 0.3, 0.9, 0.999999])
    want = np.array([float(mpmath.erfinv(mpmath.mpf(float(v)))) for v in p])
    np.testing.assert_allclose(to_np(vk.erfinv(_vk(p, device)).cpu()), want, rtol=4e-15)


def test_polygamma_errors():
    with pytest.raises(RuntimeError, match="negative n"):
        vk.polygamma(-1, vk.tensor([1.0]))
    assert to_np(vk.polygamma(0, vk.tensor([2.0]))) == pytest.approx(to_np(vk.digamma(vk.tensor([2.0]))))


# ---- binary ops and composites ----

def _pair(dtype, seed=2, n=48, lo=-3.0, hi=3.0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(lo, hi, size=n)
    b = rng.uniform(lo, hi, size=n)
    sa = [0.0, -0.0, 0.0, -0.0, 1.0, -1.0, INF, -INF, INF, NAN, 2.0, 0.0, 5.0, -5.0, 1e30, 7.5]
    sb = [0.0, 0.0, -0.0, -0.0, INF, -INF, INF, INF, -INF, 1.0, NAN, 3.0, 0.0, 3.0, 1e-30, -2.0]
    return (np.concatenate([a, sa]).astype(dtype), np.concatenate([b, sb]).astype(dtype))


BINARY = {
    "atan2": RTOL, "fmod": RTOL, "hypot": {"float32": 5e-7, "float64": 1e-15},
    "copysign": RTOL, "logaddexp": {"float32": 1e-6, "float64": 1e-15},
    "logaddexp2": {"float32": 1e-6, "float64": 1e-15}, "xlogy": {"float32": 1e-6, "float64": 1e-15},
    "fmax": RTOL, "fmin": RTOL, "float_power": {"float32": 1e-15, "float64": 1e-15},
    "ldexp": RTOL,
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_matches_torch(name, dtype, device):
    _check_device(device, dtype)
    a, b = _pair(dtype)
    if name == "ldexp":
        b = np.nan_to_num(np.round(b), nan=0.0, posinf=0.0, neginf=0.0).astype(np.int64) * 7
    got = getattr(vk, name)(_vk(a, device), _vk(b, device)).cpu()
    want = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    if name == "fmod" and dtype == "float32":  # exact in float64; torch's float32 fmod(1e30,
        # 1e-30) is NaN (its vectorised a - b trunc(a / b)), C's fmod and vkml's 8.17e-31
        want = torch.fmod(torch.tensor(a).double(), torch.tensor(b).double()).float()
    # an absolute floor of a few ulp of the operands' size (|a|, |b| <= 3 but for the special
    # values): logaddexp and xlogy cancel near 0, in torch's float32 as in vkml's
    atol = 12 * float(np.finfo(dtype).eps)
    _close(got, want, dtype, rtol=BINARY[name][dtype], atol=atol, what=f"{name} on {device}")
    # the method and a Python number as the other operand, where torch takes one
    if name in ("fmod", "copysign", "xlogy", "float_power"):
        got = getattr(_vk(a, device), name)(2.5).cpu()
        _close(got, getattr(torch.tensor(a), name)(2.5), dtype, rtol=BINARY[name][dtype],
               atol=atol, what=f"x.{name}(2.5) on {device}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["atan2", "fmod", "hypot", "copysign", "logaddexp", "logaddexp2",
                                  "xlogy", "fmax", "fmin", "float_power"])
def test_binary_gradients_match_torch(name, device):
    _check_device(device, "float64")
    rng = np.random.default_rng(3)
    a = rng.uniform(0.2, 3.0, size=(3, 4)) * rng.choice([-1, 1], size=(3, 4))
    b = rng.uniform(0.2, 3.0, size=(4,)) * rng.choice([-1, 1], size=(4,))
    if name in ("xlogy", "float_power"):
        b = np.abs(b)
    if name == "float_power":
        a = np.abs(a)
    if name in ("fmax", "fmin"):  # a tie and a NaN: the gradient goes to a / the number
        a[0, 0], b[0] = 1.5, 1.5
        a[1, 1] = NAN
    if name == "xlogy":
        a[0, :2] = 0.0
    g = rng.uniform(-1, 1, size=(3, 4))
    x, y = _vk(a, device, True), _vk(b, device, True)
    getattr(vk, name)(x, y).backward(_vk(g, device))
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    getattr(torch, name)(ta, tb).backward(torch.tensor(g))
    _close(x.grad.cpu(), ta.grad, "float64", rtol=1e-12, what=f"d{name}/da")
    if name == "copysign":  # torch's zeros; vkml's b feeds only a sign test (no graph): None
        assert y.grad is None and not tb.grad.any()
        return
    _close(y.grad.cpu(), tb.grad, "float64", rtol=1e-12, what=f"d{name}/db")


def test_fmod_integers_and_errors():
    a, b = [7, -7, 7, -7, -2147483648], [3, 3, -3, -3, -1]
    for dt in (torch.int32, torch.int64):
        got = vk.fmod(vk.tensor(a, dtype=getattr(vk, str(dt)[6:])), vk.tensor(b, dtype=getattr(vk, str(dt)[6:])))
        np.testing.assert_array_equal(to_np(got), torch.fmod(torch.tensor(a, dtype=dt), torch.tensor(b, dtype=dt)).numpy())
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        vk.fmod(vk.tensor([5]), vk.tensor([0]))
    assert vk.fmod(vk.tensor([5, 6]), 2.5).dtype == vk.float32
    with pytest.raises(NotImplementedError, match="fmod"):
        vk.fmod(vk.tensor([True]), vk.tensor([True]))


@pytest.mark.parametrize("device", DEVICES)
def test_fmod_integers_on_the_device(device):
    _check_device(device, "float32")
    a = vk.tensor([7, -7, 7, -7, 0, -2147483648], dtype=vk.int32)
    b = vk.tensor([3, 3, -3, -3, 5, -1], dtype=vk.int32)
    got = vk.fmod(a.to(device), b.to(device)).cpu()
    np.testing.assert_array_equal(to_np(got), [1, -1, 1, -1, 0, 0])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):  # on vulkan at the read (hostwait)
        vk.fmod(a.to(device), vk.zeros(6, dtype=vk.int32).to(device)).cpu()


COMPOSITE_UNARY = ["log2", "log10", "exp2", "sinc", "frac", "signbit", "deg2rad", "rad2deg",
                   "isposinf", "isneginf", "sgn", "positive"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", COMPOSITE_UNARY)
def test_composite_unary_matches_torch(name, dtype, device):
    _check_device(device, dtype)
    rng = np.random.default_rng(4)
    a = np.concatenate([rng.uniform(-6, 6, size=40), rng.uniform(0, 4, size=8),
                        [0.0, -0.0, 1.0, 8.0, 1024.0, 1e-3, 0.5, 100.0, -1.5, INF, -INF, NAN]])
    a = a.astype(dtype)
    got = getattr(vk, name)(_vk(a, device)).cpu()
    want = getattr(torch, name)(torch.tensor(a))
    rtol = {"sinc": 2e-6 if dtype == "float32" else 1e-14}.get(name)  # torch's pi x rounds too
    _close(got, want, dtype, rtol=rtol, atol=1e-7 if name == "sinc" else 0.0,
           what=f"{name} on {device}")


def test_exact_powers_of_two_and_ten():
    x = vk.tensor([1.0, 2.0, 8.0, 1024.0, 2.0 ** -20])
    np.testing.assert_array_equal(to_np(vk.log2(x)), [0, 1, 3, 10, -20])
    np.testing.assert_array_equal(to_np(vk.log10(vk.tensor([1.0, 10.0, 1000.0]))), [0, 1, 3])
    np.testing.assert_array_equal(to_np(vk.exp2(vk.tensor([0.0, 3.0, -2.0, 20.0]))),
                                  [1, 8, 0.25, 2.0 ** 20])


@pytest.mark.parametrize("device", DEVICES)
def test_composite_gradients_match_torch(device):
    _check_device(device, "float64")
    rng = np.random.default_rng(5)
    a = rng.uniform(0.1, 0.9, size=(2, 5))
    a[0, 0] = 0.0  # sinc's gradient at 0 is 0
    for name in ["log2", "log10", "exp2", "sinc", "frac", "deg2rad", "rad2deg", "logit"]:
        x = _vk(a, device, True)
        getattr(vk, name)(x).sum().backward()
        t = torch.tensor(a, requires_grad=True)
        getattr(torch, name)(t).sum().backward()
        _close(x.grad.cpu(), t.grad, "float64", rtol=1e-12, what=f"d {name}")
    x = _vk(a, device, True)
    vk.logit(x, eps=0.2).sum().backward()
    t = torch.tensor(a, requires_grad=True)
    torch.logit(t, eps=0.2).sum().backward()
    _close(x.grad.cpu(), t.grad, "float64", rtol=1e-12, what="d logit(eps)")


def test_logit_eps_and_heaviside():
    a = np.array([0.0, 0.1, 0.5, 0.95, 1.0])
    _close(vk.logit(vk.tensor(a), eps=0.1), torch.logit(torch.tensor(a), eps=0.1), "float64")
    _close(vk.tensor(a).logit(), torch.tensor(a).logit(), "float64")
    x = np.array([-1.5, 0.0, -0.0, 2.0, NAN])
    for v in ([0.5], [7.0, 8.0, 9.0, 1.0, 2.0]):
        _close(vk.heaviside(vk.tensor(x), vk.tensor(v, dtype=vk.float64)),
               torch.heaviside(torch.tensor(x), torch.tensor(v, dtype=torch.float64)), "float64")
    with pytest.raises(RuntimeError, match="heaviside"):
        vk.heaviside(vk.tensor([1.0]), vk.tensor([1], dtype=vk.int64))


@pytest.mark.parametrize("device", DEVICES)
def test_nan_reductions_and_counts(device):
    _check_device(device, "float32")
    a = np.array([[1.0, NAN, 2.0], [NAN, NAN, 4.0]], dtype=np.float32)
    x, t = _vk(a, device), torch.tensor(a)
    for kw in ({}, {"dim": 0}, {"dim": 1, "keepdim": True}, {"dim": (0, 1)}):
        _close(vk.nansum(x, **kw).cpu(), torch.nansum(t, **kw), "float32", what=f"nansum {kw}")
        _close(x.nanmean(**kw).cpu(), t.nanmean(**kw), "float32", what=f"nanmean {kw}")
    c = np.array([[0, 1, 2], [0, 0, 3]])
    for kw in ({}, {"dim": 0}, {"dim": (0, 1)}):
        _close(vk.count_nonzero(_vk(c, device), **kw).cpu(), torch.count_nonzero(torch.tensor(c), **kw),
               "float32", what=f"count_nonzero {kw}")
    assert int(vk.nansum(vk.tensor([1, 2, 3]))) == 6
    with pytest.raises(RuntimeError, match="nanmean"):
        vk.nanmean(vk.tensor([1, 2]))
    # gradient: 0 at the NaNs, as torch
    xg = _vk(a.astype(np.float64), device, True)
    vk.nansum(xg).backward()
    tg = torch.tensor(a.astype(np.float64), requires_grad=True)
    torch.nansum(tg).backward()
    _close(xg.grad.cpu(), tg.grad, "float64")


def test_aminmax_and_isin():
    a = np.array([[3.0, -1.0, 2.0], [0.5, 7.0, -4.0]])
    for kw in ({}, {"dim": 0}, {"dim": 1, "keepdim": True}):
        got, want = vk.aminmax(vk.tensor(a), **kw), torch.aminmax(torch.tensor(a), **kw)
        _close(got.min, want.min, "float64")
        _close(got.max, want.max, "float64")
        mn, mx = vk.tensor(a).aminmax(**kw)
        _close(mx, want.max, "float64")
    with pytest.raises(RuntimeError, match="aminmax"):
        vk.aminmax(vk.tensor([]))
    e, s = np.array([[1, 2, 3], [4, 5, 6]]), np.array([2, 6, 9])
    for kw in ({}, {"invert": True}):
        np.testing.assert_array_equal(to_np(vk.isin(vk.tensor(e), vk.tensor(s), **kw)),
                                      torch.isin(torch.tensor(e), torch.tensor(s), **kw).numpy())
    np.testing.assert_array_equal(to_np(vk.isin(vk.tensor(e), 5)), torch.isin(torch.tensor(e), 5).numpy())
    np.testing.assert_array_equal(to_np(vk.isin(3, vk.tensor(e))), torch.isin(3, torch.tensor(e)).numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_isin_values_nan_inf_dtypes_as_torch(device):
    nan, inf = float("nan"), float("inf")
    cases = [(np.array([[1.0, nan], [3.0, 2.0]]), np.array([nan, 2.0])),
             (np.array([inf, -inf, nan, 1.0]), np.array([nan, inf, 1.0])),
             (np.array([1.5, 2.0, 3.0]), np.array([2, 3])),
             (np.array([5, 1, 2]), np.array([], dtype=np.int64)),
             (np.array([], dtype=np.float32), np.array([1.0], dtype=np.float32))]
    for e, s in cases:
        for invert in (False, True):
            got = vk.isin(vk.tensor(e, device=device), vk.tensor(s, device=device), invert=invert)
            want = torch.isin(torch.tensor(e), torch.tensor(s), invert=invert)
            assert got.dtype == vk.bool and tuple(got.shape) == tuple(want.shape)
            np.testing.assert_array_equal(to_np(got), want.numpy())
    # bool, which torch refuses, as numpy
    got = vk.isin(vk.tensor([True, False], device=device), vk.tensor([True], device=device))
    assert to_np(got).tolist() == [True, False]


def test_isin_memory_not_quadratic_regression():
    # isin compared every element with every test element: n * m bytes, so two 49152-element
    # tensors took 2.4 GB and the binding sweep was killed for memory. 2e5 x 2e5 would be 40 GB.
    e = vk.arange(200_000) * 3
    got = vk.isin(e, vk.arange(200_000) * 2)
    assert int(got.sum()) == len(range(0, 400_000, 6))  # the multiples of 6 below 2 * 200_000


def test_composite_errors_as_torch():
    with pytest.raises(NotImplementedError, match="hypot"):
        vk.hypot(vk.tensor([3]), vk.tensor([4]))
    with pytest.raises(NotImplementedError, match="logaddexp"):
        vk.logaddexp(vk.tensor([3]), vk.tensor([4]))
    with pytest.raises(NotImplementedError, match="frac"):
        vk.frac(vk.tensor([3]))
    with pytest.raises(RuntimeError, match="bool"):
        vk.positive(vk.tensor([True]))
    assert vk.xlogy(vk.tensor([1, 0]), vk.tensor([2, 0])).dtype == vk.float32
    assert vk.float_power(vk.tensor([2]), 3).dtype == vk.float64
    assert vk.copysign(vk.tensor([2]), -1).dtype == vk.float32


# ---- in-place forms ----

INPLACE_UNARY = ["tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh",
                 "asinh", "arcsinh", "atanh", "arctanh", "lgamma", "digamma", "erfinv", "log2",
                 "log10", "exp2", "sinc", "frac", "deg2rad", "rad2deg", "logit", "sgn",
                 "absolute", "sigmoid", "tanh", "neg", "reciprocal", "rsqrt", "sqrt", "square",
                 "trunc", "round", "abs", "exp", "log", "sin", "cos", "erf", "erfc", "expm1",
                 "log1p", "floor", "ceil", "fix"]


@pytest.mark.parametrize("name", INPLACE_UNARY)
def test_unary_in_place_on_tensor_and_namespace(name):
    a = np.array([0.2, 0.45, 0.7, 0.9])
    want = getattr(torch.tensor(a), name + "_")()
    x = vk.tensor(a)
    r = getattr(x, name + "_")()
    assert r is x
    _close(x, want, "float64", rtol=1e-14, what=f"x.{name}_()")
    if hasattr(torch, name + "_"):
        y = vk.tensor(a)
        getattr(vk, name + "_")(y)
        _close(y, want, "float64", rtol=1e-14, what=f"vk.{name}_(x)")


@pytest.mark.parametrize("name", ["atan2", "arctan2", "fmod", "hypot", "copysign", "xlogy",
                                  "ldexp", "heaviside", "float_power", "eq", "ne", "lt", "le",
                                  "gt", "ge", "greater", "greater_equal", "less", "less_equal",
                                  "not_equal"])
def test_binary_in_place(name):
    a, b = np.array([0.5, -2.0, 3.0, 1.0]), np.array([1.0, 0.5, 3.0, -1.5])
    x, t = vk.tensor(a), torch.tensor(a)
    getattr(x, name + "_")(vk.tensor(b))
    getattr(t, name + "_")(torch.tensor(b))
    _close(x, t, "float64", rtol=1e-14, what=f"x.{name}_")
    if name in ("greater_equal", "less_equal", "not_equal"):
        _close(getattr(vk, name)(vk.tensor(a), vk.tensor(b)),
               getattr(torch, name)(torch.tensor(a), torch.tensor(b)), "float64")
        _close(getattr(vk.tensor(a), name)(vk.tensor(b)),
               getattr(torch.tensor(a), name)(torch.tensor(b)), "float64")


def test_in_place_checks():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        x.tan_()  # a leaf that requires grad
    y = vk.tensor([1.0, 2.0], dtype=vk.float32)
    with pytest.raises(RuntimeError, match="float_power_"):
        y.float_power_(2)
    z = vk.tensor([1, 2])
    with pytest.raises(RuntimeError):
        z.tan_()  # the float result cannot be written into int64, as torch
    w = vk.tensor([0.5, 1.5], dtype=vk.float64)
    w.polygamma_(1)
    _close(w, torch.tensor([0.5, 1.5], dtype=torch.float64).polygamma_(1), "float64", rtol=2e-9)


# ---- logcumsumexp: a scan, stable whatever a row's range ----

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_logcumsumexp_matches_torch(dtype, device):
    _check_device(device, dtype)
    rng = np.random.default_rng(6)
    wide = np.array([[-1000.0, 0.0, -2000.0, 5.0, 1000.0, -INF, 3.0],
                     [-INF, -INF, 2.0, 1e-3, -50.0, 80.0, 79.0]])
    for a, dims in [(wide, (1, -1, 0)), (rng.uniform(-5, 5, size=(3, 9, 2)), (0, 1, 2)),
                    (np.array(2.5), (0, -1)), (np.zeros((0, 3)), (0, 1))]:
        a = a.astype(dtype)
        for d in dims:
            got = vk.logcumsumexp(_vk(a, device), d).cpu()
            want = torch.logcumsumexp(torch.tensor(a), d)
            _close(got, want, dtype, rtol=2e-6 if dtype == "float32" else 2e-15,
                   what=f"logcumsumexp dim {d} of {a.shape} on {device}")
    x = _vk(rng.uniform(-3, 3, size=(4, 6)), device, True)
    t = torch.tensor(to_np(x), requires_grad=True)
    g = rng.uniform(-1, 1, size=(4, 6))
    x.logcumsumexp(1).backward(_vk(g, device))
    t.logcumsumexp(1).backward(torch.tensor(g))
    _close(x.grad.cpu(), t.grad, "float64", rtol=1e-12, what="d logcumsumexp")
    with pytest.raises(NotImplementedError, match="logcumsumexp"):
        vk.logcumsumexp(vk.tensor([1, 2]), 0)
    with pytest.raises(IndexError):
        vk.logcumsumexp(vk.tensor([1.0, 2.0]), 1)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_pow_negative_tensor_exponent_is_torchs_regression(device, dtype):
    # An integer tensor raised to a tensor of negative exponents raised RuntimeError; torch gives
    # 1 / base^-e truncated (0, but 1 and -1 for the bases 1 and -1), and refuses only a negative
    # scalar exponent. Scalar base with a tensor exponent too.
    base = np.array([2, -2, 1, -1, -1, 0, 7, 3])
    exp = np.array([-1, -3, -7, -2, -5, 2, 0, 2])
    v = lambda a: vk.tensor(a, dtype=getattr(vk, dtype)).to(device)
    t = lambda a: torch.tensor(a, dtype=getattr(torch, dtype))
    assert (v(base) ** v(exp)).tolist() == (t(base) ** t(exp)).tolist()
    assert vk.pow(2, v(exp)).tolist() == torch.pow(2, t(exp)).tolist()
    for L, mk in ((vk, v), (torch, t)):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
            mk(base) ** -1


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_float32_trig_vectorised_and_libm_regression(name, threads):
    """float32 sin, cos and tan run vmath's (double inside, rounded once) for |x| <= 2^20 and libm
    beyond, by blocks of 256: every value within an ulp of torch's float64 result rounded, however
    large arguments, NaN and inf are mixed in and whichever thread computes the block."""
    saved = vk.get_num_threads()
    vk.set_num_threads(threads)
    try:
        rng = np.random.default_rng(5)
        a = (rng.standard_normal(300001) * rng.choice([1e-3, 1, 30, 1e4, 1e6], 300001))
        a = a.astype(np.float32)
        a[::4099] = np.float32(3e7)  # past 2^20: the block goes element by element
        a[7::50001] = np.inf
        a[11::50001] = np.nan
        got = getattr(vk, name)(vk.tensor(a)).numpy()
        strided = getattr(vk, name)(vk.tensor(np.stack([a, a], 1))[:, 1]).numpy()
        want = getattr(torch, name)(torch.tensor(a, dtype=torch.float64)).float().numpy()
        np.testing.assert_array_equal(got, strided)  # the element loop gives the same bits
        finite = np.isfinite(a)
        assert np.isnan(got[~finite]).all()
        np.testing.assert_allclose(got[finite], want[finite], rtol=1.2e-7, atol=1e-30)
    finally:
        vk.set_num_threads(saved)


@pytest.mark.parametrize("threads", [1, 2])
def test_float32_atan2_vectorised_and_libm_regression(threads):
    """float32 atan2 runs vmath's (the quotient and atan in double, rounded once) for finite pairs
    not both 0 and libm's for the rest, by blocks of 256: within an ulp of torch's float64 result
    rounded, with zeros of both signs, infinities and NaN mixed in; contiguous, strided and
    broadcast operands give the same bits."""
    saved = vk.get_num_threads()
    vk.set_num_threads(threads)
    try:
        rng = np.random.default_rng(6)
        n = 200003
        scale = lambda: rng.choice([1e-30, 1e-3, 1, 1e3, 1e30], n)  # noqa: E731
        y = (rng.standard_normal(n) * scale()).astype(np.float32)
        x = (rng.standard_normal(n) * scale()).astype(np.float32)
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], np.float32)
        for k, (sy, sx) in enumerate((a, b) for a in special for b in special):
            y[k * 4001], x[k * 4001] = sy, sx
        got = vk.atan2(vk.tensor(y), vk.tensor(x)).numpy()
        strided = vk.atan2(vk.tensor(np.stack([y, y], 1))[:, 0],
                           vk.tensor(np.stack([x, x], 1))[:, 1]).numpy()
        np.testing.assert_array_equal(got, strided)
        want = torch.atan2(torch.tensor(y, dtype=torch.float64),
                           torch.tensor(x, dtype=torch.float64)).float().numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))
        ok = ~np.isnan(want)
        np.testing.assert_allclose(got[ok], want[ok], rtol=1.2e-7, atol=0)
        row = vk.atan2(vk.tensor(y[:1000]), vk.tensor(np.float32(0.5))).numpy()  # broadcast x
        np.testing.assert_array_equal(row, vk.atan2(vk.tensor(y[:1000]),
                                                    vk.full((1000,), 0.5)).numpy())
    finally:
        vk.set_num_threads(saved)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["sinh", "cosh", "atanh", "asinh", "acosh", "erfinv"])
def test_float32_hyperbolic_in_double_regression(name, threads):
    """float32 sinh, cosh, atanh, asinh and acosh run in double through vmath's expm1, exp and log1p,
    rounded once (libm per element took 6-16x torch's time, asinh and acosh 10-15 ms per 1M): within
    half an ulp (and a hair) of torch's float64 result, the sign of zero kept, +-inf past float's
    range (sinh clamps |x| to 100, where expm1 would give inf / inf; asinh(+-inf) is +-inf, not
    inf / inf), atanh(+-1) = +-inf and NaN beyond, acosh NaN below 1 however far (-3e38 rounds its
    sum to 0); strided the same bits. erfinv likewise (Giles' start and one Newton step on vmath's
    erf, vectorised: libm's erf / erfc per element took 53 ms per 1M), up to the float next to +-1."""
    saved = vk.get_num_threads()
    vk.set_num_threads(threads)
    try:
        rng = np.random.default_rng(8)
        n = 200003
        a = rng.standard_normal(n) * rng.choice([1e-30, 1e-6, 1e-2, 1, 10, 80], n)
        if name == "atanh":
            a = np.tanh(a)
        if name == "acosh":
            a = 1 + np.abs(a)
        if name == "erfinv":
            a = np.tanh(a) * (1 - rng.choice([0, 1e-7, 1e-5, 1e-3], n))
        special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 88.7, 89.5, 100.0, 700.0, 3e38,
                   -3e38, 1 - 2.0 ** -24, -(1 - 2.0 ** -24), 1e-40, 1 + 2.0 ** -23, 2.0 ** 60, -(2.0 ** 61), 0.5]
        a[: len(special)] = special
        a = a.astype(np.float32)
        got = getattr(vk, name)(vk.tensor(a)).numpy()
        strided = getattr(vk, name)(vk.tensor(np.stack([a, a], 1))[:, 1]).numpy()
        np.testing.assert_array_equal(got, strided)
        with np.errstate(over="ignore"):
            exact = getattr(torch, name)(torch.tensor(a, dtype=torch.float64)).numpy()
            want = exact.astype(np.float32)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
        np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))
        fin = np.isfinite(want)
        ulp = np.spacing(np.abs(want[fin])).astype(np.float64)
        assert (np.abs(got[fin].astype(np.float64) - exact[fin]) / ulp).max() <= 0.5001
    finally:
        vk.set_num_threads(saved)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["log2", "log10", "exp2"])
def test_log2_log10_exp2_one_op_rounded_once_regression(name, device):
    """log2, log10 and exp2 were composites (float64 casts around log: 4 passes; exp2 through pow):
    now one op each (the grad_fn is the op's, its input the leaf), float32 computed in double and
    rounded once -- within half an ulp and a hair of torch's float64 result over 600k arguments
    across the decades, exact at the powers of two and the integers, subnormal results rounded
    once (2^-149.5 and 2^-150 are the ties nearest 0), specials as torch's; strided the same bits."""
    _check_device(device, "float64")
    rng = np.random.default_rng(11)
    n = 200003
    if name == "exp2":
        a = rng.uniform(-1, 1, n) * rng.choice([1e-6, 0.5, 4, 40, 130, 160], n)
        special = [0.0, -0.0, INF, -INF, NAN, 127.0, 128.0, -126.0, -149.0, -149.5, -150.0, -151.0, 0.5,
                   -0.5, 1e-30, 3e38, -3e38]
    else:
        a = np.abs(rng.standard_normal(n)) * rng.choice([1e-40, 1e-30, 1e-6, 1e-2, 1, 10, 1e20, 1e37], n)
        special = [0.0, -0.0, INF, -INF, NAN, -1.0, 1.0, 2.0, 8.0, 0.5, 10.0, 1000.0, 2.0 ** -149,
                   2.0 ** -126, 2.0 ** 127, 3e38, 1 + 2.0 ** -23, 1 - 2.0 ** -24]
    a[: len(special)] = special
    a = a.astype(np.float32)
    x = _vk(a, device, requires_grad=True)
    y = getattr(vk, name)(x)
    assert y.grad_fn.name == name.capitalize() + "Backward"
    assert y.grad_fn.next_functions[0][0].name == "AccumulateGrad"
    got = y.detach().cpu().numpy()
    strided = getattr(vk, name)(_vk(np.stack([a, a], 1), device)[:, 1]).cpu().numpy()
    np.testing.assert_array_equal(got, strided)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        exact = getattr(torch, name)(torch.tensor(a, dtype=torch.float64)).numpy()
        want = exact.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))
    fin = np.isfinite(want) & (want != 0)
    ulp = np.spacing(np.abs(want[fin])).astype(np.float64)
    assert (np.abs(got[fin].astype(np.float64) - exact[fin]) / ulp).max() <= 0.5001
    k = np.arange(-149, 128)
    powers = (2.0 ** k).astype(np.float32)
    if name == "exp2":
        np.testing.assert_array_equal(vk.exp2(_vk(k.astype(np.float32), device)).cpu().numpy(), powers)
    elif name == "log2":
        np.testing.assert_array_equal(vk.log2(_vk(powers, device)).cpu().numpy(), k.astype(np.float32))
    else:
        tens = np.array([10.0 ** j for j in range(-10, 11)], dtype=np.float32)
        want10 = torch.log10(torch.tensor(tens, dtype=torch.float64)).numpy().astype(np.float32)
        np.testing.assert_array_equal(vk.log10(_vk(tens, device)).cpu().numpy(), want10)


@pytest.mark.parametrize("device", DEVICES)
def test_float64_log2_exp2_exact_at_powers_of_two(device):
    """float64: libm's log2 / exp2 on the CPU, the shader's split x = 2^k m on the device (k joins
    exactly), so log2(2^k) = k and exp2(k) = 2^k for every k, subnormals included (a log(x) / ln 2
    gives 3.0000000000000004 for 8)."""
    _check_device(device, "float64")
    k = np.arange(-1074, 1024).astype(np.float64)
    powers = 2.0 ** k
    np.testing.assert_array_equal(vk.log2(_vk(powers, device)).cpu().numpy(), k)
    np.testing.assert_array_equal(vk.exp2(_vk(k, device)).cpu().numpy(), powers)
    assert vk.exp2(_vk(np.array([1024.0, -1075.0, -1076.0]), device)).cpu().numpy().tolist() == [INF, 0.0, 0.0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_frac_one_op_regression(dtype, device):
    """frac was x - trunc(x) (two passes): one op, exact (as torch's): the sign of x, +-0 from
    integers and -0.0 (torch's x - trunc(x) gives +0 for -2.0 and -0.0), NaN from +-inf; its
    gradient is g, even at the integers (as torch)."""
    _check_device(device, dtype)
    rng = np.random.default_rng(12)
    a = np.concatenate([rng.standard_normal(3000) * rng.choice([1e-3, 1, 1e3, 1e7, 1e20], 3000),
                        [0.0, -0.0, 2.0, -2.0, INF, -INF, NAN, 0.5, -0.5, 2.0 ** 23 + 0.5, -(2.0 ** 52) - 0.5,
                         1e-45, -1e-45]]).astype(dtype)
    x = _vk(a, device, requires_grad=True)
    y = vk.frac(x)
    assert y.grad_fn.name == "FracBackward"
    want = torch.frac(torch.tensor(a))
    got = y.detach().cpu().numpy()
    np.testing.assert_array_equal(got, want.numpy())
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want.numpy()))
    g = rng.standard_normal(a.shape).astype(dtype)
    y.backward(_vk(g, device))
    np.testing.assert_array_equal(x.grad.cpu().numpy(), g)


@pytest.mark.parametrize("device", DEVICES)
def test_float64_erfinv_next_to_one_regression(device):
    """float64 erfinv took two Newton steps from Giles' start, a float approximation that drifts past
    1 - |x| ~ 1e-9: erfinv(1 - 2^-53) was 5.364 (torch and mpmath: 5.864), 8% off -- a silent wrong
    value on both devices. The steps now go on until they stop moving (bounded): within a few ulp of
    torch's all the way to the last double below 1, on both sides."""
    _check_device(device, "float64")
    d = np.concatenate([np.logspace(-16, -1, 151), [2.0 ** -53, 2.0 ** -52, 3 * 2.0 ** -53]])
    a = np.concatenate([1 - d, -(1 - d), np.linspace(-0.99, 0.99, 199)])
    got = vk.erfinv(_vk(a, device)).cpu().numpy()
    want = torch.erfinv(torch.tensor(a)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
    assert abs(got[len(d) - 3] - 5.863584748755167) < 1e-14  # 1 - 2^-53 (mpmath: 5.86358474875513)
