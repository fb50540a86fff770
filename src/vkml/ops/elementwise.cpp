// Element-wise ops. Binary ops cast to a common dtype and broadcast by recording expand views
// first (prepare_binary), so every rule here sees operands of the output's shape; expand's own
// rule sums the gradient back over the stretched axes.
#include "vkml/ops/elementwise.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <optional>

#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

Meta infer_numeric(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(in[0].dtype() != DType::Bool, DTypeError, op, ": not defined for bool tensors");
  return {in[0].shape(), in[0].dtype()};
}

Meta infer_cast(const std::vector<Tensor>& in, const Attrs& a, std::string_view) {
  return {in[0].shape(), a.dtype};
}

Meta infer_where(const std::vector<Tensor>& in, const Attrs&, std::string_view) {
  return {in[1].shape(), in[1].dtype()};
}

// where(cond, a, b): cond must be bool; a and b take their common dtype; all three broadcast.
void prepare_where(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(in[0].dtype() == DType::Bool, DTypeError, op,
           ": the condition must be a bool tensor, got ", in[0].describe());
  DType common = result_type(in[1], in[2]);
  in[1] = cast(in[1], common);
  in[2] = cast(in[2], common);
  prepare_broadcast(in, a, op);
}

// clamp computes in the result type of x and its bounds, as torch.clamp: an int64 x with an int
// bound stays int64, with a float bound (2.0 as much as 2.5) it is float32; a bool x with an int
// bound is int64. Each bound must then fit that dtype.
void prepare_clamp(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  DType dt = in[0].dtype();
  if (a.lo) dt = result_type(dt, *a.lo);
  if (a.hi) dt = result_type(dt, *a.hi);
  VK_CHECK(dt != DType::Bool, NotImplementedError, op,
           ": not implemented for bool tensors (as in PyTorch)");
  VK_DISPATCH_STORAGE(dt, op, {
    if (a.lo) (void)a.lo->to<T>(op);
    if (a.hi) (void)a.hi->to<T>(op);
  });
  if (dt != in[0].dtype()) in[0] = cast(in[0], dt);
}

// Arithmetic on bool: + is `or` and * is `and` (bool stays bool), - with any bool operand is an
// error (RuntimeError, as PyTorch), and //, % and ** have no bool kernel (NotImplementedError,
// as PyTorch).
Meta infer_add_mul(const std::vector<Tensor>& in, const Attrs&, std::string_view) {
  return {in[0].shape(), in[0].dtype()};
}
constexpr std::string_view kBoolSub =
    ": subtraction with a bool operand is not supported (as in PyTorch); to invert a mask use ~, "
    "for the difference of two masks use ^";
void prepare_sub(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(in[0].dtype() != DType::Bool && in[1].dtype() != DType::Bool, RuntimeError, op, kBoolSub,
           " (got ", in[0].describe(), " - ", in[1].describe(), ")");
  prepare_binary(in, a, op);
}
Meta infer_no_bool(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(in[0].dtype() != DType::Bool, NotImplementedError, op,
           ": not implemented for bool tensors (as in PyTorch)");
  return {in[0].shape(), in[0].dtype()};
}

constexpr std::string_view kBoolResult = "boolean result: not differentiable";
constexpr std::string_view kStep = "dx = 0: zero almost everywhere (step function), as PyTorch";
constexpr double kTwoOverSqrtPi = std::numbers::inv_sqrtpi * 2;                 // erf'(0)
constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;  // phi(0)

Tensor scalar(Scalar v, const Tensor& like) { return scalar_like(v, like); }

// The value of a constant that is one scalar broadcast by prepare (all strides 0), if t is one
// in CPU memory (x ** 2.0); elsewhere reading it would wait for the device.
std::optional<double> constant_scalar(const Tensor& t) {
  if (t.requires_grad() || t.numel() == 0 || !values_on_host(t)) return std::nullopt;
  for (size_t d = 0; d < t.shape().size(); ++d)
    if (t.strides()[d] != 0 && t.shape()[d] != 1) return std::nullopt;
  return t.alias({}, {}, t.offset()).item();
}

