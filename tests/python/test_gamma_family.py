"""vk._standard_gamma and vk._standard_gamma_grad (torch's gamma sampler and its implicit
derivative), and the distributions built on them -- Gamma, Chi2, Beta, Dirichlet, StudentT,
FisherSnedecor, NegativeBinomial and their KL pairs -- against mpmath (the derivative, to 40
digits), torch.distributions (closed forms and their float64 gradients) and the moments of many
draws (6 standard errors). A Beta policy (continuous-action RL) is stepped with both libraries."""

import math

import mpmath
import numpy as np
import pytest
import torch
import torch.distributions as TD

import vkml as vk
import vkml.distributions as VD
from conftest import assert_close, devices, to_np

RNG = np.random.default_rng(33)


def _implicit_derivative(alpha, x):
    """dx/dalpha of x = F^-1(u; alpha) at fixed u: -(dP/dalpha) / (dP/dx), to 40 digits."""
    with mpmath.workdps(40):
        a, xm = mpmath.mpf(alpha), mpmath.mpf(x)
        d_alpha = mpmath.diff(lambda s: mpmath.gammainc(s, 0, xm, regularized=True), a)
        density = mpmath.exp((a - 1) * mpmath.log(xm) - xm - mpmath.loggamma(a))
        return float(-d_alpha / density)


def _grad_points():
    """(alpha, x) on both sides of x = alpha + 1 (series / fraction), in the 1e-5 tails, far
    below and above the mean, tiny x, and alpha >= 1e5 (Cornish-Fisher) near its mean."""
    pts = []
    for alpha in (1e-3, 0.05, 0.3, 1.0, 2.5, 8.0, 30.0, 250.0, 3000.0):
        sd = math.sqrt(alpha)
        pts += [(alpha, x) for x in (alpha + 0.5, alpha + 1.5, alpha + 2 * sd + 1, alpha + 4.3 * sd + 3)]
        if alpha > 1:
            pts += [(alpha, max(alpha - 2 * sd, alpha / 2)), (alpha, max(alpha - 4.3 * sd, alpha / 4))]
    pts += [(0.01, 1e-120), (0.5, 1e-9), (4.0, 1e-3), (1.0, 40.0)]
    pts += [(2e5, 2e5 + k * math.sqrt(2e5)) for k in (-5.0, -1.0, 0.0, 0.7, 5.0)]
    return pts


def test_standard_gamma_grad_is_the_implicit_derivative():
    pts = _grad_points()
    a = vk.tensor([p[0] for p in pts], dtype=vk.float64)
    x = vk.tensor([p[1] for p in pts], dtype=vk.float64)
    got = to_np(vk._standard_gamma_grad(a, x))
    want = np.array([_implicit_derivative(*p) for p in pts])
    rel = np.abs(got - want) / np.abs(want)
    worst = int(np.argmax(rel))
    assert rel.max() < 1e-8, f"(alpha, x) = {pts[worst]}: {got[worst]} vs mpmath {want[worst]}"
    # torch's rational and saddle-point approximations agree to their own accuracy (5.5e-3 here)
    t = torch._standard_gamma_grad(torch.tensor(to_np(a)), torch.tensor(to_np(x))).numpy()
    assert (np.abs(t - want) / np.abs(want)).max() < 1e-2


def test_standard_gamma_grad_edges_and_its_x_derivative():
    a = vk.tensor([2.0, 0.0, -1.0, 2.0, 2.0, math.nan, 3.0], dtype=vk.float64)
    x = vk.tensor([0.0, 1.0, 1.0, math.inf, -1.0, 1.0, math.nan], dtype=vk.float64)
    got = to_np(vk._standard_gamma_grad(a, x))
    assert got[0] == 0.0 and np.isnan(got[1:]).all()
    # d/dx has a rule (forward ops); d/dalpha none, as torch
    alpha = np.array([0.4, 2.5, 2.5, 30.0])
    xs = np.array([0.2, 1.0, 7.0, 41.0])

    def f(xv):
        return vk._standard_gamma_grad(vk.tensor(alpha), xv if isinstance(xv, vk.Tensor) else vk.tensor(xv))

    xv = vk.tensor(xs).requires_grad_()
    f(xv).sum().backward()
    h = 1e-6 * xs
    fd = (to_np(f(xs + h)) - to_np(f(xs - h))) / (2 * h)
    assert_close(xv.grad, fd, what="d standard_gamma_grad / dx", scale_atol=False)
    av = vk.tensor(alpha).requires_grad_()
    with pytest.raises(NotImplementedError, match="standard_gamma_grad"):
        vk._standard_gamma_grad(av, vk.tensor(xs)).sum().backward()


