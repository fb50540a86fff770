// The math family (issue #15): torch's element-wise math beyond elementwise.cpp's, each with its
// own kernel where a composite of table ops would lose accuracy (the inverse functions near
// their domain's edges, lgamma near its roots, erfinv near +-1). Every rule is made of forward
// ops; polygamma's rule is polygamma of the next order, so derivatives of any order exist.
#include "vkml/ops/math.h"

#include <numbers>

#include "vkml/ops/composite.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"

namespace vk {
namespace {

Meta infer_fmod(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(in[0].dtype() != DType::Bool, NotImplementedError, op,
           ": not implemented for bool tensors (as in PyTorch)");
  return {in[0].shape(), in[0].dtype()};
}

constexpr double kSqrtPiOver2 = 0.886226925452758;  // 1 / erfinv'(0)

Grads tan_grad(const GradCtx& c) { return {c.grad * (c.out * c.out + 1.0)}; }
Grads asin_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  return {c.grad * rsqrt((1.0 - x) * (x + 1.0))};
}
Grads acos_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  return {neg(c.grad * rsqrt((1.0 - x) * (x + 1.0)))};
}
Grads atan_grad(const GradCtx& c) { return {c.grad / (c.in[0] * c.in[0] + 1.0)}; }
Grads sinh_grad(const GradCtx& c) { return {c.grad * cosh(c.in[0])}; }
Grads cosh_grad(const GradCtx& c) { return {c.grad * sinh(c.in[0])}; }
Grads asinh_grad(const GradCtx& c) { return {c.grad * rsqrt(c.in[0] * c.in[0] + 1.0)}; }
Grads acosh_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  return {c.grad * rsqrt((x - 1.0) * (x + 1.0))};
}
Grads atanh_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  return {c.grad / ((1.0 - x) * (x + 1.0))};
}
Grads lgamma_grad(const GradCtx& c) { return {c.grad * digamma(c.in[0])}; }
Grads digamma_grad(const GradCtx& c) { return {c.grad * polygamma(1, c.in[0])}; }
Grads polygamma_grad(const GradCtx& c) { return {c.grad * polygamma(c.attrs.order + 1, c.in[0])}; }
Grads erfinv_grad(const GradCtx& c) { return {c.grad * exp(c.out * c.out) * kSqrtPiOver2}; }
// torch's rules (derivatives.yaml), its constants
Grads log2_grad(const GradCtx& c) { return {c.grad / (c.in[0] * std::numbers::ln2)}; }
Grads log10_grad(const GradCtx& c) { return {c.grad / (c.in[0] * std::numbers::ln10)}; }
Grads exp2_grad(const GradCtx& c) { return {c.grad * c.out * std::numbers::ln2}; }
Grads frac_grad(const GradCtx& c) { return {c.grad}; }

Grads atan2_grad(const GradCtx& c) {
  const Tensor &y = c.in[0], &x = c.in[1];
  Tensor r = reciprocal(y * y + x * x);  // (0, 0): inf, so NaN gradients, as torch
  return {c.needs[0] ? c.grad * x * r : Tensor(), c.needs[1] ? neg(c.grad * y * r) : Tensor()};
}

// Integer operands (bool and floats are refused, as torch), the result in a's dtype.
Meta infer_integer_binary(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(is_integral(in[0].dtype()), DTypeError, op, ": expects integer tensors, got ",
           dtype_name(in[0].dtype()));
  return {in[0].shape(), in[0].dtype()};
}

Meta infer_nextafter(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(is_floating(in[0].dtype()), DTypeError, op, ": expects floating tensors, got ",
           dtype_name(in[0].dtype()));
  return {in[0].shape(), in[0].dtype()};
}

OpDef integer_binary(OpKind kind, std::string_view name, std::string_view summary) {
  return {.kind = kind,
          .name = name,
          .arity = 2,
          .signature = "(a, b)",
          .summary = summary,
          .prepare = prepare_binary,
          .infer = infer_integer_binary,
          .grad_doc = "integer result: not differentiable"};
}

Grads fmod_grad(const GradCtx& c) {
  return {c.needs[0] ? c.grad : Tensor(),
          c.needs[1] ? neg(c.grad * trunc(c.in[0] / c.in[1])) : Tensor()};
}

}  // namespace

