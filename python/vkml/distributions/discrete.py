"""Counting families and mixtures: Geometric, Binomial, Multinomial, OneHotCategoricalStraightThrough
and MixtureSameFamily; and Cauchy (heavy-tailed, no moments)."""

import math
import numbers

import vkml as _vk
from . import constraints
from .categorical import Categorical, OneHotCategorical, OverCategories
from .distribution import BinaryTrial, Distribution, LocationScale

__all__ = ["Binomial", "Cauchy", "Geometric", "MixtureSameFamily", "Multinomial",
           "OneHotCategoricalStraightThrough"]


class Cauchy(LocationScale):
    """Cauchy(loc, scale): density 1 / (pi scale (1 + ((x - loc) / scale)^2)); no mean or variance."""

    @property
    def mean(self):
        return _vk.full_like(self.loc, float("nan"))

    @property
    def variance(self):
        return _vk.full_like(self.loc, float("inf"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = _vk.rand(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + self.scale * _vk.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        self._check(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        self._check(value)
        return _vk.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return _vk.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Geometric(BinaryTrial, Distribution):
    """Geometric(probs=None, logits=None): the number of failures before the first success of
    trials that succeed with probability probs."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._set_trial(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(f"Expected parameter probs of distribution {self!r} to be positive: a "
                             "geometric distribution needs trials that can succeed")

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return _vk.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with _vk.no_grad():
            tiny = _vk.finfo(self.probs.dtype).tiny
            u = _vk.rand(tuple(shape), dtype=self.probs.dtype, device=self.probs.device).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        self._check(value)
        value, probs = _vk.broadcast_tensors(value.to(self.probs.dtype), self.probs)
        # p = 1 and no failures: log 1 = 0, not 0 * -inf
        certain = (probs == 1) & (value == 0)
        failures = _vk.where(certain, _vk.zeros_like(value), value * (-probs).log1p())
        return failures + probs.log()

    def entropy(self):
        bce = _vk.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
        return bce / self.probs


class Binomial(BinaryTrial, Distribution):
    """Binomial(total_count=1, probs=None, logits=None): successes among total_count trials."""
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        (count,) = self._set_trial(probs, logits, total_count)
        self.total_count = count.type_as(self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with _vk.no_grad():
            return _vk.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        self._check(value)
        n, k = self.total_count, value.to(self._param.dtype)
        # k log p + (n - k) log(1 - p) = k logits - n softplus(logits): stable for large |logits|
        log_choose = _vk.lgamma(n + 1) - _vk.lgamma(k + 1) - _vk.lgamma(n - k + 1)
        return log_choose + k * self.logits - n * _vk.nn.functional.softplus(self.logits)

    def entropy(self):
        n = int(self.total_count.max())
        if not bool((self.total_count == n).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(_vk.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        n = int(self.total_count.max())
        if not bool((self.total_count == n).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = _vk.arange(1 + n, dtype=self._param.dtype).to(self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class _MultinomialSupport(constraints.Constraint):
    is_discrete, event_dim = True, 1

    def __init__(self, total_count):
        self.total_count = total_count

    def check(self, value):
        return (value >= 0).all(-1) & (value % 1 == 0).all(-1) & (value.sum(-1) <= self.total_count)


class Multinomial(OverCategories):
    """Multinomial(total_count=1, probs=None, logits=None): counts of each category among
    total_count draws of a Categorical."""

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, numbers.Number):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = int(total_count)
        super().__init__(probs, logits, validate_args=validate_args)

    @property
    def support(self):
        return _MultinomialSupport(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = _vk.Size(sample_shape)
        draws = self._categorical.sample(_vk.Size((self.total_count,)) + sample_shape)
        counts = _vk.nn.functional.one_hot(draws, self._event_shape[0]).sum(0)
        return counts.to(self.probs.dtype)

    def log_prob(self, value):
        self._check(value)
        logits, value = _vk.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        # a category of probability 0 drawn 0 times adds 0 (not 0 * -inf)
        logits = _vk.where((value == 0) & (logits == -math.inf), _vk.zeros_like(logits), logits)
        log_factorials = _vk.lgamma(value.sum(-1) + 1) - _vk.lgamma(value + 1).sum(-1)
        return log_factorials + (logits * value).sum(-1)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample is the one-hot sample with probs' gradient passed through
    (sample + probs - probs.detach())."""
    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


class MixtureSameFamily(Distribution):
    """MixtureSameFamily(mixture_distribution, component_distribution): a Categorical over the
    last batch dim of component_distribution picks the component each value comes from."""
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mix_shape = tuple(mixture_distribution.batch_shape)
        comp_shape = tuple(component_distribution.batch_shape)
        if len(comp_shape) < 1 or _vk.broadcast_shapes(mix_shape, comp_shape[:-1]) != _vk.Size(comp_shape[:-1]):
            raise ValueError(f"`mixture_distribution.batch_shape` ({mix_shape}) is not compatible with "
                             f"`component_distribution.batch_shape` ({comp_shape})")
        k = mixture_distribution.logits.shape[-1]
        if k != comp_shape[-1]:
            raise ValueError(f"`mixture_distribution component` ({k}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({comp_shape[-1]})")
        self._mixture_distribution, self._component_distribution = mixture_distribution, component_distribution
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(comp_shape[:-1], component_distribution.event_shape, validate_args=validate_args)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @property
    def support(self):
        return self._component_distribution.support

    def _pad_mixture(self, t):
        """Mixture-shaped t with the event dims appended as 1s."""
        return t.reshape(tuple(t.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        probs = self._pad_mixture(self._mixture_distribution.probs)
        dim = -1 - self._event_ndims
        comp = self._component_distribution
        within = (probs * comp.variance).sum(dim)
        between = (probs * (comp.mean - self.mean.unsqueeze(dim)).pow(2)).sum(dim)
        return within + between

    def log_prob(self, value):
        self._check(value)
        x = value.unsqueeze(-1 - self._event_ndims)
        log_prob_x = self._component_distribution.log_prob(x)
        log_mix = _vk.log_softmax(self._mixture_distribution.logits, -1)
        return _vk.logsumexp(log_prob_x + log_mix, -1)

    def sample(self, sample_shape=()):
        with _vk.no_grad():
            sample_shape = _vk.Size(sample_shape)
            which = self._mixture_distribution.sample(sample_shape)  # (S, B)
            comp = self._component_distribution.sample(sample_shape)  # (S, B, k, E)
            dim = len(sample_shape) + len(self._batch_shape)
            index = which.reshape(tuple(which.shape) + (1,) * (1 + self._event_ndims))
            index = index.expand(tuple(which.shape) + (1,) + tuple(self._event_shape))
            return comp.gather(dim, index).squeeze(dim)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  "
                f"{self._component_distribution!r})")
