// Element-wise kernels on the Vulkan device: one strided shader variant per op and dtype
// (launch.h, shaders/elementwise.comp). Inputs arrive with the output's shape (the op table's
// prepare broadcasts them as views) and, but for where's condition, in one dtype; the op table
// has already refused the dtypes the CPU refuses. The CPU's kernels are the contract: the same
// special values, integer wrap-around and errors.
#include <cstring>
#include <limits>
#include <vector>

#include "vkml/backend/vulkan/context.h"  // hostwait: deferred errors
#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/math.h"    // math ops (#15): two_over_pi_table
#include "vkml/backend/vulkan/memory.h"  // hostwait: context()
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

Tensor launch(const char* shader, const std::vector<Tensor>& in, const Meta& m) {
  return run_strided(Strided{.shader = shader, .op = shader}, in, m);
}

// torch's text ("ZeroDivisionError"), as the CPU's.
constexpr const char* kZeroDivision = "ZeroDivisionError (integer division by zero)";

// float32 pow, log1p, expm1, sin and cos are computed in float64 where the device has it (so that
// they round as the CPU's libm), else in float32 alone (the "_nof64" variants, within 2 ulp:
// most mobile GPUs, Intel Arc and Apple's through MoltenVK have no shaderFloat64). The shader
// variant for m's dtype, after checking the device can run it.
const char* float_math_variant(const char* op, const char* nof64, const Meta& m) {
  if (m.dtype == DType::Float32 && !context().has_float64()) {
    if (std::string_view(op) == "sin" || std::string_view(op) == "cos")
      check_dtype(DType::Int64, op);  // the exact reduction's integer products
    return nof64;
  }
  check_dtype(DType::Float64, op);
  return op;
}

// Runs s with the error word, which the shader raises on an integer error: RuntimeError
// "<op>: <message>" at the next host read (hostwait: reading a flag here waited for the device).
Tensor launch_checked(Strided s, const std::vector<Tensor>& in, const Meta& m,
                      const char* message) {
  s.error_slot = context().expect_valid(std::string(s.op), message, Context::ErrorKind::Runtime);
  return run_strided(s, in, m);
}

// True when every element of t is the same memory element (a broadcast scalar), as the CPU's.
bool is_uniform(const Tensor& t) {
  for (size_t d = 0; d < t.shape().size(); ++d)
    if (t.strides()[d] != 0 && t.shape()[d] != 1) return false;
  return true;
}

template <class T>
void put_bound(uint32_t* words, const std::optional<Scalar>& v, bool low) {
  T b;
  if (v)
    b = v->convert<T>();
  else if constexpr (std::is_floating_point_v<T>)
    b = low ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else
    b = low ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  std::memcpy(words, &b, sizeof(b));
}

// The bits of 2/pi that float64's exact reduction modulo pi/2 reads (shaders/trig.glsl).
constexpr uint32_t kTwoOverPi[40] = {
    0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561,
    0xb7246e3a, 0x424dd2e0, 0x06492eea, 0x09d1921c, 0xfe1deb1c, 0xb129a73e, 0xe88235f5, 0x2ebb4484,
    0xe99c7026, 0xb45f7e41, 0x3991d639, 0x835339f4, 0x9c845f8b, 0xbdf9283b, 0x1ff897ff, 0xde05980f,
    0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7, 0x4f463f66, 0x9e5fea2d, 0x7527bac7, 0xebe5f17b,
    0x3d0739f7, 0x8a5292ea, 0x6bfb5fb1, 0x1f8d5d08, 0x56033046, 0xfc7b6bab, 0xf0cfbc20, 0x9af4361d};

// Reduced exactly modulo pi/2 and computed in float64 (shaders/trig.glsl): GLSL's builtins may
// be far less exact than the CPU's libm, and float64 has none. float64 reads 2/pi from a buffer
// (uploaded per call: as a constant array in the shader, lavapipe takes 12 s to compile it).
Tensor trig(const char* op, const char* nof64, const std::vector<Tensor>& in, const Meta& m) {
  const char* shader = float_math_variant(op, nof64, m);
  if (m.dtype == DType::Float32) return run_strided(Strided{.shader = shader, .op = op}, in, m);
  return run_strided(Strided{.shader = op, .op = op}, {in[0], two_over_pi_table(m)}, m);
}

}  // namespace

