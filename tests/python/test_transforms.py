"""vkml.distributions.transforms and TransformedDistribution against torch's: every transform's
values, inverse and log |det J| with their float64 gradients (and log |det J| against the
Jacobian autograd computes), the families torch builds on transforms (LogNormal, HalfNormal,
HalfCauchy, Gumbel, Weibull, Pareto, InverseGamma, LogisticNormal, RelaxedBernoulli,
RelaxedOneHotCategorical), their KL pairs, draws' moments, and a tanh-squashed Gaussian policy
(Soft Actor-Critic's actor) stepped with both libraries."""

import math

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.transforms as TT

import vkml as vk
import vkml.distributions as VD
import vkml.distributions.transforms as VT
from conftest import assert_close, devices, to_np

RNG = np.random.default_rng(44)


def _both(a):
    return vk.tensor(a).requires_grad_(), torch.tensor(a, requires_grad=True)


# (name, builder(T module, lib), input sampler)
TRANSFORMS = [
    ("Exp", lambda T, m: T.ExpTransform(), lambda: RNG.uniform(-2, 2, (3, 4))),
    ("ExpInv", lambda T, m: T.ExpTransform().inv, lambda: RNG.uniform(0.1, 3, (3, 4))),
    ("Power", lambda T, m: T.PowerTransform(m.tensor(1.7, dtype=m.float64)), lambda: RNG.uniform(0.1, 3, (3, 4))),
    ("PowerNeg", lambda T, m: T.PowerTransform(m.tensor(-1.0, dtype=m.float64)), lambda: RNG.uniform(0.1, 3, (3, 4))),
    ("Sigmoid", lambda T, m: T.SigmoidTransform(), lambda: RNG.uniform(-4, 4, (3, 4))),
    ("Tanh", lambda T, m: T.TanhTransform(), lambda: RNG.uniform(-3, 3, (3, 4))),
    ("Softplus", lambda T, m: T.SoftplusTransform(), lambda: RNG.uniform(-3, 3, (3, 4))),
    ("Affine", lambda T, m: T.AffineTransform(0.5, -2.0), lambda: RNG.uniform(-2, 2, (3, 4))),
    ("AffineTensor", lambda T, m: T.AffineTransform(m.tensor([0.5, -1.0, 2.0, 0.0], dtype=m.float64),
                                                    m.tensor([1.5, -0.5, 2.0, 3.0], dtype=m.float64), event_dim=1),
     lambda: RNG.uniform(-2, 2, (3, 4))),
    ("StickBreaking", lambda T, m: T.StickBreakingTransform(), lambda: RNG.uniform(-2, 2, (3, 4))),
    ("Compose", lambda T, m: T.ComposeTransform([T.AffineTransform(0.3, 2.0), T.TanhTransform(),
                                                T.AffineTransform(1.0, 0.5)]), lambda: RNG.uniform(-1, 1, (3, 4))),
    ("Independent", lambda T, m: T.IndependentTransform(T.SigmoidTransform(), 1), lambda: RNG.uniform(-2, 2, (3, 4))),
    ("Reshape", lambda T, m: T.ReshapeTransform((4,), (2, 2)), lambda: RNG.uniform(-2, 2, (3, 4))),
    ("ComposeEventDims", lambda T, m: T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()]),
     lambda: RNG.uniform(-1, 1, (3, 4))),
]


