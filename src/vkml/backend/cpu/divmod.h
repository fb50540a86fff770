// Floor division and its remainder, with Python's signs: the quotient is rounded toward -inf and
// the remainder takes the divisor's sign (as PyTorch's floor_divide / remainder); and C's fmod,
// the dividend's sign. Every numeric dtype; an integer division by zero raises.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(floor_divide);
VK_KERNEL(remainder);
VK_KERNEL(fmod);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
