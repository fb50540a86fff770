"""vk.nn.functional's transposed and 3-D convolutions, pooling's ceil_mode / count_include_pad /
divisor_override, embedding's max_norm and embedding_bag (issue #16), composed from table ops.

Nothing here computes on values: each function checks its arguments as torch does, works out the
window geometry (Python ints, as torch's own Python layer does) and arranges ops whose gradient
rules give the gradients, second order included:
- conv_transpose = fold(W^T @ x), the adjoint of conv's im2col + GEMM (no new kernel);
- conv3d = one conv2d over the depth taps stacked as channels (a depth im2col);
- ceil_mode = the input padded at the end so that the last window (which must start inside the
  input or the left padding) fits; avg pooling divides by a constant count of the window's
  positions taken from a mask of what counts (the padding or not), as torch's divisor;
- embedding_bag = an embedding of a (bags, longest bag) index matrix, masked and reduced.
"""

import math

from .. import _C
from .._grad_mode import no_grad
from .._index_fns import _run_reduce

_nn = _C._nn


def _tup(v, n, what, op):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            v = tuple(v) * n
        if len(v) != n:
            raise RuntimeError(f"{op}: expected {what} to be a single integer value or a list of {n} values to "
                               f"match the convolution dimensions, but got {what}={list(v)}")
        return tuple(int(e) for e in v)
    if isinstance(v, str):
        raise TypeError(f"{op}(): argument '{what}' must be tuple of ints, not str")
    return (int(v),) * n


def _check_input(input, n, op):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {op}, but got input "
                           f"of size: {list(input.shape)}")


# ======================= transposed convolution =======================

def _check_windows(stride, padding, output_padding, dilation, op):
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"{op}: negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero")
    if any(o < 0 or (o >= s and o >= d) for o, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={list(output_padding)}, stride={list(stride)}, "
                           f"dilation={list(dilation)}")


def _conv_transpose2d(x, weight, stride, padding, output_padding, dilation, groups, op):
    """x (N, C, H, W), weight (C, O/groups, kh, kw): the adjoint of conv2d with those windows."""
    N, C, H, W = x.shape
    if weight.shape[0] != C:
        raise RuntimeError(f"{op}: given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {C} channels instead")
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported")
    if C % groups:
        raise RuntimeError(f"{op}: the input's {C} channels are not divisible by groups={groups}")
    _check_windows(stride, padding, output_padding, dilation, op)
    G, Cg, Og = groups, C // groups, weight.shape[1]
    kernel = tuple(weight.shape[2:])
    full = [(i - 1) * s + d * (k - 1) + 1 for i, s, d, k in zip((H, W), stride, dilation, kernel)]
    out = [f - 2 * p + o for f, p, o in zip(full, padding, output_padding)]
    if any(o < 1 for o in out):
        raise RuntimeError(f"{op}: given input size per channel: ({H} x {W}), calculated output size per "
                           f"channel: ({out[0]} x {out[1]}); output size is too small")
    kk = kernel[0] * kernel[1]
    # cols[n, g] = W_g^T @ x[n, g]: every input position's kernel-sized contribution, as a column
    wt = weight.reshape(G, Cg, Og * kk).transpose(1, 2)
    cols = (wt @ x.reshape(N, G, Cg, H * W)).reshape(N, G * Og * kk, H * W)
    return _fold_to(cols, out, full, kernel, stride, padding, output_padding, dilation)


def _fold_to(cols, out, full, kernel, stride, padding, output_padding, dilation):
    """fold of the columns onto the output of a transposed conv (the full extent cropped by padding)."""
    if all(o < s for o, s in zip(output_padding, stride)):  # fold crops the padding itself
        return _nn.fold(cols, tuple(out), kernel, dilation, padding, stride)
    # output_padding >= stride (allowed when below the dilation): fold has more windows then, so
    # fold the whole extent and cut (or zero-extend) it to the output
    y = _nn.fold(cols, tuple(full), kernel, dilation, 0, stride)
    return _nn.pad(y, (-padding[1], out[1] + padding[1] - full[1], -padding[0], out[0] + padding[0] - full[0]))


