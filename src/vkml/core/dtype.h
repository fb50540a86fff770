// The five element types and PyTorch's promotion order between them.
#pragma once
#include <cstdint>
#include <string_view>

#include "vkml/core/error.h"

namespace vk {

// Ordered by promotion rank: the common type of two tensors is the later one.
enum class DType : uint8_t { Bool, Int32, Int64, Float32, Float64 };
inline constexpr int kNumDTypes = 5;

inline constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
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
      return 1;
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

inline constexpr bool is_floating(DType t) { return t == DType::Float32 || t == DType::Float64; }
inline constexpr bool is_integral(DType t) { return t == DType::Int32 || t == DType::Int64; }

inline constexpr DType promote(DType a, DType b) { return a > b ? a : b; }

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

// VK_DISPATCH_*(dtype, T, body): runs body with T bound to the C++ type of dtype.
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

}  // namespace vk
