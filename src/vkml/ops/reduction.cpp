// Reductions. Every rule broadcasts the gradient back over the reduced dims with expand.
#include "vkml/ops/reduction.h"

#include <algorithm>

#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/index.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

Meta infer_reduce(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  std::string name(op);
  std::vector<int64_t> dims = wrap_dims(a.dims, in[0].ndim(), name.c_str());
  return {reduced_shape(in[0].shape(), dims, a.keepdim), in[0].dtype()};
}

Meta infer_reduce_numeric(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(in[0].dtype() != DType::Bool, DTypeError, op, ": not defined for bool tensors");
  return infer_reduce(in, a, op);
}

// mean and var, as in PyTorch, do not pick a floating dtype for integer inputs: cast first.
Meta infer_reduce_float(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(is_floating(in[0].dtype()), DTypeError, op, ": expected a floating dtype, got ",
           dtype_name(in[0].dtype()), " (cast the input to float32 or float64 first)");
  return infer_reduce(in, a, op);
}

// The reduction of an empty dim has no identity for max/min/argmax: an error, as in PyTorch.
void check_nonempty(const Tensor& x, const std::vector<int64_t>& dims, std::string_view op) {
  for (int64_t d : dims)
    VK_CHECK(x.shape()[d] != 0, ShapeError, op, ": cannot reduce dim ", d, " of size 0 (shape ",
             shape_str(x.shape()), "): the result has no identity");
}

Meta infer_reduce_nonempty(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  Meta m = infer_reduce(in, a, op);
  check_nonempty(in[0], a.dims, op);
  return m;
}

// One dim (a.dim): the dims list a kernel reduces over (none for a 0-d tensor).
std::vector<int64_t> dim_list(const Tensor& x, int64_t dim) {
  return x.ndim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{dim};
}

Meta infer_dim(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  std::string name(op);
  if (in[0].ndim() > 0) wrap_dim(a.dim, in[0].ndim(), name.c_str());
  std::vector<int64_t> dims = dim_list(in[0], a.dim);
  check_nonempty(in[0], dims, op);
  return {reduced_shape(in[0].shape(), dims, a.keepdim), in[0].dtype()};
}

Meta infer_arg(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  return {infer_dim(in, a, op).shape, DType::Int64};
}

// g (of the reduced shape) viewed with the reduced dims kept as 1, then expanded to x's shape.
Tensor unreduce(const Tensor& g, const Tensor& x, const Attrs& a) {
  Shape kept = reduced_shape(x.shape(), a.dims, true);
  return expand(reshape(g, kept), x.shape());
}

int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[d];
  return n;
}

Attrs reduce_attrs(const Tensor& x, const Dims& dims, bool keepdim, const char* op) {
  Attrs a;
  a.dims = wrap_dims(dims, x.ndim(), op);
  a.keepdim = keepdim;
  return a;
}

// amax/amin: the gradient is split evenly among the elements equal to the result.
Grads extreme_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  Tensor mask = cast(eq(x, unreduce(c.out, x, c.attrs)), x.dtype());
  Tensor count = sum(mask, c.attrs.dims, true);
  return {unreduce(c.grad, x, c.attrs) * mask / expand(count, x.shape())};
}

// max(dim)/min(dim): the whole gradient goes to the saved index.
Grads extreme_dim_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  if (x.ndim() == 0) return {c.grad};
  Shape kept = reduced_shape(x.shape(), {c.attrs.dim}, true);
  Tensor idx = reshape(c.output(1), kept);
  return {scatter_add(zeros_like(x), c.attrs.dim, idx, reshape(c.grad, kept))};
}

