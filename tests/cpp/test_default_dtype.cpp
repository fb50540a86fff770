// The default floating dtype (core/default_dtype.h, shape/index breadth #15): the ops that turn
// integers into floats follow it, resetting restores float32, and only float dtypes are accepted.
#include <gtest/gtest.h>

#include "vkml/core/default_dtype.h"
#include "vkml/core/error.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"

namespace vk {
namespace {

// Restores the default even when an assertion fails midway: later tests expect float32.
struct DefaultDTypeScope {
  ~DefaultDTypeScope() { set_default_float_dtype(DType::Float32); }
};

TEST(DefaultDType, IntToFloatOpsFollowItAndResetRestoresFloat32) {
  const DefaultDTypeScope scope;
  const Tensor ints = from_vector({4.0, 9.0}, {2}, DType::Int64);
  EXPECT_EQ(default_float_dtype(), DType::Float32);
  EXPECT_EQ(sqrt(ints).dtype(), DType::Float32);
  set_default_float_dtype(DType::Float64);
  EXPECT_EQ(default_float_dtype(), DType::Float64);
  EXPECT_EQ(sqrt(ints).dtype(), DType::Float64);
  EXPECT_EQ(div(ints, ints).dtype(), DType::Float64);
  set_default_float_dtype(DType::Float32);
  EXPECT_EQ(sqrt(ints).dtype(), DType::Float32);
}

TEST(DefaultDType, OnlyFloatDTypesAreAccepted) {
  const DefaultDTypeScope scope;
  EXPECT_THROW(set_default_float_dtype(DType::Int64), DTypeError);
  EXPECT_THROW(set_default_float_dtype(DType::Bool), DTypeError);
  EXPECT_EQ(default_float_dtype(), DType::Float32);
}

}  // namespace
}  // namespace vk
