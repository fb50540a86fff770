"""The special functions of issue #15: i0 (torch.i0) and torch.special's i0e, i1, i1e (vkml's
vk._bessel.special_* until vkml.special takes them), and igamma / igammac (the regularized
incomplete gamma functions P and Q), on the CPU and on the Vulkan device, against torch (and
SciPy for the accuracy of igamma at large a): values within a few ulp in float64, torch's values
at inf, NaN, 0 and the negative numbers, gradients against torch's, integer promotion, the
in-place forms and the errors. Finite-difference checks of the gradients are the C++ sweep's
(tests/cpp/cases_special.cpp) and test_ops_vs_torch.py's; the float32-alone shaders (a device
without float64) are checked in test_vulkan_no_float64.py."""

import numpy as np
import pytest
import scipy.special
import torch

import vkml as vk
from conftest import devices, to_np

INF, NAN = float("inf"), float("nan")
DEVICES = devices()
BESSEL = {"i0": vk.i0, "i0e": vk._bessel.special_i0e, "i1": vk._bessel.special_i1,
          "i1e": vk._bessel.special_i1e}


def _vk(a, device, dtype="float64", requires_grad=False):
    t = vk.tensor(np.asarray(a, dtype=dtype))
    if device != "cpu":
        t = t.to(device)
    return t.requires_grad_() if requires_grad else t


def _skip_without_float64(device, dtype):
    if device == "vulkan" and dtype == "float64" and not vk._C._vulkan_features()["float64"]:
        pytest.skip("no float64 on this device")


