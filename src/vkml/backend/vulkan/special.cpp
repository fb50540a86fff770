// The special functions' kernels on the Vulkan device (ops/special.cpp; issue #15): one strided
// shader variant per op and dtype (shaders/special.comp), launched as the math family's. They
// compute in double (float32 rounded once) where the device has float64; elsewhere float32
// tensors take the "_nof64" variants (the same steps in float alone) and float64 is refused.
#include "vkml/backend/vulkan/special.h"

#include <string>
#include <string_view>

#include "vkml/backend/vulkan/context.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"  // context()

namespace vk::vulkan {
namespace {

Tensor special_op(const char* op, const std::vector<Tensor>& in, const Meta& m) {
  const bool alone = m.dtype == DType::Float32 && !context().has_float64();
  if (!alone) check_dtype(DType::Float64, op);
  const std::string nof64 = std::string(op) + "_nof64";
  return run_strided(
      Strided{.shader = alone ? std::string_view(nof64) : std::string_view(op), .op = op}, in, m);
}

}  // namespace

#define VKML_VULKAN_SPECIAL_OP(name) \
  VK_KERNEL(name) {                  \
    (void)a;                         \
    return special_op(#name, in, m); \
  }
VKML_VULKAN_SPECIAL_OP(i0)
VKML_VULKAN_SPECIAL_OP(i0e)
VKML_VULKAN_SPECIAL_OP(i1)
VKML_VULKAN_SPECIAL_OP(i1e)
VKML_VULKAN_SPECIAL_OP(igamma)
VKML_VULKAN_SPECIAL_OP(igammac)
VKML_VULKAN_SPECIAL_OP(standard_gamma_grad)
#undef VKML_VULKAN_SPECIAL_OP

}  // namespace vk::vulkan
