"""The Distribution base class (torch.distributions.Distribution) and the helpers the families
share. Every family composes vkml's ops, so its log_prob, entropy and rsample differentiate
through autograd as any other expression."""

import math
import numbers
from functools import cached_property

import vkml as _vk
from . import constraints

__all__ = ["Distribution", "ExponentialFamily"]


def broadcast_all(*values):
    """The arguments as tensors of one broadcast shape: numbers take the dtype and device of the
    tensors among them (the default dtype when there are none)."""
    tensors = [v for v in values if isinstance(v, _vk.Tensor)]
    if not all(isinstance(v, (_vk.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or vkml.Tensor.")
    like = tensors[0] if tensors else None
    kw = dict(dtype=like.dtype, device=like.device) if like is not None else dict(dtype=_vk.get_default_dtype())
    as_tensors = [v if isinstance(v, _vk.Tensor) else _vk.tensor(float(v), **kw) for v in values]
    return _vk.broadcast_tensors(*as_tensors)


def sum_rightmost(value, dim):
    """value summed over its last `dim` dims."""
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1) if dim > 0 else value


def clamp_probs(probs):
    eps = _vk.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    return _vk.sigmoid(logits) if is_binary else _vk.softmax(logits, -1)


def probs_to_logits(probs, is_binary=False):
    p = clamp_probs(probs)
    return _vk.log(p) - _vk.log1p(-p) if is_binary else _vk.log(p)


class Distribution:
    """A batch of probability distributions of shape batch_shape, each over values of shape
    event_shape. Arguments are validated against arg_constraints (and values passed to log_prob
    against the support) while validation is on, as torch's default."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints = {}
    support = None

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError("set_default_validate_args expects a bool")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = _vk.Size(batch_shape), _vk.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if not self._validate_args:
            return
        for param, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint) or not self._given(param):
                continue
            value = getattr(self, param)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                    f"distribution {self!r} to satisfy the constraint {constraint!r}, but found invalid "
                    f"values:\n{value}")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample (no gradient): rsample's where there is one."""
        with _vk.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized samples (rsample)")

    def sample_n(self, n):
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def perplexity(self):
        return _vk.exp(self.entropy())

    def expand(self, batch_shape, _instance=None):
        """The same distribution broadcast to batch_shape (no copy: parameters are expanded views).
        Parameters are the tensors named in arg_constraints (the family's or a base class's) with
        batch_shape leading, and the distributions a family is built of (expanded over their own
        extra batch dims)."""
        batch_shape = _vk.Size(batch_shape)
        new = _instance if _instance is not None else type(self).__new__(type(self))
        old = tuple(self._batch_shape)
        names = set(self.arg_constraints)  # with a base class's (Chi2 keeps Gamma's concentration)
        names.update(k for cls in type(self).__mro__ if isinstance(cls.__dict__.get("arg_constraints"), dict)
                     for k in cls.__dict__["arg_constraints"])
        params = {k: self.__dict__[k] for k in names if isinstance(self.__dict__.get(k), _vk.Tensor)}
        expanded = {id(v): v.expand(tuple(batch_shape) + tuple(v.shape[len(old):])) for v in params.values()
                    if tuple(v.shape[:len(old)]) == old}
        for name, value in self.__dict__.items():
            if isinstance(value, _vk.Tensor):
                value = expanded.get(id(value), value)  # a parameter, or an alias of one (_param)
            elif isinstance(value, Distribution):
                inner = tuple(value.batch_shape)
                if inner[:len(old)] != old:
                    raise NotImplementedError(f"{type(self).__name__}.expand: its part {name} has batch shape "
                                              f"{inner}, not one that starts with {old}")
                value = value.expand(tuple(batch_shape) + inner[len(old):])
            new.__dict__[name] = value
        new._batch_shape, new._event_shape = batch_shape, self._event_shape
        new._validate_args = self._validate_args
        return new

    def _extended_shape(self, sample_shape=()):
        return _vk.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _check(self, value):
        """Validates a value passed to log_prob / cdf while validation is on."""
        if self._validate_args:
            self._validate_sample(value)

    def _validate_sample(self, value):
        """A value passed to log_prob: a tensor whose shape broadcasts with the batch and event
        shapes, inside the support."""
        if not isinstance(value, _vk.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim = len(self._event_shape)
        if tuple(value.shape[value.ndim - event_dim:]) != tuple(self._event_shape) and event_dim:
            raise ValueError(f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                             f"{tuple(self._event_shape)}.")
        actual = tuple(value.shape[:value.ndim - event_dim])
        expected = tuple(self._batch_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {tuple(value.shape)} "
                                 f"vs {tuple(self._extended_shape())}.")
        support = self.support
        if support is None or constraints.is_dependent(support):
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to "
                             f"be within the support ({support!r}) of the distribution {self!r}, but found "
                             f"invalid values:\n{value}")

    def _given(self, param):
        """Whether param is an argument given or computed from one (Chi2's df, Beta's
        concentrations), not the other parameterisation derived on first use (probs / logits)."""
        return param in self.__dict__ or isinstance(getattr(type(self), param, None), property)

    def __repr__(self):
        values = [(k, getattr(self, k)) for k in self.arg_constraints if self._given(k)]
        parts = [f"{k}: {v if v.numel() == 1 else v.size()}" for k, v in values]
        return f"{type(self).__name__}({', '.join(parts)})"


class ExponentialFamily(Distribution):
    """The base of the exponential families (Normal, Bernoulli, Poisson, Exponential here): a
    class to test against, as torch's; each family computes its own entropy in closed form."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError


class LocationScale(Distribution):
    """The families of a location and a scale on the real line (Normal, Laplace, Cauchy)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc


class BinaryTrial:
    """The success probability of a trial given as probs or as logits (Bernoulli, Geometric,
    Binomial): the one given is kept, the other derived on first use."""

    def _set_trial(self, probs, logits, *others):
        """Keeps probs or logits broadcast with `others` (numbers or tensors); returns those."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        *rest, param = broadcast_all(*others, value)
        setattr(self, name, param)
        self._param = param
        return rest

    @cached_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @cached_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape


LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))
