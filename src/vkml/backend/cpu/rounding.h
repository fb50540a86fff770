// floor and ceil from n = nearbyint(x), which GCC vectorises where it keeps std::floor and
// std::ceil scalar (-ftrapping-math): 3-6x faster. Exact: n is an integer within 1/2 of x, so one
// step toward the side wanted is exact (x is an integer already from 2^23 (float) or 2^52 up).
// copysign gives a zero x's sign (ceil(-0.5) = -0, as libm); NaN and inf pass.
#pragma once
#include <cmath>

#include "vkml/backend/cpu/isa.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

template <class T>
inline T floor_step(T x) {
  const T n = std::nearbyint(x);
  return std::copysign(n > x ? n - T(1) : n, x);
}
template <class T>
inline T ceil_step(T x) {
  const T n = std::nearbyint(x);
  return std::copysign(n < x ? n + T(1) : n, x);
}
template <class T>
inline T trunc_step(T x) {
  return std::copysign(floor_step(std::fabs(x)), x);
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
