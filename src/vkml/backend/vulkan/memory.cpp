#include "vkml/backend/vulkan/memory.h"

#include "vkml/core/error.h"

namespace vk::vulkan {

Context& context() {
  Context* c = Context::get();
  VK_CHECK(c != nullptr, DeviceError,
           "the vulkan device is not available: ", Context::unavailable_reason());
  return *c;
}

Buffer& bound_buffer(const Tensor& t, std::string_view op) {
  Context& ctx = context();
  Buffer& b = buffer_of(t);
  VK_CHECK(b.size <= ctx.max_storage_range(), SizeError, op, ": ", t.describe(), " (", b.size,
           " bytes) is larger than ", ctx.device_name(),
           " binds in one storage buffer (maxStorageBufferRange ", ctx.max_storage_range(),
           " bytes)");
  return b;
}

std::vector<Buffer*> bound_buffers(std::initializer_list<const Tensor*> ts, std::string_view op) {
  std::vector<Buffer*> out;
  for (const Tensor* t : ts)
    if (t->defined()) out.push_back(&bound_buffer(*t, op));
  return out;
}

int VulkanMemory::device_count() const {
  context();
  return 1;
}

// Storage keeps the Buffer's address as its block; the Buffer is owned by the context's
// allocator from allocate() until release() gives it back (after the GPU is done with it).
void* VulkanMemory::allocate(size_t nbytes, int) { return context().allocate(nbytes).release(); }

void VulkanMemory::release(void* block, size_t, int) noexcept {
  std::unique_ptr<Buffer> b(static_cast<Buffer*>(block));
  if (Context* c = Context::get()) c->release(std::move(b));
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
