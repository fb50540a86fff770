"""Transforms (torch.distributions.transforms): invertible maps y = t(x) with the log |det dy/dx|
that a change of variables needs, composed of vkml's ops so their derivatives come from autograd.
TransformedDistribution pushes a base distribution through them (LogNormal, Gumbel, ...)."""

import functools
import math
import numbers

import vkml as _vk
from . import constraints
from .distribution import sum_rightmost

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
           "identity_transform"]


def _clipped_sigmoid(x):
    """sigmoid(x) kept inside (0, 1): its logs stay finite."""
    finfo = _vk.finfo(x.dtype)
    return _vk.sigmoid(x).clamp(min=finfo.tiny, max=1.0 - finfo.eps)


class Transform:
    """y = t(x) with its inverse t.inv and log |det dy/dx| (log_abs_det_jacobian(x, y)), summed
    over the domain's event dims. cache_size=1 keeps the last (x, y) pair, so t.inv(t(x)) is x
    itself (exact where the inverse would round)."""
    bijective = False
    sign = 1
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = None, None
        self._inv = None

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._cached(x, 0, self._call)

    def _inv_call(self, y):
        return self._cached(y, 1, self._inverse)

    def _cached(self, value, side, compute):
        """compute(value), or the other half of the cached pair when value is its `side` (0: an x,
        1: a y) -- the same tensor object, so t.inv(t(x)) is x itself."""
        if not self._cache_size:
            return compute(value)
        if self._cached_x_y[side] is value:
            return self._cached_x_y[1 - side]
        result = compute(value)
        self._cached_x_y = (value, result) if side == 0 else (result, value)
        return result

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _Parameterless(Transform):
    """A transform without parameters: every instance of its class is the same map."""

    def __eq__(self, other):
        return isinstance(other, type(self))

    __hash__ = object.__hash__


