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
      // ---- element-wise family ----
      {OpKind::Log1p, log1p},
      {OpKind::Expm1, expm1},
      {OpKind::Relu, relu},
      {OpKind::Gelu, gelu},
      {OpKind::GeluBackward, gelu_backward},
      {OpKind::Erf, erf},
      {OpKind::Erfc, erfc},
      {OpKind::Floor, floor},
      {OpKind::Ceil, ceil},
      {OpKind::Round, round},
      {OpKind::FloorDivide, floor_divide},
      {OpKind::Remainder, remainder},
      {OpKind::Pow, pow},
      {OpKind::Maximum, maximum},
      {OpKind::Minimum, minimum},
      {OpKind::Where, where},
      {OpKind::Clamp, clamp},
      {OpKind::Eq, eq},
      {OpKind::Ne, ne},
      {OpKind::Lt, lt},
      {OpKind::Le, le},
      {OpKind::Gt, gt},
      {OpKind::Ge, ge},
      {OpKind::BitwiseAnd, bitwise_and},
      {OpKind::BitwiseOr, bitwise_or},
      {OpKind::BitwiseXor, bitwise_xor},
      {OpKind::Cast, cast},
      // ---- end of the element-wise family ----
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
