// Fused layer normalisation kernels.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
// in: x[, weight][, bias] (a.norm: eps and which are given); a.shape: the normalized (trailing)
// shape. y = (x - mean) * rstd * weight + bias, per row of numel(a.shape).
VK_KERNEL(layer_norm);
// in: g, x[, weight] (a.norm); the gradient of layer_norm w.r.t. x. a.norm.with_param_grad:
// also layer_norm_param_grad's values, from the same pass, as output 1 (else undefined).
VK_KERNEL(layer_norm_backward);
// in: g, x; out (2, *a.shape): [sum over rows of g * xhat, sum over rows of g].
VK_KERNEL(layer_norm_param_grad);
// Batch normalisation with the batch's statistics, per channel (dim 1) of x (N, C, *).
// in: x[, weight][, bias] (a.norm: eps and which are given). Output 1: the (2, C) [mean,
// biased variance] it used.
VK_KERNEL(batch_norm);
// in: g, x[, weight] (a.norm); the gradient of batch_norm w.r.t. x. a.norm.with_param_grad:
// also batch_norm_param_grad's values, from the same sums, as output 1 (else undefined).
VK_KERNEL(batch_norm_backward);
// in: g, x; out (2, C): [sum of g * xhat, sum of g] per channel.
VK_KERNEL(batch_norm_param_grad);
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
