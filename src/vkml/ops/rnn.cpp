// The recurrent cells (issue #16 item 2: rnn): lstm_cell, one LSTM time step from the gates'
// pre-activations (computed by one GEMM outside), and lstm_cell_backward, its gradient as one
// fused op. lstm_cell_backward's own rule is written with element-wise ops, so second and higher
// derivatives work through it.
#include "vkml/ops/rnn.h"

#include <string>

#include "vkml/ops/elementwise.h"
#include "vkml/ops/linalg.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

// gates (B, 4H) and c_prev (B, H) of one floating dtype; returns H.
int64_t check_cell(const Tensor& gates, const Tensor& c_prev, std::string_view op) {
  VK_CHECK(is_floating(gates.dtype()), DTypeError, op, ": expected floating gates, got ",
           dtype_name(gates.dtype()));
  VK_CHECK(gates.dtype() == c_prev.dtype(), DTypeError, op, ": gates (", dtype_name(gates.dtype()),
           ") and c_prev (", dtype_name(c_prev.dtype()), ") must have the same dtype");
  VK_CHECK(gates.ndim() == 2 && gates.shape()[1] % 4 == 0, ShapeError, op,
           ": expected gates of shape (B, 4 * hidden_size), got ", shape_str(gates.shape()));
  const int64_t h = gates.shape()[1] / 4;
  VK_CHECK(c_prev.shape() == Shape({gates.shape()[0], h}), ShapeError, op,
           ": expected c_prev of shape ", shape_str({gates.shape()[0], h}), " for gates of shape ",
           shape_str(gates.shape()), ", got ", shape_str(c_prev.shape()));
  return h;
}

Meta infer_lstm_cell(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  const int64_t h = check_cell(in[0], in[1], op);
  return {{2, in[0].shape()[0], h}, in[0].dtype()};
}

// (g, gates, c_prev): g is the gradient of lstm_cell's (2, B, H) output.
Meta infer_lstm_cell_backward(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  const Tensor &g = in[0], &gates = in[1];
  const int64_t h = check_cell(gates, in[2], op);
  const int64_t b = gates.shape()[0];
  VK_CHECK(g.dtype() == gates.dtype(), DTypeError, op, ": the gradient (", dtype_name(g.dtype()),
           ") and the gates (", dtype_name(gates.dtype()), ") must have the same dtype");
  VK_CHECK(g.shape() == Shape({2, b, h}), ShapeError, op, ": expected a gradient of shape ",
           shape_str({2, b, h}), ", got ", shape_str(g.shape()));
  return {{b * 5 * h}, gates.dtype()};
}

struct CellGrads {
  Tensor gates, c_prev;
};
// lstm_cell_backward's flat result split into dgates (B, 4H) and dc_prev (B, H), both views.
CellGrads split_flat(const Tensor& d, int64_t b, int64_t h) {
  return {reshape(narrow(d, 0, 0, b * 4 * h), {b, 4 * h}),
          reshape(narrow(d, 0, b * 4 * h, b * h), {b, h})};
}

Grads lstm_cell_grad(const GradCtx& c) {
  const Tensor &gates = c.in[0], &c_prev = c.in[1];
  const int64_t b = gates.shape()[0], h = c_prev.shape()[1];
  const CellGrads d = split_flat(lstm_cell_backward(c.grad, gates, c_prev), b, h);
  return {c.needs[0] ? d.gates : Tensor(), c.needs[1] ? d.c_prev : Tensor()};
}

