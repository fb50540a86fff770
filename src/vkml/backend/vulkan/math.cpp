// The math family's kernels on the Vulkan device (ops/math.cpp; issue #15): one strided shader
// variant per op and dtype (shaders/math.comp), laid out and launched as the element-wise
// family's (launch.h). Every float op computes in double (float32 results rounded once) where the
// device has float64, as log1p, expm1 and pow do; in float alone elsewhere.
#include "vkml/backend/vulkan/math.h"

#include <string>
#include <string_view>
#include <vector>

#include "vkml/backend/vulkan/context.h"  // hostwait: deferred errors
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

// Computed in double, float32 included, where the device has float64; else float32 tensors take
// the "_nof64" variants (the same steps in float alone) and float64 ones are refused.
Tensor float_op(const char* op, const std::vector<Tensor>& in, const Meta& m,
                uint32_t scalar0 = 0) {
  const bool alone = m.dtype == DType::Float32 && !context().has_float64();
  if (alone && std::string_view(op) == "tan") check_dtype(DType::Int64, op);  // its reduction
  if (!alone) check_dtype(DType::Float64, op);
  const std::string nof64 = std::string(op) + "_nof64";
  Strided s{.shader = alone ? std::string_view(nof64) : std::string_view(op), .op = op};
  s.scalar[0] = scalar0;
  return run_strided(s, in, m);
}

}  // namespace

#define VKML_VULKAN_MATH_OP(name)  \
  VK_KERNEL(name) {                \
    (void)a;                       \
    return float_op(#name, in, m); \
  }
VKML_VULKAN_MATH_OP(asin)
VKML_VULKAN_MATH_OP(acos)
VKML_VULKAN_MATH_OP(atan)
VKML_VULKAN_MATH_OP(sinh)
VKML_VULKAN_MATH_OP(cosh)
VKML_VULKAN_MATH_OP(asinh)
VKML_VULKAN_MATH_OP(acosh)
VKML_VULKAN_MATH_OP(atanh)
VKML_VULKAN_MATH_OP(lgamma)
VKML_VULKAN_MATH_OP(digamma)
VKML_VULKAN_MATH_OP(erfinv)
VKML_VULKAN_MATH_OP(log2)
VKML_VULKAN_MATH_OP(log10)
VKML_VULKAN_MATH_OP(exp2)
VKML_VULKAN_MATH_OP(atan2)
#undef VKML_VULKAN_MATH_OP

// Reduced exactly modulo pi/2 as sin and cos are (trig.glsl); float64 reads 2/pi from a buffer.
VK_KERNEL(tan) {
  (void)a;
  if (m.dtype == DType::Float32) return float_op("tan", in, m);
  return float_op("tan", {in[0], two_over_pi_table(m)}, m);
}

VK_KERNEL(polygamma) {
  // n bounds the shader's loops (n + 10 terms summed before the asymptotic tail)
  const int64_t n = a.order;
  VK_CHECK(n >= 1 && n <= 1000, RuntimeError, "polygamma: n = ", n,
           " is out of the range the Vulkan kernel takes (1 to 1000)");
  return float_op("polygamma", in, m, static_cast<uint32_t>(n));
}

VK_KERNEL(fmod) {
  (void)a;
  if (is_floating(m.dtype)) return float_op("fmod", in, m);
  check_dtype(m.dtype, "fmod");
  // hostwait: a zero divisor raises at the next host read (the error word), without a wait here
  Strided s{.shader = "fmod", .op = "fmod"};
  s.error_slot = context().expect_valid("fmod", "ZeroDivisionError (integer division by zero)",
                                        Context::ErrorKind::Runtime);
  return run_strided(s, in, m);
}

// Integer bits and steps: int32, and int64 where the device has it; nextafter works on the bits
// (float64 where the device has it).
#define VKML_VULKAN_BITS_OP(name)                                     \
  VK_KERNEL(name) {                                                   \
    (void)a;                                                          \
    check_dtype(m.dtype, #name);                                      \
    return run_strided(Strided{.shader = #name, .op = #name}, in, m); \
  }
VKML_VULKAN_BITS_OP(bitwise_left_shift)
VKML_VULKAN_BITS_OP(bitwise_right_shift)
VKML_VULKAN_BITS_OP(gcd)
VKML_VULKAN_BITS_OP(lcm)
VKML_VULKAN_BITS_OP(nextafter)
#undef VKML_VULKAN_BITS_OP

}  // namespace vk::vulkan
