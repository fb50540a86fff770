// Reductions on the Vulkan device: sum and mean over any set of dims (shaders/reduce.comp), one
// output element per invocation, summed in a fixed order with compensation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"

namespace vk::vulkan {
namespace {

// Push constants of reduce.comp, laid out as its Params block (std430).
struct ReduceParams {
  uint32_t n_out = 0, n_red = 0, kept_ndim = 0, red_ndim = 0;
  float scale = 1.0f;
  int32_t in_offset = 0;
  uint32_t chunk = 0, n_chunks = 1;
  uint32_t kept_shape[kMaxDims] = {};
  int32_t kept_stride[kMaxDims] = {};
  uint32_t red_shape[kMaxDims] = {};
  int32_t red_stride[kMaxDims] = {};
};
static_assert(sizeof(ReduceParams) == 128, "reduce.comp's push constants");

constexpr uint32_t kGroupSize = 64;  // local_size_x of reduce.comp

// Dims of x as (size, stride) pairs in order, without size-1 dims, neighbours merged where
// contiguous: at most kMaxDims of them.
struct DimList {
  std::vector<int64_t> size, stride;
  void push(int64_t n, int64_t s) {
    if (n == 1) return;
    if (!size.empty() && stride.back() == s * n) {
      size.back() *= n;
      stride.back() = s;
      return;
    }
    size.push_back(n);
    stride.push_back(s);
  }
};

void check_fits(const DimList& d, const Tensor& x, const char* op) {
  VK_CHECK(d.size.size() <= static_cast<size_t>(kMaxDims), NotImplementedError, op,
           ": the vulkan backend reduces over at most ", kMaxDims, " separate dims; ", x.describe(),
           " needs ", d.size.size(), " (make it contiguous first)");
}

constexpr int64_t kChunk = 4096;  // reduced elements one invocation sums

// One pass of reduce.comp: into `dst` (contiguous), n_out * n_chunks sums of `src`'s elements at
// `offset` walked by `kept` and `red`.
void run_pass(const Tensor& dst, const Tensor& src, int64_t offset, const DimList& kept,
              const DimList& red, int64_t n_out, int64_t n_red, float scale, const char* op) {
  ReduceParams p;
  const int64_t n_chunks = std::max<int64_t>(1, (n_red + kChunk - 1) / kChunk);
  VK_CHECK(n_out * n_chunks <= std::numeric_limits<int32_t>::max() &&
               n_red <= std::numeric_limits<int32_t>::max(),
           SizeError, op, ": ", src.describe(), " is more than the vulkan backend indexes");
  p.n_out = static_cast<uint32_t>(n_out);
  p.n_red = static_cast<uint32_t>(n_red);
  p.chunk = static_cast<uint32_t>(kChunk);
  p.n_chunks = static_cast<uint32_t>(n_chunks);
  p.kept_ndim = static_cast<uint32_t>(kept.size.size());
  p.red_ndim = static_cast<uint32_t>(red.size.size());
  p.scale = scale;
  p.in_offset = static_cast<int32_t>(offset);
  int64_t hi = offset;
  for (size_t d = 0; d < kept.size.size(); ++d) {
    p.kept_shape[d] = static_cast<uint32_t>(kept.size[d]);
    p.kept_stride[d] = static_cast<int32_t>(kept.stride[d]);
    hi += (kept.size[d] - 1) * kept.stride[d];
  }
  for (size_t d = 0; d < red.size.size(); ++d) {
    p.red_shape[d] = static_cast<uint32_t>(red.size[d]);
    p.red_stride[d] = static_cast<int32_t>(red.stride[d]);
    hi += (red.size[d] - 1) * red.stride[d];
  }
  VK_CHECK(hi <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ", src.describe(),
           " reaches elements beyond the vulkan backend's 32-bit indices");
  Context& ctx = context();
  Buffer* buffers[] = {&buffer_of(dst), &buffer_of(src)};
  for (Buffer* b : buffers)
    VK_CHECK(b->size <= ctx.max_storage_range(), SizeError, op, ": a tensor of ", b->size,
             " bytes is larger than ", ctx.device_name(), " binds in one storage buffer");
  const Pipeline& pipe = ctx.pipeline("reduce", shader_spirv("reduce"), 2, sizeof(ReduceParams));
  ctx.dispatch(pipe, buffers, &p, (uint64_t(n_out * n_chunks) + kGroupSize - 1) / kGroupSize);
}

Tensor reduce(const Tensor& x, const std::vector<int64_t>& dims, const Meta& m, bool mean,
              const char* op) {
  check_float32(x, op);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  DimList kept, red;
  int64_t n_red = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    (reduced ? red : kept).push(x.shape()[d], x.strides()[d]);
    if (reduced) n_red *= x.shape()[d];
  }
  check_fits(kept, x, op);
  check_fits(red, x, op);
  const int64_t n_out = out.numel();
  if (n_out == 0) return out;
  // mean of nothing is NaN, as on the CPU (0 * NaN)
  const float scale = !mean        ? 1.0f
                      : n_red == 0 ? std::numeric_limits<float>::quiet_NaN()
                                   : static_cast<float>(1.0 / static_cast<double>(n_red));
  // Passes of at most kChunk elements per sum until one sum per output is left: each pass's
  // partial sums, (n_out, n_chunks) row-major, are the next pass's input.
  Tensor src = x;
  int64_t offset = x.offset();
  while (n_red > kChunk) {
    const int64_t n_chunks = (n_red + kChunk - 1) / kChunk;
    Tensor partial = Tensor::empty({n_out * n_chunks}, DType::Float32, m.device);
    run_pass(partial, src, offset, kept, red, n_out, n_red, 1.0f, op);
    src = partial;
    offset = 0;
    kept = DimList{};
    kept.push(n_out, n_chunks);
    red = DimList{};
    red.push(n_chunks, 1);
    n_red = n_chunks;
  }
  run_pass(out, src, offset, kept, red, n_out, n_red, scale, op);
  return out;
}

}  // namespace

VK_KERNEL(sum) { return reduce(in[0], a.dims, m, false, "sum"); }
VK_KERNEL(mean) { return reduce(in[0], a.dims, m, true, "mean"); }

}  // namespace vk::vulkan
