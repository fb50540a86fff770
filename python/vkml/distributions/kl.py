"""kl_divergence(p, q) = E_p[log p - log q], by closed forms registered per pair of families
(register_kl); the most specific registered pair of the two classes' ancestors is used."""

import math

import vkml as _vk
from .categorical import Categorical, OneHotCategorical
from .distribution import sum_rightmost
from .discrete import Binomial, Geometric
from .gamma import Beta, Dirichlet, Gamma
from .transformed import Gumbel, HalfNormal, Pareto, TransformedDistribution
from .multivariate import Independent, LowRankMultivariateNormal, MultivariateNormal
from .special_families import ContinuousBernoulli
from .univariate import Bernoulli, Exponential, Laplace, Normal, Poisson, Uniform

__all__ = ["kl_divergence", "register_kl"]

_KL = {}


def register_kl(type_p, type_q):
    """Decorator: fn(p, q) computes KL(p || q) for p of type_p and q of type_q."""
    def decorator(fn):
        _KL[type_p, type_q] = fn
        return fn
    return decorator


def _lookup(type_p, type_q):
    best, rank = None, None
    for (tp, tq), fn in _KL.items():
        if issubclass(type_p, tp) and issubclass(type_q, tq):
            r = (type_p.__mro__.index(tp), type_q.__mro__.index(tq))
            if rank is None or r < rank:
                best, rank = fn, r
    return best


def kl_divergence(p, q):
    fn = _lookup(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and "
                                  f"q type {type(q).__name__}")
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    softplus = _vk.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _vk.where(q.probs == 0, _vk.full_like(t1, math.inf), t1)
    t1 = _vk.where(p.probs == 0, _vk.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _vk.where(q.probs == 1, _vk.full_like(t2, math.inf), t2)
    t2 = _vk.where(p.probs == 1, _vk.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _vk.where(q.probs == 0, _vk.full_like(t, math.inf), t)
    t = _vk.where(p.probs == 0, _vk.zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return _vk.where(outside, _vk.full_like(result, math.inf), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * _vk.exp(-loc_abs_diff / p.scale) - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if not bool((p.total_count == q.total_count).all()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    n = p.total_count
    kl = n * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return _vk.where(_vk.isinf(kl), _vk.full_like(kl, math.inf), kl)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes "
                         "cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    shape = _vk.broadcast_shapes(tuple(Lp.shape[:-2]), tuple(Lq.shape[:-2]), tuple(p.loc.shape[:-1]),
                                 tuple(q.loc.shape[:-1]))
    n = p.event_shape[0]
    Lp = Lp.expand(tuple(shape) + (n, n))
    Lq = Lq.expand(tuple(shape) + (n, n))
    # tr(Sq^-1 Sp) = |Lq^-1 Lp|_F^2, the Mahalanobis term |Lq^-1 (mq - mp)|^2, and the log dets
    trace = _vk.linalg.solve_triangular(Lq, Lp, upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(tuple(shape) + (n,)).unsqueeze(-1)
    maha = _vk.linalg.solve_triangular(Lq, diff, upper=False).pow(2).sum((-2, -1))
    half_log_det = lambda L: L.diagonal(dim1=-2, dim2=-1).log().sum(-1)  # noqa: E731
    return half_log_det(Lq) - half_log_det(Lp) + 0.5 * (trace + maha - n)


def _dense(d):
    return d if isinstance(d, MultivariateNormal) else MultivariateNormal(d.loc, scale_tril=d.scale_tril)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank(p, q):
    """Through the dense factors (n x n; torch keeps q's low rank, the same value to rounding)."""
    return _kl_mvn_mvn(_dense(p), _dense(q))


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different reinterpreted_batch_ndims")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = _vk.lgamma(q.concentration) - _vk.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * _vk.digamma(p.concentration)
    return t1 + t2 + t3 + (q.rate - p.rate) * (p.concentration / p.rate)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    total_p, total_q = p.concentration.sum(-1), q.concentration.sum(-1)
    log_norms = _vk.lgamma(total_p) - _vk.lgamma(total_q) - (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    mean_logs = p.concentration.digamma() - total_p.digamma().unsqueeze(-1)  # E_p[log x_i]
    return log_norms + ((p.concentration - q.concentration) * mean_logs).sum(-1)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    euler = 0.5772156649015329
    return -q.concentration * ratio.log() + ratio + q.concentration.lgamma() + q.concentration * euler - (1 + euler)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    """The same transforms on both sides: KL is invariant under a bijection, so the bases'."""
    if p.transforms != q.transforms or tuple(p.event_shape) != tuple(q.event_shape):
        raise NotImplementedError(f"No KL(p || q) is implemented for {type(p).__name__} and {type(q).__name__} "
                                  "with different transforms or event shapes")
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    scale_ratio, q_loc, p_loc = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    euler = 0.5772156649015329
    return (-scale_ratio.log() - q_loc + p_loc + scale_ratio * euler
            + _vk.exp(q_loc + (1 + scale_ratio).lgamma() - p_loc) - (1 + euler))


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _vk.where(p.scale < q.scale, _vk.full_like(result, math.inf), result)  # p's support leaves q's


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli(p, q):
    return (p.mean * (p.logits - q.logits) + p._log_norm() + (-p.probs).log1p()
            - q._log_norm() - (-q.probs).log1p())
