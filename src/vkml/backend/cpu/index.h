// Index kernels. Index tensors are int64 or int32 (checked by the ops' infer rules); every index
// is bounds-checked here, and a bad one raises IndexError naming the op, the value, the dim and
// its size. No kernel uses atomics: scatter_add gives each destination to one thread and adds
// its contributions in index order, so results are bitwise identical at any thread count.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(index_select);  // in: x, index (1-D or 0-d); a.dim
VK_KERNEL(gather);        // in: x, index (x's ndim); a.dim; out has index's shape
VK_KERNEL(scatter_add);   // in: base, index, src; a.dim; out = base + src added at index
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
