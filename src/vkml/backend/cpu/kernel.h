// What every CPU kernel file includes: the kernel signature and registry (core/kernel.h), the
// shape arithmetic shared with the op table (core/geometry.h), and integer arithmetic that wraps.
// The backend sees nothing of ops/.
#pragma once
#include <type_traits>

#include "vkml/backend/cpu/isa.h"
#include "vkml/core/geometry.h"
#include "vkml/core/kernel.h"
#include "vkml/core/tensor.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// Integer + - * and negation wrap on overflow, as PyTorch (two's complement): computed in the
// unsigned type, since signed overflow is undefined in C++. Floats compute as they are.
template <class T, class F>
[[gnu::always_inline]] inline T wrapping(T x, T y, F f) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(f(static_cast<U>(x), static_cast<U>(y)));
  } else {
    return f(x, y);
  }
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
