"""ContinuousBernoulli, Kumaraswamy, GeneralizedPareto and VonMises against torch.distributions:
log_prob, cdf / icdf, moments, mode and entropy with their float64 gradients (ContinuousBernoulli
on both sides of its Taylor window and inside it, GeneralizedPareto for negative, zero and positive
shapes, VonMises for small and large concentrations), the draws' moments against the closed forms,
pathwise gradients against the moments' derivatives, KL, expand and validation errors."""

import math

import numpy as np
import pytest
import torch
import torch.distributions as TD

import vkml as vk
import vkml.distributions as VD
from conftest import assert_close, to_np

RNG = np.random.default_rng(123)

CASES = [
    ("ContinuousBernoulli", lambda D, T: D.ContinuousBernoulli(probs=T(np.array([0.05, 0.3, 0.4995, 0.5, 0.7, 0.97]))),
     lambda: RNG.uniform(0.01, 0.99, (4, 6))),
    ("ContinuousBernoulliLogits", lambda D, T: D.ContinuousBernoulli(logits=T(np.array([-3.0, -0.001, 0.0, 0.5, 4.0]))),
     lambda: RNG.uniform(0.01, 0.99, (4, 5))),
    ("Kumaraswamy", lambda D, T: D.Kumaraswamy(T(np.array([0.5, 1.0, 2.0, 5.0])), T(np.array([0.7, 1.0, 3.0, 2.0]))),
     lambda: RNG.uniform(0.02, 0.98, (4, 4))),
    # float32: torch's GeneralizedPareto compares float64 parameters with a float32 zero and raises
    ("GeneralizedPareto", lambda D, T: D.GeneralizedPareto(T(np.array([0.0, 1.0, -1.0], np.float32)),
                                                           T(np.array([1.0, 2.0, 0.5], np.float32)),
                                                           T(np.array([-0.3, 0.0, 0.4], np.float32))),
     lambda: (RNG.uniform(0.0, 1.5, (4, 3)) + np.array([0.0, 1.0, -1.0])).astype(np.float32)),
    ("VonMises", lambda D, T: D.VonMises(T(np.array([0.0, 1.0, -2.5, 3.0])), T(np.array([1e-3, 0.5, 4.0, 60.0]))),
     lambda: RNG.uniform(-7, 7, (4, 4))),
]


def _tolerances(name, x):
    """(values, gradients) rtol: float32's where the case is float32; VonMises 1e-6 (torch's
    log I0 is a polynomial fit ~3e-8 off mpmath's: its own test below checks vkml's); float64
    gradients 1e-8 (torch's float64 trigamma, in Kumaraswamy's entropy, is ~5e-10 off)."""
    if x.dtype == np.float32:
        return 1e-5, 1e-4
    if name == "VonMises":
        return 1e-6, 1e-6
    return 1e-10, 1e-8


def _close(a, b, rtol, what):
    a, b = to_np(a), to_np(b)
    assert a.shape == b.shape, what
    finite = np.abs(b[np.isfinite(b)])
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max([1.0] + list(finite.ravel())),
                               equal_nan=True, err_msg=what)


def _pair(build):
    leaves = {"v": [], "t": []}

    def maker(lib, key):
        def make(a):
            x = lib.tensor(a).requires_grad_()
            leaves[key].append(x)
            return x
        return make

    return build(VD, maker(vk, "v")), build(TD, maker(torch, "t")), leaves


