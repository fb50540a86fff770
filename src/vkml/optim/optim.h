// Fused optimizer steps for ONE parameter, so an optimizer class (Python's vk.optim.SGD, Adam,
// AdamW) only holds state tensors and calls one function per parameter: no math outside C++.
//
// Each step runs under no_grad, in place, in one pass over the elements, records no graph and
// bumps the version counter of every tensor it writes (the parameter and its state), so a graph
// that saved the parameter before the step refuses to backward through the stale value.
// The updates are torch.optim's, term for term. Shapes and dtypes must match the parameter's
// exactly (ShapeError / DTypeError naming the step and the tensors); invalid hyperparameter
// combinations are RuntimeError.
#pragma once
#include <vector>

#include "vkml/core/tensor.h"

namespace vk::optim {

// torch.optim.SGD for one parameter:
//   g = grad (negated when maximize) + weight_decay * param
//   buf = g on the first step (momentum_buffer undefined), else momentum * buf + (1 - dampening) *
//   g g = nesterov ? g + momentum * buf : buf          (only when momentum != 0) param -= lr * g
// Returns the momentum buffer to keep for the next step: a new tensor on the first step,
// momentum_buffer itself afterwards, undefined when momentum == 0.
Tensor sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, double lr,
                 double momentum = 0.0, double dampening = 0.0, bool nesterov = false,
                 double weight_decay = 0.0, bool maximize = false);

// torch.optim.Adam (decoupled = false) and AdamW (decoupled = true) for one parameter, at the
// 1-based `step`:
//   g = grad (negated when maximize); Adam: g += weight_decay * param;
//   AdamW: param *= 1 - lr * weight_decay (before the update)
//   exp_avg = lerp(exp_avg, g, 1 - beta1); exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g^2
//   amsgrad: max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq), used in place of exp_avg_sq below
//   param -= lr / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps)
// The state tensors start as zeros of the parameter's shape and dtype (the caller makes them).
void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                const Tensor& exp_avg_sq, int64_t step, double lr, double beta1 = 0.9,
                double beta2 = 0.999, double eps = 1e-8, double weight_decay = 0.0,
                bool decoupled = false, bool amsgrad = false,
                const Tensor& max_exp_avg_sq = Tensor(), bool maximize = false);

// torch.optim.Adadelta for one parameter:
//   g = grad (negated when maximize) + weight_decay * param
//   square_avg = rho * square_avg + (1 - rho) * g^2
//   delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
//   acc_delta = rho * acc_delta + (1 - rho) * delta^2;  param -= lr * delta
// The state tensors start as zeros of the parameter's shape and dtype (the caller makes them).
void adadelta_step_(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                    const Tensor& acc_delta, double lr = 1.0, double rho = 0.9, double eps = 1e-6,
                    double weight_decay = 0.0, bool maximize = false);

// torch.nn.utils.clip_grad_norm_ over gradients (undefined entries are skipped): the total
// norm_type-norm of all of them together (norm_type may be +inf) is returned as a 0-d tensor,
// and each gradient is scaled in place by min(1, max_norm / (total + 1e-6)).
Tensor clip_grad_norm_(const std::vector<Tensor>& grads, double max_norm, double norm_type = 2.0);

}  // namespace vk::optim
