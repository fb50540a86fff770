"""quantile / nanquantile (issue #15 item 4) and a few method forms torch programs call
(Tensor.addmm, bitwise_not, Tensor.equal, vk.detach), composed of table ops. A quantile is a sort
along the reduced dim, the two order statistics next to each q's rank gathered, and lerp between
them: the gradient reaches the selected elements through those ops' rules, as torch's does."""

from . import _C

Tensor = _C.Tensor
_vk = {}  # the vkml namespace, set by install() (the dtypes and ops are made in vkml/__init__.py)
_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _checked_q(name, input, q):
    """q as a 1-D tensor of input's dtype and device, and whether it was a scalar."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        scalar, qt = q.ndim == 0, q.reshape(-1)
        values = qt.cpu().tolist()  # the range check reads q, as torch's does
    else:
        scalar, values = True, [float(q)]
        qt = _vk["tensor"](values, dtype=input.dtype)
    if any(not (0.0 <= v <= 1.0) for v in values):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    return qt.to(input.device), scalar


def _ranks(sorted_rows, q, ignore_nan):
    """Each row's fractional rank of each q, (..., Q): a row with a NaN (quantile) or only NaNs
    (nanquantile) points at its last element, a NaN, as torch."""
    n = sorted_rows.shape[-1]
    nan = sorted_rows.isnan()
    if ignore_nan:
        count = (~nan).sum(-1, keepdim=True).to(q.dtype)
        ranks = q * (count - 1)
        return _vk["where"](count == 0, _vk["full_like"](ranks, n - 1), ranks)
    ranks = (q * (n - 1)).expand(*sorted_rows.shape[:-1], q.shape[0])
    return _vk["where"](nan.any(-1, keepdim=True), _vk["full_like"](ranks, n - 1), ranks)


def _interpolate(sorted_rows, ranks, interpolation):
    def at(r):
        return sorted_rows.gather(-1, r.to(_vk["int64"]))

    if interpolation == "lower":
        return at(ranks.floor())
    if interpolation == "higher":
        return at(ranks.ceil())
    if interpolation == "nearest":
        return at(ranks.round())  # halves to even, as torch
    below = ranks.floor()
    weight = ranks - below if interpolation == "linear" else _vk["full_like"](ranks, 0.5)
    return _vk["lerp"](at(below), at(ranks.ceil()), weight)


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.is_floating_point():
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _MODES:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    qt, scalar = _checked_q(name, input, q)
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if dim is None:
        rows, out_dims = input.reshape(1, -1), [1] * input.ndim if keepdim else []
    else:
        d = dim + max(input.ndim, 1) if dim < 0 else dim
        if not 0 <= d < max(input.ndim, 1):
            raise IndexError(f"{name}(): dimension {dim} is out of range for a {input.ndim}-D tensor")
        moved = input.movedim(d, -1) if input.ndim else input.reshape(1)
        rows = moved.reshape(-1, moved.shape[-1])
        out_dims = list(input.shape)
        if input.ndim:
            out_dims[d:d + 1] = [1] if keepdim else []
    sorted_rows = rows.sort(-1).values
    picked = _interpolate(sorted_rows, _ranks(sorted_rows, qt, ignore_nan), interpolation)  # (rows, Q)
    if dim is not None and input.ndim and keepdim:
        # the reduced dim is kept in its place: rows were laid out with it moved last
        kept = list(input.shape)
        kept.pop(d)
        out = picked.movedim(-1, 0).reshape(qt.shape[0], *kept).unsqueeze(d + 1)
    else:
        out = picked.movedim(-1, 0).reshape(qt.shape[0], *out_dims)
    return out.squeeze(0) if scalar else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of input along dim (all elements when dim is None), as torch.quantile."""
    _no_out(out, "quantile")
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring NaNs (a row of NaNs only gives NaN), as torch.nanquantile."""
    _no_out(out, "nanquantile")
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def _no_out(out, name):
    if out is not None:
        raise NotImplementedError(f"{name}(): out= is not supported; use the returned tensor")


def bitwise_not(input):
    """~input for bool and integer tensors (torch refuses floats)."""
    if input.dtype == _vk["bool"]:
        return _vk["logical_not"](input)
    if input.is_floating_point():
        raise RuntimeError(f"bitwise_not: not implemented for {input.dtype.name} tensors (bool and integers only)")
    return _vk["bitwise_xor"](input, -1)


def install(namespace):
    """Puts the names on Tensor and into `namespace` (the vkml module's globals)."""
    global _vk
    _vk = namespace
    for name, fn in (("quantile", quantile), ("nanquantile", nanquantile), ("bitwise_not", bitwise_not)):
        setattr(Tensor, name, fn)
        namespace[name] = fn
    Tensor.bitwise_not_ = lambda self: self.copy_(bitwise_not(self))
    Tensor.addmm = lambda self, mat1, mat2, *, beta=1, alpha=1: namespace["addmm"](
        self, mat1, mat2, beta=beta, alpha=alpha)
    Tensor.addmm_ = lambda self, mat1, mat2, *, beta=1, alpha=1: self.copy_(
        namespace["addmm"](self, mat1, mat2, beta=beta, alpha=alpha))
    Tensor.equal = lambda self, other: namespace["equal"](self, other)
    namespace["detach"] = Tensor.detach
