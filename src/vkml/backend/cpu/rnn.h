// The recurrent cells' kernels (issue #16 item 2: rnn).
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
// (gates (B, 4H), c_prev (B, H)) -> (2, B, H): [h, c] of one LSTM step.
VK_KERNEL(lstm_cell);
// (g (2, B, H), gates, c_prev) -> flat (B * 5H): dgates (B, 4H) then dc_prev (B, H).
VK_KERNEL(lstm_cell_backward);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
