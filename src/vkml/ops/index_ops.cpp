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

namespace vk {

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "index_select");
  return dispatch(OpKind::IndexSelect, {x, index}, a);
}
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "gather");
  return dispatch(OpKind::Gather, {x, index}, a);
}
Tensor scatter_add(const Tensor& base, int64_t dim, const Tensor& index, const Tensor& src) {
  Attrs a;
  a.dim = wrap_dim(dim, base.ndim(), "scatter_add");
  return dispatch(OpKind::ScatterAdd, {base, index, src}, a);
}

}  // namespace vk
