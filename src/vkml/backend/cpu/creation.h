#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
VK_KERNEL(full);
VK_KERNEL(arange);
VK_KERNEL(rand);
VK_KERNEL(randn);
VK_KERNEL(randint);
// Philox4x32-10: four 32-bit random words for counter `ctr` under key `seed`.
void philox(uint64_t seed, uint64_t ctr, uint32_t out[4]);
}  // namespace vk::cpu
