// Moving data between devices.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// x on `device`: x itself when it is there already (as torch's .to), else a copy whose gradient
// goes back to x's device.
Tensor to_device(const Tensor& x, Device device);
inline Tensor to_cpu(const Tensor& x) { return to_device(x, kCPU); }

}  // namespace vk
