"""TransformedDistribution (a base distribution pushed through transforms; its log_prob by the
change of variables) and the families torch defines that way: LogNormal, HalfNormal, HalfCauchy,
Gumbel, Weibull, Pareto, InverseGamma, LogisticNormal, RelaxedBernoulli and
RelaxedOneHotCategorical (the Gumbel-softmax relaxations)."""

import math

import vkml as _vk
from . import constraints
from .discrete import Cauchy
from .distribution import (BinaryTrial, Distribution, broadcast_all, clamp_probs, logits_to_probs,
                           probs_to_logits, sum_rightmost)
from .gamma import Gamma
from .multivariate import Independent
from .transforms import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform, PowerTransform,
                         SigmoidTransform, StickBreakingTransform, Transform)
from .univariate import Exponential, Normal, Uniform

__all__ = ["Gumbel", "HalfCauchy", "HalfNormal", "InverseGamma", "LogNormal", "LogisticNormal", "Pareto",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "TransformedDistribution", "Weibull"]

EULER_GAMMA = 0.57721566490153286060


class TransformedDistribution(Distribution):
    """Y = t_n(... t_1(X)) for X ~ base_distribution: sampled by applying the transforms, log_prob
    by log p_X(x) - sum log |det dt_i/dx| along the inverse path."""
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        self.transforms = [transforms] if not isinstance(transforms, (list, tuple)) else list(transforms)
        if not all(isinstance(t, Transform) for t in self.transforms):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        transform = ComposeTransform(self.transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = tuple(transform.forward_shape(base_shape))
        expanded_base = tuple(transform.inverse_shape(forward_shape))
        if expanded_base != base_shape:  # the transforms broadcast: the base is expanded to match
            base_distribution = base_distribution.expand(expanded_base[:len(expanded_base) - base_event_dim])
        extra = transform.domain.event_dim - base_event_dim
        self.base_dist = Independent(base_distribution, extra) if extra > 0 else base_distribution
        event_dim = max(transform.codomain.event_dim,
                        base_event_dim + transform.codomain.event_dim - transform.domain.event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """The base expanded to the shape the transforms map onto batch_shape + event_shape."""
        new = _instance if _instance is not None else type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        shape = tuple(batch_shape) + tuple(self.event_shape)
        for t in reversed(self.transforms):
            shape = tuple(t.inverse_shape(shape))
        new.base_dist = self.base_dist.expand(shape[:len(shape) - len(self.base_dist.event_shape)])
        for name in self.arg_constraints:  # a family's own copies of its parameters (Gumbel's loc)
            value = self.__dict__.get(name)
            if isinstance(value, _vk.Tensor):
                new.__dict__[name] = value.expand(tuple(batch_shape) + tuple(value.shape[len(self.batch_shape):]))
        new._batch_shape = _vk.Size(batch_shape)
        return new

    @property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        codomain = self.transforms[-1].codomain
        extra = len(self.event_shape) - codomain.event_dim
        return constraints.independent(codomain, extra) if extra > 0 else codomain

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def sample(self, sample_shape=()):
        with _vk.no_grad():
            return self._push(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=()):
        return self._push(self.base_dist.rsample(sample_shape))

    def _push(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        self._check(value)
        event_dim = len(self.event_shape)
        log_prob, y = 0.0, value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotone(self, value):
        """value, or 1 - value where the transforms reverse the order (their signs' product)."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        return value if isinstance(sign, int) and sign == 1 else sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        self._check_base(value)
        return self._monotone(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotone(value))
        for t in self.transforms:
            value = t(value)
        return value

    def _check_base(self, value):
        if self._validate_args:
            self.base_dist._validate_sample(value)


class LogNormal(TransformedDistribution):
    """LogNormal(loc, scale): exp(N(loc, scale^2))."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    loc = property(lambda self: self.base_dist.loc)
    scale = property(lambda self: self.base_dist.scale)

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _FoldedAtZero(TransformedDistribution):
    """|X| for X symmetric about 0 (HalfNormal, HalfCauchy): twice the base density on [0, inf)."""
    support = constraints.nonnegative
    has_rsample = True

    def log_prob(self, value):
        self._check(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return _vk.where(value >= 0, log_prob, _vk.full_like(log_prob, -math.inf))

    def cdf(self, value):
        self._check(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)

    @property
    def mode(self):
        return _vk.zeros_like(self.scale)


class HalfNormal(_FoldedAtZero):
    """HalfNormal(scale): |N(0, scale^2)|."""
    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    scale = property(lambda self: self.base_dist.scale)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_FoldedAtZero):
    """HalfCauchy(scale): |Cauchy(0, scale)|."""
    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    scale = property(lambda self: self.base_dist.scale)

    @property
    def mean(self):
        return _vk.full_like(self.scale, math.inf)

    @property
    def variance(self):
        return _vk.full_like(self.scale, math.inf)


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale): loc - scale log(-log U) for U uniform on (0, 1)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = _vk.finfo(self.loc.dtype)
        base = Uniform(_vk.full_like(self.loc, finfo.tiny), _vk.full_like(self.loc, 1 - finfo.eps),
                       validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(0, -_vk.ones_like(self.scale)), ExpTransform().inv,
                      AffineTransform(self.loc, -self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value):
        self._check(value)
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + EULER_GAMMA)


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration): scale * E^(1 / concentration) for E ~ Exponential(1)."""
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        base = Exponential(_vk.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration.reciprocal()), AffineTransform(0, self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * _vk.lgamma(1 + self.concentration.reciprocal()).exp()

    @property
    def mode(self):
        c = self.concentration
        return self.scale * ((c - 1) / c) ** c.reciprocal()

    @property
    def variance(self):
        c = self.concentration
        return self.scale.pow(2) * (_vk.lgamma(1 + 2 / c).exp() - _vk.lgamma(1 + 1 / c).exp().pow(2))

    def entropy(self):
        c = self.concentration
        return EULER_GAMMA * (1 - c.reciprocal()) + (self.scale / c).log() + 1


class Pareto(TransformedDistribution):
    """Pareto(scale, alpha): scale * exp(E) for E ~ Exponential(alpha); support [scale, inf)."""
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    has_rsample = True

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base, [ExpTransform(), AffineTransform(0, self.scale)], validate_args=validate_args)

    @property
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)  # infinite at alpha <= 1 (a / (a - 1) there)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)  # infinite at alpha <= 2
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class InverseGamma(TransformedDistribution):
    """InverseGamma(concentration, rate): 1 / X for X ~ Gamma(concentration, rate)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base.rate.new_ones(())
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    concentration = property(lambda self: self.base_dist.concentration)
    rate = property(lambda self: self.base_dist.rate)

    @property
    def mean(self):
        mean = self.rate / (self.concentration - 1)
        return _vk.where(self.concentration > 1, mean, _vk.full_like(mean, math.inf))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        var = self.rate.pow(2) / ((c - 1).pow(2) * (c - 2))
        return _vk.where(c > 2, var, _vk.full_like(var, math.inf))

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + _vk.lgamma(c) - (1 + c) * _vk.digamma(c)


class LogisticNormal(TransformedDistribution):
    """LogisticNormal(loc, scale): the stick-breaking image on the simplex of N(loc, scale^2)
    vectors (one coordinate more than loc has)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = Independent(Normal(base.loc.expand(1), base.scale.expand(1), validate_args=validate_args), 1)
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale


class _LogitRelaxedBernoulli(BinaryTrial, Distribution):
    """The logit of a RelaxedBernoulli: (logit(U) + logits) / temperature for U uniform."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._set_trial(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(_vk.rand(tuple(shape), dtype=self.logits.dtype, device=self.logits.device))
        return (u.log() - (-u).log1p() + self.logits) / self.temperature

    def log_prob(self, value):
        self._check(value)
        logits, value = _vk.broadcast_tensors(self.logits, value)
        temperature = _vk.as_tensor(self.temperature, dtype=value.dtype, device=value.device)
        diff = logits - value * temperature
        return temperature.log() + diff - 2 * _vk.nn.functional.softplus(diff)


class RelaxedBernoulli(TransformedDistribution):
    """RelaxedBernoulli(temperature, probs=None, logits=None): the Concrete relaxation of a
    Bernoulli on (0, 1), differentiable in its parameters (rsample)."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = _LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)

    def _given(self, param):
        return param in self.base_dist.__dict__


class _ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical: log_softmax((logits + Gumbel noise) / temperature)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self.temperature = temperature
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = probs_to_logits(self.probs)
        else:
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = logits_to_probs(self.logits)
        super().__init__(self.logits.shape[:-1], self.logits.shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(_vk.rand(tuple(shape), dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        self._check(value)
        k = self.event_shape[0]
        temperature = _vk.as_tensor(self.temperature, dtype=value.dtype, device=value.device)
        log_scale = math.lgamma(k) + (k - 1) * temperature.log()
        logits, value = _vk.broadcast_tensors(self.logits, value)
        score = logits - value * temperature
        return (score - score.logsumexp(-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """RelaxedOneHotCategorical(temperature, probs=None, logits=None): the Concrete / Gumbel-softmax
    relaxation of a one-hot categorical, points of the simplex differentiable in the parameters."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = _ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)

    def _given(self, param):
        return False  # validated by the base distribution