@pytest.mark.parametrize("name,build,values", CASES, ids=[c[0] for c in CASES])
def test_family_matches_torch(name, build, values):
    v, t, leaves = _pair(build)
    x = values()
    tol, grad_tol = _tolerances(name, x)
    vx, tx = vk.tensor(x), torch.tensor(x)
    vl, tl = v.log_prob(vx), t.log_prob(tx)
    _close(vl, tl, tol, f"{name} log_prob")
    vloss, tloss = vl.sum(), tl.sum()
    try:
        te = t.entropy()
    except NotImplementedError:  # torch's VonMises has none
        with pytest.raises(NotImplementedError):
            v.entropy()
    else:
        ve = v.entropy()
        _close(ve, te, tol, f"{name} entropy")
        vloss, tloss = vloss + ve.sum(), tloss + te.sum()
    vloss.backward()
    tloss.backward()
    for i, (a, b) in enumerate(zip(leaves["v"], leaves["t"])):
        _close(a.grad, b.grad, grad_tol, f"{name} gradient of log_prob + entropy, parameter {i}")
    for stat in ("mean", "variance") + (("mode",) if name != "Kumaraswamy" else ()):  # torch's: NaN
        try:
            want = getattr(t, stat)
        except NotImplementedError:
            continue
        _close(getattr(v, stat), want, tol, f"{name} {stat}")
    if name != "VonMises" and not name.startswith("Kumaraswamy"):
        _close(v.cdf(vx), t.cdf(tx), tol, f"{name} cdf")
        u = RNG.uniform(0.01, 0.99, x.shape).astype(x.dtype)
        _close(v.icdf(vk.tensor(u)), t.icdf(torch.tensor(u)), tol, f"{name} icdf")
    ve2, te2 = v.expand((2,) + tuple(v.batch_shape)), t.expand((2,) + tuple(t.batch_shape))
    _close(ve2.log_prob(vx[:2]), te2.log_prob(tx[:2]), tol, f"{name} expanded log_prob")


def test_von_mises_normaliser_is_mpmaths():
    """log_prob's log(2 pi I0(k)) to float64 precision (torch's polynomial is ~3e-8 off)."""
    mpmath = pytest.importorskip("mpmath")  # arrives with torch (sympy): CI has it
    k = np.array([1e-3, 0.5, 4.0, 60.0, 700.0])
    got = to_np(VD.VonMises(vk.zeros(5, dtype=vk.float64), vk.tensor(k)).log_prob(vk.zeros(5, dtype=vk.float64)))
    want = np.array([float(kk - mpmath.log(2 * mpmath.pi * mpmath.besseli(0, kk))) for kk in k])
    assert_close(got, want, what="VonMises log_prob at its mode")


def test_draws_follow_the_moments():
    vk.manual_seed(7)
    n = 200000
    families = [
        VD.ContinuousBernoulli(probs=vk.tensor([0.1, 0.5, 0.8], dtype=vk.float64)),
        VD.Kumaraswamy(vk.tensor([0.5, 2.0, 5.0], dtype=vk.float64), vk.tensor([0.7, 3.0, 2.0], dtype=vk.float64)),
        VD.GeneralizedPareto(vk.tensor([0.0, 1.0, -1.0], dtype=vk.float64), vk.tensor([1.0, 2.0, 0.5], dtype=vk.float64),
                             vk.tensor([-0.3, 0.0, 0.2], dtype=vk.float64)),
    ]
    for d in families:
        draws = to_np(d.sample((n,)))
        mean, var = to_np(d.mean), to_np(d.variance)
        se = np.sqrt(var / n)
        assert (np.abs(draws.mean(0) - mean) < 6 * se).all(), (type(d).__name__, draws.mean(0), mean)
        assert np.allclose(draws.var(0), var, rtol=0.05), (type(d).__name__, draws.var(0), var)
        assert bool(d.support.check(vk.tensor(draws)).all())
    k = np.array([1e-3, 0.5, 4.0, 60.0])
    vm = VD.VonMises(vk.tensor([0.0, 1.0, -2.5, 3.0], dtype=vk.float64), vk.tensor(k))
    draws = to_np(vm.sample((n,)))
    assert tuple(vm.sample((2, 3)).shape) == (2, 3, 4)
    assert (draws >= -math.pi).all() and (draws < math.pi).all()
    centred = np.cos(draws - to_np(vm.loc))
    # E cos(x - loc) = I1(k) / I0(k), 1 - the circular variance
    want = 1 - to_np(vm.variance)
    assert (np.abs(centred.mean(0) - want) < 6 * np.sqrt(centred.var(0) / n) + 1e-4).all(), (centred.mean(0), want)
    assert np.abs(np.sin(draws - to_np(vm.loc)).mean(0)).max() < 0.01


