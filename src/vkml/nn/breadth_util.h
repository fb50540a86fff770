// Argument checks and reductions shared by the nn-breadth files (activation.cpp, loss.cpp,
// layers.cpp). Internal: not part of the public vk::nn::functional interface.
#pragma once
#include <limits>
#include <string_view>

#include "vkml/core/tensor.h"
#include "vkml/ops/activation.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/reduction.h"

namespace vk::nn::functional::breadth {

inline void check_float(const Tensor& t, const char* fn, const char* what) {
  VK_CHECK(t.defined(), RuntimeError, fn, ": ", what, " is undefined");
  VK_CHECK(is_floating(t.dtype()), DTypeError, fn, ": ", what, " must be floating point, got ",
           t.describe());
}

// A floating companion (target, weight, ...) of the input's dtype.
inline void check_companion(const Tensor& t, const Tensor& input, const char* fn,
                            const char* what) {
  check_float(t, fn, what);
  VK_CHECK(t.dtype() == input.dtype(), DTypeError, fn, ": ", what, " has dtype ",
           dtype_name(t.dtype()), " but the input is ", input.describe());
}

inline void check_same_shape(const Tensor& t, const Tensor& input, const char* fn,
                             const char* what) {
  VK_CHECK(t.shape() == input.shape(), ShapeError, fn, ": ", what, " of shape ",
           shape_str(t.shape()), " must match the input's shape ", shape_str(input.shape()));
}

// "mean" | "sum" | "none" (and "batchmean" where allowed) applied to element-wise losses.
inline Tensor reduce_loss(const Tensor& loss, std::string_view reduction, const char* fn) {
  if (reduction == "mean") return mean(loss);
  if (reduction == "sum") return sum(loss);
  if (reduction == "none") return loss;
  throw RuntimeError(
      detail::cat(fn, ": reduction must be 'mean', 'sum' or 'none', got '", reduction, "'"));
}

// Checks the reduction before any work (so a typo fails even on an empty input).
inline void check_reduction(std::string_view reduction, const char* fn) {
  VK_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", RuntimeError, fn,
           ": reduction must be 'mean', 'sum' or 'none', got '", reduction, "'");
}

// log(1 + e^z) for any z (the softplus op without a threshold: it never overflows), gradient
// sigmoid(z).
inline Tensor softplus_stable(const Tensor& z) {
  return vk::softplus(z, 1.0, std::numeric_limits<double>::infinity());
}

// log sigmoid(x) = -log(1 + e^-x) = -softplus(-x): the softplus op with beta = -1, one op each
// way (gradient sigmoid(-x)) instead of two negations around it.
inline Tensor log_sigmoid(const Tensor& x) {
  return vk::softplus(x, -1.0, std::numeric_limits<double>::infinity());
}

}  // namespace vk::nn::functional::breadth
