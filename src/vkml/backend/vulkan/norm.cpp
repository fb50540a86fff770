// Layer and batch normalisation on the Vulkan device, float32 and (with shaderFloat64) float64
// (shaders/norm.comp): one workgroup per group -- a row of the normalized trailing dims, or a
// channel -- for its mean and variance (two passes, as the CPU's) and its outputs. layer_norm's
// weight and bias gradients are column sums over the rows (shaders/norm_param.comp, chunks of rows
// summed again by the sum kernel). The inputs are made contiguous first (a strided copy), as the
// CPU's kernels do. Groups past kMaxGroup values go in passes (vkfix: long_groups_*).
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

// The groups of x: layer_norm's rows of n values, or batch_norm's channels (callers send
// groups past kMaxGroup values to the long_groups_* passes).
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

// ---- vkfix: groups past kMaxGroup values, in passes ----
// The CPU's formulas one pass each over the whole tensor: the groups' sums by the sum kernel
// (reduction.cpp: chunked, in a fixed order, so deterministic), the rest by the element-wise
// shaders over views that broadcast a group's value. Not bitwise the one-pass shader's.

// x seen as the groups: layer_norm's (rows, n) reduced over dim 1 with a weight per column;
// batch_norm's (N, C, S) reduced over dims 0 and 2 with a weight per channel.
struct LongGroups {
  Shape shape;
  std::vector<int64_t> dims;  // reduced
  Shape param;                // a weight's view
  int64_t groups = 0, count = 0;
  bool layer = true;
};

LongGroups long_layer(const Tensor& x, int64_t n) {
  const int64_t rows = x.numel() / n;
  return {{rows, n}, {1}, {1, n}, rows, n, true};
}

LongGroups long_channels(const Tensor& x) {
  const int64_t N = x.shape()[0], C = x.shape()[1], S = x.numel() / std::max<int64_t>(N * C, 1);
  return {{N, C, S}, {0, 2}, {1, C, 1}, C, N * S, false};
}

bool is_long(const LongGroups& l) { return l.count > kMaxGroup; }

Tensor view_as(const Tensor& t, const Shape& s) {
  return t.alias(s, contiguous_strides(s), t.offset());
}

// t (contiguous, shaped s with 1s where `to` is wider) seen at `to`, stride 0 where s is 1.
Tensor spread(const Tensor& t, const Shape& s, const Shape& to) {
  Strides st = contiguous_strides(s);
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] == 1) st[d] = 0;
  return t.alias(to, st, t.offset());
}

Tensor like(const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); }

Tensor binary(const char* shader, const Tensor& a, const Tensor& b, const char* op) {
  Tensor out = like(a);
  run_elementwise(shader, {&out, &a, &b}, op);
  return out;
}

// The constant v at t's shape.
Tensor constant(double v, const Tensor& t, const char* op) {
  Tensor c = Tensor::empty({}, t.dtype(), t.device());
  fill(c, Scalar(v), op);
  return c.alias(t.shape(), Strides(t.shape().size(), 0), 0);
}

// l.shape with the reduced dims 1: a group value per element, contiguous.
Shape kept(const LongGroups& l) {
  Shape s = l.shape;
  for (int64_t d : l.dims) s[static_cast<size_t>(d)] = 1;
  return s;
}

// The group means of x (l.shape), at kept(l).
Tensor group_mean(const Tensor& x, const LongGroups& l, const char* op) {
  Attrs r;
  r.dims = l.dims;
  r.keepdim = true;
  const Tensor total = sum({x}, r, Meta{kept(l), x.dtype(), x.device()})[0];
  return binary("mul", total, constant(1.0 / static_cast<double>(l.count), total, op), op);
}

// A group value (at kept(l)) seen at l.shape.
Tensor wide(const Tensor& v, const LongGroups& l) { return spread(v, kept(l), l.shape); }

// Row k of the (2, groups) stats = v (a group value at kept(l)).
void put_stat(const Tensor& stats, int64_t k, const Tensor& v, const LongGroups& l) {
  copy_into(stats.alias({l.groups}, {1}, stats.offset() + k * l.groups),
            v.alias({l.groups}, {1}, v.offset()));
}

// d = x - mean, rstd = 1 / sqrt(var + eps), and the stats' rows: mean, then var (forward) or rstd.
struct Centered {
  Tensor d, rstd;
};

Centered centered(const Tensor& x, const LongGroups& l, double eps, const Tensor& stats,
                  bool var_row, const char* op) {
  const Tensor mean = group_mean(x, l, op);
  Centered c;
  c.d = binary("sub", x, wide(mean, l), op);
  const Tensor var = group_mean(binary("mul", c.d, c.d, op), l, op);
  Tensor shifted = binary("add", var, constant(eps, var, op), op);
  c.rstd = like(shifted);
  run_elementwise("rsqrt", {&c.rstd, &shifted}, op);
  put_stat(stats, 0, mean, l);
  put_stat(stats, 1, var_row ? var : c.rstd, l);
  return c;
}

