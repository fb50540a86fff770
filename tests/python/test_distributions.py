"""vkml.distributions against torch.distributions: the families' log_prob, cdf / icdf, entropy,
moments and their float64 gradients, sample shapes and frequencies, rsample's reparameterisation,
argument and support validation, kl_divergence for every registered pair, and a REINFORCE policy
step (pytorch/examples' reinforce.py shape) run with both libraries and compared step by step."""

import math

import numpy as np
import pytest
import torch
import torch.distributions as TD

import vkml as vk
import vkml.distributions as VD
from conftest import assert_close, devices, to_np

RNG = np.random.default_rng(21)


def pair(*shape, lo=-2.0, hi=2.0):
    """The same float64 values as a vkml and a torch tensor, both requiring grad."""
    a = RNG.uniform(lo, hi, shape)
    return vk.tensor(a).requires_grad_(), torch.tensor(a, requires_grad=True)


def values(a):
    return vk.tensor(np.asarray(a)), torch.tensor(np.asarray(a))


# (name, builder(lib, params), params as (lo, hi) ranges, a log_prob value range or list)
def _families():
    return [
        ("Normal", lambda D, p: D.Normal(p[0], p[1]), [(-1, 1), (0.5, 2)], (-3, 3)),
        ("Uniform", lambda D, p: D.Uniform(p[0], p[0] + p[1]), [(-1, 0), (1, 2)], (0.01, 0.99)),
        ("Laplace", lambda D, p: D.Laplace(p[0], p[1]), [(-1, 1), (0.5, 2)], (-3, 3)),
        ("Exponential", lambda D, p: D.Exponential(p[0]), [(0.5, 2)], (0.1, 3)),
        ("Bernoulli", lambda D, p: D.Bernoulli(probs=p[0]), [(0.1, 0.9)], [0.0, 1.0]),
        ("BernoulliLogits", lambda D, p: D.Bernoulli(logits=p[0]), [(-2, 2)], [0.0, 1.0]),
        ("Poisson", lambda D, p: D.Poisson(p[0]), [(0.5, 4)], [0.0, 1.0, 3.0, 7.0]),
        ("Cauchy", lambda D, p: D.Cauchy(p[0], p[1]), [(-1, 1), (0.5, 2)], (-5, 5)),
        ("Geometric", lambda D, p: D.Geometric(probs=p[0]), [(0.1, 0.9)], [0.0, 1.0, 3.0, 7.0]),
        ("GeometricLogits", lambda D, p: D.Geometric(logits=p[0]), [(-2, 2)], [0.0, 2.0, 5.0]),
        ("Binomial", lambda D, p: D.Binomial(10, probs=p[0]), [(0.1, 0.9)], [0.0, 1.0, 4.0, 10.0]),
        ("BinomialLogits", lambda D, p: D.Binomial(7, logits=p[0]), [(-2, 2)], [0.0, 3.0, 7.0]),
    ]


FAMILIES = _families()


