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
// dst = src over dst's strides, converting the dtype; dst = a + b (gradient accumulation), one
// shape and dtype.
void copy_into(const Tensor& dst, const Tensor& src);
void add_into(const Tensor& dst, const Tensor& a, const Tensor& b);
// ---- element-wise family: the rest of backend/cpu/elementwise.h and divmod.h ----
VK_KERNEL(log1p);
VK_KERNEL(expm1);
VK_KERNEL(relu);
VK_KERNEL(gelu);  // a.gelu
VK_KERNEL(gelu_backward);
VK_KERNEL(erf);
VK_KERNEL(erfc);
VK_KERNEL(floor);
VK_KERNEL(ceil);
VK_KERNEL(round);
VK_KERNEL(floor_divide);
VK_KERNEL(remainder);
VK_KERNEL(pow);
VK_KERNEL(maximum);
VK_KERNEL(minimum);
VK_KERNEL(where);  // in: cond (bool), a, b
VK_KERNEL(clamp);  // a.lo, a.hi
VK_KERNEL(eq);
VK_KERNEL(ne);
VK_KERNEL(lt);
VK_KERNEL(le);
VK_KERNEL(gt);
VK_KERNEL(ge);
VK_KERNEL(bitwise_and);
VK_KERNEL(bitwise_or);
VK_KERNEL(bitwise_xor);
VK_KERNEL(cast);
// ---- end of the element-wise family ----
// reduction.cpp: a.dims (wrapped, sorted, never empty), a.keepdim
VK_KERNEL(sum);
VK_KERNEL(mean);
// shape.cpp
VK_KERNEL(reshape);
VK_KERNEL(permute);
VK_KERNEL(expand);
VK_KERNEL(contiguous);
VK_KERNEL(slice);
}  // namespace vk::vulkan
