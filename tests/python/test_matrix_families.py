"""LKJCholesky and Wishart against torch.distributions: log_prob, entropy and moments with their
float64 gradients, every parameterisation of Wishart, the draws' support and moments (LKJ's
correlations against their Beta marginal, Wishart's mean and variance), Wishart's pathwise
gradient against its mean's derivative, expand, and the errors for bad arguments."""

import numpy as np
import pytest
import torch
import torch.distributions as TD

import vkml as vk
import vkml.distributions as VD
from conftest import assert_close, to_np

RNG = np.random.default_rng(321)


def test_lkj_cholesky_matches_torch():
    conc = np.array([0.5, 1.0, 3.0])
    vc, tc = vk.tensor(conc).requires_grad_(), torch.tensor(conc, requires_grad=True)
    v, t = VD.LKJCholesky(4, vc), TD.LKJCholesky(4, tc)
    value = t.sample((5,))
    vl, tl = v.log_prob(vk.tensor(value.numpy())), t.log_prob(value)
    assert_close(vl, tl, what="LKJCholesky log_prob")
    vl.sum().backward()
    tl.sum().backward()
    assert_close(vc.grad, tc.grad, what="LKJCholesky log_prob gradient in the concentration")
    e = v.expand((2, 3))
    assert tuple(e.batch_shape) == (2, 3) and tuple(e.sample().shape) == (2, 3, 4, 4)
    assert_close(e.log_prob(vk.tensor(value[:2].numpy())), t.expand((2, 3)).log_prob(value[:2]),
                 what="expanded LKJCholesky")


def test_lkj_cholesky_draws_have_beta_marginals():
    """Each correlation r of L L^T has (r + 1) / 2 ~ Beta(a, a), a = eta - 1 + d / 2: variance
    1 / (2 eta + d - 1), for every pair. torch 2.13's onion method draws row i's length from
    Beta(i - 1/2, ...) instead of Beta(i / 2, ...): its correlations from the third row on are
    too spread (at d = 5, eta = 1: variances 0.19-0.21 against 1/6), which this test catches."""
    vk.manual_seed(3)
    d, n = 5, 40000
    for eta in (0.5, 1.0, 4.0):
        L = VD.LKJCholesky(d, vk.tensor(eta, dtype=vk.float64)).sample((n,))
        assert bool(VD.constraints.corr_cholesky.check(L).all())
        corr = to_np(L @ L.transpose(-1, -2))
        assert np.allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0)
        for i, j in ((1, 0), (2, 0), (2, 1), (3, 1), (4, 2), (4, 3)):
            r = corr[:, i, j]
            want = 1 / (2 * eta + d - 1)
            assert abs(r.mean()) < 5 * np.sqrt(want / n), (eta, i, j, r.mean())
            assert abs(r.var() - want) < 0.05 * want, (eta, i, j, r.var(), want)


def _wisharts(lib, df, form, matrix):
    d = lib.tensor(df).requires_grad_()
    m = lib.tensor(matrix).requires_grad_()
    return lib.distributions.Wishart(d, **{form: m}), (d, m)


@pytest.mark.filterwarnings("ignore:Singular sample detected")  # torch's sampler warns for every draw
@pytest.mark.parametrize("form", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_matches_torch(form):
    a = RNG.standard_normal((3, 3))
    spd = a @ a.T + 3 * np.eye(3)
    matrix = np.linalg.cholesky(spd) if form == "scale_tril" else spd
    df = np.array([3.5, 6.0])
    v, vargs = _wisharts(vk, df, form, matrix)
    t, targs = _wisharts(torch, df, form, matrix)
    assert tuple(v.batch_shape) == (2,) and tuple(v.event_shape) == (3, 3)
    value = t.sample((4,))
    vl, tl = v.log_prob(vk.tensor(value.numpy())), t.log_prob(value)
    assert_close(vl, tl, what=f"Wishart({form}) log_prob")
    ve, te = v.entropy(), t.entropy()
    assert_close(ve, te, what=f"Wishart({form}) entropy", scale_atol=True)
    (vl.sum() + ve.sum()).backward()
    (tl.sum() + te.sum()).backward()
    for i, (x, y) in enumerate(zip(vargs, targs)):
        want = y.grad.numpy()
        if form == "scale_tril" and i == 1:  # the factor's upper triangle is never read: its
            want = np.tril(want)             # gradient is 0 (torch's cholesky_solve gives one)
        # torch's float64 trigamma (in the entropy's df derivative) is ~5e-10 off: 1e-8
        np.testing.assert_allclose(to_np(x.grad), want, rtol=1e-8, atol=1e-8 * np.abs(want).max(),
                                   err_msg=f"Wishart({form}) gradient {i}")
    for stat in ("mean", "mode", "variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        assert_close(getattr(v, stat), getattr(t, stat), what=f"Wishart({form}) {stat}")
    e, te2 = v.expand((3, 2)), t.expand((3, 2))
    assert_close(e.log_prob(vk.tensor(value[0].numpy())), te2.log_prob(value[0]), what="expanded Wishart")


def test_wishart_draws_and_pathwise_gradient():
    vk.manual_seed(4)
    n = 40000
    V = np.array([[2.0, 0.5], [0.5, 1.0]])
    df = vk.tensor(4.5, dtype=vk.float64, requires_grad=True)
    w = VD.Wishart(df, covariance_matrix=vk.tensor(V))
    x = w.rsample((n,))
    draws = to_np(x)
    assert bool(VD.constraints.positive_definite.check(x).all())
    mean, var = to_np(w.mean), to_np(w.variance)
    assert (np.abs(draws.mean(0) - mean) < 6 * np.sqrt(var / n)).all(), (draws.mean(0), mean)
    assert np.allclose(draws.var(0), var, rtol=0.06), (draws.var(0), var)
    x[:, 0, 0].mean().backward()  # d E[X_00] / d df = V_00
    assert abs(float(df.grad) - V[0, 0]) < 0.05 * V[0, 0], float(df.grad)


def test_matrix_family_errors():
    with pytest.raises(ValueError, match="dim"):
        VD.LKJCholesky(1, 1.0)
    with pytest.raises(ValueError):
        VD.LKJCholesky(3, vk.tensor([-1.0]))
    eye = vk.eye(3, dtype=vk.float64)
    with pytest.raises(ValueError, match="df"):
        VD.Wishart(vk.tensor(2.0, dtype=vk.float64), covariance_matrix=eye)
    with pytest.raises(ValueError, match="Exactly one"):
        VD.Wishart(vk.tensor(4.0, dtype=vk.float64), covariance_matrix=eye, scale_tril=eye)
    with pytest.raises(ValueError):
        VD.Wishart(vk.tensor(4.0, dtype=vk.float64), covariance_matrix=-eye)
    with pytest.warns(UserWarning, match="Low df"):
        VD.Wishart(vk.tensor(2.5, dtype=vk.float64), covariance_matrix=eye)