@pytest.mark.parametrize("name,build,ranges,support", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_univariate_families_match_torch(name, build, ranges, support):
    shape = (2, 3)
    raw = [RNG.uniform(lo, hi, shape) for lo, hi in ranges]
    vp = [vk.tensor(a).requires_grad_() for a in raw]
    tp = [torch.tensor(a, requires_grad=True) for a in raw]
    v, t = build(VD, vp), build(TD, tp)
    assert tuple(v.batch_shape) == tuple(t.batch_shape) and tuple(v.event_shape) == tuple(t.event_shape)
    if isinstance(support, tuple):
        x = RNG.uniform(*support, shape)
        if name == "Uniform":  # inside each element's own interval
            x = raw[0] + support[0] + (support[1] - support[0]) * RNG.random(shape) * raw[1]
    else:
        x = RNG.choice(support, shape)
    vx, tx = values(x)
    assert_close(v.log_prob(vx), t.log_prob(tx), what=name + " log_prob")
    if name == "Poisson":  # no closed form: both refuse
        with pytest.raises(NotImplementedError):
            t.entropy()
        with pytest.raises(NotImplementedError):
            v.entropy()
    else:
        assert_close(v.entropy(), t.entropy(), what=name + " entropy")
    for stat in ("mean", "variance", "stddev", "mode"):
        assert_close(getattr(v, stat), getattr(t, stat), what=f"{name} {stat}")
    if name in ("Normal", "Uniform", "Laplace", "Exponential", "Cauchy"):
        assert_close(v.cdf(vx), t.cdf(tx), what=name + " cdf")
        q = RNG.uniform(0.05, 0.95, shape)
        assert_close(v.icdf(vk.tensor(q)), t.icdf(torch.tensor(q)), what=name + " icdf")
    # gradients of log_prob + entropy with respect to every parameter
    up = RNG.standard_normal(shape)
    with_entropy = name != "Poisson"
    ((v.log_prob(vx) + (v.entropy() if with_entropy else 0)) * vk.tensor(up)).sum().backward()
    ((t.log_prob(tx) + (t.entropy() if with_entropy else 0)) * torch.tensor(up)).sum().backward()
    for a, b in zip(vp, tp):
        assert_close(a.grad, b.grad, what=name + " d param")
    # sample shapes
    for sample_shape in ((), (4,), (2, 5)):
        assert tuple(v.sample(sample_shape).shape) == tuple(t.sample(sample_shape).shape), name


def test_sample_frequencies_and_moments():
    """Many draws agree with each family's mean and variance (6 standard errors)."""
    vk.manual_seed(0)
    n = 200000
    cases = [VD.Normal(vk.tensor(1.5), vk.tensor(0.5)), VD.Uniform(vk.tensor(-1.0), vk.tensor(3.0)),
             VD.Laplace(vk.tensor(0.5), vk.tensor(2.0)), VD.Exponential(vk.tensor(1.7)),
             VD.Bernoulli(probs=vk.tensor(0.3)), VD.Poisson(vk.tensor(2.5))]
    for d in cases:
        s = to_np(d.sample((n,)))
        mean, var = float(d.mean), float(d.variance)
        assert abs(s.mean() - mean) < 6 * math.sqrt(var / n), (d, s.mean(), mean)
        assert abs(s.var() - var) < 0.05 * var, (d, s.var(), var)
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    c = VD.Categorical(probs=vk.tensor(probs * 3))  # unnormalised, as torch takes them
    counts = np.bincount(to_np(c.sample((n,))), minlength=4) / n
    np.testing.assert_allclose(counts, probs, atol=6 * math.sqrt(0.25 / n))
    oh = to_np(VD.OneHotCategorical(probs=vk.tensor(probs)).sample((n,)))
    assert oh.shape == (n, 4) and (oh.sum(1) == 1).all()
    np.testing.assert_allclose(oh.mean(0), probs, atol=6 * math.sqrt(0.25 / n))


def test_rsample_is_reparameterised():
    """rsample's gradient flows into the parameters: d x / d loc = 1, d x / d scale = (x - loc) /
    scale for Normal; low + u (high - low) for Uniform; MultivariateNormal's through L."""
    loc, scale = vk.tensor([0.5, -1.0]).requires_grad_(), vk.tensor([2.0, 0.5]).requires_grad_()
    x = VD.Normal(loc, scale).rsample()
    x.sum().backward()
    assert_close(loc.grad, np.ones(2), "float32")
    assert_close(scale.grad, to_np((x - loc) / scale), "float32")
    assert not VD.Normal(loc, scale).sample().requires_grad
    low, high = vk.tensor([0.0]).requires_grad_(), vk.tensor([4.0]).requires_grad_()
    u = VD.Uniform(low, high).rsample()
    u.sum().backward()
    assert_close(high.grad, to_np(u / 4), "float32")
    assert_close(low.grad, 1 - to_np(u / 4), "float32")
    L = vk.tensor([[1.0, 0.0], [0.5, 2.0]]).requires_grad_()
    VD.MultivariateNormal(vk.zeros(2), scale_tril=L).rsample((3,)).sum().backward()
    assert L.grad is not None and L.grad.shape == (2, 2)
    with pytest.raises(NotImplementedError, match="rsample"):
        VD.Bernoulli(probs=vk.tensor(0.5)).rsample()


@pytest.mark.parametrize("by", ["probs", "logits"])
def test_categorical_matches_torch(by):
    raw = RNG.uniform(0.1, 1.0, (3, 5)) if by == "probs" else RNG.standard_normal((3, 5))
    a, b = vk.tensor(raw).requires_grad_(), torch.tensor(raw, requires_grad=True)
    v, t = VD.Categorical(**{by: a}), TD.Categorical(**{by: b})
    idx = np.array([[0, 4, 2], [1, 1, 3]])
    assert_close(v.log_prob(vk.tensor(idx)), t.log_prob(torch.tensor(idx)), what="log_prob")
    assert_close(v.entropy(), t.entropy(), what="entropy")
    assert_close(v.probs, t.probs, what="probs")
    assert_close(v.logits, t.logits, what="logits")
    assert_close(v.mode, t.mode, what="mode")
    assert tuple(v.enumerate_support().shape) == tuple(t.enumerate_support().shape)
    (v.log_prob(vk.tensor(idx)).sum() + v.entropy().sum()).backward()
    (t.log_prob(torch.tensor(idx)).sum() + t.entropy().sum()).backward()
    assert_close(a.grad, b.grad, what="d " + by)
    vo, to = VD.OneHotCategorical(**{by: a.detach()}), TD.OneHotCategorical(**{by: b.detach()})
    onehot = np.eye(5)[idx[0]]
    assert_close(vo.log_prob(vk.tensor(onehot)), to.log_prob(torch.tensor(onehot)), what="one-hot")
    assert_close(vo.entropy(), to.entropy(), what="one-hot entropy")


@pytest.mark.parametrize("by", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_matches_torch(by):
    k = 3
    A = RNG.standard_normal((2, k, k))
    cov = A @ A.transpose(0, 2, 1) + k * np.eye(k)
    mat = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
           "scale_tril": np.linalg.cholesky(cov)}[by]
    loc = RNG.standard_normal((2, k))
    vm, tm = vk.tensor(mat).requires_grad_(), torch.tensor(mat, requires_grad=True)
    vl, tl = vk.tensor(loc).requires_grad_(), torch.tensor(loc, requires_grad=True)
    v, t = VD.MultivariateNormal(vl, **{by: vm}), TD.MultivariateNormal(tl, **{by: tm})
    assert tuple(v.batch_shape) == (2,) and tuple(v.event_shape) == (k,)
    x = RNG.standard_normal((4, 2, k))
    assert_close(v.log_prob(vk.tensor(x)), t.log_prob(torch.tensor(x)), "float64", what="log_prob")
    assert_close(v.entropy(), t.entropy(), what="entropy")
    for attr in ("covariance_matrix", "precision_matrix", "scale_tril", "variance", "mean"):
        assert_close(getattr(v, attr), getattr(t, attr), what=attr)
    (v.log_prob(vk.tensor(x)).sum() + v.entropy().sum()).backward()
    (t.log_prob(torch.tensor(x)).sum() + t.entropy().sum()).backward()
    assert_close(vl.grad, tl.grad, what="d loc")
    assert_close(vm.grad, tm.grad, what="d " + by)
    assert tuple(v.rsample((5,)).shape) == (5, 2, k)


def test_independent_matches_torch():
    a, b = pair(4, 3)
    s, ts = pair(4, 3, lo=0.5, hi=2)
    v = VD.Independent(VD.Normal(a, s), 1)
    t = TD.Independent(TD.Normal(b, ts), 1)
    assert tuple(v.batch_shape) == (4,) and tuple(v.event_shape) == (3,)
    x = RNG.standard_normal((2, 4, 3))
    assert_close(v.log_prob(vk.tensor(x)), t.log_prob(torch.tensor(x)), what="log_prob")
    assert_close(v.entropy(), t.entropy(), what="entropy")
    assert v.has_rsample and tuple(v.rsample((5,)).shape) == (5, 4, 3)


def _kl_pairs():
    return [
        ("Normal", lambda D, p: D.Normal(p[0], p[1]), [(-1, 1), (0.5, 2)]),
        ("Bernoulli", lambda D, p: D.Bernoulli(probs=p[0]), [(0.05, 0.95)]),
        ("Categorical", lambda D, p: D.Categorical(logits=p[0]), [(-2, 2)]),
        ("OneHotCategorical", lambda D, p: D.OneHotCategorical(logits=p[0]), [(-2, 2)]),
        ("Uniform", lambda D, p: D.Uniform(p[0], p[0] + p[1]), [(-1, 0), (1, 3)]),
        ("Exponential", lambda D, p: D.Exponential(p[0]), [(0.5, 2)]),
        ("Laplace", lambda D, p: D.Laplace(p[0], p[1]), [(-1, 1), (0.5, 2)]),
        ("Poisson", lambda D, p: D.Poisson(p[0]), [(0.5, 4)]),
        ("Geometric", lambda D, p: D.Geometric(probs=p[0]), [(0.05, 0.95)]),
        ("Binomial", lambda D, p: D.Binomial(6, probs=p[0]), [(0.05, 0.95)]),
        ("Independent", lambda D, p: D.Independent(D.Normal(p[0], p[1]), 1), [(-1, 1), (0.5, 2)]),
    ]


@pytest.mark.parametrize("name,build,ranges", _kl_pairs(), ids=[k[0] for k in _kl_pairs()])
def test_kl_divergence_matches_torch(name, build, ranges):
    shape = (3, 4)
    p_raw = [RNG.uniform(lo, hi, shape) for lo, hi in ranges]
    q_raw = [RNG.uniform(lo, hi, shape) for lo, hi in ranges]
    if name == "Uniform":  # q's interval wider than p's, and one that is not (inf)
        q_raw = [p_raw[0] - 0.5, p_raw[1] + 1.0]
        q_raw[0][0, 0] = p_raw[0][0, 0] + 0.1
    vp = [vk.tensor(a).requires_grad_() for a in p_raw]
    tp = [torch.tensor(a, requires_grad=True) for a in p_raw]
    got = VD.kl_divergence(build(VD, vp), build(VD, [vk.tensor(a) for a in q_raw]))
    want = TD.kl_divergence(build(TD, tp), build(TD, [torch.tensor(a) for a in q_raw]))
    assert_close(got, want, what=name)
    finite = np.isfinite(to_np(want))
    (got * vk.tensor(finite.astype(np.float64))).sum().backward()
    (want * torch.tensor(finite.astype(np.float64))).sum().backward()
    for a, b in zip(vp, tp):
        assert_close(a.grad, b.grad, what=name + " d p")


def test_kl_of_multivariate_normals_matches_torch():
    k = 3
    mats = []
    for _ in range(2):
        A = RNG.standard_normal((k, k))
        mats.append(A @ A.T + k * np.eye(k))
    locs = RNG.standard_normal((2, k))
    v = VD.kl_divergence(VD.MultivariateNormal(vk.tensor(locs[0]), vk.tensor(mats[0])),
                         VD.MultivariateNormal(vk.tensor(locs[1]), vk.tensor(mats[1])))
    t = TD.kl_divergence(TD.MultivariateNormal(torch.tensor(locs[0]), torch.tensor(mats[0])),
                         TD.MultivariateNormal(torch.tensor(locs[1]), torch.tensor(mats[1])))
    assert_close(v, t, what="mvn")
    with pytest.raises(NotImplementedError, match="No KL"):
        VD.kl_divergence(VD.Normal(0.0, 1.0), VD.Exponential(1.0))


def test_register_kl_picks_the_most_specific_pair():
    class MyNormal(VD.Normal):
        pass

    @VD.register_kl(MyNormal, VD.Normal)
    def _mine(p, q):
        return vk.tensor(-1.0)

    try:
        assert float(VD.kl_divergence(MyNormal(0.0, 1.0), VD.Normal(0.0, 1.0))) == -1.0
        assert float(VD.kl_divergence(VD.Normal(0.0, 1.0), VD.Normal(0.0, 1.0))) == 0.0
    finally:
        from vkml.distributions import kl
        del kl._KL[MyNormal, VD.Normal]


def test_invalid_arguments_and_values_raise_as_torch():
    """Validation is on by default, as torch's: bad parameters and values outside the support
    raise ValueError naming the parameter or the support; set_default_validate_args(False) and
    validate_args=False turn it off."""
    bad = [lambda D, T: D.Normal(T([0.0]), T([-1.0])),
           lambda D, T: D.Bernoulli(probs=T([1.5])),
           lambda D, T: D.Exponential(T([0.0])),
           lambda D, T: D.Uniform(T([1.0]), T([0.0])),
           lambda D, T: D.Categorical(probs=T([[-0.5, 1.5]])),
           lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 2.0], [2.0, 1.0]])),
           lambda D, T: D.Bernoulli(probs=T([0.5]), logits=T([0.0])),
           lambda D, T: D.Categorical()]
    for make in bad:
        with pytest.raises(ValueError):
            make(TD, torch.tensor)
        with pytest.raises(ValueError):
            make(VD, vk.tensor)
    with pytest.raises(ValueError, match="support"):
        VD.Bernoulli(probs=vk.tensor([0.5])).log_prob(vk.tensor([2.0]))
    with pytest.raises(ValueError, match="support"):
        VD.Categorical(logits=vk.zeros(3)).log_prob(vk.tensor(3))
    with pytest.raises(ValueError, match="support"):
        VD.Exponential(vk.tensor(1.0)).log_prob(vk.tensor(-1.0))
    with pytest.raises(ValueError, match="broadcastable"):
        VD.Normal(vk.zeros(3), vk.ones(3)).log_prob(vk.zeros(4))
    assert VD.Normal(vk.tensor([0.0]), vk.tensor([-1.0]), validate_args=False).batch_shape == (1,)
    VD.Distribution.set_default_validate_args(False)
    try:
        VD.Normal(vk.tensor([0.0]), vk.tensor([-1.0]))
        VD.Bernoulli(probs=vk.tensor([0.5])).log_prob(vk.tensor([2.0]))
    finally:
        VD.Distribution.set_default_validate_args(True)


