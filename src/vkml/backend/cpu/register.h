// The CPU backend's entry point: registers its kernels and services (backend/builtin.cpp calls it).
#pragma once
#include "vkml/backend/cpu/isa.h"
#include "vkml/core/kernel.h"

namespace vk::cpu {
// Registers the copy of the kernels for this machine's capability (capability.cpp).
void register_backend();
}  // namespace vk::cpu

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
// This copy's kernels and services (register.cpp, compiled once per capability).
void register_kernels();
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
