// Bindings: Element-wise ops (ops/elementwise.cpp): unary math, arithmetic and comparisons with
// PyTorch's operands, where/clamp/masked_fill, logical reductions and float classification.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_elementwise(nb::module_& m, nb::class_<Tensor>& c) {
  // ---- unary ----
  VKPY_UNARY("neg", vk::neg(x));
  VKPY_UNARY("negative", vk::neg(x));
  VKPY_UNARY("exp", vk::exp(x));
  VKPY_UNARY("log", vk::log(x));
  VKPY_UNARY("log1p", vk::log1p(x));
  VKPY_UNARY("expm1", vk::expm1(x));
  VKPY_UNARY("sqrt", vk::sqrt(x));
  VKPY_UNARY("rsqrt", vk::rsqrt(x));
  VKPY_UNARY("reciprocal", vk::reciprocal(x));
  VKPY_UNARY("abs", vk::abs(x));
  VKPY_UNARY("sign", vk::sign(x));
  VKPY_UNARY("sin", vk::sin(x));
  VKPY_UNARY("cos", vk::cos(x));
  VKPY_UNARY("tanh", vk::tanh(x));
  VKPY_UNARY("sigmoid", vk::sigmoid(x));
  VKPY_UNARY("relu", vk::relu(x));
  VKPY_UNARY("erf", vk::erf(x));
  VKPY_UNARY("erfc", vk::erfc(x));
  VKPY_UNARY("floor", vk::floor(x));
  VKPY_UNARY("ceil", vk::ceil(x));
  VKPY_UNARY("round", vk::round(x));
  // torch's square is pow(x, 2): a bool tensor gives int64 (x * x of bools would be their and)
  VKPY_UNARY("square", x.dtype() == vk::DType::Bool
                           ? vk::mul(vk::cast(x, vk::DType::Int64), vk::cast(x, vk::DType::Int64))
                           : vk::mul(x, x));
  both(
      m, c, "gelu",
      [](const Tensor& x, const std::string& approximate) {
        VK_CHECK(approximate == "none" || approximate == "tanh", RuntimeError,
                 "gelu(): approximate must be 'none' or 'tanh', got '", approximate, "'");
        return without_gil(heavy(x), [&] { return vk::gelu(x, approximate == "tanh"); });
      },
      "approximate"_a = "none");

  // ---- binary ----
  auto other_of = [](const Tensor& x, nb::handle o, const char* op) {
    return operand_or_raise(o, x, op);
  };
  VKPY_BINARY("mul", vk::mul(x, y));
  VKPY_BINARY("multiply", vk::mul(x, y));
  VKPY_BINARY("maximum", vk::maximum(x, y));
  VKPY_BINARY("minimum", vk::minimum(x, y));
  VKPY_BINARY("bitwise_and", vk::bitwise_and(x, y));
  VKPY_BINARY("bitwise_or", vk::bitwise_or(x, y));
  VKPY_BINARY("bitwise_xor", vk::bitwise_xor(x, y));
  // Comparisons: exact for any int operand (compare_operands).
#define VKPY_COMPARE(NAME, FN)                                                             \
  both(                                                                                    \
      m, c, NAME,                                                                          \
      [](const Tensor& x, nb::handle other) {                                              \
        auto xy = compare_operands(x, other, NAME);                                        \
        if (!xy) throw nb::type_error(NAME ": expected a tensor, a number or array data"); \
        const auto& [a, b] = *xy;                                                          \
        return without_gil(heavy(a, b), [&] { return FN(a, b); });                         \
      },                                                                                   \
      "other"_a)
  VKPY_COMPARE("eq", vk::eq);
  VKPY_COMPARE("ne", vk::ne);
  VKPY_COMPARE("lt", vk::lt);
  VKPY_COMPARE("le", vk::le);
  VKPY_COMPARE("gt", vk::gt);
  VKPY_COMPARE("ge", vk::ge);
  VKPY_COMPARE("greater", vk::gt);
  VKPY_COMPARE("less", vk::lt);