Outputs long_groups_forward(const LongGroups& l, const std::vector<Tensor>& in, const Attrs& a,
                            const Meta& m, const char* op) {
  const bool has_w = a.norm.has_weight, has_b = a.norm.has_bias;
  const Tensor x = view_as(contiguous_of(in[0], op), l.shape);
  Tensor stats = Tensor::empty({2, l.groups}, m.dtype, m.device);
  const Centered c = centered(x, l, a.norm.eps, stats, true, op);
  Tensor y = binary("mul", c.d, wide(c.rstd, l), op);
  if (has_w) y = binary("mul", y, spread(contiguous_of(in[1], op), l.param, l.shape), op);
  if (has_b)
    y = binary("add", y, spread(contiguous_of(in[has_w ? 2 : 1], op), l.param, l.shape), op);
  return {view_as(y, m.shape), stats};
}

// dx = rstd * (u - mean(u) - xhat * mean(u * xhat)), u = g * w (layer_norm; batch_norm's w
// multiplies dx), pg = [sum(g * xhat), sum(g)] per group, stats = [mean, rstd].
Backward long_groups_backward(const LongGroups& l, const std::vector<Tensor>& in, const Attrs& a,
                              const Meta& m, bool write_dx, const char* op) {
  const bool has_w = a.norm.has_weight && in.size() > 2;
  Backward r;
  r.g = contiguous_of(in[0], op);
  r.x = contiguous_of(in[1], op);
  const Tensor g = view_as(r.g, l.shape), x = view_as(r.x, l.shape);
  r.stats = Tensor::empty({2, l.groups}, r.x.dtype(), m.device);
  r.pg = Tensor::empty({2, l.groups}, r.x.dtype(), m.device);
  const Centered c = centered(x, l, a.norm.eps, r.stats, false, op);
  const Tensor xhat = binary("mul", c.d, wide(c.rstd, l), op);
  const Tensor w = has_w ? spread(contiguous_of(in[2], op), l.param, l.shape) : Tensor();
  const Tensor u = has_w && l.layer ? binary("mul", g, w, op) : g;
  const Tensor mean_u = group_mean(u, l, op),
               mean_ux = group_mean(binary("mul", u, xhat, op), l, op);
  if (!l.layer) {  // the sums of g and g * xhat: the means times the count
    const Tensor n = constant(static_cast<double>(l.count), mean_ux, op);
    put_stat(r.pg, 0, binary("mul", mean_ux, n, op), l);
    put_stat(r.pg, 1, binary("mul", mean_u, n, op), l);
  }
  if (!write_dx) return r;
  const Tensor inner = binary("sub", binary("sub", u, wide(mean_u, l), op),
                              binary("mul", xhat, wide(mean_ux, l), op), op);
  Tensor dx = binary("mul", inner, wide(c.rstd, l), op);
  if (has_w && !l.layer) dx = binary("mul", dx, w, op);
  r.dx = view_as(dx, m.shape);
  return r;
}
// ---- end vkfix ----

}  // namespace

VK_KERNEL(layer_norm) {
  const int64_t n = numel_of(a.shape);
  if (n == 0 || in[0].numel() == 0) {
    check_norm_dtype(in[0], "layer_norm");
    return Tensor::empty(m.shape, m.dtype, m.device);
  }
  if (is_long(long_layer(in[0], n)))
    return long_groups_forward(long_layer(in[0], n), in, a, m, "layer_norm")[0];
  return forward(layer_groups(in[0], n, "layer_norm"), in, a, m, "layer_norm")[0];
}

VK_KERNEL(layer_norm_backward) {
  const char* op = "layer_norm_backward";
  const int64_t n = numel_of(a.shape);
  const bool long_rows = n > 0 && in[1].numel() > 0 && is_long(long_layer(in[1], n));
  const NormParams p = n == 0 || long_rows ? NormParams{} : layer_groups(in[1], n, op);
  const Backward r = long_rows ? long_groups_backward(long_layer(in[1], n), in, a, m, true, op)
                               : backward(p, in, a, m, true, op);
  if (!a.norm.with_param_grad) return {r.dx, Tensor()};
  return {r.dx, layer_param_grad(r, n, a, m, op)};
}

VK_KERNEL(layer_norm_param_grad) {
  const char* op = "layer_norm_param_grad";
  const int64_t n = numel_of(a.shape);
  if (n > 0 && in[1].numel() > 0 && is_long(long_layer(in[1], n)))
    return layer_param_grad(long_groups_backward(long_layer(in[1], n), in, a, m, false, op), n, a,
                            m, op);
  const NormParams p = n == 0 ? NormParams{} : layer_groups(in[1], n, op);
  return layer_param_grad(backward(p, in, a, m, false, op), n, a, m, op);
}

VK_KERNEL(batch_norm) {
  if (is_long(long_channels(in[0])))
    return long_groups_forward(long_channels(in[0]), in, a, m, "batch_norm");
  return forward(channel_groups(in[0], "batch_norm"), in, a, m, "batch_norm");
}

VK_KERNEL(batch_norm_backward) {
  const char* op = "batch_norm_backward";
  const Backward r = is_long(long_channels(in[1]))
                         ? long_groups_backward(long_channels(in[1]), in, a, m, true, op)
                         : backward(channel_groups(in[1], op), in, a, m, true, op);
  return {r.dx, a.norm.with_param_grad ? r.pg : Tensor()};
}

VK_KERNEL(batch_norm_param_grad) {
  const char* op = "batch_norm_param_grad";
  Attrs without_weight = a;
  without_weight.norm.has_weight = false;
  if (is_long(long_channels(in[1])))
    return long_groups_backward(long_channels(in[1]), in, without_weight, m, false, op).pg;
  return backward(channel_groups(in[1], op), in, without_weight, m, false, op).pg;
}

}  // namespace vk::vulkan
