// Bindings: scaled dot-product attention as one op (ops/attention.cpp, #18). Private names:
// vk.nn.functional.scaled_dot_product_attention calls the op where it applies (no mask, no
// dropout, one batch shape); these expose the op and its gradient for tests.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_attention(nb::module_& m) {
  m.def(
      "_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal) {
        return without_gil(heavy(q), [&] { return vk::attention(q, k, v, scale, causal); });
      },
      "query"_a, "key"_a, "value"_a, "scale"_a, "causal"_a = false);
  m.def(
      "_attention_backward",
      [](const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v, double scale,
         bool causal) {
        return without_gil(heavy(q),
                           [&] { return vk::attention_backward(g, q, k, v, scale, causal); });
      },
      "grad"_a, "query"_a, "key"_a, "value"_a, "scale"_a, "causal"_a = false);
}

}  // namespace vkpy
