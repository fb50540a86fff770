// Normalisation: fused layer_norm and batch_norm (statistics from the batch), their backward ops
// (the gradient w.r.t. x) and parameter-gradient ops (weight and bias). Each rule is written with
// these ops, so every order of derivative is a fused op again; without create_graph the backward
// op also returns the parameter gradients from the same pass (output 1).
#include "vkml/ops/norm.h"

#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

void check_float(const Tensor& x, std::string_view op) {
  VK_CHECK(is_floating(x.dtype()), DTypeError, op, ": expected a floating-point input, got ",
           dtype_name(x.dtype()));
}

// ---- layer norm ----
// Attrs: shape = the normalized (trailing) shape; norm (eps, which of weight and bias are given).

bool has_weight(const Attrs& a) { return a.norm.has_weight; }
bool has_bias(const Attrs& a) { return a.norm.has_bias; }

void check_normalized(const Tensor& x, const Shape& ns, std::string_view op) {
  check_float(x, op);
  const int64_t k = static_cast<int64_t>(ns.size());
  VK_CHECK(k >= 1 && x.ndim() >= k && Shape(x.shape().end() - k, x.shape().end()) == ns, ShapeError,
           op, ": input of shape ", shape_str(x.shape()), " does not end in normalized_shape ",
           shape_str(ns));
}

void check_affine_param(const Tensor& t, const Tensor& x, const Shape& ns, std::string_view op,
                        std::string_view what) {
  VK_CHECK(t.shape() == ns, ShapeError, op, ": ", what, " of shape ", shape_str(t.shape()),
           " does not match normalized_shape ", shape_str(ns));
  VK_CHECK(t.dtype() == x.dtype(), DTypeError, op, ": ", what, " has dtype ", dtype_name(t.dtype()),
           ", the input ", dtype_name(x.dtype()));
}

Meta infer_layer_norm(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& x = in[0];
  const size_t expected = 1 + (has_weight(a) ? 1 : 0) + (has_bias(a) ? 1 : 0);
  VK_CHECK(in.size() == expected, RuntimeError, op, ": expected ", expected,
           " inputs (x[, weight][, bias]), got ", in.size());
  check_normalized(x, a.shape, op);
  if (has_weight(a)) check_affine_param(in[1], x, a.shape, op, "weight");
  if (has_bias(a)) check_affine_param(in[has_weight(a) ? 2 : 1], x, a.shape, op, "bias");
  return {x.shape(), x.dtype()};
}

Meta infer_layer_norm_backward(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(in.size() == (has_weight(a) ? 3u : 2u), RuntimeError, op,
           ": expected inputs (g, x[, weight]), got ", in.size());
  const Tensor &g = in[0], &x = in[1];
  check_normalized(x, a.shape, op);
  VK_CHECK(g.dtype() == x.dtype(), DTypeError, op, ": the gradient (", dtype_name(g.dtype()),
           ") and the input (", dtype_name(x.dtype()), ") must have the same dtype");
  VK_CHECK(g.shape() == x.shape(), ShapeError, op, ": the gradient of shape ", shape_str(g.shape()),
           " does not match the input of shape ", shape_str(x.shape()));
  if (has_weight(a)) check_affine_param(in[2], x, a.shape, op, "weight");
  return {x.shape(), x.dtype()};
}

// t summed over the leading (not normalized) dims: the shape of the weight.
Tensor sum_leading(const Tensor& t, const Shape& ns) {
  Dims dims;
  for (int64_t d = 0; d < t.ndim() - static_cast<int64_t>(ns.size()); ++d) dims.push_back(d);
  return dims.empty() ? t : sum(t, dims);
}

