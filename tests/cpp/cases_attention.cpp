// Op cases for scaled dot-product attention (#18): attention with and without the causal mask, at
// equal and unequal query and key lengths, on strided (permuted) inputs as a transformer's qkv
// split makes them, past one block of queries, and attention_backward, whose own rule the sweep
// checks to second order.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases attention_cases({
    {OpKind::Attention, "attention/plain",
     [] {
       return V{leaf({2, 3, 4}), leaf({2, 5, 4}), leaf({2, 5, 3})};
     },
     [](const V& x) { return attention(x[0], x[1], x[2], 0.5, false); }},
    {OpKind::Attention, "attention/causal",
     [] {
       return V{leaf({2, 4, 3}, -2.0, 2.0), leaf({2, 4, 3}), leaf({2, 4, 2})};
     },
     [](const V& x) { return attention(x[0], x[1], x[2], 0.7, true); }},
    // More queries than keys: the last queries see every key; fewer: the last keys go unseen.
    {OpKind::Attention, "attention/causal_more_queries",
     [] {
       return V{leaf({5, 2}), leaf({3, 2}), leaf({3, 2})};
     },
     [](const V& x) { return attention(x[0], x[1], x[2], 1.0, true); }},
    {OpKind::Attention, "attention/causal_fewer_queries",
     [] {
       return V{leaf({1, 3, 2}), leaf({1, 5, 2}), leaf({1, 5, 3})};
     },
     [](const V& x) { return attention(x[0], x[1], x[2], 1.3, true); }},
    // (B, T, 3, H, E) -> q, k, v of (B, H, T, E), none of them contiguous.
    {OpKind::Attention, "attention/permuted_heads",
     [] {
       return V{leaf({2, 3, 3, 2, 2})};
     },
     [](const V& x) {
       const Tensor p = permute(x[0], {2, 0, 3, 1, 4});
       return attention(select(p, 0, 0), select(p, 0, 1), select(p, 0, 2), 0.6, true);
     }},
    // 19 positions: four tiles of queries and of keys (the kernel's tiles are 6 rows).
    {OpKind::Attention, "attention/causal_tiles",
     [] {
       return V{leaf({1, 19, 2}), leaf({1, 19, 2}), leaf({1, 19, 1})};
     },
     [](const V& x) { return attention(x[0], x[1], x[2], 0.9, true); }},
    {OpKind::AttentionBackward, "attention_backward/plain",
     [] {
       return V{leaf({2, 3, 2}), leaf({2, 3, 2}), leaf({2, 4, 2}), leaf({2, 4, 2})};
     },
     [](const V& x) { return attention_backward(x[0], x[1], x[2], x[3], 0.8, false); }},
    {OpKind::AttentionBackward, "attention_backward/causal",
     [] {
       return V{leaf({4, 2}), leaf({4, 3}), leaf({3, 3}), leaf({3, 2})};
     },
     [](const V& x) { return attention_backward(x[0], x[1], x[2], x[3], 1.1, true); }},
});

}  // namespace
}  // namespace vk::test