def test_reinforce_policy_steps_match_torch():
    """pytorch/examples' reinforce.py: a policy net gives Categorical(probs), the loss is
    -sum(log_prob(action) * return); the same weights, actions and returns in both libraries give
    the same parameters after each Adam step."""
    rng = np.random.default_rng(8)
    w1, b1 = rng.standard_normal((128, 4)) * 0.3, rng.standard_normal(128) * 0.1
    w2, b2 = rng.standard_normal((2, 128)) * 0.3, rng.standard_normal(2) * 0.1

    def make(lib):
        nn = lib.nn
        model = nn.Sequential(nn.Linear(4, 128), nn.Dropout(p=0.0), nn.ReLU(), nn.Linear(128, 2), nn.Softmax(dim=1))
        with lib.no_grad():
            for p, a in zip(model.parameters(), (w1, b1, w2, b2)):
                p.copy_(lib.tensor(a.astype(np.float32)))
        return model, lib.optim.Adam(model.parameters(), lr=1e-2)

    libs = {"vk": (vk, VD, *make(vk)), "torch": (torch, TD, *make(torch))}
    for episode in range(3):
        states = rng.standard_normal((20, 4)).astype(np.float32)
        actions = rng.integers(0, 2, 20)
        returns = rng.standard_normal(20).astype(np.float32)
        params = {}
        for name, (lib, D, model, opt) in libs.items():
            losses = []
            for s, a, r in zip(states, actions, returns):
                probs = model(lib.tensor(s).unsqueeze(0))
                m = D.Categorical(probs)
                losses.append(-m.log_prob(lib.tensor([int(a)])) * float(r))
            opt.zero_grad()
            loss = lib.cat(losses).sum()
            loss.backward()
            opt.step()
            params[name] = [to_np(p) for p in model.parameters()]
        for a, b in zip(params["vk"], params["torch"]):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"episode {episode}")


