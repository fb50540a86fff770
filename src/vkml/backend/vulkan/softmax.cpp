// The softmax family on the Vulkan device (shaders/softmax.comp): softmax (scaled, optionally
// causal), log_softmax and their backward ops, float32 and float64 (with shaderFloat64 and
// shaderInt64: its exp and log are vmath.glsl's, which casts bits), one workgroup per row along the
// dim, or rows past kMaxRow in passes. The inputs are made contiguous first (a strided copy), as
// the CPU's kernels do.
#include <bit>
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
  uint32_t scale_lo = 0, scale_hi = 0;  // the float64 variants' scale, a double's words
};
static_assert(sizeof(SoftmaxParams) == 36, "softmax.comp's push constants");

constexpr int64_t kGroupSize = 128;  // local_size_x of softmax.comp
// Rows up to this long are one invocation's each (the *_short variants, 64 to a workgroup): for
// many rows of hundreds of elements that ran 2-3 times faster on lavapipe than a workgroup per row
// (measured at 768 elements).
constexpr int64_t kShortRow = 1024;
// The longest row of one pass: each invocation then makes at most 3 * 8192 loop iterations in all
// (lavapipe stops a shader once it has made 65535, counting all its loops together, silently).
// Longer rows go in passes (long_rows_*), under a causal mask too (vkfix: the masked keys set to
// -inf first, which the passes then give 0, as the CPU).
constexpr int64_t kMaxRow = kGroupSize * 8192;

// x itself when contiguous (its offset goes to the shader), else a contiguous copy.
Tensor contiguous_of(const Tensor& x, const char* op) {
  if (x.dtype() == DType::Float64)
    check_dtype(DType::Float64, op);  // shaderFloat64, and shaderInt64 for vmath's bit casts
  else
    check_float32(x, op);
  if (x.is_contiguous()) return x;
  Tensor c = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy_into(c, x);
  return c;
}

// The rows along dim of a (contiguous), K elements `inner` apart; SizeError past the loop bound
// and 32-bit indices.
SoftmaxParams rows_of(const Tensor& a, const Tensor& b, int64_t dim, const char* op) {
  SoftmaxParams p;
  int64_t outer = 1, K = 1, inner = 1;
  for (int64_t d = 0; d < a.ndim(); ++d) (d < dim ? outer : d == dim ? K : inner) *= a.shape()[d];
  VK_CHECK(K <= kMaxRow, SizeError, op, ": causal rows of ", K,
           " elements are longer than the vulkan backend's ", kMaxRow);
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

// ---- vkgaps: rows longer than kMaxRow, in passes ----
// The CPU's steps one pass each over the whole tensor: the row's max and sums by the reduction
// kernels (reduction.cpp: chunked, in a fixed order), the rest by the element-wise shaders over
// views that broadcast a row's value along the dim. Deterministic, as the one-pass shader.

// A keepdim result (size 1 at dim) seen at x's shape: stride 0 along dim.
Tensor along(const Tensor& t, const Tensor& x, int64_t dim) {
  Strides st = t.strides();
  st[static_cast<size_t>(dim)] = 0;
  return t.alias(x.shape(), st, t.offset());
}

// The reduction kernel k (sum, amax) of x over dim, keepdim.
Tensor reduce_dim(Outputs (*k)(const std::vector<Tensor>&, const Attrs&, const Meta&),
                  const Tensor& x, int64_t dim) {
  Attrs r;
  r.dims = {dim};
  r.keepdim = true;
  Shape s = x.shape();
  s[static_cast<size_t>(dim)] = 1;
  return k({x}, r, Meta{s, x.dtype(), x.device()})[0];
}

Tensor like(const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); }

// out = `shader`(a, b): an element-wise op over tensors of one shape and dtype.
Tensor binary(const char* shader, const Tensor& a, const Tensor& b, const char* op) {
  Tensor out = like(a);
  run_elementwise(shader, {&out, &a, &b}, op);
  return out;
}

Tensor unary(const char* shader, const Tensor& a, const char* op) {
  Tensor out = like(a);
  run_elementwise(shader, {&out, &a}, op);
  return out;
}

// x * scale (x itself when scale is 1).
Tensor scale_of(const Tensor& x, double scale, const char* op) {
  if (scale == 1.0) return x;
  Tensor c = Tensor::empty({}, x.dtype(), x.device());
  fill(c, Scalar(scale), op);
  return binary("mul", x, c.alias(x.shape(), Strides(x.shape().size(), 0), 0), op);
}