// Bitwise ops take bool and integer tensors, after promotion; floats have no kernel, as PyTorch.
Meta infer_bitwise(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(!is_floating(in[0].dtype()), NotImplementedError, op, ": not implemented for ",
           dtype_name(in[0].dtype()), " tensors (as in PyTorch); it takes bool or integer tensors");
  return {in[0].shape(), in[0].dtype()};
}

OpDef bitwise_op(OpKind kind, std::string_view name, std::string_view summary) {
  return {.kind = kind,
          .name = name,
          .arity = 2,
          .signature = "(a, b)",
          .summary = summary,
          .prepare = prepare_binary,
          .infer = infer_bitwise,
          .grad_doc = "bool or integer result: not differentiable"};
}

OpDef compare_op(OpKind kind, std::string_view name, std::string_view summary) {
  return {.kind = kind,
          .name = name,
          .arity = 2,
          .signature = "(a, b) -> bool",
          .summary = summary,
          .prepare = prepare_binary,
          .infer = infer_bool_like_first,
          .grad_doc = kBoolResult};
}

// Keeps integer dtypes; bool is a DTypeError.
OpDef numeric_unary(OpKind kind, std::string_view name, std::string_view signature,
                    std::string_view summary, Grads (*grad)(const GradCtx&),
                    std::string_view grad_doc) {
  return {.kind = kind,
          .name = name,
          .arity = 1,
          .signature = signature,
          .summary = summary,
          .infer = infer_numeric,
          .grad = grad,
          .grad_doc = grad_doc};
}

Grads step_grad(const GradCtx& c) { return {zeros_like(c.in[0])}; }

// d^2 gelu / dx^2 for the erf form: d/dx (Phi + x phi) = 2 phi + x phi' = phi(x) (2 - x^2).
Tensor gelu_erf_second_derivative(const Tensor& x) {
  Tensor x2 = x * x;
  return exp(x2 * -0.5) * kInvSqrt2Pi * (2.0 - x2);
}

Meta infer_float_binary(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(is_floating(in[0].dtype()), DTypeError, op, ": expected floating inputs, got ",
           in[0].describe(), " and ", in[1].describe());
  return {in[0].shape(), in[0].dtype()};
}

// d gelu / dx for the tanh form, y = 0.5 x (1 + t), t = tanh(k (x + c x^3)):
// 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2).
Tensor gelu_tanh_derivative(const Tensor& x) {
  constexpr double k = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, c = 0.044715;
  Tensor x2 = x * x;
  Tensor t = tanh((x + x * x2 * c) * k);
  return (t + 1.0) * 0.5 + x * (1.0 - t * t) * (x2 * (3 * c * k) + k) * 0.5;
}

// Without create_graph (grad mode off in the backward) the derivative the forward returned serves:
// it is a constant there, which is right only because nothing is recorded; with create_graph,
// gelu_backward, whose own rule gives every higher order. gelu_backward's derivative has the same
// bits, so the gradient does not depend on which path made it.
Grads gelu_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  if (c.attrs.gelu.tanh_approximation) return {c.grad * gelu_tanh_derivative(x)};
  const Tensor& d = c.output(1);
  if (d.defined() && !GradMode::is_enabled()) return {c.grad * d};
  return {gelu_backward(c.grad, x)};
}

}  // namespace

