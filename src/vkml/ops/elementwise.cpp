// Element-wise ops. Binary ops cast to a common dtype and broadcast by recording expand views
// first (prepare_binary), so every rule here sees operands of the output's shape; expand's own
// rule sums the gradient back over the stretched axes.
#include "vkml/ops/elementwise.h"

#include <cmath>

#include "vkml/backend/cpu/elementwise.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/op.h"
#include "vkml/ops/todo.h"

namespace vk {
namespace {

Meta infer_numeric(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(in[0].dtype() != DType::Bool, DTypeError, op, ": not defined for bool tensors");
  return {in[0].shape(), in[0].dtype()};
}

Meta infer_cast(const std::vector<Tensor>& in, const Attrs& a, std::string_view) {
  return {in[0].shape(), a.dtype};
}

constexpr std::string_view kBoolResult = "boolean result: not differentiable";

OpDef compare_op(OpKind kind, std::string_view name, std::string_view summary,
                 VK_KERNEL((*kernel))) {
  return {.kind = kind, .name = name, .arity = 2, .signature = "(a, b) -> bool",
          .summary = summary, .prepare = prepare_binary, .infer = infer_bool_like_first,
          .cpu = kernel, .grad_doc = kBoolResult};
}

}  // namespace

void add_elementwise_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Neg, .name = "neg", .arity = 1, .signature = "neg(x)",
                 .summary = "-x", .infer = infer_numeric, .cpu = cpu::neg,
                 .grad = [](const GradCtx& c) -> Grads { return {neg(c.grad)}; },
                 .grad_doc = "dx = -g"});
  ops.push_back({.kind = OpKind::Exp, .name = "exp", .arity = 1, .signature = "exp(x)",
                 .summary = "e^x", .prepare = prepare_float_unary, .infer = infer_same_as_first,
                 .cpu = cpu::exp,
                 .grad = [](const GradCtx& c) -> Grads { return {c.grad * c.out}; },
                 .grad_doc = "dx = g * out"});
  for (auto [kind, name] : {std::pair{OpKind::Log, "log"}, {OpKind::Log1p, "log1p"},
                            {OpKind::Expm1, "expm1"}, {OpKind::Sqrt, "sqrt"},
                            {OpKind::Rsqrt, "rsqrt"}, {OpKind::Reciprocal, "reciprocal"},
                            {OpKind::Abs, "abs"}, {OpKind::Sign, "sign"}, {OpKind::Sin, "sin"},
                            {OpKind::Cos, "cos"}, {OpKind::Tanh, "tanh"},
                            {OpKind::Sigmoid, "sigmoid"}, {OpKind::Relu, "relu"},
                            {OpKind::Gelu, "gelu"}, {OpKind::Erf, "erf"}, {OpKind::Erfc, "erfc"},
                            {OpKind::Floor, "floor"}, {OpKind::Ceil, "ceil"},
                            {OpKind::Round, "round"}})
    ops.push_back(todo_op(kind, name, 1));

  ops.push_back({.kind = OpKind::Add, .name = "add", .arity = 2, .signature = "add(a, b)",
                 .summary = "a + b", .prepare = prepare_binary, .infer = infer_numeric,
                 .cpu = cpu::add,
                 .grad = [](const GradCtx& c) -> Grads { return {c.grad, c.grad}; },
                 .grad_doc = "da = g, db = g"});
  ops.push_back({.kind = OpKind::Sub, .name = "sub", .arity = 2, .signature = "sub(a, b)",
                 .summary = "a - b", .prepare = prepare_binary, .infer = infer_numeric,
                 .cpu = cpu::sub,
                 .grad = [](const GradCtx& c) -> Grads { return {c.grad, neg(c.grad)}; },
                 .grad_doc = "da = g, db = -g"});
  ops.push_back({.kind = OpKind::Mul, .name = "mul", .arity = 2, .signature = "mul(a, b)",
                 .summary = "a * b", .prepare = prepare_binary, .infer = infer_numeric,
                 .cpu = cpu::mul,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {c.needs[0] ? c.grad * c.in[1] : Tensor(),
                           c.needs[1] ? c.grad * c.in[0] : Tensor()};
                 },
                 .grad_doc = "da = g * b, db = g * a"});
  ops.push_back({.kind = OpKind::Div, .name = "div", .arity = 2, .signature = "div(a, b)",
                 .summary = "a / b (true division; integers give float32)",
                 .prepare = prepare_float_binary, .infer = infer_same_as_first, .cpu = cpu::div,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {c.needs[0] ? c.grad / c.in[1] : Tensor(),
                           c.needs[1] ? neg(c.grad * c.out / c.in[1]) : Tensor()};
                 },
                 .grad_doc = "da = g / b, db = -g * a / b^2 = -g * out / b"});
  for (auto [kind, name] : {std::pair{OpKind::Pow, "pow"}, {OpKind::Maximum, "maximum"},
                            {OpKind::Minimum, "minimum"}})
    ops.push_back(todo_op(kind, name, 2));
  ops.push_back(todo_op(OpKind::Where, "where", 3));
  ops.push_back(todo_op(OpKind::Clamp, "clamp", 1));

  ops.push_back(compare_op(OpKind::Eq, "eq", "a == b", cpu::eq));
  ops.push_back(compare_op(OpKind::Ne, "ne", "a != b", cpu::ne));
  for (auto [kind, name] : {std::pair{OpKind::Lt, "lt"}, {OpKind::Le, "le"}, {OpKind::Gt, "gt"},
                            {OpKind::Ge, "ge"}})
    ops.push_back(todo_op(kind, name, 2));

  ops.push_back({.kind = OpKind::Cast, .name = "cast", .arity = 1, .signature = "cast(x, dtype)",
                 .summary = "x converted to another dtype", .infer = infer_cast, .cpu = cpu::cast,
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
  a.flag = tanh_approximation;
  return dispatch(OpKind::Gelu, {x}, a);
}
Tensor erf(const Tensor& x) { return dispatch(OpKind::Erf, {x}); }
Tensor erfc(const Tensor& x) { return dispatch(OpKind::Erfc, {x}); }
Tensor floor(const Tensor& x) { return dispatch(OpKind::Floor, {x}); }
Tensor ceil(const Tensor& x) { return dispatch(OpKind::Ceil, {x}); }
Tensor round(const Tensor& x) { return dispatch(OpKind::Round, {x}); }
Tensor pow(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Pow, {a, b}); }
Tensor pow(const Tensor& a, double exponent) { return pow(a, scalar_like(exponent, a)); }
Tensor maximum(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Maximum, {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return dispatch(OpKind::Minimum, {a, b}); }
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return dispatch(OpKind::Where, {cond, a, b});
}
Tensor clamp(const Tensor& x, double min, double max) {
  Attrs a;
  a.scalar = min;
  a.scalar2 = max;
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
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(b, a)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar_like(b, a)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar_like(b, a)); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar_like(b, a)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(a, b), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar_like(a, b), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar_like(a, b), b); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_like(a, b), b); }

}  // namespace vk
