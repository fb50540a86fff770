#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
VK_KERNEL(full);
VK_KERNEL(arange);
VK_KERNEL(rand);
VK_KERNEL(randn);
VK_KERNEL(randint);
// Philox4x32-10: four 32-bit random words for counter `ctr` under key `seed`. `sub` (the
// counter's third word) numbers further blocks of one element's draws (poisson's rejection
// loop); 0 is the block every one-draw op uses.
void philox(uint64_t seed, uint64_t ctr, uint32_t out[4], uint32_t sub = 0);
// philox(seed, ctr0 + j) for the kPhiloxLanes counters j, word k of counter j in w[k][j]: the
// same words, many counters at once (vectorised).
inline constexpr int64_t kPhiloxLanes = 64;
void philox_lanes(uint64_t seed, uint64_t ctr0, uint32_t (&w)[4][kPhiloxLanes]);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
