"""F.multi_head_attention_forward and its mask helpers (issue #16: attention and Transformer layers).

torch.nn.functional's algorithm step by step, composed of core ops (linear, bmm/baddbmm, softmax,
scaled_dot_product_attention): the projections, the masks merged into one additive float mask, the
heads folded into the batch. Errors are torch's: AssertionError for its shape asserts, RuntimeError
for a wrong attn_mask shape."""

import math
import warnings

from .. import _C
from . import functional as F

__all__ = ["multi_head_attention_forward"]

_NEG_INF = float("-inf")


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, _C.Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True: do not attend) becomes the additive float mask (-inf there, 0 elsewhere)."""
    if mask is None:
        return None
    is_float = mask.is_floating_point()
    if mask.dtype != _C.dtype.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      "Use same type for both instead.", stacklevel=3)
    if not is_float:
        mask = _C.zeros_like(mask, dtype=target_type).masked_fill(mask, _NEG_INF)
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched, after torch's checks of every argument's rank."""
    if query.dim() not in (2, 3):
        raise AssertionError(
            f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query tensor")
    batched = query.dim() == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {query.dim()}-D"
                             f" but found {key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != query.dim() - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{query.dim() - 1}-D but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D"
                                 f" but found {attn_mask.dim()}-D tensor instead")
        if not batched and attn_mask.dim() == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}")
    return batched


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate):
    """q, k, v: the packed (3E, E) projection, in one GEMM when query, key and value are one
    tensor (self-attention), or the separate q/k/v weights of kdim/vdim attention."""
    bq = bk = bv = None
    if in_proj_bias is not None:
        bq, bk, bv = in_proj_bias.chunk(3)
    if separate is not None:
        wq, wk, wv = separate
        for w, name in ((wq, "q_proj_weight"), (wk, "k_proj_weight"), (wv, "v_proj_weight")):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name} is None")
    else:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:
            return F.linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
        wq, wk, wv = in_proj_weight.chunk(3)
    return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)


def _attn_mask_3d(attn_mask, bsz, num_heads, tgt_len, src_len):
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, "
                               f"but should be {(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, "
                               f"but should be {(bsz * num_heads, tgt_len, src_len)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _heads(x, length, bsz, num_heads, head_dim):
    """(length, bsz, E) -> (bsz * num_heads, length, head_dim): the heads folded into the batch."""
    return x.reshape(length, bsz * num_heads, head_dim).transpose(0, 1)


def _static(static, name, bsz, num_heads, head_dim):
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got {static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static


def _with_weights(q, k, v, attn_mask, dropout_p, bsz, num_heads, tgt_len, average_attn_weights):
    """The attention output and its weights (bsz, num_heads, L, S), as torch's need_weights path."""
    q_scaled = q * math.sqrt(1.0 / float(q.shape[-1]))
    scores = _C.bmm(q_scaled, k.transpose(-2, -1))
    if attn_mask is not None:  # torch's baddbmm(attn_mask, ...): the same sum, broadcast
        scores = scores + attn_mask
    weights = F.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    out = _C.bmm(weights, v)
    weights = weights.reshape(bsz, num_heads, tgt_len, k.shape[1])
    return out, weights.mean(dim=1) if average_attn_weights else weights


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch.nn.functional.multi_head_attention_forward: query (L, N, E), key/value (S, N, E) or
    unbatched (L, E)/(S, E); returns (attn_output, attn_weights or None)."""
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:  # a batch of one for the computation, dropped again at the end
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask),
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint alone: scaled_dot_product_attention's causal softmax
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # the merged mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")

    separate = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else None
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate)
    if attn_mask is not None:
        attn_mask = _attn_mask_3d(attn_mask, bsz, num_heads, tgt_len, src_len)

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _C.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _C.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k is set but bias_v is None" if bias_k is not None
                             else "bias_v is set but bias_k is None")

    q = _heads(q, tgt_len, bsz, num_heads, head_dim)
    k = _heads(k, k.shape[0], bsz, num_heads, head_dim) if static_k is None else \
        _static(static_k, "static_k", bsz, num_heads, head_dim)
    v = _heads(v, v.shape[0], bsz, num_heads, head_dim) if static_v is None else \
        _static(static_v, "static_v", bsz, num_heads, head_dim)

    if add_zero_attn:
        zeros = _C.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = _C.cat([k, zeros], dim=1), _C.cat([v, zeros], dim=1)
        attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))

    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"Expected key_padded_mask.shape to be {(bsz, src_len)}, "
                                 f"but got {tuple(key_padding_mask.shape)}")
        key_padding_mask = (key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
                            .reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0

    if need_weights:
        out, weights = _with_weights(q, k, v, attn_mask, dropout_p, bsz, num_heads, tgt_len, average_attn_weights)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    else:
        weights = None
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
                attn_mask.reshape(bsz, num_heads, -1, src_len)
        out = F.scaled_dot_product_attention(q.reshape(bsz, num_heads, tgt_len, head_dim),
                                             k.reshape(bsz, num_heads, src_len, head_dim),
                                             v.reshape(bsz, num_heads, src_len, head_dim),
                                             attn_mask, dropout_p, is_causal)
        out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights
