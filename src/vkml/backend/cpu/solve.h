// The solver family's CPU kernels (#15 linalg): LU factorization with partial pivoting, Cholesky
// and triangular solves, one matrix per work item of the pool (each matrix sequential, so results
// do not depend on the thread count). The update order is the Vulkan shaders' (solve.comp).
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// in: A (..., n, n) float32/float64. Out: LU (contiguous), pivots (int32, 1-based), perm (int64).
VK_KERNEL(lu_factor);
// in: A (..., n, n) float32/float64, its lower triangle read. Out: L (contiguous, upper zeroed).
VK_KERNEL(cholesky);
VK_KERNEL(eigh);  // the packed (..., n + 1, n) eigenvalues and eigenvectors
VK_KERNEL(svd);   // the packed (..., m + n + 1, n) S, U and V of tall matrices
// in: A (..., n, n), B (..., n, k), equal batch dims, one dtype; attrs.triangular. Out: X.
VK_KERNEL(triangular_solve);

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
