"""vk.nn.utils.fusion (torch.nn.utils.fusion): a convolution or linear layer followed by a
BatchNorm in eval mode folded into one layer -- w' = w * gamma / sqrt(var + eps) per output
channel, b' = (b - mean) * gamma / sqrt(var + eps) + beta -- as deployment scripts do."""

import copy

from ... import ShapeError, ones_like, rsqrt, zeros_like
from ..modules.module import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _eval_only(*modules):
    if any(m.training for m in modules):
        raise RuntimeError("Fusion only for eval!")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of conv with bn folded in (both in eval mode); transpose for ConvTranspose layers,
    whose output channels are the weight's second dim."""
    _eval_only(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The folded (weight, bias) as Parameters; a missing conv bias or affine parameter counts as
    0 (bias, beta) or 1 (gamma)."""
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    scale = bn_w * rsqrt(bn_rv + bn_eps)
    shape = ((1, -1) if transpose else (-1, 1)) + (1,) * (conv_w.dim() - 2)
    weight = (conv_w * scale.reshape(shape)).to(conv_w.dtype)
    bias = ((conv_b - bn_rm) * scale + bn_b).to(conv_w.dtype)
    return Parameter(weight, conv_w.requires_grad), Parameter(bias, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of linear with bn (a BatchNorm1d over its outputs, or of one feature) folded in."""
    _eval_only(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise ShapeError(f"fuse_linear_bn_eval: linear.out_features ({linear.out_features}) must equal "
                         f"bn.num_features ({bn.num_features}) or bn.num_features must be 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The folded (weight, bias) as Parameters (a missing linear bias counts as 0)."""
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * rsqrt(bn_rv + bn_eps)
    weight = linear_w * scale.unsqueeze(-1)
    bias = (linear_b - bn_rm) * scale + bn_b
    return Parameter(weight, linear_w.requires_grad), Parameter(bias, linear_b.requires_grad)
