// Helpers shared by the C++ tests.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "vkml/vkml.h"

namespace vk::test {

// max |a - b| over max |b|: a's largest difference from the reference b, relative to b's scale.
inline double max_rel_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = to_vector(a), bv = to_vector(b);
  double scale = 0, diff = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    scale = std::max(scale, std::fabs(bv[i]));
    diff = std::max(diff, std::fabs(av[i] - bv[i]));
  }
  return diff / std::max(scale, 1e-300);
}

// float64 leaf with values drawn uniformly from [lo, hi), requiring grad.
inline Tensor leaf(const Shape& shape, double lo = -1.0, double hi = 1.0,
                   bool requires_grad = true) {
  Tensor t;
  {
    NoGradGuard ng;
    t = contiguous(rand(shape, DType::Float64) * (hi - lo) + lo);
  }
  t = t.detach();
  t.set_requires_grad(requires_grad);
  return t;
}

// A float64 leaf from explicit values.
inline Tensor values(const std::vector<double>& v, const Shape& shape, bool requires_grad = true,
                     DType dtype = DType::Float64) {
  Tensor t = from_vector(v, shape, dtype);
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

inline Tensor ints(const std::vector<double>& v, const Shape& shape) {
  return from_vector(v, shape, DType::Int64);
}

inline void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-6) {
  ASSERT_TRUE(t.defined());
  std::vector<double> got = to_vector(t);
  ASSERT_EQ(got.size(), expected.size()) << t.describe();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      continue;
    }
    if (std::isinf(expected[i])) {
      EXPECT_EQ(got[i], expected[i]) << "at flat index " << i << " of " << t.describe();
      continue;
    }
    EXPECT_NEAR(got[i], expected[i], tol) << "at flat index " << i << " of " << t.describe();
  }
}

// Expects `stmt` to throw ErrorType with a message containing every string in `parts`.
#define VK_EXPECT_ERROR(stmt, ErrorType, ...)                          \
  do {                                                                 \
    try {                                                              \
      stmt;                                                            \
      ADD_FAILURE() << "expected " #ErrorType " from " #stmt;          \
    } catch (const ErrorType& e) {                                     \
      for (std::string part : std::vector<std::string>{__VA_ARGS__})   \
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) \
            << "message '" << e.what() << "' lacks '" << part << "'";  \
    }                                                                  \
  } while (0)

}  // namespace vk::test
