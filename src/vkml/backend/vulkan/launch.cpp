#include "vkml/backend/vulkan/launch.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "vkml/backend/vulkan/memory.h"
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

constexpr uint32_t kGroupSize = 256;  // local_size_x of elementwise.comp

std::string_view short_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "b8";
    case DType::UInt8:
      return "u8";
    case DType::Int8:
      return "i8";
    case DType::Int16:
      return "i16";
    case DType::Int32:
      return "i32";
    case DType::Int64:
      return "i64";
    case DType::Float16:
      return "f16";
    case DType::BFloat16:
      return "bf16";
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
  }
  return "?";
}

// The walk over `shape`: dims of size 1 dropped, and neighbours merged where every tensor steps
// through them as through one dim. strides[k] are tensor k's.
struct Walk {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
};

Walk merge_dims(const Shape& shape, std::span<const Tensor* const> ts) {
  Walk w;
  w.strides.resize(ts.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !w.sizes.empty();
    for (size_t k = 0; k < ts.size() && merge; ++k)
      merge = w.strides[k].back() == ts[k]->strides()[d] * shape[d];
    if (merge) {
      w.sizes.back() *= shape[d];
      for (size_t k = 0; k < ts.size(); ++k) w.strides[k].back() = ts[k]->strides()[d];
      continue;
    }
    w.sizes.push_back(shape[d]);
    for (size_t k = 0; k < ts.size(); ++k) w.strides[k].push_back(ts[k]->strides()[d]);
  }
  return w;
}

// Every element the walk reaches in each tensor must be indexable with 32-bit ints in the shader.
void check_reach(const Walk& w, std::span<const Tensor* const> ts, std::string_view op) {
  for (size_t k = 0; k < ts.size(); ++k) {
    int64_t hi = ts[k]->offset(), lo = ts[k]->offset();
    for (size_t d = 0; d < w.sizes.size(); ++d) {
      const int64_t reach = (w.sizes[d] - 1) * w.strides[k][d];
      (reach > 0 ? hi : lo) += reach;
    }
    VK_CHECK(lo >= 0 && hi <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ",
             ts[k]->describe(), " reaches elements beyond the vulkan backend's 32-bit indices");
  }
}

std::vector<Buffer*> buffers_of(const Strided& s, std::span<const Tensor* const> ts) {
  std::vector<Buffer*> buffers;
  for (const Tensor* t : ts) buffers.push_back(&bound_buffer(*t, s.op));
  // written buffers first: the error word after the output
  if (s.error_slot) buffers.insert(buffers.begin() + 1, &context().error_word());
  return buffers;
}

}  // namespace

std::string variant_name(std::string_view op, std::span<const DType> dtypes) {
  std::string suffix;
  bool all_f32 = true;
  for (DType t : dtypes) {
    suffix += short_name(t);
    all_f32 = all_f32 && t == DType::Float32;
  }
  return all_f32 ? std::string(op) : std::string(op) + "_" + suffix;
}

void check_dtype(DType t, std::string_view op) {
  if (t == DType::Int32 || t == DType::Float32) return;
  Context& ctx = context();
  const size_t size = dtype_size(t);
  const bool ok = size == 1           ? ctx.has_int8_storage()
                  : size == 2         ? ctx.has_int16_storage()
                  : t == DType::Int64 ? ctx.has_int64()
                                      : ctx.has_float64() && ctx.has_int64();
  const char* what = size == 1           ? "8-bit storage buffers (storageBuffer8BitAccess)"
                     : size == 2         ? "16-bit storage buffers (storageBuffer16BitAccess)"
                     : t == DType::Int64 ? "64-bit integers (shaderInt64)"
                                         : "float64 arithmetic (shaderFloat64 and shaderInt64)";
  VK_CHECK(ok, DTypeError, op, ": the vulkan device ", ctx.device_name(), " has no ", what,
           ", which ", dtype_name(t), " tensors need (move them to the cpu)");
}

void check_float32(const Tensor& t, std::string_view op) {
  VK_CHECK(t.dtype() == DType::Float32, DTypeError, op, ": the vulkan device computes ", op,
           " on float32 tensors only, got ", t.describe(), " (move it to the cpu, or cast it to ",
           "float32)");
}