void add_math_ops(OpList& ops) {
  ops.push_back(float_unary(OpKind::Tan, "tan", "tan(x)",
                            "tangent (argument reduced exactly modulo pi/2)", tan_grad,
                            "dx = g * (1 + out^2)"));
  ops.push_back(float_unary(OpKind::Asin, "asin", "asin(x)", "inverse sine; NaN outside [-1, 1]",
                            asin_grad, "dx = g / sqrt((1 - x)(1 + x)) (inf at x = +-1, as torch)"));
  ops.push_back(float_unary(OpKind::Acos, "acos", "acos(x)", "inverse cosine; NaN outside [-1, 1]",
                            acos_grad, "dx = -g / sqrt((1 - x)(1 + x))"));
  ops.push_back(float_unary(OpKind::Atan, "atan", "atan(x)", "inverse tangent", atan_grad,
                            "dx = g / (1 + x^2)"));
  ops.push_back(float_unary(OpKind::Sinh, "sinh", "sinh(x)", "hyperbolic sine", sinh_grad,
                            "dx = g * cosh(x)"));
  ops.push_back(float_unary(OpKind::Cosh, "cosh", "cosh(x)", "hyperbolic cosine", cosh_grad,
                            "dx = g * sinh(x)"));
  ops.push_back(float_unary(OpKind::Asinh, "asinh", "asinh(x)", "inverse hyperbolic sine",
                            asinh_grad, "dx = g / sqrt(x^2 + 1)"));
  ops.push_back(float_unary(OpKind::Acosh, "acosh", "acosh(x)",
                            "inverse hyperbolic cosine; NaN below 1", acosh_grad,
                            "dx = g / sqrt((x - 1)(x + 1))"));
  ops.push_back(float_unary(OpKind::Atanh, "atanh", "atanh(x)",
                            "inverse hyperbolic tangent; +-inf at +-1, NaN outside [-1, 1]",
                            atanh_grad, "dx = g / ((1 - x)(1 + x))"));
  ops.push_back(float_unary(OpKind::Lgamma, "lgamma", "lgamma(x)",
                            "log |gamma(x)|; inf at 0 and the negative integers", lgamma_grad,
                            "dx = g * digamma(x)"));
  ops.push_back(float_unary(OpKind::Digamma, "digamma", "digamma(x)",
                            "d/dx lgamma(x); -inf at +0, inf at -0, NaN at the negative integers "
                            "(as torch)",
                            digamma_grad, "dx = g * polygamma(1, x)"));
  ops.push_back({.kind = OpKind::Polygamma,
                 .name = "polygamma",
                 .arity = 1,
                 .signature = "polygamma(n, x)",
                 .summary = "the n-th derivative of digamma (attrs.order = n >= 1; trigamma for "
                            "n = 1): (-1)^(n+1) n! sum_k (x + k)^-(n+1)",
                 .prepare = prepare_float_unary,
                 .infer = infer_same_as_first,
                 .grad = polygamma_grad,
                 .grad_doc = "dx = g * polygamma(n + 1, x)"});
  ops.push_back(float_unary(OpKind::Erfinv, "erfinv", "erfinv(x)",
                            "inverse error function; +-inf at +-1, NaN outside [-1, 1]",
                            erfinv_grad, "dx = g * sqrt(pi) / 2 * exp(out^2)"));
  ops.push_back(float_unary(OpKind::Log2, "log2", "log2(x)",
                            "base-2 logarithm (exact at the powers of two)", log2_grad,
                            "dx = g / (x * ln 2)"));
  ops.push_back(float_unary(OpKind::Log10, "log10", "log10(x)", "base-10 logarithm", log10_grad,
                            "dx = g / (x * ln 10)"));
  ops.push_back(float_unary(OpKind::Exp2, "exp2", "exp2(x)",
                            "2^x (exact at the integers, 0 and inf past the range)", exp2_grad,
                            "dx = g * out * ln 2"));
  ops.push_back(float_unary(OpKind::Frac, "frac", "frac(x)",
                            "x - trunc(x), the sign of x (NaN at +-inf); floating point only",
                            frac_grad, "dx = g (as torch)"));
  ops.push_back({.kind = OpKind::Atan2,
                 .name = "atan2",
                 .arity = 2,
                 .signature = "atan2(y, x)",
                 .summary = "the angle of the point (x, y), in [-pi, pi], with C's signed zeros "
                            "and infinities",
                 .prepare = prepare_float_binary,
                 .infer = infer_same_as_first,
                 .grad = atan2_grad,
                 .grad_doc = "dy = g * x / (x^2 + y^2), dx = -g * y / (x^2 + y^2)"});
  ops.push_back({.kind = OpKind::Fmod,
                 .name = "fmod",
                 .arity = 2,
                 .signature = "fmod(a, b)",
                 .summary = "C's fmod: a - b * trunc(a / b) computed exactly, with the sign of a; "
                            "integers stay integer (an integer division by zero raises)",
                 .prepare = prepare_binary,
                 .infer = infer_fmod,
                 .grad = fmod_grad,
                 .grad_doc = "da = g, db = -g * trunc(a / b) (as torch)"});
  ops.push_back(integer_binary(OpKind::BitwiseLeftShift, "bitwise_left_shift",
                               "a << b on the bits of a (two's complement, wrapping); 0 for a "
                               "shift below 0 or past the width, as torch"));
  ops.push_back(integer_binary(OpKind::BitwiseRightShift, "bitwise_right_shift",
                               "a >> b, arithmetic (the sign fills); a shift below 0 or past the "
                               "width gives 0 or -1 by a's sign, as torch"));
  ops.push_back(integer_binary(OpKind::Gcd, "gcd",
                               "the greatest common divisor of |a| and |b| (gcd(0, 0) = 0)"));
  ops.push_back(integer_binary(
      OpKind::Lcm, "lcm", "the least common multiple |a / gcd(a, b) * b| (0 when a or b is 0)"));
  ops.push_back({.kind = OpKind::Nextafter,
                 .name = "nextafter",
                 .arity = 2,
                 .signature = "nextafter(a, b)",
                 .summary = "the next float after a towards b (C's nextafter: b where a == b, NaN "
                            "where either is NaN)",
                 .prepare = prepare_binary,
                 .infer = infer_nextafter,
                 .grad_doc = "a step to a neighbouring float: not differentiable (as torch)"});
}

