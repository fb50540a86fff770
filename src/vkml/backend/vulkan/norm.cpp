// Layer and batch normalisation on the Vulkan device, float32 and (with shaderFloat64) float64
// (shaders/norm.comp): one workgroup per group -- a row of the normalized trailing dims, or a
// channel -- for its mean and variance (two passes, as the CPU's) and its outputs. layer_norm's
// weight and bias gradients are column sums over the rows (shaders/norm_param.comp, chunks of rows
// summed again by the sum kernel). The inputs are made contiguous first (a strided copy), as the
// CPU's kernels do.
#include <limits>
#include <string>
#include <vector>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"

namespace vk::vulkan {
namespace {

// Push constants of norm.comp, laid out as its Params block (std430).
struct NormParams {
  uint32_t groups = 0, M = 0, S = 1, seg = 0, step = 0, flags = 0;
  float eps = 0.0f;
  int32_t x_offset = 0, g_offset = 0, w_offset = 0, b_offset = 0;
  double eps64 = 0.0;  // the FLOAT64 variants' eps (their block alone declares it)
};
static_assert(sizeof(NormParams) == 56, "norm.comp's push constants");
constexpr uint32_t kWeight = 1, kBias = 2, kGroupWeight = 4, kWriteDx = 8;

// Push constants of norm_param.comp.
struct ParamGradParams {
  uint32_t n = 0, rows = 0, chunk = 0, n_chunks = 0;
  int32_t g_offset = 0, x_offset = 0;
};
static_assert(sizeof(ParamGradParams) == 24, "norm_param.comp's push constants");

constexpr int64_t kGroupSize = 128;  // local_size_x of norm.comp
// The most values in a group: each invocation then makes at most 3 * 8192 loop iterations in all
// (lavapipe stops a shader once it has made 65535, counting all its loops together, silently).
constexpr int64_t kMaxGroup = kGroupSize * 8192;
// Groups up to this many values are one invocation's each (the *_short variants, 64 to a
// workgroup): for many groups of hundreds of values that ran 2-3 times faster on lavapipe than a
// workgroup per group (measured at 768 values).
constexpr int64_t kShortGroup = 1024;
constexpr int64_t kRowChunk = 4096;  // rows one invocation of norm_param.comp sums

// DTypeError naming op and the device unless x is float32, or float64 on a device with
// shaderFloat64.
void check_norm_dtype(const Tensor& x, const char* op) {
  if (x.dtype() == DType::Float64 && context().has_float64()) return;
  check_float32(x, op);
}

// The variant of shader `name` for dtype t.
std::string variant(const char* name, DType t) {
  return t == DType::Float64 ? std::string(name) + "_f64" : std::string(name);
}

Tensor contiguous_of(const Tensor& x, const char* op) {
  check_norm_dtype(x, op);
  if (x.is_contiguous()) return x;
  Tensor c = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy_into(c, x);
  return c;
}

int32_t offset_of(const Tensor& t, const char* op) {
  if (!t.defined()) return 0;
  VK_CHECK(t.offset() + t.numel() <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ",
           t.describe(), " reaches elements beyond the vulkan backend's 32-bit indices");
  return static_cast<int32_t>(t.offset());
}

// Dispatches `shader` over `groups` workgroups with the defined tensors of ts bound in order, the
// first `writes` written.
void launch(std::string shader, std::initializer_list<const Tensor*> ts, uint32_t writes,
            const void* push, uint32_t push_bytes, uint64_t groups, const char* op) {
  Context& ctx = context();
  const std::vector<Buffer*> buffers = bound_buffers(ts, op);
  const Pipeline& pipe =
      ctx.pipeline(shader, shader_spirv(shader), static_cast<uint32_t>(buffers.size()), push_bytes);
  ctx.dispatch(pipe, buffers, push, groups, writes);
}

// The groups of x: layer_norm's rows of n values, or batch_norm's channels.
NormParams layer_groups(const Tensor& x, int64_t n, const char* op) {
  NormParams p;
  VK_CHECK(n <= kMaxGroup, SizeError, op, ": rows of ", n, " values are longer than the vulkan ",
           "backend's ", kMaxGroup);
  p.groups = static_cast<uint32_t>(x.numel() / n);
  p.M = p.S = p.seg = static_cast<uint32_t>(n);
  return p;
}

NormParams channel_groups(const Tensor& x, const char* op) {
  NormParams p;
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int64_t S = N * C == 0 ? 0 : x.numel() / (N * C);
  VK_CHECK(N * S <= kMaxGroup, SizeError, op, ": channels of ", N * S,
           " values are more than the vulkan backend's ", kMaxGroup);
  p.groups = static_cast<uint32_t>(C);
  p.M = static_cast<uint32_t>(N * S);
  p.S = static_cast<uint32_t>(std::max<int64_t>(S, 1));  // no values when S is 0: never divided
  p.seg = static_cast<uint32_t>(S);
  p.step = static_cast<uint32_t>(C * S);
  p.flags = kGroupWeight;
  return p;
}

// Forward: y, and the (2, groups) [mean, biased var] of each group.
Outputs forward(NormParams p, const std::vector<Tensor>& in, const Attrs& a, const Meta& m,
                const char* op) {
  const bool has_w = a.norm.has_weight, has_b = a.norm.has_bias;
  const Tensor x = contiguous_of(in[0], op);
  const Tensor w = has_w ? contiguous_of(in[1], op) : Tensor();
  const Tensor b = has_b ? contiguous_of(in[has_w ? 2 : 1], op) : Tensor();
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  Tensor stats = Tensor::empty({2, p.groups}, m.dtype, m.device);
  if (p.groups == 0) return {out, stats};
  p.flags |= (has_w ? kWeight : 0) | (has_b ? kBias : 0);
  p.eps = static_cast<float>(a.norm.eps);
  p.eps64 = a.norm.eps;
  p.x_offset = offset_of(x, op);
  p.w_offset = offset_of(w, op);
  p.b_offset = offset_of(b, op);
  // absent weight and bias: x bound in their place (never read), as the shader has 5 bindings
  const Tensor& wb = has_w ? w : x;
  const Tensor& bb = has_b ? b : x;
  const bool short_groups = p.M <= kShortGroup;
  launch(variant(short_groups ? "norm_forward_short" : "norm_forward", m.dtype),
         {&out, &stats, &x, &wb, &bb}, 2, &p, sizeof(p),
         short_groups ? (p.groups + 63) / 64 : p.groups, op);
  return {out, stats};
}

// Backward: dx (when write_dx), the per-group [sum(u * xhat), sum(u)] (batch_norm's parameter
// gradients) and [mean, rstd] of each group.
struct Backward {
  Tensor dx, pg, stats, g, x;
};

Backward backward(NormParams p, const std::vector<Tensor>& in, const Attrs& a, const Meta& m,
                  bool write_dx, const char* op) {
  const bool has_w = a.norm.has_weight && in.size() > 2;
  Backward r;
  r.g = contiguous_of(in[0], op);
  r.x = contiguous_of(in[1], op);
  const Tensor w = has_w ? contiguous_of(in[2], op) : Tensor();
  const DType t = r.x.dtype();
  r.dx = write_dx ? Tensor::empty(m.shape, t, m.device) : Tensor();
  r.pg = Tensor::empty({2, p.groups}, t, m.device);
  r.stats = Tensor::empty({2, p.groups}, t, m.device);
  if (p.groups == 0) return r;
  p.flags |= (has_w ? kWeight : 0) | (write_dx ? kWriteDx : 0);
  p.eps = static_cast<float>(a.norm.eps);
  p.eps64 = a.norm.eps;
  p.x_offset = offset_of(r.x, op);
  p.g_offset = offset_of(r.g, op);
  p.w_offset = offset_of(w, op);
  const Tensor& dxb = write_dx ? r.dx : r.pg;  // bound but never written without write_dx
  const Tensor& wb = has_w ? w : r.x;
  const bool short_groups = p.M <= kShortGroup;
  launch(variant(short_groups ? "norm_backward_short" : "norm_backward", t),
         {&dxb, &r.pg, &r.stats, &r.g, &r.x, &wb}, 3, &p, sizeof(p),
         short_groups ? (p.groups + 63) / 64 : p.groups, op);
  return r;
}

// layer_norm's (2, *normalized shape) weight and bias gradients from the backward pass's stats.
Tensor layer_param_grad(const Backward& r, int64_t n, const Attrs& a, const Meta& m,
                        const char* op) {
  Shape shape{2};
  shape.insert(shape.end(), a.shape.begin(), a.shape.end());
  const DType t = r.x.dtype();
  Tensor pg = Tensor::empty(shape, t, m.device);
  const int64_t rows = n == 0 ? 0 : r.x.numel() / n;
  if (n == 0) return pg;
  ParamGradParams p;
  const int64_t n_chunks = std::max<int64_t>(1, (rows + kRowChunk - 1) / kRowChunk);
  VK_CHECK(n * n_chunks * 2 <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ",
           r.x.describe(), " is more than the vulkan backend indexes");
  p.n = static_cast<uint32_t>(n);
  p.rows = static_cast<uint32_t>(rows);
  p.chunk = static_cast<uint32_t>(kRowChunk);
  p.n_chunks = static_cast<uint32_t>(n_chunks);
  p.g_offset = offset_of(r.g, op);
  p.x_offset = offset_of(r.x, op);
  Tensor part = n_chunks == 1 ? pg : Tensor::empty({n_chunks, 2 * n}, t, m.device);
  launch(variant("norm_param", t), {&part, &r.g, &r.x, &r.stats}, 1, &p, sizeof(p),
         (uint64_t(n) * n_chunks + 63) / 64, op);
  if (n_chunks == 1) return pg;
  Attrs sum_attrs;
  sum_attrs.dims = {0};
  return sum({part}, sum_attrs, Meta{shape, t, m.device})[0];
}

}  // namespace

VK_KERNEL(layer_norm) {
  const int64_t n = numel_of(a.shape);
  if (n == 0 || in[0].numel() == 0) {
    check_norm_dtype(in[0], "layer_norm");
    return Tensor::empty(m.shape, m.dtype, m.device);
  }
  return forward(layer_groups(in[0], n, "layer_norm"), in, a, m, "layer_norm")[0];
}

VK_KERNEL(layer_norm_backward) {
  const char* op = "layer_norm_backward";
  const int64_t n = numel_of(a.shape);
  const NormParams p = n == 0 ? NormParams{} : layer_groups(in[1], n, op);
  const Backward r = backward(p, in, a, m, true, op);
  if (!a.norm.with_param_grad) return {r.dx, Tensor()};
  return {r.dx, layer_param_grad(r, n, a, m, op)};
}

VK_KERNEL(layer_norm_param_grad) {
  const char* op = "layer_norm_param_grad";
  const int64_t n = numel_of(a.shape);
  const NormParams p = n == 0 ? NormParams{} : layer_groups(in[1], n, op);
  return layer_param_grad(backward(p, in, a, m, false, op), n, a, m, op);
}

VK_KERNEL(batch_norm) {
  return forward(channel_groups(in[0], "batch_norm"), in, a, m, "batch_norm");
}

VK_KERNEL(batch_norm_backward) {
  const char* op = "batch_norm_backward";
  const Backward r = backward(channel_groups(in[1], op), in, a, m, true, op);
  return {r.dx, a.norm.with_param_grad ? r.pg : Tensor()};
}

VK_KERNEL(batch_norm_param_grad) {
  const char* op = "batch_norm_param_grad";
  Attrs without_weight = a;
  without_weight.norm.has_weight = false;
  return backward(channel_groups(in[1], op), in, without_weight, m, false, op).pg;
}

}  // namespace vk::vulkan
