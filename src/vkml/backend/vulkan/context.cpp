#include "vkml/backend/vulkan/context.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

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
    if (error_word_) allocator_->release(std::move(error_word_), last_serial_);
    allocator_.reset();
    for (auto& [name, p] : pipelines_) {
      api_.vkDestroyPipeline(device_, p->pipeline, nullptr);
      api_.vkDestroyPipelineLayout(device_, p->layout, nullptr);
      api_.vkDestroyDescriptorSetLayout(device_, p->set_layout, nullptr);
    }
    if (pipeline_cache_) api_.vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
    for (Frame& f : frames_) {
      if (f.fence) api_.vkDestroyFence(device_, f.fence, nullptr);
      if (f.descriptors) api_.vkDestroyDescriptorPool(device_, f.descriptors, nullptr);
      if (f.pool) api_.vkDestroyCommandPool(device_, f.pool, nullptr);
    }
    api_.vkDestroyDevice(device_, nullptr);
  }
  if (messenger_) api_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) api_.vkDestroyInstance(instance_, nullptr);
}

bool Context::init(std::string& why) {
  if (!load_global(api_, why)) return false;
  const bool validate = env_flag("VKML_VULKAN_VALIDATE");
  staged_only_ = env_flag("VKML_VULKAN_STAGING");
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
  api_.vkGetPhysicalDeviceProperties(physical_, &props_);
  const VkPhysicalDeviceProperties& props = props_;
  device_name_ = props.deviceName;
  for (int i = 0; i < 3; ++i) max_groups_[i] = props.limits.maxComputeWorkGroupCount[i];
  max_storage_range_ = props.limits.maxStorageBufferRange;
  // Features the kernels use where the device has them: float64 and int64 arithmetic, 8-bit
  // storage (bool, uint8 and int8 tensors are one byte per element, as on the CPU) and 16-bit
  // storage (float16, bfloat16 and int16: loaded and stored as 16-bit words, computed in 32 bits).
  // Requesting an absent one would fail device creation, so each is enabled only where supported.
  VkPhysicalDevice16BitStorageFeatures storage16{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, .pNext = &storage16};
  VkPhysicalDeviceFeatures2 supported{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                      .pNext = &storage8};
  std::vector<const char*> device_extensions;
  // (the 8-bit extension, not Vulkan 1.2's core feature: the instance asks for Vulkan 1.1, where
  // 16-bit storage is core)
  const bool has_8bit_extension =
      has_device_extension(physical_, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  if (!has_8bit_extension) supported.pNext = &storage16;
  api_.vkGetPhysicalDeviceFeatures2(physical_, &supported);
  // VKML_VULKAN_NO_FLOAT64=1 runs as a device without shaderFloat64 would (most mobile GPUs,
  // Intel Arc, Apple's through MoltenVK): so that the paths for them are tested on any device,
  // with the validation layers catching a shader that still uses float64. VKML_VULKAN_NO_16BIT=1
  // likewise for a device without 16-bit storage (its 16-bit dtypes are DTypeErrors).
  if (env_flag("VKML_VULKAN_NO_FLOAT64")) supported.features.shaderFloat64 = VK_FALSE;
  if (env_flag("VKML_VULKAN_NO_16BIT")) storage16.storageBuffer16BitAccess = VK_FALSE;
  has_float64_ = supported.features.shaderFloat64 == VK_TRUE;
  has_int64_ = supported.features.shaderInt64 == VK_TRUE;
  has_int8_storage_ = has_8bit_extension && storage8.storageBuffer8BitAccess == VK_TRUE;
  has_int16_storage_ = storage16.storageBuffer16BitAccess == VK_TRUE;
  VkPhysicalDevice16BitStorageFeatures enable16{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
      .storageBuffer16BitAccess = VK_TRUE};
  VkPhysicalDevice8BitStorageFeatures enable8{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
      .pNext = has_int16_storage_ ? &enable16 : nullptr,
      .storageBuffer8BitAccess = VK_TRUE};
  VkPhysicalDeviceFeatures2 enabled{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enabled.pNext = has_int8_storage_    ? static_cast<void*>(&enable8)
                  : has_int16_storage_ ? static_cast<void*>(&enable16)
                                       : nullptr;
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
  create_frames();
  // Ranges bound as storage buffers start at multiples of this (256 at most, by the spec).
  allocator_ = std::make_unique<Allocator>(
      *this, std::max<VkDeviceSize>(props.limits.minStorageBufferOffsetAlignment, 16));
  load_pipeline_cache();
  return true;
}

uint32_t Context::memory_type(uint32_t allowed, VkMemoryPropertyFlags want) const {
  for (uint32_t i = 0; i < memory_props_.memoryTypeCount; ++i)
    if ((allowed & (1u << i)) && (memory_props_.memoryTypes[i].propertyFlags & want) == want)
      return i;
  return UINT32_MAX;
}

void Context::create_frames() {
  for (Frame& f : frames_) {
    VkCommandPoolCreateInfo cpci{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                 .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                 .queueFamilyIndex = queue_family_};
    VKML_VK_OK(api_.vkCreateCommandPool(device_, &cpci, nullptr, &f.pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cbai{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                     .commandPool = f.pool,
                                     .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                     .commandBufferCount = 1};
    VKML_VK_OK(api_.vkAllocateCommandBuffers(device_, &cbai, &f.cb), "vkAllocateCommandBuffers");
    VkDescriptorPoolSize sizes{.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               .descriptorCount = kBatch * kMaxBindings};
    VkDescriptorPoolCreateInfo dpci{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                    .maxSets = kBatch,
                                    .poolSizeCount = 1,
                                    .pPoolSizes = &sizes};
    VKML_VK_OK(api_.vkCreateDescriptorPool(device_, &dpci, nullptr, &f.descriptors),
               "vkCreateDescriptorPool");
    VkFenceCreateInfo fci{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKML_VK_OK(api_.vkCreateFence(device_, &fci, nullptr, &f.fence), "vkCreateFence");
  }
}

std::unique_ptr<Block> Context::create_block(VkDeviceSize size, bool staging) {
  auto b = std::make_unique<Block>();
  b->size = size;
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
    throw MemoryError(detail::cat("vulkan: cannot allocate ", size, " bytes on ", device_name_,
                                  " (", result_name(r), ")"));
  }
  api_.vkBindBufferMemory(device_, b->buffer, b->memory, 0);
  const bool host_visible =
      memory_props_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  if (host_visible && (staging || !staged_only_))
    VKML_VK_OK(api_.vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped),
               "vkMapMemory");
  return b;
}

void Context::destroy_block(Block& b) noexcept {
  if (b.mapped) api_.vkUnmapMemory(device_, b.memory);
  api_.vkDestroyBuffer(device_, b.buffer, nullptr);
  api_.vkFreeMemory(device_, b.memory, nullptr);
  b = Block{};
}

const Pipeline& Context::pipeline(const std::string& name, std::span<const unsigned char> spirv,
                                  uint32_t bindings, uint32_t push_bytes) {
  std::lock_guard<std::mutex> lock(pipeline_mutex_);
  if (auto it = pipelines_.find(name); it != pipelines_.end()) return *it->second;
  VK_CHECK(bindings <= kMaxBindings, RuntimeError, "vulkan: shader ", name, " binds ", bindings,
           " buffers; a pipeline binds at most ", kMaxBindings);
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
      api_.vkCreateComputePipelines(device_, pipeline_cache_, 1, &cpci, nullptr, &p->pipeline);
  api_.vkDestroyShaderModule(device_, module, nullptr);
  VK_CHECK(r == VK_SUCCESS, DeviceError, "vulkan: building the pipeline of ", name,
           " failed: ", result_name(r));
  save_pipeline_cache();
  return *pipelines_.emplace(name, std::move(p)).first->second;
}

namespace {

// The directory pipelines are cached in: VKML_CACHE_DIR, else $XDG_CACHE_HOME/vkml, else
// ~/.cache/vkml; "" when none of them is set.
std::string cache_dir() {
  if (const char* d = std::getenv("VKML_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/vkml";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/vkml";
  return "";
}

}  // namespace

// The cache file is named after the device and driver, and the driver checks the header
// (vendor, device, pipelineCacheUUID) before using any of it: a stale or foreign file only
// costs the compile it would have saved. It is an optimisation: no failure here is an error.
void Context::load_pipeline_cache() {
  std::vector<char> data;
  if (const std::string dir = cache_dir(); !dir.empty()) {
    char uuid[2 * VK_UUID_SIZE + 1] = {};
    for (unsigned i = 0; i < VK_UUID_SIZE; ++i)
      std::snprintf(uuid + 2 * i, 3, "%02x", props_.pipelineCacheUUID[i]);
    cache_path_ = detail::cat(dir, "/vulkan-pipelines-", props_.vendorID, "-", props_.deviceID, "-",
                              props_.driverVersion, "-", uuid, ".bin");
    std::ifstream in(cache_path_, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    // The header: length, version, vendor, device, UUID (the spec's layout).
    const bool ours = data.size() >= 16 + VK_UUID_SIZE &&
                      std::memcmp(data.data() + 8, &props_.vendorID, 4) == 0 &&
                      std::memcmp(data.data() + 12, &props_.deviceID, 4) == 0 &&
                      std::memcmp(data.data() + 16, props_.pipelineCacheUUID, VK_UUID_SIZE) == 0;
    if (!ours) data.clear();
  }
  cache_saved_bytes_ = data.size();
  VkPipelineCacheCreateInfo pcci{.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                 .initialDataSize = data.size(),
                                 .pInitialData = data.empty() ? nullptr : data.data()};
  if (api_.vkCreatePipelineCache(device_, &pcci, nullptr, &pipeline_cache_) != VK_SUCCESS)
    pipeline_cache_ = VK_NULL_HANDLE;
}

// Writes the cache when it has grown, to a temporary file renamed over the old one, so that a
// crash or a concurrent process never leaves half a file.
void Context::save_pipeline_cache() {
  if (!pipeline_cache_ || cache_path_.empty()) return;
  size_t n = 0;
  if (api_.vkGetPipelineCacheData(device_, pipeline_cache_, &n, nullptr) != VK_SUCCESS ||
      n <= cache_saved_bytes_)
    return;
  std::vector<char> data(n);
  if (api_.vkGetPipelineCacheData(device_, pipeline_cache_, &n, data.data()) != VK_SUCCESS) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(cache_path_).parent_path(), ec);
  const std::string tmp = detail::cat(cache_path_, ".tmp", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(n));
    if (!out.good()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, cache_path_, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  cache_saved_bytes_ = n;
}

}  // namespace vk::vulkan
