"""LowRankMultivariateNormal, Distribution.expand, the constraint registries (biject_to / transform_to), the constraints and
transforms they need (less_than, lower_triangular, corr_cholesky, square, symmetric,
positive_semidefinite, one_hot, cat, stack, dependent_property; CorrCholeskyTransform,
PositiveDefiniteTransform, CatTransform, StackTransform) against torch.distributions', and a
Gaussian-process regression whose hyperparameters are optimised through transform_to, run with
both libraries from the same data."""

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.transforms as TT

import vkml as vk
import vkml.distributions as VD
import vkml.distributions.transforms as VT
from conftest import assert_close, to_np

RNG = np.random.default_rng(91)


def _pos(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def _probs(*shape):
    p = RNG.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


# (name, builder(D module, tensor maker)) with a batch of (3,)
FAMILIES = [
    ("Normal", lambda D, T: D.Normal(T(RNG.standard_normal(3)), T(_pos(3)))),
    ("Uniform", lambda D, T: D.Uniform(T(-_pos(3)), T(_pos(3)))),
    ("Laplace", lambda D, T: D.Laplace(T(RNG.standard_normal(3)), T(_pos(3)))),
    ("Exponential", lambda D, T: D.Exponential(T(_pos(3)))),
    ("Cauchy", lambda D, T: D.Cauchy(T(RNG.standard_normal(3)), T(_pos(3)))),
    ("Bernoulli", lambda D, T: D.Bernoulli(probs=T(_pos(3) / 3))),
    ("Poisson", lambda D, T: D.Poisson(T(_pos(3)))),
    ("Geometric", lambda D, T: D.Geometric(probs=T(_pos(3) / 3))),
    ("Binomial", lambda D, T: D.Binomial(T(np.array([3.0, 5.0, 7.0])), probs=T(_pos(3) / 3))),
    ("Categorical", lambda D, T: D.Categorical(probs=T(_probs(3, 4)))),
    ("CategoricalLogits", lambda D, T: D.Categorical(logits=T(RNG.standard_normal((3, 4))))),
    ("OneHotCategorical", lambda D, T: D.OneHotCategorical(probs=T(_probs(3, 4)))),
    ("Multinomial", lambda D, T: D.Multinomial(5, probs=T(_probs(3, 4)))),
    ("Gamma", lambda D, T: D.Gamma(T(_pos(3)), T(_pos(3)))),
    ("Chi2", lambda D, T: D.Chi2(T(_pos(3)))),
    ("Beta", lambda D, T: D.Beta(T(_pos(3)), T(_pos(3)))),
    ("Dirichlet", lambda D, T: D.Dirichlet(T(_pos(3, 4)))),
    ("StudentT", lambda D, T: D.StudentT(T(_pos(3) + 2), T(RNG.standard_normal(3)), T(_pos(3)))),
    ("FisherSnedecor", lambda D, T: D.FisherSnedecor(T(_pos(3) + 4), T(_pos(3) + 4))),
    ("NegativeBinomial", lambda D, T: D.NegativeBinomial(T(_pos(3)), probs=T(_pos(3) / 3))),
    ("MultivariateNormal", lambda D, T: D.MultivariateNormal(T(RNG.standard_normal((3, 2))),
                                                             scale_tril=T(np.array([[1.0, 0.0], [0.3, 0.8]])))),
    ("LowRankMultivariateNormal", lambda D, T: D.LowRankMultivariateNormal(
        T(RNG.standard_normal((3, 4))), T(RNG.standard_normal((4, 2))), T(_pos(3, 4)))),
    ("LogNormal", lambda D, T: D.LogNormal(T(RNG.standard_normal(3)), T(_pos(3)))),
    ("HalfNormal", lambda D, T: D.HalfNormal(T(_pos(3)))),
    ("Gumbel", lambda D, T: D.Gumbel(T(RNG.standard_normal(3)), T(_pos(3)))),
    ("Weibull", lambda D, T: D.Weibull(T(_pos(3)), T(_pos(3)))),
    ("Pareto", lambda D, T: D.Pareto(T(_pos(3)), T(_pos(3) + 2))),
    ("ContinuousBernoulli", lambda D, T: D.ContinuousBernoulli(probs=T(np.array([0.2, 0.4999, 0.9])))),
    ("Kumaraswamy", lambda D, T: D.Kumaraswamy(T(_pos(3)), T(_pos(3)))),
    ("Independent", lambda D, T: D.Independent(D.Normal(T(RNG.standard_normal((3, 2))), T(_pos(3, 2))), 1)),
    ("MixtureSameFamily", lambda D, T: D.MixtureSameFamily(D.Categorical(probs=T(_probs(3, 4))),
                                                           D.Normal(T(RNG.standard_normal((3, 4))), T(_pos(3, 4))))),
]


@pytest.mark.parametrize("name,build", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_expand_matches_torch(name, build):
    state = RNG.bit_generator.state
    v = build(VD, vk.tensor)
    RNG.bit_generator.state = state
    t = build(TD, torch.tensor)
    ve, te = v.expand((2, 3)), t.expand(torch.Size([2, 3]))
    assert type(ve) is type(v) and tuple(ve.batch_shape) == tuple(te.batch_shape) == (2, 3)
    assert tuple(ve.event_shape) == tuple(te.event_shape)
    assert tuple(v.batch_shape) == (3,)  # the original is unchanged
    assert tuple(ve.sample((5,)).shape) == tuple(te.sample((5,)).shape)
    value = te.sample()
    assert_close(ve.log_prob(vk.tensor(value.numpy())), te.log_prob(value), what=f"{name} expanded log_prob")
    for stat in ("mean", "variance"):
        try:
            want = getattr(te, stat)
        except NotImplementedError:
            continue
        if bool(torch.isfinite(want).all()):
            assert_close(getattr(ve, stat), want, what=f"{name} expanded {stat}")
    with pytest.raises(Exception):
        v.expand((2, 5))  # batch (3,) does not broadcast to (2, 5)


def test_transformed_distribution_broadcasting_its_base_matches_torch():
    """A base of batch () pushed through an AffineTransform with (3,)-shaped parameters: torch
    expands the base (this raised NotImplementedError before Distribution.expand)."""
    loc, scale = RNG.standard_normal(3), _pos(3)
    v = VD.TransformedDistribution(VD.Normal(vk.tensor(0.0, dtype=vk.float64), 1.0),
                                   VT.AffineTransform(vk.tensor(loc), vk.tensor(scale)))
    t = TD.TransformedDistribution(TD.Normal(torch.tensor(0.0, dtype=torch.float64), 1.0),
                                   TT.AffineTransform(torch.tensor(loc), torch.tensor(scale)))
    assert tuple(v.batch_shape) == tuple(t.batch_shape) == (3,)
    x = RNG.standard_normal((4, 3))
    assert_close(v.log_prob(vk.tensor(x)), t.log_prob(torch.tensor(x)), what="broadcast base log_prob")
    ve, te = v.expand((2, 3)), t.expand((2, 3))
    assert_close(ve.log_prob(vk.tensor(x[:2])), te.log_prob(torch.tensor(x[:2])), what="expanded transformed")
    assert tuple(ve.rsample((4,)).shape) == (4, 2, 3)


CONSTRAINTS = [
    ("real", lambda C: C.real),
    ("positive", lambda C: C.positive),
    ("nonnegative", lambda C: C.nonnegative),
    ("greater_than", lambda C: C.greater_than(1.5)),
    ("less_than", lambda C: C.less_than(-0.5)),
    ("unit_interval", lambda C: C.unit_interval),
    ("interval", lambda C: C.interval(-1.0, 3.0)),
    ("half_open_interval", lambda C: C.half_open_interval(0.0, 2.0)),
    ("simplex", lambda C: C.simplex),
    ("lower_cholesky", lambda C: C.lower_cholesky),
    ("positive_definite", lambda C: C.positive_definite),
    ("corr_cholesky", lambda C: C.corr_cholesky),
    ("real_vector", lambda C: C.real_vector),
    ("independent_positive", lambda C: C.independent(C.positive, 1)),
    ("cat", lambda C: C.cat([C.positive, C.interval(0.0, 1.0)], -1, [2, 3])),
    ("stack", lambda C: C.stack([C.positive, C.real, C.less_than(1.0)], -1)),
]


def _unconstrained(name, registry_name):
    if name in ("lower_cholesky", "positive_definite"):
        return RNG.standard_normal((2, 3, 3))
    if name == "corr_cholesky":
        return RNG.standard_normal((2, 6))
    if name == "simplex":
        return RNG.standard_normal((2, 4 if registry_name == "biject_to" else 5))
    if name == "stack":
        return RNG.standard_normal((2, 3))
    return RNG.standard_normal((2, 5))


@pytest.mark.parametrize("registry_name", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name,build", CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS])
def test_constraint_registries_match_torch(name, build, registry_name):
    vc, tc = build(VD.constraints), build(TD.constraints)
    vreg, treg = getattr(VD, registry_name), getattr(TD, registry_name)
    try:
        tt = treg(tc)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            vreg(vc)
        return
    vt = vreg(vc)
    assert type(vt).__name__ == type(tt).__name__
    x = _unconstrained(name, registry_name)
    vx, tx = vk.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    vy, ty = vt(vx), tt(tx)
    assert_close(vy, ty, what=f"{registry_name}({name})")
    assert bool(vc.check(vy.detach()).all()) and bool(tc.check(ty.detach()).all())
    assert_close(vc.check(vy.detach()), tc.check(ty.detach()), what=f"{name}.check")
    if vt.bijective:
        assert_close(vt.inv(vy.detach()), x, what=f"{registry_name}({name}) inverse")
        vj, tj = vt.log_abs_det_jacobian(vx, vy), tt.log_abs_det_jacobian(tx, ty)
        assert_close(vj, tj, what=f"{registry_name}({name}) log|det J|")
        if not tj.requires_grad:  # the identity's: a constant
            return
        vj.sum().backward()
        tj.sum().backward()
        assert_close(vx.grad, tx.grad, what=f"{registry_name}({name}) log|det J| gradient")


def test_registry_refuses_unknown_constraints_and_registers_new_ones():
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        VD.transform_to(VD.constraints.boolean)

    class Positive2(VD.constraints.Constraint):
        def check(self, value):
            return value > 0

    VD.transform_to.register(Positive2, lambda c: VT.ExpTransform())
    assert isinstance(VD.transform_to(Positive2()), VT.ExpTransform)
    with pytest.raises(TypeError):
        VD.transform_to.register(3, lambda c: None)


def test_new_constraints_check_as_torch():
    sym = RNG.standard_normal((4, 3, 3))
    sym = sym + np.swapaxes(sym, -1, -2)
    psd = sym @ np.swapaxes(sym, -1, -2)
    psd[0, :, 0] = psd[0, 0, :] = 0.0  # singular: semidefinite, not definite
    values = {
        "lower_triangular": np.tril(RNG.standard_normal((4, 3, 3))) + np.triu(np.eye(3) * 0, 1),
        "square": RNG.standard_normal((4, 3, 3)),
        "symmetric": np.concatenate([sym[:2], RNG.standard_normal((2, 3, 3))]),
        "positive_semidefinite": psd,
        "positive_definite": psd,
        "one_hot": np.array([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.0]]),
        "less_than": RNG.standard_normal((4, 3)),
    }
    values["lower_triangular"][1, 0, 2] = 1.0
    for name, value in values.items():
        vc = getattr(VD.constraints, name)
        tc = getattr(TD.constraints, name)
        if name == "less_than":
            vc, tc = vc(0.0), tc(0.0)
        assert vc.event_dim == tc.event_dim and vc.is_discrete == tc.is_discrete, name
        assert_close(vc.check(vk.tensor(value)), tc.check(torch.tensor(value)), what=f"{name}.check")
    rect = RNG.standard_normal((2, 3, 4))
    assert_close(VD.constraints.square.check(vk.tensor(rect)), TD.constraints.square.check(torch.tensor(rect)),
                 what="square.check of non-square")
    stack_v = VD.constraints.stack([VD.constraints.positive, VD.constraints.real], 0)
    stack_t = TD.constraints.stack([TD.constraints.positive, TD.constraints.real], 0)
    assert stack_v.event_dim == stack_t.event_dim
    z = RNG.standard_normal((2, 3))
    assert_close(stack_v.check(vk.tensor(z)), stack_t.check(torch.tensor(z)), what="stack.check")


TRANSFORMS = [
    ("CorrCholesky", lambda T: T.CorrCholeskyTransform(), (3, 10)),
    ("PositiveDefinite", lambda T: T.PositiveDefiniteTransform(), (2, 3, 3)),
    ("Cat", lambda T: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, -2.0), T.SigmoidTransform()],
                                     dim=1, lengths=[1, 2, 2]), (3, 5)),
    ("CatEvent", lambda T: T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                                           T.IndependentTransform(T.SigmoidTransform(), 1)], dim=-1,
                                          lengths=[2, 3]), (3, 5)),
    ("Stack", lambda T: T.StackTransform([T.ExpTransform(), T.TanhTransform()], dim=0), (2, 4)),
]


