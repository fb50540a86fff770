#include "vkml/core/default_dtype.h"

#include <atomic>

#include "vkml/core/error.h"

namespace vk {
namespace {

// Process-wide, as torch's: a program sets it once, before it builds its tensors.
std::atomic<DType> g_default{DType::Float32};

}  // namespace

DType default_float_dtype() { return g_default.load(std::memory_order_relaxed); }

void set_default_float_dtype(DType dtype) {
  VK_CHECK(dtype == DType::Float32 || dtype == DType::Float64, DTypeError,
           "set_default_dtype: only floating-point types are supported as the default type, "
           "got ",
           dtype_name(dtype));
  g_default.store(dtype, std::memory_order_relaxed);
}

}  // namespace vk
