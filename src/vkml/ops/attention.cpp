// Scaled dot-product attention (#18): attention, softmax(scale * q k^T, causal) v as one fused
// op, and attention_backward, its gradient as one fused op that recomputes the weights instead
// of keeping them (a (..., Tq, Tk) tensor per layer: 400 MB for GPT-2 small's 12 heads of 1024
// positions at batch 8). attention_backward's own rule is written with matmul, softmax and
// element-wise ops, so second and higher derivatives work through it.
#include "vkml/ops/attention.h"

#include "vkml/ops/elementwise.h"
#include "vkml/ops/linalg.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"
#include "vkml/ops/softmax.h"

namespace vk {
namespace {

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// q, k, v as attention takes them; returns its output's shape.
Shape check_qkv(const Tensor& q, const Tensor& k, const Tensor& v, std::string_view op) {
  VK_CHECK(is_floating(q.dtype()), DTypeError, op, ": expected a floating query, got ",
           dtype_name(q.dtype()));
  VK_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), DTypeError, op,
           ": query, key and value must have one dtype, got ", dtype_name(q.dtype()), ", ",
           dtype_name(k.dtype()), " and ", dtype_name(v.dtype()));
  VK_CHECK(q.ndim() >= 2 && k.ndim() == q.ndim() && v.ndim() == q.ndim() &&
               batch_of(k) == batch_of(q) && batch_of(v) == batch_of(q),
           ShapeError, op,
           ": expected query (..., Tq, E), key (..., Tk, E) and value (..., Tk, Ev) with the same "
           "batch dims, got ",
           shape_str(q.shape()), ", ", shape_str(k.shape()), " and ", shape_str(v.shape()));
  VK_CHECK(q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2), ShapeError, op, ": query ",
           shape_str(q.shape()), ", key ", shape_str(k.shape()), " and value ",
           shape_str(v.shape()), " do not fit (query and key share E, key and value Tk)");
  Shape out = q.shape();
  out.back() = v.shape().back();
  return out;
}

Meta infer_attention(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  return {check_qkv(in[0], in[1], in[2], op), in[0].dtype()};
}

// (g, q, k, v): g shaped as attention's output.
Meta infer_attention_backward(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  const Tensor& g = in[0];
  const Shape y = check_qkv(in[1], in[2], in[3], op);
  VK_CHECK(g.dtype() == in[1].dtype(), DTypeError, op, ": the gradient (", dtype_name(g.dtype()),
           ") and the query (", dtype_name(in[1].dtype()), ") must have the same dtype");
  VK_CHECK(g.shape() == y, ShapeError, op, ": expected a gradient of shape ", shape_str(y),
           ", got ", shape_str(g.shape()));
  return {{in[1].numel() + in[2].numel() + in[3].numel()}, g.dtype()};
}

Tensor mT(const Tensor& t) { return transpose(t, -2, -1); }

Grads attention_grad(const GradCtx& c) {
  const Tensor &q = c.in[0], &k = c.in[1], &v = c.in[2];
  const SoftmaxAttrs& s = c.attrs.softmax;
  const AttentionGrads d =
      attention_grads(attention_backward(c.grad, q, k, v, s.scale, s.causal), q, k, v);
  return {c.needs[0] ? d.q : Tensor(), c.needs[1] ? d.k : Tensor(), c.needs[2] ? d.v : Tensor()};
}