def test_gaussian_policy_steps_match_torch():
    """A continuous-action policy (PPO's shape): Normal(mu(s), exp(log_std)) over 2 action dims,
    loss = -(log_prob(a).sum(-1) * advantage).mean() - 0.01 entropy; the same weights, actions and
    advantages in both libraries give the same parameters after each step."""
    rng = np.random.default_rng(12)
    w, b = rng.standard_normal((2, 6)) * 0.2, rng.standard_normal(2) * 0.1

    def make(lib):
        model = lib.nn.Linear(6, 2)
        log_std = lib.nn.Parameter(lib.tensor([-0.5, 0.2]))
        with lib.no_grad():
            model.weight.copy_(lib.tensor(w.astype(np.float32)))
            model.bias.copy_(lib.tensor(b.astype(np.float32)))
        return model, log_std, lib.optim.Adam(list(model.parameters()) + [log_std], lr=3e-3)

    libs = {"vk": (vk, VD, *make(vk)), "torch": (torch, TD, *make(torch))}
    for step in range(4):
        s = rng.standard_normal((32, 6)).astype(np.float32)
        a = rng.standard_normal((32, 2)).astype(np.float32)
        adv = rng.standard_normal(32).astype(np.float32)
        params = {}
        for name, (lib, D, model, log_std, opt) in libs.items():
            dist = D.Independent(D.Normal(model(lib.tensor(s)), log_std.exp()), 1)
            loss = -(dist.log_prob(lib.tensor(a)) * lib.tensor(adv)).mean() - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            params[name] = [to_np(p) for p in list(model.parameters()) + [log_std]]
        for x, y in zip(params["vk"], params["torch"]):
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5, err_msg=f"step {step}")


