// The CPU kernels of the pointwise family (ops/pointwise.h): lerp(start, end, weight), and
// addcmul / addcdiv(input, t1, t2) with attrs.value.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(lerp);
VK_KERNEL(addcmul);
VK_KERNEL(addcdiv);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
