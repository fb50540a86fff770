// Reductions. Every rule broadcasts the gradient back over the reduced dims with expand.
#include "vkml/ops/reduction.h"

#include "vkml/backend/cpu/reduce.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape_ops.h"
#include "vkml/ops/todo.h"

namespace vk {
namespace {

Meta infer_reduce(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  std::string name(op);
  std::vector<int64_t> dims = wrap_dims(a.dims, in[0].ndim(), name.c_str());
  return {reduced_shape(in[0].shape(), dims, a.keepdim), in[0].dtype()};
}

// g (of the reduced shape) viewed with the reduced dims kept as 1, then expanded to x's shape.
Tensor unreduce(const Tensor& g, const Tensor& x, const Attrs& a) {
  Shape kept = reduced_shape(x.shape(), a.dims, true);
  return expand(reshape(g, kept), x.shape());
}

Attrs reduce_attrs(const Tensor& x, const Dims& dims, bool keepdim, const char* op) {
  Attrs a;
  a.dims = wrap_dims(dims, x.ndim(), op);
  a.keepdim = keepdim;
  return a;
}

}  // namespace

void add_reduction_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Sum, .name = "sum", .arity = 1,
                 .signature = "sum(x, dims, keepdim)", .summary = "sum over dims",
                 .infer = infer_reduce, .cpu = cpu::sum,
                 .grad = [](const GradCtx& c) -> Grads { return {unreduce(c.grad, c.in[0], c.attrs)}; },
                 .grad_doc = "dx = g expanded back over the reduced dims"});
  ops.push_back(todo_op(OpKind::Mean, "mean", 1));
  ops.push_back(todo_op(OpKind::Amax, "amax", 1));
  ops.push_back(todo_op(OpKind::Amin, "amin", 1));
  ops.push_back(todo_op(OpKind::MaxDim, "max_dim", 1));
  ops.push_back(todo_op(OpKind::MinDim, "min_dim", 1));
  ops.push_back(todo_op(OpKind::Prod, "prod", 1));
  ops.push_back(todo_op(OpKind::ArgMax, "argmax", 1));
  ops.push_back(todo_op(OpKind::ArgMin, "argmin", 1));
  ops.push_back(todo_op(OpKind::LogSumExp, "logsumexp", 1));
  ops.push_back(todo_op(OpKind::Var, "var", 1));
  ops.push_back(todo_op(OpKind::Softmax, "softmax", 1));
  ops.push_back(todo_op(OpKind::LogSoftmax, "log_softmax", 1));
}

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) {
  Tensor in = x.dtype() == DType::Bool || x.dtype() == DType::Int32 ? cast(x, DType::Int64) : x;
  return dispatch(OpKind::Sum, {in}, reduce_attrs(x, dims, keepdim, "sum"));
}

}  // namespace vk
