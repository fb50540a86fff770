#include "vkml/backend/vulkan/movement.h"

#include <limits>

#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

constexpr uint32_t kGroupSize = 256;  // local_size_x of the shape and index shaders
constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();

// Push constants of shape_copy.comp (std430).
struct CopyParams {
  uint32_t n = 0, ndim = 0;
  uint32_t value[2] = {};
  uint32_t shape[kMoveDims] = {};
  int32_t offset[2] = {};
  int32_t stride[2 * kMoveDims] = {};
};
static_assert(sizeof(CopyParams) == 120, "shape_copy.comp's push constants");

std::string variant(std::string_view mode, int es) {
  return std::string(mode) + "_" + std::to_string(es);
}

// The walk's sizes and each tensor's offset and strides, as the copy shader takes them.
CopyParams copy_params(const Walk& w, std::initializer_list<const Tensor*> ts,
                       std::string_view op) {
  CopyParams p;
  p.n = static_cast<uint32_t>(w.numel);
  p.ndim = static_cast<uint32_t>(w.sizes.size());
  for (size_t d = 0; d < w.sizes.size(); ++d) p.shape[d] = static_cast<uint32_t>(w.sizes[d]);
  size_t k = 0;
  for (const Tensor* t : ts) {
    check_reach(*t, t->offset(), w.sizes, w.strides[k], 0, op);
    p.offset[k] = static_cast<int32_t>(t->offset());
    for (size_t d = 0; d < w.sizes.size(); ++d)
      p.stride[k * kMoveDims + d] = static_cast<int32_t>(w.strides[k][d]);
    ++k;
  }
  return p;
}

}  // namespace

Walk plan_walk(const Shape& shape, const std::vector<const Strides*>& strides,
               std::string_view op) {
  Walk w;
  w.numel = numel_of(shape, op);
  w.strides.resize(strides.size());
  if (w.numel == 0) return w;
  VK_CHECK(w.numel <= kMaxIndex, SizeError, op, ": ", w.numel,
           " elements are more than the vulkan backend indexes in one dispatch (2^31 - 1)");
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !w.sizes.empty();
    for (size_t k = 0; k < strides.size() && merge; ++k)
      merge = w.strides[k].back() == (*strides[k])[d] * shape[d];
    if (merge) {
      w.sizes.back() *= shape[d];
      for (size_t k = 0; k < strides.size(); ++k) w.strides[k].back() = (*strides[k])[d];
      continue;
    }
    w.sizes.push_back(shape[d]);
    for (size_t k = 0; k < strides.size(); ++k) w.strides[k].push_back((*strides[k])[d]);
  }
  VK_CHECK(w.sizes.size() <= static_cast<size_t>(kMoveDims), NotImplementedError, op,
           ": the vulkan backend walks at most ", kMoveDims, " dims at once; this view of shape ",
           shape_str(shape), " needs ", w.sizes.size(), " (make it contiguous first)");
  return w;
}

void check_reach(const Tensor& t, int64_t offset, const std::vector<int64_t>& sizes,
                 const std::vector<int64_t>& strides, int64_t extra, std::string_view op) {
  // Each reach lies inside t's storage (fewer than 2^63 bytes): these sums cannot overflow.
  int64_t hi = offset, lo = offset;
  (extra > 0 ? hi : lo) += extra;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t reach = (sizes[d] - 1) * strides[d];
    (reach > 0 ? hi : lo) += reach;
  }
  VK_CHECK(lo >= 0 && hi <= kMaxIndex, SizeError, op, ": ", t.describe(),
           " reaches elements beyond the vulkan backend's 32-bit indices");
}

int element_size(DType dtype, std::string_view op) {
  if (dtype_size(dtype) < 4) check_dtype(dtype, op);  // 8- and 16-bit storage
  return static_cast<int>(dtype_size(dtype));
}

void launch(std::string_view name, std::span<Buffer* const> buffers, const void* push,
            uint32_t push_bytes, int64_t n, uint32_t writes) {
  Context& ctx = context();
  const Pipeline& pipe = ctx.pipeline(std::string(name), shader_spirv(name),
                                      static_cast<uint32_t>(buffers.size()), push_bytes);
  const uint64_t groups = (static_cast<uint64_t>(n) + kGroupSize - 1) / kGroupSize;
  ctx.dispatch(pipe, buffers, push, groups, writes);
}

void copy_strided(const Tensor& dst, const Tensor& src, std::string_view op) {
  const int es = element_size(dst.dtype(), op);
  const Walk w = plan_walk(dst.shape(), {&dst.strides(), &src.strides()}, op);
  if (w.numel == 0) return;
  const CopyParams p = copy_params(w, {&dst, &src}, op);
  Buffer* buffers[] = {&bound_buffer(dst, op), &bound_buffer(src, op)};
  launch(variant("shape_copy", es), buffers, &p, sizeof(p), w.numel);
}

void fill_bits(const Tensor& dst, uint64_t bits, std::string_view op) {
  const int es = element_size(dst.dtype(), op);
  const Walk w = plan_walk(dst.shape(), {&dst.strides()}, op);
  if (w.numel == 0) return;
  CopyParams p = copy_params(w, {&dst}, op);
  p.value[0] = static_cast<uint32_t>(bits);
  p.value[1] = static_cast<uint32_t>(bits >> 32);
  Buffer* buffers[] = {&bound_buffer(dst, op)};
  launch(variant("shape_fill", es), buffers, &p, sizeof(p), w.numel);
}

}  // namespace vk::vulkan
