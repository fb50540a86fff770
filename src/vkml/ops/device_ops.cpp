// to_device: a copy from one device's memory to another's. Its kernel runs for every pair of
// devices through their DeviceMemory (core/device.h), so a backend that brings its memory gets
// transfers without a kernel of its own.
#include "vkml/ops/device_ops.h"

#include "vkml/core/grad_mode.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

void prepare_to_device(std::vector<Tensor>& in, const Attrs&, std::string_view) {
  if (!in[0].is_contiguous()) in[0] = contiguous(in[0]);  // on its own device, then one copy
}

VK_KERNEL(copy_across_devices) {
  const Tensor& x = in[0];
  Tensor out = Tensor::empty(m.shape, m.dtype, a.device);
  const size_t element = dtype_size(x.dtype());
  copy_bytes(a.device, out.storage_data(), 0, x.device(), x.storage_data(),
             static_cast<size_t>(x.offset()) * element, static_cast<size_t>(x.numel()) * element);
  return out;
}

}  // namespace

void add_device_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::ToDevice,
       .name = "to_device",
       .arity = 1,
       .signature = "to_device(x, device)",
       .summary = "x copied to another device's memory",
       .prepare = prepare_to_device,
       .infer = infer_same_as_first,
       .any_device = copy_across_devices,
       .device_from_attrs = true,
       .grad = [](const GradCtx& c) -> Grads { return {to_device(c.grad, c.in[0].device())}; },
       .grad_doc = "dx = g moved back to x's device"});
}

Tensor host_read(const Tensor& x) {
  NoGradGuard no_grad;
  return contiguous(to_cpu(x));
}

Tensor to_device(const Tensor& x, Device device) {
  if (x.defined() && x.device() == device) return x;  // undefined: dispatch says so
  Attrs a;
  a.device = device;
  return dispatch(OpKind::ToDevice, {x}, a);
}

}  // namespace vk
