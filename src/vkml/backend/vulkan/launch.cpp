#include "vkml/backend/vulkan/launch.h"

#include <limits>
#include <string>
#include <vector>

#include "vkml/backend/vulkan/memory.h"
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

constexpr uint32_t kGroupSize = 256;  // local_size_x of elementwise.comp

// The walk over `shape` as at most kMaxDims dims: dims of size 1 dropped, and neighbours merged
// where every tensor steps through them as through one dim.
StridedParams plan(const Shape& shape, std::initializer_list<const Tensor*> ts,
                   std::string_view op) {
  StridedParams p;
  const int64_t n = numel_of(shape, op);
  if (n == 0) return p;  // nothing to walk
  VK_CHECK(n <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ", n,
           " elements are more than the vulkan backend indexes in one dispatch (2^31 - 1)");
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides(ts.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !sizes.empty();
    size_t k = 0;
    for (const Tensor* t : ts) {
      const int64_t s = t->strides()[d];
      merge = merge && strides[k].back() == s * shape[d];
      ++k;
    }
    if (merge) {
      sizes.back() *= shape[d];
      k = 0;
      for (const Tensor* t : ts) strides[k++].back() = t->strides()[d];
      continue;
    }
    sizes.push_back(shape[d]);
    k = 0;
    for (const Tensor* t : ts) strides[k++].push_back(t->strides()[d]);
  }
  VK_CHECK(sizes.size() <= static_cast<size_t>(kMaxDims), NotImplementedError, op,
           ": the vulkan backend walks at most ", kMaxDims, " dims at once; this view of shape ",
           shape_str(shape), " needs ", sizes.size(), " (make it contiguous first)");
  p.n = static_cast<uint32_t>(n);
  p.ndim = static_cast<uint32_t>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) p.shape[d] = static_cast<uint32_t>(sizes[d]);
  size_t k = 0;
  for (const Tensor* t : ts) {
    // Every element this walk reaches must be indexable with 32-bit ints in the shader.
    int64_t hi = t->offset(), lo = t->offset();
    for (size_t d = 0; d < sizes.size(); ++d) {
      const int64_t reach = (sizes[d] - 1) * strides[k][d];
      (reach > 0 ? hi : lo) += reach;
    }
    VK_CHECK(lo >= 0 && hi <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ",
             t->describe(), " reaches elements beyond the vulkan backend's 32-bit indices");
    p.offset[k] = static_cast<int32_t>(t->offset());
    for (size_t d = 0; d < sizes.size(); ++d)
      p.stride[k * kMaxDims + d] = static_cast<int32_t>(strides[k][d]);
    ++k;
  }
  return p;
}

}  // namespace

void check_float32(const Tensor& t, std::string_view op) {
  VK_CHECK(t.dtype() == DType::Float32, DTypeError, op, ": the vulkan device computes float32 ",
           "tensors in this version of vkml, got ", dtype_name(t.dtype()),
           " (move it to the cpu, or cast it to float32)");
}

void run_elementwise(std::string_view name, std::initializer_list<const Tensor*> ts,
                     std::string_view op, float scalar) {
  for (const Tensor* t : ts) check_float32(*t, op);
  const Tensor& out = **ts.begin();
  StridedParams p = plan(out.shape(), ts, op);
  p.scalar = scalar;
  if (p.n == 0) return;
  Context& ctx = context();
  std::vector<Buffer*> buffers;
  for (const Tensor* t : ts) {
    Buffer& b = buffer_of(*t);
    VK_CHECK(b.size <= ctx.max_storage_range(), SizeError, op, ": ", t->describe(), " (", b.size,
             " bytes) is larger than ", ctx.device_name(),
             " binds in one storage buffer (maxStorageBufferRange ", ctx.max_storage_range(),
             " bytes)");
    buffers.push_back(&b);
  }
  const std::string shader(name);
  const Pipeline& pipe = ctx.pipeline(shader, shader_spirv(name),
                                      static_cast<uint32_t>(buffers.size()), sizeof(StridedParams));
  ctx.dispatch(pipe, buffers, &p, (uint64_t{p.n} + kGroupSize - 1) / kGroupSize);
}

}  // namespace vk::vulkan
