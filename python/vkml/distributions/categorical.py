"""Categorical (class indices) and OneHotCategorical (one-hot vectors) over the last dim's
categories."""

from functools import cached_property

import vkml as _vk
from . import constraints
from .distribution import Distribution, logits_to_probs, probs_to_logits

__all__ = ["Categorical", "OneHotCategorical", "OverCategories"]


class Categorical(Distribution):
    """Categorical(probs=None, logits=None): index i with probability probs[..., i] (normalised
    over the last dim), or softmax(logits)[..., i]. Exactly one of the two is given."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            param = self.logits
        self._param = param
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    @cached_property
    def probs(self):
        return logits_to_probs(self.logits)

    @cached_property
    def logits(self):
        return probs_to_logits(self.probs)

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return _vk.full(tuple(self._extended_shape()), float("nan"), dtype=self._param.dtype).to(self._param.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        sample_shape = _vk.Size(sample_shape)
        with _vk.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            draws = _vk.multinomial(probs_2d, max(sample_shape.numel(), 1), True).T
            return draws[:sample_shape.numel()].reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        self._check(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = _vk.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        min_real = _vk.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = _vk.arange(self._num_events, dtype=_vk.int64).to(self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class OverCategories(Distribution):
    """A family of vectors over a Categorical's categories (OneHotCategorical, Multinomial): the
    Categorical holds probs / logits (validated there); batch and event shapes follow from it."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        param = self._categorical._param
        super().__init__(param.shape[:-1], param.shape[-1:], validate_args=validate_args)

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape


class OneHotCategorical(OverCategories):
    """OneHotCategorical(probs=None, logits=None): Categorical's samples as one-hot vectors."""
    has_enumerate_support = True

    @property
    def support(self):
        return constraints.independent(constraints.boolean, 1)  # one-hot: checked in log_prob's max

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return _vk.nn.functional.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        p = self._categorical.probs
        return p * (1 - p)

    def sample(self, sample_shape=()):
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return _vk.nn.functional.one_hot(indices, probs.shape[-1]).to(probs.dtype)

    def log_prob(self, value):
        self._check(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = _vk.eye(n, dtype=self._categorical._param.dtype).to(self._categorical._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values

    def __repr__(self):
        return repr(self._categorical).replace("Categorical", "OneHotCategorical", 1)
