// The softmax family: softmax and log_softmax along one dim, and their gradients as fused ops.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// softmax of scale * x along dim; causal: along the last dim of (..., queries, keys), query i
// sees keys 0..i only (attention's is_causal), the others come out 0.
Tensor softmax(const Tensor& x, int64_t dim, double scale = 1.0, bool causal = false);
Tensor log_softmax(const Tensor& x, int64_t dim);
// The gradients of softmax/log_softmax from their output `out` and the gradient g arriving at
// it (torch._softmax_backward_data / _log_softmax_backward_data), each one fused op.
Tensor softmax_backward(const Tensor& g, const Tensor& out, int64_t dim);
Tensor log_softmax_backward(const Tensor& g, const Tensor& out, int64_t dim);

}  // namespace vk
