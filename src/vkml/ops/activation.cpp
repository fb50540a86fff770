// The activations with parameters (ops/activation.h): each forward op's rule is its fused
// *_backward op, as PyTorch's derivatives.yaml pairs them, and each *_backward op's rule is
// itself (for the incoming gradient) plus the second derivative from forward ops, so that they
// differentiate to any order.
#include "vkml/ops/activation.h"

#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"

namespace vk {
namespace {

// As PyTorch: these take floating tensors only (an integer input is a DTypeError).
Meta infer_floating(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(is_floating(in[0].dtype()), DTypeError, op, ": expected a floating input, got ",
           in[0].describe());
  return {in[0].shape(), in[0].dtype()};
}

// (g, x) of one floating dtype and shape after prepare_binary.
Meta infer_floating_pair(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(is_floating(in[0].dtype()), DTypeError, op, ": expected floating inputs, got ",
           in[0].describe(), " and ", in[1].describe());
  return {in[0].shape(), in[0].dtype()};
}

Tensor zero(const Tensor& like) { return scalar_like(0.0, like); }

double lo_of(const Attrs& a) { return a.lo->to_double(); }
double hi_of(const Attrs& a) { return a.hi->to_double(); }

OpDef unary(OpKind kind, std::string_view name, std::string_view signature,
            std::string_view summary, Grads (*grad)(const GradCtx&), std::string_view grad_doc) {
  return {.kind = kind,
          .name = name,
          .arity = 1,
          .signature = signature,
          .summary = summary,
          .infer = infer_floating,
          .grad = grad,
          .grad_doc = grad_doc};
}

// A *_backward op (g, x): d/dg is the op itself applied to gg; d/dx is `second` (gg, g, x).
template <Tensor (*Self)(const Tensor&, const Tensor&, const Attrs&),
          Tensor (*Second)(const Tensor&, const Tensor&, const Tensor&, const Attrs&)>
Grads backward_rule(const GradCtx& c) {
  const Tensor &g = c.in[0], &x = c.in[1];
  Grads out(2);
  if (c.needs[0]) out[0] = Self(c.grad, x, c.attrs);
  if (c.needs[1]) out[1] = Second(c.grad, g, x, c.attrs);
  return out;
}

OpDef backward_op(OpKind kind, std::string_view name, std::string_view signature,
                  std::string_view summary, Grads (*grad)(const GradCtx&),
                  std::string_view grad_doc) {
  return {.kind = kind,
          .name = name,
          .arity = 2,
          .signature = signature,
          .summary = summary,
          .prepare = prepare_binary,
          .infer = infer_floating_pair,
          .grad = grad,
          .grad_doc = grad_doc};
}

// Each *_backward op as a function of (g, x, attrs), and its second derivative in x.
Tensor leaky_back(const Tensor& g, const Tensor& x, const Attrs& a) {
  return leaky_relu_backward(g, x, a.activation.negative_slope);
}
Tensor hardtanh_back(const Tensor& g, const Tensor& x, const Attrs& a) {
  return hardtanh_backward(g, x, lo_of(a), hi_of(a));
}
Tensor elu_back(const Tensor& g, const Tensor& x, const Attrs& a) {
  return elu_backward(g, x, a.activation.alpha, a.activation.input_scale);
}
Tensor softplus_back(const Tensor& g, const Tensor& x, const Attrs& a) {
  return softplus_backward(g, x, a.activation.beta, a.activation.threshold);
}
Tensor hardsigmoid_back(const Tensor& g, const Tensor& x, const Attrs&) {
  return hardsigmoid_backward(g, x);
}
Tensor hardswish_back(const Tensor& g, const Tensor& x, const Attrs&) {
  return hardswish_backward(g, x);
}
Tensor silu_back(const Tensor& g, const Tensor& x, const Attrs&) { return silu_backward(g, x); }
Tensor smooth_l1_back(const Tensor& g, const Tensor& x, const Attrs& a) {
  return smooth_l1_backward(g, x, a.activation.width);
}
Tensor huber_back(const Tensor& g, const Tensor& x, const Attrs& a) {
  return huber_backward(g, x, a.activation.width);
}

// Piecewise linear: the slope is a step function of x (zero, as torch's: a tensor, not none).
Tensor piecewise_linear_second(const Tensor&, const Tensor&, const Tensor& x, const Attrs&) {
  return zeros_like(x);
}
// d/dx [g * s * alpha * e^(x s)] = (gg * g * s) * s * alpha * e^(x s) where x <= 0, else 0.
Tensor elu_second(const Tensor& gg, const Tensor& g, const Tensor& x, const Attrs& a) {
  const Tensor d = elu_back(gg * g * a.activation.input_scale, x, a);
  return where(le(x, zero(x)), d, zero(d));
}
// d/dx [g * sigmoid(beta x)] = gg * g * beta * s (1 - s), s = sigmoid(beta x), below the
// threshold.
Tensor softplus_second(const Tensor& gg, const Tensor& g, const Tensor& x, const Attrs& a) {
  const Tensor z = x * a.activation.beta;
  const Tensor d = sigmoid_backward(gg * g * a.activation.beta, sigmoid(z));
  return where(gt(z, scalar_like(a.activation.threshold, z)), zero(d), d);
}

// d/dx [g * (x / 3 + 1/2)] = gg * g / 3 strictly inside (-3, 3), else 0 (torch's rule).
Tensor hardswish_second(const Tensor& gg, const Tensor& g, const Tensor& x, const Attrs&) {
  const Tensor inside = bitwise_and(gt(x, scalar_like(-3.0, x)), lt(x, scalar_like(3.0, x)));
  const Tensor d = gg * g / 3.0;
  return where(inside, d, zero(d));
}

// d/dx [g * s (1 + x (1 - s))] = gg * g * s (1 - s) * (2 + x (1 - 2 s)), s = sigmoid(x).
Tensor silu_second(const Tensor& gg, const Tensor& g, const Tensor& x, const Attrs&) {
  const Tensor s = sigmoid(x);
  return sigmoid_backward(gg * g, s) * (x * (1.0 - s * 2.0) + 2.0);
}
// The quadratic piece's slope, gg * g * scale strictly inside |x| < width, else 0 (smooth_l1's
// scale is 1 / beta, huber's 1).
Tensor quadratic_piece_second(const Tensor& gg, const Tensor& g, const Tensor& x, double width,
                              double scale) {
  const Tensor d = gg * g * scale;
  return where(lt(abs(x), scalar_like(width, x)), d, zero(d));
}
Tensor smooth_l1_second(const Tensor& gg, const Tensor& g, const Tensor& x, const Attrs& a) {
  return quadratic_piece_second(gg, g, x, a.activation.width, 1.0 / a.activation.width);
}
Tensor huber_second(const Tensor& gg, const Tensor& g, const Tensor& x, const Attrs& a) {
  return quadratic_piece_second(gg, g, x, a.activation.width, 1.0);
}

Grads leaky_relu_grad(const GradCtx& c) { return {leaky_back(c.grad, c.in[0], c.attrs)}; }
Grads hardtanh_grad(const GradCtx& c) { return {hardtanh_back(c.grad, c.in[0], c.attrs)}; }
Grads elu_grad(const GradCtx& c) { return {elu_back(c.grad, c.in[0], c.attrs)}; }
Grads softplus_grad(const GradCtx& c) { return {softplus_back(c.grad, c.in[0], c.attrs)}; }
Grads hardsigmoid_grad(const GradCtx& c) { return {hardsigmoid_back(c.grad, c.in[0], c.attrs)}; }
Grads hardswish_grad(const GradCtx& c) { return {hardswish_back(c.grad, c.in[0], c.attrs)}; }
Grads silu_grad(const GradCtx& c) { return {silu_back(c.grad, c.in[0], c.attrs)}; }
Grads smooth_l1_grad(const GradCtx& c) { return {smooth_l1_back(c.grad, c.in[0], c.attrs)}; }
Grads huber_grad(const GradCtx& c) { return {huber_back(c.grad, c.in[0], c.attrs)}; }
// torch's mse_loss_backward: 2 (a - b) g (mean's 1 / N is in g already)
Grads squared_difference_grad(const GradCtx& c) {
  const Tensor da = (c.in[0] - c.in[1]) * 2.0 * c.grad;
  return {c.needs[0] ? da : Tensor(), c.needs[1] ? neg(da) : Tensor()};
}

}  // namespace

void add_activation_ops(OpList& ops) {
  ops.push_back(unary(OpKind::LeakyRelu, "leaky_relu", "leaky_relu(x, negative_slope = 0.01)",
                      "x where x > 0, else x * negative_slope", leaky_relu_grad,
                      "dx = leaky_relu_backward(g, x, negative_slope)"));
  ops.push_back(backward_op(
      OpKind::LeakyReluBackward, "leaky_relu_backward", "leaky_relu_backward(g, x, negative_slope)",
      "g where x > 0, else g * negative_slope: leaky_relu's gradient fused, as PyTorch's",
      backward_rule<leaky_back, piecewise_linear_second>,
      "dg = leaky_relu_backward(gg, x, negative_slope); dx = 0"));
  ops.push_back(unary(OpKind::Hardtanh, "hardtanh", "hardtanh(x, min_val = -1, max_val = 1)",
                      "x clamped to [min_val, max_val] (clamp's kernel; its own gradient)",
                      hardtanh_grad, "dx = hardtanh_backward(g, x, min_val, max_val)"));
  ops.push_back(backward_op(
      OpKind::HardtanhBackward, "hardtanh_backward", "hardtanh_backward(g, x, min_val, max_val)",
      "0 where x <= min_val or x >= max_val, else g (strictly inside only, unlike clamp's "
      "gradient; a NaN x passes g): hardtanh's gradient fused, as PyTorch's",
      backward_rule<hardtanh_back, piecewise_linear_second>,
      "dg = hardtanh_backward(gg, x, min_val, max_val); dx = 0"));
  ops.push_back(unary(OpKind::Elu, "elu", "elu(x, alpha = 1, input_scale = 1)",
                      "x where x > 0, else alpha * (e^(x * input_scale) - 1) (expm1)", elu_grad,
                      "dx = elu_backward(g, x, alpha, input_scale)"));
  ops.push_back(backward_op(
      OpKind::EluBackward, "elu_backward", "elu_backward(g, x, alpha, input_scale)",
      "g where x > 0 (and where x is NaN), else g * input_scale * alpha * e^(x * input_scale): "
      "elu's gradient fused, as PyTorch's",
      backward_rule<elu_back, elu_second>,
      "dg = elu_backward(gg, x, alpha, input_scale); dx = elu_backward(gg * g * input_scale, x) "
      "where x <= 0, else 0"));
  ops.push_back(unary(OpKind::Softplus, "softplus", "softplus(x, beta = 1, threshold = 20)",
                      "log(1 + e^(beta x)) / beta, evaluated as max(z, 0) + log1p(e^-|z|) "
                      "(z = beta x: no overflow); x itself where beta x > threshold",
                      softplus_grad, "dx = softplus_backward(g, x, beta, threshold)"));
  ops.push_back(backward_op(
      OpKind::SoftplusBackward, "softplus_backward", "softplus_backward(g, x, beta, threshold)",
      "g * sigmoid(beta x), g itself where beta x > threshold: softplus's gradient fused",
      backward_rule<softplus_back, softplus_second>,
      "dg = softplus_backward(gg, x, beta, threshold); dx = sigmoid_backward(gg * g * beta, "
      "sigmoid(beta x)) where beta x <= threshold, else 0"));
  ops.push_back(unary(OpKind::Hardsigmoid, "hardsigmoid", "hardsigmoid(x)",
                      "min(max(x + 3, 0), 6) / 6", hardsigmoid_grad,
                      "dx = hardsigmoid_backward(g, x)"));
  ops.push_back(
      backward_op(OpKind::HardsigmoidBackward, "hardsigmoid_backward", "hardsigmoid_backward(g, x)",
                  "g / 6 where -3 < x < 3, else 0: hardsigmoid's gradient fused, as PyTorch's",
                  backward_rule<hardsigmoid_back, piecewise_linear_second>,
                  "dg = hardsigmoid_backward(gg, x); dx = 0"));
  ops.push_back(unary(OpKind::Hardswish, "hardswish", "hardswish(x)",
                      "x * min(max(x + 3, 0), 6) / 6", hardswish_grad,
                      "dx = hardswish_backward(g, x)"));
  ops.push_back(backward_op(
      OpKind::HardswishBackward, "hardswish_backward", "hardswish_backward(g, x)",
      "0 where x < -3, g * (x / 3 + 1/2) where x <= 3, else g (also at NaN): hardswish's gradient "
      "fused, as PyTorch's",
      backward_rule<hardswish_back, hardswish_second>,
      "dg = hardswish_backward(gg, x); dx = gg * g / 3 where -3 < x < 3, else 0"));
  ops.push_back(unary(OpKind::Silu, "silu", "silu(x)", "x * sigmoid(x)", silu_grad,
                      "dx = silu_backward(g, x)"));
  ops.push_back(backward_op(
      OpKind::SiluBackward, "silu_backward", "silu_backward(g, x)",
      "g * s * (1 + x * (1 - s)), s = sigmoid(x): silu's gradient fused, as PyTorch's",
      backward_rule<silu_back, silu_second>,
      "dg = silu_backward(gg, x); dx = sigmoid_backward(gg * g, s) * (2 + x * (1 - 2 s))"));
  ops.push_back(unary(OpKind::SmoothL1, "smooth_l1", "smooth_l1(x, beta)",
                      "0.5 x^2 / beta where |x| < beta, else |x| - beta / 2: smooth_l1_loss's "
                      "element of the difference x",
                      smooth_l1_grad, "dx = smooth_l1_backward(g, x, beta)"));
  ops.push_back(backward_op(
      OpKind::SmoothL1Backward, "smooth_l1_backward", "smooth_l1_backward(g, x, beta)",
      "-g where x <= -beta, g where x >= beta, else g * x / beta (NaN passes): smooth_l1's "
      "gradient fused, as PyTorch's",
      backward_rule<smooth_l1_back, smooth_l1_second>,
      "dg = smooth_l1_backward(gg, x, beta); dx = gg * g / beta where |x| < beta, else 0"));
  ops.push_back({.kind = OpKind::SquaredDifference,
                 .name = "squared_difference",
                 .arity = 2,
                 .signature = "squared_difference(a, b)",
                 .summary = "(a - b)^2, mse_loss's element, in one pass (as torch's mse kernel)",
                 .prepare = prepare_binary,
                 .infer = infer_floating_pair,
                 .grad = squared_difference_grad,
                 .grad_doc = "da = 2 (a - b) g, db = -da (torch's mse_loss_backward)"});
  ops.push_back(unary(OpKind::Huber, "huber", "huber(x, delta)",
                      "0.5 x^2 where |x| < delta, else delta * (|x| - delta / 2): huber_loss's "
                      "element of the difference x",
                      huber_grad, "dx = huber_backward(g, x, delta)"));
  ops.push_back(backward_op(
      OpKind::HuberBackward, "huber_backward", "huber_backward(g, x, delta)",
      "-g * delta where x <= -delta, g * delta where x >= delta, else g * x (NaN passes): "
      "huber's gradient fused, as PyTorch's",
      backward_rule<huber_back, huber_second>,
      "dg = huber_backward(gg, x, delta); dx = gg * g where |x| < delta, else 0"));
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  Attrs a;
  a.activation.negative_slope = negative_slope;
  return dispatch(OpKind::LeakyRelu, {x}, a);
}
Tensor leaky_relu_backward(const Tensor& g, const Tensor& x, double negative_slope) {
  Attrs a;
  a.activation.negative_slope = negative_slope;
  return dispatch(OpKind::LeakyReluBackward, {g, x}, a);
}

namespace {
Attrs bounds(double min_val, double max_val) {
  VK_CHECK(max_val >= min_val, RuntimeError, "hardtanh: min_val (", min_val,
           ") cannot be greater than max_val (", max_val, ")");
  Attrs a;
  a.lo = Scalar(min_val);
  a.hi = Scalar(max_val);
  return a;
}
}  // namespace

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  return dispatch(OpKind::Hardtanh, {x}, bounds(min_val, max_val));
}
Tensor hardtanh_backward(const Tensor& g, const Tensor& x, double min_val, double max_val) {
  return dispatch(OpKind::HardtanhBackward, {g, x}, bounds(min_val, max_val));
}

