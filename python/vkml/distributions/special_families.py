"""Families each with a piece of machinery of its own: ContinuousBernoulli (a normaliser with a
Taylor branch where it is 0 / 0), Kumaraswamy (power transforms of a uniform, moments through beta
functions), GeneralizedPareto (a support that depends on the sign of its shape) and VonMises
(angles; drawn by Best and Fisher's rejection sampler)."""

import math
from functools import cached_property

import vkml as _vk
from . import constraints
from .distribution import (BinaryTrial, Distribution, ExponentialFamily, broadcast_all, clamp_probs,
                           logits_to_probs)
from .transformed import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .univariate import Uniform

__all__ = ["ContinuousBernoulli", "GeneralizedPareto", "Kumaraswamy", "VonMises"]

EULER_GAMMA = 0.57721566490153286060


class ContinuousBernoulli(BinaryTrial, ExponentialFamily):
    """ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501)): the density
    C(p) p^x (1 - p)^(1 - x) on [0, 1]. Its normaliser C(p) = 2 atanh(1 - 2p) / (1 - 2p) is 0 / 0
    at p = 1/2: for probs inside lims, every quantity takes its Taylor expansion about 1/2."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._set_trial(probs, logits)
        if probs is not None:  # validated before the clamp, which would let anything through
            check = self._validate_args if validate_args is None else validate_args
            if check and not bool(constraints.unit_interval.check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    @cached_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _stable(self):
        """Where probs is far enough from 1/2 for the closed forms."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """probs where stable, lims[0] elsewhere (so the unused closed forms stay finite)."""
        return _vk.where(self._stable(), self.probs, _vk.full_like(self.probs, self._lims[0]))

    def _log_norm(self):
        p = self._cut_probs()
        below = _vk.where(p <= 0.5, p, _vk.zeros_like(p))
        above = _vk.where(p >= 0.5, p, _vk.ones_like(p))
        closed = (_vk.log1p(-p) - p.log()).abs().log() - _vk.where(p <= 0.5, _vk.log1p(-2 * below),
                                                                   (2 * above - 1).log())
        x2 = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x2) * x2
        return _vk.where(self._stable(), closed, taylor)

    @property
    def mean(self):
        p = self._cut_probs()
        closed = p / (2 * p - 1) + 1 / (_vk.log1p(-p) - p.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return _vk.where(self._stable(), closed, taylor)

    @property
    def variance(self):
        p = self._cut_probs()
        closed = p * (p - 1) / (1 - 2 * p).pow(2) + 1 / (_vk.log1p(-p) - p.log()).pow(2)
        x2 = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x2) * x2
        return _vk.where(self._stable(), closed, taylor)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(_vk.rand(tuple(shape), dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value):
        self._check(value)
        logits, value = broadcast_all(self.logits, value)
        bce = _vk.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._log_norm()

    def cdf(self, value):
        self._check(value)
        p = self._cut_probs()
        closed = (p.pow(value) * (1 - p).pow(1 - value) + p - 1) / (2 * p - 1)
        inside = _vk.where(self._stable(), closed, value)
        return _vk.where(value <= 0, _vk.zeros_like(value), _vk.where(value >= 1, _vk.ones_like(value), inside))

    def icdf(self, value):
        p = self._cut_probs()
        closed = (_vk.log1p(-p + value * (2 * p - 1)) - _vk.log1p(-p)) / (p.log() - _vk.log1p(-p))
        return _vk.where(self._stable(), closed, value)

    def entropy(self):
        log_q, log_p = _vk.log1p(-self.probs), self.probs.log()
        return self.mean * (log_q - log_p) - self._log_norm() - log_q


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(concentration1, concentration0): (1 - (1 - U)^(1/b))^(1/a) for U uniform on
    [0, 1], a = concentration1, b = concentration0; density a b x^(a-1) (1 - x^a)^(b-1)."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(_vk.zeros_like(self.concentration0), _vk.ones_like(self.concentration0),
                       validate_args=validate_args)
        transforms = [PowerTransform(self.concentration0.reciprocal()), AffineTransform(1.0, -1.0),
                      PowerTransform(self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def _moment(self, n):
        """E[X^n] = b B(1 + n / a, b), through log-gamma."""
        a, b = self.concentration1, self.concentration0
        arg = 1 + n / a
        return b * (_vk.lgamma(arg) + _vk.lgamma(b) - _vk.lgamma(arg + b)).exp()

    @property
    def mean(self):
        return self._moment(1)

    @property
    def variance(self):
        return self._moment(2) - self.mean.pow(2)

    @property
    def mode(self):
        """((a - 1) / (a b - 1))^(1/a), where the density's log derivative (a - 1) / x - a (b - 1)
        x^(a-1) / (1 - x^a) vanishes; 0 at a = 1, 1 at b = 1; NaN below 1 (the density is
        unbounded) and at a = b = 1 (uniform). torch 2.13 gives NaN for every parameter."""
        a, b = self.concentration1, self.concentration0
        log_mode = (_vk.log(a - 1) - _vk.log(a * b - 1)) / a
        defined = (a >= 1) & (b >= 1) & ((a > 1) | (b > 1))
        return _vk.where(defined, log_mode, _vk.full_like(log_mode, math.nan)).exp()

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic = _vk.digamma(b + 1) + EULER_GAMMA
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()


class GeneralizedPareto(Distribution):
    """GeneralizedPareto(loc, scale, concentration): survival (1 + xi z)^(-1/xi) of z = (x - loc) /
    scale, e^-z at xi = 0; the support ends at loc - scale / xi when xi < 0."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def _shape_parts(self):
        """(xi is 0, xi with 1 where it is 0): the closed forms divide by xi."""
        zero = _vk.isclose(self.concentration, _vk.zeros_like(self.concentration))
        return zero, _vk.where(zero, _vk.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(_vk.rand(tuple(shape), dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value):
        self._check(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._shape_parts()
        power = 1 / xi + 1
        nonzero = _vk.where(power == 0, power, power * _vk.log1p(xi * z))
        return -self.scale.log() - _vk.where(zero, z, nonzero)

    def log_survival_function(self, value):
        self._check(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._shape_parts()
        return _vk.where(zero, -z, -_vk.log1p(xi * z) / xi)

    def log_cdf(self, value):
        return _vk.log1p(-self.log_survival_function(value).exp())

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        zero, xi = self._shape_parts()
        log_u = _vk.log1p(-value)
        return _vk.where(zero, self.loc - self.scale * log_u, self.loc + self.scale / xi * _vk.expm1(-xi * log_u))

    @property
    def mean(self):
        finite = self.concentration < 1
        xi = _vk.where(finite, self.concentration, _vk.full_like(self.concentration, 0.5))
        return _vk.where(finite, self.loc + self.scale / (1 - xi), _vk.full_like(xi, math.nan))

    @property
    def variance(self):
        finite = self.concentration < 0.5
        xi = _vk.where(finite, self.concentration, _vk.full_like(self.concentration, 0.25))
        var = self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi))
        return _vk.where(finite, var, _vk.full_like(var, math.nan))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).expand(self._batch_shape)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = _vk.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                          _vk.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)


