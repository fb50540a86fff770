#include "vkml/ops/index_ops.h"

#include "vkml/ops/op.h"
#include "vkml/ops/todo.h"

namespace vk {
void add_index_ops(OpList& ops) {
  ops.push_back(todo_op(OpKind::IndexSelect, "index_select", 2));
  ops.push_back(todo_op(OpKind::Gather, "gather", 2));
  ops.push_back(todo_op(OpKind::ScatterAdd, "scatter_add", 3));
}
}  // namespace vk
