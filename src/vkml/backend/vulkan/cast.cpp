// Conversions on the Vulkan device between all ten dtypes (#19 item 7): the cast kernel, and the
// copy and add services (core/kernel.h). The copy shader converts between the five compute
// dtypes, and between each narrow dtype and the one it computes in (float16 and bfloat16 with
// float32; uint8, int8 and int16 with int32); every other pair is a chain of those steps that
// gives the CPU's convert_element bit for bit. A narrow tensor needs 8- or 16-bit storage on the
// device (check_dtype: DTypeError naming the op and the device otherwise).
#include <vector>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"  // context()
#include "vkml/backend/vulkan/movement.h"

namespace vk::vulkan {
namespace {

bool is_narrow(DType t) { return !contains(kComputeDTypes, t); }

// The dtypes a conversion from `from` to `to` passes through, both ends included, each step one
// the copy shader has. As the CPU: a 16-bit float converts through float32 (float64 rounds twice
// on its way to float16, as PyTorch's), and a float reaches an 8- or 16-bit integer through int64,
// wrapping (-1.0 -> uint8 255; a device without shaderInt64 goes through int32, which differs
// only for floats beyond 2^31, far out of those types' range).
std::vector<DType> conversion_path(DType from, DType to) {
  std::vector<DType> path{from};
  if (is_narrow(from)) path.push_back(compute_dtype(from));
  if (is_narrow(to) && !is_floating(to) && is_floating(path.back()))
    path.push_back(context().has_int64() ? DType::Int64 : DType::Int32);
  if (path.back() != compute_dtype(to)) path.push_back(compute_dtype(to));
  if (path.back() != to || path.size() == 1) path.push_back(to);
  return path;
}

void copy_step(const Tensor& dst, const Tensor& src, std::string_view op) {
  const Tensor* ts[] = {&dst, &src};
  run_strided(Strided{.shader = "copy", .op = op}, ts);
}

// dst = src converted (one shape; dst of any strides).
void convert_into(const Tensor& dst, const Tensor& src, std::string_view op) {
  if (src.dtype() == dst.dtype() && is_narrow(dst.dtype())) {  // the bits move as they are
    copy_strided(dst, src, op);
    return;
  }
  const std::vector<DType> path = conversion_path(src.dtype(), dst.dtype());
  Tensor x = src;
  for (size_t k = 1; k + 1 < path.size(); ++k) {
    Tensor next = Tensor::empty(x.shape(), path[k], dst.device());
    copy_step(next, x, op);
    x = std::move(next);
  }
  copy_step(dst, x, op);
}

Tensor converted(const Tensor& t, DType to, std::string_view op) {
  if (t.dtype() == to) return t;
  Tensor out = Tensor::empty(t.shape(), to, t.device());
  convert_into(out, t, op);
  return out;
}

}  // namespace

VK_KERNEL(cast) {
  (void)a;
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  convert_into(out, in[0], "cast");
  return out;
}

void copy_into(const Tensor& dst, const Tensor& src) {
  convert_into(dst, src, "copy into a tensor");
}

// A narrow dtype adds in the dtype it computes in and rounds (or wraps) once on store, as the
// CPU's (the gradient accumulation of 16-bit leaves).
void add_into(const Tensor& dst, const Tensor& a, const Tensor& b) {
  constexpr std::string_view op = "in-place add";
  const DType wide = compute_dtype(dst.dtype());
  const Tensor wa = converted(a, wide, op), wb = converted(b, wide, op);
  const Tensor sum = wide == dst.dtype() ? dst : Tensor::empty(dst.shape(), wide, dst.device());
  const Tensor* ts[] = {&sum, &wa, &wb};
  run_strided(Strided{.shader = "add", .op = op}, ts);
  if (wide != dst.dtype()) convert_into(dst, sum, op);
}

}  // namespace vk::vulkan
