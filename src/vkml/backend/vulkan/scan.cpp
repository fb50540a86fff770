// The scan family on the Vulkan device (shaders/scan.comp): one invocation per row along the
// dim, walking it in order. float32, int32, int64 and (with shaderFloat64) float64; float32 sums
// and products accumulate in float32 (the CPU's in double, as PyTorch's).
#include "vkml/backend/vulkan/rows.h"

namespace vk::vulkan {
namespace {

// Push constants of scan.comp, laid out as its Params block (std430).
struct ScanParams {
  uint32_t rows = 0, K = 0, inner = 1;
  int32_t x_offset = 0;
};
static_assert(sizeof(ScanParams) == 16, "scan.comp's push constants");

// The longest row one invocation walks: lavapipe stops a shader after 65535 loop iterations.
constexpr int64_t kMaxRow = 60000;

ScanParams params_of(const Tensor& x, const Attrs& a, const char* op) {
  const rows::Split s = rows::split(x.shape(), x.ndim() == 0 ? 0 : a.dim);
  VK_CHECK(s.K <= kMaxRow, SizeError, op, ": rows of ", s.K,
           " elements are longer than the vulkan backend's ", kMaxRow);
  ScanParams p;
  p.rows = static_cast<uint32_t>(s.outer * s.inner);
  p.K = static_cast<uint32_t>(s.K);
  p.inner = static_cast<uint32_t>(s.inner);
  p.x_offset = static_cast<int32_t>(x.offset());
  return p;
}

Tensor accumulate(const char* name, const std::vector<Tensor>& in, const Attrs& a, const Meta& m) {
  const std::string suffix = rows::dtype_suffix(in[0].dtype(), name);
  const Tensor x = rows::contiguous_of(in[0], name);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (x.numel() == 0) return out;
  const ScanParams p = params_of(x, a, name);
  rows::launch(std::string(name) + "_" + suffix, {&out, &x}, p, p.rows, 1, name);
  return out;
}

Outputs extreme(const char* name, const std::vector<Tensor>& in, const Attrs& a, const Meta& m) {
  const std::string suffix = rows::dtype_suffix(in[0].dtype(), name);
  const Tensor x = rows::contiguous_of(in[0], name);
  Tensor values = Tensor::empty(m.shape, m.dtype, m.device);
  Tensor indices = Tensor::empty(m.shape, DType::Int64, m.device);
  if (x.numel() == 0) return {values, indices};
  const ScanParams p = params_of(x, a, name);
  rows::launch(std::string(name) + "_" + suffix, {&values, &indices, &x}, p, p.rows, 2, name);
  return {values, indices};
}

}  // namespace

VK_KERNEL(cumsum) { return accumulate("cumsum", in, a, m); }
VK_KERNEL(cumprod) { return accumulate("cumprod", in, a, m); }
VK_KERNEL(cummax) { return extreme("cummax", in, a, m); }
VK_KERNEL(cummin) { return extreme("cummin", in, a, m); }

}  // namespace vk::vulkan