def _conv_transpose3d(x, weight, stride, padding, output_padding, dilation, groups, op):
    """The (H, W) part as one conv_transpose2d over every depth slice, with the depth taps as extra
    output channels, then the depth taps folded onto the output depth (a 1-D transposed conv)."""
    N, C, D, H, W = x.shape
    if weight.shape[0] != C:  # checked here too: the reshapes below need it
        raise RuntimeError(f"{op}: given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {C} channels instead")
    if groups <= 0 or C % groups:
        raise RuntimeError(f"{op}: the input's {C} channels are not divisible by groups={groups}")
    _check_windows(stride, padding, output_padding, dilation, op)
    Og, kd = weight.shape[1], weight.shape[2]
    O = Og * groups
    # weight (C, Og, kd, kh, kw) -> (C, Og * kd, kh, kw): output channels (group, o, depth tap)
    w2 = weight.reshape(C, Og * kd, weight.shape[3], weight.shape[4])
    planes = x.permute(0, 2, 1, 3, 4).reshape(N * D, C, H, W)
    y = _conv_transpose2d(planes, w2, stride[1:], padding[1:], output_padding[1:], dilation[1:], groups, op)
    Ho, Wo = y.shape[2], y.shape[3]
    # (N * D, O * kd, Ho, Wo) -> (N, O * Ho * Wo * kd, D): per output position, a column of depth taps
    cols = y.reshape(N, D, O, kd, Ho, Wo).permute(0, 2, 4, 5, 3, 1).reshape(N, O * Ho * Wo * kd, D)
    full = (D - 1) * stride[0] + dilation[0] * (kd - 1) + 1
    out = full - 2 * padding[0] + output_padding[0]
    if out < 1:
        raise RuntimeError(f"{op}: given input depth {D}, calculated output depth {out}; output size is too small")
    z = _fold_to(cols, (out, 1), (full, 1), (kd, 1), (stride[0], 1), (padding[0], 0), (output_padding[0], 0),
                 (dilation[0], 1))
    return z.reshape(N, O, Ho, Wo, out).permute(0, 1, 4, 2, 3)


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, n):
    op = f"conv_transpose{n}d"
    _check_input(input, n, op)
    if not isinstance(weight, _C.Tensor) or weight.ndim != n + 2:
        raise RuntimeError(f"{op}: expected a {n + 2}-D weight (in_channels, out_channels/groups, kernel...), "
                           f"got {list(weight.shape) if isinstance(weight, _C.Tensor) else type(weight).__name__}")
    stride, padding = _tup(stride, n, "stride", op), _tup(padding, n, "padding", op)
    output_padding, dilation = _tup(output_padding, n, "output_padding", op), _tup(dilation, n, "dilation", op)
    groups = int(groups)
    x = input.unsqueeze(0) if input.ndim == n + 1 else input
    w = weight
    if n == 1:  # as a 2-D one of height 1
        x, w = x.unsqueeze(2), w.unsqueeze(2)
        stride, padding, output_padding, dilation = ((1,) + stride, (0,) + padding, (0,) + output_padding,
                                                     (1,) + dilation)
    if n == 3:
        y = _conv_transpose3d(x, w, stride, padding, output_padding, dilation, groups, op)
    else:
        y = _conv_transpose2d(x, w, stride, padding, output_padding, dilation, groups, op)
    if n == 1:
        y = y.squeeze(2)
    if bias is not None:
        if bias.ndim != 1 or bias.shape[0] != y.shape[1]:
            raise RuntimeError(f"{op}: bias of shape {list(bias.shape)} does not match {y.shape[1]} output "
                               f"channels (weight of shape {list(weight.shape)}, groups={groups})")
        y = y + bias.reshape((1, -1) + (1,) * n)
    return y.squeeze(0) if input.ndim == n + 1 else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


