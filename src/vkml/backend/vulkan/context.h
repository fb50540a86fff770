// The Vulkan device vkml computes on: instance, device and queue, created on first use. This first
// version runs every piece of work to completion before returning (record, submit, wait on a
// fence), so results are visible to the host at once and no buffer is reused while the GPU still
// reads it; batching many dispatches into one submission is the next step (issue #14, item 3).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "vkml/backend/vulkan/loader.h"

namespace vk::vulkan {

// A storage buffer and its memory. `mapped` is the host's view of it when the memory is
// host-visible (lavapipe, integrated GPUs, resizable BAR), else null (copies go through staging).
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  VkDeviceSize size = 0;
};

// How many workgroups a dispatch runs along x, y and z.
struct Groups {
  uint32_t x = 1, y = 1, z = 1;
};

// A compute pipeline over `bindings` storage buffers (binding i = buffer i) and push constants.
struct Pipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  uint32_t push_bytes = 0;
};

class Context {
 public:
  // The context, created on the first call; null when this machine has no usable Vulkan device
  // (unavailable_reason() says why). Thread-safe.
  static Context* get();
  static const std::string& unavailable_reason();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  const std::string& device_name() const { return device_name_; }
  // What the shaders may use on this device (each enabled at creation where supported).
  bool has_float64() const { return has_float64_; }
  bool has_int64() const { return has_int64_; }
  bool has_int8_storage() const { return has_int8_storage_; }
  VkDeviceSize max_storage_range() const { return max_storage_range_; }
  // Messages the validation layers reported (VKML_VULKAN_VALIDATE=1), errors and warnings.
  int validation_messages() const;

  // A storage buffer in device-local memory (mapped when that memory is host-visible too), or,
  // for staging, in host-visible memory.
  std::unique_ptr<Buffer> create_buffer(size_t nbytes, bool staging = false);
  void destroy_buffer(Buffer& b) noexcept;
  // Host <-> buffer copies (through a staging buffer when the buffer is not mapped).
  void upload(Buffer& dst, size_t offset, const void* src, size_t nbytes);
  void download(void* dst, Buffer& src, size_t offset, size_t nbytes);
  void copy(Buffer& dst, size_t dst_offset, Buffer& src, size_t src_offset, size_t nbytes);

  // The pipeline of shader `name` (built on first use and kept).
  const Pipeline& pipeline(const std::string& name, std::span<const unsigned char> spirv,
                           uint32_t bindings, uint32_t push_bytes);
  // Runs `p` over `buffers` with push constants `push` as groups.x * groups.y * groups.z
  // workgroups. The first `writes` buffers are those the shader writes (outputs first, by
  // convention), the rest it only reads: ordering between dispatches follows from that.
  void dispatch(const Pipeline& p, std::span<Buffer* const> buffers, const void* push,
                Groups groups, uint32_t writes = 1);
  // The same over `groups` workgroups in a line, split over x and y when more than the device
  // allows in x (shaders index them as gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x).
  void dispatch(const Pipeline& p, std::span<Buffer* const> buffers, const void* push,
                uint64_t groups, uint32_t writes = 1);
  uint32_t max_groups(int axis) const { return max_groups_[axis]; }

 private:
  Context() = default;
  bool init(std::string& why);
  uint32_t memory_type(uint32_t allowed, VkMemoryPropertyFlags want) const;
  // Records with `record`, submits, waits. Holds the queue lock.
  void run(const std::function<void(VkCommandBuffer)>& record);

  Api api_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer command_buffer_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_props_{};
  std::string device_name_;
  bool has_float64_ = false, has_int64_ = false, has_int8_storage_ = false;
  uint32_t max_groups_[3] = {65535, 65535, 65535};
  VkDeviceSize max_storage_range_ = 0;
  std::mutex queue_mutex_;     // one submission at a time
  std::mutex pipeline_mutex_;  // the pipeline map
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
};

}  // namespace vk::vulkan
