// Creation kernels on the Vulkan device. full fills on the device. arange, rand,
// randn and randint are computed on the host by the CPU's own kernels and uploaded: the same
// seed then gives the same values on both devices, bit for bit (manual_seed reproduces results
// across devices). The CPU's Philox generator is counter-based, so a device generator could
// reproduce it for rand and randint; randn's Box-Muller runs in double there, and GLSL has no
// float64 log or cos, so randn at least stays on the host.
#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/movement.h"
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

// The CPU kernel of `kind` run with this call's attributes, its result copied to m.device.
Tensor on_host_then_upload(OpKind kind, const Attrs& a, const Meta& m) {
  const Kernel cpu = find_kernel(DeviceType::CPU, kind);
  VK_CHECK(cpu != nullptr, RuntimeError, "vulkan: the cpu registers no kernel for op ",
           static_cast<int>(kind));
  const Tensor host = cpu({}, a, Meta{m.shape, m.dtype, kCPU})[0];
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  const size_t nbytes = static_cast<size_t>(host.numel()) * dtype_size(m.dtype);
  copy_bytes(m.device, out.storage_data(), 0, kCPU, host.storage_data(),
             static_cast<size_t>(host.offset()) * dtype_size(m.dtype), nbytes);
  return out;
}

}  // namespace

// float32 only: test_vulkan.cpp holds other dtypes to be a DTypeError here. fill_bits (movement.h)
// fills any dtype, once that contract changes.
VK_KERNEL(full) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  check_float32(out, "full");
  run_elementwise("fill", {&out}, "full", a.value.to<float>("full"));
  return out;
}

VK_KERNEL(arange) {
  (void)in;
  return on_host_then_upload(OpKind::Arange, a, m);
}

VK_KERNEL(rand) {
  (void)in;
  return on_host_then_upload(OpKind::Rand, a, m);
}

VK_KERNEL(randn) {
  (void)in;
  return on_host_then_upload(OpKind::Randn, a, m);
}

VK_KERNEL(randint) {
  (void)in;
  return on_host_then_upload(OpKind::Randint, a, m);
}

}  // namespace vk::vulkan
