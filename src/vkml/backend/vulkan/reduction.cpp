// Reductions on the Vulkan device over any set of dims (shaders/reduce.comp): sum, mean, prod,
// amax/amin, max/min along a dim with the first index, argmax/argmin, logsumexp and var, in
// float32 and float64 (with shaderFloat64; logsumexp's exp and log are vmath.glsl's, which needs
// shaderInt64 too); sum, prod and the extremes in int32 and int64 (int64 with shaderInt64), the
// extremes in bool (with 8-bit storage). Each
// output's elements are folded in chunks of kChunk, one per invocation, in a fixed order; the
// partial results are folded again by further passes until one is left, so results do not depend on
// scheduling (no atomics). logsumexp is the max, then the sum of exp(x - max); var the mean, then
// the sum of squared deviations from it: two reductions each, as the CPU's.
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

constexpr int64_t kChunk = 4096;  // reduced elements one invocation folds

// What a reduction pass walks: each output's elements in `src` from `offset`, by kept and red.
struct Walk {
  DimList kept, red;
  int64_t offset = 0, n_out = 1, n_red = 1;
};

Walk plan(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  Walk w;
  w.offset = x.offset();
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    (reduced ? w.red : w.kept).push(x.shape()[d], x.strides()[d]);
    (reduced ? w.n_red : w.n_out) *= x.shape()[d];
  }
  check_fits(w.kept, x, op);
  check_fits(w.red, x, op);
  return w;
}

// The push constants of one pass over `w` with chunks of kChunk; SizeError past 32-bit indices.
ReduceParams params_of(const Walk& w, const Tensor& src, float scale, const char* op) {
  ReduceParams p;
  const int64_t n_chunks = std::max<int64_t>(1, (w.n_red + kChunk - 1) / kChunk);
  VK_CHECK(w.n_out * n_chunks <= std::numeric_limits<int32_t>::max() &&
               w.n_red <= std::numeric_limits<int32_t>::max(),
           SizeError, op, ": ", src.describe(), " is more than the vulkan backend indexes");
  p.n_out = static_cast<uint32_t>(w.n_out);
  p.n_red = static_cast<uint32_t>(w.n_red);
  p.chunk = static_cast<uint32_t>(kChunk);
  p.n_chunks = static_cast<uint32_t>(n_chunks);
  p.kept_ndim = static_cast<uint32_t>(w.kept.size.size());
  p.red_ndim = static_cast<uint32_t>(w.red.size.size());
  p.scale = scale;
  p.in_offset = static_cast<int32_t>(w.offset);
  int64_t hi = w.offset;
  for (size_t d = 0; d < w.kept.size.size(); ++d) {
    p.kept_shape[d] = static_cast<uint32_t>(w.kept.size[d]);
    p.kept_stride[d] = static_cast<int32_t>(w.kept.stride[d]);
    hi += (w.kept.size[d] - 1) * w.kept.stride[d];
  }
  for (size_t d = 0; d < w.red.size.size(); ++d) {
    p.red_shape[d] = static_cast<uint32_t>(w.red.size[d]);
    p.red_stride[d] = static_cast<int32_t>(w.red.stride[d]);
    hi += (w.red.size[d] - 1) * w.red.stride[d];
  }
  VK_CHECK(w.offset >= 0 && hi <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ",
           src.describe(), " reaches elements beyond the vulkan backend's 32-bit indices");
  return p;
}

// A reduction's shaders: `first` over x, `merge` over the partial results of a pass before
// (shaders/reduce.comp's variants, with _i32, _i64, _b8 or _f64 appended for integer x when
// `ints`, bool x when `bools`, float64 x when `f64`). `index`: the extreme's first index too (two
// outputs).
struct Recipe {
  const char* first;
  const char* merge;
  bool index = false;
  bool ints = false;
  bool bools = false;
  bool f64 = false;
};

// The variant suffix of x's dtype, or DTypeError naming op and the device.
std::string dtype_suffix(const Recipe& r, const Tensor& x, const char* op) {
  const DType t = x.dtype();
  if (t == DType::Float32) return "";
  const Context& ctx = context();
  const bool ok = (r.ints && (t == DType::Int32 || (t == DType::Int64 && ctx.has_int64()))) ||
                  (r.bools && t == DType::Bool && ctx.has_int8_storage()) ||
                  (r.f64 && t == DType::Float64 && ctx.has_float64());
  VK_CHECK(ok, DTypeError, op, ": the vulkan device computes float32",
           r.f64 ? ", float64 (with shaderFloat64)" : "",
           r.ints ? ", int32, int64 (with shaderInt64)" : "",
           r.bools ? ", bool (with 8-bit storage)" : "", " tensors here, got ", dtype_name(t),
           " (move it to the cpu, or cast it)");
  return t == DType::Int32   ? "_i32"
         : t == DType::Int64 ? "_i64"
         : t == DType::Bool  ? "_b8"
                             : "_f64";
}

