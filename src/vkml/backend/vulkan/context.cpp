#include "vkml/backend/vulkan/context.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

#define VKML_VK_OK(call, what)                                    \
  do {                                                            \
    const VkResult vkml_r = (call);                               \
    VK_CHECK(vkml_r == VK_SUCCESS, DeviceError, "vulkan: ", what, \
             " failed: ", result_name(vkml_r));                   \
  } while (0)

std::atomic<int> g_validation_messages{0};

VKAPI_ATTR VkBool32 VKAPI_CALL
on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                      const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  g_validation_messages.fetch_add(1);
  std::fprintf(stderr, "vkml vulkan validation: %s\n", data->pMessage ? data->pMessage : "?");
  return VK_FALSE;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// Discrete before integrated before virtual before CPU implementations (lavapipe).
int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

struct Slot {
  std::once_flag once;
  Context* context = nullptr;  // immortal: storages freed during static teardown still reach it
  std::string why;
};
Slot& slot() {
  static Slot s;
  return s;
}

}  // namespace

Context* Context::get() {
  Slot& s = slot();
  std::call_once(s.once, [&s] {
    std::unique_ptr<Context> c(new Context());
    try {
      if (c->init(s.why)) s.context = c.release();  // never destroyed (see Slot)
    } catch (const std::exception& e) {
      s.why = e.what();
    }
  });
  return s.context;
}

const std::string& Context::unavailable_reason() {
  get();
  return slot().why;
}

int Context::validation_messages() const { return g_validation_messages.load(); }

Context::~Context() {
  if (device_) {
    api_.vkDeviceWaitIdle(device_);
    for (auto& [name, p] : pipelines_) {
      api_.vkDestroyPipeline(device_, p->pipeline, nullptr);
      api_.vkDestroyPipelineLayout(device_, p->layout, nullptr);
      api_.vkDestroyDescriptorSetLayout(device_, p->set_layout, nullptr);
    }
    if (fence_) api_.vkDestroyFence(device_, fence_, nullptr);
    if (descriptor_pool_) api_.vkDestroyDescriptorPool(device_, descriptor_pool_, nullptr);
    if (command_pool_) api_.vkDestroyCommandPool(device_, command_pool_, nullptr);
    api_.vkDestroyDevice(device_, nullptr);
  }
  if (messenger_) api_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) api_.vkDestroyInstance(instance_, nullptr);
}

