// The Vulkan device's memory for Storage: ranges of the context's caching sub-allocator
// (allocator.h); the Buffer describing a range is the block Storage keeps.
#pragma once
#include <initializer_list>
#include <string_view>
#include <vector>

#include "vkml/backend/vulkan/context.h"
#include "vkml/core/device.h"
#include "vkml/core/tensor.h"

namespace vk::vulkan {

class VulkanMemory final : public DeviceMemory {
 public:
  void* allocate(size_t nbytes, int index) override;
  void release(void* block, size_t nbytes, int index) noexcept override;
  void copy_from_host(void* dst_block, size_t dst_offset, const void* src, size_t nbytes,
                      int index) override;
  void copy_to_host(void* dst, const void* src_block, size_t src_offset, size_t nbytes,
                    int index) override;
  void copy_on_device(void* dst_block, size_t dst_offset, const void* src_block, size_t src_offset,
                      size_t nbytes, int index) override;
  bool host_addressable() const override { return false; }
  // One device (the one Context picked); DeviceError saying why when there is none.
  int device_count() const override;
};

// The context, or DeviceError saying why there is none.
Context& context();
// The buffer holding t's elements (t on the Vulkan device).
inline Buffer& buffer_of(const Tensor& t) { return *static_cast<Buffer*>(t.storage_data()); }
// t's buffer, to bind to a shader: SizeError naming op when it is larger than the device binds
// at once (maxStorageBufferRange).
Buffer& bound_buffer(const Tensor& t, std::string_view op);
// The buffers of the defined tensors of ts, in order, each as bound_buffer checks it.
std::vector<Buffer*> bound_buffers(std::initializer_list<const Tensor*> ts, std::string_view op);

}  // namespace vk::vulkan
