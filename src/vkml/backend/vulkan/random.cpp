// Random sampling on the Vulkan device (issue 15 item 3): randperm, multinomial, poisson and
// standard_gamma (#18) run the CPU's kernels (backend/cpu/random.cpp) on the host and upload the
// result, so that a seed gives the same numbers on both devices. multinomial, poisson and
// standard_gamma first read their input (the weights, the rates, the concentrations) back from
// the device. Why no shader yet: poisson's and gamma's samplers and
// multinomial's race without replacement compute exp, log and lgamma in double, which GLSL has
// no float64 versions of (randn is uploaded for the same reason, creation.cpp), so a shader could
// not give the CPU's bits; randperm's Fisher-Yates is sequential. bernoulli and normal need
// nothing here: they are made of rand / randn and elementwise ops (ops/random.cpp), which run on
// the device.
#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/movement.h"
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

// x's elements in a fresh contiguous CPU tensor.
Tensor read_back(const Tensor& x, std::string_view op) {
  Tensor src = x;
  if (!x.is_contiguous()) {
    src = Tensor::empty(x.shape(), x.dtype(), x.device());
    copy_strided(src, x, op);
  }
  Tensor host = Tensor::empty(x.shape(), x.dtype());
  const size_t es = dtype_size(x.dtype());
  if (x.numel() > 0)
    copy_bytes(kCPU, host.storage_data(), 0, src.device(), src.storage_data(),
               static_cast<size_t>(src.offset()) * es, static_cast<size_t>(src.numel()) * es);
  return host;
}

// The CPU kernel of `kind` over host copies of the inputs, its result copied to m.device.
Tensor on_host(OpKind kind, const std::vector<Tensor>& in, const Attrs& a, const Meta& m,
               std::string_view op) {
  const Kernel cpu = find_kernel(DeviceType::CPU, kind);
  VK_CHECK(cpu != nullptr, RuntimeError, op, ": the cpu registers no kernel");
  std::vector<Tensor> host;
  for (const Tensor& t : in) host.push_back(read_back(t, op));
  const Tensor result = cpu(host, a, Meta{m.shape, m.dtype, kCPU})[0];
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  const size_t es = dtype_size(m.dtype);
  if (result.numel() > 0)
    copy_bytes(m.device, out.storage_data(), 0, kCPU, result.storage_data(),
               static_cast<size_t>(result.offset()) * es, static_cast<size_t>(result.numel()) * es);
  return out;
}

}  // namespace

VK_KERNEL(randperm) { return on_host(OpKind::Randperm, in, a, m, "randperm"); }
VK_KERNEL(multinomial) { return on_host(OpKind::Multinomial, in, a, m, "multinomial"); }
VK_KERNEL(poisson) { return on_host(OpKind::Poisson, in, a, m, "poisson"); }
VK_KERNEL(standard_gamma) { return on_host(OpKind::StandardGamma, in, a, m, "standard_gamma"); }

}  // namespace vk::vulkan
