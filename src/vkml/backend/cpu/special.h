// The special functions' CPU kernels (ops/special.cpp; issue #15): float32 and float64, each
// element computed in double by one scalar function (float32 rounded once), with the steps the
// Vulkan shader takes (shaders/special.comp), so both devices agree to rounding.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(i0);
VK_KERNEL(i0e);
VK_KERNEL(i1);
VK_KERNEL(i1e);
VK_KERNEL(igamma);
VK_KERNEL(igammac);
VK_KERNEL(standard_gamma_grad);

// The scalar functions, in double.
double bessel_i0e_value(double x);                         // exp(-|x|) I0(x)
double bessel_i1e_value(double x);                         // exp(-|x|) I1(x)
double igamma_value(double a, double x, bool upper);       // P(a, x), or Q(a, x) when upper
double standard_gamma_grad_value(double alpha, double x);  // dx/dalpha at x's quantile
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
