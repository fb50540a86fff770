// Op cases for the recurrent cells (issue #16 item 2: rnn): lstm_cell, on contiguous, transposed
// and sliced inputs and through two chained steps, and lstm_cell_backward on any (g, gates,
// c_prev), which also checks its own rule to second order.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases rnn_cases({
    {OpKind::LstmCell, "lstm_cell/plain",
     [] {
       return V{leaf({3, 8}, -2.0, 2.0), leaf({3, 2})};
     },
     [](const V& x) { return lstm_cell(x[0], x[1]); }},
    {OpKind::LstmCell, "lstm_cell/transposed_gates",
     [] {
       return V{leaf({12, 2}, -2.0, 2.0), leaf({2, 3})};
     },
     [](const V& x) { return lstm_cell(transpose(x[0], 0, 1), x[1]); }},
    {OpKind::LstmCell, "lstm_cell/sliced_c_prev",
     [] {
       return V{leaf({2, 4}, -2.0, 2.0), leaf({2, 3})};
     },
     [](const V& x) { return lstm_cell(x[0], narrow(x[1], 1, 1, 1) * 2.0); }},
    // Two steps: the second reads the first's h (through a GEMM) and c, as an LSTM layer does.
    {OpKind::LstmCell, "lstm_cell/two_steps",
     [] {
       return V{leaf({2, 8}, -2.0, 2.0), leaf({2, 2}), leaf({2, 8})};
     },
     [](const V& x) {
       const Tensor s1 = lstm_cell(x[0], x[1]);
       const Tensor gates2 = x[0] + matmul(select(s1, 0, 0), narrow(x[2], 0, 0, 2));
       return lstm_cell(gates2, select(s1, 0, 1));
     }},
    {OpKind::LstmCellBackward, "lstm_cell_backward/plain",
     [] {
       return V{leaf({2, 3, 2}), leaf({3, 8}, -2.0, 2.0), leaf({3, 2})};
     },
     [](const V& x) { return lstm_cell_backward(x[0], x[1], x[2]); }},
    {OpKind::LstmCellBackward, "lstm_cell_backward/transposed",
     [] {
       return V{leaf({2, 1, 3}), leaf({4, 3}, -2.0, 2.0), leaf({1, 1})};
     },
     [](const V& x) {
       return lstm_cell_backward(transpose(x[0], 1, 2), transpose(x[1], 0, 1),
                                 expand(x[2], {3, 1}) * 0.5);
     }},
});

}  // namespace
}  // namespace vk::test
