#pragma once
#include <optional>

#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(reshape);          // a view when strides allow, else a contiguous copy
VK_KERNEL(permute);          // view
VK_KERNEL(expand);           // view with zero strides
VK_KERNEL(contiguous);       // copy
VK_KERNEL(slice);            // view: a.dim, a.start, a.stop, a.step
VK_KERNEL(slice_backward);   // zeros of a.shape with in[0] written at the sliced positions
VK_KERNEL(cat);              // a.dim; inputs skipped by cat_skips() contribute nothing
VK_KERNEL(stack);            // a.dim is the new dim
VK_KERNEL(pad);              // a.pad: (before, after) widths from the last dim, the value
VK_KERNEL(flip);             // a.dims: wrapped dims to reverse
VK_KERNEL(as_strided);       // view of a.strided's region (of a row-major copy if need be)
VK_KERNEL(strided_scatter);  // a row-major copy of in[0], in[1] written into the region

// Sets every byte of a contiguous tensor to zero (the zero of every dtype).
void fill_zero(const Tensor& t);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
