// interpolate's linear step along one dim (ops/index.h: interpolate_dim), one pass.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(interpolate_dim);  // in: x, lo, hi, w_lo, w_hi (1-D); a.dim
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
