// The CPU backend's entry point: registers its kernels and services (backend/builtin.cpp calls it).
#pragma once
#include "vkml/core/kernel.h"

namespace vk::cpu {
void register_backend();
}  // namespace vk::cpu
