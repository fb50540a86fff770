"""vk.nn.functional: torch.nn.functional's names, arguments and defaults over vkml._C._nn.

No math here: every function forwards to the C++ layer (vk::nn::functional).
"""

from .. import _C
from . import _conv_pool

_nn = _C._nn

__all__ = ["linear", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax", "cross_entropy",
           "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "layer_norm", "batch_norm", "dropout", "embedding", "one_hot", "pad",
           "scaled_dot_product_attention", "unfold", "fold", "conv2d", "max_pool2d", "avg_pool2d"]


def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def linear(input, weight, bias=None):
    return _nn.linear(input, weight, bias)


def relu(input, inplace=False):
    return _inplace(_nn.relu, input, inplace=inplace)


def gelu(input, approximate="none"):
    return _nn.gelu(input, approximate)


def silu(input, inplace=False):
    return _inplace(_nn.silu, input, inplace=inplace)


def sigmoid(input):
    return _nn.sigmoid(input)


def tanh(input):
    return _nn.tanh(input)


def _dim(dim, input):
    if dim is None:  # torch's legacy implicit dim
        return 0 if input.ndim in (0, 1, 3) else 1
    return dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _nn.softmax(input, _dim(dim, input))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _nn.log_softmax(input, _dim(dim, input))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    return _nn.cross_entropy(input, target, weight, ignore_index, _reduction(size_average, reduce, reduction),
                             label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _nn.nll_loss(input, target, weight, ignore_index, _reduction(size_average, reduce, reduction))


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _nn.mse_loss(input, target, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _nn.l1_loss(input, target, _reduction(size_average, reduce, reduction))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return _nn.binary_cross_entropy(input, target, weight, _reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    return _nn.binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                                _reduction(size_average, reduce, reduction))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _nn.layer_norm(input, tuple(normalized_shape), weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    return _nn.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _inplace(_nn.dropout, input, p, training, inplace=inplace)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if sparse:
        raise NotImplementedError("embedding: sparse=True (sparse gradients) is not implemented")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    if max_norm is not None:  # torch's embedding_renorm_ of the rows looked up, in place (issue #16)
        _conv_pool.embedding_renorm_(weight, input, max_norm, norm_type)
    out = _nn.embedding(input, weight, padding_idx)
    return _conv_pool.freq_scaled(out, input) if scale_grad_by_freq else out


def one_hot(tensor, num_classes=-1):
    return _nn.one_hot(tensor, num_classes)


def pad(input, pad, mode="constant", value=None):
    return _nn.pad(input, tuple(pad), mode, value)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    return _nn.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return _nn.unfold(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return _nn.fold(input, output_size, kernel_size, dilation, padding, stride)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if padding == "valid":  # torch's name for no padding
        padding = 0
    elif padding == "same":
        return _conv2d_same(input, weight, bias, stride, dilation, groups)
    elif isinstance(padding, str):
        raise RuntimeError(f"conv2d: invalid padding string '{padding}', should be one of 'valid', 'same'")
    return _nn.conv2d(input, weight, bias, stride, padding, dilation, groups)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if ceil_mode:  # issue #16
        return _conv_pool.max_pool2d_ext(input, kernel_size, stride, padding, dilation, True, return_indices)
    return _nn.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    if ceil_mode or not count_include_pad or divisor_override is not None:  # issue #16
        return _conv_pool.avg_pool2d_ext(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                         divisor_override)
    return _nn.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


# ---- nn breadth (issue #16): activations, distances, losses and layers beyond the classic ones ----

__all__ += ["mish", "hardswish", "hardsigmoid", "hardtanh", "relu6", "leaky_relu", "elu", "selu", "celu",
            "softplus", "softsign", "prelu", "tanhshrink", "threshold", "glu", "logsigmoid", "softmin",
            "hardshrink", "softshrink", "pairwise_distance", "cosine_similarity", "normalize", "kl_div",
            "smooth_l1_loss", "huber_loss", "margin_ranking_loss", "hinge_embedding_loss",
            "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
            "multilabel_soft_margin_loss", "soft_margin_loss", "group_norm", "rms_norm", "instance_norm",
            "pixel_shuffle", "pixel_unshuffle", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "interpolate",
            "upsample", "bilinear", "dropout1d", "dropout2d", "alpha_dropout", "conv1d", "max_pool1d",
            "avg_pool1d", "relu_", "elu_", "leaky_relu_", "hardtanh_", "threshold_"]


def _red(size_average, reduce, reduction, batchmean=False):
    """The reduction, checked as torch does (ValueError for an unknown one)."""
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum") and not (batchmean and reduction == "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _inplace(fn, input, *args, inplace=False, name=None, composite=False):
    """fn(input, *args); with torch's inplace=True (and the F.*_ forms) written into input by the
    core's in-place path, as torch's in-place ops: views of input see it, a write into a view
    reaches its base, and while grad mode is on the write is recorded (input's object takes its
    history; a leaf that requires grad is refused). fn runs inside that path, so its result is
    held by the write alone: the values its last op's rule reads of input (leaky_relu's) are kept.
    A composite fn's inner ops read input too (selu's elu, mish's softplus): while recording it
    runs on a copy, which the write leaves intact."""
    if not inplace:
        return fn(input, *args)
    if composite and input.requires_grad and _C.is_grad_enabled():
        return _C._inplace(input, name or fn.__name__ + "_", lambda x, *a: fn(x.clone(), *a), args, {})
    return _C._inplace(input, name or fn.__name__ + "_", fn, args, {})


def mish(input, inplace=False):
    return _inplace(_nn.mish, input, inplace=inplace, composite=True)


def hardswish(input, inplace=False):
    return _inplace(_nn.hardswish, input, inplace=inplace)


def hardsigmoid(input, inplace=False):
    return _inplace(_nn.hardsigmoid, input, inplace=inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _inplace(_nn.hardtanh, input, min_val, max_val, inplace=inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    return _inplace(_nn.relu6, input, inplace=inplace)


def relu_(input):
    return _inplace(_nn.relu, input, inplace=True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace(_nn.leaky_relu, input, negative_slope, inplace=inplace)


def leaky_relu_(input, negative_slope=0.01):
    return _inplace(_nn.leaky_relu, input, negative_slope, inplace=True)


def elu(input, alpha=1.0, inplace=False):
    return _inplace(_nn.elu, input, alpha, inplace=inplace)


def elu_(input, alpha=1.0):
    return _inplace(_nn.elu, input, alpha, inplace=True)


def selu(input, inplace=False):
    return _inplace(_nn.selu, input, inplace=inplace, composite=True)


def celu(input, alpha=1.0, inplace=False):
    return _inplace(_nn.celu, input, alpha, inplace=inplace, composite=True)


def softplus(input, beta=1.0, threshold=20.0):
    return _nn.softplus(input, beta, threshold)


def softsign(input):
    return _nn.softsign(input)


def prelu(input, weight):
    return _nn.prelu(input, weight)


def tanhshrink(input):
    return _nn.tanhshrink(input)


def threshold(input, threshold, value, inplace=False):
    return _inplace(_nn.threshold, input, threshold, value, inplace=inplace)


def threshold_(input, threshold, value):
    return _inplace(_nn.threshold, input, threshold, value, inplace=True)


def glu(input, dim=-1):
    return _nn.glu(input, dim)


def logsigmoid(input):
    return _nn.logsigmoid(input)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _nn.softmin(input, _dim(dim, input))


def hardshrink(input, lambd=0.5):
    return _nn.hardshrink(input, lambd)


def softshrink(input, lambd=0.5):
    return _nn.softshrink(input, lambd)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _nn.pairwise_distance(x1, x2, p, eps, keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _nn.cosine_similarity(x1, x2, dim, eps)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported")
    return _nn.normalize(input, p, dim, eps)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    return _nn.kl_div(input, target, _red(size_average, reduce, reduction, True), log_target)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return _nn.smooth_l1_loss(input, target, _red(size_average, reduce, reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if weight is not None:
        raise NotImplementedError("huber_loss: weight is not supported")
    return _nn.huber_loss(input, target, _red(None, None, reduction), delta)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    return _nn.margin_ranking_loss(input1, input2, target, margin, _red(size_average, reduce, reduction))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    return _nn.hinge_embedding_loss(input, target, margin, _red(size_average, reduce, reduction))


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    return _nn.cosine_embedding_loss(input1, input2, target, margin, _red(size_average, reduce, reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    return _nn.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                   _red(size_average, reduce, reduction))


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    return _nn.poisson_nll_loss(input, target, log_input, full, eps, _red(size_average, reduce, reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        var = _C.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    if bool((var < 0).any()):  # torch's check (a host read)
        raise ValueError("var has negative entry/entries")
    return _nn.gaussian_nll_loss(input, target, var, full, eps, _red(None, None, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return _nn.multilabel_soft_margin_loss(input, target, weight, _red(size_average, reduce, reduction))


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _nn.soft_margin_loss(input, target, _red(size_average, reduce, reduction))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return _nn.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _nn.rms_norm(input, tuple(normalized_shape), weight, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    return _nn.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def pixel_shuffle(input, upscale_factor):
    return _nn.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return _nn.pixel_unshuffle(input, downscale_factor)


def _tuple(v, n, what):
    if isinstance(v, (list, tuple)):
        if len(v) != n:
            raise ValueError(f"{what} must have {n} elements, got {len(v)}")
        return tuple(v)
    return (v,) * n


def _adaptive_size(input, output_size, n):
    size = _tuple(output_size, n, "output_size")
    return tuple(input.shape[input.ndim - n + i] if s is None else s for i, s in enumerate(size))


def adaptive_avg_pool1d(input, output_size):
    return _nn.adaptive_avg_pool(input, _adaptive_size(input, output_size, 1))


def adaptive_avg_pool2d(input, output_size):
    return _nn.adaptive_avg_pool(input, _adaptive_size(input, output_size, 2))


def _adaptive_max(input, output_size, return_indices, n):
    size = _adaptive_size(input, output_size, n)
    values = _nn.adaptive_max_pool(input, size)
    if return_indices:  # issue #16
        return values, _conv_pool.adaptive_max_indices(input, size)
    return values


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 2)


__all__ += ["adaptive_max_pool1d", "adaptive_max_pool2d"]


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    import math
    n = input.ndim - 2
    if n < 1:
        raise ValueError(f"interpolate: expected an input of at least 3 dims (N, C, *), got {input.ndim}")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if align_corners is not None and mode in ("nearest", "nearest-exact", "area"):
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    scales = []
    if size is not None:
        size = _tuple(size, n, "size")
    else:
        factors = _tuple(scale_factor, n, "scale_factor")
        size = tuple(int(math.floor(float(input.shape[2 + i]) * f)) for i, f in enumerate(factors))
        if not recompute_scale_factor:
            scales = [float(f) for f in factors]
    return _nn.interpolate(input, size, scales, mode, bool(align_corners))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def bilinear(input1, input2, weight, bias=None):
    return _nn.bilinear(input1, input2, weight, bias)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input")
    return _inplace(_nn.feature_dropout, input, p, training, 3, inplace=inplace, name="dropout1d_")


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    # torch reads a 3-D input as (N, C, L) here (with a warning): one draw per (N, C) either way
    return _inplace(_nn.feature_dropout, input, p, training, max(input.ndim, 3), inplace=inplace,
                    name="dropout2d_")


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return _inplace(_nn.alpha_dropout, input, p, training, inplace=inplace)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    stride, dilation = _tuple(stride, 1, "stride")[0], _tuple(dilation, 1, "dilation")[0]
    if padding == "valid":
        padding = 0
    elif padding == "same":
        if stride != 1:
            raise ValueError("padding='same' is not supported for strided convolutions")
        return _nn.conv_same(input, weight, bias, dilation, groups, 1)
    elif isinstance(padding, str):
        raise RuntimeError(f"conv1d: invalid padding string '{padding}', should be one of 'valid', 'same'")
    return _nn.conv1d(input, weight, bias, stride, _tuple(padding, 1, "padding")[0], dilation, groups)


def _conv2d_same(input, weight, bias, stride, dilation, groups):
    if _tuple(stride, 2, "stride") != (1, 1):
        raise ValueError("padding='same' is not supported for strided convolutions")
    return _nn.conv_same(input, weight, bias, dilation, groups, 2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if ceil_mode:  # issue #16
        return _conv_pool.max_pool1d_ext(input, kernel_size, stride, padding, dilation, True, return_indices)
    one = lambda v, what: None if v is None or v == [] else _tuple(v, 1, what)[0]  # noqa: E731
    return _nn.max_pool1d(input, one(kernel_size, "kernel_size"), one(stride, "stride"), one(padding, "padding"),
                          one(dilation, "dilation"), return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    if ceil_mode or not count_include_pad:  # issue #16
        return _conv_pool.avg_pool1d_ext(input, kernel_size, stride, padding, ceil_mode, count_include_pad)
    one = lambda v, what: None if v is None or v == [] else _tuple(v, 1, what)[0]  # noqa: E731
    return _nn.avg_pool1d(input, one(kernel_size, "kernel_size"), one(stride, "stride"), one(padding, "padding"))
def selu_(input):
    return _inplace(_nn.selu, input, inplace=True, composite=True)


def celu_(input, alpha=1.0):
    return _inplace(_nn.celu, input, alpha, inplace=True, composite=True)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


__all__ += ["selu_", "celu_", "upsample_nearest", "upsample_bilinear", "max_pool1d_with_indices"]
# ---- end nn breadth ----


# ---- attention and Transformer layers (issue #16): multi-head attention, composed in _attention.py ----

from ._attention import _canonical_mask, _none_or_dtype, multi_head_attention_forward  # noqa: E402

__all__ += ["multi_head_attention_forward"]
# ---- conv/pool/embedding breadth (issue #16): transposed and 3-D convolutions, embedding_bag ----
# (composed in _conv_pool.py; pooling's ceil_mode, count_include_pad=False and divisor_override and
# embedding's max_norm route there from the functions above)
from ._conv_pool import (avg_pool3d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d,  # noqa: E402
                         embedding_bag, max_pool3d)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


__all__ += ["conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "embedding_bag", "max_pool3d",
            "avg_pool3d", "max_pool2d_with_indices"]
# ---- end conv/pool/embedding breadth ----
# ---- init/utils/hooks (#16) ----
from ._ctc import ctc_loss  # noqa: E402

__all__ += ["ctc_loss"]
# ---- aliases and nn breadth (issues #15/#16): compositions in _more.py ----
from ._more import *  # noqa: E402,F401,F403
from . import _more  # noqa: E402

__all__ += _more.__all__
# ---- end aliases and nn breadth ----

# the rest of torch.nn (issue #16): linear_cross_entropy and fractional max pooling, in nn/_rest.py
from ._rest import *  # noqa: E402,F401,F403
from . import _rest  # noqa: E402

__all__ += _rest.__all__

# the last torch.nn.functional porting names (#15): the __torch_function__ hooks, boolean_dispatch,
# assert_int_or_pair, conv_tbc, in nn/_fn_rest.py
from ._fn_rest import *  # noqa: E402,F401,F403
from . import _fn_rest  # noqa: E402

__all__ += _fn_rest.__all__

# F.grouped_mm (#15): one matmul per group, in nn/_grouped_mm.py
from ._grouped_mm import grouped_mm  # noqa: E402,F401

__all__ += ["grouped_mm"]