void add_elementwise_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Neg,
                 .name = "neg",
                 .arity = 1,
                 .signature = "neg(x)",
                 .summary = "-x",
                 .infer = infer_numeric,
                 .grad = [](const GradCtx& c) -> Grads { return {neg(c.grad)}; },
                 .grad_doc = "dx = -g"});
  ops.push_back(float_unary(
      OpKind::Exp, "exp", "exp(x)", "e^x",
      [](const GradCtx& c) -> Grads { return {c.grad * c.out}; }, "dx = g * out"));
  ops.push_back(float_unary(
      OpKind::Log, "log", "log(x)", "natural logarithm",
      [](const GradCtx& c) -> Grads { return {c.grad / c.in[0]}; }, "dx = g / x"));
  ops.push_back(float_unary(
      OpKind::Log1p, "log1p", "log1p(x)", "log(1 + x), accurate for small x",
      [](const GradCtx& c) -> Grads { return {c.grad / (c.in[0] + 1.0)}; }, "dx = g / (1 + x)"));
  ops.push_back(float_unary(
      OpKind::Expm1, "expm1", "expm1(x)", "e^x - 1, accurate for small x",
      [](const GradCtx& c) -> Grads { return {c.grad * (c.out + 1.0)}; }, "dx = g * (out + 1)"));
  ops.push_back(float_unary(
      OpKind::Sqrt, "sqrt", "sqrt(x)", "square root",
      [](const GradCtx& c) -> Grads { return {c.grad / (2.0 * c.out)}; }, "dx = g / (2 * out)"));
  ops.push_back(float_unary(
      OpKind::Rsqrt, "rsqrt", "rsqrt(x)", "1 / sqrt(x)",
      [](const GradCtx& c) -> Grads { return {c.grad * (c.out * c.out * c.out) * -0.5}; },
      "dx = -g * out^3 / 2"));
  ops.push_back(float_unary(
      OpKind::Reciprocal, "reciprocal", "reciprocal(x)", "1 / x (integers give float32)",
      [](const GradCtx& c) -> Grads { return {neg(c.grad * c.out * c.out)}; }, "dx = -g * out^2"));
  ops.push_back(numeric_unary(
      OpKind::Abs, "abs", "abs(x)", "|x|",
      [](const GradCtx& c) -> Grads { return {c.grad * sign(c.in[0])}; },
      "dx = g * sign(x) (0 at x = 0, as PyTorch)"));
  ops.push_back(
      numeric_unary(OpKind::Sign, "sign", "sign(x)", "-1, 0 or 1 (NaN gives 0)", step_grad, kStep));
  ops.push_back(float_unary(
      OpKind::Sin, "sin", "sin(x)", "sine",
      [](const GradCtx& c) -> Grads { return {c.grad * cos(c.in[0])}; }, "dx = g * cos(x)"));
  ops.push_back(float_unary(
      OpKind::Cos, "cos", "cos(x)", "cosine",
      [](const GradCtx& c) -> Grads { return {neg(c.grad * sin(c.in[0]))}; }, "dx = -g * sin(x)"));
  ops.push_back(float_unary(
      OpKind::Tanh, "tanh", "tanh(x)", "hyperbolic tangent",
      [](const GradCtx& c) -> Grads { return {tanh_backward(c.grad, c.out)}; },
      "dx = tanh_backward(g, out) = g * (1 - out^2)"));
  ops.push_back(float_unary(
      OpKind::Sigmoid, "sigmoid", "sigmoid(x)", "1 / (1 + e^-x)",
      [](const GradCtx& c) -> Grads { return {sigmoid_backward(c.grad, c.out)}; },
      "dx = sigmoid_backward(g, out) = g * out * (1 - out)"));
  // tanh's and sigmoid's gradients from their outputs, one pass each (the rules they replace took
  // three ops and two temporaries), as torch's tanh_backward / sigmoid_backward.
  ops.push_back({.kind = OpKind::TanhBackward,
                 .name = "tanh_backward",
                 .arity = 2,
                 .signature = "tanh_backward(g, y)",
                 .summary = "g * (1 - y^2): tanh's gradient from its output y, fused",
                 .prepare = prepare_binary,
                 .infer = infer_float_binary,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Tensor &g = c.in[0], &y = c.in[1];
                   Grads out(2);
                   if (c.needs[0]) out[0] = tanh_backward(c.grad, y);
                   if (c.needs[1]) out[1] = c.grad * g * y * -2.0;
                   return out;
                 },
                 .grad_doc = "dg = tanh_backward(gg, y); dy = -2 gg g y"});
  ops.push_back({.kind = OpKind::SigmoidBackward,
                 .name = "sigmoid_backward",
                 .arity = 2,
                 .signature = "sigmoid_backward(g, y)",
                 .summary = "g * y * (1 - y): sigmoid's gradient from its output y, fused",
                 .prepare = prepare_binary,
                 .infer = infer_float_binary,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Tensor &g = c.in[0], &y = c.in[1];
                   Grads out(2);
                   if (c.needs[0]) out[0] = sigmoid_backward(c.grad, y);
                   if (c.needs[1]) out[1] = c.grad * g * (1.0 - y * 2.0);
                   return out;
                 },
                 .grad_doc = "dg = sigmoid_backward(gg, y); dy = gg g (1 - 2 y)"});
  ops.push_back(numeric_unary(
      OpKind::Relu, "relu", "relu(x)", "max(x, 0); integers stay integers",
      // out > 0 exactly where x > 0: reading the output lets y.relu_() keep x's memory
      [](const GradCtx& c) -> Grads { return {relu_backward(c.grad, c.out)}; },
      "dx = relu_backward(g, out): g where out > 0 (x > 0), else 0 (0 at x = 0, as PyTorch)"));
  ops.push_back({.kind = OpKind::ReluBackward,
                 .name = "relu_backward",
                 .arity = 2,
                 .signature = "relu_backward(g, x)",
                 .summary = "0 where x <= 0, else g (a NaN x passes g): relu's gradient fused, as "
                            "PyTorch's threshold_backward(g, x, 0)",
                 .prepare = prepare_binary,
                 .infer = infer_float_binary,
                 .grad = [](const GradCtx& c) -> Grads {
                   Grads out(2);
                   if (c.needs[0]) out[0] = relu_backward(c.grad, c.in[1]);
                   // a step function of x: zero (as torch's, a zero tensor rather than none)
                   if (c.needs[1]) out[1] = zeros_like(c.in[1]);
                   return out;
                 },
                 .grad_doc = "dg = relu_backward(gg, x); dx = 0"});
  OpDef gelu_def = float_unary(
      OpKind::Gelu, "gelu", "gelu(x, tanh_approximation = false)",
      "x * Phi(x) with Phi the standard normal CDF; with tanh_approximation the tanh form "
      "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Output 1: d gelu / dx when "
      "attrs.gelu.with_derivative asks for it and the kernel computes it, else undefined",
      gelu_grad,
      "dx = gelu_backward(g, x) = g * (Phi(x) + x * phi(x)), phi the normal density; without "
      "create_graph, g * d where the forward also returned d = Phi(x) + x * phi(x) (output 1, the "
      "same bits); tanh form: dx = g * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * "
      "0.044715 x^2)), t = tanh(sqrt(2/pi) (x + 0.044715 x^3))");
  gelu_def.outputs = 2;
  ops.push_back(gelu_def);
  ops.push_back({.kind = OpKind::GeluBackward,
                 .name = "gelu_backward",
                 .arity = 2,
                 .signature = "gelu_backward(g, x)",
                 .summary = "g * (Phi(x) + x * phi(x)): the gradient of gelu's erf form, fused",
                 .prepare = prepare_binary,
                 .infer = infer_float_binary,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Tensor &g = c.in[0], &x = c.in[1];
                   Grads out(2);
                   if (c.needs[0]) out[0] = gelu_backward(c.grad, x);
                   if (c.needs[1]) out[1] = c.grad * g * gelu_erf_second_derivative(x);
                   return out;
                 },
                 .grad_doc = "dg = gelu_backward(gg, x); dx = gg * g * phi(x) * (2 - x^2)"});
  ops.push_back(float_unary(
      OpKind::Erf, "erf", "erf(x)", "error function",
      [](const GradCtx& c) -> Grads {
        return {c.grad * exp(neg(c.in[0] * c.in[0])) * kTwoOverSqrtPi};
      },
      "dx = g * 2 / sqrt(pi) * exp(-x^2)"));
  ops.push_back(float_unary(
      OpKind::Erfc, "erfc", "erfc(x)", "complementary error function 1 - erf(x)",
      [](const GradCtx& c) -> Grads {
        return {c.grad * exp(neg(c.in[0] * c.in[0])) * -kTwoOverSqrtPi};
      },
      "dx = -g * 2 / sqrt(pi) * exp(-x^2)"));
  ops.push_back(numeric_unary(OpKind::Floor, "floor", "floor(x)",
                              "largest integer <= x (identity on integer dtypes)", step_grad,
                              kStep));
  ops.push_back(numeric_unary(OpKind::Ceil, "ceil", "ceil(x)",
                              "smallest integer >= x (identity on integer dtypes)", step_grad,
                              kStep));
  ops.push_back(numeric_unary(OpKind::Round, "round", "round(x)",
                              "nearest integer, halves to even as PyTorch (identity on integers)",
                              step_grad, kStep));
  ops.push_back(numeric_unary(
      OpKind::Trunc, "trunc", "trunc(x)",
      "nearest integer toward zero, keeping x's sign (identity on integers)", step_grad, kStep));

  ops.push_back({.kind = OpKind::Add,
                 .name = "add",
                 .arity = 2,
                 .signature = "add(a, b)",
                 .summary = "a + b (bool + bool: or)",
                 .prepare = prepare_binary,
                 .infer = infer_add_mul,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {c.grad, c.grad};
                 },
                 .grad_doc = "da = g, db = g"});
  ops.push_back({.kind = OpKind::Sub,
                 .name = "sub",
                 .arity = 2,
                 .signature = "sub(a, b)",
                 .summary = "a - b (a bool operand is a RuntimeError, as PyTorch)",
                 .prepare = prepare_sub,
                 .infer = infer_add_mul,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {c.grad, neg(c.grad)};
                 },
                 .grad_doc = "da = g, db = -g"});
  ops.push_back({.kind = OpKind::Mul,
                 .name = "mul",
                 .arity = 2,
                 .signature = "mul(a, b)",
                 .summary = "a * b (bool * bool: and)",
                 .prepare = prepare_binary,
                 .infer = infer_add_mul,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {c.needs[0] ? c.grad * c.in[1] : Tensor(),
                           c.needs[1] ? c.grad * c.in[0] : Tensor()};
                 },
                 .grad_doc = "da = g * b, db = g * a"});
  ops.push_back({.kind = OpKind::Div,
                 .name = "div",
                 .arity = 2,
                 .signature = "div(a, b)",
                 .summary = "a / b (true division; integers give float32)",
                 .prepare = prepare_float_binary,
                 .infer = infer_same_as_first,
                 .grad = [](const GradCtx& c) -> Grads {
                   // db from a, not from out: x.div_(w) keeps x's old values (ops/inplace.cpp)
                   // and a later write into the quotient leaves the rule intact, as torch's
                   return {c.needs[0] ? c.grad / c.in[1] : Tensor(),
                           c.needs[1] ? neg(c.grad * c.in[0] / (c.in[1] * c.in[1])) : Tensor()};
                 },
                 .grad_doc = "da = g / b, db = -g * a / b^2"});
  ops.push_back({.kind = OpKind::FloorDivide,
                 .name = "floor_divide",
                 .arity = 2,
                 .signature = "floor_divide(a, b)",
                 .summary = "a // b rounded toward -inf, as Python; integers stay integer (an "
                            "integer division by zero raises)",
                 .prepare = prepare_binary,
                 .infer = infer_no_bool,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {c.needs[0] ? zeros_like(c.in[0]) : Tensor(),
                           c.needs[1] ? zeros_like(c.in[1]) : Tensor()};
                 },
                 .grad_doc = "da = db = 0: a step function of both (zero almost everywhere)"});
  ops.push_back({.kind = OpKind::Remainder,
                 .name = "remainder",
                 .arity = 2,
                 .signature = "remainder(a, b)",
                 .summary = "a - b * floor_divide(a, b): Python's %, with the sign of b",
                 .prepare = prepare_binary,
                 .infer = infer_no_bool,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {c.needs[0] ? c.grad : Tensor(),
                           c.needs[1] ? neg(c.grad * floor_divide(c.in[0], c.in[1])) : Tensor()};
                 },
                 .grad_doc = "da = g, db = -g * floor_divide(a, b)"});
  ops.push_back(
      {.kind = OpKind::Pow,
       .name = "pow",
       .arity = 2,
       .signature = "pow(a, b)",
       .summary = "a^b; integer tensors stay integer (exact, by squaring), as PyTorch",
       .prepare = prepare_binary,
       .infer = infer_no_bool,
       .grad = [](const GradCtx& c) -> Grads {
         const Tensor &a = c.in[0], &b = c.in[1], &g = c.grad;
         Tensor zero = scalar(0.0, g), da, db;
         if (c.needs[0]) {
           if (auto e = constant_scalar(b))  // x ** 2.0: scalar ops, no full tensors of 2.0
             da = *e == 0 ? zeros_like(g) : g * (pow(a, *e - 1) * *e);
           else
             da = where(eq(b, scalar(0.0, b)), zero, g * b * pow(a, b - 1.0));
         }
         if (c.needs[1]) {
           Tensor d = g * c.out * log(a);
           db = where(eq(a, scalar(0.0, a)), where(ge(b, scalar(0.0, b)), zero, d), d);
         }
         return {da, db};
       },
       .grad_doc =
           "da = g * b * a^(b-1), 0 where b == 0 (so a = 0 gives finite gradients; a "
           "constant scalar b in CPU memory is read once: g * (b * a^(b-1)) with scalar ops); "
           "db = g * out * log(a), 0 where a == 0 and b >= 0 (as PyTorch)"});
  ops.push_back(
      {.kind = OpKind::Maximum,
       .name = "maximum",
       .arity = 2,
       .signature = "maximum(a, b)",
       .summary = "element-wise larger of a and b; NaN propagates",
       .prepare = prepare_binary,
       .infer = infer_same_as_first,
       .grad = [](const GradCtx& c) -> Grads {
         const Tensor &a = c.in[0], &b = c.in[1];
         Tensor zero = scalar(0.0, c.grad);
         Tensor split = where(eq(a, b), c.grad * 0.5, c.grad);
         return {c.needs[0] ? where(lt(a, b), zero, split) : Tensor(),
                 c.needs[1] ? where(gt(a, b), zero, split) : Tensor()};
       },
       .grad_doc = "g goes to the larger operand; ties split it half and half (as PyTorch)"});
  ops.push_back(
      {.kind = OpKind::Minimum,
       .name = "minimum",
       .arity = 2,
       .signature = "minimum(a, b)",
       .summary = "element-wise smaller of a and b; NaN propagates",
       .prepare = prepare_binary,
       .infer = infer_same_as_first,
       .grad = [](const GradCtx& c) -> Grads {
         const Tensor &a = c.in[0], &b = c.in[1];
         Tensor zero = scalar(0.0, c.grad);
         Tensor split = where(eq(a, b), c.grad * 0.5, c.grad);
         return {c.needs[0] ? where(gt(a, b), zero, split) : Tensor(),
                 c.needs[1] ? where(lt(a, b), zero, split) : Tensor()};
       },
       .grad_doc = "g goes to the smaller operand; ties split it half and half (as PyTorch)"});
  ops.push_back(
      {.kind = OpKind::Where,
       .name = "where",
       .arity = 3,
       .signature = "where(cond, a, b)",
       .summary = "a where cond (bool) is true, else b; a and b take their common dtype and all "
                  "three broadcast together",
       .prepare = prepare_where,
       .infer = infer_where,
       .grad = [](const GradCtx& c) -> Grads {
         Tensor zero = scalar(0.0, c.grad);
         return {Tensor(), c.needs[1] ? where(c.in[0], c.grad, zero) : Tensor(),
                 c.needs[2] ? where(c.in[0], zero, c.grad) : Tensor()};
       },
       .grad_doc = "da = where(cond, g, 0), db = where(cond, 0, g); cond is a constant. The branch "
                   "not taken still gets 0 * its own gradient, so an inf/NaN there gives NaN (as "
                   "PyTorch and JAX)"});
  ops.push_back({.kind = OpKind::Clamp,
                 .name = "clamp",
                 .arity = 1,
                 .signature = "clamp(x, min, max)",
                 .summary = "min(max(x, attrs.lo), attrs.hi); a missing bound leaves that side "
                            "open; computes in the result type of x and the bounds (an int x "
                            "with a float bound is float32), as torch.clamp",
                 .prepare = prepare_clamp,
                 .infer = infer_same_as_first,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Tensor& x = c.in[0];
                   Tensor g = c.grad, zero = scalar(0.0, c.grad);
                   if (c.attrs.lo) g = where(ge(x, scalar(*c.attrs.lo, x)), g, zero);
                   if (c.attrs.hi) g = where(le(x, scalar(*c.attrs.hi, x)), g, zero);
                   return {g};
                 },
                 .grad_doc = "dx = g where min <= x <= max, else 0 (as PyTorch)"});

  ops.push_back(compare_op(OpKind::Eq, "eq", "a == b"));
  ops.push_back(compare_op(OpKind::Ne, "ne", "a != b"));
  ops.push_back(compare_op(OpKind::Lt, "lt", "a < b"));
  ops.push_back(compare_op(OpKind::Le, "le", "a <= b"));
  ops.push_back(compare_op(OpKind::Gt, "gt", "a > b"));
  ops.push_back(compare_op(OpKind::Ge, "ge", "a >= b"));

  ops.push_back(
      bitwise_op(OpKind::BitwiseAnd, "bitwise_and", "a & b, bit by bit (bool: logical and)"));
  ops.push_back(
      bitwise_op(OpKind::BitwiseOr, "bitwise_or", "a | b, bit by bit (bool: logical or)"));
  ops.push_back(
      bitwise_op(OpKind::BitwiseXor, "bitwise_xor", "a ^ b, bit by bit (bool: logical xor)"));

  ops.push_back({.kind = OpKind::Cast,
                 .name = "cast",
                 .arity = 1,
                 .signature = "cast(x, dtype)",
                 .summary = "x converted to another dtype",
                 .infer = infer_cast,
                 .grad = [](const GradCtx& c) -> Grads { return {cast(c.grad, c.in[0].dtype())}; },
                 .grad_doc = "dx = g cast back to x's dtype"});
}

