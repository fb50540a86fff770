#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
// unary (float in, same dtype out unless noted)
VK_KERNEL(neg);
VK_KERNEL(exp);
VK_KERNEL(log);
VK_KERNEL(log1p);
VK_KERNEL(expm1);
VK_KERNEL(sqrt);
VK_KERNEL(rsqrt);
VK_KERNEL(reciprocal);
VK_KERNEL(abs);
VK_KERNEL(sign);
VK_KERNEL(sin);
VK_KERNEL(cos);
VK_KERNEL(tan);
VK_KERNEL(tanh);
VK_KERNEL(sigmoid);
VK_KERNEL(relu);
VK_KERNEL(gelu);  // a.gelu
VK_KERNEL(tanh_backward);
VK_KERNEL(sigmoid_backward);
VK_KERNEL(relu_backward);
VK_KERNEL(gelu_backward);
VK_KERNEL(erf);
VK_KERNEL(erfc);
VK_KERNEL(floor);
VK_KERNEL(ceil);
VK_KERNEL(round);
VK_KERNEL(trunc);
VK_KERNEL(frac);
// binary (same dtype, same shape after prepare)
VK_KERNEL(add);
VK_KERNEL(sub);
VK_KERNEL(mul);
VK_KERNEL(div);
VK_KERNEL(pow);
VK_KERNEL(maximum);
VK_KERNEL(minimum);
VK_KERNEL(where);  // in: cond(bool), a, b
VK_KERNEL(clamp);  // a.lo = min, a.hi = max (nullopt: that side open)
// comparisons -> bool
VK_KERNEL(eq);
VK_KERNEL(ne);
VK_KERNEL(lt);
VK_KERNEL(le);
VK_KERNEL(gt);
VK_KERNEL(ge);
// bitwise, on bool and integer dtypes (bool: logical)
VK_KERNEL(bitwise_and);
VK_KERNEL(bitwise_or);
VK_KERNEL(bitwise_xor);
// dtype conversion; also the strided copy used by contiguous()
VK_KERNEL(cast);
void copy_into(const Tensor& dst, const Tensor& src);  // same shape; converts dtype
// dst = a + b, all of one shape and numeric dtype; dst may be a itself (in-place accumulation).
void add_into(const Tensor& dst, const Tensor& a, const Tensor& b);
// dst = a op b, float32 or float64, b of dst's shape (an expanded view too); dst may be a itself.
void binary_into(const Tensor& dst, const Tensor& a, const Tensor& b, InPlaceOp op);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
