"""torch.nn.functional's names of issues #15/#16 that compose ops vkml already has (no new kernels):
channel_shuffle, pdist, feature_alpha_dropout, dropout3d, rrelu, lp_pool1d/2d/3d, local_response_norm,
gumbel_softmax, adaptive_avg/max_pool3d, multi_margin_loss, multilabel_margin_loss,
triplet_margin_with_distance_loss, max_unpool1d/2d/3d. Each follows torch's formula (so gradients,
which come from the composed ops, are torch's) and raises torch's exception types."""

import math

from .. import _C
from .._grad_mode import no_grad as _no_grad
from .._shape_fns import triu_indices as _triu_indices
from . import functional as F

__all__ = ["channel_shuffle", "native_channel_shuffle", "pdist", "feature_alpha_dropout", "dropout3d", "rrelu",
           "rrelu_", "lp_pool1d", "lp_pool2d", "lp_pool3d", "local_response_norm", "gumbel_softmax",
           "adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "max_pool3d_with_indices",
           "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss", "max_unpool1d",
           "max_unpool2d", "max_unpool3d"]


def channel_shuffle(input, groups):
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape(tuple(input.shape))


native_channel_shuffle = channel_shuffle


def pdist(input, p=2):
    """Distances between the rows of a 2-D input, the pairs (i < j) in row-major order."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    idx = _triu_indices(n, n, 1, device=input.device)
    from ..linalg import vector_norm  # (vkml.linalg is imported after vkml.nn)
    return vector_norm(input[idx[0]] - input[idx[1]], float(p), dim=1)


def _alpha_feature_noise(input, p):
    """torch's feature alpha dropout: one keep/drop draw per (N, C), then the affine map that keeps SELU's
    mean and variance (a and b as in ATen's _dropout_impl)."""
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = (_C.rand(shape, dtype=input.dtype, device=input.device) < 1.0 - p).to(input.dtype)
    b = (keep - 1) * (alpha * a) + alpha * a * p
    return input * (keep * a) + b


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    F._check_p(p)
    if input.ndim < 2:
        raise RuntimeError(f"feature_alpha_dropout: Feature dropout requires at least 2 dimensions in the input, "
                           f"got {input.ndim}")
    if not training or p == 0:
        return input
    noised = (lambda x: x * 0.0) if p == 1 else (lambda x: _alpha_feature_noise(x, p))
    return F._inplace(noised, input, inplace=inplace, name="feature_alpha_dropout_")


def dropout3d(input, p=0.5, training=True, inplace=False):
    F._check_p(p)
    # a 4-D input is one unbatched (C, D, H, W) sample: one draw per channel, as torch's
    return F._inplace(F._nn.feature_dropout, input, p, training, 5, inplace=inplace, name="dropout3d_")


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, generator=None):
    """Training: every element <= 0 is scaled by its own slope drawn uniformly from [lower, upper] (its
    gradient is that slope); otherwise leaky_relu with the mean slope, as torch's."""
    if lower > upper:
        raise RuntimeError(f"rrelu: Lower bound should be less than or equal to the upper bound, got lower={lower} "
                           f"upper={upper}")
    if not training:
        return F._inplace(F._nn.leaky_relu, input, (lower + upper) / 2, inplace=inplace, name="rrelu_")
    u = _C.rand(tuple(input.shape), dtype=input.dtype, device=input.device, generator=generator)
    slope = u * (upper - lower) + lower
    noise = _C.where(input <= 0, slope, _C.ones_like(slope))
    return F._inplace(lambda x: x * noise, input, inplace=inplace, name="rrelu_")


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rrelu(input, lower, upper, training, True, generator)


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n):
    pools = {1: (F.max_pool1d, F.avg_pool1d), 2: (F.max_pool2d, F.avg_pool2d), 3: (F.max_pool3d, F.avg_pool3d)}
    max_pool, avg_pool = pools[n]
    if norm_type == math.inf:
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    window = math.prod(F._tuple(kernel_size, n, "kernel_size"))
    # torch's form: sign(out) * relu(|out|) zeroes the gradient where a window's sum is 0
    return (_C.sign(out) * F._nn.relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """torch's composition: the squares averaged over a window of `size` channels (zero-padded)."""
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = F.pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = F.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(sizes)
    return input / div.mul(alpha).add(k).pow(beta)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Softmax of (logits + Gumbel noise) / tau; hard=True returns the one-hot of its argmax with the
    soft sample's gradient (straight through), as torch's."""
    if eps != 1e-10:
        import warnings
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    u = _C.rand(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    gumbels = -(-_C.log1p(-u)).log()  # -log(Exponential(1)) ~ Gumbel(0, 1)
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = _C.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def adaptive_avg_pool3d(input, output_size):
    return F._nn.adaptive_avg_pool(input, F._adaptive_size(input, output_size, 3))


def _adaptive_max3d_indices(input, size):
    """The flat (d, h, w) index of each window's first maximum: _conv_pool.adaptive_max_indices's
    windows (torch's, padded by repeating their first position) over three dims."""
    with _no_grad():
        dims = tuple(input.shape[input.ndim - 3:])
        lead = tuple(input.shape[:input.ndim - 3])
        picked, flat = input.detach(), None
        for k, (n, out) in enumerate(zip(dims, size)):
            spans = [list(range(i * n // out, -(-(i + 1) * n // out))) for i in range(out)]
            longest = max(len(w) for w in spans)
            w = _C.tensor([v + v[:1] * (longest - len(v)) for v in spans], dtype=_C.dtype.int64, device=input.device)
            d = len(lead) + 2 * k  # dim k of the plane -> (out_k, L_k)
            picked = picked.index_select(d, w.reshape(-1))
            picked = picked.reshape(tuple(picked.shape[:d]) + tuple(w.shape) + tuple(picked.shape[d + 1:]))
            # w's positions times their stride in the flat (d, h, w) index, over (o1, o2, o3, L1, L2, L3)
            term = (w * math.prod(dims[k + 1:])).reshape([out if i == k else longest if i == 3 + k else 1
                                                          for i in range(6)])
            flat = term if flat is None else flat + term
        nl = len(lead)
        picked = picked.permute(tuple(range(nl)) + (nl, nl + 2, nl + 4, nl + 1, nl + 3, nl + 5))
        picked = picked.reshape(lead + tuple(size) + (-1,))
        flat = flat.reshape(tuple(size) + (-1,))
        at = picked.argmax(-1).unsqueeze(-1)
        return flat.expand(lead + tuple(flat.shape)).gather(-1, at).squeeze(-1)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    size = F._adaptive_size(input, output_size, 3)
    values = F._nn.adaptive_max_pool(input, size)
    return (values, _adaptive_max3d_indices(input, size)) if return_indices else values


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return F.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return F._adaptive_max(input, output_size, True, 1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return F._adaptive_max(input, output_size, True, 2)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size, True)


def _class_target(input, target, what, target_shape):
    if input.ndim not in (1, 2) or input.numel() == 0 and input.ndim != 2:
        raise RuntimeError(f"{what}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if input.ndim == 2:
        return input, target
    if target.numel() != math.prod(target_shape):
        raise RuntimeError(f"{what}: inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    return input.unsqueeze(0), target.reshape(target_shape)


def _class_mask(y, c, dtype):
    """(N, C) of y's classes, made on y's device (F.one_hot's arange is the CPU's)."""
    return (_C.arange(c, device=y.device) == y.unsqueeze(-1)).to(dtype)


def _reduce(loss, reduction):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    reduction = F._red(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    squeeze = input.ndim == 1
    x, y = _class_target(input, target, "multi_margin_loss", (1,))
    n, c = x.shape
    if y.ndim != 1 or y.shape[0] != n:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    z = (x - x.gather(1, y.unsqueeze(1)) + margin).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[y].unsqueeze(1)
    others = 1 - _class_mask(y, c, x.dtype)  # the target's own class adds nothing
    loss = (z * others).sum(1) / c
    if squeeze and reduction == "none":
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """torch's: the target's classes are its entries up to the first -1; every target entry j (repeats
    counted, as torch's loop does) against every non-target class i: relu(1 - x[j] + x[i]) / C."""
    reduction = F._red(size_average, reduce, reduction)
    squeeze = input.ndim == 1
    x, y = _class_target(input, target, "multilabel_margin_loss", (1, -1 if input.ndim != 1 else input.shape[0]))
    if tuple(y.shape) != tuple(x.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    c = x.shape[1]
    if x.numel() and bool(((y < -1) | (y >= c)).any()):  # torch's check (a host read)
        raise RuntimeError(f"multilabel_margin_loss: argument #2 'target' is out of range: classes are in "
                           f"[-1, {c})")
    valid = (y >= 0).to(_C.dtype.int64).cumprod(1)  # entries before the first -1
    counts = (_class_mask(y.clamp_min(0), c, x.dtype) * valid.unsqueeze(2).to(x.dtype)).sum(1)  # (N, C)
    non_target = (counts == 0).to(x.dtype)
    hinge = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)  # [n, j, i]
    loss = (hinge * counts.unsqueeze(2) * non_target.unsqueeze(1)).sum((1, 2)) / c
    if squeeze and reduction == "none":
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    if distance_function is None:
        distance_function = F.pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = _C.minimum(dist_neg, distance_function(positive, negative))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def _unpool_output_size(input, kernel_size, stride, padding, output_size, n):
    kernel_size = F._tuple(kernel_size, n, "kernel_size")
    stride = kernel_size if stride is None or stride == [] else F._tuple(stride, n, "stride")
    padding = F._tuple(padding, n, "padding")
    default = [(input.shape[input.ndim - n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
    return output_size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n):
    """Each value written at its flat index into a zero plane of the output's size (torch's max_unpool:
    indices from max_pool*(return_indices=True))."""
    name = f"max_unpool{n}d"
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{name}: Expected {n + 1}D or {n + 2}D input, but got {input.ndim}D")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{name}: Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    if indices.dtype != _C.dtype.int64:
        raise RuntimeError(f"{name}: elements in indices should be type int64 but got: {indices.dtype}")
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size, n)
    lead = tuple(input.shape[:input.ndim - n])
    plane = math.prod(size)
    flat_idx = indices.reshape(lead + (-1,))
    if flat_idx.numel() and bool(((flat_idx < 0) | (flat_idx >= plane)).any()):  # torch's check (a host read)
        raise RuntimeError(f"{name}: Found an invalid max index: indices must be in [0, {plane}) for an output "
                           f"of size {list(size)}")
    out = _C.zeros(lead + (plane,), dtype=input.dtype, device=input.device)
    out = out.scatter(len(lead), flat_idx, input.reshape(lead + (-1,)))
    return out.reshape(lead + tuple(size))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


# ---- affine_grid / grid_sample (2-D sampling: bilinear and nearest, zeros and border padding) ----

def _base_coords(steps, align_corners, like):
    """torch's linspace_from_neg_one: the normalized pixel centres (corners with align_corners)."""
    if steps <= 1:
        return _C.zeros((1,), dtype=like.dtype, device=like.device)
    r = _C.linspace(-1.0, 1.0, steps, dtype=like.dtype, device=like.device)
    return r if align_corners else r * ((steps - 1) / steps)


def affine_grid(theta, size, align_corners=None):
    size = list(size)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    k = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size {size}. Got "
                         f"{list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: theta's batch {theta.shape[0]} is not the size's {size[0]}")
    spatial = size[2:]
    axes = [_base_coords(s, bool(align_corners), theta) for s in reversed(spatial)]  # x (width) first
    shape = tuple(spatial)
    cols = []
    for j, a in enumerate(axes):  # the coordinate along spatial dim (k - 1 - j)
        view = [1] * k
        view[k - 1 - j] = a.shape[0]
        cols.append(a.reshape(view).expand(shape))
    cols.append(_C.ones(shape, dtype=theta.dtype, device=theta.device))
    base = _C.stack(cols, -1).reshape(1, -1, k + 1)  # (1, prod(spatial), k + 1)
    return base.matmul(theta.transpose(1, 2)).reshape([size[0]] + spatial + [k])


def _source_index(coord, size, padding_mode, align_corners):
    coord = (coord + 1) / 2 * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2
    return coord.clamp(0, size - 1) if padding_mode == "border" else coord


def _sample(flat, iy, ix, h, w):
    """flat (N, C, H*W) at integer positions (N, P) as float tensors: (N, C, P), 0 outside."""
    inside = ((ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)).to(flat.dtype)
    idx = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)).to(_C.dtype.int64)
    n, c = flat.shape[0], flat.shape[1]
    vals = flat.gather(2, idx.unsqueeze(1).expand((n, c, idx.shape[1])))
    return vals * inside.unsqueeze(1)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.ndim == 5 or mode == "bicubic" or padding_mode == "reflection":
        raise NotImplementedError(f"grid_sample: 3-D sampling, mode='bicubic' and padding_mode='reflection' are not "
                                  f"supported yet (got a {input.ndim}-D input, mode={mode!r}, "
                                  f"padding_mode={padding_mode!r})")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected a 4-D input (N, C, H, W) and a grid (N, H_out, W_out, 2) of "
                           f"the same batch, got input {list(input.shape)} and grid {list(grid.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    g = grid.reshape(n, -1, 2)
    ix = _source_index(g[..., 0], w, padding_mode, bool(align_corners))
    iy = _source_index(g[..., 1], h, padding_mode, bool(align_corners))
    flat = input.reshape(n, c, h * w)
    if mode == "nearest":
        out = _sample(flat, iy.detach().round(), ix.detach().round(), h, w)
        # torch gives the grid a zero gradient here (not none): a where() that never selects it
        never = _C.zeros(tuple(ix.shape), dtype=_C.dtype.bool, device=ix.device)
        out = out + _C.where(never, ix + iy, _C.zeros_like(ix)).unsqueeze(1)
        return out.reshape(n, c, ho, wo)
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    x1, y1 = x0 + 1, y0 + 1
    out = (_sample(flat, y0, x0, h, w) * ((x1 - ix) * (y1 - iy)).unsqueeze(1)
           + _sample(flat, y0, x1, h, w) * ((ix - x0) * (y1 - iy)).unsqueeze(1)
           + _sample(flat, y1, x0, h, w) * ((x1 - ix) * (iy - y0)).unsqueeze(1)
           + _sample(flat, y1, x1, h, w) * ((ix - x0) * (iy - y0)).unsqueeze(1))
    return out.reshape(n, c, ho, wo)


__all__ += ["affine_grid", "grid_sample"]