Tensor neg(const Tensor& x) { return dispatch(OpKind::Neg, {x}); }
Tensor exp(const Tensor& x) { return dispatch(OpKind::Exp, {x}); }
Tensor log(const Tensor& x) { return dispatch(OpKind::Log, {x}); }
Tensor log1p(const Tensor& x) { return dispatch(OpKind::Log1p, {x}); }
Tensor expm1(const Tensor& x) { return dispatch(OpKind::Expm1, {x}); }
Tensor sqrt(const Tensor& x) { return dispatch(OpKind::Sqrt, {x}); }
Tensor rsqrt(const Tensor& x) { return dispatch(OpKind::Rsqrt, {x}); }
Tensor reciprocal(const Tensor& x) { return dispatch(OpKind::Reciprocal, {x}); }
Tensor abs(const Tensor& x) { return dispatch(OpKind::Abs, {x}); }
Tensor sign(const Tensor& x) { return dispatch(OpKind::Sign, {x}); }
Tensor sin(const Tensor& x) { return dispatch(OpKind::Sin, {x}); }
Tensor cos(const Tensor& x) { return dispatch(OpKind::Cos, {x}); }
Tensor tanh(const Tensor& x) { return dispatch(OpKind::Tanh, {x}); }
Tensor sigmoid(const Tensor& x) { return dispatch(OpKind::Sigmoid, {x}); }
Tensor relu(const Tensor& x) { return dispatch(OpKind::Relu, {x}); }
Tensor gelu(const Tensor& x, bool tanh_approximation) {
  Attrs a;
  a.gelu.tanh_approximation = tanh_approximation;
  // The derivative along with the value when a graph will be recorded (the rule's one pass; it
  // lives as long as the graph, one more tensor of x's size). Not for the narrow dtypes, whose
  // gradient gelu_backward rounds once from float.
  a.gelu.with_derivative = !tanh_approximation && GradMode::is_enabled() && x.requires_grad() &&
                           (x.dtype() == DType::Float32 || x.dtype() == DType::Float64);
  return dispatch(OpKind::Gelu, {x}, a);
}
Tensor tanh_backward(const Tensor& g, const Tensor& y) {
  return dispatch(OpKind::TanhBackward, {g, y});
}
Tensor sigmoid_backward(const Tensor& g, const Tensor& y) {
  return dispatch(OpKind::SigmoidBackward, {g, y});
}
Tensor relu_backward(const Tensor& g, const Tensor& x) {
  return dispatch(OpKind::ReluBackward, {g, x});
}
Tensor gelu_backward(const Tensor& g, const Tensor& x) {
  return dispatch(OpKind::GeluBackward, {g, x});
}
Tensor erf(const Tensor& x) { return dispatch(OpKind::Erf, {x}); }
Tensor erfc(const Tensor& x) { return dispatch(OpKind::Erfc, {x}); }
Tensor floor(const Tensor& x) { return dispatch(OpKind::Floor, {x}); }
Tensor ceil(const Tensor& x) { return dispatch(OpKind::Ceil, {x}); }
Tensor round(const Tensor& x) { return dispatch(OpKind::Round, {x}); }
Tensor trunc(const Tensor& x) { return dispatch(OpKind::Trunc, {x}); }
Tensor pow(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Pow, {a, b}); }
Tensor pow(const Tensor& a, Scalar exponent) {
  // bool ** True is a copy, bool ** False all true: PyTorch's special cases of a scalar exponent
  // (there is no bool pow kernel, and bool ** bool tensor raises).
  if (a.dtype() == DType::Bool && exponent.is_bool())
    return exponent.to_bool() ? clone(a) : ones_like(a);
  // As PyTorch: 2 ** -1 has no integer result (Python gives the float 0.5); a tensor of
  // exponents is computed (1 / base^-e truncated: 0 but for bases 1 and -1).
  VK_CHECK(!(is_integral(a.dtype()) && exponent.is_integral() && exponent.to_double() < 0),
           RuntimeError, "pow: Integers to negative integer powers are not allowed.");
  return pow(a, scalar_like(exponent, a, "pow"));
}
Tensor maximum(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Maximum, {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Minimum, {a, b}); }
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return dispatch(OpKind::Where, {cond, a, b});
}
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  Attrs a;
  a.lo = min;
  a.hi = max;
  return dispatch(OpKind::Clamp, {x}, a);
}

