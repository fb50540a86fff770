#include "vkml/core/device.h"

#include <array>
#include <atomic>
#include <charconv>
#include <cstring>
#include <mutex>
#include <vector>

#include "vkml/core/error.h"
#include "vkml/core/kernel.h"

namespace vk {
namespace {

struct Registry {
  std::mutex mutex;  // held by registration; lookups read the atomics
  std::array<std::string, kMaxDeviceTypes> names{"cpu", "vulkan"};
  std::array<std::atomic<DeviceMemory*>, kMaxDeviceTypes> memory{};
  std::vector<std::unique_ptr<DeviceMemory>> owned;
};

// Never destroyed: storages freed during static teardown still reach their device's memory.
Registry& registry() {
  static Registry* r = new Registry();  // NOLINT: an immortal singleton, as no_attrs()
  return *r;
}

size_t type_index(DeviceType type) { return static_cast<size_t>(type); }

}  // namespace

DeviceType register_device_type(std::string_view name, std::unique_ptr<DeviceMemory> memory) {
  VK_CHECK(memory != nullptr, RuntimeError, "register_device_type(", name, "): no memory given");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  size_t slot = kMaxDeviceTypes;
  for (size_t i = 0; i < kMaxDeviceTypes; ++i)
    if (r.names[i] == name) slot = i;
  VK_CHECK(slot != type_index(DeviceType::CPU), RuntimeError,
           "register_device_type: the cpu device is built in");
  if (slot == kMaxDeviceTypes) {  // a new name: the first free slot
    for (size_t i = 0; i < kMaxDeviceTypes && slot == kMaxDeviceTypes; ++i)
      if (r.names[i].empty()) slot = i;
    VK_CHECK(slot != kMaxDeviceTypes, RuntimeError, "register_device_type(", name, "): all ",
             kMaxDeviceTypes, " device types are taken");
    r.names[slot] = name;
  }
  VK_CHECK(r.memory[slot].load() == nullptr, RuntimeError, "register_device_type: ", name,
           " is registered already");
  r.memory[slot].store(memory.get());
  r.owned.push_back(std::move(memory));
  return static_cast<DeviceType>(slot);
}

bool device_available(DeviceType type) {
  if (type == DeviceType::CPU) return true;
  register_builtin_backends();  // a device is asked about before the first op ran
  DeviceMemory* m =
      type_index(type) < kMaxDeviceTypes ? registry().memory[type_index(type)].load() : nullptr;
  if (!m) return false;
  try {  // a backend in the build may still find no device here (no driver): it says so by throwing
    return m->device_count() > 0;
  } catch (const Error&) {
    return false;
  }
}

DeviceMemory& device_memory(DeviceType type) {
  VK_CHECK(type != DeviceType::CPU, RuntimeError, "device_memory: the cpu's memory is built in");
  register_builtin_backends();  // a tensor may be made on a device before the first op ran
  DeviceMemory* m =
      type_index(type) < kMaxDeviceTypes ? registry().memory[type_index(type)].load() : nullptr;
  if (!m) {
    VK_CHECK(type != DeviceType::Vulkan, DeviceError,
             "the vulkan device is not available: this build of vkml has no Vulkan backend, or "
             "it found no Vulkan device on this machine");
    throw DeviceError(detail::cat("the ", device_type_name(type), " device is not available"));
  }
  return *m;
}

DeviceMemory& require_device(Device d) {
  DeviceMemory& m = device_memory(d.type);
  VK_CHECK(d.index < m.device_count(), DeviceError, "device ", device_name(d),
           " does not exist: this machine has ", m.device_count(), " ", device_type_name(d.type),
           " device(s)");
  return m;
}

std::string device_type_name(DeviceType type) {
  if (type_index(type) >= kMaxDeviceTypes) return "?";
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.names[type_index(type)];
}

std::string device_name(Device d) {
  if (d.is_cpu()) return "cpu";
  return detail::cat(device_type_name(d.type), ":", d.index);
}

Device parse_device(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  Device d;
  bool known = false;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (size_t i = 0; i < kMaxDeviceTypes && !known; ++i)
      if (!r.names[i].empty() && r.names[i] == name) {
        d.type = static_cast<DeviceType>(i);
        known = true;
      }
  }
  VK_CHECK(known, DeviceError, "unknown device '", spec,
           "': expected cpu or vulkan (with an optional index, as vulkan:1)");
  if (colon == std::string_view::npos) return d;
  const std::string_view digits = spec.substr(colon + 1);
  int index = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  VK_CHECK(
      ec == std::errc() && end == digits.data() + digits.size() && index >= 0 && index <= INT16_MAX,
      DeviceError, "device '", spec, "': the index must be a non-negative integer");
  VK_CHECK(!d.is_cpu() || index == 0, DeviceError, "device '", spec,
           "': there is one cpu device, cpu:0");
  d.index = static_cast<int16_t>(index);
  return d;
}

void copy_bytes(Device dst_device, void* dst_block, size_t dst_offset, Device src_device,
                const void* src_block, size_t src_offset, size_t nbytes) {
  if (nbytes == 0) return;
  // Offsets into a block are added here only on the CPU, where a block is a pointer.
  auto dst_host = [&] { return static_cast<unsigned char*>(dst_block) + dst_offset; };
  auto src_host = [&] { return static_cast<const unsigned char*>(src_block) + src_offset; };
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst_host(), src_host(), nbytes);
  } else if (src_device.is_cpu()) {
    device_memory(dst_device.type)
        .copy_from_host(dst_block, dst_offset, src_host(), nbytes, dst_device.index);
  } else if (dst_device.is_cpu()) {
    device_memory(src_device.type)
        .copy_to_host(dst_host(), src_block, src_offset, nbytes, src_device.index);
  } else if (dst_device == src_device) {
    device_memory(dst_device.type)
        .copy_on_device(dst_block, dst_offset, src_block, src_offset, nbytes, dst_device.index);
  } else {  // two devices: through the host
    std::vector<unsigned char> staging(nbytes);
    device_memory(src_device.type)
        .copy_to_host(staging.data(), src_block, src_offset, nbytes, src_device.index);
    device_memory(dst_device.type)
        .copy_from_host(dst_block, dst_offset, staging.data(), nbytes, dst_device.index);
  }
}

}  // namespace vk
