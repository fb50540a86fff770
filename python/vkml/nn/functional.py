"""vk.nn.functional: torch.nn.functional's names, arguments and defaults over vkml._C._nn.

No math here: every function forwards to the C++ layer (vk::nn::functional).
"""

from .. import _C

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
    return _nn.relu(input)


def gelu(input, approximate="none"):
    return _nn.gelu(input, approximate)


def silu(input, inplace=False):
    return _nn.silu(input)


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
    return _nn.dropout(input, p, training)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not implemented")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _nn.embedding(input, weight, padding_idx)


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
    elif isinstance(padding, str):
        raise NotImplementedError("conv2d: padding='same' is not implemented (an int, a pair or 'valid')")
    return _nn.conv2d(input, weight, bias, stride, padding, dilation, groups)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _nn.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    if divisor_override is not None:
        raise NotImplementedError("avg_pool2d: divisor_override is not implemented")
    return _nn.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)
