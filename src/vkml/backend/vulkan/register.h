// The Vulkan backend's registration (backend/builtin.cpp calls it when the build has Vulkan).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace vk::vulkan {
// Registers the "vulkan" device type (its memory, which finds a device on first use), the kernels
// of kernels.h and the services. Cheap: no Vulkan call happens until a tensor goes to the device.
void register_backend();
// Messages the Vulkan validation layers reported so far (VKML_VULKAN_VALIDATE=1): the tests
// expect none. 0 when no device was created.
int validation_messages();
// The name of the device in use ("llvmpipe (LLVM 15.0.6, 256 bits)", ...); DeviceError saying
// why when there is none.
std::string device_name();
// Submits the work recorded so far and waits until the device has finished it.
void synchronize();
// Hands cached memory with nothing allocated in it back to the driver (after waiting for the
// device).
void empty_cache();
// The device's memory and stream so far, for vkml.vulkan.memory_stats() and the tests that count
// host <-> device traffic.
struct Stats {
  size_t allocated = 0, reserved = 0;  // bytes of live tensors; bytes held from the driver
  uint64_t submissions = 0, dispatches = 0, barriers = 0;
  uint64_t host_to_device = 0, device_to_host = 0;  // copies
  uint64_t host_to_device_bytes = 0, device_to_host_bytes = 0;
  uint64_t staged = 0;      // of those copies, the ones through a staging range
  uint64_t host_waits = 0;  // vkfix: times the host blocked on the device
};
Stats stats();
// vkgaps: what the device computes beyond float32 (its features), for the Python tests that run
// the float64 cases on it; DeviceError saying why when there is no device.
struct Features {
  bool float64 = false, int64 = false, int8_storage = false, int16_storage = false;
};
Features features();
}  // namespace vk::vulkan
