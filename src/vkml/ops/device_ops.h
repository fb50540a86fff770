// Moving data between devices.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// x on `device`: x itself when it is there already (as torch's .to), else a copy whose gradient
// goes back to x's device.
Tensor to_device(const Tensor& x, Device device);
inline Tensor to_cpu(const Tensor& x) { return to_device(x, kCPU); }

// The one way ops and nn read tensor values on the host (index bounds, nonzero's count, class
// targets): a contiguous CPU copy, not recorded. On a device that computes asynchronously each
// call is a synchronisation point (the host waits for the work queued before it), so the callers
// are few and listed in docs/architecture.md.
Tensor host_read(const Tensor& x);
// True when x's values are in CPU memory, where reading them costs no synchronisation: a rule may
// then take a shortcut that depends on them (pow's constant exponent, prod without zeros); on
// another device it takes the general form, which reads nothing.
inline bool values_on_host(const Tensor& x) { return x.device().is_cpu(); }

}  // namespace vk
