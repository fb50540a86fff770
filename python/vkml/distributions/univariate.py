"""Families of one-dimensional values: Normal, Uniform, Laplace, Exponential, Bernoulli, Poisson."""

import math

import vkml as _vk
from . import constraints
from .distribution import (LOG_SQRT_2PI, BinaryTrial, Distribution, ExponentialFamily, LocationScale,
                           broadcast_all)

__all__ = ["Bernoulli", "Exponential", "Laplace", "Normal", "Poisson", "Uniform"]


def _noise(sampler, shape, like):
    """sampler's numbers (randn, rand) of `shape`, in like's dtype, on its device."""
    return sampler(tuple(shape), dtype=like.dtype, device=like.device)


class Normal(LocationScale, ExponentialFamily):
    """Normal(loc, scale): mean loc, standard deviation scale."""

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.loc + _noise(_vk.randn, shape, self.loc) * self.scale

    def log_prob(self, value):
        self._check(value)
        return -((value - self.loc) ** 2) / (2 * self.variance) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value):
        self._check(value)
        return 0.5 * (1 + _vk.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * _vk.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """Uniform(low, high): values in [low, high)."""
    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args and not bool((self.low < self.high).all()):
            raise ValueError("Uniform is not defined when low >= high")

    @property
    def support(self):
        return constraints.half_open_interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return self.high * float("nan")

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.low + _noise(_vk.rand, shape, self.low) * (self.high - self.low)

    def log_prob(self, value):
        self._check(value)
        inside = self.low.le(value).type_as(self.low) * self.high.gt(value).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value):
        self._check(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()


class Laplace(LocationScale):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale)."""

    @property
    def stddev(self):
        return 2 ** 0.5 * self.scale

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _vk.finfo(self.loc.dtype).eps
        u = _noise(_vk.rand, shape, self.loc) * (2 - 2 * eps) - (1 - eps)  # in (-1, 1): log1p stays finite
        return self.loc - self.scale * u.sign() * _vk.log1p(-u.abs())

    def log_prob(self, value):
        self._check(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        self._check(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * _vk.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * _vk.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Exponential(ExponentialFamily):
    """Exponential(rate): density rate exp(-rate x) for x >= 0."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return _vk.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = _noise(_vk.rand, shape, self.rate)  # in [0, 1): -log1p(-u) is finite
        return -_vk.log1p(-u) / self.rate

    def log_prob(self, value):
        self._check(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        self._check(value)
        return 1 - _vk.exp(-self.rate * value)

    def icdf(self, value):
        return -_vk.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()


class Bernoulli(BinaryTrial, ExponentialFamily):
    """Bernoulli(probs=None, logits=None): 1 with probability probs (or sigmoid(logits)), else 0.
    Exactly one of the two is given; the other is derived on first use."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._set_trial(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with _vk.no_grad():
            return _vk.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        self._check(value)
        logits, value = _vk.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        return -_vk.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return _vk.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        values = _vk.arange(2, dtype=self._param.dtype).to(self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Poisson(ExponentialFamily):
    """Poisson(rate): counts with mean rate."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with _vk.no_grad():
            return _vk.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        self._check(value)
        rate, value = _vk.broadcast_tensors(self.rate, value.to(self.rate.dtype))
        return _vk.special.xlogy(value, rate) - rate - _vk.lgamma(value + 1)