// The rule of a fused normalisation with an optional weight and bias (layer_norm, batch_norm): dx
// from its backward op (`backward`), dweight and dbias the two rows of its parameter-gradient op
// (`param_grad`). When no graph is being built (grad mode off: backward without create_graph), dx
// and the weight/bias gradients come from one pass: the backward op with norm.with_param_grad also
// returns the parameter gradients as its output 1. They are constants there, which is right only
// because nothing is recorded; with grad mode on, the two ops run separately so that every gradient
// is differentiable.
Grads norm_grad(const GradCtx& c, OpKind backward,
                Tensor (*param_grad)(const Tensor& g, const Tensor& x, const Attrs& a)) {
  const Attrs& a = c.attrs;
  const Tensor& x = c.in[0];
  const Tensor w = has_weight(a) ? c.in[1] : Tensor();
  Grads out(c.in.size());
  const size_t ib = has_weight(a) ? 2 : 1;
  const bool need_w = has_weight(a) && c.needs[1], need_b = has_bias(a) && c.needs[ib];
  const bool one_pass = c.needs[0] && (need_w || need_b) && !GradMode::is_enabled();
  Tensor pg;
  if (c.needs[0]) {
    Attrs b;
    b.shape = a.shape;
    b.norm = {.eps = a.norm.eps, .has_weight = w.defined(), .with_param_grad = one_pass};
    Outputs r = w.defined() ? dispatch_outputs(backward, {c.grad, x, w}, b)
                            : dispatch_outputs(backward, {c.grad, x}, b);
    out[0] = r[0];
    pg = r[1];  // the parameter gradients of the one pass; undefined without it
  }
  if (need_w || need_b) {
    if (!one_pass) pg = param_grad(c.grad, x, a);
    if (need_w) out[1] = select(pg, 0, 0);
    if (need_b) out[ib] = select(pg, 0, 1);
  }
  return out;
}

Grads layer_norm_grad(const GradCtx& c) {
  return norm_grad(c, OpKind::LayerNormBackward,
                   [](const Tensor& g, const Tensor& x, const Attrs& a) {
                     return layer_norm_param_grad(g, x, a.shape, a.norm.eps);
                   });
}

Meta infer_layer_norm_param_grad(const std::vector<Tensor>& in, const Attrs& a,
                                 std::string_view op) {
  const Tensor &g = in[0], &x = in[1];
  check_normalized(x, a.shape, op);
  VK_CHECK(g.dtype() == x.dtype(), DTypeError, op, ": the gradient (", dtype_name(g.dtype()),
           ") and the input (", dtype_name(x.dtype()), ") must have the same dtype");
  VK_CHECK(g.shape() == x.shape(), ShapeError, op, ": the gradient of shape ", shape_str(g.shape()),
           " does not match the input of shape ", shape_str(x.shape()));
  Shape s{2};
  s.insert(s.end(), a.shape.begin(), a.shape.end());
  return {s, x.dtype()};
}

// The rule of a fused normalisation's backward op (layer_norm_backward: a group is a row;
// batch_norm_backward: a channel). Per group, dx = r (u - mean(u)) - r^3 c mean(u c), with
// c = x - mean(x), r = rsqrt(mean(c^2) + eps) and u = g * w. Its adjoint in u is the backward op
// itself (the Jacobian of xhat is symmetric); in x, for an upstream q, with a' = mean(q u) -
// mean(q) mean(u), m = mean(u c), p = mean(q c):
//   dx = -r^3 (c (a' - 3 r^2 m p) + (u - mean(u)) p + m (q - mean(q))).
// `dims`: the dims a group's mean is over; `w`: the weight shaped to broadcast against x (or
// undefined); `unweighted(q)`: the backward op of q without a weight; `to_weight(t)`: t summed
// to the weight's shape.
template <class Unweighted, class ToWeight>
Grads norm_backward_grad(const GradCtx& c, const Dims& dims, const Tensor& w, Unweighted unweighted,
                         ToWeight to_weight) {
  const Tensor &g = c.in[0], &x = c.in[1], &q = c.grad;
  const bool hw = w.defined();
  Grads out(c.in.size());
  if (c.needs[0] || (hw && c.needs[2])) {
    Tensor jq = unweighted(q);
    if (c.needs[0]) out[0] = hw ? jq * w : jq;
    if (hw && c.needs[2]) out[2] = to_weight(g * jq);
  }
  if (c.needs[1]) {
    auto group_mean = [&dims](const Tensor& t) { return mean(t, dims, true); };
    const Tensor u = hw ? g * w : g;
    Tensor cx = x - group_mean(x);
    Tensor r = rsqrt(group_mean(cx * cx) + c.attrs.norm.eps);
    Tensor ub = group_mean(u), qb = group_mean(q);
    Tensor m = group_mean(u * cx), p = group_mean(q * cx);
    Tensor ap = group_mean(q * u) - qb * ub;
    Tensor r2 = r * r;
    out[1] = -(r2 * r) * (cx * (ap - 3.0 * r2 * m * p) + (u - ub) * p + m * (q - qb));
  }
  return out;
}

