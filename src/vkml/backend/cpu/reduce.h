#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
// a.dims: wrapped, sorted reduced dims (never empty here: the op fills in "all"); a.keepdim.
VK_KERNEL(sum);
VK_KERNEL(mean);
VK_KERNEL(amax);
VK_KERNEL(amin);
VK_KERNEL(max_dim);  // a.dim; also saves int64 indices in out.saved()[0]
VK_KERNEL(min_dim);
VK_KERNEL(prod);
VK_KERNEL(argmax);
VK_KERNEL(argmin);
VK_KERNEL(logsumexp);
VK_KERNEL(var);  // a.scalar: correction
VK_KERNEL(softmax);
VK_KERNEL(log_softmax);
// (g, out) of softmax/log_softmax along a.dim -> the input's gradient, fused.
VK_KERNEL(softmax_backward);
VK_KERNEL(log_softmax_backward);
}  // namespace vk::cpu