// lstm_cell_backward is linear in g: D = J^T g, with J the Jacobian of lstm_cell at (gates,
// c_prev). So with q arriving at D, dg = J q (the cell's forward derivative along q), and
// d(gates, c_prev) = the gradient of S = <g, J q> there, written out per element below
// (s* are the sigmoids' derivatives, tg and dc1 the tanhs').
Grads lstm_cell_backward_grad(const GradCtx& c) {
  const Tensor &g = c.in[0], &gates = c.in[1], &cp = c.in[2];
  const int64_t b = gates.shape()[0], h = cp.shape()[1];
  const CellGrads q = split_flat(c.grad, b, h);
  auto part = [&](const Tensor& t, int64_t k) { return narrow(t, 1, k * h, h); };
  const Tensor i = sigmoid(part(gates, 0)), f = sigmoid(part(gates, 1));
  const Tensor gg = tanh(part(gates, 2)), o = sigmoid(part(gates, 3));
  const Tensor qi = part(q.gates, 0), qf = part(q.gates, 1), qg = part(q.gates, 2),
               qo = part(q.gates, 3), qc = q.c_prev;
  const Tensor tc = tanh(f * cp + i * gg), dc1 = 1.0 - tc * tc;
  const Tensor si = i * (1.0 - i), sf = f * (1.0 - f), so = o * (1.0 - o), tg = 1.0 - gg * gg;
  // The forward derivative of c and h along q.
  const Tensor dc = sf * qf * cp + f * qc + si * qi * gg + i * tg * qg;
  const Tensor dh = so * qo * tc + o * dc1 * dc;
  Grads out(3);
  if (c.needs[0]) out[0] = stack({dh, dc}, 0);
  if (!c.needs[1] && !c.needs[2]) return out;
  const Tensor gh = select(g, 0, 0), gc = select(g, 0, 1);
  const Tensor e = gh * o * dc1 + gc;                         // dS/d(dc)
  const Tensor k = gh * dc1 * (so * qo - 2.0 * o * tc * dc);  // dS/dc through tc
  if (c.needs[1]) {
    const Tensor dai = si * (k * gg + e * (qi * gg * (1.0 - 2.0 * i) + tg * qg));
    const Tensor daf = sf * (k * cp + e * (qf * cp * (1.0 - 2.0 * f) + qc));
    const Tensor dag = tg * (k * i + e * (si * qi - 2.0 * i * qg * gg));
    const Tensor dao = gh * so * (qo * tc * (1.0 - 2.0 * o) + dc * dc1);
    out[1] = cat({dai, daf, dag, dao}, 1);
  }
  if (c.needs[2]) out[2] = k * f + e * sf * qf;
  return out;
}

}  // namespace

void add_rnn_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::LstmCell,
       .name = "lstm_cell",
       .arity = 2,
       .signature = "lstm_cell(gates, c_prev) -> (2, B, H)",
       .summary = "one LSTM step from gates (B, 4H) = x W_ih^T + h W_hh^T + biases in torch's "
                  "order (i, f, g, o) and c_prev (B, H): [h, c] with c = sigmoid(f) c_prev + "
                  "sigmoid(i) tanh(g), h = sigmoid(o) tanh(c); fused, one element per (b, j)",
       .infer = infer_lstm_cell,
       .grad = lstm_cell_grad,
       .grad_doc = "(dgates, dc_prev) = the two parts of lstm_cell_backward(g, gates, c_prev)"});
  ops.push_back(
      {.kind = OpKind::LstmCellBackward,
       .name = "lstm_cell_backward",
       .arity = 3,
       .signature = "lstm_cell_backward(g, gates, c_prev) -> (B * 5H)",
       .summary = "the gradient of lstm_cell, g (2, B, H) arriving at [h, c]: with e = g_c + g_h "
                  "o (1 - tanh(c)^2), dgates = [e tanh(g) i(1-i), e c_prev f(1-f), e i (1 - "
                  "tanh(g)^2), g_h tanh(c) o(1-o)] and dc_prev = e f, flat: dgates (B, 4H) then "
                  "dc_prev (B, H); fused (the gates' activations recomputed)",
       .infer = infer_lstm_cell_backward,
       .grad = lstm_cell_backward_grad,
       .grad_doc = "linear in g: dg = stack(dh, dc), the cell's forward derivative along gg; "
                   "dgates and dc_prev = the gradient of <g, that derivative>, element-wise ops"});
}

Tensor lstm_cell(const Tensor& gates, const Tensor& c_prev) {
  return dispatch(OpKind::LstmCell, {gates, c_prev});
}
Tensor lstm_cell_backward(const Tensor& g, const Tensor& gates, const Tensor& c_prev) {
  return dispatch(OpKind::LstmCellBackward, {g, gates, c_prev});
}

// --- the LSTM layer's time loop (issue #16 item 2, lstm) ---

