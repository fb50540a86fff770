#include "vkml/backend/vulkan/memory.h"

#include "vkml/core/error.h"

namespace vk::vulkan {

Context& context() {
  Context* c = Context::get();
  VK_CHECK(c != nullptr, DeviceError,
           "the vulkan device is not available: ", Context::unavailable_reason());
  return *c;
}

int VulkanMemory::device_count() const {
  context();
  return 1;
}

void* VulkanMemory::allocate(size_t nbytes, int) {
  std::unique_ptr<Buffer> b = context().create_buffer(nbytes);
  Buffer* handle = b.get();
  std::lock_guard<std::mutex> lock(mutex_);
  buffers_.emplace(handle, std::move(b));
  return handle;
}

void VulkanMemory::release(void* block, size_t, int) noexcept {
  std::unique_ptr<Buffer> b;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = buffers_.find(static_cast<Buffer*>(block));
    if (it == buffers_.end()) return;
    b = std::move(it->second);
    buffers_.erase(it);
  }
  // Every submission has finished by now (each op waits for its own): nothing still reads it.
  Context::get()->destroy_buffer(*b);
}

void VulkanMemory::copy_from_host(void* dst_block, size_t dst_offset, const void* src,
                                  size_t nbytes, int) {
  context().upload(*static_cast<Buffer*>(dst_block), dst_offset, src, nbytes);
}

void VulkanMemory::copy_to_host(void* dst, const void* src_block, size_t src_offset, size_t nbytes,
                                int) {
  context().download(dst, *static_cast<Buffer*>(const_cast<void*>(src_block)), src_offset, nbytes);
}

void VulkanMemory::copy_on_device(void* dst_block, size_t dst_offset, const void* src_block,
                                  size_t src_offset, size_t nbytes, int) {
  context().copy(*static_cast<Buffer*>(dst_block), dst_offset,
                 *static_cast<Buffer*>(const_cast<void*>(src_block)), src_offset, nbytes);
}

}  // namespace vk::vulkan