@pytest.mark.parametrize("name,build,shape", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_new_transforms_match_torch(name, build, shape):
    vt, tt = build(VT), build(TT)
    x = RNG.standard_normal(shape)
    vx, tx = vk.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    vy, ty = vt(vx), tt(tx)
    assert_close(vy, ty, what=f"{name} forward")
    assert tuple(vt.forward_shape(shape)) == tuple(tt.forward_shape(shape))
    assert tuple(vt.inverse_shape(tuple(ty.shape))) == tuple(tt.inverse_shape(ty.shape))
    assert vt.domain.event_dim == tt.domain.event_dim and vt.codomain.event_dim == tt.codomain.event_dim
    assert_close(vt.inv(vy.detach()), tt.inv(ty.detach()), what=f"{name} inverse")
    if name != "PositiveDefinite":  # torch gives it no log|det J| either
        vj, tj = vt.log_abs_det_jacobian(vx, vy), tt.log_abs_det_jacobian(tx, ty)
        assert_close(vj, tj, what=f"{name} log|det J|")
        (vj.sum() + vy.sum()).backward()
        (tj.sum() + ty.sum()).backward()
        assert_close(vx.grad, tx.grad, what=f"{name} gradients")
    with pytest.raises((ValueError, IndexError)):
        vt(vk.tensor(RNG.standard_normal((3, 7, 2))))


def test_corr_cholesky_log_det_is_the_jacobians():
    """log|det J| of CorrCholesky against autograd's Jacobian of x -> y's strict lower triangle."""
    x = vk.tensor(RNG.standard_normal(6))
    t = VT.CorrCholeskyTransform()
    rows, cols = np.tril_indices(4, -1)

    def lower(v):
        return t(v)[vk.tensor(rows), vk.tensor(cols)]

    jac = vk.autograd.functional.jacobian(lower, x)
    want = np.linalg.slogdet(to_np(jac))[1]
    assert_close(t.log_abs_det_jacobian(x, t(x)), np.array(want), what="CorrCholesky log|det J| vs Jacobian")
    y = to_np(t(x))
    assert_close(np.linalg.norm(y, axis=-1), np.ones(4), what="unit rows")


def test_dependent_property_support():
    class Shifted(VD.Distribution):
        arg_constraints = {}

        def __init__(self, low):
            self.low = low
            super().__init__(low.shape)

        @VD.constraints.dependent_property(is_discrete=False, event_dim=0)
        def support(self):
            return VD.constraints.greater_than(self.low)

    d = Shifted(vk.tensor([1.0, 2.0]))
    assert VD.constraints.is_dependent(Shifted.support) and Shifted.support.event_dim == 0
    assert bool(vk.equal(d.support.check(vk.tensor([1.5, 1.5])), vk.tensor([True, False])))


def _gp_losses(lib, x, y, steps):
    """Exact GP regression: lengthscale, variance and noise through transform_to(positive),
    optimised by LBFGS on the negative log marginal likelihood."""
    D = lib.distributions
    X, Y = lib.tensor(x), lib.tensor(y)
    raw = [lib.zeros((), dtype=lib.float64, requires_grad=True) for _ in range(3)]
    positive = D.transform_to(D.constraints.positive)
    opt = lib.optim.LBFGS(raw, lr=0.1, max_iter=20)

    def closure():
        opt.zero_grad()
        ls, var, noise = (positive(r) for r in raw)
        K = var * lib.exp(-0.5 * lib.cdist(X, X).pow(2) / ls ** 2) + noise * lib.eye(len(x), dtype=lib.float64)
        loss = -D.MultivariateNormal(lib.zeros(len(x), dtype=lib.float64), covariance_matrix=K).log_prob(Y)
        loss.backward()
        return loss

    return [float(opt.step(closure).detach()) for _ in range(steps)], [float(positive(r).detach()) for r in raw]


def test_gaussian_process_through_transform_to_matches_torch():
    x = np.linspace(0, 1, 20)[:, None]
    y = np.sin(6 * x[:, 0]) + 0.1 * RNG.standard_normal(20)
    vl, vp = _gp_losses(vk, x, y, 3)
    tl, tp = _gp_losses(torch, x, y, 3)
    assert_close(np.array(vl), np.array(tl), what="GP losses", scale_atol=False)
    assert_close(np.array(vp), np.array(tp), what="GP hyperparameters", scale_atol=False)


def _lowrank(lib, loc, w, d):
    args = [lib.tensor(a).requires_grad_() for a in (loc, w, d)]
    return lib.distributions.LowRankMultivariateNormal(*args), args


def test_low_rank_multivariate_normal_matches_torch():
    loc, w, d = RNG.standard_normal((2, 5)), RNG.standard_normal((3, 1, 5, 2)), _pos(5)
    vd, vargs = _lowrank(vk, loc, w, d)
    td, targs = _lowrank(torch, loc, w, d)
    assert tuple(vd.batch_shape) == tuple(td.batch_shape) == (3, 2)
    x = RNG.standard_normal((4, 3, 2, 5))
    vl, tl = vd.log_prob(vk.tensor(x)), td.log_prob(torch.tensor(x))
    assert_close(vl, tl, what="low-rank log_prob")
    (vl.sum() + vd.entropy().sum()).backward()
    (tl.sum() + td.entropy().sum()).backward()
    for i, (a, b) in enumerate(zip(vargs, targs)):
        assert_close(a.grad, b.grad, what=f"low-rank log_prob + entropy gradient {i}")
    for stat in ("mean", "mode", "variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        assert_close(getattr(vd, stat), getattr(td, stat), what=f"low-rank {stat}")
    dense = VD.MultivariateNormal(vd.loc, covariance_matrix=vd.covariance_matrix)
    assert_close(vd.log_prob(vk.tensor(x)), dense.log_prob(vk.tensor(x)), what="low-rank vs its dense twin")
    q_v, _ = _lowrank(vk, RNG.standard_normal(5), RNG.standard_normal((5, 3)), _pos(5))
    q_t = TD.LowRankMultivariateNormal(*[torch.tensor(to_np(a)) for a in (q_v.loc, q_v.cov_factor, q_v.cov_diag)])
    assert_close(VD.kl_divergence(vd, q_v), TD.kl_divergence(td, q_t), what="KL(low rank || low rank)")
    mvn_v = VD.MultivariateNormal(q_v.loc, covariance_matrix=q_v.covariance_matrix)
    mvn_t = TD.MultivariateNormal(q_t.loc, covariance_matrix=q_t.covariance_matrix)
    assert_close(VD.kl_divergence(vd, mvn_v), TD.kl_divergence(td, mvn_t), what="KL(low rank || MVN)")
    assert_close(VD.kl_divergence(mvn_v, vd), TD.kl_divergence(mvn_t, td), what="KL(MVN || low rank)")
    draws = vd.rsample((20000,))
    assert tuple(draws.shape) == (20000, 3, 2, 5)
    cov = np.cov(to_np(draws[:, 0, 0]).T)
    assert np.abs(cov - to_np(vd.covariance_matrix[0, 0])).max() < 0.15 * np.abs(cov).max()
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices"):
        VD.LowRankMultivariateNormal(vk.zeros(3), vk.zeros(4, 2), vk.ones(3))
    with pytest.raises(ValueError, match="cov_diag must be a batch of vectors"):
        VD.LowRankMultivariateNormal(vk.zeros(3), vk.zeros(3, 2), vk.ones(4))
    with pytest.raises(ValueError, match="cov_diag"):
        VD.LowRankMultivariateNormal(vk.zeros(3), vk.zeros(3, 2), -vk.ones(3))
