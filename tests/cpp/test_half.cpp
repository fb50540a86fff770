// The narrow dtypes (#19): the 16-bit float conversions against their definitions, the promotion
// table, and dispatch computing a narrow op in its compute dtype and rounding once.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "vkml/vkml.h"

namespace vk {
namespace {

// The value of a float16 bit pattern by its definition, in double.
double float16_value(uint32_t h) {
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  double v = exp == 0    ? std::ldexp(mant, -24)
             : exp == 31 ? (mant ? NAN : INFINITY)
                         : std::ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -v : v;
}

// The float16 nearest to x by search over every finite pattern, ties to the even mantissa;
// beyond 65520 (half-way past the largest) infinity, as IEEE round-to-nearest says.
uint16_t nearest_float16(float x) {
  if (std::isnan(x)) return 0x7e00;
  const double ax = std::fabs(static_cast<double>(x));
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (ax >= 65520.0) return sign | 0x7c00;
  uint16_t best = 0;
  for (uint32_t h = 1; h < 0x7c00; ++h) {
    const double d = std::fabs(float16_value(h) - ax), e = std::fabs(float16_value(best) - ax);
    if (d < e || (d == e && (h & 1) == 0)) best = static_cast<uint16_t>(h);
  }
  return sign | best;
}

TEST(Half, EveryFloat16PatternConvertsToItsValueAndBack) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = static_cast<float>(Half::from_bits(static_cast<uint16_t>(h)));
    const double want = float16_value(h);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f)) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << h;
    ASSERT_EQ(Half(f).bits, h) << h;  // exact values come back to their own bits
  }
}

TEST(Half, Float32RoundsToTheNearestFloat16TiesToEven) {
  std::vector<float> xs = {0.0f,
                           -0.0f,
                           1e-8f,
                           2.98e-8f,
                           2.99e-8f,
                           5.96e-8f,
                           6.1e-5f,
                           65504.0f,
                           65519.996f,
                           65520.0f,
                           1e9f,
                           -3.14159f,
                           0.1f,
                           1.0f + 0x1p-11f,
                           1.0f + 3 * 0x1p-11f,
                           0x1p-14f - 0x1p-25f,
                           0x1p-24f + 0x1p-25f,
                           std::numeric_limits<float>::infinity(),
                           std::nanf("")};
  // Every tie between neighbouring float16 values, and points just beside them.
  for (uint32_t h = 0; h < 0x7bff; h += 97) {
    const float mid = static_cast<float>((float16_value(h) + float16_value(h + 1)) / 2);
    xs.insert(xs.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f), -mid});
  }
  for (float x : xs) EXPECT_EQ(Half(x).bits, nearest_float16(x)) << x;
}

TEST(Half, BFloat16IsTheTopHalfOfFloat32RoundedToEven) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = static_cast<float>(BFloat16::from_bits(static_cast<uint16_t>(b)));
    ASSERT_EQ(std::bit_cast<uint32_t>(f), b << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(BFloat16(f).bits, b);
    }
  }
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x3f808000u)).bits, 0x3f80);  // tie: to even
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x3f818000u)).bits, 0x3f82);  // tie: to even
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x3f808001u)).bits, 0x3f81);
  EXPECT_EQ(BFloat16(std::nanf("")).bits, 0x7fc0);
  EXPECT_EQ(BFloat16(3.4e38f).bits, 0x7f80);  // past bfloat16's largest: infinity
}

TEST(Half, PromotionFollowsPyTorchsTable) {
  EXPECT_EQ(promote(DType::UInt8, DType::Int8), DType::Int16);
  EXPECT_EQ(promote(DType::Int8, DType::UInt8), DType::Int16);
  EXPECT_EQ(promote(DType::Float16, DType::BFloat16), DType::Float32);
  EXPECT_EQ(promote(DType::BFloat16, DType::Float16), DType::Float32);
  EXPECT_EQ(promote(DType::UInt8, DType::Int16), DType::Int16);
  EXPECT_EQ(promote(DType::Int64, DType::Float16), DType::Float16);
  EXPECT_EQ(promote(DType::Bool, DType::UInt8), DType::UInt8);
  EXPECT_EQ(promote(DType::BFloat16, DType::Float64), DType::Float64);
}

TEST(Half, NarrowOpsComputeInFloat32AndRoundOnce) {
  // 1 + 2^-11 is a float16 tie: float32 arithmetic then one rounding gives 1 (to even); adding
  // 2^-11 three times with a rounding after each would give 1 too, but (1 + 3 * 2^-11) holds the
  // difference: rounded once it is 1 + 2^-9.
  Tensor a = cast(from_vector({1.0}, {1}, DType::Float32), DType::Float16);
  Tensor b = cast(from_vector({3 * std::ldexp(1.0, -11)}, {1}, DType::Float32), DType::Float16);
  Tensor s = add(a, b);
  EXPECT_EQ(s.dtype(), DType::Float16);
  EXPECT_EQ(to_vector(s)[0], 1.0 + std::ldexp(1.0, -9));
  Tensor m = sum(cast(full({4096}, 1.0, DType::Float32), DType::BFloat16));
  EXPECT_EQ(m.dtype(), DType::BFloat16);
  EXPECT_EQ(to_vector(m)[0], 4096.0);  // accumulated in float32: a bfloat16 sum would stop at 256
}

TEST(Half, NarrowIntegersWrapAsTheirType) {
  Tensor a = from_vector({200, 100}, {2}, DType::UInt8);
  Tensor b = from_vector({100, 200}, {2}, DType::UInt8);
  Tensor s = add(a, b);
  EXPECT_EQ(s.dtype(), DType::UInt8);
  EXPECT_EQ(to_vector(s), (std::vector<double>{44, 44}));
  Tensor c = mul(from_vector({100}, {1}, DType::Int8), from_vector({3}, {1}, DType::Int8));
  EXPECT_EQ(to_vector(c)[0], 44.0);  // 300 wraps to 44
  EXPECT_EQ(sum(from_vector({100, 100}, {2}, DType::Int8)).dtype(), DType::Int64);
}

TEST(Half, GradientsOfHalfLeavesAreHalf) {
  Tensor x = cast(from_vector({0.5, 1.5}, {2}, DType::Float32), DType::BFloat16);
  x.set_requires_grad(true);
  Tensor y = sum(mul(x, x));
  autograd::backward(y);
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().dtype(), DType::BFloat16);
  EXPECT_EQ(to_vector(x.grad()), (std::vector<double>{1.0, 3.0}));
}

}  // namespace
}  // namespace vk
