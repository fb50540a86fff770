"""The families sampled through gamma variates: Gamma, Chi2, Beta, Dirichlet, StudentT,
FisherSnedecor and NegativeBinomial. Their rsample differentiates through vk._standard_gamma, whose
gradient holds each sample at its quantile (the implicit derivative, as torch's); Dirichlet's
samples are normalised gammas, so their gradients are those of the normalisation applied to the
gammas' (torch computes the same pathwise derivative through a rule of its own)."""

import math

import vkml as _vk
from . import constraints
from .distribution import BinaryTrial, Distribution, ExponentialFamily, broadcast_all

__all__ = ["Beta", "Chi2", "Dirichlet", "FisherSnedecor", "Gamma", "NegativeBinomial", "StudentT"]


def _standard_gamma(concentration, shape):
    """Gamma(concentration, 1) draws of `shape`, differentiable in concentration."""
    return _vk._standard_gamma(concentration.expand(shape))


def _at_least_tiny(value):
    """value with its underflowed entries raised to the dtype's smallest normal, the gradient kept
    (the raise is not an op of the graph, as torch's in-place clamp on the detached value)."""
    tiny = _vk.finfo(value.dtype).tiny
    return value + (value.detach().clamp(min=tiny) - value.detach())


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density rate^c x^(c - 1) e^(-rate x) / Gamma(c) for x >= 0."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _at_least_tiny(_standard_gamma(self.concentration, shape) / self.rate.expand(shape))

    def log_prob(self, value):
        self._check(value)
        value = _vk.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        c, rate = self.concentration, self.rate
        return _vk.xlogy(c, rate) + _vk.xlogy(c - 1, value) - rate * value - _vk.lgamma(c)

    def cdf(self, value):
        self._check(value)
        return _vk.special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + _vk.lgamma(c) + (1.0 - c) * _vk.digamma(c)

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return _vk.lgamma(x + 1) + (x + 1) * _vk.log(-y.reciprocal())


class Chi2(Gamma):
    """Chi2(df): the sum of df squared standard normals, Gamma(df / 2, 1 / 2)."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, _vk.full_like(df, 0.5), validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): points of the probability simplex over the last dim."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        gammas = _at_least_tiny(_standard_gamma(self.concentration, shape))
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value):
        self._check(value)
        c = self.concentration
        return _vk.xlogy(c - 1.0, value).sum(-1) + _vk.lgamma(c.sum(-1)) - _vk.lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        above_one = (self.concentration - 1).clamp(min=0.0)
        mode = above_one / above_one.sum(-1, keepdim=True)
        # every concentration below 1: the density is unbounded at every vertex; torch names the
        # first (its argmax over the row of 0 / 0), and so does this
        first_vertex = _vk.zeros_like(mode)
        first_vertex[..., 0] = 1.0
        all_below = (self.concentration < 1).all(-1, keepdim=True)
        return _vk.where(all_below, first_vertex, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def entropy(self):
        c = self.concentration
        k, total = c.shape[-1], c.sum(-1)
        return (_vk.lgamma(c).sum(-1) - _vk.lgamma(total) - (k - total) * _vk.digamma(total)
                - ((c - 1.0) * _vk.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - _vk.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0): density x^(c1 - 1) (1 - x)^(c0 - 1) / B(c1, c0) on
    [0, 1], sampled as the first coordinate of Dirichlet([c1, c0])."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(_vk.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        self._check(value)
        return self._dirichlet.log_prob(_vk.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        return _vk.lgamma(x) + _vk.lgamma(y) - _vk.lgamma(x + y)


class StudentT(Distribution):
    """StudentT(df, loc=0, scale=1): loc + scale * Z / sqrt(V / df), Z standard normal, V Chi2(df)."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self):
        return _vk.where(self.df > 1, self.loc, _vk.full_like(self.loc, math.nan))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        var = _vk.where(self.df > 2, finite, _vk.full_like(finite, math.inf))
        return _vk.where(self.df > 1, var, _vk.full_like(var, math.nan))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        normal = _vk.randn(tuple(shape), dtype=self.df.dtype, device=self.df.device)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * normal * _vk.rsqrt(chi2 / self.df)

    def log_prob(self, value):
        self._check(value)
        y = (value - self.loc) / self.scale
        half_df = 0.5 * self.df
        log_norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                    + _vk.lgamma(half_df) - _vk.lgamma(half_df + 0.5))
        return -(half_df + 0.5) * _vk.log1p(y.pow(2) / self.df) - log_norm

    def entropy(self):
        half_df = 0.5 * self.df
        log_beta = _vk.lgamma(half_df) + math.lgamma(0.5) - _vk.lgamma(half_df + 0.5)
        return (self.scale.log() + (half_df + 0.5) * (_vk.digamma(half_df + 0.5) - _vk.digamma(half_df))
                + 0.5 * self.df.log() + log_beta)


class FisherSnedecor(Distribution):
    """FisherSnedecor(df1, df2): (U1 / df1) / (U2 / df2) for independent Chi2(df1), Chi2(df2)."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1, self._gamma2 = Gamma(0.5 * self.df1, self.df1), Gamma(0.5 * self.df2, self.df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    @property
    def mean(self):
        df2 = self.df2
        return _vk.where(df2 > 2, df2 / (df2 - 2), _vk.full_like(df2, math.nan))

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _vk.where(self.df1 > 2, mode, _vk.full_like(mode, math.nan))

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        var = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return _vk.where(df2 > 4, var, _vk.full_like(var, math.nan))

    def rsample(self, sample_shape=()):
        ratio = self._gamma1.rsample(sample_shape) / self._gamma2.rsample(sample_shape)
        return _at_least_tiny(ratio)

    def log_prob(self, value):
        self._check(value)
        half1, half2, ratio = 0.5 * self.df1, 0.5 * self.df2, self.df1 / self.df2
        log_beta = _vk.lgamma(half1) + _vk.lgamma(half2) - _vk.lgamma(half1 + half2)
        return half1 * ratio.log() + (half1 - 1) * value.log() - (half1 + half2) * _vk.log1p(ratio * value) - log_beta


class NegativeBinomial(BinaryTrial, Distribution):
    """NegativeBinomial(total_count, probs=None, logits=None): the number of successes (each with
    probability probs) before total_count failures; sampled as Poisson(Gamma(total_count, rate =
    exp(-logits)))."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        (self.total_count,) = self._set_trial(probs, logits, total_count)
        self.total_count = self.total_count.type_as(self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.total_count * _vk.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / _vk.sigmoid(-self.logits)

    def sample(self, sample_shape=()):
        with _vk.no_grad():
            rates = Gamma(self.total_count, _vk.exp(-self.logits), validate_args=False).sample(sample_shape)
            return _vk.poisson(rates)

    def log_prob(self, value):
        self._check(value)
        logsigmoid = _vk.nn.functional.logsigmoid
        n = self.total_count
        unnormalised = n * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        normaliser = -_vk.lgamma(n + value) + _vk.lgamma(1.0 + value) + _vk.lgamma(n)
        normaliser = normaliser.masked_fill(n + value == 0.0, 0.0)  # Gamma(0) / Gamma(0): the limit 1
        return unnormalised - normaliser