namespace {

void check_layer(const Tensor& xw, const Tensor& h0, const Tensor& c0, const Tensor& wt) {
  constexpr std::string_view op = "lstm_layer";
  VK_CHECK(xw.ndim() == 3 && xw.shape()[2] % 4 == 0, ShapeError, op,
           ": expected xw of shape (T, B, 4 * hidden_size), got ", shape_str(xw.shape()));
  const int64_t b = xw.shape()[1], h = xw.shape()[2] / 4;
  VK_CHECK(h0.shape() == Shape({b, h}) && c0.shape() == Shape({b, h}), ShapeError, op,
           ": expected h0 and c0 of shape ", shape_str({b, h}), " for xw of shape ",
           shape_str(xw.shape()), ", got ", shape_str(h0.shape()), " and ", shape_str(c0.shape()));
  VK_CHECK(wt.shape() == Shape({h, 4 * h}), ShapeError, op, ": expected wt (W_hh^T) of shape ",
           shape_str({h, 4 * h}), ", got ", shape_str(wt.shape()));
}

}  // namespace

LstmLayerStates lstm_layer_forward(const Tensor& xw, const Tensor& h0, const Tensor& c0,
                                   const Tensor& wt, bool reverse) {
  check_layer(xw, h0, c0, wt);
  const auto n = static_cast<size_t>(xw.shape()[0]);
  LstmLayerStates s{std::vector<Tensor>(n), std::vector<Tensor>(n), std::vector<Tensor>(n)};
  // nn.LSTM passes W_hh^T as a transposed view; each of the n products would repack it for its
  // few rows (16 x 128 x 512: 26 us instead of 21, Zen 4), so it is copied once.
  const Tensor w = contiguous(wt);
  Tensor h = h0, c = c0;
  for (size_t k = 0; k < n; ++k) {
    const size_t t = reverse ? n - 1 - k : k;
    s.gates[t] = addmm(select(xw, 0, static_cast<int64_t>(t)), h, w);  // one GEMM onto xw_t
    const Tensor hc = lstm_cell(s.gates[t], c);
    h = s.hs[t] = select(hc, 0, 0);
    c = s.cs[t] = select(hc, 0, 1);
  }
  return s;
}

LstmLayerGrads lstm_layer_backward(const Tensor& g, const LstmLayerStates& s, const Tensor& h0,
                                   const Tensor& c0, const Tensor& wt, bool reverse) {
  const int64_t n = static_cast<int64_t>(s.gates.size()), b = h0.shape()[0], h = h0.shape()[1];
  VK_CHECK(n > 0 && g.shape() == Shape({n + 1, b, h}), ShapeError,
           "lstm_layer_backward: expected a gradient of shape ", shape_str({n + 1, b, h}), ", got ",
           shape_str(g.shape()));
  const Tensor w = contiguous(transpose(wt, 0, 1));  // as in the forward: rows for each step
  Tensor dh = select(g, 0, reverse ? 0 : n - 1), dc = select(g, 0, n);
  std::vector<Tensor> das(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {  // reverse time
    const int64_t t = reverse ? k : n - 1 - k, prev = reverse ? t + 1 : t - 1;
    const bool first = prev < 0 || prev >= n;  // t reads h0 and c0
    const auto ti = static_cast<size_t>(t);
    const Tensor d = lstm_cell_backward(stack({dh, dc}, 0), s.gates[ti],
                                        first ? c0 : s.cs[static_cast<size_t>(prev)]);
    das[ti] = reshape(narrow(d, 0, 0, b * 4 * h), {b, 4 * h});
    dc = reshape(narrow(d, 0, b * 4 * h, b * h), {b, h});
    dh = first ? matmul(das[ti], w) : addmm(select(g, 0, prev), das[ti], w);
  }
  // wt's gradient: sum over steps of h_prev^T dgates, as one (H, T B) @ (T B, 4H) product.
  std::vector<Tensor> hprev(s.hs.size());
  for (size_t t = 0; t < hprev.size(); ++t) {
    const size_t p = reverse ? t + 1 : t - 1;  // wraps below 0: p >= size then
    hprev[t] = p < hprev.size() ? s.hs[p] : h0;
  }
  const Tensor dgates = stack(das, 0);
  const Tensor dwt = matmul(transpose(reshape(stack(hprev, 0), {n * b, h}), 0, 1),
                            reshape(dgates, {n * b, 4 * h}));
  return {dgates, dh, dc, dwt};
}

}  // namespace vk
