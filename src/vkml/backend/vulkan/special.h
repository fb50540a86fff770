// The special functions' Vulkan kernels (ops/special.cpp; issue #15), shaders/special.comp.
#pragma once
#include "vkml/core/kernel.h"

namespace vk::vulkan {
VK_KERNEL(i0);
VK_KERNEL(i0e);
VK_KERNEL(i1);
VK_KERNEL(i1e);
VK_KERNEL(igamma);
VK_KERNEL(igammac);
VK_KERNEL(standard_gamma_grad);
}  // namespace vk::vulkan
