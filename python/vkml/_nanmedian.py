"""torch.nanmedian / Tensor.nanmedian (issue #15): the lower median of the values that are not NaN,
composed of sort (stable, NaN last) and gather, on every device.

With dim: the value at position (k - 1) // 2 of the sorted row, k its count of non-NaN values (NaN
where k is 0), and its index: for ties the stable sort's order gives the same index as torch's CPU
kernel. Without dim: as torch, the gradient is shared evenly by every element equal to the median."""

import collections

from . import _C

# torch.return_types.nanmedian: (values, indices)
_NanMedian = collections.namedtuple("nanmedian", ["values", "indices"])


def _at_rank(k):
    """The position of the lower median in a row sorted with NaN last, k its count of non-NaN
    values: 0 for a row of NaN only."""
    return ((k - 1).clamp_min(0) // 2)


def nanmedian(input, dim=None, keepdim=False):
    if dim is None:
        return _nanmedian_all(input)
    if input.ndim == 0:
        if dim not in (0, -1):
            raise IndexError(f"nanmedian: Dimension out of range (expected to be in range of [-1, 0], but got {dim})")
        return _NanMedian(input, _C.zeros((), dtype=_C.dtype.int64, device=input.device))
    if input.shape[dim] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {dim} to have non-zero size.")
    values, indices = _C.sort(input, dim)
    k = (~_C.isnan(input)).sum(dim, keepdim=True)
    pos = _at_rank(k)
    v, i = values.gather(dim, pos), indices.gather(dim, pos)
    if not keepdim:
        v, i = v.squeeze(dim), i.squeeze(dim)
    return _NanMedian(v, i)


def _nanmedian_all(input):
    if input.numel() == 0:  # torch's: NaN
        return _C.full((), float("nan"), dtype=input.dtype, device=input.device)
    x = input.detach()
    values, _ = _C.sort(x.reshape(-1), 0)
    k = (~_C.isnan(x)).sum().reshape(1)
    v = values.gather(0, _at_rank(k)).squeeze(0)
    # the gradient: shared evenly by the elements equal to the median (torch's), written with forward
    # ops so that it has its own gradient
    ties = x == v
    count = ties.sum().clamp_min(1).to(input.dtype)

    def vjp(grad):
        return [_C.where(ties, grad / count, _C.zeros_like(x))]
    return _C.from_op(v, [input], vjp, "nanmedian")


def install(namespace):
    namespace.setdefault("nanmedian", nanmedian)
    Tensor = namespace["Tensor"]
    if not hasattr(Tensor, "nanmedian"):
        Tensor.nanmedian = nanmedian
