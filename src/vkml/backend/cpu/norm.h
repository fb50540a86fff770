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
// Batch normalisation with the batch's statistics, per channel (dim 1) of x (N, C, *).
// in: x[, weight][, bias] (a.ints = {has_weight, has_bias}); a.scalar: eps. Leaves the
// (2, C) [mean, biased variance] in out.saved()[0].
VK_KERNEL(batch_norm);
// in: g, x[, weight] (a.ints = {has_weight}); the gradient of batch_norm w.r.t. x. a.flag: also
// batch_norm_param_grad's values, from the same sums, into out.saved()[0].
VK_KERNEL(batch_norm_backward);
// in: g, x; out (2, C): [sum of g * xhat, sum of g] per channel.
VK_KERNEL(batch_norm_param_grad);
}  // namespace vk::cpu
