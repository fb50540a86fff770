// In-place ops (PyTorch's trailing underscore). Each writes into x's storage and bumps its version
// counter, so a graph that saved x and is differentiated later raises instead of computing a
// wrong gradient. While grad mode is on, writing into a tensor that requires grad (or writing a
// value that requires grad) raises RuntimeError: use the out-of-place op, or no_grad() for
// updates such as optimizer steps.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "vkml/core/scalar.h"
#include "vkml/core/tensor.h"

namespace vk {

void add_(const Tensor& x, const Tensor& other, double alpha = 1.0);  // x += alpha * other
void sub_(const Tensor& x, const Tensor& other);
void mul_(const Tensor& x, const Tensor& other);
void div_(const Tensor& x, const Tensor& other);
void add_(const Tensor& x, Scalar other);
void mul_(const Tensor& x, Scalar other);
void zero_(const Tensor& x);
void fill_(const Tensor& x, Scalar value);  // converts as full() does: a value must fit x's dtype
void copy_(const Tensor& x, const Tensor& src);  // src broadcasts to x's shape; dtype converts
void clamp_(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);

// ---- every other in-place op (issue #15, composite ops): one mechanism ----
// x.<op>_(...) for any out-of-place op: `compute` (run with grad mode off, after the checks
// above: x and every tensor in `others` must not require grad while grad mode is on) returns
// the result, which is written into x as the ops above write (dtype must cast, shape must
// broadcast to x's) and bumps x's version counter. E.g.
//   inplace(x, {}, "exp_", [&] { return exp(x); });
void inplace(const Tensor& x, const std::vector<Tensor>& others, const char* op,
             const std::function<Tensor()>& compute);

}  // namespace vk