void run_strided(const Strided& s, std::span<const Tensor* const> ts) {
  std::vector<DType> dtypes;
  for (const Tensor* t : ts) {
    check_dtype(t->dtype(), s.op);
    dtypes.push_back(t->dtype());
  }
  const Tensor& out = *ts[0];
  const int64_t n = numel_of(out.shape(), s.op);
  if (n == 0) return;  // nothing to walk
  VK_CHECK(n <= std::numeric_limits<int32_t>::max(), SizeError, s.op, ": ", n,
           " elements are more than the vulkan backend indexes in one dispatch (2^31 - 1)");
  const bool dense_out = ts.size() == 4;  // three inputs: no row for the output's strides
  VK_CHECK(!dense_out || out.is_contiguous(), RuntimeError, s.op,
           ": the vulkan backend writes a three-input op's result contiguously");
  const Walk w = merge_dims(out.shape(), ts);
  check_reach(w, ts, s.op);
  Context& ctx = context();
  const std::string name = variant_name(s.shader, dtypes);
  const std::vector<Buffer*> buffers = buffers_of(s, ts);
  const Pipeline& pipe = ctx.pipeline(name, shader_spirv(name),
                                      static_cast<uint32_t>(buffers.size()), sizeof(StridedParams));
  // The inner kMaxDims dims go to the shader; any outer ones are walked here, one dispatch each.
  const size_t nd = w.sizes.size(), outer_dims = nd > kMaxDims ? nd - kMaxDims : 0;
  StridedParams p;
  std::memcpy(p.scalar, s.scalar, sizeof(p.scalar));
  if (s.error_slot) p.scalar[3] = s.error_slot;
  int64_t inner_n = 1;
  for (size_t d = outer_dims; d < nd; ++d) {
    const size_t slot = kMaxDims - (nd - d);
    p.shape[slot] = static_cast<uint32_t>(w.sizes[d]);
    inner_n *= w.sizes[d];
    const size_t first_row = dense_out ? 1 : 0;
    for (size_t k = first_row; k < ts.size(); ++k)
      p.stride[(k - first_row) * kMaxDims + slot] = static_cast<int32_t>(w.strides[k][d]);
  }
  const int64_t outer_n = n / inner_n;
  const uint64_t groups = (static_cast<uint64_t>(inner_n) + kGroupSize - 1) / kGroupSize;
  for (int64_t o = 0; o < outer_n; ++o) {
    int64_t rest = o;
    for (size_t k = 0; k < ts.size(); ++k) p.offset[k] = static_cast<int32_t>(ts[k]->offset());
    for (size_t d = outer_dims; d-- > 0;) {
      const int64_t coord = rest % w.sizes[d];
      rest /= w.sizes[d];
      for (size_t k = 0; k < ts.size(); ++k)
        p.offset[k] += static_cast<int32_t>(coord * w.strides[k][d]);
    }
    ctx.dispatch(pipe, buffers, &p, groups, s.error_slot ? 2 : 1);
  }
}

Tensor run_strided(const Strided& s, const std::vector<Tensor>& in, const Meta& m) {
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  std::vector<const Tensor*> ts{&out};
  for (const Tensor& t : in) ts.push_back(&t);
  run_strided(s, ts);
  return out;
}

void run_elementwise(std::string_view name, std::initializer_list<const Tensor*> ts,
                     std::string_view op, float scalar) {
  Strided s{.shader = name, .op = op};
  std::memcpy(s.scalar, &scalar, sizeof(scalar));
  run_strided(s, std::span<const Tensor* const>(ts.begin(), ts.size()));
}

void fill(const Tensor& out, const Scalar& v, std::string_view op) {
  Strided s{.shader = "fill", .op = op};
  auto put = [&s](const auto& value) { std::memcpy(s.scalar, &value, sizeof(value)); };
  VK_DISPATCH_ALL(out.dtype(), op, put(v.convert<T>()));
  const Tensor* ts[] = {&out};
  run_strided(s, ts);
}

}  // namespace vk::vulkan
