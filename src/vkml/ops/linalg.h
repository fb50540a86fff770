#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// torch.matmul semantics: 1-D, 2-D, and batched with broadcasting of the batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace vk
