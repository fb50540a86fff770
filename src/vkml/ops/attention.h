// Scaled dot-product attention as one op (#18): softmax(scale * q k^T, causal) v without the
// (..., Tq, Tk) scores or weights in memory, and its gradient as one op that recomputes them.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// q (..., Tq, E), k (..., Tk, E), v (..., Tk, Ev) of one floating dtype and the same batch dims
// (no broadcasting) -> (..., Tq, Ev). causal: query i sees keys 0..i only (torch's is_causal,
// top-left aligned).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal);
// The gradient of attention, g (..., Tq, Ev) arriving at its output -> one flat tensor holding
// dq, dk, dv (each contiguous, in that order; attention_grads splits it).
Tensor attention_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                          double scale, bool causal);

struct AttentionGrads {
  Tensor q, k, v;
};
// attention_backward's flat result (or a gradient arriving at it) as views shaped like q, k, v.
AttentionGrads attention_grads(const Tensor& flat, const Tensor& q, const Tensor& k,
                               const Tensor& v);

}  // namespace vk
