// The recurrent cells (issue #16 item 2): one fused op per LSTM time step, and its gradient as a
// fused op of its own, so that a step costs one GEMM and one kernel instead of a chain of small
// element-wise ops.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// One LSTM step from its pre-activations: gates (B, 4H) = x W_ih^T + h W_hh^T + biases, in
// torch's gate order (i, f, g, o), and the previous cell state c_prev (B, H). Returns (2, B, H):
// [h, c] with c = sigmoid(f) c_prev + sigmoid(i) tanh(g), h = sigmoid(o) tanh(c).
Tensor lstm_cell(const Tensor& gates, const Tensor& c_prev);
// The gradient of lstm_cell: g (2, B, H) arriving at [h, c] -> a flat (B * 5H) tensor holding
// dgates (B, 4H) then dc_prev (B, H), each contiguous (lstm_cell_grads splits it).
Tensor lstm_cell_backward(const Tensor& g, const Tensor& gates, const Tensor& c_prev);

}  // namespace vk
