// Element-wise ops: unary math, binary arithmetic with broadcasting, comparisons, casts.
#pragma once
#include <optional>

#include "vkml/core/scalar.h"
#include "vkml/core/tensor.h"

namespace vk {

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, bool tanh_approximation = false);
Tensor tanh_backward(const Tensor& g, const Tensor& y);     // tanh's gradient from y = tanh(x)
Tensor sigmoid_backward(const Tensor& g, const Tensor& y);  // sigmoid's, from y = sigmoid(x)
Tensor relu_backward(const Tensor& g, const Tensor& x);     // relu's gradient: g where x > 0
Tensor gelu_backward(const Tensor& g, const Tensor& x);     // g * d gelu(x) / dx, the erf form
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even, as PyTorch
Tensor trunc(const Tensor& x);  // toward zero (-0.5 gives -0)

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give float32
// Python's // and %: the quotient rounds toward -inf, the remainder has the divisor's sign.
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, Scalar exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// std::nullopt leaves that side open. The result type is that of x and the bounds (an int64 x
// with a float bound: float32), and a bound that does not fit it is a RuntimeError, as PyTorch.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);

Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// Bit by bit on bool and integer tensors (bool: logical), after promotion; floats raise
// NotImplementedError, as PyTorch.
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);

Tensor cast(const Tensor& x, DType dtype);  // no copy (same tensor) when the dtype already matches

// Operators. A number operand (Scalar: a bool, an int or a float) promotes by its kind, never its
// value, as PyTorch: float32 * 2.0 is float32, int64 * 2.0 is float32, int32 * 3 is int32.
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);

}  // namespace vk