#undef VKPY_COMPARE
  both(
      m, c, "add",
      [other_of](const Tensor& x, nb::handle other, nb::handle alpha) {
        Tensor y = scaled_by_alpha(x, other_of(x, other, "add"), to_scalar(alpha, "add"), "add");
        return without_gil(heavy(x, y), [&] { return vk::add(x, y); });
      },
      "other"_a, nb::kw_only(), "alpha"_a = 1);
  both(
      m, c, "sub",
      [other_of](const Tensor& x, nb::handle other, nb::handle alpha) {
        Tensor y = scaled_by_alpha(x, other_of(x, other, "sub"), to_scalar(alpha, "sub"), "sub");
        return without_gil(heavy(x, y), [&] { return vk::sub(x, y); });
      },
      "other"_a, nb::kw_only(), "alpha"_a = 1);
  both(
      m, c, "subtract",
      [other_of](const Tensor& x, nb::handle other) {
        return vk::sub(x, other_of(x, other, "subtract"));
      },
      "other"_a);
  auto divide = [other_of](const Tensor& x, nb::handle other, std::optional<std::string> mode) {
    Tensor y = other_of(x, other, "div");
    return without_gil(heavy(x, y), [&] { return divide_rounded(x, y, mode); });
  };
  both(
      m, c, "floor_divide",
      [other_of](const Tensor& x, nb::handle other) {
        return vk::floor_divide(x, other_of(x, other, "floor_divide"));
      },
      "other"_a);
  both(
      m, c, "remainder",
      [other_of](const Tensor& x, nb::handle other) {
        return vk::remainder(x, other_of(x, other, "remainder"));
      },
      "other"_a);
  both(m, c, "div", divide, "other"_a, nb::kw_only(), "rounding_mode"_a = nb::none());
  both(m, c, "divide", divide, "other"_a, nb::kw_only(), "rounding_mode"_a = nb::none());
  both(
      m, c, "true_divide",
      [other_of](const Tensor& x, nb::handle other) {
        return vk::div(x, other_of(x, other, "true_divide"));
      },
      "other"_a);
  c.def(
      "pow",
      [other_of](const Tensor& x, nb::handle exponent) {
        if (std::optional<Tensor> r = pow_scalar_exponent(x, exponent)) return *r;
        Tensor y = other_of(x, exponent, "pow");
        return without_gil(heavy(x, y), [&] { return vk::pow(x, y); });
      },
      "exponent"_a);
  m.def(
      "pow",
      [other_of](nb::handle base, nb::handle exponent) {
        if (nb::isinstance<Tensor>(base)) {
          const Tensor& x = nb::cast<const Tensor&>(base);
          if (std::optional<Tensor> r = pow_scalar_exponent(x, exponent)) return *r;
          return vk::pow(x, other_of(x, exponent, "pow"));
        }
        if (!nb::isinstance<Tensor>(exponent))
          throw nb::type_error("pow: expected a tensor as input or exponent");
        const Tensor& e = nb::cast<const Tensor&>(exponent);
        return vk::pow(other_of(e, base, "pow"), e);
      },
      "input"_a, "exponent"_a);
  m.def(
      "equal",
      [](const Tensor& a, const Tensor& b) {
        if (a.shape() != b.shape()) return false;
        for (double v : vk::to_vector(vk::eq(a, b)))
          if (v == 0.0) return false;
        return true;
      },
      "input"_a, "other"_a, "True when both tensors have the same shape and elements.");

  // ---- where / clamp / masked_fill ----
  m.def(
      "where",
      [](const Tensor& cond, nb::handle x, nb::handle y) {
        Tensor a, b;
        std::optional<vk::Scalar> sx, sy;
        if (nb::isinstance<Tensor>(x)) {
          a = nb::cast<Tensor>(x);
          b = operand_or_raise(y, a, "where");
        } else if (nb::isinstance<Tensor>(y)) {
          b = nb::cast<Tensor>(y);
          a = operand_or_raise(x, b, "where");
        } else if ((sx = to_scalar_opt(x, "where")) && (sy = to_scalar_opt(y, "where"))) {
          // two numbers: the higher kind's default dtype (where(c, 1, 2.5) is float32)
          DType dt = vk::result_type(*sx, *sy);
          a = vk::scalar_tensor(*sx, dt, "where");
          b = vk::scalar_tensor(*sy, dt, "where");
        } else {
          a = as_tensor(x, DType::Float32);
          b = as_tensor(y, DType::Float32);
        }
        return without_gil(heavy(a, b), [&] { return vk::where(cond, a, b); });
      },
      "condition"_a, "input"_a, "other"_a);
  c.def(
      "where",
      [](const Tensor& x, const Tensor& cond, nb::handle y) {
        return vk::where(cond, x, operand_or_raise(y, x, "where"));
      },
      "condition"_a, "other"_a);
  both(
      m, c, "masked_fill",
      [](const Tensor& x, const Tensor& mask, nb::handle value) {
        // The result keeps x's dtype; a number converts as fill_ does (2**40 into int32 raises).
        Tensor v =
            nb::isinstance<Tensor>(value)
                ? vk::cast(nb::cast<const Tensor&>(value), x.dtype())
                : vk::scalar_tensor(to_scalar(value, "masked_fill"), x.dtype(), "masked_fill");
        return without_gil(heavy(x), [&] { return vk::where(mask, v, x); });
      },
      "mask"_a, "value"_a);
  both(m, c, "clamp", clamp_any, "min"_a = nb::none(), "max"_a = nb::none());
  both(m, c, "clip", clamp_any, "min"_a = nb::none(), "max"_a = nb::none());

  // ---- logical reductions and float classification (bool results: no graph) ----
  auto any_of = [](const Tensor& x, nb::handle dim, bool keepdim) {
    vk::NoGradGuard ng;
    Tensor nz =
        vk::cast(x.dtype() == DType::Bool ? x : vk::ne(x, vk::zeros({}, x.dtype())), DType::Int64);
    return vk::ne(vk::sum(nz, to_dims(dim), keepdim), vk::zeros({}, DType::Int64));
  };
  both(m, c, "any", any_of, "dim"_a = nb::none(), "keepdim"_a = false);
  both(
      m, c, "all",
      [](const Tensor& x, nb::handle dim, bool keepdim) {
        vk::NoGradGuard ng;
        Tensor zero = vk::cast(x.dtype() == DType::Bool ? vk::eq(x, vk::zeros({}, DType::Bool))
                                                        : vk::eq(x, vk::zeros({}, x.dtype())),
                               DType::Int64);
        return vk::eq(vk::sum(zero, to_dims(dim), keepdim), vk::zeros({}, DType::Int64));
      },
      "dim"_a = nb::none(), "keepdim"_a = false);
  both(m, c, "isnan", [](const Tensor& x) {
    vk::NoGradGuard ng;
    return vk::ne(x, x);
  });
  both(m, c, "isinf", [](const Tensor& x) {
    vk::NoGradGuard ng;
    if (!vk::is_floating(x.dtype())) return vk::ne(x, x);
    return vk::eq(vk::abs(x), vk::full({}, kInf, x.dtype()));
  });
  both(m, c, "isfinite", [](const Tensor& x) {
    vk::NoGradGuard ng;
    if (!vk::is_floating(x.dtype())) return vk::eq(x, x);
    return vk::eq(vk::sub(x, x), vk::zeros({}, x.dtype()));  // x - x is NaN for inf and NaN
  });
  c.def("__contains__", [](const Tensor& x, nb::handle element) {
    auto xe = compare_operands(x, element, "in");
    if (!xe) throw nb::type_error("'in' expects a tensor or a number");
    vk::NoGradGuard ng;
    return vk::sum(vk::cast(vk::eq(xe->first, xe->second), DType::Int64)).item() > 0;
  });
  m.def(
      "tanh_backward",
      [](const Tensor& g, const Tensor& y) {
        return without_gil(heavy(g), [&] { return vk::tanh_backward(g, y); });
      },
      "grad"_a, "output"_a);
  m.def(
      "sigmoid_backward",
      [](const Tensor& g, const Tensor& y) {
        return without_gil(heavy(g), [&] { return vk::sigmoid_backward(g, y); });
      },
      "grad"_a, "output"_a);
  m.def(
      "relu_backward",
      [](const Tensor& g, const Tensor& x) {
        return without_gil(heavy(g), [&] { return vk::relu_backward(g, x); });
      },
      "grad"_a, "input"_a);
  m.def(
      "gelu_backward",
      [](const Tensor& g, const Tensor& x) {
        return without_gil(heavy(g), [&] { return vk::gelu_backward(g, x); });
      },
      "grad"_a, "input"_a);
}

}  // namespace vkpy