// One pass of `shader` over `w`: into dst (and dst_index), contiguous, n_out * n_chunks results.
// src_index: the indices of a pass before (merge passes of an indexed recipe); shift: the
// per-output operand of OP_SUMEXP and OP_SQDEV. Undefined tensors are left out.
void run_pass(const std::string& shader, const Tensor& dst, const Tensor& dst_index,
              const Tensor& src, const Tensor& src_index, const Tensor& shift, const Walk& w,
              float scale, const char* op) {
  const ReduceParams p = params_of(w, src, scale, op);
  const std::vector<Buffer*> buffers =
      bound_buffers({&dst, &dst_index, &src, &src_index, &shift}, op);
  Context& ctx = context();
  const Pipeline& pipe = ctx.pipeline(shader, shader_spirv(shader),
                                      static_cast<uint32_t>(buffers.size()), sizeof(ReduceParams));
  const uint64_t invocations = uint64_t{p.n_out} * p.n_chunks;
  ctx.dispatch(pipe, buffers, &p, (invocations + kGroupSize - 1) / kGroupSize,
               dst_index.defined() ? 2 : 1);
}

// Passes of at most kChunk elements per result until one result per output is left: each
// pass's partial results, (n_out, n_chunks) row-major, are the next pass's input. Writes out (and
// index when the recipe has one); `scale` multiplies the last pass's sums.
void run_reduce(const Recipe& r, const Tensor& x, const std::vector<int64_t>& dims,
                const Tensor& out, const Tensor& index, const Tensor& shift, float scale,
                const char* op) {
  const std::string suffix = dtype_suffix(r, x, op);
  Walk w = plan(x, dims, op);
  if (w.n_out == 0) return;
  Tensor src = x, src_index, sh = shift;
  std::string shader = r.first + suffix;
  const Device dev = out.device();
  while (w.n_red > kChunk) {
    const int64_t n_chunks = (w.n_red + kChunk - 1) / kChunk;
    Tensor part = Tensor::empty({w.n_out * n_chunks}, x.dtype(), dev);
    Tensor part_index = r.index ? Tensor::empty({w.n_out * n_chunks}, DType::Int64, dev) : Tensor();
    run_pass(shader, part, part_index, src, src_index, sh, w, 1.0f, op);
    src = part;
    src_index = part_index;
    sh = Tensor();
    shader = r.merge + suffix;
    Walk next;
    next.kept.push(w.n_out, n_chunks);
    next.red.push(n_chunks, 1);
    next.n_out = w.n_out;
    next.n_red = n_chunks;
    w = next;
  }
  run_pass(shader, out, index, src, src_index, sh, w, scale, op);
}

const Recipe kSum{.first = "reduce", .merge = "reduce", .ints = true, .f64 = true};
const Recipe kMean{.first = "reduce", .merge = "reduce", .f64 = true};
const Recipe kProd{.first = "reduce_prod", .merge = "reduce_prod", .ints = true, .f64 = true};
const Recipe kMax{
    .first = "reduce_max", .merge = "reduce_max", .ints = true, .bools = true, .f64 = true};
const Recipe kMin{
    .first = "reduce_min", .merge = "reduce_min", .ints = true, .bools = true, .f64 = true};
const Recipe kArgMax{.first = "reduce_argmax",
                     .merge = "reduce_argmax_merge",
                     .index = true,
                     .ints = true,
                     .bools = true,
                     .f64 = true};
const Recipe kArgMin{.first = "reduce_argmin",
                     .merge = "reduce_argmin_merge",
                     .index = true,
                     .ints = true,
                     .bools = true,
                     .f64 = true};
const Recipe kFloatMax{.first = "reduce_max", .merge = "reduce_max", .f64 = true};
const Recipe kSumExp{.first = "reduce_sumexp", .merge = "reduce", .f64 = true};
const Recipe kSqDev{.first = "reduce_sqdev", .merge = "reduce", .f64 = true};

int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[d];
  return n;
}

Tensor reduce(const Recipe& r, const Tensor& x, const std::vector<int64_t>& dims, const Meta& m,
              const char* op, float scale = 1.0f) {
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  run_reduce(r, x, dims, out, Tensor(), Tensor(), scale, op);
  return out;
}

// Push constants of reduce_finish.comp's DIVIDE64 variant.
struct DivideParams {
  uint32_t n = 0, unused = 0;
  double divisor = 1.0;
};
static_assert(sizeof(DivideParams) == 16, "reduce_finish.comp's DIVIDE64 push constants");

// out = sums / divisor in double, as the CPU's float64 mean and var (reduce.comp's scale is a
// float). x / 0 is inf, or NaN for 0 / 0, as there.
void divide64(const Tensor& out, const Tensor& sums, double divisor, const char* op) {
  DivideParams p;
  p.n = static_cast<uint32_t>(out.numel());
  p.divisor = divisor;
  if (p.n == 0) return;
  const std::vector<Buffer*> buffers = bound_buffers({&out, &sums}, op);
  Context& ctx = context();
  const Pipeline& pipe =
      ctx.pipeline("reduce_divide_f64", shader_spirv("reduce_divide_f64"), 2, sizeof(p));
  ctx.dispatch(pipe, buffers, &p, (uint64_t{p.n} + kGroupSize - 1) / kGroupSize);
}