@pytest.mark.parametrize("device", devices())
def test_families_run_on_every_device(device):
    """Parameters on a device give samples there and the CPU's log_prob and entropy."""
    rng = np.random.default_rng(2)
    loc, logits, x = rng.standard_normal(3), rng.standard_normal((4, 5)), rng.standard_normal(3)
    cases = [(lambda t: VD.Normal(t(loc), t(np.ones(3))), x),
             (lambda t: VD.Categorical(logits=t(logits)), np.array([0, 4, 2, 1])),
             (lambda t: VD.Bernoulli(logits=t(loc)), np.array([1.0, 0.0, 1.0])),
             (lambda t: VD.MultivariateNormal(t(loc), t(np.eye(3) * 2)), x)]
    for make, value in cases:
        here = make(lambda a: vk.tensor(a).to(device))
        cpu = make(vk.tensor)
        assert here.sample((2,)).device == vk.tensor(loc).to(device).device
        assert_close(here.log_prob(vk.tensor(value).to(device)).cpu(), cpu.log_prob(vk.tensor(value)), what=str(cpu))
        assert_close(here.entropy().cpu(), cpu.entropy(), what=str(cpu))


def test_multinomial_matches_torch():
    raw = RNG.uniform(0.1, 1.0, (3, 4))
    a, b = vk.tensor(raw).requires_grad_(), torch.tensor(raw, requires_grad=True)
    v, t = VD.Multinomial(6, probs=a), TD.Multinomial(6, probs=b)
    counts = np.array([[1, 2, 3, 0], [6, 0, 0, 0], [0, 1, 1, 4]], dtype=np.float64)
    assert_close(v.log_prob(vk.tensor(counts)), t.log_prob(torch.tensor(counts)), what="log_prob")
    assert_close(v.mean, t.mean, what="mean")
    assert_close(v.variance, t.variance, what="variance")
    v.log_prob(vk.tensor(counts)).sum().backward()
    t.log_prob(torch.tensor(counts)).sum().backward()
    assert_close(a.grad, b.grad, what="d probs")
    s = to_np(v.sample((5,)))
    assert s.shape == (5, 3, 4) and (s.sum(-1) == 6).all()
    with pytest.raises(ValueError, match="support"):
        v.log_prob(vk.tensor(counts + 1))


