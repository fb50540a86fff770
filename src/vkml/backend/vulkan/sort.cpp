// The sort family on the Vulkan device (shaders/sort.comp): a stable merge sort of every row, one
// pass per doubling of the sorted runs (ceil(log2 K) merges, then one pass writing the result
// back in the input's layout, or each row's first `keep` for topk). The same order as the CPU's
// (stable, NaN largest), so values and indices are bitwise the CPU's. float32, int32, int64 and
// (with shaderFloat64) float64. And searchsorted (shaders/searchsorted.comp): a binary search per
// value.
#include "vkml/backend/vulkan/rows.h"

namespace vk::vulkan {
namespace {

// Push constants of sort.comp, laid out as its Params block (std430).
struct SortParams {
  uint32_t rows = 0, K = 0, inner = 1, width = 1, descending = 0;
  int32_t x_offset = 0;
  uint32_t keep = 0;  // the finish pass writes each row's first `keep` (topk)
};
static_assert(sizeof(SortParams) == 28, "sort.comp's push constants");

// Push constants of searchsorted.comp.
struct SearchParams {
  uint32_t n = 0, M = 0, n_per_row = 1, right = 0, out_int32 = 0;
  int32_t b_offset = 0, v_offset = 0;
};
static_assert(sizeof(SearchParams) == 28, "searchsorted.comp's push constants");

}  // namespace

VK_KERNEL(sort) {
  const char* op = "sort";
  const std::string suffix = rows::dtype_suffix(in[0].dtype(), op);
  const Tensor x = rows::contiguous_of(in[0], op);
  Tensor values = Tensor::empty(m.shape, m.dtype, m.device);
  Tensor indices = Tensor::empty(m.shape, DType::Int64, m.device);
  if (x.numel() == 0) return {values, indices};
  const rows::Split s = rows::split(x.shape(), x.ndim() == 0 ? 0 : a.dim);
  SortParams p;
  p.rows = static_cast<uint32_t>(s.outer * s.inner);
  p.K = static_cast<uint32_t>(s.K);
  p.inner = static_cast<uint32_t>(s.inner);
  p.descending = a.sort.descending ? 1u : 0u;
  p.keep = static_cast<uint32_t>(x.ndim() == 0 ? 1 : m.shape[static_cast<size_t>(a.dim)]);
  p.x_offset = static_cast<int32_t>(x.offset());
  const uint64_t n = static_cast<uint64_t>(x.numel());
  // Two (keys, indices) buffers, rows side by side; each merge reads one and writes the other.
  Tensor keys[2] = {Tensor::empty({x.numel()}, x.dtype(), m.device),
                    Tensor::empty({x.numel()}, x.dtype(), m.device)};
  Tensor idx[2] = {Tensor::empty({x.numel()}, DType::Int32, m.device),
                   Tensor::empty({x.numel()}, DType::Int32, m.device)};
  // The first pass merges runs of 1 read from x into runs of 2 (idx[0] is bound as an input it
  // does not read); each next one doubles them.
  rows::launch("sort_first_" + suffix, {&keys[0], &idx[0], &x, &idx[0]}, p, n, 2, op);
  int cur = 0;
  for (int64_t width = 2; width < s.K; width *= 2) {
    p.width = static_cast<uint32_t>(width);
    rows::launch("sort_merge_" + suffix, {&keys[1 - cur], &idx[1 - cur], &keys[cur], &idx[cur]}, p,
                 n, 2, op);
    cur = 1 - cur;
  }
  p.x_offset = 0;
  rows::launch("sort_finish_" + suffix, {&values, &indices, &keys[cur], &idx[cur]}, p, n, 2, op);
  return {values, indices};
}

}  // namespace vk::vulkan

namespace vk::vulkan {

VK_KERNEL(searchsorted) {
  const char* op = "searchsorted";
  const std::string suffix = rows::dtype_suffix(in[1].dtype(), op);
  const Tensor b = rows::contiguous_of(in[0], op), v = rows::contiguous_of(in[1], op);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  SearchParams p;
  p.n = static_cast<uint32_t>(v.numel());
  p.M = static_cast<uint32_t>(b.shape().back());
  p.n_per_row = static_cast<uint32_t>(b.ndim() == 1 ? v.numel() : v.shape().back());
  p.right = a.sort.right ? 1u : 0u;
  p.out_int32 = m.dtype == DType::Int32 ? 1u : 0u;
  p.b_offset = static_cast<int32_t>(b.offset());
  p.v_offset = static_cast<int32_t>(v.offset());
  rows::launch("searchsorted_" + suffix, {&out, &b, &v}, p, p.n, 1, op);
  return out;
}

}  // namespace vk::vulkan
