// The recurrent cells (issue #16 item 2): one fused op per LSTM time step, and its gradient as a
// fused op of its own, so that a step costs one GEMM and one kernel instead of a chain of small
// element-wise ops.
#pragma once
#include <vector>

#include "vkml/core/tensor.h"

namespace vk {

// One LSTM step from its pre-activations: gates (B, 4H) = x W_ih^T + h W_hh^T + biases, in
// torch's gate order (i, f, g, o), and the previous cell state c_prev (B, H). Returns (2, B, H):
// [h, c] with c = sigmoid(f) c_prev + sigmoid(i) tanh(g), h = sigmoid(o) tanh(c).
Tensor lstm_cell(const Tensor& gates, const Tensor& c_prev);
// The gradient of lstm_cell: g (2, B, H) arriving at [h, c] -> a flat (B * 5H) tensor holding
// dgates (B, 4H) then dc_prev (B, H), each contiguous (lstm_cell_grads splits it).
Tensor lstm_cell_backward(const Tensor& g, const Tensor& gates, const Tensor& c_prev);

// A whole LSTM layer's time loop as composites of the ops above (no op of its own, so it runs on
// every device; vk.nn's LSTM makes it one graph node). With grad mode on they record per-step
// nodes, which is how that node's gradient is differentiated again.
struct LstmLayerStates {
  std::vector<Tensor> gates, hs, cs;  // per step, in time order: (B, 4H), (B, H), (B, H)
};
// xw (T, B, 4H): the input projection plus biases of every step; h0, c0 (B, H); wt = W_hh^T
// (H, 4H). Steps run from the last to the first when reverse.
LstmLayerStates lstm_layer_forward(const Tensor& xw, const Tensor& h0, const Tensor& c0,
                                   const Tensor& wt, bool reverse);
struct LstmLayerGrads {
  Tensor xw, h0, c0, wt;
};
// The gradient of the layer for g (T + 1, B, H) arriving at [h of every step, final c], from the
// states lstm_layer_forward returned: one reverse-time loop (per step the fused cell gradient and
// one GEMM for dh); wt's gradient is ONE GEMM over all steps, not one per step.
LstmLayerGrads lstm_layer_backward(const Tensor& g, const LstmLayerStates& s, const Tensor& h0,
                                   const Tensor& c0, const Tensor& wt, bool reverse);

}  // namespace vk
