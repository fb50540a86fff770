// Running the strided element-wise shaders (shaders/elementwise.comp): up to three float32
// tensors, the output first, walked together over one shape, each with its own element offset
// and strides, so views (broadcasts, transposes, slices) need no copy first.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include "vkml/core/tensor.h"

namespace vk::vulkan {

inline constexpr int kMaxDims = 6;  // after merging dims that are contiguous in every tensor

// Push constants of elementwise.comp, laid out as its Params block (std430).
struct StridedParams {
  uint32_t n = 0, ndim = 0;
  float scalar = 0.0f;
  uint32_t unused = 0;
  uint32_t shape[kMaxDims] = {};
  int32_t offset[3] = {};
  int32_t stride[3 * kMaxDims] = {};
};
static_assert(sizeof(StridedParams) == 124, "elementwise.comp's push constants");

// The SPIR-V of a shader compiled into the library (build/vulkan_shaders.cpp, generated).
std::span<const unsigned char> shader_spirv(std::string_view name);

// Runs shader `name` over ts (output first; every tensor viewed at the output's shape, float32,
// on the Vulkan device) with `scalar` as its constant. Errors name `op`.
void run_elementwise(std::string_view name, std::initializer_list<const Tensor*> ts,
                     std::string_view op, float scalar = 0.0f);

// DTypeError naming op and the device unless t is float32 (the one dtype of this version).
void check_float32(const Tensor& t, std::string_view op);

}  // namespace vk::vulkan
