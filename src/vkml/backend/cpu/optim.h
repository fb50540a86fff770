// Fused optimizer updates: one pass over a parameter's elements that reads its gradient and
// rewrites the parameter and its state in place. The caller (optim/optim.cpp) validates the
// arguments and hands contiguous tensors of one floating dtype and one element count. Each
// element's update depends only on that element, so results are the same at any thread count.
#pragma once
#include <cstdint>

#include "vkml/backend/cpu/isa.h"
#include "vkml/core/kernel.h"
#include "vkml/core/tensor.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// momentum_buffer is read and written only when h.momentum != 0.
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const SgdHyper& h);

// max_exp_avg_sq is read and written only when h.amsgrad.
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamHyper& h);

void adadelta_update(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                     const Tensor& acc_delta, const AdadeltaHyper& h);

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
