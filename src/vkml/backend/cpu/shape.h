#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
VK_KERNEL(reshape);     // a view when strides allow, else a contiguous copy
VK_KERNEL(permute);     // view
VK_KERNEL(expand);      // view with zero strides
VK_KERNEL(contiguous);  // copy
VK_KERNEL(slice);       // view
VK_KERNEL(slice_backward);
VK_KERNEL(cat);
VK_KERNEL(stack);
VK_KERNEL(pad);
VK_KERNEL(flip);
// Strides for viewing x as `shape` without a copy, or empty when impossible.
Strides view_strides(const Tensor& x, const Shape& shape);
}  // namespace vk::cpu
