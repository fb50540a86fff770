"""torch.nn.functional's last names of issue #16 that compose ops vkml already has (no new kernels):
linear_cross_entropy, fractional_max_pool2d/3d (and their _with_indices forms), and the channel-window
normalisation behind nn.CrossMapLRN2d. Gradients come from the composed ops."""

import dataclasses
import math

from .. import _C
from . import functional as F

__all__ = ["linear_cross_entropy", "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


# ---- linear_cross_entropy ----

@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """torch's chunking choices for linear_cross_entropy, with its fields, defaults and checks. vkml takes
    torch's reference path whatever they say (the values and gradients are the same; the logits are
    not computed in chunks)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in ("auto", "accurate", "balanced", "compact"):
            raise ValueError(f"LinearCrossEntropyOptions: invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method not in (None, "auto"):
            name, sep, factor = self.chunking_method.partition(":")
            if name != "aspect_ratio" or (sep and not (factor.isdigit() and int(factor) > 0)):
                raise ValueError(f"LinearCrossEntropyOptions: invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if size is not None and not (isinstance(size, int) and size > 0):
            raise ValueError(f"LinearCrossEntropyOptions: batch_chunk_size must be positive int or None, "
                             f"got {size!r}")
        # (vkml's float16/bfloat16 are named placeholders, not _C.dtype members: compare by name)
        floats = ("float16", "bfloat16", "float32", "float64")
        if self.acc_dtype is not None and str(self.acc_dtype).rsplit(".", 1)[-1] not in floats:
            raise ValueError(f"LinearCrossEntropyOptions: acc_dtype must be None or a floating dtype, "
                             f"got {self.acc_dtype!r}")


def _check_linear_ce(input, linear_weight, linear_bias):
    if input.ndim not in (1, 2):
        raise RuntimeError(f"linear_cross_entropy: expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"linear_cross_entropy: expected linear_weight with dimensionality at least 2, "
                           f"got {linear_weight.ndim}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(f"linear_cross_entropy: expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    logical = tuple(linear_weight.shape[:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != logical:
        raise RuntimeError(f"linear_cross_entropy: expected linear_bias shape {logical}, "
                           f"got {tuple(linear_bias.shape)}")
    if linear_weight.ndim > 2 and input.ndim == 1:
        raise RuntimeError(f"linear_cross_entropy: K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, {input.shape[-1]}), "
                           f"got unbatched input with shape {tuple(input.shape)}")


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, W), target): a (C, d1..dK, F) weight gives (N, C, d1..dK) logits (the
    K-dimensional loss). `options` (torch's chunking choices) changes no value and is accepted as such:
    vkml always takes torch's reference path."""
    _check_linear_ce(input, linear_weight, linear_bias)
    if options is not None and not isinstance(options, LinearCrossEntropyOptions):
        raise TypeError(f"linear_cross_entropy: options must be None or a nn.LinearCrossEntropyOptions, "
                        f"got {type(options).__name__}")
    logical = tuple(linear_weight.shape[:-1])
    flat_bias = None if linear_bias is None else linear_bias.reshape(-1)
    logits = F.linear(input, linear_weight.reshape(-1, linear_weight.shape[-1]), flat_bias)
    logits = logits.reshape(tuple(input.shape[:-1]) + logical)
    probabilities = tuple(target.shape) == tuple(logits.shape)
    if probabilities and ignore_index is not None:
        raise RuntimeError("linear_cross_entropy: ignore_index cannot be specified when target contains "
                           "probabilities")
    return F.cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None else ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)


# ---- fractional max pooling ----

_AXES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _fractional_sizes(input, kernel_size, output_size, output_ratio, n):
    """(kernel, output) sizes as n-tuples, checked as torch checks them."""
    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}")
    for d in range(input.ndim - n - 1, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                               f"got{list(input.shape)} with dimension {d} being empty.")
    kernel = F._tuple(kernel_size, n, "kernel_size")
    spatial = tuple(input.shape[-n:])
    if output_size is None:
        ratio = F._tuple(output_ratio, n, "output_ratio")
        output_size = tuple(int(s * r) for s, r in zip(spatial, ratio))
    elif not isinstance(output_size, int) and len(output_size) != n:
        raise RuntimeError(f"{name}: output_size must either be a single Int or tuple of Ints")
    out = F._tuple(output_size, n, "output_size")
    for axis, k, o, s in zip(_AXES[n], kernel, out, spatial):
        if o + k - 1 > s:
            raise RuntimeError(f"{name}(): pool {axis} {k} too large relative to input {axis} {s}")
    return kernel, out


