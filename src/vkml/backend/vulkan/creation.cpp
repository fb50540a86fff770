// Creation kernels on the Vulkan device. rand, randint and arange of integers run
// shaders/creation.comp, which computes each element as the CPU's kernel does (the same Philox
// stream, the same integer arithmetic), so a seed gives the same bits on both devices
// (manual_seed reproduces results across devices). The rest is computed on the host by the CPU's
// kernel and uploaded: randn's Box-Muller runs in double, and GLSL has no float64 log or cos to
// match it; arange of doubles computes start + i * step, which the CPU contracts into one FMA or
// not depending on the copy of its kernels (the AVX2 and AVX-512 copies do); and everything on a
// device without shaderInt64 or shaderFloat64.
#include <string>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"
#include "vkml/backend/vulkan/movement.h"
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

// Push constants of creation.comp (std430).
struct CreationParams {
  uint32_t n = 0, unused = 0;
  uint64_t seed = 0, offset = 0;
  uint64_t start = 0, step = 0;
};
static_assert(sizeof(CreationParams) == 40, "creation.comp's push constants");

// The CPU kernel of `kind` run with this call's attributes, its result copied to m.device.
Tensor on_host_then_upload(OpKind kind, const Attrs& a, const Meta& m) {
  const Kernel cpu = find_kernel(DeviceType::CPU, kind);
  VK_CHECK(cpu != nullptr, RuntimeError, "vulkan: the cpu registers no kernel for op ",
           static_cast<int>(kind));
  const Tensor host = cpu({}, a, Meta{m.shape, m.dtype, kCPU})[0];
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  const size_t es = dtype_size(m.dtype);
  copy_bytes(m.device, out.storage_data(), 0, kCPU, host.storage_data(),
             static_cast<size_t>(host.offset()) * es, static_cast<size_t>(host.numel()) * es);
  return out;
}

std::string out_suffix(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "_b8";
    case DType::Int32:
      return "_i32";
    case DType::Int64:
      return "_i64";
    case DType::Float32:
      return "_f32";
    default:
      return "_f64";
  }
}

// Runs creation.comp's `gen` into a fresh tensor, or the CPU's kernel where this device lacks
// what the shader needs.
Tensor generate(std::string_view gen, OpKind kind, const CreationParams& params, const Attrs& a,
                const Meta& m, std::string_view op) {
  Context& ctx = context();
  const bool can =
      ctx.has_int64() && ctx.has_float64() && (m.dtype != DType::Bool || ctx.has_int8_storage());
  if (!can) return on_host_then_upload(kind, a, m);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  const Walk w = plan_walk(m.shape, {&out.strides()}, op);  // checks the count fits 32 bits
  if (w.numel == 0) return out;
  CreationParams p = params;
  p.n = static_cast<uint32_t>(w.numel);
  Buffer* buffers[] = {&bound_buffer(out, op)};
  launch(std::string(gen) + out_suffix(m.dtype), buffers, &p, sizeof(p), w.numel);
  return out;
}

}  // namespace

// Any dtype: the value's bytes in the output's dtype, written by the device.
VK_KERNEL(full) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  uint64_t bits = 0;
  switch (m.dtype) {
    case DType::Bool:
      bits = bits_of<uint8_t>(a.value.to<bool>("full") ? 1 : 0);
      break;
    case DType::Int32:
      bits = bits_of(a.value.to<int32_t>("full"));
      break;
    case DType::Int64:
      bits = bits_of(a.value.to<int64_t>("full"));
      break;
    case DType::Float32:
      bits = bits_of(a.value.to<float>("full"));
      break;
    case DType::Float64:
      bits = bits_of(a.value.to<double>("full"));
      break;
    default:
      throw DTypeError(detail::cat("full: ", dtype_name(m.dtype),
                                   " tensors are not supported on the vulkan device"));
  }
  fill_bits(out, bits, "full");
  return out;
}

VK_KERNEL(arange) {
  (void)in;
  if (!a.arange.integers) return on_host_then_upload(OpKind::Arange, a, m);
  CreationParams p;
  p.start = static_cast<uint64_t>(a.start);
  p.step = static_cast<uint64_t>(a.step);
  return generate("arange", OpKind::Arange, p, a, m, "arange");
}

VK_KERNEL(rand) {
  (void)in;
  CreationParams p;
  p.seed = a.seed;
  p.offset = a.offset;
  return generate("rand", OpKind::Rand, p, a, m, "rand");
}

VK_KERNEL(randn) {
  (void)in;
  return on_host_then_upload(OpKind::Randn, a, m);
}

VK_KERNEL(randint) {
  (void)in;
  CreationParams p;
  p.seed = a.seed;
  p.offset = a.offset;
  // In uint64, as the CPU: high - low may exceed int64 (randint(-2^63, 2^63 - 1)).
  p.start = static_cast<uint64_t>(a.start);
  p.step = static_cast<uint64_t>(a.stop) - p.start;
  return generate("randint", OpKind::Randint, p, a, m, "randint");
}

}  // namespace vk::vulkan
