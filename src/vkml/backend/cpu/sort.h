// The sort family's kernels (ops/sort.cpp).
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
// x along a.dim, a.sort.descending; stable; output 1: the int64 indices.
VK_KERNEL(sort);
// (boundaries, values) -> insertion points (m.dtype: int64 or int32); a.sort.right.
VK_KERNEL(searchsorted);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
