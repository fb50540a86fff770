#include "vkml/core/allocator.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "vkml/core/error.h"

namespace vk {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kSmall = size_t{1} << 16;  // up to 64 KiB: powers of two
constexpr size_t kLargeStep = size_t{1} << 16;  // above: multiples of 64 KiB

size_t size_class(size_t nbytes) {
  if (nbytes <= kAlign) return kAlign;
  if (nbytes <= kSmall) {
    size_t c = kAlign;
    while (c < nbytes) c <<= 1;
    return c;
  }
  return (nbytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

struct Cache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;
  AllocatorStats stats;
#if defined(__SANITIZE_ADDRESS__)
  size_t limit = 0;  // reused blocks would hide use-after-free from AddressSanitizer
#else
  size_t limit = size_t{256} << 20;
#endif

  void trim_to(size_t target) {  // caller holds the mutex
    for (auto it = free_blocks.begin(); it != free_blocks.end() && stats.cached_bytes > target;) {
      while (!it->second.empty() && stats.cached_bytes > target) {
        std::free(it->second.back());
        it->second.pop_back();
        stats.cached_bytes -= it->first;
      }
      it = it->second.empty() ? free_blocks.erase(it) : std::next(it);
    }
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: storages may die during static teardown
  return *c;
}

}  // namespace

CpuBlock cpu_allocate(size_t nbytes) {
  size_t cls = size_class(nbytes);
  VK_CHECK(cls >= nbytes, MemoryError, "cannot allocate ", nbytes, " bytes");
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_blocks.find(cls);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.stats.cached_bytes -= cls;
      c.stats.in_use_bytes += cls;
      if (c.stats.in_use_bytes > c.stats.peak_in_use_bytes) c.stats.peak_in_use_bytes = c.stats.in_use_bytes;
      return {p, cls};
    }
  }
  void* p = std::aligned_alloc(kAlign, cls);
  if (!p) {  // give the cache back to the system and try once more
    empty_cache();
    p = std::aligned_alloc(kAlign, cls);
  }
  VK_CHECK(p != nullptr, MemoryError, "out of memory allocating ", nbytes, " bytes");
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.in_use_bytes += cls;
  if (c.stats.in_use_bytes > c.stats.peak_in_use_bytes) c.stats.peak_in_use_bytes = c.stats.in_use_bytes;
  return {p, cls};
}

void cpu_release(CpuBlock block) {
  if (!block.data) return;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.in_use_bytes -= block.capacity;
  if (block.capacity > c.limit) {
    std::free(block.data);
    return;
  }
  c.free_blocks[block.capacity].push_back(block.data);
  c.stats.cached_bytes += block.capacity;
  if (c.stats.cached_bytes > c.limit) c.trim_to(c.limit / 2);
}

AllocatorStats allocator_stats() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().stats;
}

void empty_cache() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().trim_to(0);
}

void set_cache_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().limit = bytes;
  cache().trim_to(bytes);
}

}  // namespace vk