def test_pathwise_gradients_are_the_moments_derivatives():
    vk.manual_seed(8)
    n = 100000
    for make in (lambda a: VD.ContinuousBernoulli(probs=a), lambda a: VD.Kumaraswamy(a * 4, 2.0),
                 lambda a: VD.GeneralizedPareto(0.0, a * 2, -0.2)):
        a = vk.tensor([0.3, 0.7], dtype=vk.float64, requires_grad=True)
        make(a).rsample((n,)).mean(0).sum().backward()
        got = to_np(a.grad)
        b = vk.tensor([0.3, 0.7], dtype=vk.float64, requires_grad=True)
        make(b).mean.sum().backward()
        assert np.allclose(got, to_np(b.grad), rtol=0.05, atol=0.01), (got, to_np(b.grad))


def test_kl_and_errors_as_torch():
    p, q = np.array([0.1, 0.4996, 0.8]), np.array([0.6, 0.3, 0.5002])
    assert_close(VD.kl_divergence(VD.ContinuousBernoulli(vk.tensor(p)), VD.ContinuousBernoulli(vk.tensor(q))),
                 TD.kl_divergence(TD.ContinuousBernoulli(torch.tensor(p)), TD.ContinuousBernoulli(torch.tensor(q))),
                 what="KL(CB || CB)")
    with pytest.raises(ValueError):
        VD.ContinuousBernoulli(probs=vk.tensor([1.5]))
    with pytest.raises(ValueError):
        VD.ContinuousBernoulli(probs=vk.tensor([0.5]), logits=vk.tensor([0.0]))
    with pytest.raises(ValueError):
        VD.Kumaraswamy(vk.tensor([-1.0]), vk.tensor([1.0]))
    with pytest.raises(ValueError):
        VD.GeneralizedPareto(0.0, -1.0, 0.1)
    with pytest.raises(ValueError):
        VD.VonMises(vk.tensor([0.0]), vk.tensor([0.0]))
    gp = VD.GeneralizedPareto(vk.tensor([0.0]), vk.tensor([1.0]), vk.tensor([-0.5]))
    with pytest.raises(ValueError, match="support"):
        gp.log_prob(vk.tensor([2.5]))  # beyond loc - scale / xi = 2


def test_kumaraswamy_mode_is_the_densitys_maximum_regression():
    """Defect: Kumaraswamy.mode was NaN for every parameter (torch 2.13's formula, whose logs of
    negative numbers are NaN): now ((a - 1) / (a b - 1))^(1/a), checked against the argmax of the
    density itself on a fine grid, 0 at a = 1, 1 at b = 1, NaN below 1 and for the uniform."""
    a = vk.tensor([2.0, 5.0, 1.5, 1.0, 3.0, 0.5, 1.0], dtype=vk.float64)
    b = vk.tensor([3.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0], dtype=vk.float64)
    mode = to_np(VD.Kumaraswamy(a, b).mode)
    grid = np.linspace(1e-3, 1 - 1e-3, 99801)
    d = VD.Kumaraswamy(a[:3], b[:3], validate_args=False)
    density = to_np(d.log_prob(vk.tensor(grid).reshape(-1, 1).expand(-1, 3)))
    for i in range(3):
        np.testing.assert_allclose(mode[i], grid[np.nanargmax(density[:, i])], atol=1e-4, err_msg=f"column {i}")
    assert mode[3] == 0.0 and mode[4] == 1.0 and np.isnan(mode[5]) and np.isnan(mode[6])
