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
// Rows up to this long are one invocation's each (the *_short variants, 64 to a workgroup): on
// lavapipe a workgroup per row costs about 0.2 ms a row in barriers, 2-3 times the row's work.
constexpr int64_t kShortRow = 1024;
// The longest row: each invocation then loops at most 16384 times (lavapipe stops a shader loop
// after 65535 iterations, silently).
constexpr int64_t kMaxRow = kGroupSize * 16384;

// x itself when contiguous (its offset goes to the shader), else a contiguous copy.
Tensor contiguous_of(const Tensor& x, const char* op) {
  check_float32(x, op);
  if (x.is_contiguous()) return x;
  Tensor c = Tensor::empty(x.shape(), DType::Float32, x.device());
  copy_into(c, x);
  return c;
}

// Runs variant `name` of softmax.comp over the rows along `dim` of a (and b), into a new tensor of
// m.
Tensor run_rows(const std::string& name, const Tensor& a_in, const Tensor* b_in, const Attrs& at,
                const Meta& m, float scale, bool causal, const char* op) {
  const Tensor a = contiguous_of(a_in, op);
  const Tensor b = b_in ? contiguous_of(*b_in, op) : Tensor();
  Tensor out = Tensor::empty(m.shape, DType::Float32, m.device);
  const int64_t n = out.numel();
  if (n == 0) return out;
  SoftmaxParams p;
  int64_t outer = 1, K = 1, inner = 1;
  for (int64_t d = 0; d < a.ndim(); ++d)
    (d < at.dim ? outer : d == at.dim ? K : inner) *= a.shape()[d];
  VK_CHECK(K <= kMaxRow, SizeError, op, ": rows of ", K, " elements are longer than the vulkan ",
           "backend's ", kMaxRow);
  for (const Tensor* t : {&a, &b})
    VK_CHECK(!t->defined() || t->offset() + n <= std::numeric_limits<int32_t>::max(), SizeError, op,
             ": ", t->describe(), " reaches elements beyond the vulkan backend's 32-bit indices");
  p.rows = static_cast<uint32_t>(outer * inner);
  p.K = static_cast<uint32_t>(K);
  p.inner = static_cast<uint32_t>(inner);
  p.queries = causal ? static_cast<uint32_t>(a.shape()[a.ndim() - 2]) : 0;
  p.scale = scale;
  p.a_offset = static_cast<int32_t>(a.offset());
  p.b_offset = b.defined() ? static_cast<int32_t>(b.offset()) : 0;
  const bool short_rows = K <= kShortRow;
  const std::string shader = short_rows ? name + "_short" : name;
  Context& ctx = context();
  std::vector<Buffer*> buffers;
  for (const Tensor* t : {static_cast<const Tensor*>(&out), &a, &b}) {
    if (!t->defined()) continue;
    Buffer& buf = buffer_of(*t);
    VK_CHECK(buf.size <= ctx.max_storage_range(), SizeError, op, ": ", t->describe(), " (",
             buf.size, " bytes) is larger than ", ctx.device_name(),
             " binds in one storage buffer");
    buffers.push_back(&buf);
  }
  const Pipeline& pipe = ctx.pipeline(shader, shader_spirv(shader),
                                      static_cast<uint32_t>(buffers.size()), sizeof(SoftmaxParams));
  ctx.dispatch(pipe, buffers, &p, short_rows ? (uint64_t{p.rows} + 63) / 64 : uint64_t{p.rows});
  return out;
}

}  // namespace

VK_KERNEL(softmax) {
  return run_rows("softmax", in[0], nullptr, a, m, static_cast<float>(a.softmax.scale),
                  a.softmax.causal, "softmax");
}
VK_KERNEL(log_softmax) {
  return run_rows("log_softmax", in[0], nullptr, a, m, 1.0f, false, "log_softmax");
}
VK_KERNEL(softmax_backward) {
  return run_rows("softmax_backward", in[0], &in[1], a, m, 1.0f, false, "softmax_backward");
}
VK_KERNEL(log_softmax_backward) {
  return run_rows("log_softmax_backward", in[0], &in[1], a, m, 1.0f, false, "log_softmax_backward");
}

}  // namespace vk::vulkan