// The sum over dims of x times `scale` (float32) or divided by `divisor` (float64) into out.
void run_scaled_sum(const Recipe& r, const Tensor& x, const std::vector<int64_t>& dims,
                    const Tensor& out, const Tensor& shift, double divisor, const char* op) {
  if (x.dtype() != DType::Float64) {
    // 1/0 = inf scales a zero sum to NaN and any other to inf, as the CPU's division by 0
    const float scale =
        divisor == 0 ? std::numeric_limits<float>::infinity() : static_cast<float>(1.0 / divisor);
    run_reduce(r, x, dims, out, Tensor(), shift, scale, op);
    return;
  }
  Tensor sums = Tensor::empty(out.shape(), DType::Float64, out.device());
  run_reduce(r, x, dims, sums, Tensor(), shift, 1.0f, op);
  divide64(out, sums, divisor, op);
}

// One dim (a.dim): the dims list reduced over (none for a 0-d tensor), as the CPU's.
std::vector<int64_t> one_dim(const Tensor& x, int64_t dim) {
  return x.ndim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{dim};
}

// The extreme along a.dim and the int64 index of its first occurrence.
Outputs extreme_dim(const Recipe& r, const std::vector<Tensor>& in, const Attrs& a, const Meta& m,
                    const char* op) {
  Tensor values = Tensor::empty(m.shape, in[0].dtype(), m.device);
  Tensor index = Tensor::empty(m.shape, DType::Int64, m.device);
  run_reduce(r, in[0], one_dim(in[0], a.dim), values, index, Tensor(), 1.0f, op);
  return {values, index};
}

}  // namespace

VK_KERNEL(sum) { return reduce(kSum, in[0], a.dims, m, "sum"); }
// mean of nothing is NaN, as on the CPU (0 * inf, 0 / 0)
VK_KERNEL(mean) {
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  const double n = static_cast<double>(reduced_count(in[0], a.dims));
  run_scaled_sum(kMean, in[0], a.dims, out, Tensor(), n, "mean");
  return out;
}
VK_KERNEL(amax) { return reduce(kMax, in[0], a.dims, m, "amax"); }
VK_KERNEL(amin) { return reduce(kMin, in[0], a.dims, m, "amin"); }
VK_KERNEL(prod) { return reduce(kProd, in[0], a.dims, m, "prod"); }
VK_KERNEL(max_dim) { return extreme_dim(kArgMax, in, a, m, "max"); }
VK_KERNEL(min_dim) { return extreme_dim(kArgMin, in, a, m, "min"); }
VK_KERNEL(argmax) { return extreme_dim(kArgMax, in, a, m, "argmax")[1]; }
VK_KERNEL(argmin) { return extreme_dim(kArgMin, in, a, m, "argmin")[1]; }

// log(sum(exp(x - s))) + s with s the maximum (0 where infinite), as the CPU's.
VK_KERNEL(logsumexp) {
  const Tensor& x = in[0];
  const bool f64 = x.dtype() == DType::Float64;
  if (f64)
    check_dtype(DType::Float64, "logsumexp");  // shaderInt64 too: vmath.glsl casts bits
  else
    check_float32(x, "logsumexp");
  Tensor shift = Tensor::empty(m.shape, x.dtype(), m.device);
  Tensor sums = Tensor::empty(m.shape, x.dtype(), m.device);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  run_reduce(kFloatMax, x, a.dims, shift, Tensor(), Tensor(), 1.0f, "logsumexp");
  run_reduce(kSumExp, x, a.dims, sums, Tensor(), shift, 1.0f, "logsumexp");
  const uint32_t n = static_cast<uint32_t>(out.numel());
  if (n == 0) return out;
  const std::vector<Buffer*> buffers = bound_buffers({&out, &sums, &shift}, "logsumexp");
  Context& ctx = context();
  const char* finish = f64 ? "reduce_lse_finish_f64" : "reduce_lse_finish";
  const Pipeline& pipe = ctx.pipeline(finish, shader_spirv(finish), 3, sizeof(uint32_t));
  ctx.dispatch(pipe, buffers, &n, (uint64_t{n} + kGroupSize - 1) / kGroupSize);
  return out;
}

// sum((x - mean)^2) / max(0, N - correction), as the CPU's.
VK_KERNEL(var) {
  const Tensor& x = in[0];
  const double n = static_cast<double>(reduced_count(x, a.dims));
  Tensor mu = Tensor::empty(m.shape, m.dtype, m.device);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  run_scaled_sum(kMean, x, a.dims, mu, Tensor(), n, "var");
  run_scaled_sum(kSqDev, x, a.dims, out, mu, std::max(0.0, n - a.var.correction), "var");
  return out;
}

// The squared deviations from a mean of 0, summed: the 2-norm's sum of squares.
VK_KERNEL(sum_squares) {
  Attrs zero;
  zero.value = 0.0;
  const Tensor mu = full({}, zero, m)[0];
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  run_scaled_sum(kSqDev, in[0], a.dims, out, mu, 1.0, "sum_squares");
  return out;
}

}  // namespace vk::vulkan