// d prod / dx_i = the product of the other elements. Without zeros that is out / x_i. With zeros
// (z = 1 where x == 0, a constant) it is written so that its own derivative is right too:
//   P = prod of the nonzero elements, Q = prod of the zero elements, S = sum of the zero elements
//   x_i != 0:  P * Q / x_i                      (0 as soon as there is a zero; Q carries x_zero)
//   x_i == 0:  P * ([#zeros == 1] + [#zeros == 2] * (S - x_i))   (S - x_i: the other zero)
Grads prod_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  const Tensor g = unreduce(c.grad, x, c.attrs);
  Tensor z;
  {
    NoGradGuard no_grad;
    z = cast(eq(x.detach(), zeros_like(x)), x.dtype());
  }
  // Without zeros, out / x_i; the test is a host read, taken only where it costs no wait.
  if (values_on_host(x) && sum(z).item() == 0) return {g * unreduce(c.out, x, c.attrs) / x};
  const Dims& dims = c.attrs.dims;
  Tensor nz = 1.0 - z;
  Tensor p = expand(prod(x * nz + z, dims, true), x.shape());
  Tensor q = expand(prod(x * z + nz, dims, true), x.shape());
  Tensor s = expand(sum(x * z, dims, true), x.shape());
  Tensor count = expand(sum(z, dims, true), x.shape());
  Tensor one = cast(eq(count, scalar_like(1.0, count)), x.dtype());
  Tensor two = cast(eq(count, scalar_like(2.0, count)), x.dtype());
  Tensor others = nz * p * q / (x * nz + z) + z * p * (one + two * (s - x));
  return {g * others};
}

constexpr std::string_view kIntegerResult = "integer result: not differentiable";

}  // namespace