Grads layer_norm_backward_grad(const GradCtx& c) {
  const Attrs& a = c.attrs;
  const Tensor& x = c.in[1];
  Dims rows;
  for (int64_t d = x.ndim() - static_cast<int64_t>(a.shape.size()); d < x.ndim(); ++d)
    rows.push_back(d);
  return norm_backward_grad(
      c, rows, has_weight(a) ? c.in[2] : Tensor(),
      [&](const Tensor& q) { return layer_norm_backward(q, x, a.shape, Tensor(), a.norm.eps); },
      [&](const Tensor& t) { return sum_leading(t, a.shape); });
}

// ---- batch norm ----
// Attrs: norm (eps, which of weight and bias are given). x is (N, C, *); statistics per channel.

void check_channels_param(const Tensor& t, const Tensor& x, std::string_view op,
                          std::string_view what) {
  VK_CHECK(t.shape() == Shape{x.shape()[1]}, ShapeError, op, ": ", what, " of shape ",
           shape_str(t.shape()), " does not match the ", x.shape()[1], " channels of input ",
           shape_str(x.shape()));
  VK_CHECK(t.dtype() == x.dtype(), DTypeError, op, ": ", what, " has dtype ", dtype_name(t.dtype()),
           ", the input ", dtype_name(x.dtype()));
}

void check_batch_input(const Tensor& x, std::string_view op) {
  check_float(x, op);
  VK_CHECK(x.ndim() >= 2, ShapeError, op, ": input must be (N, C, ...), got shape ",
           shape_str(x.shape()));
}

void check_grad_like(const Tensor& g, const Tensor& x, std::string_view op) {
  VK_CHECK(g.dtype() == x.dtype(), DTypeError, op, ": the gradient (", dtype_name(g.dtype()),
           ") and the input (", dtype_name(x.dtype()), ") must have the same dtype");
  VK_CHECK(g.shape() == x.shape(), ShapeError, op, ": the gradient of shape ", shape_str(g.shape()),
           " does not match the input of shape ", shape_str(x.shape()));
}

Meta infer_batch_norm(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& x = in[0];
  const size_t expected = 1 + (has_weight(a) ? 1 : 0) + (has_bias(a) ? 1 : 0);
  VK_CHECK(in.size() == expected, RuntimeError, op, ": expected ", expected,
           " inputs (x[, weight][, bias]), got ", in.size());
  check_batch_input(x, op);
  if (has_weight(a)) check_channels_param(in[1], x, op, "weight");
  if (has_bias(a)) check_channels_param(in[has_weight(a) ? 2 : 1], x, op, "bias");
  return {x.shape(), x.dtype()};
}

Meta infer_batch_norm_backward(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(in.size() == (has_weight(a) ? 3u : 2u), RuntimeError, op,
           ": expected inputs (g, x[, weight]), got ", in.size());
  check_batch_input(in[1], op);
  check_grad_like(in[0], in[1], op);
  if (has_weight(a)) check_channels_param(in[2], in[1], op, "weight");
  return {in[1].shape(), in[1].dtype()};
}

Meta infer_batch_norm_param_grad(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  check_batch_input(in[1], op);
  check_grad_like(in[0], in[1], op);
  return {{2, in[1].shape()[1]}, in[1].dtype()};
}

// Every dim of x but the channel one: what batch norm reduces over.
Dims batch_dims(const Tensor& x) {
  Dims d{0};
  for (int64_t i = 2; i < x.ndim(); ++i) d.push_back(i);
  return d;
}

// A (C) tensor shaped to broadcast along dim 1 of an ndim-D tensor.
Tensor per_channel(const Tensor& t, int64_t ndim) {
  Shape s(static_cast<size_t>(ndim), 1);
  s[1] = t.numel();
  return reshape(t, s);
}

Grads batch_norm_grad(const GradCtx& c) {
  return norm_grad(c, OpKind::BatchNormBackward,
                   [](const Tensor& g, const Tensor& x, const Attrs& a) {
                     return batch_norm_param_grad(g, x, a.norm.eps);
                   });
}

Grads batch_norm_backward_grad(const GradCtx& c) {
  const Attrs& a = c.attrs;
  const Tensor& x = c.in[1];
  const Dims dims = batch_dims(x);
  return norm_backward_grad(
      c, dims, has_weight(a) ? per_channel(c.in[2], x.ndim()) : Tensor(),
      [&](const Tensor& q) { return batch_norm_backward(q, x, Tensor(), a.norm.eps); },
      [&](const Tensor& t) { return sum(t, dims); });
}

}  // namespace

