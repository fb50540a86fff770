// Fused layer normalisation kernels.
#pragma once
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
// in: x[, weight][, bias] (a.ints = {has_weight, has_bias}); a.shape: the normalized (trailing)
// shape; a.scalar: eps. y = (x - mean) * rstd * weight + bias, per row of numel(a.shape).
VK_KERNEL(layer_norm);
// in: g, x[, weight] (a.ints = {has_weight}); the gradient of layer_norm w.r.t. x.
VK_KERNEL(layer_norm_backward);
// in: g, x; out (2, *a.shape): [sum over rows of g * xhat, sum over rows of g].
VK_KERNEL(layer_norm_param_grad);
}  // namespace vk::cpu
