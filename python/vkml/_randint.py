"""Issue #15's special ops at the Python level ("randint part"): rsub, scalar_tensor, renorm, histc,
frexp and binomial, composed of table ops. install() puts them on Tensor and the vkml namespace."""

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


# The composite binomial draws one uniform per trial: count.max() * numel of them at most.
_BINOMIAL_DRAWS = 1 << 27


def binomial(count, prob, generator=None):
    """Binomial(count, prob) samples, as torch.binomial: float count (trunc(count) trials) and
    prob of one dtype, broadcast; the result in that dtype, with no graph. Composed as the number
    of u < prob among trunc(count) uniform draws (rand, so generator= and every device work), so
    count.max() * numel uniforms are drawn (at most 2^27 here); count.max() is read on the host."""
    if not isinstance(count, Tensor) or not isinstance(prob, Tensor):
        raise TypeError("binomial(): count and prob must be tensors")
    if not count.is_floating_point():
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {count.dtype}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"binomial: found dtype {prob.dtype} but expected {count.dtype} (prob "
                           "must have count's dtype)")
    count, prob = count.detach(), prob.detach()
    if prob.numel() and not (prob.min().item() >= 0 and prob.max().item() <= 1):
        raise RuntimeError("binomial: expected every prob to be in [0, 1]")
    if count.numel() and not count.min().item() >= 0:
        raise RuntimeError("binomial: expected every count to be >= 0 (and not NaN)")
    from ._shape_fns import broadcast_tensors
    count, prob = broadcast_tensors(count, prob)
    trials = _C.trunc(count)
    n = int(trials.max().item()) if trials.numel() else 0
    if n * trials.numel() > _BINOMIAL_DRAWS:
        raise RuntimeError(f"binomial: count.max() * numel = {n} * {trials.numel()} exceeds the "
                           f"{_BINOMIAL_DRAWS} uniform draws vkml's composite binomial makes")
    u = _C.rand(*trials.shape, max(n, 1), dtype=count.dtype, device=count.device,
                generator=generator)
    k = _C.arange(max(n, 1), dtype=count.dtype, device=count.device)
    hit = (u < prob.unsqueeze(-1)) & (k < trials.unsqueeze(-1))
    return hit.sum(-1).to(count.dtype)


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
    namespace["binomial"] = binomial
    namespace["rsub"] = rsub
    namespace["scalar_tensor"] = scalar_tensor
    namespace["renorm"] = renorm
    Tensor.renorm = renorm
    Tensor.renorm_ = _inplace_method("renorm_", renorm)
