// The math family's Vulkan kernels (ops/math.cpp; issue #15), shaders/math.comp.
#pragma once
#include "vkml/core/kernel.h"

namespace vk::vulkan {
VK_KERNEL(tan);
VK_KERNEL(asin);
VK_KERNEL(acos);
VK_KERNEL(atan);
VK_KERNEL(sinh);
VK_KERNEL(cosh);
VK_KERNEL(asinh);
VK_KERNEL(acosh);
VK_KERNEL(atanh);
VK_KERNEL(lgamma);
VK_KERNEL(digamma);
VK_KERNEL(polygamma);
VK_KERNEL(erfinv);
VK_KERNEL(log2);
VK_KERNEL(log10);
VK_KERNEL(exp2);
VK_KERNEL(atan2);
VK_KERNEL(fmod);
VK_KERNEL(bitwise_left_shift);
VK_KERNEL(bitwise_right_shift);
VK_KERNEL(gcd);
VK_KERNEL(lcm);
VK_KERNEL(nextafter);

// The bits of 2/pi as an int32 tensor on m's device, viewed at m's shape (every element the whole
// table): what trig.glsl's float64 argument reduction reads (backend/vulkan/elementwise.cpp).
Tensor two_over_pi_table(const Meta& m);
}  // namespace vk::vulkan
