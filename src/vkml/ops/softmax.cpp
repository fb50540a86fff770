// The softmax family: softmax (with a scale and a causal mask, attention's scores), log_softmax,
// and their backward ops, each one fused kernel. Every rule is written with these ops and
// element-wise ones, so higher derivatives stay fused.
#include "vkml/ops/softmax.h"

#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

std::vector<int64_t> dim_list(const Tensor& x, int64_t dim) {
  return x.ndim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{dim};
}

Meta infer_softmax(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  std::string name(op);
  VK_CHECK(is_floating(in[0].dtype()), DTypeError, op, ": expected a floating dtype, got ",
           dtype_name(in[0].dtype()), " (cast the input to float32 or float64 first)");
  if (in[0].ndim() > 0) wrap_dim(a.dim, in[0].ndim(), name.c_str());
  return {in[0].shape(), in[0].dtype()};
}

// softmax's own attrs (attrs.softmax): a scale, and a causal mask along the last dim of
// (..., queries, keys) scores.
Meta infer_scaled_softmax(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(!a.softmax.causal || (in[0].ndim() >= 2 && a.dim == in[0].ndim() - 1), ShapeError, op,
           ": a causal mask needs (..., queries, keys) scores and dim -1, got shape ",
           shape_str(in[0].shape()), " and dim ", a.dim);
  return infer_softmax(in, a, op);
}

// (g, out) of softmax/log_softmax: the same shape and floating dtype.
Meta infer_softmax_backward(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor &g = in[0], &y = in[1];
  VK_CHECK(g.dtype() == y.dtype(), DTypeError, op, ": the gradient (", dtype_name(g.dtype()),
           ") and the output (", dtype_name(y.dtype()), ") must have the same dtype");
  VK_CHECK(g.shape() == y.shape(), ShapeError, op, ": the gradient of shape ", shape_str(g.shape()),
           " does not match the output of shape ", shape_str(y.shape()));
  return infer_softmax({y}, a, op);
}

}  // namespace

void add_softmax_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::Softmax,
       .name = "softmax",
       .arity = 1,
       .signature = "softmax(x, dim, scale = 1, causal = false)",
       .summary = "exp(s) / sum(exp(s)) along dim for s = scale * x, fused and stable (max "
                  "subtracted); causal: along the last dim of (..., queries, keys), query i "
                  "sees keys 0..i only (the others as -inf: 0 out), as attention's is_causal",
       .infer = infer_scaled_softmax,
       .grad = [](const GradCtx& c) -> Grads {
         Tensor d = softmax_backward(c.grad, c.out, c.attrs.dim);
         return {c.attrs.softmax.scale == 1.0 ? d : d * c.attrs.softmax.scale};
       },
       .grad_doc = "dx = softmax_backward(g, out, dim) * scale (masked entries have out = 0, "
                   "so they get 0)"});
  ops.push_back({.kind = OpKind::LogSoftmax,
                 .name = "log_softmax",
                 .arity = 1,
                 .signature = "log_softmax(x, dim)",
                 .summary = "x - logsumexp(x) along dim, fused and stable",
                 .infer = infer_softmax,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {log_softmax_backward(c.grad, c.out, c.attrs.dim)};
                 },
                 .grad_doc = "dx = log_softmax_backward(g, out, dim)"});
  ops.push_back(
      {.kind = OpKind::SoftmaxBackward,
       .name = "softmax_backward",
       .arity = 2,
       .signature = "softmax_backward(g, out, dim)",
       .summary =
           "the gradient of softmax from its output: out * (g - sum(g * out, dim, keepdim)), "
           "fused (torch._softmax_backward_data)",
       .infer = infer_softmax_backward,
       .grad = [](const GradCtx& c) -> Grads {
         const Tensor &g = c.in[0], &y = c.in[1], &q = c.grad;
         const Dims dims = dim_list(y, c.attrs.dim);
         Grads out(2);
         // Linear and self-adjoint in g.
         if (c.needs[0]) out[0] = softmax_backward(q, y, c.attrs.dim);
         if (c.needs[1]) {
           Tensor s = expand(sum(g * y, dims, true), y.shape());
           Tensor t = expand(sum(q * y, dims, true), y.shape());
           out[1] = q * (g - s) - g * t;
         }
         return out;
       },
       .grad_doc = "dg = softmax_backward(gg, out, dim); dout = gg * (g - sum(g * out)) - g * "
                   "sum(gg * out) (sums along dim, kept)"});
  ops.push_back(
      {.kind = OpKind::LogSoftmaxBackward,
       .name = "log_softmax_backward",
       .arity = 2,
       .signature = "log_softmax_backward(g, out, dim)",
       .summary = "the gradient of log_softmax from its output: g - exp(out) * sum(g, dim, "
                  "keepdim), fused (torch._log_softmax_backward_data)",
       .infer = infer_softmax_backward,
       .grad = [](const GradCtx& c) -> Grads {
         const Tensor &g = c.in[0], &y = c.in[1], &q = c.grad;
         const Dims dims = dim_list(y, c.attrs.dim);
         Tensor p = exp(y);
         Grads out(2);
         if (c.needs[0]) out[0] = q - expand(sum(q * p, dims, true), y.shape());
         if (c.needs[1]) out[1] = -(q * p) * expand(sum(g, dims, true), y.shape());
         return out;
       },
       .grad_doc = "dg = gg - sum(gg * exp(out), dim, keepdim); dout = -gg * exp(out) * sum(g, "
                   "dim, keepdim)"});
}

Tensor softmax(const Tensor& x, int64_t dim, double scale, bool causal) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "softmax");
  a.softmax = {.scale = scale, .causal = causal};
  return dispatch(OpKind::Softmax, {x}, a);
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "log_softmax");
  return dispatch(OpKind::LogSoftmax, {x}, a);
}
Tensor softmax_backward(const Tensor& g, const Tensor& out, int64_t dim) {
  Attrs a;
  a.dim = wrap_dim(dim, out.ndim(), "softmax_backward");
  return dispatch(OpKind::SoftmaxBackward, {g, out}, a);
}
Tensor log_softmax_backward(const Tensor& g, const Tensor& out, int64_t dim) {
  Attrs a;
  a.dim = wrap_dim(dim, out.ndim(), "log_softmax_backward");
  return dispatch(OpKind::LogSoftmaxBackward, {g, out}, a);
}

}  // namespace vk
