// What the sort and scan families share on the Vulkan device: the dtypes they compute, inputs
// made contiguous, and the launch of a shader variant.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"

namespace vk::vulkan::rows {

// The variant suffix of dtype t ("f32", "f64", "i32", "i64"); DTypeError naming op for bool and
// for dtypes the device does not compute.
inline std::string dtype_suffix(DType t, const char* op) {
  VK_CHECK(t != DType::Bool, DTypeError, op,
           ": bool tensors are not supported on the vulkan "
           "device (cast to an integer dtype first)");
  check_dtype(t, op);
  switch (t) {
    case DType::Float64:
      return "f64";
    case DType::Int32:
      return "i32";
    case DType::Int64:
      return "i64";
    default:
      return "f32";
  }
}

// x itself when contiguous (its offset goes to the shader), else a contiguous copy; SizeError when
// its elements are past the shaders' 32-bit indices.
inline Tensor contiguous_of(const Tensor& x, const char* op) {
  Tensor c = x;
  if (!x.is_contiguous()) {
    c = Tensor::empty(x.shape(), x.dtype(), x.device());
    copy_into(c, x);
  }
  VK_CHECK(c.offset() + 2 * c.numel() <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ",
           x.describe(), " reaches elements beyond the vulkan backend's 32-bit indices");
  return c;
}

// (outer, K, inner) around dim.
struct Split {
  int64_t outer = 1, K = 1, inner = 1;
};
inline Split split(const Shape& shape, int64_t dim) {
  Split s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < dim ? s.outer : d == dim ? s.K : s.inner) *= shape[d];
  return s;
}

// Dispatches variant `name` over `items` invocations (64 to a workgroup) with the tensors of ts
// bound in order, the first `writes` of them written.
template <class Params>
void launch(const std::string& name, std::initializer_list<const Tensor*> ts, const Params& p,
            uint64_t items, uint32_t writes, const char* op) {
  Context& ctx = context();
  const std::vector<Buffer*> buffers = bound_buffers(ts, op);
  const Pipeline& pipe =
      ctx.pipeline(name, shader_spirv(name), static_cast<uint32_t>(buffers.size()), sizeof(Params));
  ctx.dispatch(pipe, buffers, &p, (items + 63) / 64, writes);
}

}  // namespace vk::vulkan::rows
