// A number that is not a tensor: the bool, int or float operand of an op (a Python number, a C++
// literal). Its kind, never its value, decides type promotion, as PyTorch's "wrapped numbers":
// x * 2.0 is float32 for an int64 x whatever the value. An int is kept exactly, as int64.
#pragma once
#include <cmath>
#include <concepts>
#include <cstdint>
#include <ios>
#include <limits>
#include <ostream>
#include <string_view>

#include "vkml/core/default_dtype.h"
#include "vkml/core/dtype.h"
#include "vkml/core/error.h"

namespace vk {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}  // NOLINT: implicit, as a literal is
  template <std::integral I>
  requires(!std::same_as<I, bool>) Scalar(I v)
      : kind_(Kind::Int), i_(static_cast<int64_t>(v)) {}  // NOLINT
  template <std::floating_point F>
  Scalar(F v) : kind_(Kind::Float), d_(static_cast<double>(v)) {}  // NOLINT

  // An integer in [2^63, 2^64) (a Python int that PyTorch reads as uint64), kept as the nearest
  // double: it converts to the floating dtypes and overflows the integer ones.
  static Scalar big_int(double v) {
    Scalar s(v);
    s.kind_ = Kind::Int;
    s.big_ = true;
    return s;
  }

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_big() const { return big_; }

  // The dtype that stands for the scalar in promotion: bool, int64, or the default float dtype.
  DType promotion_dtype() const {
    return kind_ == Kind::Bool  ? DType::Bool
           : kind_ == Kind::Int ? DType::Int64
                                : default_float_dtype();
  }

  bool to_bool() const { return uses_double() ? d_ != 0 : i_ != 0; }  // NaN is true, as torch
  double to_double() const { return uses_double() ? d_ : static_cast<double>(i_); }
  // The exact value when the scalar is a bool or an int within int64 (else see fits()).
  int64_t to_int64() const { return i_; }

  // Whether the value converts to T without overflow: ints within T's range; floats truncated
  // toward zero for integer T (NaN and +-inf never fit), and within the finite range for float
  // (+-inf and NaN fit) unless `check_float_range` is false, as PyTorch's checked conversions.
  template <class T>
  bool fits(bool check_float_range = true) const {
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double>) {
      return true;
    } else if constexpr (is_float_type<T>) {
      if (!check_float_range || !uses_double() || !std::isfinite(d_)) return true;
      if constexpr (is_half_type<T>)
        return std::fabs(d_) <= half_max<T>;
      else
        return std::fabs(d_) <= static_cast<double>(std::numeric_limits<T>::max());
    } else if constexpr (std::is_unsigned_v<T>) {
      // As PyTorch, a negative int down to -max wraps (x - 1 on uint8 is x + 255).
      constexpr int64_t max = std::numeric_limits<T>::max();
      if (uses_double()) return d_ > -1 && d_ < static_cast<double>(max + 1);
      return i_ >= -max && i_ <= max;
    } else {
      constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());  // -2^(n-1)
      constexpr double hi = -lo;                                                 // 2^(n-1)
      // trunc(d) must lie in [lo, hi); NaN fails every comparison. (lo - 1 rounds to lo for
      // int64, hence both tests.)
      if (uses_double()) return (d_ >= lo || d_ > lo - 1) && d_ < hi;
      return i_ >= std::numeric_limits<T>::min() && i_ <= std::numeric_limits<T>::max();
    }
  }

  // The value as T. Only defined when fits<T>(...) holds; to() checks first.
  template <class T>
  T convert() const {
    if constexpr (std::is_same_v<T, bool>)
      return to_bool();
    else if constexpr (is_float_type<T>)
      return static_cast<T>(to_double());
    else
      return uses_double() ? static_cast<T>(d_) : static_cast<T>(i_);
  }

  // The value as T, or RuntimeError naming `op` when it does not fit (PyTorch's message).
  template <class T>
  T to(std::string_view op, bool check_float_range = true) const {
    VK_CHECK(fits<T>(check_float_range), RuntimeError, op, ": value ", *this,
             " cannot be converted to type ", dtype_name(dtype_of<T>::value), " without overflow");
    return convert<T>();
  }

  friend std::ostream& operator<<(std::ostream& os, const Scalar& s) {
    if (s.kind_ == Kind::Bool) return os << (s.i_ ? "True" : "False");
    if (s.kind_ == Kind::Int && !s.big_) return os << s.i_;
    std::ostream::fmtflags f = os.flags();
    std::streamsize p = os.precision(s.big_ ? 0 : 17);
    if (s.big_) os << std::fixed;  // an integer: all its digits
    os << s.d_;
    os.flags(f);
    os.precision(p);
    return os;
  }

 private:
  bool uses_double() const { return kind_ == Kind::Float || big_; }

  Kind kind_;
  bool big_ = false;
  union {
    int64_t i_;
    double d_;
  };
};

// PyTorch's result dtype of a tensor of dtype t (of any rank) and a scalar: the scalar decides
// only when its category (bool < integer < floating) is above the tensor's, and then gives that
// category's default dtype (bool, int64, float32). float32 * 2.0 stays float32, int32 * 3 stays
// int32, int64 * 2.0 is float32, bool + 1 is int64.
inline DType result_type(DType t, const Scalar& s) {
  DType w = s.promotion_dtype();
  return category(w) > category(t) ? w : t;
}
// Two scalars (torch.where(c, 1, 2.5)): the higher category's default dtype.
inline DType result_type(const Scalar& a, const Scalar& b) {
  return promote(a.promotion_dtype(), b.promotion_dtype());
}

}  // namespace vk
