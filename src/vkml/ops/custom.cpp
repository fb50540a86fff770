// The user-defined op: its forward result and its gradient are closures carried in attrs.custom
// (autograd::from_op, autograd::Function, checkpoint). The rule must return one gradient per
// input; the engine checks count and shapes and names the op.
#include "vkml/ops/op.h"

namespace vk {
namespace {

Meta infer_custom(const std::vector<Tensor>&, const Attrs& a, std::string_view op) {
  VK_CHECK(a.custom && a.custom->result, RuntimeError, op, ": no forward result");
  return {a.custom->result->shape, a.custom->result->dtype};
}

VK_KERNEL(custom_forward) {
  (void)in;
  (void)m;
  return Tensor(a.custom->result).detach();
}

}  // namespace

void add_custom_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Custom,
                 .name = "custom",
                 .arity = -1,
                 .signature = "from_op(result, parents, vjp, name)",
                 .summary = "a user-defined op: a result computed by user code and its vjp",
                 .infer = infer_custom,
                 .any_device = custom_forward,
                 .grad = [](const GradCtx& c) -> Grads { return c.attrs.custom->grad(c); },
                 .grad_doc = "the user's vjp (checked for count and shapes)",
                 .determinism = Determinism::NotBitwise});
}

}  // namespace vk