def _ulps(got, want):
    """The largest distance in float64 ulps of finite results; inf and NaN must match exactly."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    spacing = np.spacing(np.maximum(np.abs(want[finite]), np.finfo(np.float64).tiny))
    return float((np.abs(got[finite] - want[finite]) / spacing).max())


def _bessel_inputs():
    rng = np.random.default_rng(0)
    return np.concatenate([np.linspace(-40, 40, 801), rng.uniform(-700, 700, 200),
                           [0.0, -0.0, 8.0, -8.0, 8.000000000000002, 1e-300, -1e-20, 5e-324,
                            709.0, -709.5, 713.0, INF, -INF, NAN]])


# ---- the Bessel functions ----

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(BESSEL))
def test_bessel_float64_within_a_few_ulp_of_torch(name, device):
    _skip_without_float64(device, "float64")
    x = _bessel_inputs()
    got = to_np(BESSEL[name](_vk(x, device)))
    want = getattr(torch.special, name)(torch.tensor(x)).numpy()
    # The Clenshaw sums cancel most near |x| = 8, so their rounding shows there: the kernels'
    # AVX2 and AVX-512 copies (FMA contractions, as torch's) are within 2 ulp of torch, the
    # generic copy and the ASan build (no contractions) and lavapipe within 8
    assert _ulps(got, want) <= 8, name


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(BESSEL))
def test_bessel_float32_is_float64_rounded(name, device):
    x = _bessel_inputs().astype(np.float32)
    got = to_np(BESSEL[name](_vk(x, device, "float32")))
    want = getattr(torch.special, name)(torch.tensor(x, dtype=torch.float64)).numpy()
    with np.errstate(over="ignore"):
        want = want.astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2.5e-7, atol=1e-44)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(BESSEL))
def test_bessel_gradients_match_torch(name, device):
    _skip_without_float64(device, "float64")
    x = np.array([-12.0, -8.5, -3.0, -0.25, 0.0, 1e-8, 0.7, 5.0, 8.0, 20.0])
    v = _vk(x, device, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    (g,) = vk.autograd.grad(BESSEL[name](v).sum(), [v], create_graph=True)
    (tg,) = torch.autograd.grad(getattr(torch.special, name)(t).sum(), [t], create_graph=True)
    np.testing.assert_allclose(to_np(g), tg.detach().numpy(), rtol=1e-13, atol=1e-300)
    # second derivatives away from 0: the rules of i1 and i1e divide by x, and near 0 both
    # libraries' second derivatives lose their digits to cancellation
    keep = np.abs(x) > 0.1
    (gg,) = vk.autograd.grad(g.sum(), [v])
    (tgg,) = torch.autograd.grad(tg.sum(), [t])
    np.testing.assert_allclose(to_np(gg)[keep], tgg.numpy()[keep], rtol=1e-11)


@pytest.mark.parametrize("name", sorted(BESSEL))
def test_bessel_of_integers_and_bool_is_default_float(name):
    for values in ([0, 3, -5], [True, False]):
        got = BESSEL[name](vk.tensor(values))
        want = getattr(torch.special, name)(torch.tensor(values))
        assert got.dtype == vk.float32 and want.dtype == torch.float32
        np.testing.assert_allclose(to_np(got), want.numpy(), rtol=2.5e-7)


def test_i0_methods_and_in_place_forms():
    x = vk.tensor([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(to_np(x.i0()), to_np(vk.i0(x)))
    y = x.clone()
    assert y.i0_() is y
    np.testing.assert_array_equal(to_np(y), to_np(vk.i0(x)))
    z = x.clone()
    vk.i0_(z)
    np.testing.assert_array_equal(to_np(z), to_np(vk.i0(x)))
    assert vk._bessel.special_i0 is not None
    np.testing.assert_array_equal(to_np(vk._bessel.special_i0(x)), to_np(vk.i0(x)))
    with pytest.raises(RuntimeError):  # a leaf that requires grad cannot be written in place
        vk.tensor([1.0], requires_grad=True).i0_()


# ---- the incomplete gamma functions ----

def _igamma_grid():
    """(a, x) pairs over the ranges the kernels switch between: a from 1e-3 to 1e3, x from 1e-4
    to past a + several standard deviations (sqrt(a)) on both sides."""
    a = np.array([1e-3, 0.01, 0.3, 0.5, 1.0, 1.5, 2.0, 4.5, 9.9, 10.0, 17.0, 50.0, 100.0, 333.3,
                  1000.0])
    rows = []
    for ai in a:
        sd = np.sqrt(ai)
        xs = np.concatenate([[1e-4, 0.1, 0.5, 1.0, 1.1, 2.0, 5.0, 30.0],
                             ai + sd * np.array([-6, -3, -1, -0.3, 0, 0.3, 1, 3, 6])])
        xs = xs[xs > 0]
        rows += [(ai, xi) for xi in xs]
    return np.array(rows).T


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_float64_matches_scipy_and_torch_up_to_a_thousand(name, device):
    _skip_without_float64(device, "float64")
    a, x = _igamma_grid()
    got = to_np(getattr(vk, name)(_vk(a, device), _vk(x, device)))
    want = (scipy.special.gammainc if name == "igamma" else scipy.special.gammaincc)(a, x)
    # relative where the result is not tiny (below 1e-290 both round to subnormals or 0); SciPy's
    # own values are up to ~1e-12 off in the far tails (see the mpmath test below)
    big = want > 1e-290
    rel = np.abs(got[big] - want[big]) / want[big]
    assert rel.max() < 2e-12, (name, rel.max(), a[big][rel.argmax()], x[big][rel.argmax()])
    assert np.all(np.abs(got[~big]) < 1e-280)
    # torch's are up to ~6e-10 off SciPy's from a ~ 40 on (its asymptotic series for large a)
    tw = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, tw, rtol=2e-9, atol=1e-290)


@pytest.mark.parametrize("device", DEVICES)
def test_igamma_within_1e13_of_mpmath_up_to_a_thousand(device):
    """Against 40-digit values: the relative error is ~1e-14 to 5e-14 at most (SciPy's own reach
    1e-12 in the far tails at large a, which is why the test above allows that much)."""
    _skip_without_float64(device, "float64")
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    pairs = [(1e-3, 0.2), (1e-3, 3.0), (0.05, 0.3), (0.5, 1.1), (2.0, 0.01), (9.9, 8.9),
             (10.0, 0.1), (50.0, 28.79), (100.0, 160.0), (447.8, 263.9), (956.2, 281.1),
             (942.8, 1335.0), (1000.0, 1000.0), (1000.0, 968.4), (1000.0, 1100.0)]
    a, x = (np.array(v) for v in zip(*pairs))
    p = to_np(vk.igamma(_vk(a, device), _vk(x, device)))
    q = to_np(vk.igammac(_vk(a, device), _vk(x, device)))
    for k, (ai, xi) in enumerate(pairs):
        want_p = mpmath.gammainc(ai, 0, xi, regularized=True)
        want_q = mpmath.gammainc(ai, xi, mpmath.inf, regularized=True)
        assert abs(p[k] - want_p) <= 1e-13 * want_p, ("P", ai, xi, p[k], want_p)
        assert abs(q[k] - want_q) <= 1e-13 * want_q, ("Q", ai, xi, q[k], want_q)


@pytest.mark.parametrize("device", DEVICES)
def test_igamma_at_millions_and_nan_past_its_reach(device):
    """Up to a ~ 7e6 the series converges within its 20000 terms (about 7.5 sqrt(a) near x = a):
    within 1e-12 of SciPy (its asymptotic expansion there). Past that, x near a gives NaN rather
    than an unconverged sum; x far below a still converges (to 0 here: P underflows)."""
    _skip_without_float64(device, "float64")
    a = np.repeat([1e6, 3e6], 5)
    x = a + np.sqrt(a) * np.tile([-3.0, -0.5, 0.0, 0.5, 3.0], 2)
    for name, ref in (("igamma", scipy.special.gammainc), ("igammac", scipy.special.gammaincc)):
        got = to_np(getattr(vk, name)(_vk(a, device), _vk(x, device)))
        np.testing.assert_allclose(got, ref(a, x), rtol=1e-12)
    got = to_np(vk.igamma(_vk([1e8, 1e8], device), _vk([1e8, 5e7], device)))
    assert np.isnan(got[0]) and got[1] == 0.0  # P(1e8, 5e7) underflows, as SciPy's


@pytest.mark.parametrize("device", DEVICES)
def test_igamma_and_igammac_sum_to_one(device):
    _skip_without_float64(device, "float64")
    a, x = _igamma_grid()
    p = to_np(vk.igamma(_vk(a, device), _vk(x, device)))
    q = to_np(vk.igammac(_vk(a, device), _vk(x, device)))
    np.testing.assert_allclose(p + q, np.ones_like(p), rtol=0, atol=4e-15)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_edge_values_as_torch(name, dtype, device):
    _skip_without_float64(device, dtype)
    special = [0.0, 1e-30, 0.5, 1.0, 3.0, 40.0, -1.0, -0.0, INF, -INF, NAN]
    a, x = (g.ravel() for g in np.meshgrid(special, special))
    got = to_np(getattr(vk, name)(_vk(a, device, dtype), _vk(x, device, dtype)))
    want = getattr(torch, name)(torch.tensor(a.astype(dtype)),
                                torch.tensor(x.astype(dtype))).numpy()
    assert got.dtype == want.dtype
    # (torch's P(40, 40) is 6e-10 off: see the test against SciPy above)
    np.testing.assert_allclose(got, want, rtol=5e-6 if dtype == "float32" else 2e-9, atol=1e-30,
                               equal_nan=True)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_gradient_in_x_matches_torch(name, device):
    _skip_without_float64(device, "float64")
    a = np.array([0.5, 1.0, 2.5, 7.0, 30.0, 300.0])
    x = np.array([0.2, 3.0, 1.0, 9.0, 28.0, 310.0])
    va, vx = _vk(a, device), _vk(x, device, requires_grad=True)
    ta, tx = torch.tensor(a), torch.tensor(x, requires_grad=True)
    (g,) = vk.autograd.grad(getattr(vk, name)(va, vx).sum(), [vx], create_graph=True)
    (tg,) = torch.autograd.grad(getattr(torch, name)(ta, tx).sum(), [tx], create_graph=True)
    np.testing.assert_allclose(to_np(g), tg.detach().numpy(), rtol=1e-12)
    (gg,) = vk.autograd.grad(g.sum(), [vx])
    (tgg,) = torch.autograd.grad(tg.sum(), [tx])
    np.testing.assert_allclose(to_np(gg), tgg.numpy(), rtol=1e-11)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_has_no_derivative_in_a_as_torch(name):
    a = vk.tensor([2.0, 3.0], requires_grad=True)
    x = vk.tensor([1.0, 4.0], requires_grad=True)
    y = getattr(vk, name)(a, x).sum()
    with pytest.raises(NotImplementedError, match=f"'{name}: input'.*not implemented"):
        y.backward()
    ta = torch.tensor([2.0, 3.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"'{name}: input'"):
        getattr(torch, name)(ta, torch.tensor([1.0, 4.0])).sum().backward()


def test_igamma_dtypes_and_broadcasting_as_torch():
    a, x = np.array([[0.5], [2.0], [9.0]]), np.array([0.1, 1.0, 4.0, 20.0])
    got = vk.igamma(vk.tensor(a), vk.tensor(x, dtype=vk.float32))
    want = torch.igamma(torch.tensor(a), torch.tensor(x, dtype=torch.float32))
    assert got.shape == tuple(want.shape) and got.dtype == vk.float64
    np.testing.assert_allclose(to_np(got), want.numpy(), rtol=1e-14)
    # an integer operand promotes with a float one
    got = vk.igammac(vk.tensor([1.0, 2.0]), vk.tensor([1, 3]))
    want = torch.igammac(torch.tensor([1.0, 2.0]), torch.tensor([1, 3]))
    assert got.dtype == vk.float32
    np.testing.assert_allclose(to_np(got), want.numpy(), rtol=1e-6)
    # two integer operands have no kernel, in either library
    for name in ("igamma", "igammac"):
        with pytest.raises(NotImplementedError, match=name):
            getattr(vk, name)(vk.tensor([1, 2]), vk.tensor([1, 2]))
        with pytest.raises(NotImplementedError):
            getattr(torch, name)(torch.tensor([1, 2]), torch.tensor([1, 2]))


def test_igamma_methods_and_in_place_forms():
    a, x = vk.tensor([0.5, 2.0, 7.0]), vk.tensor([1.0, 1.5, 9.0])
    np.testing.assert_array_equal(to_np(a.igamma(x)), to_np(vk.igamma(a, x)))
    np.testing.assert_array_equal(to_np(a.igammac(x)), to_np(vk.igammac(a, x)))
    for name in ("igamma", "igammac"):
        b = a.clone()
        assert getattr(b, name + "_")(x) is b
        np.testing.assert_array_equal(to_np(b), to_np(getattr(vk, name)(a, x)))
    b = vk.tensor([1.0, 2.0])  # in place, the result keeps self's shape (as every in-place op)
    with pytest.raises(vk.ShapeError, match="igamma_"):
        b.igamma_(vk.tensor([[1.0, 2.0], [3.0, 4.0]]))
