#include "vkml/backend/vulkan/loader.h"

#include <dlfcn.h>

#include "vkml/core/error.h"

namespace vk::vulkan {

bool load_global(Api& api, std::string& why) {
  // Never closed: the driver's threads and atexit handlers may outlive any owner we could give it.
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    why = "the Vulkan loader (libvulkan.so.1) is not installed";
    return false;
  }
  api.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!api.vkGetInstanceProcAddr) {
    why = "libvulkan.so.1 has no vkGetInstanceProcAddr";
    return false;
  }
  api.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(
      api.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"));
  api.vkEnumerateInstanceLayerProperties = reinterpret_cast<PFN_vkEnumerateInstanceLayerProperties>(
      api.vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceLayerProperties"));
  if (!api.vkCreateInstance || !api.vkEnumerateInstanceLayerProperties) {
    why = "libvulkan.so.1 does not export vkCreateInstance";
    return false;
  }
  return true;
}

void load_instance(Api& api, VkInstance instance) {
#define VKML_VK_LOAD(name)                                                             \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(instance, #name)); \
  VK_CHECK(api.name != nullptr, DeviceError, "vulkan: the loader does not provide " #name);
  VKML_VK_INSTANCE_FUNCTIONS(VKML_VK_LOAD)
#undef VKML_VK_LOAD
  // Optional: only with the debug utils extension (validation runs).
  api.vkCreateDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      api.vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
  api.vkDestroyDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      api.vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
}

void load_device(Api& api, VkDevice device) {
#define VKML_VK_LOAD(name)                                                         \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetDeviceProcAddr(device, #name)); \
  VK_CHECK(api.name != nullptr, DeviceError, "vulkan: the driver does not provide " #name);
  VKML_VK_DEVICE_FUNCTIONS(VKML_VK_LOAD)
#undef VKML_VK_LOAD
}

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_INCOMPLETE:
      return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default:
      return "VkResult (other)";
  }
}

}  // namespace vk::vulkan