# ======================= 3-D convolution =======================

def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    op = "conv3d"
    _check_input(input, 3, op)
    if not isinstance(weight, _C.Tensor) or weight.ndim != 5:
        raise RuntimeError(f"{op}: expected a 5-D weight (out_channels, in_channels/groups, kd, kh, kw), got "
                           f"{list(weight.shape) if isinstance(weight, _C.Tensor) else type(weight).__name__}")
    stride, dilation = _tup(stride, 3, "stride", op), _tup(dilation, 3, "dilation", op)
    groups = int(groups)
    x = input.unsqueeze(0) if input.ndim == 4 else input
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0, 0)
        elif padding == "same":
            if stride != (1, 1, 1):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []  # dilation * (k - 1) in all, the odd one at the end (torch)
            for d, k in zip(reversed(dilation), reversed(kernel)):
                pads += [d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2]
            x, padding = _nn.pad(x, tuple(pads), "constant", None), (0, 0, 0)
        else:
            raise RuntimeError(f"{op}: invalid padding string '{padding}', should be one of 'valid', 'same'")
    padding = _tup(padding, 3, "padding", op)
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"{op}: negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported")
    N, C, D, H, W = x.shape
    O, Cg, kd = weight.shape[0], weight.shape[1], kernel[0]
    if Cg * groups != C:
        raise RuntimeError(f"{op}: given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {Cg * groups} channels, but got {C} channels instead")
    if O % groups:
        raise RuntimeError(f"{op}: given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    Dp = D + 2 * padding[0]
    Do = (Dp - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    if Do < 1:
        raise RuntimeError(f"{op}: calculated padded input size per channel: ({Dp} x {H + 2 * padding[1]} x "
                           f"{W + 2 * padding[2]}); kernel size: ({kd} x {kernel[1]} x {kernel[2]}); kernel size "
                           f"can't be greater than actual input size")
    if padding[0]:
        x = _nn.pad(x, (0, 0, 0, 0, padding[0], padding[0]), "constant", None)
    # tap t of output depth o reads depth o * stride + t * dilation: one strided slice per tap
    span = (Do - 1) * stride[0] + 1
    taps = _C.stack([x[:, :, t * dilation[0]:t * dilation[0] + span:stride[0]] for t in range(kd)], 2)
    G = groups
    # (N, C, kd, Do, H, W) -> (N * Do, G * kd * Cg, H, W): per group, the taps then the channels
    cols = taps.reshape(N, G, Cg, kd, Do, H, W).permute(0, 4, 1, 3, 2, 5, 6).reshape(N * Do, G * kd * Cg, H, W)
    w2 = weight.reshape(G, O // G, Cg, kd, kernel[1], kernel[2]).permute(0, 1, 3, 2, 4, 5)
    w2 = w2.reshape(O, kd * Cg, kernel[1], kernel[2])
    y = _nn.conv2d(cols, w2, bias, stride[1:], padding[1:], dilation[1:], groups)
    y = y.reshape(N, Do, O, y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4)
    return y.squeeze(0) if input.ndim == 4 else y


# ======================= pooling: ceil_mode, count_include_pad, divisor_override =======================

def _pool_out(size, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape: ceil_mode's last window must start inside the input or the left
    padding. Returns the window count and how far the last window reaches past the padded input."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out, max(0, (out - 1) * s + d * (k - 1) + 1 - (size + 2 * p))


def _pool_args(input, kernel_size, stride, padding, dilation, op):
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{op}: expected a 3-D or 4-D input, got shape {list(input.shape)}")
    k = _tup(kernel_size, 2, "kernel_size", op)
    s = k if stride is None or stride == [] or stride == () else _tup(stride, 2, "stride", op)
    p, d = _tup(padding, 2, "padding", op), _tup(dilation, 2, "dilation", op)
    if any(v <= 0 for v in k + s + d):
        raise RuntimeError(f"{op}: kernel_size, stride and dilation must be greater than zero, but got "
                           f"kernel_size={list(k)}, stride={list(s)}, dilation={list(d)}")
    if any(pi < 0 or pi > ki // 2 for pi, ki in zip(p, k)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={list(p)}, "
                           f"kernel_size={list(k)}")
    return k, s, p, d


def _geometry(input, k, s, p, d, ceil_mode, op):
    H, W = input.shape[-2], input.shape[-1]
    (oh, eh), (ow, ew) = (_pool_out(n, ki, si, pi, di, ceil_mode) for n, ki, si, pi, di in zip((H, W), k, s, p, d))
    if oh < 1 or ow < 1:
        raise RuntimeError(f"{op}: given input size ({input.shape[-3]}x{H}x{W}), calculated output size "
                           f"({input.shape[-3]}x{oh}x{ow}); output size is too small")
    return (oh, ow), (eh, ew)


def max_pool2d_ext(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, op="max_pool2d"):
    k, s, p, d = _pool_args(input, kernel_size, stride, padding, dilation, op)
    _, (eh, ew) = _geometry(input, k, s, p, d, ceil_mode, op)
    if not (eh or ew):
        return _nn.max_pool2d(input, k, s, p, d, False, return_indices)
    # the windows past the end read -inf, as the padding does
    W = input.shape[-1]
    ext = _nn.pad(input, (0, ew, 0, eh), "constant", -math.inf)
    r = _nn.max_pool2d(ext, k, s, p, d, False, return_indices)
    if not return_indices:
        return r
    values, idx = r  # flat in the extended plane: back to the input's (H, W) plane
    return values, idx // (W + ew) * W + idx % (W + ew)


def avg_pool2d_ext(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                   op="avg_pool2d"):
    k, s, p, _ = _pool_args(input, kernel_size, stride, padding, 1, op)
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    (oh, ow), (eh, ew) = _geometry(input, k, s, p, (1, 1), ceil_mode, op)
    if not (eh or ew) and divisor_override is None and (count_include_pad or p == (0, 0)):
        return _nn.avg_pool2d(input, k, s, p, False, True)
    H, W = input.shape[-2], input.shape[-1]
    kk = k[0] * k[1]
    ends = (p[1], p[1] + ew, p[0], p[0] + eh)
    mean = _nn.avg_pool2d(_nn.pad(input, ends, "constant", None), k, s, 0, False, True)
    if divisor_override is not None:
        return mean * (kk / int(divisor_override))
    # torch's divisor: the window's positions inside the input (and the padding, when counted),
    # never those past the padded end; counted exactly by summing a 0/1 mask per window
    with no_grad():
        mask = _C.ones(1, 1, H, W, dtype=input.dtype, device=input.device)
        if count_include_pad:
            mask = _nn.pad(mask, (p[1], p[1], p[0], p[0]), "constant", 1.0)
            mask = _nn.pad(mask, (0, ew, 0, eh), "constant", None)
        else:
            mask = _nn.pad(mask, ends, "constant", None)
        count = _nn.unfold(mask, k, 1, 0, s).sum(1).reshape(oh, ow)
        factor = kk / count
    return mean * factor


def max_pool1d_ext(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    op = "max_pool1d"
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{op}: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape {list(input.shape)}")
    one = lambda v, what: (1, _tup(v, 1, what, op)[0])  # noqa: E731
    s = None if stride is None or stride == [] else one(stride, "stride")
    r = max_pool2d_ext(input.unsqueeze(-2), one(kernel_size, "kernel_size"), s, (0, _tup(padding, 1, "padding", op)[0]),
                       one(dilation, "dilation"), ceil_mode, return_indices, op)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def avg_pool1d_ext(input, kernel_size, stride, padding, ceil_mode, count_include_pad):
    op = "avg_pool1d"
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{op}: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape {list(input.shape)}")
    one = lambda v, what: (1, _tup(v, 1, what, op)[0])  # noqa: E731
    s = None if stride is None or stride == [] else one(stride, "stride")
    return avg_pool2d_ext(input.unsqueeze(-2), one(kernel_size, "kernel_size"), s,
                          (0, _tup(padding, 1, "padding", op)[0]), ceil_mode, count_include_pad, None,
                          op).squeeze(-2)


def _pool3d_args(input, kernel_size, stride, padding, dilation, op):
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{op}: expected a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input, got shape "
                           f"{list(input.shape)}")
    k = _tup(kernel_size, 3, "kernel_size", op)
    s = k if stride is None or stride == [] or stride == () else _tup(stride, 3, "stride", op)
    p, d = _tup(padding, 3, "padding", op), _tup(dilation, 3, "dilation", op)
    x = input.unsqueeze(0) if input.ndim == 4 else input
    return x, k, s, p, d


# 3-D pooling is separable: the (H, W) windows of every depth slice, then the depth windows over
# their results (a max of maxima; for the mean, torch's divisor is the product of the per-dim counts)

def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    op = "max_pool3d"
    x, k, s, p, d = _pool3d_args(input, kernel_size, stride, padding, dilation, op)
    N, C, D, H, W = x.shape
    hw, at_hw = max_pool2d_ext(x.reshape(N, C * D, H, W), k[1:], s[1:], p[1:], d[1:], ceil_mode, True, op)
    Ho, Wo = hw.shape[2], hw.shape[3]
    y, at_d = max_pool2d_ext(hw.reshape(N, C, D, Ho * Wo), (k[0], 1), (s[0], 1), (p[0], 0), (d[0], 1), ceil_mode,
                             True, op)
    Do = y.shape[2]
    y = y.reshape(N, C, Do, Ho, Wo)
    if return_indices:
        # the first maximum in (d, h, w) order, as torch's: the first slice among those whose
        # (h, w) maximum (itself the first in its slice) is the largest; flat in D * H * W
        depth = at_d // (Ho * Wo)
        plane = at_hw.reshape(N, C, D, Ho * Wo).gather(2, depth)
        at = (depth * (H * W) + plane).reshape(N, C, Do, Ho, Wo)
        return (y.squeeze(0), at.squeeze(0)) if input.ndim == 4 else (y, at)
    return y.squeeze(0) if input.ndim == 4 else y


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    op = "avg_pool3d"
    x, k, s, p, _ = _pool3d_args(input, kernel_size, stride, padding, 1, op)
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    N, C, D, H, W = x.shape
    per_dim = None if divisor_override is None else 1  # with an override: window sums, divided at the end
    hw = avg_pool2d_ext(x.reshape(N, C * D, H, W), k[1:], s[1:], p[1:], ceil_mode, count_include_pad, per_dim, op)
    Ho, Wo = hw.shape[2], hw.shape[3]
    y = avg_pool2d_ext(hw.reshape(N, C, D, Ho * Wo), (k[0], 1), (s[0], 1), (p[0], 0), ceil_mode, count_include_pad,
                       per_dim, op)
    y = y.reshape(N, C, y.shape[2], Ho, Wo)
    if divisor_override is not None:
        y = y / int(divisor_override)
    return y.squeeze(0) if input.ndim == 4 else y


def adaptive_max_indices(input, size):
    """The indices of adaptive max pooling of the last len(size) (1 or 2) dims to `size`, flat in
    each input plane: torch's windows [floor(i * n / out), ceil((i + 1) * n / out)), each padded to
    the longest by repeating its first position, and the first maximum in (h, w) order."""
    with no_grad():
        dims = tuple(input.shape[input.ndim - len(size):])
        windows = []
        for n, out in zip(dims, size):
            spans = [list(range(i * n // out, -(-(i + 1) * n // out))) for i in range(out)]
            longest = max(len(w) for w in spans)
            windows.append(_C.tensor([w + w[:1] * (longest - len(w)) for w in spans], dtype=_C.dtype.int64,
                                     device=input.device))
        lead = tuple(input.shape[:input.ndim - len(size)])
        picked = input.detach()
        for k, w in enumerate(windows):  # dim k of the plane -> (out_k, L_k)
            d = len(lead) + 2 * k
            picked = picked.index_select(d, w.reshape(-1))
            picked = picked.reshape(tuple(picked.shape[:d]) + tuple(w.shape) + tuple(picked.shape[d + 1:]))
        if len(size) == 1:
            flat = windows[0]                                                 # (out, L)
        else:
            picked = picked.transpose(-3, -2)                                 # (.., Ho, Wo, Lh, Lw)
            wh, ww = windows
            flat = (wh.reshape(size[0], 1, -1, 1) * dims[1] + ww.reshape(1, size[1], 1, -1))
            flat = flat.reshape(size[0], size[1], -1)                         # (Ho, Wo, Lh * Lw)
        picked = picked.reshape(lead + tuple(size) + (-1,))
        at = picked.argmax(-1).unsqueeze(-1)
        return flat.expand(lead + tuple(flat.shape)).gather(-1, at).squeeze(-1)


# ======================= embeddings =======================

def embedding_renorm_(weight, input, max_norm, norm_type):
    """torch.embedding_renorm_: the rows input looks up whose norm exceeds max_norm are scaled, in
    place and unrecorded, to max_norm / (norm + 1e-7) of themselves."""
    with no_grad():
        # every row's factor: 1 (exactly, so the row stays bitwise) unless looked up and too long
        looked_up = _C.zeros(weight.shape[0], 1, dtype=weight.dtype, device=weight.device)
        looked_up.index_fill_(0, _C.unique(input.reshape(-1)), 1.0)
        norm = weight.norm(float(norm_type), 1, True)
        shrink = (norm > max_norm) & (looked_up > 0)
        weight.mul_(_C.where(shrink, max_norm / (norm + 1e-7), _C.ones_like(norm)))
    return weight


def freq_scaled(looked_up, indices):
    """torch's scale_grad_by_freq: looked_up (indices.shape + (dim,)) as it is, its gradient divided
    by how often each row's index occurs in indices: the rule is a product with that constant (so
    its own derivative scales too, where torch's double backward of embedding drops the scale)."""
    flat = indices.reshape(-1)
    counts = _C.bincount(flat)
    scale = 1.0 / counts.index_select(0, flat).to(looked_up.dtype)
    scale = scale.reshape(tuple(indices.shape) + (1,))
    return _C.from_op(looked_up.detach(), [looked_up], lambda g: [g * scale], "scale_grad_by_freq")


def _bags_1d(input, weight, offsets, mode, per_sample_weights, include_last_offset, padding_idx):
    """embedding_bag over 1-D input and offsets without a host read (hostwait, issue #14): each
    position's bag is the number of bag starts at or before it, minus one (searchsorted); the rows
    are added into their bags (index_add) for sum and mean, and for max each bag's run of rows is
    reduced in place (_run_reduce) and read at the bag's start. An empty bag gives zeros (torch).
    The offsets are checked where they live (on the Vulkan device: raised at the next host read),
    with torch's errors."""
    op, n = "embedding_bag", input.shape[0]
    check = _C._expect_all
    if offsets.numel():
        check(offsets[:1] == 0, False, op, "offsets[0] has to be 0, i.e., the first sequence in the "
              "mini-batch has to start from position 0")
        check(offsets[-1:] <= n, False, op, f"offsets[-1] can not be greater than input's length ({n})")
        if offsets.numel() > 1:
            check(offsets[1:] >= offsets[:-1], False, op, "offsets must be non-decreasing")
    starts = offsets[:-1] if include_last_offset else offsets  # the last offset closes the last bag
    bags = starts.shape[0]
    out = _C.zeros(bags, weight.shape[1], dtype=weight.dtype, device=weight.device)
    if n == 0 or bags == 0:
        return out
    pos = _C.arange(0, n, dtype=_C.dtype.int64, device=input.device)
    bag = _C.clamp(_C.searchsorted(starts.to(_C.dtype.int64).contiguous(), pos, right=True) - 1, min=0)
    try:
        emb = _nn.embedding(input, weight, padding_idx)  # (n, dim)
    except IndexError as e:  # torch's embedding_bag says RuntimeError where embedding says IndexError
        raise RuntimeError(f"{op}: {e}") from None
    keep = None if padding_idx is None else input != padding_idx
    if mode == "max":
        if keep is not None:
            emb = _C.where(keep.unsqueeze(-1), emb, _C.full((), -math.inf, dtype=emb.dtype, device=emb.device))
        kept = _C.ones(n, dtype=_C.dtype.int64, device=input.device) if keep is None else keep.to(_C.dtype.int64)
        size = _C.zeros(bags, dtype=_C.dtype.int64, device=input.device).index_add(0, bag, kept)
        top = _run_reduce(bag, emb, _C.maximum, n).index_select(0, _C.clamp(starts.to(_C.dtype.int64), max=n - 1))
        return _C.where((size > 0).unsqueeze(1), top, _C.zeros((), dtype=emb.dtype, device=emb.device))
    if per_sample_weights is not None:
        emb = emb * per_sample_weights.unsqueeze(-1)
    if keep is not None:
        emb = _C.where(keep.unsqueeze(-1), emb, _C.zeros((), dtype=emb.dtype, device=emb.device))
    total = out.index_add(0, bag, emb)
    if mode == "sum":
        return total
    ones = _C.ones(n, dtype=weight.dtype, device=weight.device)
    if keep is not None:
        ones = _C.where(keep, ones, _C.zeros((), dtype=ones.dtype, device=ones.device))
    count = _C.zeros(bags, dtype=weight.dtype, device=weight.device).index_add(0, bag, ones)
    return total / _C.clamp(count, 1.0).unsqueeze(1)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    op = "embedding_bag"
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({tuple(input.shape)})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  f"on GitHub.")
    if sparse:
        raise NotImplementedError(f"{op}: sparse=True (sparse gradients) is not implemented")
    if scale_grad_by_freq:  # torch's CPU kernel scales some rows by another row's count: not followed
        raise NotImplementedError(f"{op}: scale_grad_by_freq=True is not implemented (F.embedding has it)")
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise RuntimeError(f"{op}: padding_idx must be within the number of embeddings, {-rows} through "
                               f"{rows - 1}, but got {padding_idx}")
        padding_idx = padding_idx % rows
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    if input.ndim == 1:  # hostwait: no host read of the offsets
        return _bags_1d(input, weight, offsets, mode, per_sample_weights, include_last_offset, padding_idx)
    idx = input  # (bags, length): fixed-length bags
    valid = None if padding_idx is None else idx != padding_idx
    try:
        emb = _nn.embedding(idx, weight, padding_idx)  # (bags, longest, dim)
    except IndexError as e:  # torch's embedding_bag says RuntimeError where embedding says IndexError
        raise RuntimeError(f"{op}: {e}") from None
    if per_sample_weights is not None:
        emb = emb * per_sample_weights.unsqueeze(-1)
    if valid is None:
        if mode == "sum":
            return emb.sum(1)
        return emb.mean(1) if mode == "mean" else _C.amax(emb, 1)
    mask = valid.unsqueeze(-1)
    zero = _C.zeros((), dtype=emb.dtype, device=emb.device)
    if mode == "max":  # a bag with nothing in it gives zeros (torch)
        top = _C.amax(_C.where(mask, emb, _C.full((), -math.inf, dtype=emb.dtype, device=emb.device)), 1)
        return _C.where(valid.any(1, True), top, zero)
    total = _C.where(mask, emb, zero).sum(1)
    if mode == "sum":
        return total
    count = valid.sum(1, True).to(emb.dtype)
    return total / _C.clamp(count, 1.0)
