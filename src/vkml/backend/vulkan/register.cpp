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
      // ---- reductions, softmax and norms (reduction engineer) ----
      {OpKind::Amax, amax},
      {OpKind::Amin, amin},
      {OpKind::MaxDim, max_dim},
      {OpKind::MinDim, min_dim},
      {OpKind::Prod, prod},
      {OpKind::ArgMax, argmax},
      {OpKind::ArgMin, argmin},
      {OpKind::LogSumExp, logsumexp},
      {OpKind::Var, var},
      {OpKind::Softmax, softmax},
      {OpKind::LogSoftmax, log_softmax},
      {OpKind::SoftmaxBackward, softmax_backward},
      {OpKind::LogSoftmaxBackward, log_softmax_backward},
      {OpKind::LayerNorm, layer_norm},
      {OpKind::LayerNormBackward, layer_norm_backward},
      {OpKind::LayerNormParamGrad, layer_norm_param_grad},
      {OpKind::BatchNorm, batch_norm},
      {OpKind::BatchNormBackward, batch_norm_backward},
      {OpKind::BatchNormParamGrad, batch_norm_param_grad},
      // ---- end of reductions, softmax and norms ----
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
