// The Vulkan entry points vkml calls, loaded at run time from libvulkan.so.1 (dlopen), so that the
// library builds against the headers alone and loads on machines without Vulkan. Each function is
// a member of Api named as in the specification (api.vkCreateBuffer, ...).
#pragma once
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

#include "vkml/core/error.h"

namespace vk::vulkan {

// clang-format off
#define VKML_VK_INSTANCE_FUNCTIONS(X) \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties) \
  X(vkGetPhysicalDeviceFeatures) X(vkGetPhysicalDeviceFeatures2) \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr) \
  X(vkEnumerateDeviceExtensionProperties)
#define VKML_VK_DEVICE_FUNCTIONS(X) \
  X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) X(vkCreateBuffer) \
  X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) \
  X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory) X(vkCreateCommandPool) \
  X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkResetCommandPool) \
  X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkCmdCopyBuffer) X(vkCmdBindPipeline) \
  X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier) \
  X(vkCmdFillBuffer) X(vkQueueSubmit) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) \
  X(vkResetFences) X(vkGetFenceStatus) X(vkCreateShaderModule) X(vkDestroyShaderModule) \
  X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) \
  X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline) \
  X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkAllocateDescriptorSets) \
  X(vkResetDescriptorPool) X(vkUpdateDescriptorSets) X(vkCreatePipelineCache) \
  X(vkDestroyPipelineCache) X(vkGetPipelineCacheData)
// clang-format on

struct Api {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkCreateInstance vkCreateInstance = nullptr;
  PFN_vkEnumerateInstanceLayerProperties vkEnumerateInstanceLayerProperties = nullptr;
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;
#define VKML_VK_MEMBER(name) PFN_##name name = nullptr;
  VKML_VK_INSTANCE_FUNCTIONS(VKML_VK_MEMBER)
  VKML_VK_DEVICE_FUNCTIONS(VKML_VK_MEMBER)
#undef VKML_VK_MEMBER
};

// Opens libvulkan.so.1 and resolves the global entry points; false (with the reason in `why`) when
// the loader is not installed. The library stays open for the process's life.
bool load_global(Api& api, std::string& why);
// Resolves the instance-level entry points of `instance`.
void load_instance(Api& api, VkInstance instance);
// Resolves the device-level entry points of `device`.
void load_device(Api& api, VkDevice device);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY", ... for error messages.
const char* result_name(VkResult r);

// A DeviceError naming the call and its result unless it succeeded.
#define VKML_VK_OK(call, what)                                    \
  do {                                                            \
    const VkResult vkml_r = (call);                               \
    VK_CHECK(vkml_r == VK_SUCCESS, DeviceError, "vulkan: ", what, \
             " failed: ", result_name(vkml_r));                   \
  } while (0)

}  // namespace vk::vulkan
