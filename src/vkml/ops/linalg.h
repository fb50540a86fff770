#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// torch.matmul semantics: 1-D, 2-D, and batched with broadcasting of the batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);
// a @ b + bias for 2-D a (M, K), b (K, N) and bias (N) added to every row, one floating dtype
// (torch.addmm with a 1-D input), or a @ b + bias for a bias of a @ b's shape: one op, the bias
// written first and the product added onto it.
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b);

}  // namespace vk