// softmax (scaled) or log_softmax of x along dim, rows of any length: y = exp(x - max) / sum, or
// (x - max) - log(sum), as the CPU's (a NaN or a row of -inf gives NaN rows there and here).
Tensor long_rows_forward(const Tensor& x_in, int64_t dim, double scale, bool log, const char* op) {
  const Tensor x = scale_of(x_in, scale, op);
  const Tensor d = binary("sub", x, along(reduce_dim(vulkan::amax, x, dim), x, dim), op);
  const Tensor e = unary("exp", d, op);
  const Tensor s = reduce_dim(vulkan::sum, e, dim);
  if (log) return binary("sub", d, along(unary("log", s, op), x, dim), op);
  return binary("mul", e, along(unary("reciprocal", s, op), x, dim), op);
}

// vkfix: x (contiguous, rows along its last dim, queries = its dim -2) with the keys a causal
// mask hides set to -inf: row q of each (queries, keys) matrix keeps its first q + 1 keys. The
// mask is k <= q, from two aranges seen at x's shape, on the device.
Tensor causal_masked(const Tensor& x, const char* op) {
  const Shape& s = x.shape();
  const size_t last = s.size() - 1;
  auto iota = [&](int64_t n, size_t dim) {
    Attrs r;
    r.start = 0, r.step = 1, r.stop = n;
    r.arange.integers = true;
    const Tensor t = vulkan::arange({}, r, Meta{{n}, DType::Int32, x.device()})[0];
    Strides st(s.size(), 0);
    st[dim] = 1;
    return t.alias(s, st, 0);
  };
  const Tensor keys = iota(s[last], last), queries = iota(s[last - 1], last - 1);
  const Tensor keep = vulkan::le({keys, queries}, {}, Meta{s, DType::Bool, x.device()})[0];
  Tensor minus_inf = Tensor::empty({}, x.dtype(), x.device());
  fill(minus_inf, Scalar(-std::numeric_limits<double>::infinity()), op);
  return vulkan::where({keep, x, minus_inf.alias(s, Strides(s.size(), 0), 0)}, {},
                       Meta{s, x.dtype(), x.device()})[0];
}

// softmax_backward: dx = y * (g - sum(g * y)); log_softmax_backward: dx = g - exp(y) * sum(g).
Tensor long_rows_backward(const Tensor& g, const Tensor& y, int64_t dim, bool log, const char* op) {
  if (log) {
    const Tensor s = along(reduce_dim(vulkan::sum, g, dim), g, dim);
    return binary("sub", g, binary("mul", unary("exp", y, op), s, op), op);
  }
  const Tensor s = along(reduce_dim(vulkan::sum, binary("mul", g, y, op), dim), g, dim);
  return binary("mul", y, binary("sub", g, s, op), op);
}
// ---- end vkgaps ----

// Runs variant `name` of softmax.comp over the rows along a.dim of x (and y), into a new tensor.
Tensor run_rows(const std::string& name, const Tensor& x_in, const Tensor* y_in, const Attrs& a,
                const Meta& m, const char* op) {
  const Tensor x = contiguous_of(x_in, op);
  const Tensor y = y_in ? contiguous_of(*y_in, op) : Tensor();
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  // softmax's own attrs; log_softmax and the backward ops ignore them, as on the CPU
  const bool plain = name != "softmax";
  const double scale = plain ? 1.0 : a.softmax.scale;
  const bool causal = !plain && a.softmax.causal;
  if (x.ndim() > 0 && x.shape()[static_cast<size_t>(a.dim)] > kMaxRow) {
    const bool log = name.starts_with("log");
    if (y_in) return long_rows_backward(x, y, a.dim, log, op);
    // The mask after the scale, as the CPU's (a masked key is -inf whatever its value).
    if (causal)
      return long_rows_forward(causal_masked(scale_of(x, scale, op), op), a.dim, 1.0, log, op);
    return long_rows_forward(x, a.dim, scale, log, op);
  }
  SoftmaxParams p = rows_of(x, y, a.dim, op);
  p.scale = static_cast<float>(scale);
  const auto bits = std::bit_cast<uint64_t>(scale);
  p.scale_lo = static_cast<uint32_t>(bits), p.scale_hi = static_cast<uint32_t>(bits >> 32);
  p.queries = causal ? static_cast<uint32_t>(x.shape()[x.ndim() - 2]) : 0;
  const bool short_rows = p.K <= kShortRow;
  const std::string variant =
      name + (short_rows ? "_short" : "") + (out.dtype() == DType::Float64 ? "_f64" : "");
  launch(variant, {&out, &x, &y}, p, short_rows ? (uint64_t{p.rows} + 63) / 64 : uint64_t{p.rows},
         op);
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
