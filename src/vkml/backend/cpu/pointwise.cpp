// The CPU kernels of the pointwise family (ops/pointwise.h): one pass of loops.h's map_elements
// (vectorised; a broadcast scalar weight or tensor steps by zero along the run), in torch's order
// of operations with its multiply-add fused as torch's vector loop fuses it (vmath's fma_: one
// rounding where the CPU has FMA): torch's bits, float32 and float64. The side lerp takes is
// chosen by vmath's select, which vectorises on every target.
#include "vkml/backend/cpu/pointwise.h"

#include <cmath>

#include "vkml/backend/cpu/loops.h"
#include "vkml/backend/cpu/vmath.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

using vmath::detail::fma_;
using vmath::detail::select;

// (a, b, c): one floating dtype and shape after the op's prepare (lerp's scalar weight in the
// tensors' compute dtype, which they have here).
template <class F>
Tensor ternary(const std::vector<Tensor>& in, const Meta& m, const char* name, F f) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(
      m.dtype, name,
      map_elements<T, T, T, T>(
          out, {&in[0], &in[1], &in[2]}, [&](T a, T b, T c) VK_ELEMENT -> T { return f(a, b, c); },
          kElementwiseGrain, ElementCost::cheap));
  return out;
}

}  // namespace

// torch's vector loop: base + coef (end - start), base = start and coef = w where |w| < 0.5,
// else end and w - 1 (so w = 1 gives end exactly).
VK_KERNEL(lerp) {
  (void)a;
  return ternary(in, m, "lerp", [](auto start, auto end, auto w) VK_ELEMENT {
    using T = decltype(w);
    const bool small = std::fabs(w) < T(0.5);
    return fma_(select(small, w, w - T(1)), end - start, select(small, start, end));
  });
}

// input + (value * t1) * t2 and input + (value * t1) / t2, value in the tensors' dtype.
VK_KERNEL(addcmul) {
  const double value = a.value.to_double();
  return ternary(in, m, "addcmul", [value](auto x, auto t1, auto t2) VK_ELEMENT {
    using T = decltype(x);
    return fma_(T(value) * t1, t2, x);
  });
}
VK_KERNEL(addcdiv) {
  const double value = a.value.to_double();
  return ternary(in, m, "addcdiv", [value](auto x, auto t1, auto t2) VK_ELEMENT {
    using T = decltype(x);
    return x + T(value) * t1 / t2;
  });
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
