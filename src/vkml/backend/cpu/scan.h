// The scan family's kernels (ops/scan.cpp): running sums, products and extremes along a.dim.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(cumsum);
VK_KERNEL(cumprod);
VK_KERNEL(cummax);  // output 1: the int64 indices
VK_KERNEL(cummin);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