bool Context::init(std::string& why) {
  if (!load_global(api_, why)) return false;
  const bool validate = env_flag("VKML_VULKAN_VALIDATE");
  std::vector<const char*> layers, extensions;
  if (validate) {
    uint32_t n = 0;
    api_.vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    api_.vkEnumerateInstanceLayerProperties(&n, props.data());
    const bool found = std::any_of(props.begin(), props.end(), [](const VkLayerProperties& p) {
      return std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    });
    if (!found) {
      why = "VKML_VULKAN_VALIDATE is set but VK_LAYER_KHRONOS_validation is not installed";
      return false;
    }
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                        .pApplicationName = "vkml",
                        .pEngineName = "vkml",
                        .apiVersion = VK_API_VERSION_1_1};
  VkInstanceCreateInfo ici{.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                           .pApplicationInfo = &app,
                           .enabledLayerCount = static_cast<uint32_t>(layers.size()),
                           .ppEnabledLayerNames = layers.data(),
                           .enabledExtensionCount = static_cast<uint32_t>(extensions.size()),
                           .ppEnabledExtensionNames = extensions.data()};
  const VkResult r = api_.vkCreateInstance(&ici, nullptr, &instance_);
  if (r != VK_SUCCESS) {
    why =
        std::string("no Vulkan driver on this machine (vkCreateInstance: ") + result_name(r) + ")";
    instance_ = VK_NULL_HANDLE;
    return false;
  }
  load_instance(api_, instance_);
  if (validate && api_.vkCreateDebugUtilsMessengerEXT) {
    VkDebugUtilsMessengerCreateInfoEXT mci{
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation_message};
    VKML_VK_OK(api_.vkCreateDebugUtilsMessengerEXT(instance_, &mci, nullptr, &messenger_),
               "vkCreateDebugUtilsMessengerEXT");
  }

  // The device: VKML_VULKAN_DEVICE=<index> picks one of those listed; otherwise the best kind
  // (discrete > integrated > virtual > CPU) that has a compute queue.
  uint32_t count = 0;
  api_.vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  api_.vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  auto compute_family = [&](VkPhysicalDevice d) -> int {
    uint32_t n = 0;
    api_.vkGetPhysicalDeviceQueueFamilyProperties(d, &n, nullptr);
    std::vector<VkQueueFamilyProperties> fams(n);
    api_.vkGetPhysicalDeviceQueueFamilyProperties(d, &n, fams.data());
    for (uint32_t i = 0; i < n; ++i)
      if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
    return -1;
  };
  int best = -1, best_rank = 99;
  if (const char* pick = std::getenv("VKML_VULKAN_DEVICE"); pick && *pick) {
    const int i = std::atoi(pick);
    if (i < 0 || i >= static_cast<int>(count) || compute_family(devices[i]) < 0) {
      why = std::string("VKML_VULKAN_DEVICE=") + pick +
            " names no Vulkan device with a compute "
            "queue (this machine lists " +
            std::to_string(count) + ")";
      return false;
    }
    best = i;
  } else {
    for (uint32_t i = 0; i < count; ++i) {
      VkPhysicalDeviceProperties p;
      api_.vkGetPhysicalDeviceProperties(devices[i], &p);
      if (compute_family(devices[i]) >= 0 && type_rank(p.deviceType) < best_rank) {
        best = static_cast<int>(i);
        best_rank = type_rank(p.deviceType);
      }
    }
  }
  if (best < 0) {
    why = "no Vulkan device with a compute queue on this machine";
    return false;
  }
  physical_ = devices[best];
  auto has_device_extension = [&](VkPhysicalDevice d, const char* name) {
    uint32_t n = 0;
    api_.vkEnumerateDeviceExtensionProperties(d, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    api_.vkEnumerateDeviceExtensionProperties(d, nullptr, &n, exts.data());
    return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) {
      return std::strcmp(e.extensionName, name) == 0;
    });
  };
  queue_family_ = static_cast<uint32_t>(compute_family(physical_));
  VkPhysicalDeviceProperties props;
  api_.vkGetPhysicalDeviceProperties(physical_, &props);
  device_name_ = props.deviceName;
  for (int i = 0; i < 3; ++i) max_groups_[i] = props.limits.maxComputeWorkGroupCount[i];
  max_storage_range_ = props.limits.maxStorageBufferRange;
  // Features the kernels use where the device has them: float64 and int64 arithmetic, and 8-bit
  // storage (bool tensors are one byte per element, as on the CPU). Requesting an absent one
  // would fail device creation, so each is enabled only where supported.
  VkPhysicalDevice8BitStorageFeatures storage8{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceFeatures2 supported{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                      .pNext = &storage8};
  std::vector<const char*> device_extensions;
  // (the extension, not Vulkan 1.2's core feature: the instance asks for Vulkan 1.1)
  const bool has_8bit_extension =
      has_device_extension(physical_, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  if (!has_8bit_extension) supported.pNext = nullptr;
  api_.vkGetPhysicalDeviceFeatures2(physical_, &supported);
  has_float64_ = supported.features.shaderFloat64 == VK_TRUE;
  has_int64_ = supported.features.shaderInt64 == VK_TRUE;
  has_int8_storage_ = has_8bit_extension && storage8.storageBuffer8BitAccess == VK_TRUE;
  VkPhysicalDevice8BitStorageFeatures enable8{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
      .storageBuffer8BitAccess = VK_TRUE};
  VkPhysicalDeviceFeatures2 enabled{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = has_int8_storage_ ? &enable8 : nullptr};
  enabled.features.shaderFloat64 = supported.features.shaderFloat64;
  enabled.features.shaderInt64 = supported.features.shaderInt64;
  if (has_int8_storage_) device_extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  api_.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_props_);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                              .queueFamilyIndex = queue_family_,
                              .queueCount = 1,
                              .pQueuePriorities = &priority};
  VkDeviceCreateInfo dci{.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                         .pNext = &enabled,
                         .queueCreateInfoCount = 1,
                         .pQueueCreateInfos = &qci,
                         .enabledExtensionCount = static_cast<uint32_t>(device_extensions.size()),
                         .ppEnabledExtensionNames = device_extensions.data()};
  VKML_VK_OK(api_.vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice");
  load_device(api_, device_);
  api_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  VkCommandPoolCreateInfo cpci{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                               .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                               .queueFamilyIndex = queue_family_};
  VKML_VK_OK(api_.vkCreateCommandPool(device_, &cpci, nullptr, &command_pool_),
             "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cbai{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                   .commandPool = command_pool_,
                                   .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                   .commandBufferCount = 1};
  VKML_VK_OK(api_.vkAllocateCommandBuffers(device_, &cbai, &command_buffer_),
             "vkAllocateCommandBuffers");
  VkDescriptorPoolSize sizes{.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 64};
  VkDescriptorPoolCreateInfo dpci{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                  .maxSets = 16,
                                  .poolSizeCount = 1,
                                  .pPoolSizes = &sizes};
  VKML_VK_OK(api_.vkCreateDescriptorPool(device_, &dpci, nullptr, &descriptor_pool_),
             "vkCreateDescriptorPool");
  VkFenceCreateInfo fci{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VKML_VK_OK(api_.vkCreateFence(device_, &fci, nullptr, &fence_), "vkCreateFence");
  return true;
}

uint32_t Context::memory_type(uint32_t allowed, VkMemoryPropertyFlags want) const {
  for (uint32_t i = 0; i < memory_props_.memoryTypeCount; ++i)
    if ((allowed & (1u << i)) && (memory_props_.memoryTypes[i].propertyFlags & want) == want)
      return i;
  return UINT32_MAX;
}

std::unique_ptr<Buffer> Context::create_buffer(size_t nbytes, bool staging) {
  auto b = std::make_unique<Buffer>();
  b->size = std::max<VkDeviceSize>(nbytes, 4);  // Vulkan has no empty buffers
  VkBufferCreateInfo bci{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                         .size = b->size,
                         .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                  VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                  VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                         .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VKML_VK_OK(api_.vkCreateBuffer(device_, &bci, nullptr, &b->buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  api_.vkGetBufferMemoryRequirements(device_, b->buffer, &req);
  // Tensors: device-local memory the host can map when there is some (lavapipe, integrated GPUs,
  // resizable BAR), device-local otherwise. Staging: host-visible, coherent memory.
  constexpr VkMemoryPropertyFlags kHost =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t type = memory_type(req.memoryTypeBits,
                              staging ? kHost : kHost | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type == UINT32_MAX && !staging)
    type = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type == UINT32_MAX) type = memory_type(req.memoryTypeBits, kHost);
  if (type == UINT32_MAX) {
    api_.vkDestroyBuffer(device_, b->buffer, nullptr);
    throw DeviceError("vulkan: no memory type can hold a storage buffer");
  }
  VkMemoryAllocateInfo mai{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                           .allocationSize = req.size,
                           .memoryTypeIndex = type};
  const VkResult r = api_.vkAllocateMemory(device_, &mai, nullptr, &b->memory);
  if (r != VK_SUCCESS) {
    api_.vkDestroyBuffer(device_, b->buffer, nullptr);
    throw MemoryError(detail::cat("vulkan: cannot allocate ", nbytes, " bytes on ", device_name_,
                                  " (", result_name(r), ")"));
  }
  api_.vkBindBufferMemory(device_, b->buffer, b->memory, 0);
  const bool host_visible =
      memory_props_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  if (host_visible)
    VKML_VK_OK(api_.vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped),
               "vkMapMemory");
  return b;
}

void Context::destroy_buffer(Buffer& b) noexcept {
  if (b.mapped) api_.vkUnmapMemory(device_, b.memory);
  api_.vkDestroyBuffer(device_, b.buffer, nullptr);
  api_.vkFreeMemory(device_, b.memory, nullptr);
  b = Buffer{};
}

void Context::run(const std::function<void(VkCommandBuffer)>& record) {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  api_.vkResetCommandPool(device_, command_pool_, 0);
  api_.vkResetDescriptorPool(device_, descriptor_pool_, 0);
  VkCommandBufferBeginInfo bi{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                              .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  VKML_VK_OK(api_.vkBeginCommandBuffer(command_buffer_, &bi), "vkBeginCommandBuffer");
  // Everything written before (by the host or earlier submissions) is visible to this work, and
  // what it writes is visible to the host once the fence is signalled.
  VkMemoryBarrier before{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
                         .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
  api_.vkCmdPipelineBarrier(
      command_buffer_, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
      VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
  record(command_buffer_);
  VkMemoryBarrier after{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                        .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                        .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_MEMORY_READ_BIT};
  api_.vkCmdPipelineBarrier(command_buffer_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                            VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1,
                            &after, 0, nullptr, 0, nullptr);
  VKML_VK_OK(api_.vkEndCommandBuffer(command_buffer_), "vkEndCommandBuffer");
  VkSubmitInfo si{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                  .commandBufferCount = 1,
                  .pCommandBuffers = &command_buffer_};
  VKML_VK_OK(api_.vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
  VKML_VK_OK(api_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  api_.vkResetFences(device_, 1, &fence_);
}

void Context::upload(Buffer& dst, size_t offset, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst.mapped) {  // every submission has finished: nothing reads or writes it now
    std::memcpy(static_cast<char*>(dst.mapped) + offset, src, nbytes);
    return;
  }
  std::unique_ptr<Buffer> staging = create_buffer(nbytes, true);
  std::memcpy(staging->mapped, src, nbytes);
  copy(dst, offset, *staging, 0, nbytes);
  destroy_buffer(*staging);
}

void Context::download(void* dst, Buffer& src, size_t offset, size_t nbytes) {
  if (nbytes == 0) return;
  if (src.mapped) {
    std::memcpy(dst, static_cast<const char*>(src.mapped) + offset, nbytes);
    return;
  }
  std::unique_ptr<Buffer> staging = create_buffer(nbytes, true);
  copy(*staging, 0, src, offset, nbytes);
  std::memcpy(dst, staging->mapped, nbytes);
  destroy_buffer(*staging);
}

void Context::copy(Buffer& dst, size_t dst_offset, Buffer& src, size_t src_offset, size_t nbytes) {
  if (nbytes == 0) return;
  run([&](VkCommandBuffer cb) {
    VkBufferCopy region{.srcOffset = src_offset, .dstOffset = dst_offset, .size = nbytes};
    api_.vkCmdCopyBuffer(cb, src.buffer, dst.buffer, 1, &region);
  });
}

const Pipeline& Context::pipeline(const std::string& name, std::span<const unsigned char> spirv,
                                  uint32_t bindings, uint32_t push_bytes) {
  std::lock_guard<std::mutex> lock(pipeline_mutex_);
  if (auto it = pipelines_.find(name); it != pipelines_.end()) return *it->second;
  auto p = std::make_unique<Pipeline>();
  p->bindings = bindings;
  p->push_bytes = push_bytes;
  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (uint32_t i = 0; i < bindings; ++i)
    b[i] = {.binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  VkDescriptorSetLayoutCreateInfo dslci{
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = bindings,
      .pBindings = b.data()};
  VKML_VK_OK(api_.vkCreateDescriptorSetLayout(device_, &dslci, nullptr, &p->set_layout),
             "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{
      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = push_bytes};
  VkPipelineLayoutCreateInfo plci{.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                  .setLayoutCount = 1,
                                  .pSetLayouts = &p->set_layout,
                                  .pushConstantRangeCount = push_bytes ? 1u : 0u,
                                  .pPushConstantRanges = &range};
  VKML_VK_OK(api_.vkCreatePipelineLayout(device_, &plci, nullptr, &p->layout),
             "vkCreatePipelineLayout");
  std::vector<uint32_t> words((spirv.size() + 3) / 4);
  std::memcpy(words.data(), spirv.data(), spirv.size());
  VkShaderModuleCreateInfo smci{.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                .codeSize = spirv.size(),
                                .pCode = words.data()};
  VkShaderModule module;
  VKML_VK_OK(api_.vkCreateShaderModule(device_, &smci, nullptr, &module), "vkCreateShaderModule");
  VkComputePipelineCreateInfo cpci{
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = module,
                .pName = "main"},
      .layout = p->layout};
  const VkResult r =
      api_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cpci, nullptr, &p->pipeline);
  api_.vkDestroyShaderModule(device_, module, nullptr);
  VK_CHECK(r == VK_SUCCESS, DeviceError, "vulkan: building the pipeline of ", name,
           " failed: ", result_name(r));
  return *pipelines_.emplace(name, std::move(p)).first->second;
}

void Context::dispatch(const Pipeline& p, std::span<Buffer* const> buffers, const void* push,
                       uint64_t groups, uint32_t writes) {
  if (groups == 0) return;
  const uint64_t gx = std::min<uint64_t>(groups, max_groups_[0]);
  const uint64_t gy = (groups + gx - 1) / gx;
  VK_CHECK(gy <= max_groups_[1], SizeError, "vulkan: ", groups,
           " workgroups are more than one dispatch holds");
  dispatch(p, buffers, push, Groups{static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1},
           writes);
}

void Context::dispatch(const Pipeline& p, std::span<Buffer* const> buffers, const void* push,
                       Groups groups, uint32_t writes) {
  VK_CHECK(buffers.size() == p.bindings && writes <= buffers.size(), RuntimeError,
           "vulkan: a pipeline of ", p.bindings, " buffers was given ", buffers.size(), " (",
           writes, " written)");
  if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;
  VK_CHECK(groups.x <= max_groups_[0] && groups.y <= max_groups_[1] && groups.z <= max_groups_[2],
           SizeError, "vulkan: ", groups.x, " x ", groups.y, " x ", groups.z,
           " workgroups are more than ", device_name_, " runs in one dispatch (", max_groups_[0],
           " x ", max_groups_[1], " x ", max_groups_[2], ")");
  run([&](VkCommandBuffer cb) {
    VkDescriptorSetAllocateInfo dsai{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                     .descriptorPool = descriptor_pool_,
                                     .descriptorSetCount = 1,
                                     .pSetLayouts = &p.set_layout};
    VkDescriptorSet set;
    VKML_VK_OK(api_.vkAllocateDescriptorSets(device_, &dsai, &set), "vkAllocateDescriptorSets");
    std::vector<VkDescriptorBufferInfo> infos(buffers.size());
    std::vector<VkWriteDescriptorSet> writes(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      infos[i] = {.buffer = buffers[i]->buffer, .offset = 0, .range = buffers[i]->size};
      writes[i] = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                   .dstSet = set,
                   .dstBinding = static_cast<uint32_t>(i),
                   .descriptorCount = 1,
                   .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                   .pBufferInfo = &infos[i]};
    }
    api_.vkUpdateDescriptorSets(device_, static_cast<uint32_t>(writes.size()), writes.data(), 0,
                                nullptr);
    api_.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    api_.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                                 nullptr);
    if (p.push_bytes)
      api_.vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_bytes, push);
    api_.vkCmdDispatch(cb, groups.x, groups.y, groups.z);
  });
}

}  // namespace vk::vulkan
