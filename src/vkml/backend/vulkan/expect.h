// hostwait (issue #14): the Vulkan device's deferred check (core/deferred.h), raised through the
// error word (Context::expect_valid) at the next host read.
#pragma once
#include <string>

#include "vkml/core/tensor.h"

namespace vk::vulkan {

void expect_all(const Tensor& ok, bool index_error, const std::string& op,
                const std::string& message);

}  // namespace vk::vulkan