namespace {
Attrs exp_linear(double alpha, double input_scale) {
  Attrs a;
  a.activation.alpha = alpha;
  a.activation.input_scale = input_scale;
  return a;
}
Attrs softplus_attrs(double beta, double threshold) {
  Attrs a;
  a.activation.beta = beta;
  a.activation.threshold = threshold;
  return a;
}
}  // namespace

Tensor elu(const Tensor& x, double alpha, double input_scale) {
  return dispatch(OpKind::Elu, {x}, exp_linear(alpha, input_scale));
}
Tensor elu_backward(const Tensor& g, const Tensor& x, double alpha, double input_scale) {
  return dispatch(OpKind::EluBackward, {g, x}, exp_linear(alpha, input_scale));
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return dispatch(OpKind::Softplus, {x}, softplus_attrs(beta, threshold));
}
Tensor softplus_backward(const Tensor& g, const Tensor& x, double beta, double threshold) {
  return dispatch(OpKind::SoftplusBackward, {g, x}, softplus_attrs(beta, threshold));
}
Tensor hardsigmoid(const Tensor& x) { return dispatch(OpKind::Hardsigmoid, {x}); }
Tensor hardsigmoid_backward(const Tensor& g, const Tensor& x) {
  return dispatch(OpKind::HardsigmoidBackward, {g, x});
}
Tensor hardswish(const Tensor& x) { return dispatch(OpKind::Hardswish, {x}); }
Tensor hardswish_backward(const Tensor& g, const Tensor& x) {
  return dispatch(OpKind::HardswishBackward, {g, x});
}

