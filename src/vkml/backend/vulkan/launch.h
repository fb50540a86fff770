// Running the strided element-wise shaders (shaders/elementwise.comp): up to four tensors of any
// dtype, the output first, walked together over one shape, each with its own element offset and
// strides, so views (broadcasts, transposes, slices) need no copy first.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vkml/core/kernel.h"
#include "vkml/core/scalar.h"
#include "vkml/core/tensor.h"

namespace vk::vulkan {

inline constexpr int kMaxDims = 6;  // after merging dims that are contiguous in every tensor

// Push constants of elementwise.comp, laid out as its Params block (std430). A walk of fewer dims
// pads the shape with 1s in front; a walk of more runs as several dispatches (launch.cpp).
struct StridedParams {
  uint32_t shape[kMaxDims] = {1, 1, 1, 1, 1, 1};
  int32_t offset[4] = {};
  int32_t stride[3 * kMaxDims] = {};  // rows: out, a, b; with three inputs a, b, c (out dense)
  uint32_t scalar[4] = {};            // two constants of the output's dtype (64 bits each at most)
};
static_assert(sizeof(StridedParams) == 128, "elementwise.comp's push constants");

// The SPIR-V of a shader compiled into the library (build/vulkan_shaders.cpp, generated).
std::span<const unsigned char> shader_spirv(std::string_view name);

// The name of shader `op`'s variant for these dtypes, output first: `op` itself when all are
// float32, else op_<short names> ("eq_b8f64f64"), as cmake/vkml_vulkan.cmake names them.
std::string variant_name(std::string_view op, std::span<const DType> dtypes);

// One launch of elementwise.comp.
struct Strided {
  std::string_view shader;  // the op's shader; the variant follows from the dtypes
  std::string_view op;      // named in errors
  uint32_t scalar[4] = {};  // StridedParams::scalar
  // hostwait: the deferred error of this launch (Context::expect_valid), 0 for none: its FLAG
  // variants bind the context's error word after the output and set it to this slot (passed as
  // scalar[3], which those variants leave unused) on a bad value.
  uint32_t error_slot = 0;
};

// Runs s over ts (output first; every tensor viewed at the output's shape, on the Vulkan
// device). With three inputs the output must be contiguous.
void run_strided(const Strided& s, std::span<const Tensor* const> ts);

// The same into a fresh tensor of m's shape and dtype, with `in` as the inputs.
Tensor run_strided(const Strided& s, const std::vector<Tensor>& in, const Meta& m);

// The same with `scalar` as the float32 constant (fill's value).
void run_elementwise(std::string_view name, std::initializer_list<const Tensor*> ts,
                     std::string_view op, float scalar = 0.0f);

// out = v converted to out's dtype, every element (out of any strides).
void fill(const Tensor& out, const Scalar& v, std::string_view op);

// DTypeError naming op and the device unless the device holds tensors of dtype t: bool, uint8 and
// int8 need 8-bit storage, float16, bfloat16 and int16 16-bit storage, int64 shaderInt64, float64
// shaderFloat64 (and shaderInt64, for bit casts).
void check_dtype(DType t, std::string_view op);

// DTypeError naming op and the device unless t is float32 (ops without other dtypes here).
void check_float32(const Tensor& t, std::string_view op);

}  // namespace vk::vulkan
