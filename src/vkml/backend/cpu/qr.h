// QR by Householder reflections on the CPU (#15 linalg), LAPACK's order and signs.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

VK_KERNEL(qr);     // in: A (..., m, n). Out: the packed (..., m + k, n) Q (zero beyond k) and R
VK_KERNEL(geqrf);  // in: A (..., m, n). Out: the packed (..., m + 1, n) reflectors and tau

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