void add_reduction_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::Sum,
       .name = "sum",
       .arity = 1,
       .signature = "sum(x, dims, keepdim)",
       .summary = "sum over dims",
       .infer = infer_reduce_numeric,
       .grad = [](const GradCtx& c) -> Grads { return {unreduce(c.grad, c.in[0], c.attrs)}; },
       .grad_doc = "dx = g expanded back over the reduced dims"});
  ops.push_back({.kind = OpKind::Mean,
                 .name = "mean",
                 .arity = 1,
                 .signature = "mean(x, dims, keepdim)",
                 .summary = "mean over dims (floating dtypes only, as in PyTorch)",
                 .infer = infer_reduce_float,
                 .grad = [](const GradCtx& c) -> Grads {
                   // divided before it is expanded: one division per output, not per input
                   double n = static_cast<double>(reduced_count(c.in[0], c.attrs.dims));
                   return {unreduce(c.grad / n, c.in[0], c.attrs)};
                 },
                 .grad_doc = "dx = g / N expanded back over the reduced dims"});
  ops.push_back({.kind = OpKind::Amax,
                 .name = "amax",
                 .arity = 1,
                 .signature = "amax(x, dims, keepdim)",
                 .summary = "maximum over dims (NaN propagates)",
                 .infer = infer_reduce_nonempty,
                 .grad = extreme_grad,
                 .grad_doc = "dx = g split evenly among the elements equal to the maximum: "
                             "g * (x == out) / count(x == out)"});
  ops.push_back({.kind = OpKind::Amin,
                 .name = "amin",
                 .arity = 1,
                 .signature = "amin(x, dims, keepdim)",
                 .summary = "minimum over dims (NaN propagates)",
                 .infer = infer_reduce_nonempty,
                 .grad = extreme_grad,
                 .grad_doc = "dx = g split evenly among the elements equal to the minimum: "
                             "g * (x == out) / count(x == out)"});
  ops.push_back({.kind = OpKind::MaxDim,
                 .name = "max_dim",
                 .arity = 1,
                 .outputs = 2,
                 .signature = "max(x, dim, keepdim) -> (values, indices)",
                 .summary = "maximum along one dim and the int64 index of its first occurrence "
                            "(output 1)",
                 .infer = infer_dim,
                 .grad = extreme_dim_grad,
                 .grad_doc = "dx = scatter_add(zeros_like(x), dim, indices, g): all to the index"});
  ops.push_back({.kind = OpKind::MinDim,
                 .name = "min_dim",
                 .arity = 1,
                 .outputs = 2,
                 .signature = "min(x, dim, keepdim) -> (values, indices)",
                 .summary = "minimum along one dim and the int64 index of its first occurrence "
                            "(output 1)",
                 .infer = infer_dim,
                 .grad = extreme_dim_grad,
                 .grad_doc = "dx = scatter_add(zeros_like(x), dim, indices, g): all to the index"});
  ops.push_back({.kind = OpKind::Prod,
                 .name = "prod",
                 .arity = 1,
                 .signature = "prod(x, dims, keepdim)",
                 .summary = "product over dims (bool and int32 give int64)",
                 .infer = infer_reduce_numeric,
                 .grad = prod_grad,
                 .grad_doc = "dx_i = g * product of the other elements: g * out / x without zeros; "
                             "with zeros, built from prods of the nonzero and zero parts so that "
                             "second order is right too"});
  ops.push_back({.kind = OpKind::ArgMax,
                 .name = "argmax",
                 .arity = 1,
                 .signature = "argmax(x, dim, keepdim)",
                 .summary = "int64 index of the first maximum along dim (the first NaN if any)",
                 .infer = infer_arg,
                 .grad_doc = kIntegerResult});
  ops.push_back({.kind = OpKind::ArgMin,
                 .name = "argmin",
                 .arity = 1,
                 .signature = "argmin(x, dim, keepdim)",
                 .summary = "int64 index of the first minimum along dim (the first NaN if any)",
                 .infer = infer_arg,
                 .grad_doc = kIntegerResult});
  ops.push_back({.kind = OpKind::LogSumExp,
                 .name = "logsumexp",
                 .arity = 1,
                 .signature = "logsumexp(x, dims, keepdim)",
                 .summary = "log(sum(exp(x))) over dims, computed stably (max subtracted); "
                            "integers give float32",
                 .prepare = prepare_float_unary,
                 .infer = infer_reduce,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Tensor& x = c.in[0];
                   return {unreduce(c.grad, x, c.attrs) * exp(x - unreduce(c.out, x, c.attrs))};
                 },
                 .grad_doc = "dx = g * exp(x - out)"});
  ops.push_back({.kind = OpKind::Var,
                 .name = "var",
                 .arity = 1,
                 .signature = "var(x, dims, correction, keepdim)",
                 .summary = "variance over dims: sum((x - mean)^2) / max(0, N - correction) "
                            "(floating dtypes only)",
                 .infer = infer_reduce_float,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Tensor& x = c.in[0];
                   double n = static_cast<double>(reduced_count(x, c.attrs.dims));
                   double denom = std::max(0.0, n - c.attrs.var.correction);
                   Tensor centered = x - expand(mean(x, c.attrs.dims, true), x.shape());
                   return {unreduce(c.grad, x, c.attrs) * centered * (2.0 / denom)};
                 },
                 .grad_doc = "dx = g * 2 (x - mean) / (N - correction)"});
  ops.push_back({.kind = OpKind::SumSquares,
                 .name = "sum_squares",
                 .arity = 1,
                 .signature = "sum_squares(x, dims, keepdim)",
                 .summary = "sum of x^2 over dims, the squares and their sum in double "
                            "(floating dtypes only)",
                 .infer = infer_reduce_float,
                 .grad = [](const GradCtx& c) -> Grads {
                   // doubled before it is expanded: one multiplication per output
                   return {unreduce(c.grad * 2.0, c.in[0], c.attrs) * c.in[0]};
                 },
                 .grad_doc = "dx = 2 g x"});
}

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) {
  Tensor in = !is_floating(x.dtype()) && x.dtype() != DType::Int64 ? cast(x, DType::Int64) : x;
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
  const Outputs o = dispatch_outputs(OpKind::MaxDim, {x}, a);
  return {o[0], o[1]};
}
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "min");
  a.keepdim = keepdim;
  const Outputs o = dispatch_outputs(OpKind::MinDim, {x}, a);
  return {o[0], o[1]};
}
Tensor prod(const Tensor& x, const Dims& dims, bool keepdim) {
  Tensor in = !is_floating(x.dtype()) && x.dtype() != DType::Int64 ? cast(x, DType::Int64) : x;
  return dispatch(OpKind::Prod, {in}, reduce_attrs(x, dims, keepdim, "prod"));
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
  a.var.correction = correction;
  return dispatch(OpKind::Var, {x}, a);
}
Tensor sum_squares(const Tensor& x, const Dims& dims, bool keepdim) {
  return dispatch(OpKind::SumSquares, {x}, reduce_attrs(x, dims, keepdim, "sum_squares"));
}
}  // namespace vk
