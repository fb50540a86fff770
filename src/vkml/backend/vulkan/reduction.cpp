// Reductions on the Vulkan device over any set of dims (shaders/reduce.comp): sum, mean, prod,
// amax/amin, max/min along a dim with the first index, argmax/argmin, logsumexp and var, in
// float32; sum, prod and the extremes in int32 and int64 too (int64 where the device has
// shaderInt64), the extremes in bool (with 8-bit storage). Each output's elements are folded in
// chunks of kChunk, one per invocation, in a fixed order; the partial results are folded again by
// further passes until one is left, so results do not depend on scheduling (no atomics). logsumexp
// is the max, then the sum of exp(x - max); var the mean, then the sum of squared deviations from
// it: two reductions each, as the CPU's.
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

// Buffers of the tensors in order, each checked against the device's storage buffer range.
std::vector<Buffer*> buffers_of(std::initializer_list<const Tensor*> ts, const char* op) {
  Context& ctx = context();
  std::vector<Buffer*> out;
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    Buffer* b = &buffer_of(*t);
    VK_CHECK(b->size <= ctx.max_storage_range(), SizeError, op, ": ", t->describe(), " (", b->size,
             " bytes) is larger than ", ctx.device_name(), " binds in one storage buffer");
    out.push_back(b);
  }
  return out;
}

// A reduction's shaders: `first` over x, `merge` over the partial results of a pass before
// (shaders/reduce.comp's variants, with _i32, _i64 or _b8 appended for integer x when `ints`, bool
// x when `bools`). `index`: the extreme's first index too (two outputs).
struct Recipe {
  const char* first;
  const char* merge;
  bool index = false;
  bool ints = false;
  bool bools = false;
};

// The variant suffix of x's dtype, or DTypeError naming op and the device.
std::string dtype_suffix(const Recipe& r, const Tensor& x, const char* op) {
  const DType t = x.dtype();
  if (t == DType::Float32) return "";
  const Context& ctx = context();
  const bool ok = (r.ints && (t == DType::Int32 || (t == DType::Int64 && ctx.has_int64()))) ||
                  (r.bools && t == DType::Bool && ctx.has_int8_storage());
  VK_CHECK(ok, DTypeError, op, ": the vulkan device computes float32",
           r.ints ? ", int32, int64 (with shaderInt64)" : "",
           r.bools ? " and bool (with 8-bit storage)" : "", " tensors here, got ", dtype_name(t),
           " (move it to the cpu, or cast it)");
  return t == DType::Int32 ? "_i32" : t == DType::Int64 ? "_i64" : "_b8";
}

// One pass of `shader` over `w`: into dst (and dst_index), contiguous, n_out * n_chunks results.
// src_index: the indices of a pass before (merge passes of an indexed recipe); shift: the
// per-output operand of OP_SUMEXP and OP_SQDEV. Undefined tensors are left out.
void run_pass(const std::string& shader, const Tensor& dst, const Tensor& dst_index,
              const Tensor& src, const Tensor& src_index, const Tensor& shift, const Walk& w,
              float scale, const char* op) {
  const ReduceParams p = params_of(w, src, scale, op);
  const std::vector<Buffer*> buffers = buffers_of({&dst, &dst_index, &src, &src_index, &shift}, op);
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

const Recipe kSum{"reduce", "reduce", false, true};
const Recipe kMean{"reduce", "reduce"};
const Recipe kProd{"reduce_prod", "reduce_prod", false, true};
const Recipe kMax{"reduce_max", "reduce_max", false, true, true};
const Recipe kMin{"reduce_min", "reduce_min", false, true, true};
const Recipe kArgMax{"reduce_argmax", "reduce_argmax_merge", true, true, true};
const Recipe kArgMin{"reduce_argmin", "reduce_argmin_merge", true, true, true};
const Recipe kFloatMax{"reduce_max", "reduce_max"};
const Recipe kSumExp{"reduce_sumexp", "reduce"};
const Recipe kSqDev{"reduce_sqdev", "reduce"};

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

// mean of nothing is NaN, as on the CPU (0 * NaN)
float mean_scale(int64_t n) {
  return n == 0 ? std::numeric_limits<float>::quiet_NaN()
                : static_cast<float>(1.0 / static_cast<double>(n));
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
VK_KERNEL(mean) {
  return reduce(kMean, in[0], a.dims, m, "mean", mean_scale(reduced_count(in[0], a.dims)));
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
  check_float32(x, "logsumexp");
  Tensor shift = Tensor::empty(m.shape, DType::Float32, m.device);
  Tensor sums = Tensor::empty(m.shape, DType::Float32, m.device);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  run_reduce(kFloatMax, x, a.dims, shift, Tensor(), Tensor(), 1.0f, "logsumexp");
  run_reduce(kSumExp, x, a.dims, sums, Tensor(), shift, 1.0f, "logsumexp");
  const uint32_t n = static_cast<uint32_t>(out.numel());
  if (n == 0) return out;
  const std::vector<Buffer*> buffers = buffers_of({&out, &sums, &shift}, "logsumexp");
  Context& ctx = context();
  const Pipeline& pipe =
      ctx.pipeline("reduce_lse_finish", shader_spirv("reduce_lse_finish"), 3, sizeof(uint32_t));
  ctx.dispatch(pipe, buffers, &n, (uint64_t{n} + kGroupSize - 1) / kGroupSize);
  return out;
}

// sum((x - mean)^2) / max(0, N - correction): 1/0 = inf scales a zero sum to NaN and any other
// to inf, as the CPU's division by 0.
VK_KERNEL(var) {
  const Tensor& x = in[0];
  check_float32(x, "var");
  const int64_t n = reduced_count(x, a.dims);
  Tensor mu = Tensor::empty(m.shape, DType::Float32, m.device);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  run_reduce(kMean, x, a.dims, mu, Tensor(), Tensor(), mean_scale(n), "var");
  const double denom = std::max(0.0, static_cast<double>(n) - a.var.correction);
  const float scale =
      denom == 0 ? std::numeric_limits<float>::infinity() : static_cast<float>(1.0 / denom);
  run_reduce(kSqDev, x, a.dims, out, Tensor(), mu, scale, "var");
  return out;
}

}  // namespace vk::vulkan
