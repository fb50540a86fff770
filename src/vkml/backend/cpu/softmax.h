// The fused softmax kernels.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
// x along a.dim; softmax also reads a.softmax (scale, causal).
VK_KERNEL(softmax);
VK_KERNEL(log_softmax);
// (g, out) of softmax/log_softmax along a.dim -> the input's gradient, fused.
VK_KERNEL(softmax_backward);
VK_KERNEL(log_softmax_backward);

// The largest of scale * x[k] over a contiguous row of K, NaN skipped (softmax's rows and
// attention's; float and double).
template <class T>
T scaled_row_max(const T* x, int64_t K, T scale);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
