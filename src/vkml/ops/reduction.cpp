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

namespace vk {

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
  return dispatch(OpKind::Mean, {x}, reduce_attrs(x, dims, keepdim, "mean"));
}
Tensor amax(const Tensor& x, const Dims& dims, bool keepdim) {
  return dispatch(OpKind::Amax, {x}, reduce_attrs(x, dims, keepdim, "amax"));
}
Tensor amin(const Tensor& x, const Dims& dims, bool keepdim) {
  return dispatch(OpKind::Amin, {x}, reduce_attrs(x, dims, keepdim, "amin"));
}
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "max");
  a.keepdim = keepdim;
  Tensor v = dispatch(OpKind::MaxDim, {x}, a);
  return {v, v.saved().empty() ? Tensor() : v.saved()[0]};
}
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "min");
  a.keepdim = keepdim;
  Tensor v = dispatch(OpKind::MinDim, {x}, a);
  return {v, v.saved().empty() ? Tensor() : v.saved()[0]};
}
Tensor prod(const Tensor& x, const Dims& dims, bool keepdim) {
  return dispatch(OpKind::Prod, {x}, reduce_attrs(x, dims, keepdim, "prod"));
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "argmax");
  a.keepdim = keepdim;
  return dispatch(OpKind::ArgMax, {x}, a);
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "argmin");
  a.keepdim = keepdim;
  return dispatch(OpKind::ArgMin, {x}, a);
}
Tensor argmax(const Tensor& x) { return argmax(reshape(x, {-1}), 0); }
Tensor argmin(const Tensor& x) { return argmin(reshape(x, {-1}), 0); }
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
  return dispatch(OpKind::LogSumExp, {x}, reduce_attrs(x, dims, keepdim, "logsumexp"));
}
Tensor var(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  Attrs a = reduce_attrs(x, dims, keepdim, "var");
  a.scalar = correction;
  return dispatch(OpKind::Var, {x}, a);
}
Tensor softmax(const Tensor& x, int64_t dim) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "softmax");
  return dispatch(OpKind::Softmax, {x}, a);
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "log_softmax");
  return dispatch(OpKind::LogSoftmax, {x}, a);
}

}  // namespace vk
