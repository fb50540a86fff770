// The scan family on the Vulkan device (shaders/scan.comp): one invocation per row along the
// dim, walking it in order, in passes of at most kMaxRow elements (vkfix: rows of any length).
// float32, int32, int64 and (with shaderFloat64) float64; float32 sums
// and products accumulate in float32 (the CPU's in double, as PyTorch's).
#include <algorithm>

#include "vkml/backend/vulkan/rows.h"

namespace vk::vulkan {
namespace {

// Push constants of scan.comp, laid out as its Params block (std430).
struct ScanParams {
  uint32_t rows = 0, K = 0, inner = 1;
  int32_t x_offset = 0;
  uint32_t start = 0, stop = 0;  // the pass's k range
};
static_assert(sizeof(ScanParams) == 24, "scan.comp's push constants");

// The most of a row one pass walks: lavapipe stops a shader after 65535 loop iterations.
constexpr uint32_t kMaxRow = 60000;

ScanParams params_of(const Tensor& x, const Attrs& a) {
  const rows::Split s = rows::split(x.shape(), x.ndim() == 0 ? 0 : a.dim);
  ScanParams p;
  p.rows = static_cast<uint32_t>(s.outer * s.inner);
  p.K = static_cast<uint32_t>(s.K);
  p.inner = static_cast<uint32_t>(s.inner);
  p.x_offset = static_cast<int32_t>(x.offset());
  return p;
}

// Runs variant `name` over rows of any length: one pass per kMaxRow elements of a row, each
// carrying on from the outputs the one before wrote (a barrier between them: they write `outs`).
void scan_passes(const std::string& name, std::initializer_list<const Tensor*> ts, ScanParams p,
                 uint32_t outs, const char* op) {
  for (uint32_t start = 0; start < p.K; start += kMaxRow) {
    p.start = start;
    p.stop = start + std::min(kMaxRow, p.K - start);
    rows::launch(name, ts, p, p.rows, outs, op);
  }
}

Tensor accumulate(const char* name, const std::vector<Tensor>& in, const Attrs& a, const Meta& m) {
  const std::string suffix = rows::dtype_suffix(in[0].dtype(), name);
  const Tensor x = rows::contiguous_of(in[0], name);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (x.numel() == 0) return out;
  scan_passes(std::string(name) + "_" + suffix, {&out, &x}, params_of(x, a), 1, name);
  return out;
}

Outputs extreme(const char* name, const std::vector<Tensor>& in, const Attrs& a, const Meta& m) {
  const std::string suffix = rows::dtype_suffix(in[0].dtype(), name);
  const Tensor x = rows::contiguous_of(in[0], name);
  Tensor values = Tensor::empty(m.shape, m.dtype, m.device);
  Tensor indices = Tensor::empty(m.shape, DType::Int64, m.device);
  if (x.numel() == 0) return {values, indices};
  scan_passes(std::string(name) + "_" + suffix, {&values, &indices, &x}, params_of(x, a), 2, name);
  return {values, indices};
}

}  // namespace

VK_KERNEL(cumsum) { return accumulate("cumsum", in, a, m); }
VK_KERNEL(cumprod) { return accumulate("cumprod", in, a, m); }
VK_KERNEL(cummax) { return extreme("cummax", in, a, m); }
VK_KERNEL(cummin) { return extreme("cummin", in, a, m); }

}  // namespace vk::vulkan
