// Element-wise kernels on the Vulkan device: one strided shader per op (launch.h). Inputs arrive
// with the output's shape (the op table's prepare broadcasts them as views).
#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"

namespace vk::vulkan {
namespace {

Tensor binary(const char* shader, const std::vector<Tensor>& in, const Meta& m, const char* op) {
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  run_elementwise(shader, {&out, &in[0], &in[1]}, op);
  return out;
}

}  // namespace

VK_KERNEL(add) {
  (void)a;
  return binary("add", in, m, "add");
}
VK_KERNEL(sub) {
  (void)a;
  return binary("sub", in, m, "sub");
}
VK_KERNEL(mul) {
  (void)a;
  return binary("mul", in, m, "mul");
}
VK_KERNEL(div) {
  (void)a;
  return binary("div", in, m, "div");
}
VK_KERNEL(neg) {
  (void)a;
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  run_elementwise("neg", {&out, &in[0]}, "neg");
  return out;
}

void copy_into(const Tensor& dst, const Tensor& src) {
  run_elementwise("copy", {&dst, &src}, "copy into a tensor");
}

void add_into(const Tensor& dst, const Tensor& a, const Tensor& b) {
  run_elementwise("add", {&dst, &a, &b}, "in-place add");
}

}  // namespace vk::vulkan
