#include "vkml/ops/linalg.h"

#include "vkml/ops/op.h"
#include "vkml/ops/todo.h"

namespace vk {
void add_linalg_ops(OpList& ops) { ops.push_back(todo_op(OpKind::Matmul, "matmul", 2)); }
}  // namespace vk
