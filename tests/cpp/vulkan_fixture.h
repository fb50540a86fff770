// What every Vulkan test file shares: the fixture that runs a test on this machine's Vulkan device
// (lavapipe in CI), or skips saying why there is none; VKML_REQUIRE_VULKAN=1 (make test sets it)
// turns a skip into a failure. With VKML_VULKAN_VALIDATE=1 (make test sets it too) the validation
// layers watch every call, and each test ends with no message from them.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"
#if defined(VKML_HAS_VULKAN)
#include "vkml/backend/vulkan/context.h"
#include "vkml/backend/vulkan/register.h"
#endif

namespace vk::test {

inline const Device kVulkan{DeviceType::Vulkan, 0};

inline std::string vulkan_unavailable_reason() {
  try {
    require_device(kVulkan);
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "";
}

class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_available(DeviceType::Vulkan)) return;
    const char* require = std::getenv("VKML_REQUIRE_VULKAN");
    if (require && std::strcmp(require, "1") == 0)
      FAIL() << "VKML_REQUIRE_VULKAN=1 but: " << vulkan_unavailable_reason();
    GTEST_SKIP() << vulkan_unavailable_reason();
  }
  void TearDown() override {
#if defined(VKML_HAS_VULKAN)
    if (device_available(DeviceType::Vulkan)) {
      EXPECT_EQ(vulkan::validation_messages(), 0);
    }
#endif
  }
};

// What the device computes beyond float32, from its features (never guessed from an op's error:
// a kernel that breaks must fail its test, not skip it). Only called once a device is known.
#if defined(VKML_HAS_VULKAN)
inline bool device_has_float64() { return vulkan::Context::get()->has_float64(); }
inline bool device_has_int64() { return vulkan::Context::get()->has_int64(); }
#endif

inline std::vector<double> host(const Tensor& t) { return to_vector(to_cpu(t)); }

// Distinct float32 values, exactly representable.
inline Tensor f32(std::vector<double> v, const Shape& shape) {
  return cast(values(std::move(v), shape, false), DType::Float32);
}

// ---- vkgaps: the comparisons every Vulkan test file shares (one copy) ----
inline Tensor dev(const Tensor& t) { return to_device(t, kVulkan); }

// got (on the device) equals want (on the cpu) within `rel` of each value plus `rel` of want's
// largest finite magnitude; NaN and infinities exactly; same shape and dtype. Reports the first
// five differences.
inline void expect_close(const Tensor& got, const Tensor& want, double rel,
                         const std::string& what) {
  ASSERT_EQ(got.device(), kVulkan) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> g = host(got), w = to_vector(want);
  double scale = 0.0;
  for (double v : w)
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  int bad = 0;
  for (size_t i = 0; i < w.size() && bad < 5; ++i) {
    const bool ok = std::isnan(w[i])   ? std::isnan(g[i])
                    : std::isinf(w[i]) ? g[i] == w[i]
                                       : std::abs(g[i] - w[i]) <= rel * (std::abs(w[i]) + scale);
    if (!ok) ++bad;
    EXPECT_TRUE(ok) << what << " [" << i << "]: " << g[i] << " on the device, " << w[i]
                    << " on the cpu";
  }
}

// Equal values (NaN matching NaN); same shape and dtype.
inline void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.device(), kVulkan) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> g = host(got), w = to_vector(want);
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_TRUE(g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i])))
        << what << "[" << i << "]: " << g[i] << " vs the cpu's " << w[i];
}

// Integer results bit for bit (int64 beyond double's 2^53 too); reports the first five differences.
inline void expect_same_ints(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.device(), kVulkan) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = cast(to_cpu(got), DType::Int64), w = cast(want, DType::Int64);
  int bad = 0;
  for (int64_t k = 0; k < w.numel() && bad < 5; ++k) {
    bad += g.data<int64_t>()[k] != w.data<int64_t>()[k];
    EXPECT_EQ(g.data<int64_t>()[k], w.data<int64_t>()[k]) << what << "[" << k << "]";
  }
}

// float64 results within `ulps` units of the last place of each value (NaN for NaN, zeros and
// infinities exactly): where the device runs the CPU's own routines (vmath.glsl), 4 covers the CPU
// builds with and without FMA contraction (test_vulkan_elementwise.cpp's bound).
inline void expect_ulps(const Tensor& got, const Tensor& want, double ulps,
                        const std::string& what) {
  ASSERT_EQ(got.device(), kVulkan) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), DType::Float64) << what;
  ASSERT_EQ(want.dtype(), DType::Float64) << what;
  const std::vector<double> g = host(got), w = to_vector(want);
  const double eps = std::numeric_limits<double>::epsilon();
  int bad = 0;
  for (size_t i = 0; i < w.size() && bad < 5; ++i) {
    const bool exact = std::isinf(w[i]) || w[i] == 0;
    const bool ok =
        std::isnan(w[i]) ? std::isnan(g[i])
        : exact          ? g[i] == w[i]
                         : std::abs(g[i] - w[i]) <= ulps * eps * std::abs(w[i]) +
                                               std::numeric_limits<double>::denorm_min() * ulps;
    if (!ok) ++bad;
    EXPECT_TRUE(ok) << what << " [" << i << "]: " << g[i] << " on the device, " << w[i]
                    << " on the cpu";
  }
}
// ---- end vkgaps ----

}  // namespace vk::test
