// The signature every CPU kernel has: the prepared inputs, the op's parameters and the output's
// inferred shape and dtype. A kernel allocates its result (or returns a view of an input).
#pragma once
#include <vector>

#include "vkml/core/tensor.h"

namespace vk {
struct Meta;
}

#define VK_KERNEL(name) \
  ::vk::Tensor name(const std::vector<::vk::Tensor>& in, const ::vk::Attrs& a, const ::vk::Meta& m)
