#include "vkml/backend/cpu/divmod.h"

#include <atomic>
#include <cmath>
#include <type_traits>

#include "vkml/backend/cpu/loops.h"
#include "vkml/core/error.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// Floats follow PyTorch's div_floor: the quotient of (a - fmod(a, b)) / b is exact, so rounding
// it to the nearest integer gives floor(a / b) without the double rounding of floor(a / b).
template <class T>
T float_floor_divide(T a, T b) {
  if (b == T(0)) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && (b < T(0)) != (mod < T(0))) div -= T(1);
  if (div == T(0)) return std::copysign(T(0), a / b);
  T floor_div = std::floor(div);
  if (div - floor_div > T(0.5)) floor_div += T(1);
  return floor_div;
}

template <class T>
T float_remainder(T a, T b) {
  T mod = std::fmod(a, b);
  if (mod != T(0) && (b < T(0)) != (mod < T(0))) mod += b;
  return mod;
}

// Integers: C++ truncates toward zero; step down when the signs differ and the division is
// inexact. The divisor is checked for zero element by element (a broadcast divisor is a view).
// The minimum value divided by -1 wraps, as in PyTorch.
template <class T>
T int_floor_divide(T a, T b) {
  if (b == T(-1)) return static_cast<T>(T(0) - static_cast<std::make_unsigned_t<T>>(a));
  const T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
}

template <class T>
T int_remainder(T a, T b) {
  if (b == T(-1)) return T(0);
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
}

template <class FloatF, class IntF>
Tensor divmod_kernel(const std::vector<Tensor>& in, const Meta& m, const char* name, FloatF ff,
                     IntF fi) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  std::atomic<bool> by_zero{false};
  VK_DISPATCH_NUMERIC(in[0].dtype(), name, {
    if constexpr (std::is_floating_point_v<T>) {
      map_elements<T, T, T>(out, {&in[0], &in[1]}, [&](T x, T y) -> T { return ff(x, y); });
    } else {
      map_elements<T, T, T>(out, {&in[0], &in[1]}, [&](T x, T y) -> T {
        if (y == T(0)) {
          by_zero.store(true, std::memory_order_relaxed);
          return T(0);
        }
        return fi(x, y);
      });
    }
  });
  VK_CHECK(!by_zero.load(), RuntimeError, name,
           ": ZeroDivisionError (integer division by zero)");  // torch's text, and ours
  return out;
}

}  // namespace

VK_KERNEL(floor_divide) {
  (void)a;
  return divmod_kernel(
      in, m, "floor_divide", [](auto x, auto y) { return float_floor_divide(x, y); },
      [](auto x, auto y) { return int_floor_divide(x, y); });
}

VK_KERNEL(remainder) {
  (void)a;
  return divmod_kernel(
      in, m, "remainder", [](auto x, auto y) { return float_remainder(x, y); },
      [](auto x, auto y) { return int_remainder(x, y); });
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
