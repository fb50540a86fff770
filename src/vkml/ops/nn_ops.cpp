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

namespace vk {

Tensor im2col(const Tensor& x, const Window2d& w) {
  Attrs a;
  a.win = w;
  return dispatch(OpKind::Im2Col, {x}, a);
}
Tensor col2im(const Tensor& cols, int64_t height, int64_t width, const Window2d& w) {
  Attrs a;
  a.win = w;
  a.shape = {height, width};
  return dispatch(OpKind::Col2Im, {cols}, a);
}
PoolResult max_pool2d(const Tensor& x, const Window2d& w) {
  Attrs a;
  a.win = w;
  Tensor v = dispatch(OpKind::MaxPool2d, {x}, a);
  return {v, v.saved().empty() ? Tensor() : v.saved()[0]};
}
Tensor max_pool2d_backward(const Tensor& g, const Tensor& indices, const Shape& input_shape) {
  Attrs a;
  a.shape = input_shape;
  return dispatch(OpKind::MaxPool2dBackward, {g, indices}, a);
}
Tensor avg_pool2d(const Tensor& x, const Window2d& w) {
  Attrs a;
  a.win = w;
  return dispatch(OpKind::AvgPool2d, {x}, a);
}

}  // namespace vk
