"""vk.nn.utils.parametrizations (init/utils/hooks (#16)): weight_norm, spectral_norm and
orthogonal as torch's new-style parametrizations, with torch's state_dict names
(parametrizations.weight.original0 / original1 for weight_norm; parametrizations.weight.original
and parametrizations.weight.0._u / _v for spectral_norm; parametrizations.weight.original and
.0.base for orthogonal), so that torch's checkpoints load."""

import vkml as _vk
from ... import Tensor
from ..._grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from ._weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """w = g * v / |v| (the norm over every dimension but dim; dim=None: the whole tensor), with g in
    parametrizations.<name>.original0 and v in original1."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                weight_mat = self._reshape_weight_to_matrix(weight.detach())
                h, w = weight_mat.shape
                u = weight_mat.new_empty((h,)).normal_(0, 1)
                v = weight_mat.new_empty((w,)).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
                self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        # the estimates of the top singular vectors: buffers updated without a graph, as torch's
        with no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u = F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps)
                self._v = F.normalize(weight_mat.t().mv(self._u), dim=0, eps=self.eps)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * weight_mat.mv(v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """w / sigma(w), sigma estimated by power iteration (one step per training forward), with the
    estimates in parametrizations.<name>.0._u / _v and w in parametrizations.<name>.original."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


def _is_orthogonal(q):
    """Whether q's columns are orthonormal to 10 n eps."""
    n, k = q.shape[-2], q.shape[-1]
    eye = _vk.eye(k, dtype=q.dtype, device=q.device)
    return bool(_vk.allclose(q.transpose(-1, -2) @ q, eye, atol=10.0 * n * _vk.finfo(q.dtype).eps))


def _make_orthogonal(a):
    """The Q of a tall a = QR with R's diagonal non-negative (geqrf's reflectors, their signs
    normalised)."""
    reflectors, tau = _vk.geqrf(a)
    q = _vk.linalg.householder_product(reflectors, tau)
    return q * reflectors.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


class _Orthogonal(Module):
    """Q(X): an orthogonal matrix (orthonormal columns of a tall one, rows of a wide one) from an
    unconstrained X -- exp or the Cayley transform of the skew-symmetric matrix X's lower triangle
    makes, or the product of the Householder reflectors in X's strict lower triangle (signs on the
    diagonal). With use_trivialization, Q(X) multiplies a stored orthogonal `base` (the dynamic
    trivialization: X restarts at the identity's preimage)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.transpose(-1, -2)
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:  # a square matrix around the n x k one
                x = _vk.cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], dim=-1)
            skew = x - x.transpose(-1, -2)
            if self.orthogonal_map == "matrix_exp":
                q = _vk.linalg.matrix_exp(skew)
            else:  # (I + A/2)(I - A/2)^-1
                eye = _vk.eye(n, dtype=skew.dtype, device=skew.device)
                q = _vk.linalg.solve(eye - 0.5 * skew, eye + 0.5 * skew)
            if n != k:
                q = q[..., :k]
        else:
            reflectors = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (reflectors * reflectors).sum(dim=-2))
            q = _vk.linalg.householder_product(reflectors, tau)
            # x's diagonal holds the signs (+-1), a constant: not differentiated
            q = q * x.diagonal(dim1=-2, dim2=-1).detach().to(_vk.int32).unsqueeze(-2)
        if hasattr(self, "base"):
            q = self.base @ q
        return q.transpose(-1, -2) if transposed else q

    def right_inverse(self, q):
        """An X with Q(X) = q: with the trivialization, base := q (made orthogonal by QR when it
        is not, completed by random columns when it is not square) and X := -I; without it
        (Householder only), q's QR reflectors."""
        with no_grad():
            if tuple(q.shape) != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                                 f"shape {tuple(q.shape)}.")
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = q.transpose(-1, -2)
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in ("matrix_exp", "cayley"):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                reflectors, tau = _vk.geqrf(q)
                signs = reflectors.diagonal(dim1=-2, dim2=-1).sign()
                signs = _vk.where(tau == 0.0, -signs, signs)  # where LAPACK skipped a reflection
                on_diagonal = _vk.eye(n, k, dtype=_vk.bool, device=q.device)
                reflectors = _vk.where(on_diagonal, signs.unsqueeze(-2).expand(reflectors.shape), reflectors)
                return reflectors.transpose(-1, -2) if transpose else reflectors
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:
                fill = _vk.randn(*(tuple(q.shape[:-2]) + (n, n - k)), dtype=q.dtype, device=q.device)
                q = _make_orthogonal(_vk.cat([q, fill], dim=-1))
            self.base = q
            neg_eye = _vk.zeros_like(q_init)
            neg_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_eye


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Keeps module.<name> orthogonal (orthonormal columns, or rows when wide; batches of
    matrices too) through one of "matrix_exp", "cayley", "householder" (default: matrix_exp for
    square matrices, householder otherwise), with torch's state_dict names and initial value (the
    original weight if orthogonal, else its QR's Q)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
