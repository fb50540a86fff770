// Op cases for the softmax family: softmax (scaled, causal), log_softmax and their backward ops,
// along first, middle and last dims.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases softmax_cases({
    {OpKind::Softmax, "softmax/dim0",
     [] {
       return V{leaf({3, 4}, -2.0, 2.0)};
     },
     [](const V& x) { return softmax(x[0], 0); }},
    {OpKind::Softmax, "softmax/last",
     [] {
       return V{leaf({3, 4}, -2.0, 2.0)};
     },
     [](const V& x) { return softmax(x[0], -1); }},
    {OpKind::Softmax, "softmax/middle_transposed",
     [] {
       return V{leaf({2, 3, 4}, -2.0, 2.0)};
     },
     [](const V& x) { return softmax(transpose(x[0], 0, 2), 1); }},
    {OpKind::Softmax, "softmax/scaled",
     [] {
       return V{leaf({3, 4}, -2.0, 2.0)};
     },
     [](const V& x) { return softmax(x[0], 1, 0.7); }},
    {OpKind::Softmax, "softmax/causal_scaled",
     [] {
       return V{leaf({2, 3, 4}, -2.0, 2.0)};
     },
     [](const V& x) { return softmax(x[0], -1, 0.5, true); }},
    {OpKind::Softmax, "softmax/causal_strided",
     [] {
       return V{leaf({4, 3}, -2.0, 2.0)};
     },
     [](const V& x) { return softmax(transpose(x[0], 0, 1), 1, 1.0, true); }},
    {OpKind::LogSoftmax, "log_softmax/dim0",
     [] {
       return V{leaf({3, 4}, -2.0, 2.0)};
     },
     [](const V& x) { return log_softmax(x[0], 0); }},
    {OpKind::LogSoftmax, "log_softmax/last",
     [] {
       return V{leaf({3, 4}, -2.0, 2.0)};
     },
     [](const V& x) { return log_softmax(x[0], -1); }},
    {OpKind::LogSoftmax, "log_softmax/middle",
     [] {
       return V{leaf({2, 3, 4}, -2.0, 2.0)};
     },
     [](const V& x) { return log_softmax(x[0], 1); }},

    // The backward ops take any (g, out), not only a softmax output.
    {OpKind::SoftmaxBackward, "softmax_backward/last",
     [] {
       return V{leaf({3, 4}), leaf({3, 4}, 0.1, 0.9)};
     },
     [](const V& x) { return softmax_backward(x[0], x[1], -1); }},
    {OpKind::SoftmaxBackward, "softmax_backward/dim0",
     [] {
       return V{leaf({3, 4}), leaf({3, 4}, 0.1, 0.9)};
     },
     [](const V& x) { return softmax_backward(x[0], x[1], 0); }},
    {OpKind::SoftmaxBackward, "softmax_backward/middle_transposed",
     [] {
       return V{leaf({2, 3, 2}), leaf({2, 3, 2}, 0.1, 0.9)};
     },
     [](const V& x) { return softmax_backward(x[0], transpose(x[1], 0, 2), 1); }},
    {OpKind::SoftmaxBackward, "softmax_backward/of_softmax",
     [] {
       return V{leaf({2, 5}), leaf({2, 5}, -2.0, 2.0)};
     },
     [](const V& x) { return softmax_backward(x[0], softmax(x[1], 1), 1); }},
    {OpKind::LogSoftmaxBackward, "log_softmax_backward/last",
     [] {
       return V{leaf({3, 4}), leaf({3, 4}, -2.0, 0.0)};
     },
     [](const V& x) { return log_softmax_backward(x[0], x[1], -1); }},
    {OpKind::LogSoftmaxBackward, "log_softmax_backward/dim0",
     [] {
       return V{leaf({3, 4}), leaf({3, 4}, -2.0, 0.0)};
     },
     [](const V& x) { return log_softmax_backward(x[0], x[1], 0); }},
    {OpKind::LogSoftmaxBackward, "log_softmax_backward/middle_transposed",
     [] {
       return V{leaf({2, 3, 2}), leaf({2, 3, 2}, -2.0, 0.0)};
     },
     [](const V& x) {
       return log_softmax_backward(transpose(x[0], 0, 2), transpose(x[1], 0, 2), 1);
     }},
    {OpKind::LogSoftmaxBackward, "log_softmax_backward/of_log_softmax",
     [] {
       return V{leaf({2, 5}), leaf({2, 5}, -2.0, 2.0)};
     },
     [](const V& x) { return log_softmax_backward(x[0], log_softmax(x[1], 1), 1); }},
});

}  // namespace
}  // namespace vk::test
