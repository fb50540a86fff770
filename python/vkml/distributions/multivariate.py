"""MultivariateNormal, LowRankMultivariateNormal (covariance W W^T + D), and Independent (a
batch's rightmost dims reinterpreted as an event)."""

import math

import vkml as _vk
from . import constraints
from .distribution import Distribution, sum_rightmost

__all__ = ["Independent", "LowRankMultivariateNormal", "MultivariateNormal"]


def one_matrix(covariance_matrix, precision_matrix, scale_tril):
    """The one of the three given (ValueError unless exactly one is), and its name."""
    given = [(m, n) for m, n in ((covariance_matrix, "covariance_matrix"), (precision_matrix, "precision_matrix"),
                                 (scale_tril, "scale_tril")) if m is not None]
    if len(given) != 1:
        raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    return given[0]


class ScaleTrilFamily(Distribution):
    """A family given a covariance, a precision or its lower Cholesky factor L (MultivariateNormal,
    Wishart): it computes with L; the matrices not given are derived from L on first use, in
    the shape _matrix_shape() gives."""

    def _set_scale_tril(self, matrix, name):
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = _vk.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _vk.linalg.cholesky(_vk.linalg.inv(matrix))

    def _matrix_shape(self):
        raise NotImplementedError

    def __getattr__(self, name):
        if name in ("scale_tril", "covariance_matrix", "precision_matrix"):
            L = self.__dict__["_unbroadcasted_scale_tril"]
            shape = self._matrix_shape()
            if name == "scale_tril":
                value = L.expand(shape)
            elif name == "covariance_matrix":
                value = (L @ L.transpose(-1, -2)).expand(shape)
            else:
                eye = _vk.eye(L.shape[-1], dtype=L.dtype).to(L.device).expand(L.shape)
                inv_l = _vk.linalg.solve_triangular(L, eye, upper=False)
                value = (inv_l.transpose(-1, -2) @ inv_l).expand(shape)
            self.__dict__[name] = value
            return value
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class MultivariateNormal(ScaleTrilFamily):
    """MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None, scale_tril=None):
    exactly one of the three matrices; computations go through the lower Cholesky factor L of the
    covariance (L L^T), by triangular solves."""
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        matrix, name = one_matrix(covariance_matrix, precision_matrix, scale_tril)
        if matrix.dim() < 2:
            raise ValueError("scale_tril, covariance_matrix or precision_matrix must be at least "
                             "two-dimensional, with optional leading batch dimensions")
        batch_shape = _vk.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        event = (loc.shape[-1],)
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, event, validate_args=validate_args)
        self._set_scale_tril(matrix, name)

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return L.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _vk.randn(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        self._check(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        shape = _vk.broadcast_shapes(tuple(L.shape[:-2]), tuple(diff.shape[:-1]))
        L = L.expand(tuple(shape) + tuple(L.shape[-2:]))
        diff = diff.expand(tuple(shape) + (diff.shape[-1],))
        # |L^-1 (x - loc)|^2, the Mahalanobis distance, by one triangular solve
        m = _vk.linalg.solve_triangular(L, diff.unsqueeze(-1), upper=False).squeeze(-1).pow(2).sum(-1)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(self._batch_shape) if len(self._batch_shape) else h


class LowRankMultivariateNormal(Distribution):
    """LowRankMultivariateNormal(loc, cov_factor, cov_diag): covariance W W^T + diag(D) for an
    n x m factor W (m small). Densities go through the m x m capacitance matrix C = I + W^T D^-1 W
    (Woodbury's identity and the matrix determinant lemma): no n x n matrix is factored."""
    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if cov_diag.shape[-1:] != (n,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {(n,)}")
        loc_, self.cov_factor, diag_ = _vk.broadcast_tensors(loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        self.loc, self.cov_diag = loc_[..., 0], diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _vk.linalg.cholesky(self._capacitance(cov_factor, cov_diag))
        super().__init__(tuple(self.loc.shape[:-1]), (n,), validate_args=validate_args)

    @staticmethod
    def _capacitance(w, d):
        """I + W^T D^-1 W."""
        wt_dinv = w.transpose(-1, -2) / d.unsqueeze(-2)
        eye = _vk.eye(w.shape[-1], dtype=w.dtype, device=w.device)
        return wt_dinv @ w + eye

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (w.pow(2).sum(-1) + d).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @property
    def covariance_matrix(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        cov = w @ w.transpose(-1, -2) + _vk.diag_embed(d)
        return cov.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @property
    def precision_matrix(self):
        """D^-1 - D^-1 W C^-1 W^T D^-1 (Woodbury), as D^-1 - A^T A with A = L_C^-1 W^T D^-1."""
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = _vk.linalg.solve_triangular(self._capacitance_tril, w.transpose(-1, -2) / d.unsqueeze(-2), upper=False)
        precision = _vk.diag_embed(d.reciprocal()) - a.transpose(-1, -2) @ a
        return precision.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @property
    def scale_tril(self):
        """D^1/2 cholesky(I + D^-1/2 W W^T D^-1/2): the n x n factor, made only when asked for."""
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        root = d.sqrt().unsqueeze(-1)
        scaled = w / root
        eye = _vk.eye(w.shape[-2], dtype=w.dtype, device=w.device)
        tril = root * _vk.linalg.cholesky(scaled @ scaled.transpose(-1, -2) + eye)
        return tril.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        w = self._unbroadcasted_cov_factor
        eps_w = _vk.randn(tuple(shape[:-1]) + (w.shape[-1],), dtype=self.loc.dtype, device=self.loc.device)
        eps_d = _vk.randn(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (w @ eps_w.unsqueeze(-1)).squeeze(-1) + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _log_det(self):
        """log det(W W^T + D) = log det C + sum log D (the matrix determinant lemma)."""
        return (2 * self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                + self._unbroadcasted_cov_diag.log().sum(-1))

    def log_prob(self, value):
        self._check(value)
        diff = value - self.loc
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        # x^T (W W^T + D)^-1 x = x^T D^-1 x - |L_C^-1 W^T D^-1 x|^2
        wt_dinv_x = ((w.transpose(-1, -2) / d.unsqueeze(-2)) @ diff.unsqueeze(-1)).squeeze(-1)
        tril = self._capacitance_tril
        shape = _vk.broadcast_shapes(tuple(tril.shape[:-2]), tuple(wt_dinv_x.shape[:-1]))
        solved = _vk.linalg.solve_triangular(tril.expand(tuple(shape) + tuple(tril.shape[-2:])),
                                             wt_dinv_x.expand(tuple(shape) + (wt_dinv_x.shape[-1],)).unsqueeze(-1),
                                             upper=False).squeeze(-1)
        m = (diff.pow(2) / d).sum(-1) - solved.pow(2).sum(-1)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * (n * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h.expand(self._batch_shape) if len(self._batch_shape) else h


class Independent(Distribution):
    """The last reinterpreted_batch_ndims dims of base_distribution's batch taken as event dims:
    log_prob and entropy sum over them (a diagonal Normal over vectors: Independent(Normal, 1))."""
    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = reinterpreted_batch_ndims
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = n + len(base_distribution.event_shape)
        if n > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {n} vs {len(base_distribution.batch_shape)}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args=validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        return False if self.reinterpreted_batch_ndims else self.base_dist.has_enumerate_support

    @property
    def support(self):
        base = self.base_dist.support
        return constraints.independent(base, self.reinterpreted_batch_ndims) if self.reinterpreted_batch_ndims else base

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
