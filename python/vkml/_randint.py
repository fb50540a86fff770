"""Issue #15's special ops at the Python level ("randint part"): rsub, scalar_tensor, renorm, histc
and frexp, composed of table ops. install() puts them on Tensor and the vkml namespace."""

import collections

from . import _C

Tensor = _C.Tensor
_dtypes = {}  # int32, int64, set by install()
_default_dtype = [None]  # vkml.get_default_dtype, set by install()

# (mantissa, exponent), as torch.return_types.frexp
frexp_type = collections.namedtuple("frexp", ["mantissa", "exponent"])


def rsub(input, other, *, alpha=1):
    """other - alpha * input, as torch.rsub (sub with its operands swapped)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub(): input must be a Tensor, got {type(input).__name__}")
    if isinstance(other, Tensor):
        return _C.sub(other, input, alpha=alpha)
    return input.__rsub__(other) if alpha == 1 else (input * alpha).__rsub__(other)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor holding s, in the default float dtype unless dtype says otherwise (as
    torch.scalar_tensor: an int stays float32 by default)."""
    if isinstance(s, Tensor):
        s = s.item()
    if dtype is None:
        dtype = _default_dtype[0]()
    return _C.full((), s, dtype=dtype, device=device, requires_grad=requires_grad)


def renorm(input, p, dim, maxnorm):
    """Each slice input.select(dim, i) whose p-norm exceeds maxnorm scaled to norm maxnorm, as
    torch.renorm (factor maxnorm / (norm + 1e-7); the gradient flows through the norm)."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    if not input.is_floating_point():
        raise NotImplementedError(f"renorm: not implemented for dtype {input.dtype}")
    n = input.ndim
    if not -n <= dim < n:
        raise IndexError(f"renorm: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    dim %= n
    others = tuple(d for d in range(n) if d != dim)
    norm = _C._linalg.vector_norm(input, p, others, True)
    factor = _C.where(norm > maxnorm, maxnorm / (norm + 1e-7), _C.ones_like(norm))
    return input * factor


def histc(input, bins=100, min=0, max=0):
    """Counts of input's elements in `bins` equal bins over [min, max] (min == max: the data's
    range, widened by 1 each side when flat), in input's dtype, as torch.histc: element x goes to
    bin int((x - min) * bins / (max - min)), max itself to the last; others and NaN are dropped.
    Integer counts (bincount's scatter of int64 ones), so the result is the same on every device."""
    if not isinstance(input, Tensor):
        raise TypeError(f"histc(): input must be a Tensor, got {type(input).__name__}")
    if not input.is_floating_point():
        raise NotImplementedError(f"histc: not implemented for dtype {input.dtype}")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins}")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and input.numel() > 0:
        lo, hi = input.min().item(), input.max().item()  # a host read, as torch's
    if not (_finite(lo) and _finite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    x = input.detach().reshape(-1)
    inside = (x >= lo) & (x <= hi)
    pos = ((x - lo) * bins / (hi - lo)).nan_to_num(0.0).to(_dtypes["int64"]).clamp(0, bins - 1)
    pos = _C.where(inside, pos, _C.full((), bins, dtype=_dtypes["int64"], device=x.device))
    return _C.bincount(pos, None, bins + 1)[:bins].to(input.dtype)


def _finite(v):
    return v == v and v not in (float("inf"), float("-inf"))


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2^exponent and 0.5 <= |mantissa| < 1, as
    torch.frexp (0, inf and NaN: themselves and exponent 0). The exponent starts from
    floor(log2|x|) + 1 and is corrected by one where log2 rounded across a power of two; the
    scaling by 2^-e is done in two halves, so that neither overflows (subnormal inputs)."""
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.detach()
    regular = _C.isfinite(x) & (x != 0)
    one = _C.ones_like(x)
    a = _C.where(regular, x.abs(), one)
    e = _C.where(regular, _C.floor(_C.log2(a)) + 1, _C.zeros_like(x))
    m = _scaled(x, e)
    big, small = regular & (m.abs() >= 1), regular & (m.abs() < 0.5)
    e = e + big.to(x.dtype) - small.to(x.dtype)
    m = _scaled(x, e)
    return frexp_type(m, e.to(_dtypes["int32"]))


def _scaled(x, e):
    half = _C.floor(e / 2)
    return _C.ldexp(_C.ldexp(x, -half), half - e)


def _inplace_method(name, fn):
    def method(self, *args, **kwargs):
        return _C._inplace(self, name, fn, args, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: {name[:-1]}(self, ...) written into self."
    return method


def install(namespace):
    """Puts the names on Tensor and into `namespace` (the vkml module's globals)."""
    _dtypes.update(int32=namespace["int32"], int64=namespace["int64"])
    _default_dtype[0] = namespace["get_default_dtype"]
    for name, fn in (("histc", histc), ("frexp", frexp)):
        setattr(Tensor, name, fn)
        namespace[name] = fn
    namespace["rsub"] = rsub
    namespace["scalar_tensor"] = scalar_tensor
    namespace["renorm"] = renorm
    Tensor.renorm = renorm
    Tensor.renorm_ = _inplace_method("renorm_", renorm)