void add_norm_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::LayerNorm,
       .name = "layer_norm",
       .arity = -1,
       .signature = "layer_norm(x, normalized_shape, weight, bias, eps)",
       .summary = "(x - mean) / sqrt(biased var + eps) over the trailing normalized_shape, times "
                  "weight plus bias when given; fused, one row per work item",
       .infer = infer_layer_norm,
       .grad = layer_norm_grad,
       .grad_doc = "dx = layer_norm_backward(g, x, weight); (dweight, dbias) = the two rows of "
                   "layer_norm_param_grad(g, x) (without create_graph both come from one pass of "
                   "the layer_norm_backward kernel)"});
  ops.push_back(
      {.kind = OpKind::LayerNormBackward,
       .name = "layer_norm_backward",
       .arity = -1,
       .outputs = 2,
       .signature = "layer_norm_backward(g, x, normalized_shape, weight, eps)",
       .summary = "the gradient of layer_norm w.r.t. x: with u = g * weight, xhat = (x - mean) * "
                  "rstd, rstd * (u - mean(u) - xhat * mean(u * xhat)) per row; fused (mean and "
                  "rstd recomputed from x)",
       .infer = infer_layer_norm_backward,
       .grad = layer_norm_backward_grad,
       .grad_doc =
           "dg = layer_norm_backward(gg, x) * weight; dweight = sum over the leading dims "
           "of g * layer_norm_backward(gg, x); dx = -r^3 (c (a' - 3 r^2 m p) + (u - "
           "mean(u)) p + m (gg - mean(gg))), c = x - mean(x), r = rstd, u = g * weight, "
           "a' = mean(gg u) - mean(gg) mean(u), m = mean(u c), p = mean(gg c) (row means)"});
  ops.push_back(
      {.kind = OpKind::LayerNormParamGrad,
       .name = "layer_norm_param_grad",
       .arity = 2,
       .signature = "layer_norm_param_grad(g, x, normalized_shape, eps) -> (2, *normalized_shape)",
       .summary = "the weight and bias gradients of layer_norm, stacked: [sum of g * xhat, sum of "
                  "g] over the leading dims, xhat = (x - mean) * rstd; fused",
       .infer = infer_layer_norm_param_grad,
       .grad = [](const GradCtx& c) -> Grads {
         const Tensor &g = c.in[0], &x = c.in[1];
         const Shape& ns = c.attrs.shape;
         Tensor qw = select(c.grad, 0, 0), qb = select(c.grad, 0, 1);
         Grads out(2);
         // d/dg of sum(qw * g * xhat + qb * g) is xhat * qw + qb: a layer_norm with weight qw
         // and bias qb; d/dx is the layer_norm gradient of g with weight qw.
         if (c.needs[0]) out[0] = layer_norm(x, ns, qw, qb, c.attrs.norm.eps);
         if (c.needs[1]) out[1] = layer_norm_backward(g, x, ns, qw, c.attrs.norm.eps);
         return out;
       },
       .grad_doc = "dg = layer_norm(x, gg[0], gg[1]) (gg[0] as weight, gg[1] as bias); dx = "
                   "layer_norm_backward(g, x, weight = gg[0])"});
  ops.push_back(
      {.kind = OpKind::BatchNorm,
       .name = "batch_norm",
       .arity = -1,
       .outputs = 2,
       .signature = "batch_norm(x, weight, bias, eps)",
       .summary = "(x - mean) / sqrt(biased var + eps) * weight + bias per channel (dim 1) of x "
                  "(N, C, *), with the batch's statistics; fused, one channel per work item; "
                  "output 1: the (2, C) [mean, biased var] it used",
       .infer = infer_batch_norm,
       .grad = batch_norm_grad,
       .grad_doc = "dx = batch_norm_backward(g, x, weight); (dweight, dbias) = the two rows of "
                   "batch_norm_param_grad(g, x) (without create_graph both come from the sums of "
                   "one batch_norm_backward pass)"});
  ops.push_back(
      {.kind = OpKind::BatchNormBackward,
       .name = "batch_norm_backward",
       .arity = -1,
       .outputs = 2,
       .signature = "batch_norm_backward(g, x, weight, eps)",
       .summary = "the gradient of batch_norm w.r.t. x: weight * rstd * (g - mean(g) - xhat * "
                  "mean(g * xhat)) per channel; fused (statistics recomputed from x)",
       .infer = infer_batch_norm_backward,
       .grad = batch_norm_backward_grad,
       .grad_doc = "layer_norm_backward's rule with a row being a channel: dg = "
                   "batch_norm_backward(gg, x) * weight; dweight = sum over (N, *) of g * "
                   "batch_norm_backward(gg, x); dx = -r^3 (c (a' - 3 r^2 m p) + (u - mean(u)) p + "
                   "m (gg - mean(gg))) with channel means"});
  ops.push_back(
      {.kind = OpKind::BatchNormParamGrad,
       .name = "batch_norm_param_grad",
       .arity = 2,
       .signature = "batch_norm_param_grad(g, x, eps) -> (2, C)",
       .summary = "the weight and bias gradients of batch_norm, stacked: [sum of g * xhat, sum "
                  "of g] over every dim but the channel; fused",
       .infer = infer_batch_norm_param_grad,
       .grad = [](const GradCtx& c) -> Grads {
         const Tensor &g = c.in[0], &x = c.in[1];
         Tensor qw = select(c.grad, 0, 0), qb = select(c.grad, 0, 1);
         Grads out(2);
         // As layer_norm_param_grad's: d/dg is a batch_norm with weight qw and bias qb; d/dx
         // the batch_norm gradient of g with weight qw.
         if (c.needs[0]) out[0] = batch_norm(x, qw, qb, c.attrs.norm.eps);
         if (c.needs[1]) out[1] = batch_norm_backward(g, x, qw, c.attrs.norm.eps);
         return out;
       },
       .grad_doc = "dg = batch_norm(x, gg[0], gg[1]); dx = batch_norm_backward(g, x, weight = "
                   "gg[0])"});
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  Attrs a;
  a.shape = normalized_shape;
  a.norm = {.eps = eps, .has_weight = weight.defined(), .has_bias = bias.defined()};
  if (weight.defined() && bias.defined()) return dispatch(OpKind::LayerNorm, {x, weight, bias}, a);
  if (weight.defined()) return dispatch(OpKind::LayerNorm, {x, weight}, a);
  if (bias.defined()) return dispatch(OpKind::LayerNorm, {x, bias}, a);
  return dispatch(OpKind::LayerNorm, {x}, a);
}
Tensor layer_norm_param_grad(const Tensor& g, const Tensor& x, const Shape& normalized_shape,
                             double eps) {
  Attrs a;
  a.shape = normalized_shape;
  a.norm.eps = eps;
  return dispatch(OpKind::LayerNormParamGrad, {g, x}, a);
}
Tensor layer_norm_backward(const Tensor& g, const Tensor& x, const Shape& normalized_shape,
                           const Tensor& weight, double eps) {
  Attrs a;
  a.shape = normalized_shape;
  a.norm = {.eps = eps, .has_weight = weight.defined()};
  if (weight.defined()) return dispatch(OpKind::LayerNormBackward, {g, x, weight}, a);
  return dispatch(OpKind::LayerNormBackward, {g, x}, a);
}

