// What every Vulkan test file shares: the fixture that runs a test on this machine's Vulkan device
// (lavapipe in CI), or skips saying why there is none; VKML_REQUIRE_VULKAN=1 (make test sets it)
// turns a skip into a failure. With VKML_VULKAN_VALIDATE=1 (make test sets it too) the validation
// layers watch every call, and each test ends with no message from them.
#pragma once
#include <cstdlib>
#include <cstring>
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

}  // namespace vk::test
