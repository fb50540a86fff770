// hostwait (issue #14): checks of values a device computed, without the host waiting for them. A
// device that runs asynchronously (the Vulkan one) registers how it raises such an error later,
// at its next host read; ops call it through ops/expect.h.
#pragma once
#include <string>

#include "vkml/core/device.h"
#include "vkml/core/tensor.h"

namespace vk {

// Raises IndexError (index_error) or RuntimeError "<op>: <message>" unless every element of `ok`
// (an int32 tensor of 0s and 1s on the device) is 1, at the device's next host read.
using DeferredCheck = void (*)(const Tensor& ok, bool index_error, const std::string& op,
                               const std::string& message);
void register_deferred_check(DeviceType type, DeferredCheck check);
// The check registered for `type`; null when it has none.
DeferredCheck find_deferred_check(DeviceType type);

}  // namespace vk