Tensor lt(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Lt, {a, b}); }
Tensor le(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Le, {a, b}); }
Tensor gt(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Gt, {a, b}); }
Tensor ge(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Ge, {a, b}); }
Tensor add(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Add, {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Sub, {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Mul, {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Div, {a, b}); }
Tensor floor_divide(const Tensor& a, const Tensor& b) {
  return dispatch(OpKind::FloorDivide, {a, b});
}
Tensor remainder(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Remainder, {a, b}); }
Tensor bitwise_and(const Tensor& a, const Tensor& b) {
  return dispatch(OpKind::BitwiseAnd, {a, b});
}
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return dispatch(OpKind::BitwiseOr, {a, b}); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) {
  return dispatch(OpKind::BitwiseXor, {a, b});
}
Tensor eq(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Eq, {a, b}); }
Tensor ne(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Ne, {a, b}); }

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Attrs a;
  a.dtype = dtype;
  return dispatch(OpKind::Cast, {x}, a);
}

Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, scalar_like(b, a, "add")); }
Tensor operator-(const Tensor& a, Scalar b) {
  VK_CHECK(!b.is_bool(), RuntimeError, "sub", kBoolSub);
  return sub(a, scalar_like(b, a, "sub"));
}
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, scalar_like(b, a, "mul")); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, scalar_like(b, a, "div")); }
Tensor operator+(Scalar a, const Tensor& b) { return add(scalar_like(a, b, "add"), b); }
Tensor operator-(Scalar a, const Tensor& b) {
  VK_CHECK(!a.is_bool(), RuntimeError, "sub", kBoolSub);
  return sub(scalar_like(a, b, "sub"), b);
}
Tensor operator*(Scalar a, const Tensor& b) { return mul(scalar_like(a, b, "mul"), b); }
Tensor operator/(Scalar a, const Tensor& b) { return div(scalar_like(a, b, "div"), b); }

}  // namespace vk
