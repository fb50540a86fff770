"""Families over matrices: LKJCholesky (Cholesky factors of correlation matrices, drawn by the onion
method from Beta draws) and Wishart (positive-definite matrices, drawn by Bartlett's decomposition
from Chi2 and normal draws)."""

import math
import warnings

import vkml as _vk
from . import constraints
from .distribution import Distribution, broadcast_all
from .gamma import Beta, Chi2
from .multivariate import ScaleTrilFamily, one_matrix

__all__ = ["LKJCholesky", "Wishart"]


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): Cholesky factors L of dim x dim correlation matrices
    with density proportional to det(L L^T)^(concentration - 1) (uniform over correlation matrices
    at 1). Sampled by the onion method (Lewandowski, Kurowicka and Joe, 2009): row i's squared
    off-diagonal length is a Beta draw, its direction uniform on the sphere; each correlation's
    marginal is then (r + 1) / 2 ~ Beta(a, a), a = concentration - 1 + dim / 2."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # row i > 0: its squared length below the diagonal y_i ~ Beta(i / 2, beta - (i - 1) / 2),
        # beta = concentration + (dim - 2) / 2 (the paper's section 3.2). torch 2.13 draws
        # Beta(i - 1/2, ...): from the third row on its correlations are too spread
        rows = _vk.arange(1, dim, dtype=self.concentration.dtype, device=self.concentration.device)
        beta = self.concentration + 0.5 * (dim - 2)
        self._beta = Beta(rows / 2, beta.unsqueeze(-1) - (rows - 1) / 2)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def sample(self, sample_shape=()):
        with _vk.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)  # rows 1..; row 0 is [1, 0, ...]
            shape = tuple(self._extended_shape(sample_shape))
            normal = _vk.randn(shape[:-2] + (self.dim - 1, self.dim), dtype=y.dtype,
                               device=y.device).tril(0)  # rows 1.., strictly below the diagonal
            direction = normal / normal.norm(dim=-1, keepdim=True)
            w = _vk.nn.functional.pad(y.sqrt() * direction, [0, 0, 1, 0])
            diag = (1 - w.pow(2).sum(-1)).clamp(min=_vk.finfo(w.dtype).tiny).sqrt()
            return w + _vk.diag_embed(diag)

    def log_prob(self, value):
        self._check(value)
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        order = _vk.arange(2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = 0.5 * dm1 * math.log(math.pi) + _vk.mvlgamma(alpha - 0.5, dm1) - _vk.lgamma(alpha) * dm1
        return unnormalized - normalizer


def _mvdigamma(x, p):
    """d/dx log Gamma_p(x): sum_i digamma(x - i / 2), i < p."""
    halves = _vk.arange(p, dtype=x.dtype, device=x.device) / 2
    return _vk.digamma(x.unsqueeze(-1) - halves).sum(-1)


class Wishart(ScaleTrilFamily):
    """Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None): sums of df
    outer products of normal vectors of covariance V = L L^T (df > p - 1; below p a draw is
    singular with positive probability). Exactly one of the three matrices."""
    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite, "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        matrix, name = one_matrix(covariance_matrix, precision_matrix, scale_tril)
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        p = matrix.shape[-1]
        if isinstance(df, _vk.Tensor):
            batch_shape = tuple(_vk.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        else:
            batch_shape = tuple(matrix.shape[:-2])
            self.df = _vk.full(batch_shape, float(df), dtype=matrix.dtype, device=matrix.device)
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < ndim.",
                          stacklevel=2)
        setattr(self, name, matrix.expand(batch_shape + (p, p)))
        super().__init__(batch_shape, (p, p), validate_args=validate_args)
        self._set_scale_tril(matrix, name)
        steps = _vk.arange(p, dtype=matrix.dtype, device=matrix.device)
        self._chi2 = Chi2(self.df.unsqueeze(-1) - steps)  # Bartlett's diagonal: chi2(df - i)

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    def _df_as_matrix(self, value):
        return value.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_as_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self._event_shape[-1] - 1
        factor = _vk.where(factor > 0, factor, _vk.full_like(factor, math.nan))
        return self._df_as_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df_as_matrix(self.df) * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett(self, sample_shape):
        p = self._event_shape[-1]
        shape = tuple(sample_shape) + tuple(self._batch_shape)
        diag = self._chi2.rsample(sample_shape).sqrt().clamp(min=_vk.finfo(self.df.dtype).eps)
        below = _vk.randn(shape + (p, p), dtype=self.df.dtype, device=self.df.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (below + _vk.diag_embed(diag))
        return chol @ chol.transpose(-1, -2)

    def rsample(self, sample_shape=(), max_try_correction=10):
        """Bartlett's draws; those that come out singular (df near p) are drawn again, up to
        max_try_correction times (a singular one left has log_prob -inf)."""
        sample = self._bartlett(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample = _vk.where(singular.unsqueeze(-1).unsqueeze(-1), self._bartlett(sample_shape), sample)
                singular = ~self.support.check(sample)
                if not bool(singular.any()):
                    break
        return sample

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        self._check(value)
        nu, p = self.df, self._event_shape[-1]
        trace = _vk.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * math.log(2) / 2 + self._half_log_det()) - _vk.mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * _vk.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (p * math.log(2) / 2 + self._half_log_det()) + _vk.mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)