BatchNormResult batch_norm_with_stats(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                      double eps) {
  Attrs a;
  a.norm = {.eps = eps, .has_weight = weight.defined(), .has_bias = bias.defined()};
  const Outputs o = weight.defined() && bias.defined()
                        ? dispatch_outputs(OpKind::BatchNorm, {x, weight, bias}, a)
                    : weight.defined() ? dispatch_outputs(OpKind::BatchNorm, {x, weight}, a)
                    : bias.defined()   ? dispatch_outputs(OpKind::BatchNorm, {x, bias}, a)
                                       : dispatch_outputs(OpKind::BatchNorm, {x}, a);
  return {o[0], o[1]};
}
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  return batch_norm_with_stats(x, weight, bias, eps).y;
}
Tensor batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& weight, double eps) {
  Attrs a;
  a.norm = {.eps = eps, .has_weight = weight.defined()};
  if (weight.defined()) return dispatch(OpKind::BatchNormBackward, {g, x, weight}, a);
  return dispatch(OpKind::BatchNormBackward, {g, x}, a);
}
Tensor batch_norm_param_grad(const Tensor& g, const Tensor& x, double eps) {
  Attrs a;
  a.norm.eps = eps;
  return dispatch(OpKind::BatchNormParamGrad, {g, x}, a);
}

}  // namespace vk