Tensor tan(const Tensor& x) { return dispatch(OpKind::Tan, {x}); }
Tensor asin(const Tensor& x) { return dispatch(OpKind::Asin, {x}); }
Tensor acos(const Tensor& x) { return dispatch(OpKind::Acos, {x}); }
Tensor atan(const Tensor& x) { return dispatch(OpKind::Atan, {x}); }
Tensor sinh(const Tensor& x) { return dispatch(OpKind::Sinh, {x}); }
Tensor cosh(const Tensor& x) { return dispatch(OpKind::Cosh, {x}); }
Tensor asinh(const Tensor& x) { return dispatch(OpKind::Asinh, {x}); }
Tensor acosh(const Tensor& x) { return dispatch(OpKind::Acosh, {x}); }
Tensor atanh(const Tensor& x) { return dispatch(OpKind::Atanh, {x}); }
Tensor lgamma(const Tensor& x) { return dispatch(OpKind::Lgamma, {x}); }
Tensor digamma(const Tensor& x) { return dispatch(OpKind::Digamma, {x}); }
Tensor polygamma(int64_t n, const Tensor& x) {
  VK_CHECK(n >= 0, RuntimeError, "polygamma(n, x) does not support negative n (got n = ", n, ")");
  if (n == 0) return digamma(x);
  Attrs a;
  a.order = n;
  return dispatch(OpKind::Polygamma, {x}, a);
}
Tensor erfinv(const Tensor& x) { return dispatch(OpKind::Erfinv, {x}); }
Tensor log2(const Tensor& x) { return dispatch(OpKind::Log2, {x}); }
Tensor log10(const Tensor& x) { return dispatch(OpKind::Log10, {x}); }
Tensor exp2(const Tensor& x) { return dispatch(OpKind::Exp2, {x}); }
Tensor frac(const Tensor& x) {
  VK_CHECK(is_floating(x.dtype()), NotImplementedError, "frac: not implemented for ",
           dtype_name(x.dtype()), " tensors (as in PyTorch)");
  return dispatch(OpKind::Frac, {x});
}
Tensor atan2(const Tensor& y, const Tensor& x) { return dispatch(OpKind::Atan2, {y, x}); }
Tensor fmod(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Fmod, {a, b}); }
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) {
  return dispatch(OpKind::BitwiseLeftShift, {a, b});
}
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) {
  return dispatch(OpKind::BitwiseRightShift, {a, b});
}
Tensor gcd(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Gcd, {a, b}); }
Tensor lcm(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Lcm, {a, b}); }
Tensor nextafter(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Nextafter, {a, b}); }

}  // namespace vk
