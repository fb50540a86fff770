// hostwait (issue #14): checks of tensor values that do not make the host wait for a device.
#pragma once
#include <string>

#include "vkml/core/tensor.h"

namespace vk {

// Raises IndexError (index_error) or RuntimeError "<op>: <message>" unless every element of `ok`
// (a bool tensor) is true: at once when its values are in CPU memory; on a device that registered
// a deferred check (core/deferred.h: the Vulkan one) at that device's next host read, so that the
// check does not wait for the device; on any other device through host_read.
void expect_all(const Tensor& ok, bool index_error, const std::string& op,
                const std::string& message);

}  // namespace vk
