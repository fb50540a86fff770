// The math family's CPU kernels (ops/math.cpp; issue #15): float32 and float64, each element
// through one scalar function, so results do not depend on the thread count.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(asin);
VK_KERNEL(acos);
VK_KERNEL(atan);
VK_KERNEL(sinh);
VK_KERNEL(cosh);
VK_KERNEL(asinh);
VK_KERNEL(acosh);
VK_KERNEL(atanh);
VK_KERNEL(lgamma);
VK_KERNEL(digamma);
VK_KERNEL(polygamma);  // a.order = n >= 1
VK_KERNEL(erfinv);
VK_KERNEL(log2);
VK_KERNEL(log10);
VK_KERNEL(exp2);
VK_KERNEL(atan2);
VK_KERNEL(bitwise_left_shift);  // int32, int64
VK_KERNEL(bitwise_right_shift);
VK_KERNEL(gcd);
VK_KERNEL(lcm);
VK_KERNEL(nextafter);  // float32, float64

// The special functions in double, as the Vulkan shader computes them (shaders/math.comp).
double digamma_value(double x);
double polygamma_value(int64_t n, double x);
double erfinv_value(double x);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
