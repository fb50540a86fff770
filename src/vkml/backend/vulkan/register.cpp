#include "vkml/backend/vulkan/register.h"

#include <memory>
#include <utility>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/memory.h"

namespace vk::vulkan {

void register_backend() {
  const DeviceType type = register_device_type("vulkan", std::make_unique<VulkanMemory>());
  const std::pair<OpKind, Kernel> kernels[] = {
      {OpKind::Full, full},
      {OpKind::Add, add},
      {OpKind::Sub, sub},
      {OpKind::Mul, mul},
      {OpKind::Div, div},
      {OpKind::Neg, neg},
      {OpKind::Exp, exp},
      {OpKind::Log, log},
      {OpKind::Sqrt, sqrt},
      {OpKind::Rsqrt, rsqrt},
      {OpKind::Reciprocal, reciprocal},
      {OpKind::Abs, abs},
      {OpKind::Sign, sign},
      {OpKind::Sin, sin},
      {OpKind::Cos, cos},
      {OpKind::Tanh, tanh},
      {OpKind::Sigmoid, sigmoid},
      {OpKind::Sum, sum},
      {OpKind::Mean, mean},
      {OpKind::Reshape, reshape},
      {OpKind::Permute, permute},
      {OpKind::Expand, expand},
      {OpKind::Contiguous, contiguous},
      {OpKind::Slice, slice},
      // linalg
      {OpKind::Matmul, matmul},
      {OpKind::Addmm, addmm},
      {OpKind::Im2Col, im2col},
      {OpKind::Col2Im, col2im},
      {OpKind::Conv2d, conv2d},
      {OpKind::MaxPool2d, max_pool2d},
      {OpKind::MaxPool2dBackward, max_pool2d_backward},
      {OpKind::AvgPool2d, avg_pool2d},
      // end linalg
  };
  for (const auto& [kind, kernel] : kernels) register_kernel(type, kind, kernel);
  register_services(type, {.copy_into = copy_into, .add_into = add_into});
}

std::string device_name() { return context().device_name(); }

int validation_messages() {
  const Context* c = Context::get();
  return c ? c->validation_messages() : 0;
}

}  // namespace vk::vulkan
