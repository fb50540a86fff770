#include "vkml/core/deferred.h"

#include <array>
#include <atomic>

#include "vkml/core/error.h"

namespace vk {
namespace {

std::array<std::atomic<DeferredCheck>, kMaxDeviceTypes> g_checks{};

size_t slot(DeviceType type) {
  const size_t i = static_cast<size_t>(type);
  VK_CHECK(i < kMaxDeviceTypes, RuntimeError, "device type ", i, " is out of range");
  return i;
}

}  // namespace

void register_deferred_check(DeviceType type, DeferredCheck check) {
  g_checks[slot(type)].store(check, std::memory_order_release);
}

DeferredCheck find_deferred_check(DeviceType type) {
  return g_checks[slot(type)].load(std::memory_order_acquire);
}

}  // namespace vk