def test_mixture_same_family_matches_torch():
    """A batch of Gaussian mixtures (the GMM programs' shape): log_prob, moments and their
    gradients through the mixing weights and the components; samples from the chosen components."""
    logits, locs, scales = pair(2, 3), pair(2, 3), pair(2, 3, lo=0.5, hi=2)
    v = VD.MixtureSameFamily(VD.Categorical(logits=logits[0]), VD.Normal(locs[0], scales[0]))
    t = TD.MixtureSameFamily(TD.Categorical(logits=logits[1]), TD.Normal(locs[1], scales[1]))
    x = RNG.standard_normal((4, 2))
    assert_close(v.log_prob(vk.tensor(x)), t.log_prob(torch.tensor(x)), what="log_prob")
    assert_close(v.mean, t.mean, what="mean")
    assert_close(v.variance, t.variance, what="variance")
    (v.log_prob(vk.tensor(x)).sum() + v.variance.sum()).backward()
    (t.log_prob(torch.tensor(x)).sum() + t.variance.sum()).backward()
    for (a, b), what in ((logits, "logits"), (locs, "locs"), (scales, "scales")):
        assert_close(a.grad, b.grad, what="d " + what)
    assert tuple(v.sample((7,)).shape) == tuple(t.sample((7,)).shape) == (7, 2)
    # far-apart components: each sample lies next to one of them
    far = VD.MixtureSameFamily(VD.Categorical(probs=vk.tensor([0.5, 0.5])),
                               VD.Normal(vk.tensor([-100.0, 100.0]), vk.tensor([1.0, 1.0])))
    s = to_np(far.sample((1000,)))
    assert (np.abs(np.abs(s) - 100) < 6).all() and 0.4 < (s > 0).mean() < 0.6
    mv = VD.MixtureSameFamily(VD.Categorical(logits=vk.zeros(3)),
                              VD.Independent(VD.Normal(vk.zeros(3, 2), vk.ones(3, 2)), 1))
    tm = TD.MixtureSameFamily(TD.Categorical(logits=torch.zeros(3)),
                              TD.Independent(TD.Normal(torch.zeros(3, 2), torch.ones(3, 2)), 1))
    y = RNG.standard_normal((5, 2)).astype(np.float32)
    assert_close(mv.log_prob(vk.tensor(y)), tm.log_prob(torch.tensor(y)), "float32", what="vector events")
    assert tuple(mv.sample((4,)).shape) == (4, 2)


def test_straight_through_and_exponential_family():
    probs = vk.tensor([[0.2, 0.3, 0.5]]).requires_grad_()
    d = VD.OneHotCategoricalStraightThrough(probs=probs)
    s = d.rsample()
    assert (to_np(s).sum(-1) == 1).all()
    (s * vk.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    # the one-hot's value, probs' gradient: d/dprobs of sum(w * probs / sum(probs)) (normalised)
    t = torch.tensor([[0.2, 0.3, 0.5]], requires_grad=True)
    (TD.OneHotCategoricalStraightThrough(probs=t).probs * torch.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    assert_close(probs.grad, t.grad, "float32")
    for family in (VD.Normal, VD.Bernoulli, VD.Poisson, VD.Exponential):
        assert issubclass(family, VD.ExponentialFamily)
