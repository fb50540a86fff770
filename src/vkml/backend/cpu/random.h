// CPU kernels of the random sampling ops (ops/random.cpp; issue 15 item 3). bernoulli and normal
// have none: they are made of rand, randn and elementwise ops on every device.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(randperm);
VK_KERNEL(multinomial);
VK_KERNEL(poisson);
VK_KERNEL(standard_gamma);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