@pytest.mark.parametrize("device", devices())
def test_standard_gamma_samples_and_their_gradient(device):
    """Moments of the draws, the float32 floor at the smallest normal, one seed's numbers on every
    device, and the gradient: exactly _standard_gamma_grad at the draws (torch's rule), on
    average the moments' derivatives dE[x]/dalpha = 1, dE[x^2]/dalpha = 2 alpha + 1."""
    n = 100000
    for alpha in (0.02, 0.7, 1.0, 6.0, 500.0):
        a = vk.full((n,), alpha, dtype=vk.float64, device=device).requires_grad_()
        x = vk._standard_gamma(a)
        s = to_np(x)
        assert (s > 0).all() and np.isfinite(s).all()
        assert abs(s.mean() - alpha) < 6 * math.sqrt(alpha / n), (alpha, s.mean())
        (x * x).sum().backward()
        assert_close(a.grad, 2 * s * to_np(vk._standard_gamma_grad(a.detach(), x.detach())))
        g = to_np(a.grad)
        assert abs(g.mean() - (2 * alpha + 1)) < 6 * g.std() / math.sqrt(n), (alpha, g.mean())
    tiny = to_np(vk._standard_gamma(vk.full((1000,), 1e-3, device=device)))
    assert tiny.dtype == np.float32 and (tiny >= np.finfo(np.float32).tiny).all()
    vk.manual_seed(5)
    first = to_np(vk._standard_gamma(vk.tensor([0.5, 2.0, 9.0], device=device)))
    g = vk.Generator(device).manual_seed(5) if device != "cpu" else vk.Generator().manual_seed(5)
    again = to_np(vk._standard_gamma(vk.tensor([0.5, 2.0, 9.0], device=device), generator=g))
    on_cpu = to_np(vk._standard_gamma(vk.tensor([0.5, 2.0, 9.0]), generator=vk.Generator().manual_seed(5)))
    assert (first == again).all() and (first == on_cpu).all()
    with pytest.raises(RuntimeError, match="standard_gamma.*non-negative"):
        vk._standard_gamma(vk.tensor([1.0, -2.0], device=device))
    with pytest.raises(RuntimeError, match="standard_gamma"):
        vk._standard_gamma(vk.tensor([math.nan], device=device))
    with pytest.raises(vk.DTypeError, match="standard_gamma"):
        vk._standard_gamma(vk.tensor([2], device=device))


@pytest.mark.parametrize("device", devices())
def test_standard_gamma_grad_on_every_device(device):
    pts = _grad_points()
    a = np.array([p[0] for p in pts])
    x = np.array([p[1] for p in pts])
    want = to_np(vk._standard_gamma_grad(vk.tensor(a), vk.tensor(x)))
    got = to_np(vk._standard_gamma_grad(vk.tensor(a, device=device), vk.tensor(x, device=device)))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    ok = (a < 1e30) & (x < 3e38)
    got32 = to_np(vk._standard_gamma_grad(vk.tensor(a[ok], dtype=vk.float32, device=device),
                                          vk.tensor(x[ok], dtype=vk.float32, device=device)))
    want32 = to_np(vk._standard_gamma_grad(vk.tensor(a[ok].astype(np.float32).astype(np.float64)),
                                           vk.tensor(x[ok].astype(np.float32).astype(np.float64))))
    np.testing.assert_allclose(got32, want32, rtol=3e-6)


# (name, builder(D, params), params as (lo, hi) ranges, value sampler(shape))
def _families():
    pos = lambda shape: RNG.uniform(0.1, 4.0, shape)  # noqa: E731
    unit = lambda shape: RNG.uniform(0.02, 0.98, shape)  # noqa: E731
    real = lambda shape: RNG.uniform(-4.0, 4.0, shape)  # noqa: E731
    counts = lambda shape: RNG.integers(0, 12, shape).astype(np.float64)  # noqa: E731
    return [
        ("Gamma", lambda D, p: D.Gamma(p[0], p[1]), [(0.3, 4), (0.5, 2)], pos),
        ("Chi2", lambda D, p: D.Chi2(p[0]), [(0.5, 6)], pos),
        ("Beta", lambda D, p: D.Beta(p[0], p[1]), [(0.3, 4), (0.3, 4)], unit),
        ("StudentT", lambda D, p: D.StudentT(p[0], p[1], p[2]), [(0.6, 6), (-1, 1), (0.5, 2)], real),
        ("FisherSnedecor", lambda D, p: D.FisherSnedecor(p[0], p[1]), [(0.5, 8), (4.5, 9)], pos),
        ("NegativeBinomial", lambda D, p: D.NegativeBinomial(p[0], probs=p[1]), [(0.5, 6), (0.1, 0.9)], counts),
        ("NegativeBinomialLogits", lambda D, p: D.NegativeBinomial(p[0], logits=p[1]), [(0.5, 6), (-2, 2)],
         counts),
    ]


