"""vk.special: torch.special's functions that vkml's existing ops compose.

Most names are the core's own ops under torch.special's names (expit is sigmoid, gammaln is
lgamma, psi is digamma, multigammaln is mvlgamma). The rest are composites:

- xlog1py, entr, ndtr, round(decimals=);
- log_ndtr: log(ndtr(x)) where erfc keeps its precision, an asymptotic series in the far left
  tail (where ndtr underflows);
- ndtri: Newton steps on log_ndtr from an erfinv start, because sqrt(2) * erfinv(2p - 1) loses
  every digit of a small p in the rounding of 2p - 1;
- erfcx: exp(x^2) * erfc(x) with x^2 split so that its rounding does not reach the exponential,
  and the asymptotic series where exp(x^2) * erfc(x) would overflow and underflow.

The ones that need kernels of their own (Bessel and Airy functions, zeta, the orthogonal
polynomials, which torch evaluates by recurrence over a tensor n) are not here; neither are
i0/i0e/i1/i1e/gammainc/gammaincc, which come as C++ ops. As vkml's other functions, none takes
out=.
"""

import math as _math

from . import _C
from ._porting_breadth import mvlgamma as _mvlgamma
from ._shape_fns import broadcast_tensors as _broadcast_tensors, promote_types as _promote_types
from .autograd import Function as _Function

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1",
           "gammaln", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln",
           "ndtr", "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]

# The core's ops under torch.special's names.
expit = _C.sigmoid
logit = _C.logit
erf = _C.erf
erfc = _C.erfc
erfinv = _C.erfinv
exp2 = _C.exp2
expm1 = _C.expm1
log1p = _C.log1p
gammaln = _C.lgamma
digamma = _C.digamma
psi = _C.digamma
polygamma = _C.polygamma
multigammaln = _mvlgamma
sinc = _C.sinc
logsumexp = _C.logsumexp

_LOG_SQRT_2PI = 0.5 * _math.log(2 * _math.pi)


def _floating(input, op):
    """input as a floating tensor: integers and bools become the default dtype, as torch's
    special functions promote them."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"special.{op}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return input if input.is_floating_point() else input.to(_C._get_default_dtype())


def _is64(x):
    return x.dtype == _C.dtype.float64


def softmax(input, dim, *, dtype=None):
    """exp(input) normalised along dim, computed in dtype when given (torch.special.softmax)."""
    return _C.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """log(softmax(input, dim)), computed in dtype when given (torch.special.log_softmax)."""
    return _C.log_softmax(input, dim, dtype)


def round(input, *, decimals=0):
    """input rounded half to even at `decimals` decimal places (negative: to tens, hundreds...).
    As torch, the scaling is by 10**|decimals| in the input's dtype, so the result carries that
    multiplication's rounding (round(2.675, decimals=2) is 2.67 or 2.68 as the product falls)."""
    if decimals == 0:
        return _C.round(input)
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return _C.round(input * scale) / scale
    return _C.round(input / scale) * scale


def _pair(input, other, op):
    """(input, other) as tensors: torch.special's binary functions take a number on either side
    (not both); the number takes the tensor's floating dtype."""
    if not isinstance(input, _C.Tensor) and not isinstance(other, _C.Tensor):
        raise TypeError(f"special.{op}(): expected at least one of input and other to be a Tensor")
    like = input if isinstance(input, _C.Tensor) else other
    dt = like.dtype if like.is_floating_point() else _C._get_default_dtype()
    if not isinstance(input, _C.Tensor):
        input = _C.tensor(input, dtype=dt, device=like.device)
    if not isinstance(other, _C.Tensor):
        other = _C.tensor(other, dtype=dt, device=like.device)
    return input, other


def _xlog_values(x, y, log_fn):
    # log(y) is replaced by 0 where x is 0 before the product: an infinite log there gives 0,
    # not 0 * inf; a NaN y stays NaN.
    logs = _C.where(x == 0, 0.0, log_fn(y))
    return _C.where(_C.isnan(y), y, x * logs)


class _Xlog1py(_Function):
    # A Function so that the gradients are torch's at the edges (NaN y, y at the pole): d/dy is
    # x / (1 + y); d/dx is log1p(y) (as xlog1py(g, y): 0 where g is 0), but 0 where x is 0 and
    # y <= -1, where the value is the constant 0.
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return _xlog_values(x, y, _C.log1p)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = _C.where((x == 0) & (y <= -1.0), 0.0, _xlog_values(g, y, _C.log1p))
        return gx, g * x / (y + 1.0)


