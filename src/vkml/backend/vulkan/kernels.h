// The Vulkan device's kernels, by family as the CPU's (backend/cpu/*.h). This version covers
// creation (full), the arithmetic and the float unary element-wise ops, sum and mean, and the
// shape ops that are views or copies.
#pragma once
#include "vkml/core/kernel.h"

namespace vk::vulkan {
// creation.cpp
VK_KERNEL(full);
// elementwise.cpp
VK_KERNEL(add);
VK_KERNEL(sub);
VK_KERNEL(mul);
VK_KERNEL(div);
VK_KERNEL(neg);
VK_KERNEL(exp);
VK_KERNEL(log);
VK_KERNEL(sqrt);
VK_KERNEL(rsqrt);
VK_KERNEL(reciprocal);
VK_KERNEL(abs);
VK_KERNEL(sign);
VK_KERNEL(sin);
VK_KERNEL(cos);
VK_KERNEL(tanh);
VK_KERNEL(sigmoid);
// dst = src over dst's strides; dst = a + b (gradient accumulation). Same shape, float32.
void copy_into(const Tensor& dst, const Tensor& src);
void add_into(const Tensor& dst, const Tensor& a, const Tensor& b);
// reduction.cpp: a.dims (wrapped, sorted, never empty), a.keepdim
VK_KERNEL(sum);
VK_KERNEL(mean);
// shape.cpp
VK_KERNEL(reshape);
VK_KERNEL(permute);
VK_KERNEL(expand);
VK_KERNEL(contiguous);
VK_KERNEL(slice);
// ---- reductions, softmax and norms (reduction engineer) ----
// reduction.cpp: float32; a.dims as for sum, a.dim for max_dim/min_dim/argmax/argmin
VK_KERNEL(amax);
VK_KERNEL(amin);
VK_KERNEL(max_dim);
VK_KERNEL(min_dim);
VK_KERNEL(prod);
VK_KERNEL(argmax);
VK_KERNEL(argmin);
VK_KERNEL(logsumexp);
VK_KERNEL(var);
// softmax.cpp: float32, along a.dim (a.softmax: scale, causal)
VK_KERNEL(softmax);
VK_KERNEL(log_softmax);
VK_KERNEL(softmax_backward);
VK_KERNEL(log_softmax_backward);
// norm.cpp: float32 (a.norm: eps, which of weight and bias are given, with_param_grad)
VK_KERNEL(layer_norm);
VK_KERNEL(layer_norm_backward);
VK_KERNEL(layer_norm_param_grad);
VK_KERNEL(batch_norm);
VK_KERNEL(batch_norm_backward);
VK_KERNEL(batch_norm_param_grad);
// ---- end of reductions, softmax and norms ----
}  // namespace vk::vulkan