Tensor silu(const Tensor& x) { return dispatch(OpKind::Silu, {x}); }
Tensor silu_backward(const Tensor& g, const Tensor& x) {
  return dispatch(OpKind::SiluBackward, {g, x});
}

namespace {
// As torch's losses: smooth_l1's beta may be 0 (the l1 loss), huber's delta must be positive.
Attrs width_attrs(double width, bool may_be_zero, const char* op, const char* what) {
  VK_CHECK(width > 0.0 || (may_be_zero && width == 0.0), RuntimeError, op, ": ", what, " must be ",
           may_be_zero ? ">= 0" : "> 0", ", got ", width);
  Attrs a;
  a.activation.width = width;
  return a;
}
Attrs beta_attrs(double beta, const char* op) { return width_attrs(beta, true, op, "beta"); }
Attrs delta_attrs(double delta, const char* op) { return width_attrs(delta, false, op, "delta"); }
}  // namespace

Tensor smooth_l1(const Tensor& x, double beta) {
  return dispatch(OpKind::SmoothL1, {x}, beta_attrs(beta, "smooth_l1"));
}
Tensor smooth_l1_backward(const Tensor& g, const Tensor& x, double beta) {
  return dispatch(OpKind::SmoothL1Backward, {g, x}, beta_attrs(beta, "smooth_l1_backward"));
}
Tensor squared_difference(const Tensor& a, const Tensor& b) {
  return dispatch(OpKind::SquaredDifference, {a, b});
}
Tensor huber(const Tensor& x, double delta) {
  return dispatch(OpKind::Huber, {x}, delta_attrs(delta, "huber"));
}
Tensor huber_backward(const Tensor& g, const Tensor& x, double delta) {
  return dispatch(OpKind::HuberBackward, {g, x}, delta_attrs(delta, "huber_backward"));
}

}  // namespace vk