def _fractional_samples(input, samples, planes, n):
    """torch's _random_samples: one value in [0, 1) per (batch, channel, spatial axis)."""
    batch = input.shape[0] if input.ndim == n + 2 else 1
    if samples is None:
        return _C.rand((batch, planes, n), dtype=input.dtype, device=input.device)
    name = f"fractional_max_pool{n}d"
    if samples.ndim != 3:
        raise RuntimeError(f"{name}: Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.shape[2] != n:
        raise RuntimeError(f"{name}: Expect _random_samples.size(2) equals to {n}; got {samples.shape[2]}.")
    if samples.dtype != input.dtype:
        raise RuntimeError(f"{name}: Expect _random_samples to have the same dtype as input")
    if samples.shape[0] < batch:
        raise RuntimeError(f"{name}: Expect _random_samples.size(0) no less than input batch size {batch}, "
                           f"got {samples.shape[0]}.")
    if samples.shape[1] != planes:
        raise RuntimeError(f"{name}: Expect _random_samples.size(1) equals to input channel size {planes}, "
                           f"got {samples.shape[1]}.")
    return samples[:batch]


def _window_starts(sample, size, out, k):
    """Start of each of `out` windows of width k along an axis of `size`, per plane (sample: (B, C)):
    trunc((i + u) * a) - trunc(u * a) with a = (size - k) / (out - 1), computed in the input's dtype as
    torch does, and the last window flush with the end."""
    last = _C.full(tuple(sample.shape) + (min(out, 1),), size - k, dtype=_C.dtype.int64, device=sample.device)
    if out <= 1:  # (no window, or the one flush with the end)
        return last
    alpha = (size - k) / (out - 1)
    steps = _C.arange(out - 1, dtype=sample.dtype, device=sample.device)
    u = sample.unsqueeze(-1)
    starts = ((steps + u) * alpha).trunc().to(_C.dtype.int64) - (u * alpha).trunc().to(_C.dtype.int64)
    return _C.cat([starts, last], -1)


def _flat_window_index(starts, kernel, spatial):
    """Flat (row-major) input index of every element of every window: (B, C, out..., k...) int64."""
    n = len(kernel)
    index = None
    for d in range(n):
        offsets = _C.arange(kernel[d], dtype=_C.dtype.int64, device=starts[d].device)
        pos = starts[d].unsqueeze(-1) + offsets  # (B, C, out_d, k_d)
        # place out_d at axis 2 + d and k_d at axis 2 + n + d of a (B, C, out..., k...) shape
        shape = list(pos.shape[:2]) + [1] * (2 * n)
        shape[2 + d], shape[2 + n + d] = pos.shape[2], pos.shape[3]
        term = pos.reshape(tuple(shape)) * math.prod(spatial[d + 1:])
        index = term if index is None else index + term
    return index


def _pick(values):
    """Per window (the last axis), torch's choice: the first maximum, or the last NaN if there is one."""
    first_max = values.detach().max(-1)[1].unsqueeze(-1)
    nan = values.detach().isnan()
    positions = _C.arange(1, values.shape[-1] + 1, device=values.device)
    last_nan = (nan.to(_C.dtype.int64) * positions).argmax(-1, keepdim=True)
    return _C.where(nan.any(-1, keepdim=True), last_nan, first_max)


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, samples, n):
    kernel, out = _fractional_sizes(input, kernel_size, output_size, output_ratio, n)
    batched = input.ndim == n + 2
    x = input if batched else input.unsqueeze(0)
    b, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    u = _fractional_samples(input, samples, c, n)
    # torch's sample order: (W, H) in 2-D but (T, H, W) in 3-D
    axis = (lambda d: 1 - d) if n == 2 else (lambda d: d)
    starts = [_window_starts(u[:, :, axis(d)], spatial[d], out[d], kernel[d]) for d in range(n)]
    index = _flat_window_index(starts, kernel, spatial)
    index = index.expand((b, c) + out + kernel).reshape(b, c, -1)
    # every window's elements, one window per row of the last axis
    windows = (b, c) + out + (math.prod(kernel),)
    values = x.reshape(b, c, -1).gather(2, index).reshape(windows)
    which = _pick(values)
    # the picked element's value (its gradient goes there, as max pooling's) and its input index
    result = values.gather(-1, which).squeeze(-1)
    flat = index.reshape(windows).gather(-1, which).squeeze(-1)
    if not batched:
        result, flat = result.squeeze(0), flat.squeeze(0)
    return result, flat


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Max over pseudo-random (Graham's fractional) windows; indices are flat within each (H, W) plane;
    _random_samples[..., 0] places the W windows and [..., 1] the H ones, as torch's."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                             _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """As fractional_max_pool2d over (T, H, W); samples[..., 0/1/2] place the T/H/W windows."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                             _random_samples)
    return out if return_indices else out[0]


# ---- CrossMapLRN2d's normalisation ----

def cross_map_lrn2d(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * s)^beta, s the sum of squares over torch's channel window for CrossMapLRN2d:
    channels c - p + 1 .. c + p - 1 (p = (size - 1) // 2 + 1), plus channel 0 for every c >= p -- torch's
    running-sum loop never subtracts channel 0, and vkml keeps its numbers."""
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    p = (size - 1) // 2 + 1
    sq = input.mul(input)
    n, c, h, w = input.shape
    window = F.pad(sq.reshape(n, 1, c, h, w), (0, 0, 0, 0, p - 1, p - 1))
    s = F.avg_pool3d(window, (2 * p - 1, 1, 1), stride=1).squeeze(1) * (2 * p - 1)
    if c > p:  # only channels p.. keep channel 0 in their sum
        late = (_C.arange(c, device=input.device) >= p).to(input.dtype).reshape(1, c, 1, 1)
        s = s + sq[:, :1] * late
    return input / s.mul(alpha / size).add(k).pow(beta)
