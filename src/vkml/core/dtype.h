// The element types and PyTorch's promotion order between them.
#pragma once
#include <cstdint>
#include <string_view>

#include "vkml/core/error.h"
#include "vkml/core/half.h"

namespace vk {

// Ordered by promotion rank: the common type of two tensors is the later one, except for the two
// pairs where neither holds the other (promote below).
// clang-format off
enum class DType : uint8_t {
  Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64
};
// clang-format on
inline constexpr int kNumDTypes = 10;

inline constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
    case DType::Int16:
      return "int16";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
  }
  return "?";
}

inline constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
      return 4;
    case DType::Int64:
      return 8;
    case DType::Float32:
      return 4;
    case DType::Float64:
      return 8;
  }
  return 0;
}

inline constexpr bool is_floating(DType t) { return t >= DType::Float16; }
inline constexpr bool is_integral(DType t) { return t >= DType::UInt8 && t <= DType::Int64; }
inline constexpr bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// PyTorch's promotion table: the later of the two, except uint8 with int8 (int16 holds both)
// and float16 with bfloat16 (float32 holds both).
inline constexpr DType promote(DType a, DType b) {
  const DType lo = a < b ? a : b, hi = a < b ? b : a;
  if (lo == DType::UInt8 && hi == DType::Int8) return DType::Int16;
  if (lo == DType::Float16 && hi == DType::BFloat16) return DType::Float32;
  return hi;
}

// The dtype a kernel computes a narrow dtype in, when the device's kernel does not take it
// itself (ops/table.cpp): 16-bit floats in float32, 8- and 16-bit integers in int32. The result
// is rounded (or wrapped, as integer arithmetic of the narrow type) once on store.
inline constexpr DType compute_dtype(DType t) {
  return is_half(t) ? DType::Float32 : t < DType::Int32 && t != DType::Bool ? DType::Int32 : t;
}

// A set of dtypes, one bit each: what a device's kernel takes (core/kernel.h).
using DTypeSet = uint16_t;
inline constexpr DTypeSet dtype_bit(DType t) {
  return static_cast<DTypeSet>(1u << static_cast<unsigned>(t));
}
inline constexpr bool contains(DTypeSet s, DType t) { return (s & dtype_bit(t)) != 0; }
// The dtypes every kernel computes in (VK_DISPATCH_ALL's), and every dtype a tensor can hold.
inline constexpr DTypeSet kComputeDTypes = dtype_bit(DType::Bool) | dtype_bit(DType::Int32) |
                                           dtype_bit(DType::Int64) | dtype_bit(DType::Float32) |
                                           dtype_bit(DType::Float64);
inline constexpr DTypeSet kEveryDType = static_cast<DTypeSet>((1u << kNumDTypes) - 1);

// The category of a dtype in PyTorch's promotion rules: bool < integer < floating.
inline constexpr int category(DType t) { return t == DType::Bool ? 0 : is_integral(t) ? 1 : 2; }

// Whether an op's result of dtype `from` may be written into a tensor of dtype `to` (in-place
// ops, out=): never into a lower category (float into int, int into bool), as PyTorch's canCast.
inline constexpr bool can_cast(DType from, DType to) { return category(from) <= category(to); }

template <class T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct dtype_of<int16_t> {
  static constexpr DType value = DType::Int16;
};
template <>
struct dtype_of<Half> {
  static constexpr DType value = DType::Float16;
};
template <>
struct dtype_of<BFloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::Float64;
};

// VK_DISPATCH_*(dtype, T, body): runs body with T bound to the C++ type of dtype. FLOAT, NUMERIC
// and ALL cover the compute dtypes (kComputeDTypes): the narrow ones reach a kernel only when it
// registered for them, and then it dispatches with VK_DISPATCH_STORAGE, which covers all ten.
#define VK_DTYPE_CASE(D, CT, ...) \
  case ::vk::DType::D: {          \
    using T = CT;                 \
    __VA_ARGS__;                  \
    break;                        \
  }
#define VK_DISPATCH_FLOAT(dtype, opname, ...)                                               \
  switch (dtype) {                                                                          \
    VK_DTYPE_CASE(Float32, float, __VA_ARGS__)                                              \
    VK_DTYPE_CASE(Float64, double, __VA_ARGS__)                                             \
    default:                                                                                \
      throw ::vk::DTypeError(::vk::detail::cat(opname, ": expected a floating dtype, got ", \
                                               ::vk::dtype_name(dtype)));                   \
  }
#define VK_DISPATCH_NUMERIC(dtype, opname, ...)                                                    \
  switch (dtype) {                                                                                 \
    VK_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)                                                     \
    VK_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)                                                     \
    VK_DTYPE_CASE(Float32, float, __VA_ARGS__)                                                     \
    VK_DTYPE_CASE(Float64, double, __VA_ARGS__)                                                    \
    default:                                                                                       \
      throw ::vk::DTypeError(                                                                      \
          ::vk::detail::cat(opname, ": expected a numeric dtype, got ", ::vk::dtype_name(dtype))); \
  }
#define VK_DISPATCH_ALL(dtype, opname, ...)                             \
  switch (dtype) {                                                      \
    VK_DTYPE_CASE(Bool, bool, __VA_ARGS__)                              \
    VK_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)                          \
    VK_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)                          \
    VK_DTYPE_CASE(Float32, float, __VA_ARGS__)                          \
    VK_DTYPE_CASE(Float64, double, __VA_ARGS__)                         \
    default:                                                            \
      throw ::vk::DTypeError(::vk::detail::cat(opname, ": bad dtype")); \
  }

#define VK_DISPATCH_STORAGE(dtype, opname, ...)                         \
  switch (dtype) {                                                      \
    VK_DTYPE_CASE(Bool, bool, __VA_ARGS__)                              \
    VK_DTYPE_CASE(UInt8, uint8_t, __VA_ARGS__)                          \
    VK_DTYPE_CASE(Int8, int8_t, __VA_ARGS__)                            \
    VK_DTYPE_CASE(Int16, int16_t, __VA_ARGS__)                          \
    VK_DTYPE_CASE(Int32, int32_t, __VA_ARGS__)                          \
    VK_DTYPE_CASE(Int64, int64_t, __VA_ARGS__)                          \
    VK_DTYPE_CASE(Float16, ::vk::Half, __VA_ARGS__)                     \
    VK_DTYPE_CASE(BFloat16, ::vk::BFloat16, __VA_ARGS__)                \
    VK_DTYPE_CASE(Float32, float, __VA_ARGS__)                          \
    VK_DTYPE_CASE(Float64, double, __VA_ARGS__)                         \
    default:                                                            \
      throw ::vk::DTypeError(::vk::detail::cat(opname, ": bad dtype")); \
  }

}  // namespace vk