class VonMises(Distribution):
    """VonMises(loc, concentration): angles with density e^(k cos(x - loc)) / (2 pi I0(k)); loc and
    values may be any real numbers, read modulo 2 pi. mean and variance are the circular ones."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @staticmethod
    def _log_i(k, order):
        """log I_order(k) = log(I_order e^-k) + k (the scaled Bessel functions stay finite)."""
        scaled = _vk.special.i0e(k) if order == 0 else _vk.special.i1e(k)
        return scaled.log() + k

    def log_prob(self, value):
        self._check(value)
        return self.concentration * _vk.cos(value - self.loc) - math.log(2 * math.pi) - self._log_i(
            self.concentration, 0)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        k = self.concentration
        return 1 - (self._log_i(k, 1) - self._log_i(k, 0)).exp()

    def sample(self, sample_shape=()):
        """Best and Fisher's rejection sampler (1979), in float64 (in float32 small concentrations
        round the acceptance test into rejecting forever); draws until every element accepts."""
        shape = tuple(self._extended_shape(sample_shape))
        with _vk.no_grad():
            loc = self.loc.to(_vk.float64).expand(shape)
            k = self.concentration.to(_vk.float64).expand(shape)
            tau = 1 + (1 + 4 * k * k).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * k)
            r = _vk.where(k < 1e-5, 1 / k + k, (1 + rho * rho) / (2 * rho))
            x = _vk.zeros(shape, dtype=_vk.float64, device=self.loc.device)
            done = _vk.zeros(shape, dtype=_vk.bool, device=self.loc.device)
            while not bool(done.all()):
                u1, u2, u3 = _vk.rand((3,) + shape, dtype=_vk.float64, device=self.loc.device).unbind(0)
                z = _vk.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = k * (r - f)
                accept = ~done & (((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0))
                x = _vk.where(accept, (u3 - 0.5).sign() * f.clamp(-1, 1).acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)
