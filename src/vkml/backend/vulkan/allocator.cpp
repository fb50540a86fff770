#include "vkml/backend/vulkan/allocator.h"

#include <algorithm>

namespace vk::vulkan {
namespace {

VkDeviceSize round_up(VkDeviceSize n, VkDeviceSize to) { return (n + to - 1) / to * to; }

// The first free range of b that holds `size` bytes, or b.free.end().
auto first_fit(Block& b, VkDeviceSize size) {
  return std::find_if(b.free.begin(), b.free.end(),
                      [&](const auto& r) { return r.second >= size; });
}

}  // namespace

Allocator::~Allocator() {
  for (auto& b : blocks_) source_.destroy_block(*b);
}

std::unique_ptr<Buffer> Allocator::allocate(size_t nbytes, bool host) {
  const VkDeviceSize size = round_up(std::max<VkDeviceSize>(nbytes, 4), 4);
  const VkDeviceSize span = round_up(size, align_);
  if (span >= kLarge) {
    // A cached dedicated block that fits without wasting more than an eighth of it, else a new
    // one rounded to 2 MiB (so that sizes that differ a little share cached blocks).
    for (auto& b : blocks_)
      if (b->dedicated && b->host == host && !b->free.empty() && b->size >= span &&
          b->size - span <= b->size / 8)
        return take(*b, span, nbytes);
    auto b = source_.create_block(round_up(span, VkDeviceSize{2} << 20), host);
    b->dedicated = true;
    b->host = host;
    b->free.emplace(0, b->size);
    reserved_ += b->size;
    blocks_.push_back(std::move(b));
    return take(*blocks_.back(), span, nbytes);
  }
  for (auto& b : blocks_)
    if (!b->dedicated && b->host == host && first_fit(*b, span) != b->free.end())
      return take(*b, span, nbytes);
  auto b = source_.create_block(kBlockSize, host);
  b->host = host;
  b->free.emplace(0, b->size);
  reserved_ += b->size;
  blocks_.push_back(std::move(b));
  return take(*blocks_.back(), span, nbytes);
}

std::unique_ptr<Buffer> Allocator::take(Block& b, VkDeviceSize span, size_t nbytes) {
  auto it = b.dedicated ? b.free.begin() : first_fit(b, span);
  const VkDeviceSize offset = it->first;
  const VkDeviceSize left = it->second - span;
  b.free.erase(it);
  // A dedicated block is taken whole: its tail is no use to anyone else.
  if (left > 0 && !b.dedicated) b.free.emplace(offset + span, left);
  auto buf = std::make_unique<Buffer>();
  buf->buffer = b.buffer;
  buf->mapped = b.mapped ? static_cast<char*>(b.mapped) + offset : nullptr;
  buf->offset = offset;
  buf->size = round_up(std::max<VkDeviceSize>(nbytes, 4), 4);
  buf->span = b.dedicated ? b.size : span;
  buf->block = &b;
  allocated_ += buf->size;
  return buf;
}

void Allocator::release(std::unique_ptr<Buffer> b, uint64_t completed) {
  if (!b) return;
  allocated_ -= b->size;
  if (b->last_use <= completed) {
    give_back(*b);
    return;
  }
  const uint64_t serial = b->last_use;
  pending_.push_back({std::move(b), serial});
}

void Allocator::collect(uint64_t completed) {
  auto done = std::stable_partition(pending_.begin(), pending_.end(),
                                    [&](const Pending& p) { return p.serial > completed; });
  for (auto it = done; it != pending_.end(); ++it) give_back(*it->buffer);
  pending_.erase(done, pending_.end());
}

void Allocator::give_back(Buffer& buf) noexcept {
  Block& b = *buf.block;
  auto [it, inserted] = b.free.emplace(buf.offset, buf.span);
  (void)inserted;
  // Coalesce with the free neighbours on either side.
  if (auto next = std::next(it); next != b.free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    b.free.erase(next);
  }
  if (it != b.free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      b.free.erase(it);
    }
  }
}

void Allocator::empty_cache() noexcept {
  auto empty = std::stable_partition(blocks_.begin(), blocks_.end(), [](const auto& b) {
    return !(b->free.size() == 1 && b->free.begin()->second == b->size);
  });
  for (auto it = empty; it != blocks_.end(); ++it) {
    reserved_ -= (*it)->size;
    source_.destroy_block(**it);
  }
  blocks_.erase(empty, blocks_.end());
}

}  // namespace vk::vulkan
