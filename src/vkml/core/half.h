// The two 16-bit float formats as storage types: IEEE binary16 (float16: 5 exponent bits, 10
// mantissa bits) and bfloat16 (float32's 8 exponent bits, 7 mantissa bits). Kernels compute in
// float and round once on store; these types only hold bits and convert.
//
// Conversions round to nearest even, as PyTorch's c10::Half and c10::BFloat16 (and the
// hardware's vcvtps2ph / vcvtneps2bf16), with the same NaN bit patterns (float16 0x7E00,
// bfloat16 0x7FC0), so that results compare bit for bit with PyTorch's. They are plain integer
// arithmetic: no instruction set beyond the baseline is needed.
#pragma once
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace vk {

namespace half_bits {

inline float float16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_float16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (half-way past 65504): inf
  if (x < 0x38800000u) {
    // Below 2^-14, float16's subnormal range: adding 0.5 puts the value where float's spacing
    // (2^-24) is float16's, so the hardware's own round-to-nearest-even does the rounding.
    const float r = std::bit_cast<float>(x) + 0.5f;
    return sign | static_cast<uint16_t>(std::bit_cast<uint32_t>(r) - 0x3f000000u);
  }
  const uint32_t odd = (x >> 13) & 1u;  // ties go to the even mantissa
  x += 0xc8000fffu + odd;               // rebias the exponent (-112 << 23) and round
  return sign | static_cast<uint16_t>(x >> 13);
}

inline float bfloat16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t float_to_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;  // NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace half_bits

// A float16 element. Converts to float implicitly (so that a kernel reading one computes in
// float) and from float explicitly (each rounding is written where it happens).
struct Half {
  uint16_t bits;
  Half() = default;
  explicit Half(float f) : bits(half_bits::float_to_float16(f)) {}
  explicit Half(double d) : Half(static_cast<float>(d)) {}              // via float, as PyTorch
  operator float() const { return half_bits::float16_to_float(bits); }  // NOLINT: implicit
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(half_bits::float_to_bfloat16(f)) {}
  explicit BFloat16(double d) : BFloat16(static_cast<float>(d)) {}
  operator float() const { return half_bits::bfloat16_to_float(bits); }  // NOLINT: implicit
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

// Whether T is one of the two 16-bit float storage types.
template <class T>
inline constexpr bool is_half_type = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
// Whether T computes as a float: float, double, or a 16-bit float.
template <class T>
inline constexpr bool is_float_type = std::is_floating_point_v<T> || is_half_type<T>;

// The largest finite value of each 16-bit format.
template <class T>
inline constexpr double half_max = std::is_same_v<T, Half> ? 65504.0 : 3.3895313892515355e38;

}  // namespace vk