// attention_backward is (dq, dk, dv) = (s dS k, s dS^T q, P^T g) with P = softmax(s q k^T),
// dP = g v^T and dS = softmax_backward(dP, P). With (Q, K, V) arriving at them, R = s (Q k^T +
// q K^T) is what arrives at dS; it reaches dP as G = softmax_backward(R, P) and P as
// R (dP - D) - r dP + g V^T (D, r: the row sums of P dP and P R); that reaches the scores as
// softmax_backward of it. Masked keys have P = 0, so they get 0 throughout.
Grads attention_backward_grad(const GradCtx& c) {
  const Tensor &g = c.in[0], &q = c.in[1], &k = c.in[2], &v = c.in[3];
  const double s = c.attrs.softmax.scale;
  const AttentionGrads in = attention_grads(c.grad, q, k, v);
  const Tensor p = softmax(matmul(q, mT(k)), -1, s, c.attrs.softmax.causal);
  const Tensor r = (matmul(in.q, mT(k)) + matmul(q, mT(in.k))) * s;
  Grads out(4);
  if (c.needs[0] || c.needs[3]) {
    const Tensor gp = softmax_backward(r, p, -1);  // arrives at dP
    if (c.needs[0]) out[0] = matmul(p, in.v) + matmul(gp, v);
    if (c.needs[3]) out[3] = matmul(mT(gp), g);
  }
  if (c.needs[1] || c.needs[2]) {
    const Tensor dp = matmul(g, mT(v));
    const Tensor ds = softmax_backward(dp, p, -1);
    const Tensor row_pdp = sum(p * dp, {-1}, true), row_pr = sum(p * r, {-1}, true);
    const Tensor at_p = r * (dp - row_pdp) - row_pr * dp + matmul(g, mT(in.v));
    const Tensor at_scores = softmax_backward(at_p, p, -1);
    if (c.needs[1]) out[1] = (matmul(ds, in.k) + matmul(at_scores, k)) * s;
    if (c.needs[2]) out[2] = (matmul(mT(ds), in.q) + matmul(mT(at_scores), q)) * s;
  }
  return out;
}

}  // namespace

void add_attention_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Attention,
                 .name = "attention",
                 .arity = 3,
                 .signature = "attention(q, k, v, scale, causal) -> (..., Tq, Ev)",
                 .summary =
                     "softmax(scale * q k^T, causal) v for q (..., Tq, E), k (..., Tk, E), v (..., "
                     "Tk, Ev) with the same batch dims; causal: query i sees keys 0..i only; fused "
                     "by blocks of queries, the scores never in memory",
                 .infer = infer_attention,
                 .grad = attention_grad,
                 .grad_doc = "(dq, dk, dv) = the three parts of attention_backward(g, q, k, v)"});
  ops.push_back(
      {.kind = OpKind::AttentionBackward,
       .name = "attention_backward",
       .arity = 4,
       .signature = "attention_backward(g, q, k, v, scale, causal) -> (flat dq, dk, dv)",
       .summary = "the gradient of attention, g arriving at its output: with P = softmax(scale * "
                  "q k^T, causal) and dS = P (g v^T - rowsum(P g v^T)), dq = scale dS k, dk = "
                  "scale dS^T q, dv = P^T g, flat and in that order; fused, P recomputed",
       .infer = infer_attention_backward,
       .grad = attention_backward_grad,
       .grad_doc = "linear in g; with (Q, K, V) arriving, R = scale (Q k^T + q K^T) and G = "
                   "softmax_backward(R, P): dg = P V + G v, dv = G^T g, and dq, dk through "
                   "dS and softmax_backward(R (dP - D) - r dP + g V^T, P), matmul and "
                   "element-wise ops"});
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal) {
  Attrs a;
  a.softmax = {.scale = scale, .causal = causal};
  return dispatch(OpKind::Attention, {q, k, v}, a);
}

Tensor attention_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                          double scale, bool causal) {
  Attrs a;
  a.softmax = {.scale = scale, .causal = causal};
  return dispatch(OpKind::AttentionBackward, {g, q, k, v}, a);
}

AttentionGrads attention_grads(const Tensor& flat, const Tensor& q, const Tensor& k,
                               const Tensor& v) {
  const int64_t nq = q.numel(), nk = k.numel();
  return {reshape(narrow(flat, 0, 0, nq), q.shape()), reshape(narrow(flat, 0, nq, nk), k.shape()),
          reshape(narrow(flat, 0, nq + nk, v.numel()), v.shape())};
}

}  // namespace vk
