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
// Unary float math with GLSL's builtins: within a few ulp of the CPU's vmath on lavapipe. A
// device's builtins may be less exact (Vulkan allows sin/cos an absolute error of 2^-11); vkml's
// own routines in GLSL, as the CPU's, are the next step (issue #14).
#define VKML_VULKAN_UNARY(name)                             \
  VK_KERNEL(name) {                                         \
    (void)a;                                                \
    Tensor out = Tensor::empty(m.shape, m.dtype, m.device); \
    run_elementwise(#name, {&out, &in[0]}, #name);          \
    return out;                                             \
  }
VKML_VULKAN_UNARY(neg)
VKML_VULKAN_UNARY(exp)
VKML_VULKAN_UNARY(log)
VKML_VULKAN_UNARY(sqrt)
VKML_VULKAN_UNARY(rsqrt)
VKML_VULKAN_UNARY(reciprocal)
VKML_VULKAN_UNARY(abs)
VKML_VULKAN_UNARY(sign)
VKML_VULKAN_UNARY(sin)
VKML_VULKAN_UNARY(cos)
VKML_VULKAN_UNARY(tanh)
VKML_VULKAN_UNARY(sigmoid)
#undef VKML_VULKAN_UNARY

void copy_into(const Tensor& dst, const Tensor& src) {
  run_elementwise("copy", {&dst, &src}, "copy into a tensor");
}

void add_into(const Tensor& dst, const Tensor& a, const Tensor& b) {
  run_elementwise("add", {&dst, &a, &b}, "in-place add");
}

}  // namespace vk::vulkan