class _Xlogy(_Function):
    # The same for x * log(y): the pole is y <= 0; d/dy is x / y. (The core's xlogy has the
    # values but gives 0 for d/dx at x = 0, y = inf and for d/dy at x = y = 0, where torch has
    # inf and NaN.)
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return _C.xlogy(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = _C.where((x == 0) & (y <= 0.0), 0.0, _xlog_values(g, y, _C.log))
        return gx, g * x / y


def _binary(fn, input, other, op):
    """Both sides as tensors of one floating dtype and one shape (the broadcast's own backward
    sums the gradients back to each input's shape)."""
    input, other = _pair(input, other, op)
    input, other = _floating(input, op), _floating(other, op)
    dt = _promote_types(input.dtype, other.dtype)
    return fn.apply(*_broadcast_tensors(input.to(dt), other.to(dt)))


def xlogy(input, other):
    """input * log(other), 0 where input is 0 unless other is NaN (torch.special.xlogy); either
    side may be a number."""
    return _binary(_Xlogy, input, other, "xlogy")


def xlog1py(input, other):
    """input * log1p(other), 0 where input is 0 unless other is NaN (torch.special.xlog1py);
    either side may be a number."""
    return _binary(_Xlog1py, input, other, "xlog1py")


class _Entr(_Function):
    # A Function so that the gradient is torch's -(1 + log x) everywhere (inf at 0, NaN below):
    # a where() over branches would give 0 there.
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        safe = _C.where(x > 0, x, 1.0)
        out = _C.where(x > 0, -x * _C.log(safe), _C.where(x == 0, 0.0, float("-inf")))
        return _C.where(_C.isnan(x), x, out)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return -g * (_C.log(x) + 1.0)


def entr(input):
    """-x log x elementwise: 0 at 0, -inf for x < 0 (torch.special.entr)."""
    return _Entr.apply(_floating(input, "entr"))


def ndtr(input):
    """The standard normal CDF, 0.5 * erfc(-x / sqrt 2): erfc keeps the left tail's relative
    precision, which 0.5 * (1 + erf(x / sqrt 2)) would lose (torch.special.ndtr)."""
    x = _floating(input, "ndtr")
    return 0.5 * _C.erfc(x * -_math.sqrt(0.5))


def _mills_series(x, terms):
    """-1/x^2 + 3/x^4 - 15/x^6 ...: ndtr(x) = phi(x) / |x| * (1 + series) for very negative x,
    the asymptotic series whose error stays below its first omitted term."""
    inv2 = 1.0 / (x * x)
    series, term = _C.zeros_like(x), _C.ones_like(x)
    for k in range(1, terms + 1):
        term = term * (-(2 * k - 1)) * inv2
        series = series + term
    return series


def _log_ndtr_cut(x):
    # Left of the cut the series takes over (float64: at x = -20 its 11th term is 6e-18, and
    # erfc(-x / sqrt 2) is still far from underflow; float32: x = -10, 1e-12 relative).
    return -20.0 if _is64(x) else -10.0


def _log_ndtr_values(x):
    cut = _log_ndtr_cut(x)
    xl = _C.clamp(x, max=cut)
    left = -0.5 * xl * xl - _C.log(-xl) - _LOG_SQRT_2PI + _C.log1p(_mills_series(xl, 10))
    # On the right ndtr(x) is 1 - ndtr(-x): log1p keeps the small ndtr(-x) exact.
    right = _C.log1p(-0.5 * _C.erfc(x * _math.sqrt(0.5)))
    middle = _C.log(0.5 * _C.erfc(x * -_math.sqrt(0.5)))
    return _C.where(x < cut, left, _C.where(x > 0, right, middle))


class _LogNdtr(_Function):
    @staticmethod
    def forward(ctx, x):
        out = _log_ndtr_values(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        # d/dx log ndtr(x) = phi(x) / ndtr(x): in the far left tail -x / (1 + series), the
        # series of _mills_series (exp(-x^2/2 - out) would cancel x^2/2's digits: 1e-8
        # relative at x = -1e4); elsewhere formed in logs so that neither underflows.
        x, out = ctx.saved_tensors
        cut = _log_ndtr_cut(x)
        xl = _C.clamp(x, max=cut)
        tail = -xl / (1.0 + _mills_series(xl, 10))
        return g * _C.where(x < cut, tail, _C.exp(-0.5 * x * x - out - _LOG_SQRT_2PI))


def log_ndtr(input):
    """log of the standard normal CDF, accurate in both tails (torch.special.log_ndtr): float64
    agrees with torch to ~1e-14 relative down to x = -30 and beyond (torch's erfcx-based form
    has no underflow either)."""
    return _LogNdtr.apply(_floating(input, "log_ndtr"))


def _ndtri_lower(q):
    """ndtri(q) for q in (0, 0.5]: erfinv's value as the start where 2q - 1 keeps q's digits,
    the tail asymptote -sqrt(t - log t - log 2pi), t = -2 log q, below; then Newton steps on
    log_ndtr(z) = log q, whose quadratic convergence makes 4 steps enough for float64."""
    central = _math.sqrt(2.0) * _C.erfinv(2.0 * q - 1.0)
    t = -2.0 * _C.log(q)
    tail = -_C.sqrt(_C.clamp(t - _C.log(t) - _math.log(2 * _math.pi), min=0.0))
    z = _C.where(q > 0.05, central, tail)
    log_q = _C.log(q)
    for _ in range(4 if _is64(q) else 3):
        lz = _log_ndtr_values(z)
        # ndtr(z) / phi(z), in logs: the step (log_ndtr(z) - log q) / (d log_ndtr / dz)
        ratio = _C.exp(lz + 0.5 * z * z + _LOG_SQRT_2PI)
        z = z - (lz - log_q) * ratio
    return z


class _Ndtri(_Function):
    @staticmethod
    def forward(ctx, p):
        upper = p > 0.5
        q = _C.where(upper, 1.0 - p, p)  # exact for p in [0.5, 1]
        inside = (q > 0) & (q <= 0.5)
        z = _ndtri_lower(_C.where(inside, q, 0.25))
        z = _C.where(upper, -z, z)
        z = _C.where(p == 0, float("-inf"), _C.where(p == 1, float("inf"), z))
        out = _C.where(inside | (p == 0) | (p == 1), z, float("nan"))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        # d ndtri / dp = 1 / phi(ndtri(p)) = sqrt(2 pi) exp(z^2 / 2)
        (z,) = ctx.saved_tensors
        return g * _C.exp(0.5 * z * z + _LOG_SQRT_2PI)


def ndtri(input):
    """The inverse of ndtr, x with ndtr(x) = p, for p in [0, 1] (-inf at 0, inf at 1, NaN
    outside): float64 agrees with torch to ~1e-15 relative, small p included
    (torch.special.ndtri)."""
    return _Ndtri.apply(_floating(input, "ndtri"))


def _erfcx_direct(x, scale):
    """exp(x^2) erfc(x) with x^2 = h^2 + l (x + h), h = x rounded to 1/scale: h^2 is exact, so
    the rounding of x^2 (an error of x^2 * eps in the exponent) does not reach the result."""
    h = _C.round(x * scale) / scale
    lo = x - h
    return _C.exp(h * h) * _C.exp(lo * (x + h)) * _C.erfc(x)


def _erfcx_asymptotic(x, terms):
    """erfcx(x) for large x: 1 / (x sqrt pi) * (1 - 1/(2x^2) + 3/(2x^2)^2 - ...)."""
    inv = 1.0 / (2.0 * x * x)
    series, term = _C.ones_like(x), _C.ones_like(x)
    for k in range(1, terms + 1):
        term = term * (-(2 * k - 1)) * inv
        series = series + term
    return series / (x * _math.sqrt(_math.pi))


class _Erfcx(_Function):
    @staticmethod
    def forward(ctx, x):
        # The series from `cut` on (float64 x >= 12: 12th term 1e-18; float32 x >= 5: 3e-9);
        # below it the split product, whose h keeps h^2 exact (float64: 24 bits for |x| < 27,
        # where exp(x^2) is finite; float32: 11 bits for |x| < 10).
        cut, scale = (12.0, 2.0 ** 19) if _is64(x) else (5.0, 2.0 ** 7)
        big = _erfcx_asymptotic(_C.clamp(x, min=cut), 12)
        direct = _erfcx_direct(_C.clamp(x, max=cut), scale)
        out = _C.where(x >= cut, big, direct)
        out = _C.where(x == float("-inf"), float("inf"), out)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return g * (2.0 * x * out - 2.0 / _math.sqrt(_math.pi))


def erfcx(input):
    """The scaled complementary error function exp(x^2) erfc(x), finite for large x where the
    product itself overflows (torch.special.erfcx)."""
    return _Erfcx.apply(_floating(input, "erfcx"))


# ---- the special-function ops (#15; C++ kernels on both devices, vkml/_bessel.py) ----
from ._bessel import special_i0 as i0, special_i0e as i0e  # noqa: E402
from ._bessel import special_i1 as i1, special_i1e as i1e  # noqa: E402


def gammainc(input, other):
    """The regularized lower incomplete gamma function P(input, other), as torch.special.gammainc
    (torch.igamma); differentiable in `other` only, as torch's."""
    return _C.igamma(input, other)


def gammaincc(input, other):
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P, as
    torch.special.gammaincc (torch.igammac)."""
    return _C.igammac(input, other)


# torch.special's modified Bessel functions of the first kind are the same functions
modified_bessel_i0, modified_bessel_i1 = i0, i1

__all__ += ["i0", "i0e", "i1", "i1e", "gammainc", "gammaincc", "modified_bessel_i0",
            "modified_bessel_i1"]
