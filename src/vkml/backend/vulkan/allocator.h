// The Vulkan device's memory: a caching sub-allocator over large blocks. Tensors take ranges of
// shared blocks (large tensors a block of their own); a released range returns to its block only
// once the GPU has finished the last submission that used it, so memory is never reused under
// work still in flight; blocks stay cached for the next allocation until empty_cache() (or an
// allocation that fails) hands the empty ones back to the driver.
//
// The bookkeeping is plain offsets: it talks to Vulkan only through a BlockSource, so it is
// tested without a device (tests/cpp/test_vulkan_allocator.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "vkml/backend/vulkan/loader.h"

namespace vk::vulkan {

// One VkDeviceMemory with one VkBuffer over all of it, mapped when host-visible.
struct Block {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  VkDeviceSize size = 0;
  bool host = false;                          // a staging block (host-visible memory)
  bool dedicated = false;                     // holds one large allocation
  std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> size, neighbours coalesced
};

// A range of a block: what a tensor's Storage holds. Binding it binds (buffer, offset, size).
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  void* mapped = nullptr;             // the host's view of the range, when its block is mapped
  VkDeviceSize offset = 0, size = 0;  // size: the bytes asked for, rounded up to 4
  VkDeviceSize span = 0;              // the bytes taken from the block (aligned)
  uint64_t last_use = 0;  // the last submission (serial) that reads or writes it; 0: none
  Block* block = nullptr;
};

class BlockSource {
 public:
  virtual ~BlockSource() = default;
  // A block of `size` bytes (MemoryError when the device has no room).
  virtual std::unique_ptr<Block> create_block(VkDeviceSize size, bool host) = 0;
  virtual void destroy_block(Block& b) noexcept = 0;
};

class Allocator {
 public:
  static constexpr VkDeviceSize kBlockSize = VkDeviceSize{64} << 20;
  static constexpr VkDeviceSize kLarge = VkDeviceSize{16} << 20;  // and above: a dedicated block

  Allocator(BlockSource& source, VkDeviceSize alignment) : source_(source), align_(alignment) {}
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  ~Allocator();

  // `nbytes` (at least 4: Vulkan binds no empty range) in device memory, or in host-visible
  // memory for staging.
  std::unique_ptr<Buffer> allocate(size_t nbytes, bool host = false);
  // Gives b back: at once when its last submission has completed (b->last_use <= completed),
  // else when collect() learns that it has.
  void release(std::unique_ptr<Buffer> b, uint64_t completed);
  // Returns the ranges of releases whose submissions are complete.
  void collect(uint64_t completed);
  // Hands blocks with nothing allocated back to the source.
  void empty_cache() noexcept;

  size_t allocated() const { return allocated_; }  // bytes of live ranges (as requested)
  size_t reserved() const { return reserved_; }    // bytes of blocks held

 private:
  struct Pending {
    std::unique_ptr<Buffer> buffer;
    uint64_t serial;
  };
  std::unique_ptr<Buffer> take(Block& b, VkDeviceSize size, size_t nbytes);
  void give_back(Buffer& b) noexcept;

  BlockSource& source_;
  VkDeviceSize align_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<Pending> pending_;
  size_t allocated_ = 0, reserved_ = 0;
};

}  // namespace vk::vulkan
