#include "vkml/core/allocator.h"

#include <pthread.h>
#include <sys/mman.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "vkml/core/error.h"

namespace vk {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kSmall = size_t{1} << 16;      // up to 64 KiB: powers of two
constexpr size_t kLargeStep = size_t{1} << 16;  // above: multiples of 64 KiB

size_t size_class(size_t nbytes) {
  if (nbytes <= kAlign) return kAlign;
  if (nbytes <= kSmall) return std::bit_ceil(nbytes);
  return (nbytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

// The small classes (powers of two up to kSmall) have a fixed slot each, so the common case
// finds its list without hashing; the large ones, which are few in a training loop, a map.
constexpr int kSmallClasses = std::countr_zero(kSmall) - std::countr_zero(kAlign) + 1;
int small_index(size_t cls) { return std::countr_zero(cls) - std::countr_zero(kAlign); }

struct Cache {
  std::mutex mutex;
  std::vector<void*> small[kSmallClasses];
  std::unordered_map<size_t, std::vector<void*>> large;
  AllocatorStats stats;
#if defined(__SANITIZE_ADDRESS__)
  size_t limit = 0;  // reused blocks would hide use-after-free from AddressSanitizer
#else
  size_t limit = size_t{256} << 20;
#endif

  std::vector<void*>& list(size_t cls) {  // caller holds the mutex
    return cls <= kSmall ? small[small_index(cls)] : large[cls];
  }

  void trim_list(std::vector<void*>& blocks, size_t cls, size_t target) {
    while (!blocks.empty() && stats.cached_bytes > target) {
      std::free(blocks.back());
      blocks.pop_back();
      stats.cached_bytes -= cls;
    }
  }

  void trim_to(size_t target) {  // caller holds the mutex; large blocks go first
    for (auto it = large.begin(); it != large.end() && stats.cached_bytes > target;) {
      trim_list(it->second, it->first, target);
      it = it->second.empty() ? large.erase(it) : std::next(it);
    }
    for (int i = kSmallClasses; i-- > 0 && stats.cached_bytes > target;)
      trim_list(small[i], kAlign << i, target);
  }
};

// A block from the system. One of 2 MiB or more starts on a 2 MiB boundary and asks for
// transparent huge pages (in THP mode "madvise", a common default and this machine's, there are
// none without asking). A kernel streaming through 4 KiB pages misses the TLB every 1024 floats,
// and in a VM each miss walks two page tables: on this KVM guest, a + b over 16M floats took
// 11.2 ms at one thread in 4 KiB pages and 7.5-8.6 ms in huge pages.
void* new_block(size_t cls) {
  const size_t align = cls >= kHugePage ? kHugePage : kAlign;
  void* p = nullptr;
  if (posix_memalign(&p, align, cls) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
  if (cls >= kHugePage) (void)madvise(p, cls, MADV_HUGEPAGE);  // a hint: failure changes nothing
#endif
  return p;
}

// The memory the system can still give, from MemAvailable (Linux), or SIZE_MAX where it says
// nothing. malloc hands out more than that (overcommit) and the process is then killed when it
// touches the pages (the binding sweep's diagflat and kron were); a block beyond it is a
// MemoryError instead. Read only for big blocks (kCheckFrom), where a file read costs nothing.
constexpr size_t kCheckFrom = size_t{1} << 30;
size_t memory_available() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  while (meminfo >> key >> kib) {  // "MemAvailable:   123456 kB"
    if (key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return SIZE_MAX;
}

Cache& make_cache() {
  static Cache* c = new Cache();  // never destroyed: storages may die during static teardown
  // A fork() while another thread holds the lock would leave the child's copy locked forever:
  // the lock is held across every fork, so both sides start with it free.
  pthread_atfork([] { c->mutex.lock(); }, [] { c->mutex.unlock(); }, [] { c->mutex.unlock(); });
  return *c;
}

Cache& cache() {
  static Cache& c = make_cache();
  return c;
}

}  // namespace

CpuBlock cpu_allocate(size_t nbytes) {
  size_t cls = size_class(nbytes);
  VK_CHECK(cls >= nbytes, MemoryError, "cannot allocate ", nbytes, " bytes");
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    std::vector<void*>* blocks = nullptr;
    if (cls <= kSmall) {
      blocks = &c.small[small_index(cls)];
    } else if (auto it = c.large.find(cls); it != c.large.end()) {
      blocks = &it->second;
    }
    if (blocks && !blocks->empty()) {
      void* p = blocks->back();
      blocks->pop_back();
      c.stats.cached_bytes -= cls;
      c.stats.in_use_bytes += cls;
      if (c.stats.in_use_bytes > c.stats.peak_in_use_bytes)
        c.stats.peak_in_use_bytes = c.stats.in_use_bytes;
      return {p, cls};
    }
  }
  if (cls >= kCheckFrom && cls > memory_available()) {
    empty_cache();  // our cached blocks count as used there
    const size_t available = memory_available();
    VK_CHECK(cls <= available, MemoryError, "cannot allocate ", nbytes, " bytes: the system has ",
             available, " bytes of memory available");
  }
  void* p = new_block(cls);
  if (!p) {  // give the cache back to the system and try once more
    empty_cache();
    p = new_block(cls);
  }
  VK_CHECK(p != nullptr, MemoryError, "out of memory allocating ", nbytes, " bytes");
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.in_use_bytes += cls;
  if (c.stats.in_use_bytes > c.stats.peak_in_use_bytes)
    c.stats.peak_in_use_bytes = c.stats.in_use_bytes;
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
  c.list(block.capacity).push_back(block.data);
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
