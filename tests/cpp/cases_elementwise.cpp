// Op cases for the element-wise family (the sweep gradchecks and gradgradchecks each in float64).
// Inputs sit away from the points where an op is not differentiable: log/sqrt on positive
// ranges, abs/relu/sign away from 0, floor/ceil/round away from integers and halves, clamp away
// from its bounds, maximum/minimum on distinct values (plus one exact tie, where the central
// difference is exactly the half/half split).
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

Tensor mask(const std::vector<double>& v, const Shape& shape) {
  return from_vector(v, shape, DType::Bool);
}

// x away from 0: |x| in [0.2, 1.4].
Tensor away_from_zero() { return values({-1.4, -0.6, 0.2, 0.9, -0.3, 1.1}, {2, 3}); }
// x away from integers and from halves.
Tensor fractional() { return values({-1.3, -0.8, 0.2, 0.7, 1.1, 2.6, -2.4, 3.85}, {2, 4}); }

RegisterOpCases elementwise_cases({
    // ---- unary ----
    {OpKind::Log, "log",
     [] {
       return V{leaf({2, 3}, 0.5, 2.0)};
     },
     [](const V& x) { return log(x[0]); }},
    {OpKind::Log1p, "log1p",
     [] {
       return V{leaf({2, 3}, -0.5, 1.0)};
     },
     [](const V& x) { return log1p(x[0]); }},
    {OpKind::Expm1, "expm1",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return expm1(x[0]); }},
    {OpKind::Sqrt, "sqrt",
     [] {
       return V{leaf({2, 3}, 0.5, 2.0)};
     },
     [](const V& x) { return sqrt(x[0]); }},
    {OpKind::Rsqrt, "rsqrt",
     [] {
       return V{leaf({2, 3}, 0.5, 2.0)};
     },
     [](const V& x) { return rsqrt(x[0]); }},
    {OpKind::Reciprocal, "reciprocal/positive",
     [] {
       return V{leaf({2, 3}, 0.5, 2.0)};
     },
     [](const V& x) { return reciprocal(x[0]); }},
    {OpKind::Reciprocal, "reciprocal/negative", [] { return V{leaf({3}, -2.0, -0.5)}; },
     [](const V& x) { return reciprocal(x[0]); }},
    {OpKind::Abs, "abs", [] { return V{away_from_zero()}; },
     [](const V& x) { return abs(x[0]) * x[0]; }},
    {OpKind::Sign, "sign", [] { return V{away_from_zero()}; },
     [](const V& x) { return sign(x[0]); }},
    {OpKind::Sign, "sign/in_product", [] { return V{away_from_zero()}; },
     [](const V& x) { return sign(x[0]) * x[0] * x[0]; }},
    {OpKind::Sin, "sin",
     [] {
       return V{leaf({2, 3}, -3.0, 3.0)};
     },
     [](const V& x) { return sin(x[0]); }},
    {OpKind::Cos, "cos",
     [] {
       return V{leaf({2, 3}, -3.0, 3.0)};
     },
     [](const V& x) { return cos(x[0]); }},
    {OpKind::Tanh, "tanh",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0)};
     },
     [](const V& x) { return tanh(x[0]); }},
    {OpKind::Tanh, "tanh/strided",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0)};
     },
     [](const V& x) { return tanh(transpose(x[0], 0, 1)); }},
    {OpKind::Sigmoid, "sigmoid",
     [] {
       return V{leaf({2, 3}, -3.0, 3.0)};
     },
     [](const V& x) { return sigmoid(x[0]); }},
    {OpKind::Sigmoid, "sigmoid/composed", [] { return V{leaf({4}, -3.0, 3.0)}; },
     [](const V& x) { return sigmoid(x[0]) * x[0]; }},  // silu
    {OpKind::Relu, "relu", [] { return V{away_from_zero()}; },
     [](const V& x) { return relu(x[0]); }},
    {OpKind::Relu, "relu/squared", [] { return V{away_from_zero()}; },
     [](const V& x) { return relu(x[0]) * relu(x[0]); }},
    {OpKind::TanhBackward, "tanh_backward",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), leaf({2, 3}, -0.9, 0.9)};
     },
     [](const V& x) { return tanh_backward(x[0], x[1]); }},
    {OpKind::SigmoidBackward, "sigmoid_backward/broadcast_g",
     [] {
       return V{leaf({3}, -2.0, 2.0), leaf({2, 3}, 0.05, 0.95)};
     },
     [](const V& x) { return sigmoid_backward(x[0], x[1]); }},
    {OpKind::ReluBackward, "relu_backward",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), away_from_zero()};
     },
     [](const V& x) { return relu_backward(x[0], x[1]); }},
    {OpKind::ReluBackward, "relu_backward/broadcast_g",
     [] {
       return V{leaf({3}, -2.0, 2.0), away_from_zero()};
     },
     [](const V& x) { return relu_backward(x[0], x[1]); }},
    {OpKind::Gelu, "gelu/erf",
     [] {
       return V{leaf({2, 3}, -3.0, 3.0)};
     },
     [](const V& x) { return gelu(x[0]); }},
    {OpKind::Gelu, "gelu/tanh",
     [] {
       return V{leaf({2, 3}, -3.0, 3.0)};
     },
     [](const V& x) { return gelu(x[0], true); }},
    {OpKind::GeluBackward, "gelu_backward",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0), leaf({2, 3}, -3.0, 3.0)};
     },
     [](const V& x) { return gelu_backward(x[0], x[1]); }},
    {OpKind::GeluBackward, "gelu_backward/broadcast_g",
     [] {
       return V{leaf({3}, -2.0, 2.0), leaf({2, 3}, -4.0, 4.0)};
     },
     [](const V& x) { return gelu_backward(x[0], x[1]); }},
    {OpKind::Erf, "erf",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0)};
     },
     [](const V& x) { return erf(x[0]); }},
    {OpKind::Erfc, "erfc",
     [] {
       return V{leaf({2, 3}, -2.0, 2.0)};
     },
     [](const V& x) { return erfc(x[0]); }},
    {OpKind::Floor, "floor", [] { return V{fractional()}; },
     [](const V& x) { return floor(x[0]); }},
    {OpKind::Floor, "floor/frac", [] { return V{fractional()}; },
     [](const V& x) { return x[0] - floor(x[0]); }},
    {OpKind::Ceil, "ceil", [] { return V{fractional()}; }, [](const V& x) { return ceil(x[0]); }},
    {OpKind::Round, "round", [] { return V{fractional()}; },
     [](const V& x) { return round(x[0]) * x[0]; }},
    {OpKind::Trunc, "trunc", [] { return V{fractional()}; },
     [](const V& x) { return trunc(x[0]) * x[0]; }},

    // ---- binary ----
    // a / b away from integers (the quotient's steps): both signs of a and of b, b broadcast.
    {OpKind::FloorDivide, "floor_divide/broadcast",
     [] {
       return V{fractional(), values({0.9, -0.7, 1.6, -2.3}, {4})};
     },
     [](const V& x) { return floor_divide(x[0], x[1]) + x[0] * x[1]; }},
    {OpKind::Remainder, "remainder/broadcast",
     [] {
       return V{fractional(), values({0.9, -0.7, 1.6, -2.3}, {4})};
     },
     [](const V& x) { return remainder(x[0], x[1]) * x[1]; }},
    {OpKind::Pow, "pow/same",
     [] {
       return V{leaf({2, 3}, 0.5, 2.0), leaf({2, 3}, -1.0, 2.0)};
     },
     [](const V& x) { return pow(x[0], x[1]); }},
    {OpKind::Pow, "pow/broadcast_row",
     [] {
       return V{leaf({2, 3}, 0.5, 2.0), leaf({3}, -1.0, 2.0)};
     },
     [](const V& x) { return pow(x[0], x[1]); }},
    {OpKind::Pow, "pow/broadcast_col",
     [] {
       return V{leaf({2, 3}, 0.5, 2.0), leaf({2, 1}, -1.0, 2.0)};
     },
     [](const V& x) { return pow(x[0], x[1]); }},
    {OpKind::Pow, "pow/broadcast_both",
     [] {
       return V{leaf({2, 1}, 0.5, 2.0), leaf({1, 3}, -1.0, 2.0)};
     },
     [](const V& x) { return pow(x[0], x[1]); }},
    {OpKind::Pow, "pow/scalar_base",
     [] {
       return V{leaf({}, 0.5, 2.0), leaf({2, 3}, -1.0, 2.0)};
     },
     [](const V& x) { return pow(x[0], x[1]); }},
    {OpKind::Pow, "pow/scalar_exponent",
     [] {
       return V{leaf({2, 3}, 0.5, 2.0)};
     },
     [](const V& x) { return pow(x[0], 2.5); }},
    {OpKind::Pow, "pow/square",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return pow(x[0], 2.0); }},
    // A negative base needs an integer exponent; the exponent is a constant (d/db = out * ln(a)
    // is NaN for a < 0, as in PyTorch).
    {OpKind::Pow, "pow/negative_base_int_exponent",
     [] {
       return V{leaf({2, 3}, -2.0, -0.5), values({2, 3, -1}, {3}, false)};
     },
     [](const V& x) { return pow(x[0], x[1]); }},
    {OpKind::Maximum, "maximum/same",
     [] {
       return V{values({0.3, -1.2, 2.0, 0.5}, {4}), values({0.1, -0.4, 2.5, -0.5}, {4})};
     },
     [](const V& x) { return maximum(x[0], x[1]); }},
    {OpKind::Maximum, "maximum/broadcast_row",
     [] {
       return V{values({0.3, -1.2, 2.0, 0.5, 1.7, -0.9}, {2, 3}), values({0.1, -0.4, 1.0}, {3})};
     },
     [](const V& x) { return maximum(x[0], x[1]) * x[0]; }},
    {OpKind::Maximum, "maximum/broadcast_both",
     [] {
       return V{values({-0.5, 0.8}, {2, 1}), values({0.1, -0.9, 1.3}, {1, 3})};
     },
     [](const V& x) { return maximum(x[0], x[1]); }},
    {OpKind::Maximum, "maximum/scalar",
     [] {
       return V{away_from_zero(), values({0.4}, {})};
     },
     [](const V& x) { return maximum(x[0], x[1]); }},
    // Exact ties: the central difference of max(a +- eps, a) is 1/2, the half/half split.
    {OpKind::Maximum, "maximum/tie",
     [] {
       return V{values({1.0, 2.0, -3.0}, {3}), values({1.0, 0.5, -3.0}, {3})};
     },
     [](const V& x) { return maximum(x[0], x[1]); }},
    {OpKind::Minimum, "minimum/broadcast_col",
     [] {
       return V{values({0.3, -1.2, 2.0, 0.5, 1.7, -0.9}, {2, 3}), values({0.2, 1.0}, {2, 1})};
     },
     [](const V& x) { return minimum(x[0], x[1]); }},
    {OpKind::Minimum, "minimum/broadcast_both",
     [] {
       return V{values({-0.5, 0.8}, {2, 1}), values({0.1, -0.9, 1.3}, {1, 3})};
     },
     [](const V& x) { return minimum(x[0], x[1]) * x[1]; }},
    {OpKind::Minimum, "minimum/scalar",
     [] {
       return V{values({-0.2}, {}), away_from_zero()};
     },
     [](const V& x) { return minimum(x[0], x[1]); }},
    {OpKind::Minimum, "minimum/tie",
     [] {
       return V{values({1.0, 2.0, -3.0}, {3}), values({1.0, 0.5, -3.0}, {3})};
     },
     [](const V& x) { return minimum(x[0], x[1]); }},
    {OpKind::Where, "where/same",
     [] {
       return V{leaf({2, 3}), leaf({2, 3}), mask({1, 0, 0, 1, 1, 0}, {2, 3})};
     },
     [](const V& x) { return where(x[2], x[0] * x[0], x[1] * x[0]); }},
    {OpKind::Where, "where/broadcast_row",
     [] {
       return V{leaf({2, 3}), leaf({3}), mask({1, 0, 0, 1, 1, 0}, {2, 3})};
     },
     [](const V& x) { return where(x[2], x[0], x[1]); }},
    {OpKind::Where, "where/broadcast_all",
     [] {
       return V{leaf({1, 3}), leaf({}), mask({1, 0}, {2, 1})};
     },
     [](const V& x) { return where(x[2], x[0], x[1]); }},
    {OpKind::Where, "where/cond_from_compare", [] { return V{away_from_zero()}; },
     [](const V& x) { return where(gt(x[0], zeros({}, DType::Float64)), x[0] * x[0], -x[0]); }},
    {OpKind::Clamp, "clamp/both",
     [] {
       return V{values({-0.9, -0.2, 0.3, 0.8, 0.1, -0.7}, {2, 3})};
     },
     [](const V& x) { return clamp(x[0], -0.5, 0.5) * x[0]; }},
    {OpKind::Clamp, "clamp/min_only",
     [] {
       return V{values({-0.9, -0.2, 0.3, 0.8}, {4})};
     },
     [](const V& x) { return clamp(x[0], -0.5, INFINITY); }},
    {OpKind::Clamp, "clamp/max_only",
     [] {
       return V{values({-0.9, -0.2, 0.3, 0.8}, {4})};
     },
     [](const V& x) { return clamp(x[0], -INFINITY, 0.5); }},

    // ---- comparisons (bool results: no rule; the sweep checks none is recorded) ----
    {OpKind::Lt, "lt",
     [] {
       return V{leaf({2, 3}), leaf({3})};
     },
     [](const V& x) { return lt(x[0], x[1]); }},
    {OpKind::Le, "le",
     [] {
       return V{leaf({2, 3}), leaf({})};
     },
     [](const V& x) { return le(x[0], x[1]); }},
    {OpKind::Gt, "gt",
     [] {
       return V{leaf({2, 1}), leaf({1, 3})};
     },
     [](const V& x) { return gt(x[0], x[1]); }},
    {OpKind::Ge, "ge", [] { return V{leaf({3})}; }, [](const V& x) { return ge(x[0], x[0]); }},

    // ---- bitwise (bool and integer results: no rule) ----
    {OpKind::BitwiseAnd, "bitwise_and",
     [] {
       return V{from_vector({12, -3, 5}, {3}, DType::Int64),
                from_vector({10, 7, 0}, {3}, DType::Int64)};
     },
     [](const V& x) { return bitwise_and(x[0], x[1]); }},
    {OpKind::BitwiseOr, "bitwise_or",
     [] {
       return V{from_vector({12, -3}, {2, 1}, DType::Int32), from_vector({1, 0}, {2}, DType::Bool)};
     },
     [](const V& x) { return bitwise_or(x[0], x[1]); }},
    {OpKind::BitwiseXor, "bitwise_xor",
     [] {
       return V{mask({1, 0, 1}, {3}), mask({1, 1, 0}, {3})};
     },
     [](const V& x) { return bitwise_xor(x[0], x[1]); }},
    {OpKind::Neg, "neg",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return neg(x[0]); }},
    {OpKind::Exp, "exp",
     [] {
       return V{leaf({2, 3})};
     },
     [](const V& x) { return exp(x[0]); }},
    {OpKind::Add, "add/same",
     [] {
       return V{leaf({2, 3}), leaf({2, 3})};
     },
     [](const V& x) { return x[0] + x[1]; }},
    {OpKind::Add, "add/broadcast_row",
     [] {
       return V{leaf({2, 3}), leaf({3})};
     },
     [](const V& x) { return x[0] + x[1]; }},
    {OpKind::Add, "add/broadcast_both",
     [] {
       return V{leaf({2, 1}), leaf({1, 3})};
     },
     [](const V& x) { return x[0] + x[1]; }},
    {OpKind::Sub, "sub/broadcast_col",
     [] {
       return V{leaf({2, 3}), leaf({2, 1})};
     },
     [](const V& x) { return x[0] - x[1]; }},
    {OpKind::Mul, "mul/broadcast_scalar",
     [] {
       return V{leaf({2, 3}), leaf({})};
     },
     [](const V& x) { return x[0] * x[1]; }},
    {OpKind::Mul, "mul/self", [] { return V{leaf({4})}; }, [](const V& x) { return x[0] * x[0]; }},
    {OpKind::Div, "div/broadcast",
     [] {
       return V{leaf({2, 3}), leaf({1, 3}, 0.5, 2.0)};
     },
     [](const V& x) { return x[0] / x[1]; }},
    {OpKind::Eq, "eq", [] { return V{leaf({3})}; }, [](const V& x) { return eq(x[0], x[0]); }},
    {OpKind::Ne, "ne", [] { return V{leaf({3})}; },
     [](const V& x) { return ne(x[0], x[0] * 2.0); }},
    {OpKind::Cast, "cast/f32_roundtrip", [] { return V{leaf({3})}; },
     // float64 -> float32 -> float64 loses precision: compare at float32's resolution
     [](const V& x) { return cast(cast(x[0], DType::Float32), DType::Float64) * 0.0 + x[0]; }},

});

}  // namespace
}  // namespace vk::test
