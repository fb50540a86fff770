// Creation kernels on the Vulkan device.
#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"

namespace vk::vulkan {

VK_KERNEL(full) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  check_float32(out, "full");
  run_elementwise("fill", {&out}, "full", a.value.to<float>("full"));
  return out;
}

}  // namespace vk::vulkan