@pytest.mark.parametrize("name,build,sample", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transforms_match_torch(name, build, sample):
    v, t = build(VT, vk), build(TT, torch)
    x = sample()
    vx, tx = _both(x)
    vy, ty = v(vx), t(tx)
    assert_close(vy, ty, what=name + " forward")
    assert_close(v.inv(vy.detach()), t.inv(ty.detach()), what=name + " inverse")
    assert_close(v.inv(vy.detach()), x, what=name + " round trip")
    vj, tj = v.log_abs_det_jacobian(vx, vy), t.log_abs_det_jacobian(tx, ty)
    assert_close(vj, tj, what=name + " log_abs_det_jacobian")
    up = RNG.standard_normal(tuple(tj.shape))
    up_y = RNG.standard_normal(tuple(ty.shape))
    ((vj * vk.tensor(up)).sum() + (vy * vk.tensor(up_y)).sum()).backward()
    ((tj * torch.tensor(up)).sum() + (ty * torch.tensor(up_y)).sum()).backward()
    assert_close(vx.grad, tx.grad, what=name + " gradient")
    assert v.domain.event_dim == t.domain.event_dim and v.codomain.event_dim == t.codomain.event_dim, name
    assert tuple(v.forward_shape((3, 4))) == tuple(t.forward_shape((3, 4))), name
    assert v.bijective == t.bijective, name


def test_log_abs_det_jacobian_is_autograds_jacobian():
    """For the element-wise transforms, log |dy/dx| from vkml's own backward of y; for the
    stick-breaking one (R^3 -> simplex of 4), log |det| of the Jacobian onto the first 3 outputs."""
    x = RNG.uniform(-1.5, 1.5, 5)
    for t in (VT.ExpTransform(), VT.SigmoidTransform(), VT.TanhTransform(), VT.SoftplusTransform(),
              VT.AffineTransform(0.2, -3.0), VT.PowerTransform(vk.tensor(2.5, dtype=vk.float64)).inv):
        xs = vk.tensor(np.abs(x) if isinstance(t, VT._InverseTransform) else x).requires_grad_()
        y = t(xs)
        (dy,) = vk.autograd.grad(y.sum(), xs)
        assert_close(t.log_abs_det_jacobian(xs, y), dy.abs().log(), what=repr(t))
    z = vk.tensor(RNG.uniform(-1, 1, 3))
    sb = VT.StickBreakingTransform()
    jac = vk.autograd.functional.jacobian(lambda u: sb(u)[:3], z)
    assert_close(sb.log_abs_det_jacobian(z, sb(z)), vk.linalg.slogdet(jac)[1], what="stick breaking")


# (name, builder(D, params), params' (lo, hi) ranges, value sampler(shape))
FAMILIES = [
    ("LogNormal", lambda D, p: D.LogNormal(p[0], p[1]), [(-1, 1), (0.3, 1.5)], lambda s: RNG.uniform(0.1, 5, s)),
    ("HalfNormal", lambda D, p: D.HalfNormal(p[0]), [(0.3, 2)], lambda s: RNG.uniform(0.0, 4, s)),
    ("HalfCauchy", lambda D, p: D.HalfCauchy(p[0]), [(0.3, 2)], lambda s: RNG.uniform(0.0, 6, s)),
    ("Gumbel", lambda D, p: D.Gumbel(p[0], p[1]), [(-1, 1), (0.5, 2)], lambda s: RNG.uniform(-3, 5, s)),
    ("Weibull", lambda D, p: D.Weibull(p[0], p[1]), [(0.5, 2), (0.6, 3)], lambda s: RNG.uniform(0.05, 4, s)),
    ("Pareto", lambda D, p: D.Pareto(p[0], p[1]), [(0.5, 1), (0.8, 4)], lambda s: RNG.uniform(1.0, 6, s)),
    ("InverseGamma", lambda D, p: D.InverseGamma(p[0], p[1]), [(0.5, 4), (0.5, 2)], lambda s: RNG.uniform(0.1, 4, s)),
]


@pytest.mark.parametrize("name,build,ranges,sampler", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_transformed_families_match_torch(name, build, ranges, sampler):
    shape = (2, 3)
    raw = [RNG.uniform(lo, hi, shape) for lo, hi in ranges]
    vp = [vk.tensor(r).requires_grad_() for r in raw]
    tp = [torch.tensor(r, requires_grad=True) for r in raw]
    v, t = build(VD, vp), build(TD, tp)
    assert tuple(v.batch_shape) == tuple(t.batch_shape) and tuple(v.event_shape) == tuple(t.event_shape)
    x = sampler(shape)
    vx, tx = vk.tensor(x), torch.tensor(x)
    assert_close(v.log_prob(vx), t.log_prob(tx), what=name + " log_prob")
    for stat in ("mean", "variance", "mode"):
        assert_close(getattr(v, stat), getattr(t, stat), what=f"{name} {stat}")
    assert_close(v.entropy(), t.entropy(), what=name + " entropy")
    has_cdf = name not in ("InverseGamma",)
    if has_cdf:
        assert_close(v.cdf(vx), t.cdf(tx), what=name + " cdf")
        q = RNG.uniform(0.05, 0.95, shape)
        assert_close(v.icdf(vk.tensor(q)), t.icdf(torch.tensor(q)), what=name + " icdf")
    up = RNG.standard_normal(shape)
    ((v.log_prob(vx) + v.entropy()) * vk.tensor(up)).sum().backward()
    ((t.log_prob(tx) + t.entropy()) * torch.tensor(up)).sum().backward()
    for a, b in zip(vp, tp):  # torch's trigamma (InverseGamma's entropy) is within 5e-10
        np.testing.assert_allclose(to_np(a.grad), to_np(b.grad), rtol=1e-8, atol=1e-10, err_msg=name)
    for sample_shape in ((), (4,)):
        assert tuple(v.sample(sample_shape).shape) == tuple(t.sample(sample_shape).shape), name
    assert repr(v).split("(")[0] == repr(t).split("(")[0]


def test_relaxed_and_logistic_normal_match_torch():
    logits = RNG.standard_normal((2, 4))
    value = RNG.dirichlet(np.ones(4), 2)
    vl, tl = _both(logits)
    v = VD.RelaxedOneHotCategorical(0.7, logits=vl)
    t = TD.RelaxedOneHotCategorical(torch.tensor(0.7, dtype=torch.float64), logits=tl)
    assert_close(v.log_prob(vk.tensor(value)), t.log_prob(torch.tensor(value)), what="RelaxedOneHotCategorical")
    v.log_prob(vk.tensor(value)).sum().backward()
    t.log_prob(torch.tensor(value)).sum().backward()
    assert_close(vl.grad, tl.grad, what="RelaxedOneHotCategorical d logits")
    s = to_np(v.rsample((5,)))
    assert s.shape == (5, 2, 4) and np.allclose(s.sum(-1), 1)

    p = RNG.uniform(0.1, 0.9, (3,))
    u = RNG.uniform(0.05, 0.95, (3,))
    vp, tp = _both(p)
    v = VD.RelaxedBernoulli(0.4, probs=vp)
    t = TD.RelaxedBernoulli(torch.tensor(0.4, dtype=torch.float64), probs=tp)
    assert_close(v.log_prob(vk.tensor(u)), t.log_prob(torch.tensor(u)), what="RelaxedBernoulli")
    v.log_prob(vk.tensor(u)).sum().backward()
    t.log_prob(torch.tensor(u)).sum().backward()
    assert_close(vp.grad, tp.grad, what="RelaxedBernoulli d probs")

    loc, scale = RNG.standard_normal(3), RNG.uniform(0.5, 1.5, 3)
    value = RNG.dirichlet(np.ones(4))
    v, t = VD.LogisticNormal(vk.tensor(loc), vk.tensor(scale)), TD.LogisticNormal(torch.tensor(loc),
                                                                                  torch.tensor(scale))
    assert tuple(v.event_shape) == tuple(t.event_shape) == (4,)
    assert_close(v.log_prob(vk.tensor(value)), t.log_prob(torch.tensor(value)), what="LogisticNormal")


def test_transformed_distribution_composes_as_torchs():
    """A user's TransformedDistribution: an Independent Normal through an affine map and tanh
    (SAC's squashed Gaussian), and a Normal vector through stick breaking onto the simplex."""
    loc, scale = RNG.standard_normal((2, 3)), RNG.uniform(0.3, 1.2, (2, 3))
    value = RNG.uniform(-0.9, 0.9, (2, 3))
    vl, tl = _both(loc)
    v = VD.TransformedDistribution(VD.Independent(VD.Normal(vl, vk.tensor(scale)), 1),
                                   [VT.AffineTransform(0.1, 2.0), VT.TanhTransform()])
    t = TD.TransformedDistribution(TD.Independent(TD.Normal(tl, torch.tensor(scale)), 1),
                                   [TT.AffineTransform(0.1, 2.0), TT.TanhTransform()])
    assert tuple(v.batch_shape) == (2,) and tuple(v.event_shape) == (3,)
    assert_close(v.log_prob(vk.tensor(value)), t.log_prob(torch.tensor(value)), what="tanh-squashed")
    v.log_prob(vk.tensor(value)).sum().backward()
    t.log_prob(torch.tensor(value)).sum().backward()
    assert_close(vl.grad, tl.grad, what="tanh-squashed d loc")
    v = VD.TransformedDistribution(VD.Normal(vk.tensor(loc), vk.tensor(scale)), VT.StickBreakingTransform())
    t = TD.TransformedDistribution(TD.Normal(torch.tensor(loc), torch.tensor(scale)), TT.StickBreakingTransform())
    x = RNG.dirichlet(np.ones(4), 2)
    assert tuple(v.event_shape) == tuple(t.event_shape) == (4,)
    assert_close(v.log_prob(vk.tensor(x)), t.log_prob(torch.tensor(x)), what="stick-breaking normal")
    with pytest.raises(ValueError):
        VD.LogNormal(vk.tensor([0.0]), vk.tensor([1.0])).log_prob(vk.tensor([-1.0]))
    with pytest.raises(ValueError, match="Transform"):
        VD.TransformedDistribution(VD.Normal(0.0, 1.0), [lambda x: x])


def test_transformed_families_draws_have_the_moments():
    vk.manual_seed(3)
    n = 200000
    for d in (VD.LogNormal(vk.tensor(0.2), vk.tensor(0.5)), VD.HalfNormal(vk.tensor(1.5)),
              VD.Gumbel(vk.tensor(1.0), vk.tensor(2.0)), VD.Weibull(vk.tensor(1.5), vk.tensor(2.0)),
              VD.Pareto(vk.tensor(1.0), vk.tensor(5.0)), VD.InverseGamma(vk.tensor(6.0), vk.tensor(2.0))):
        s = to_np(d.sample((n,)))
        mean, var = float(d.mean), float(d.variance)
        assert abs(s.mean() - mean) < 6 * math.sqrt(var / n), (d, s.mean(), mean)
    s = to_np(VD.HalfCauchy(vk.tensor(1.0)).sample((n,)))
    assert abs(np.median(s) - 1.0) < 0.02 and (s >= 0).all()  # the median of |Cauchy(0, 1)| is 1


def test_transformed_kl_pairs_match_torch():
    a, b, c, d = (RNG.uniform(0.5, 2.0, 3) for _ in range(4))
    cases = [("LogNormal", lambda D, x, y: D.LogNormal(x - 1, y)), ("HalfNormal", lambda D, x, y: D.HalfNormal(y)),
             ("Gumbel", lambda D, x, y: D.Gumbel(x, y)), ("Pareto", lambda D, x, y: D.Pareto(x, y))]
    for name, make in cases:
        got = VD.kl_divergence(make(VD, vk.tensor(a), vk.tensor(b)), make(VD, vk.tensor(c), vk.tensor(d)))
        want = TD.kl_divergence(make(TD, torch.tensor(a), torch.tensor(b)), make(TD, torch.tensor(c), torch.tensor(d)))
        assert_close(got, want, what=f"KL({name} || {name})")
    with pytest.raises(NotImplementedError):
        VD.kl_divergence(VD.Weibull(vk.tensor(1.0), vk.tensor(2.0)), VD.LogNormal(vk.tensor(0.0), vk.tensor(1.0)))


def test_squashed_gaussian_actor_steps_as_torch():
    """Soft Actor-Critic's actor: a = tanh(mu + std * eps) with eps drawn ahead (numpy), its
    log-probability by the tanh transform's change of variables, the loss alpha log pi - Q(s, a)
    with a fixed quadratic critic; eight Adam steps with each library from the same weights."""
    obs = RNG.standard_normal((32, 5))
    eps = RNG.standard_normal((8, 32, 2))
    w, b = RNG.standard_normal((4, 5)) * 0.3, np.zeros(4)
    q_w = RNG.standard_normal((2, 2))

    def run(lib, D, T):
        params = [lib.tensor(a.copy(), requires_grad=True) for a in (w, b)]
        opt = lib.optim.Adam(params, lr=1e-2)
        o, qw = lib.tensor(obs), lib.tensor(q_w)
        history = []
        for step in range(8):
            out = o @ params[0].T + params[1]
            mu, log_std = out[:, :2], out[:, 2:].clamp(-5, 2)
            base = D.Independent(D.Normal(mu, log_std.exp()), 1)
            tanh = T.TanhTransform(cache_size=1)
            pi = D.TransformedDistribution(base, [tanh])
            pre = mu + log_std.exp() * lib.tensor(eps[step])
            action = tanh(pre)
            log_pi = pi.log_prob(action)
            q = -((action @ qw) ** 2).sum(-1)
            loss = (0.2 * log_pi - q).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append([p.detach().numpy().copy() for p in params] + [loss.item()])
        return history

    for step, (x, y) in enumerate(zip(run(vk, VD, VT), run(torch, TD, TT))):
        for a, b_ in zip(x, y):
            np.testing.assert_allclose(a, b_, rtol=1e-6, atol=1e-9, err_msg=f"step {step}")


@pytest.mark.parametrize("device", devices())
def test_transformed_families_on_every_device(device):
    """The same draws (one seed: the uniforms and normals are the host's on every device) pushed
    through the transforms by each device's kernels: values, log_prob and gradients as the CPU's."""
    def run(dev):
        vk.manual_seed(12)
        loc = vk.tensor([0.3, -0.5, 1.0], dtype=vk.float64, device=dev).requires_grad_()
        scale = vk.tensor([0.7, 1.2, 0.4], dtype=vk.float64, device=dev).requires_grad_()
        draws = [VD.LogNormal(loc, scale).rsample((40,)), VD.Gumbel(loc, scale).rsample((40,)),
                 VD.Weibull(scale, scale + 1).rsample((40,)), VD.HalfNormal(scale).rsample((40,)),
                 VD.LogisticNormal(loc, scale).rsample((40,)), VD.RelaxedBernoulli(scale, logits=loc).rsample((40,))]
        lp = VD.LogNormal(loc, scale).log_prob(draws[0].detach()).sum() + VD.Gumbel(loc, scale).entropy().sum()
        (sum(d.sum() for d in draws) + lp).backward()
        return [to_np(d) for d in draws] + [to_np(lp), to_np(loc.grad), to_np(scale.grad)]

    for got, want in zip(run(device), run("cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