FAMILIES = _families()


@pytest.mark.parametrize("name,build,ranges,sampler", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_gamma_families_match_torch(name, build, ranges, sampler):
    shape = (2, 3)
    raw = [RNG.uniform(lo, hi, shape) for lo, hi in ranges]
    vp = [vk.tensor(r).requires_grad_() for r in raw]
    tp = [torch.tensor(r, requires_grad=True) for r in raw]
    v, t = build(VD, vp), build(TD, tp)
    assert tuple(v.batch_shape) == tuple(t.batch_shape)
    x = sampler(shape)
    vx, tx = vk.tensor(x), torch.tensor(x)
    assert_close(v.log_prob(vx), t.log_prob(tx), what=name + " log_prob")
    stats = ["mean", "variance", "mode"] + (["stddev"] if name != "StudentT" else [])
    for stat in stats:
        assert_close(getattr(v, stat), getattr(t, stat), what=f"{name} {stat}")
    has_entropy = not name.startswith(("NegativeBinomial", "FisherSnedecor"))
    if name == "Gamma":
        assert_close(v.cdf(vx), t.cdf(tx), what="Gamma cdf")
    up = RNG.standard_normal(shape)
    ((v.log_prob(vx) + (v.entropy() if has_entropy else 0)) * vk.tensor(up)).sum().backward()
    ((t.log_prob(tx) + (t.entropy() if has_entropy else 0)) * torch.tensor(up)).sum().backward()
    if has_entropy:
        assert_close(v.entropy(), t.entropy(), what=name + " entropy")
    for a, b in zip(vp, tp):  # torch's trigamma (in the entropies' gradients) is within 5e-10
        want = to_np(b.grad)
        np.testing.assert_allclose(to_np(a.grad), want, rtol=1e-8, atol=1e-9 * max(1.0, np.abs(want).max()),
                                   err_msg=name)
    for sample_shape in ((), (4,), (2, 5)):
        assert tuple(v.sample(sample_shape).shape) == tuple(t.sample(sample_shape).shape), name
    assert repr(v).split("(")[0] == repr(t).split("(")[0]


def test_dirichlet_matches_torch():
    c = RNG.uniform(0.3, 3.0, (2, 4))
    c[1] = [0.5, 0.3, 0.9, 0.2]  # every concentration below 1: the first vertex, as torch's
    vc, tc = vk.tensor(c).requires_grad_(), torch.tensor(c, requires_grad=True)
    v, t = VD.Dirichlet(vc), TD.Dirichlet(tc)
    x = RNG.dirichlet(np.ones(4), 2)
    for stat in ("mean", "variance", "mode"):
        assert_close(getattr(v, stat), getattr(t, stat), what="Dirichlet " + stat)
    (v.log_prob(vk.tensor(x)) + v.entropy()).sum().backward()
    (t.log_prob(torch.tensor(x)) + t.entropy()).sum().backward()
    # torch's trigamma is within ~5e-10 (absolute): a near-zero component needs an absolute floor
    # (this read 2.3e-10 off at -0.0107 beside 18.9 in one draw: flaky at atol 1e-10)
    want = to_np(tc.grad)
    np.testing.assert_allclose(to_np(vc.grad), want, rtol=1e-8, atol=1e-9 * max(1.0, np.abs(want).max()))
    assert tuple(v.sample((3,)).shape) == (3, 2, 4) and tuple(v.event_shape) == (4,)


def test_gamma_family_draws_have_the_moments():
    vk.manual_seed(1)
    n = 200000
    cases = [VD.Gamma(vk.tensor(0.4), vk.tensor(2.0)), VD.Gamma(vk.tensor(7.0), vk.tensor(0.5)),
             VD.Chi2(vk.tensor(3.0)), VD.Beta(vk.tensor(0.5), vk.tensor(2.5)),
             VD.StudentT(vk.tensor(9.0), vk.tensor(1.0), vk.tensor(2.0)),
             VD.FisherSnedecor(vk.tensor(6.0), vk.tensor(12.0)),
             VD.NegativeBinomial(vk.tensor(3.0), probs=vk.tensor(0.4))]
    for d in cases:
        s = to_np(d.sample((n,)))
        mean, var = float(d.mean), float(d.variance)
        assert abs(s.mean() - mean) < 6 * math.sqrt(var / n), (d, s.mean(), mean)
        assert abs(s.var() - var) < 0.08 * var, (d, s.var(), var)
    s = to_np(VD.Dirichlet(vk.tensor([0.5, 1.0, 3.0])).sample((n,)))
    np.testing.assert_allclose(s.sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(s.mean(0), np.array([0.5, 1.0, 3.0]) / 4.5, atol=6 * math.sqrt(0.25 / n))


def test_gamma_family_rsample_gradients_are_the_moments_derivatives():
    """Pathwise gradients of the sample mean, averaged over many draws, are the derivatives of the
    closed-form mean: Gamma dE/dc = 1 / r, dE/dr = -c / r^2; Beta dE/dc1 = c0 / (c1 + c0)^2;
    Dirichlet dE[x_0]/dc_0 = (T - c_0) / T^2; StudentT dE[x^2]/ddf = -2 s^2 / (df - 2)^2."""
    vk.manual_seed(2)
    n = 200000

    def mean_grad(make, params, stat=lambda x: x):
        ps = [vk.tensor(p, dtype=vk.float64).requires_grad_() for p in params]
        stat(make(*ps).rsample((n,))).mean().backward()
        return [float(p.grad) if p.grad.numel() == 1 else to_np(p.grad) for p in ps]

    dc, dr = mean_grad(VD.Gamma, [0.6, 1.5])
    assert abs(dc - 1 / 1.5) < 0.02 and abs(dr + 0.6 / 1.5 ** 2) < 0.02, (dc, dr)
    d1, d0 = mean_grad(VD.Beta, [2.0, 3.0])
    assert abs(d1 - 3 / 25) < 0.01 and abs(d0 + 2 / 25) < 0.01, (d1, d0)
    (dconc,) = mean_grad(VD.Dirichlet, [[1.0, 2.0, 3.0]], stat=lambda x: x[:, 0])
    np.testing.assert_allclose(dconc, [5 / 36, -1 / 36, -1 / 36], atol=0.01)
    ddf, _, _ = mean_grad(VD.StudentT, [6.0, 0.0, 1.0], stat=lambda x: x * x)
    assert abs(ddf + 2 / 16) < 0.03, ddf


def test_gamma_family_kl_pairs_match_torch():
    def pairs(*ranges):
        arrs = [RNG.uniform(lo, hi, (3,)) for lo, hi in ranges]
        return [vk.tensor(a) for a in arrs], [torch.tensor(a) for a in arrs]

    (va, vb, vc, vd), (ta, tb, tc, td) = pairs((0.3, 4), (0.5, 2), (0.3, 4), (0.5, 2))
    cases = [(lambda D: D.Gamma(va, vb), lambda D: D.Gamma(vc, vd), lambda D: D.Gamma(ta, tb),
              lambda D: D.Gamma(tc, td)),
             (lambda D: D.Beta(va, vb), lambda D: D.Beta(vc, vd), lambda D: D.Beta(ta, tb),
              lambda D: D.Beta(tc, td)),
             (lambda D: D.Exponential(vb), lambda D: D.Gamma(vc, vd), lambda D: D.Exponential(tb),
              lambda D: D.Gamma(tc, td)),
             (lambda D: D.Gamma(va, vb), lambda D: D.Exponential(vd), lambda D: D.Gamma(ta, tb),
              lambda D: D.Exponential(td)),
             (lambda D: D.Chi2(va), lambda D: D.Gamma(vc, vd), lambda D: D.Chi2(ta), lambda D: D.Gamma(tc, td))]
    for vp, vq, tp, tq in cases:
        assert_close(VD.kl_divergence(vp(VD), vq(VD)), TD.kl_divergence(tp(TD), tq(TD)),
                     what=f"KL({type(vp(VD)).__name__} || {type(vq(VD)).__name__})")
    c1, c2 = RNG.uniform(0.3, 3, (2, 5)), RNG.uniform(0.3, 3, (2, 5))
    assert_close(VD.kl_divergence(VD.Dirichlet(vk.tensor(c1)), VD.Dirichlet(vk.tensor(c2))),
                 TD.kl_divergence(TD.Dirichlet(torch.tensor(c1)), TD.Dirichlet(torch.tensor(c2))),
                 what="KL(Dirichlet || Dirichlet)")


def test_gamma_family_validation_matches_torch():
    bad = [lambda D, T: D.Gamma(T([-1.0]), T([1.0])), lambda D, T: D.Beta(T([1.0]), T([0.0])),
           lambda D, T: D.Dirichlet(T([[1.0, -0.5]])), lambda D, T: D.Chi2(T([-2.0])),
           lambda D, T: D.StudentT(T([0.0])), lambda D, T: D.NegativeBinomial(T([2.0]), probs=T([1.0]))]
    for make in bad:
        with pytest.raises(ValueError):
            make(TD, torch.tensor)
        with pytest.raises(ValueError):
            make(VD, vk.tensor)
    outside = [(lambda D, T: D.Gamma(T([2.0]), T([1.0])), [-0.5]), (lambda D, T: D.Beta(T([2.0]), T([2.0])), [1.5]),
               (lambda D, T: D.Dirichlet(T([1.0, 2.0])), [0.3, 0.3]),
               (lambda D, T: D.NegativeBinomial(T([2.0]), probs=T([0.5])), [1.5])]
    for make, value in outside:
        with pytest.raises(ValueError):
            make(TD, torch.tensor).log_prob(torch.tensor(value))
        with pytest.raises(ValueError):
            make(VD, vk.tensor).log_prob(vk.tensor(value))
    with pytest.raises(ValueError, match="one-dimensional"):
        VD.Dirichlet(vk.tensor(1.0))


def test_beta_policy_steps_as_torch():
    """A continuous-action policy with a Beta head (actions in [0, 1], as PPO with Beta policies):
    log_prob of logged actions times advantages, an entropy bonus and the KL to the old policy,
    ten Adam steps with each library from the same weights; parameters agree after each."""
    obs = RNG.standard_normal((16, 4))
    actions = RNG.uniform(0.02, 0.98, (16, 2))
    adv = RNG.standard_normal(16)
    w1, b1 = RNG.standard_normal((8, 4)) * 0.3, np.zeros(8)
    w2, b2 = RNG.standard_normal((4, 8)) * 0.3, np.zeros(4)

    def run(lib, D):
        params = [lib.tensor(a.copy(), requires_grad=True) for a in (w1, b1, w2, b2)]
        opt = lib.optim.Adam(params, lr=3e-3)
        o, act, A = lib.tensor(obs), lib.tensor(actions), lib.tensor(adv)
        old = None
        history = []
        for _ in range(10):
            h = lib.tanh(o @ params[0].T + params[1])
            out = lib.nn.functional.softplus(h @ params[2].T + params[3]) + 1.0
            dist = D.Independent(D.Beta(out[:, :2], out[:, 2:]), 1)
            loss = -(dist.log_prob(act) * A).mean() - 0.01 * dist.entropy().mean()
            if old is not None:
                loss = loss + 0.1 * D.kl_divergence(old, dist).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            old = D.Independent(D.Beta(out[:, :2].detach(), out[:, 2:].detach()), 1)
            history.append([p.detach().numpy().copy() for p in params] + [loss.item()])
        return history

    for step, (a, b) in enumerate(zip(run(vk, VD), run(torch, TD))):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7, err_msg=f"step {step}")


@pytest.mark.parametrize("device", devices())
def test_gamma_families_on_every_device(device):
    """One seed draws the same gammas on every device, so rsample's values and gradients (through
    the shaders' element-wise ops and standard_gamma_grad's shader) are the CPU's."""
    def draw(dev):
        vk.manual_seed(11)
        c = vk.tensor([[0.4, 2.0, 7.0]], dtype=vk.float64, device=dev).requires_grad_()
        r = vk.tensor([1.5], dtype=vk.float64, device=dev).requires_grad_()
        g = VD.Gamma(c[0], r).rsample((50,))
        b = VD.Beta(c[0], c[0].flip(0)).rsample((50,))
        d = VD.Dirichlet(c).rsample((50,))
        t = VD.StudentT(c[0]).rsample((50,))
        loss = (g.log() * 0.3).sum() + (b * b).sum() + d[..., 0].sum() + t.abs().sum() \
            + VD.Gamma(c[0], r).log_prob(g.detach()).sum() + VD.Dirichlet(c).entropy().sum()
        loss.backward()
        return [to_np(x) for x in (g, b, d, t, c.grad, r.grad)]

    for got, want in zip(draw(device), draw("cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
