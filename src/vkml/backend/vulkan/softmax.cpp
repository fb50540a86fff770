// The softmax family on the Vulkan device (shaders/softmax.comp): softmax (scaled, optionally
// causal), log_softmax and their backward ops, float32, one workgroup per row along the dim. The
// inputs are made contiguous first (a strided copy), as the CPU's kernels do.
#include <limits>
#include <string>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"

namespace vk::vulkan {
namespace {

// Push constants of softmax.comp, laid out as its Params block (std430).
struct SoftmaxParams {
  uint32_t rows = 0, K = 0, inner = 1, queries = 0;
  float scale = 1.0f;
  int32_t a_offset = 0, b_offset = 0;
};
static_assert(sizeof(SoftmaxParams) == 28, "softmax.comp's push constants");

constexpr int64_t kGroupSize = 128;  // local_size_x of softmax.comp
// Rows up to this long are one invocation's each (the *_short variants, 64 to a workgroup): for
// many rows of hundreds of elements that ran 2-3 times faster on lavapipe than a workgroup per row
// (measured at 768 elements).
constexpr int64_t kShortRow = 1024;
// The longest row: each invocation then makes at most 3 * 8192 loop iterations in all (lavapipe
// stops a shader once it has made 65535, counting all its loops together, silently).
constexpr int64_t kMaxRow = kGroupSize * 8192;

// x itself when contiguous (its offset goes to the shader), else a contiguous copy.
Tensor contiguous_of(const Tensor& x, const char* op) {
  check_float32(x, op);
  if (x.is_contiguous()) return x;
  Tensor c = Tensor::empty(x.shape(), DType::Float32, x.device());
  copy_into(c, x);
  return c;
}

// The rows along dim of a (contiguous), K elements `inner` apart; SizeError past the loop bound
// and 32-bit indices.
SoftmaxParams rows_of(const Tensor& a, const Tensor& b, int64_t dim, const char* op) {
  SoftmaxParams p;
  int64_t outer = 1, K = 1, inner = 1;
  for (int64_t d = 0; d < a.ndim(); ++d) (d < dim ? outer : d == dim ? K : inner) *= a.shape()[d];
  VK_CHECK(K <= kMaxRow, SizeError, op, ": rows of ", K, " elements are longer than the vulkan ",
           "backend's ", kMaxRow);
  for (const Tensor* t : {&a, &b})
    VK_CHECK(!t->defined() || t->offset() + a.numel() <= std::numeric_limits<int32_t>::max(),
             SizeError, op, ": ", t->describe(),
             " reaches elements beyond the vulkan backend's 32-bit indices");
  p.rows = static_cast<uint32_t>(outer * inner);
  p.K = static_cast<uint32_t>(K);
  p.inner = static_cast<uint32_t>(inner);
  p.a_offset = static_cast<int32_t>(a.offset());
  p.b_offset = b.defined() ? static_cast<int32_t>(b.offset()) : 0;
  return p;
}

// Dispatches `shader` over `groups` workgroups with the defined tensors of ts bound in order, the
// first one written.
void launch(const std::string& shader, std::initializer_list<const Tensor*> ts,
            const SoftmaxParams& p, uint64_t groups, const char* op) {
  Context& ctx = context();
  const std::vector<Buffer*> buffers = bound_buffers(ts, op);
  const Pipeline& pipe = ctx.pipeline(shader, shader_spirv(shader),
                                      static_cast<uint32_t>(buffers.size()), sizeof(SoftmaxParams));
  ctx.dispatch(pipe, buffers, &p, groups);
}

// Runs variant `name` of softmax.comp over the rows along a.dim of x (and y), into a new tensor.
Tensor run_rows(const std::string& name, const Tensor& x_in, const Tensor* y_in, const Attrs& a,
                const Meta& m, const char* op) {
  const Tensor x = contiguous_of(x_in, op);
  const Tensor y = y_in ? contiguous_of(*y_in, op) : Tensor();
  Tensor out = Tensor::empty(m.shape, DType::Float32, m.device);
  if (out.numel() == 0) return out;
  SoftmaxParams p = rows_of(x, y, a.dim, op);
  // softmax's own attrs; log_softmax and the backward ops ignore them, as on the CPU
  const bool plain = name != "softmax";
  p.scale = plain ? 1.0f : static_cast<float>(a.softmax.scale);
  p.queries = !plain && a.softmax.causal ? static_cast<uint32_t>(x.shape()[x.ndim() - 2]) : 0;
  const bool short_rows = p.K <= kShortRow;
  launch(short_rows ? name + "_short" : name, {&out, &x, &y}, p,
         short_rows ? (uint64_t{p.rows} + 63) / 64 : uint64_t{p.rows}, op);
  return out;
}

}  // namespace

VK_KERNEL(softmax) { return run_rows("softmax", in[0], nullptr, a, m, "softmax"); }
VK_KERNEL(log_softmax) { return run_rows("log_softmax", in[0], nullptr, a, m, "log_softmax"); }
VK_KERNEL(softmax_backward) {
  return run_rows("softmax_backward", in[0], &in[1], a, m, "softmax_backward");
}
VK_KERNEL(log_softmax_backward) {
  return run_rows("log_softmax_backward", in[0], &in[1], a, m, "log_softmax_backward");
}

}  // namespace vk::vulkan
