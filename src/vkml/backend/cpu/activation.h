// The CPU kernels of the activations with parameters (ops/activation.h; a.activation,
// hardtanh_backward a.lo and a.hi). hardtanh's forward is clamp's kernel (elementwise.h).
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(leaky_relu);
VK_KERNEL(leaky_relu_backward);
VK_KERNEL(hardtanh_backward);
VK_KERNEL(elu);
VK_KERNEL(elu_backward);
VK_KERNEL(softplus);
VK_KERNEL(softplus_backward);
VK_KERNEL(hardsigmoid);
VK_KERNEL(hardsigmoid_backward);
VK_KERNEL(hardswish);
VK_KERNEL(hardswish_backward);
VK_KERNEL(silu);
VK_KERNEL(silu_backward);
VK_KERNEL(smooth_l1);
VK_KERNEL(smooth_l1_backward);
VK_KERNEL(squared_difference);
VK_KERNEL(huber);
VK_KERNEL(huber_backward);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
