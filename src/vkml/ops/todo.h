// Placeholder for table entries whose kernel is not written yet: the op exists (so the table is
// complete and its docs say so) but running it raises NotImplementedError naming it.
#pragma once
#include "vkml/backend/cpu/kernel.h"
#include "vkml/ops/op.h"

namespace vk {

inline VK_KERNEL(cpu_todo) {
  (void)in;
  (void)a;
  (void)m;
  throw NotImplementedError("this op has no CPU kernel yet");
}

inline OpDef todo_op(OpKind kind, std::string_view name, int arity) {
  return {.kind = kind, .name = name, .arity = arity, .signature = "", .summary = "not written yet",
          .infer = infer_same_as_first, .cpu = cpu_todo, .grad_doc = "not written yet"};
}

}  // namespace vk
