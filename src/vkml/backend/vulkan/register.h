// The Vulkan backend's registration (backend/builtin.cpp calls it when the build has Vulkan).
#pragma once
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
}  // namespace vk::vulkan
