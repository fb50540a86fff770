#include "vkml/ops/nn_ops.h"

#include "vkml/ops/op.h"
#include "vkml/ops/todo.h"

namespace vk {
void add_nn_ops(OpList& ops) {
  ops.push_back(todo_op(OpKind::Im2Col, "im2col", 1));
  ops.push_back(todo_op(OpKind::Col2Im, "col2im", 1));
  ops.push_back(todo_op(OpKind::Conv2d, "conv2d", -1));
  ops.push_back(todo_op(OpKind::MaxPool2d, "max_pool2d", 1));
  ops.push_back(todo_op(OpKind::MaxPool2dBackward, "max_pool2d_backward", 2));
  ops.push_back(todo_op(OpKind::AvgPool2d, "avg_pool2d", 1));
}
}  // namespace vk