class _InverseTransform(Transform):
    """t.inv: the same map backwards, sharing t's cache."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    bijective = property(lambda self: self._inv.bijective)
    sign = property(lambda self: self._inv.sign)

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def __repr__(self):
        return f"{type(self._inv).__name__}().inv"


class ComposeTransform(Transform):
    """parts applied in order; the Jacobian terms summed over the event dims each part sees."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim  # what the input's event dims must cover
        for part in reversed(self.parts):
            event_dim = max(event_dim - part.codomain.event_dim + part.domain.event_dim, part.domain.event_dim)
        return constraints.independent(domain, event_dim - domain.event_dim) if event_dim > domain.event_dim \
            else domain

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(event_dim - part.domain.event_dim + part.codomain.event_dim, part.codomain.event_dim)
        return constraints.independent(codomain, event_dim - codomain.event_dim) if event_dim > codomain.event_dim \
            else codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        return functools.reduce(lambda s, p: s * p.sign, self.parts, 1)

    @property
    def inv(self):
        if self._inv is None:
            self._inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv._inv = self
        return self._inv

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return _vk.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms, event_dim = [], self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return functools.reduce(lambda s, t: s + t, terms)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        return "ComposeTransform(" + ", ".join(repr(p) for p in self.parts) + ")"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """base_transform with its rightmost reinterpreted_batch_ndims dims taken as one event."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else \
            IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size)

    domain = property(lambda self: constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims))
    codomain = property(lambda self: constraints.independent(self.base_transform.codomain,
                                                             self.reinterpreted_batch_ndims))
    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def _call(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """The rightmost dims of shape in_shape reshaped to out_shape (a volume-preserving map)."""
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = _vk.Size(in_shape), _vk.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    domain = property(lambda self: constraints.independent(constraints.real, len(self.in_shape)))
    codomain = property(lambda self: constraints.independent(constraints.real, len(self.out_shape)))

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else ReshapeTransform(self.in_shape, self.out_shape, cache_size)

    def _call(self, x):
        return x.reshape(tuple(x.shape[:x.dim() - len(self.in_shape)]) + tuple(self.out_shape))

    def _inverse(self, y):
        return y.reshape(tuple(y.shape[:y.dim() - len(self.out_shape)]) + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape):
        return tuple(shape[:len(shape) - len(self.in_shape)]) + tuple(self.out_shape)

    def inverse_shape(self, shape):
        return tuple(shape[:len(shape) - len(self.out_shape)]) + tuple(self.in_shape)


class ExpTransform(_Parameterless):
    """y = exp(x)."""
    codomain = constraints.positive
    bijective = True

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""
    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.exponent = exponent if isinstance(exponent, _vk.Tensor) else _vk.tensor(float(exponent))

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return tuple(_vk.broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))

    inverse_shape = forward_shape


class SigmoidTransform(_Parameterless):
    """y = sigmoid(x), kept inside (0, 1)."""
    codomain = constraints.unit_interval
    bijective = True

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        finfo = _vk.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        softplus = _vk.nn.functional.softplus
        return -softplus(-x) - softplus(x)


class SoftplusTransform(_Parameterless):
    """y = log(1 + exp(x))."""
    codomain = constraints.positive
    bijective = True

    def _call(self, x):
        return _vk.nn.functional.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -_vk.nn.functional.softplus(-x)


class TanhTransform(_Parameterless):
    """y = tanh(x) (squashed Gaussian policies: SAC); log |dy/dx| = 2 (log 2 - x - softplus(-2x)),
    which stays accurate where 1 - tanh(x)^2 rounds to 0."""
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return _vk.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - _vk.nn.functional.softplus(-2.0 * x))


class AbsTransform(_Parameterless):
    """y = |x| (not injective: its inverse picks the nonnegative root)."""
    codomain = constraints.nonnegative

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale * x, over event_dim rightmost dims taken as one event."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real,
                                                                                      self._event_dim)

    codomain = domain

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else \
            AffineTransform(self.loc, self.scale, self._event_dim, cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False

        def same(a, b):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                return a == b
            return bool((_vk.as_tensor(a) == _vk.as_tensor(b)).all())
        return same(self.loc, other.loc) and same(self.scale, other.scale)

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, numbers.Real):
            result = _vk.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        shape = tuple(x.shape)
        if self._event_dim:
            result = result.reshape(tuple(result.shape[:result.dim() - self._event_dim]) + (-1,)).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return tuple(_vk.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                          tuple(getattr(self.scale, "shape", ()))))

    inverse_shape = forward_shape


class SoftmaxTransform(_Parameterless):
    """Real vectors to the simplex by softmax (not injective: the inverse is log)."""
    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        return _vk.softmax(x, -1)

    def _inverse(self, y):
        return y.log()


class StickBreakingTransform(_Parameterless):
    """Real vectors of K - 1 to the K-simplex by breaking a stick: z_i = sigmoid(x_i - log(K - i))
    of what is left (x = 0 maps to the simplex's centre)."""
    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    @staticmethod
    def _log_offsets(n, like):
        """log(K - i) for i = 1 .. K - 1 (K = n + 1), so x = 0 is the uniform point."""
        return _vk.arange(n, 0, -1, dtype=like.dtype).to(like.device).log()

    def _call(self, x):
        z = _clipped_sigmoid(x - self._log_offsets(x.shape[-1], x))
        left = (1 - z).cumprod(-1)
        pad = _vk.nn.functional.pad
        return pad(z, [0, 1], value=1) * pad(left, [1, 0], value=1)

    def _inverse(self, y):
        head = y[..., :-1]
        remaining = (1 - head.cumsum(-1)).clamp(min=_vk.finfo(y.dtype).tiny)
        return head.log() - remaining.log() + self._log_offsets(head.shape[-1], y)

    def log_abs_det_jacobian(self, x, y):
        shifted = x - self._log_offsets(x.shape[-1], x)
        return (-shifted + _vk.nn.functional.logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(_Parameterless):
    """Square matrices to lower-triangular ones with a positive diagonal: the strict lower part
    kept, the diagonal exponentiated."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + _vk.diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y):
        return y.tril(-1) + _vk.diag_embed(y.diagonal(dim1=-2, dim2=-1).log())


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x), onto the unit interval (its density is the Jacobian)."""
    bijective = True
    codomain = constraints.unit_interval
    sign = 1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else CumulativeDistributionTransform(self.distribution,
                                                                                           cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


class PositiveDefiniteTransform(_Parameterless):
    """Square matrices to positive-definite ones: L L^T of the lower Cholesky factor
    LowerCholeskyTransform makes; the inverse through cholesky."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        factor = LowerCholeskyTransform()(x)
        return factor @ factor.transpose(-1, -2)

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(_vk.linalg.cholesky(y))


def _strict_lower_positions(n, offset, device):
    """Row-major flat positions of an n x n matrix's entries below diagonal `offset` (< 0)."""
    rows, cols = _vk.tril_indices(n, n, offset, device=device)
    return rows * n + cols


class CorrCholeskyTransform(_Parameterless):
    """Real vectors of D (D - 1) / 2 to Cholesky factors of D x D correlation matrices: the vector
    fills the strict lower triangle row by row through tanh, and each row is made of unit length
    by a signed stick breaking (y_ij = r_ij sqrt(1 - sum_{k<j} y_ik^2), the diagonal what is
    left). log_abs_det_jacobian is that of x and y's strict lower triangle."""
    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = _vk.finfo(x.dtype).eps
        r = _vk.tanh(x).clamp(min=-1 + eps, max=1 - eps)
        d = self.forward_shape(tuple(x.shape))[-1]
        # r into the strict lower triangle: gather from [0, r] with 0 wherever the triangle is not
        where = _vk.zeros(d * d, dtype=_vk.int64, device=x.device)
        where[_strict_lower_positions(d, -1, x.device)] = _vk.arange(1, r.shape[-1] + 1, device=x.device)
        padded = _vk.nn.functional.pad(r, [1, 0])
        r = padded.index_select(-1, where).reshape(tuple(x.shape[:-1]) + (d, d))
        left = (1 - r * r).sqrt().cumprod(-1)  # sqrt of the stick left after each entry of a row
        eye = _vk.eye(d, dtype=x.dtype, device=x.device)
        return (r + eye) * _vk.nn.functional.pad(left[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        d = y.shape[-1]
        left = _vk.nn.functional.pad((1 - (y * y).cumsum(-1))[..., :-1], [1, 0], value=1)
        at = _strict_lower_positions(d, -1, y.device)
        flat = tuple(y.shape[:-2]) + (d * d,)
        t = y.reshape(flat).index_select(-1, at) / left.reshape(flat).index_select(-1, at).sqrt()
        return _vk.atanh(t)

    def log_abs_det_jacobian(self, x, y):
        d = y.shape[-1]
        stick_left = (1 - (y * y).cumsum(-1)).reshape(tuple(y.shape[:-2]) + (d * d,))
        stick = 0.5 * stick_left.index_select(-1, _strict_lower_positions(d, -2, y.device)).log().sum(-1)
        tanh = -2 * (x + _vk.nn.functional.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class _Sliced(Transform):
    """A transform per slice of dim (CatTransform: consecutive runs, StackTransform: single
    indices); slices(z) cuts a tensor into them and join puts results back."""

    def __init__(self, tseq, dim, cache_size):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = list(tseq), dim

    bijective = property(lambda self: all(t.bijective for t in self.transforms))

    def _checked(self, z, what):
        if not -z.dim() <= self.dim < z.dim():
            raise IndexError(f"{type(self).__name__}: dim {self.dim} out of range for {what} with {z.dim()} dims")
        if z.shape[self.dim] != self._extent():
            raise ValueError(f"{type(self).__name__}: {what}.size({self.dim}) = {z.shape[self.dim]} must equal "
                             f"{self._extent()}")
        return self.slices(z)

    def _call(self, x):
        return self.join([t(part) for t, part in zip(self.transforms, self._checked(x, "x"))])

    def _inverse(self, y):
        return self.join([t.inv(part) for t, part in zip(self.transforms, self._checked(y, "y"))])


class CatTransform(_Sliced):
    """transforms applied to consecutive slices of dim (of the given lengths, 1 each by
    default), as torch.cat joins them."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"CatTransform: {len(self.transforms)} transforms but {len(self.lengths)} lengths")

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else CatTransform(self.transforms, self.dim, self.lengths,
                                                                        cache_size)

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    domain = property(lambda self: constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths))
    codomain = property(lambda self: constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths))

    def _extent(self):
        return sum(self.lengths)

    def slices(self, z):
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [z.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def join(self, parts):
        return _vk.cat(parts, self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = []
        for t, xs, ys in zip(self.transforms, self._checked(x, "x"), self._checked(y, "y")):
            terms.append(sum_rightmost(t.log_abs_det_jacobian(xs, ys), self.event_dim - t.event_dim))
        # dim among the event dims: the slices' terms add up; else they sit along dim
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return _vk.cat(terms, dim) if dim < 0 else sum(terms)


class StackTransform(_Sliced):
    """transforms applied to the slices at each index of dim, as torch.stack joins them."""

    def __init__(self, tseq, dim=0, cache_size=0):
        super().__init__(tseq, dim, cache_size)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else StackTransform(self.transforms, self.dim, cache_size)

    domain = property(lambda self: constraints.stack([t.domain for t in self.transforms], self.dim))
    codomain = property(lambda self: constraints.stack([t.codomain for t in self.transforms], self.dim))

    def _extent(self):
        return len(self.transforms)

    def slices(self, z):
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def join(self, parts):
        return _vk.stack(parts, self.dim)

    def log_abs_det_jacobian(self, x, y):
        return _vk.stack([t.log_abs_det_jacobian(xs, ys) for t, xs, ys in
                          zip(self.transforms, self._checked(x, "x"), self._checked(y, "y"))], self.dim)