Tensor two_over_pi_table(const Meta& m) {
  Tensor table = Tensor::empty({40}, DType::Int32, m.device);
  copy_bytes(m.device, table.storage_data(), 0, kCPU, kTwoOverPi, 0, sizeof(kTwoOverPi));
  // seen by the walk as a broadcast (one element everywhere); the shader reads it whole
  return table.alias(m.shape, Strides(m.shape.size(), 0), 0);
}

#define VKML_VULKAN_OP(name)     \
  VK_KERNEL(name) {              \
    (void)a;                     \
    return launch(#name, in, m); \
  }
// Every dtype the CPU takes, as its kernels (integers wrap, NaN propagates as there).
VKML_VULKAN_OP(neg)
VKML_VULKAN_OP(abs)
VKML_VULKAN_OP(sign)
VKML_VULKAN_OP(relu)
VKML_VULKAN_OP(floor)
VKML_VULKAN_OP(ceil)
VKML_VULKAN_OP(round)
VKML_VULKAN_OP(trunc)
VKML_VULKAN_OP(frac)
VKML_VULKAN_OP(add)
VKML_VULKAN_OP(sub)
VKML_VULKAN_OP(mul)
VKML_VULKAN_OP(div)
VKML_VULKAN_OP(maximum)
VKML_VULKAN_OP(minimum)
VKML_VULKAN_OP(where)
VKML_VULKAN_OP(eq)
VKML_VULKAN_OP(ne)
VKML_VULKAN_OP(lt)
VKML_VULKAN_OP(le)
VKML_VULKAN_OP(gt)
VKML_VULKAN_OP(ge)
VKML_VULKAN_OP(bitwise_and)
VKML_VULKAN_OP(bitwise_or)
VKML_VULKAN_OP(bitwise_xor)
// Float math in float32 and float64: vmath.h's routines ported (shaders/vmath.glsl), sqrt and
// division correctly rounded.
VKML_VULKAN_OP(exp)
VKML_VULKAN_OP(log)
VKML_VULKAN_OP(sqrt)
VKML_VULKAN_OP(rsqrt)
VKML_VULKAN_OP(reciprocal)
VKML_VULKAN_OP(tanh)
VKML_VULKAN_OP(sigmoid)
VKML_VULKAN_OP(erf)
VKML_VULKAN_OP(erfc)
VKML_VULKAN_OP(gelu_backward)
VKML_VULKAN_OP(relu_backward)
VKML_VULKAN_OP(tanh_backward)
VKML_VULKAN_OP(sigmoid_backward)
VKML_VULKAN_OP(hardsigmoid)
VKML_VULKAN_OP(hardsigmoid_backward)
VKML_VULKAN_OP(hardswish)
VKML_VULKAN_OP(hardswish_backward)
VKML_VULKAN_OP(silu)
VKML_VULKAN_OP(silu_backward)
VKML_VULKAN_OP(squared_difference)
#undef VKML_VULKAN_OP

VK_KERNEL(sin) {
  (void)a;
  return trig("sin", "sin_nof64", in, m);
}
VK_KERNEL(cos) {
  (void)a;
  return trig("cos", "cos_nof64", in, m);
}

VK_KERNEL(log1p) {
  (void)a;
  return run_strided(
      Strided{.shader = float_math_variant("log1p", "log1p_nof64", m), .op = "log1p"}, in, m);
}
VK_KERNEL(expm1) {
  (void)a;
  return run_strided(
      Strided{.shader = float_math_variant("expm1", "expm1_nof64", m), .op = "expm1"}, in, m);
}

// Output 1 (the derivative gelu's rule may use) is left undefined here: the rule then takes
// gelu_backward.
VK_KERNEL(gelu) {
  return {
      run_strided(Strided{.shader = a.gelu.tanh_approximation ? "gelu_tanh" : "gelu", .op = "gelu"},
                  in, m),
      Tensor()};
}

VK_KERNEL(floor_divide) {
  (void)a;
  const Strided s{.shader = "floor_divide", .op = "floor_divide"};
  if (is_floating(m.dtype)) return run_strided(s, in, m);
  return launch_checked(s, in, m, kZeroDivision);
}

VK_KERNEL(remainder) {
  (void)a;
  const Strided s{.shader = "remainder", .op = "remainder"};
  if (is_floating(m.dtype)) return run_strided(s, in, m);
  return launch_checked(s, in, m, kZeroDivision);
}

// Floats: C's pow through vmath's float64 exp and log (float32), or exp and a double-double log
// (float64): within an ulp of the CPU's correctly rounded libm.
VK_KERNEL(pow) {
  (void)a;
  Strided s{.shader = "pow", .op = "pow"};
  if (!is_floating(m.dtype)) return run_strided(s, in, m);
  s.shader = float_math_variant("pow", "pow_nof64", m);
  // One exponent for every element: the CPU's products and roots for the usual powers.
  s.scalar[0] = is_uniform(in[1]) ? 1u : 0u;
  return run_strided(s, in, m);
}

VK_KERNEL(clamp) {
  Strided s{.shader = "clamp", .op = "clamp"};
  VK_DISPATCH_NUMERIC(m.dtype, "clamp", {
    put_bound<T>(s.scalar, a.lo, true);
    put_bound<T>(s.scalar + 2, a.hi, false);
  });
  return run_strided(s, in, m);
}

// The activations with parameters (ops/activation.h): the shader reads them as its constants 0
// and 1, in the tensors' dtype, as the CPU's kernels convert them.
namespace {
Tensor with_params(const char* op, const std::vector<Tensor>& in, const Meta& m, double p0,
                   double p1) {
  Strided s{.shader = op, .op = op};
  VK_DISPATCH_FLOAT(m.dtype, op, {
    const T v0 = static_cast<T>(p0), v1 = static_cast<T>(p1);
    std::memcpy(s.scalar, &v0, sizeof(T));
    std::memcpy(s.scalar + 2, &v1, sizeof(T));
  });
  return run_strided(s, in, m);
}
}  // namespace

VK_KERNEL(leaky_relu) { return with_params("leaky_relu", in, m, a.activation.negative_slope, 0); }
VK_KERNEL(leaky_relu_backward) {
  return with_params("leaky_relu_backward", in, m, a.activation.negative_slope, 0);
}
VK_KERNEL(hardtanh_backward) {
  return with_params("hardtanh_backward", in, m, a.lo->to_double(), a.hi->to_double());
}
VK_KERNEL(elu) { return with_params("elu", in, m, a.activation.alpha, a.activation.input_scale); }
VK_KERNEL(elu_backward) {
  return with_params("elu_backward", in, m, a.activation.alpha, a.activation.input_scale);
}
VK_KERNEL(softplus) {
  return with_params("softplus", in, m, a.activation.beta, a.activation.threshold);
}
VK_KERNEL(softplus_backward) {
  return with_params("softplus_backward", in, m, a.activation.beta, a.activation.threshold);
}
VK_KERNEL(smooth_l1) { return with_params("smooth_l1", in, m, a.activation.width, 0); }
VK_KERNEL(smooth_l1_backward) {
  return with_params("smooth_l1_backward", in, m, a.activation.width, 0);
}
VK_KERNEL(huber) { return with_params("huber", in, m, a.activation.width, 0); }
VK_KERNEL(huber_backward) { return with_params("huber_backward", in, m, a.activation.width, 0); }

// The pointwise family (ops/pointwise.h): three inputs of one floating dtype; addcmul's and
// addcdiv's value is constant 0.
VK_KERNEL(lerp) {
  (void)a;
  return launch("lerp", in, m);
}
VK_KERNEL(addcmul) { return with_params("addcmul", in, m, a.value.to_double(), 0); }
VK_KERNEL(addcdiv) { return with_params("addcdiv", in, m, a.value.to_double(), 0); }

}  // namespace vk::vulkan
