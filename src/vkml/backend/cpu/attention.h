// Scaled dot-product attention, fused (ops/attention.h).
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
// (q, k, v), a.softmax's scale and causal mask -> softmax(scale q k^T) v.
VK_KERNEL(attention);
// (g, q, k, v) -> flat dq, dk, dv.
VK_KERNEL(attention_backward);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
