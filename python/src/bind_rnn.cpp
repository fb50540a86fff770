// Bindings: the recurrent cells (ops/rnn.cpp, issue #16 item 2: rnn). Private names (torch's
// torch.lstm_cell has another signature: the whole cell with its weights): vk.nn's LSTM and
// LSTMCell call them after their one GEMM for the gates.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_rnn(nb::module_& m) {
  // (h, c): the two halves of the op's (2, B, H) result, as views.
  m.def(
      "_lstm_cell",
      [](const Tensor& gates, const Tensor& c_prev) {
        return without_gil(heavy(gates), [&] {
          const Tensor hc = vk::lstm_cell(gates, c_prev);
          return std::make_pair(vk::select(hc, 0, 0), vk::select(hc, 0, 1));
        });
      },
      "gates"_a, "c_prev"_a);
  m.def(
      "_lstm_cell_backward",
      [](const Tensor& g, const Tensor& gates, const Tensor& c_prev) {
        return without_gil(heavy(gates), [&] { return vk::lstm_cell_backward(g, gates, c_prev); });
      },
      "grad"_a, "gates"_a, "c_prev"_a);
  // --- the LSTM layer's time loop (issue #16 item 2, lstm): vk.nn's _LstmLayer node. The GIL
  // stays held (the per-step states cross as Python lists).
  m.def(
      "_lstm_layer_forward",
      [](const Tensor& xw, const Tensor& h0, const Tensor& c0, const Tensor& wt, bool reverse) {
        vk::LstmLayerStates s = vk::lstm_layer_forward(xw, h0, c0, wt, reverse);
        return nb::make_tuple(s.gates, s.hs, s.cs);
      },
      "xw"_a, "h0"_a, "c0"_a, "wt"_a, "reverse"_a);
  m.def(
      "_lstm_layer_backward",
      [](const Tensor& g, nb::handle gates, nb::handle hs, nb::handle cs, const Tensor& h0,
         const Tensor& c0, const Tensor& wt, bool reverse) {
        const vk::LstmLayerStates s{tensor_list(gates), tensor_list(hs), tensor_list(cs)};
        VK_CHECK(s.hs.size() == s.gates.size() && s.cs.size() == s.gates.size(), ShapeError,
                 "lstm_layer_backward: expected as many h and c states as gates, got ",
                 s.gates.size(), ", ", s.hs.size(), " and ", s.cs.size());
        const vk::LstmLayerGrads d = vk::lstm_layer_backward(g, s, h0, c0, wt, reverse);
        return nb::make_tuple(d.xw, d.h0, d.c0, d.wt);
      },
      "grad"_a, "gates"_a, "hs"_a, "cs"_a, "h0"_a, "c0"_a, "wt"_a, "reverse"_a);
}

}  // namespace vkpy
