#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
// a.dims: wrapped, sorted reduced dims (never empty here: the op fills in "all"); a.keepdim.
VK_KERNEL(sum);
VK_KERNEL(mean);
VK_KERNEL(amax);
VK_KERNEL(amin);
VK_KERNEL(max_dim);  // a.dim; output 1: the int64 indices
VK_KERNEL(min_dim);
VK_KERNEL(prod);
VK_KERNEL(argmax);
VK_KERNEL(argmin);
VK_KERNEL(logsumexp);
VK_KERNEL(var);  // a.var
VK_KERNEL(sum_squares);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
