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
}

}  // namespace vkpy
