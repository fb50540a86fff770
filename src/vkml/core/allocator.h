// The CPU caching allocator. Training allocates the same sizes step after step; handing freed
// blocks back out avoids both the malloc call and, for large blocks, the page faults a fresh
// mapping costs on first touch. Blocks are 64-byte aligned.
#pragma once
#include <cstddef>

namespace vk {

struct CpuBlock {
  void* data = nullptr;
  size_t capacity = 0;  // the size class the block belongs to
};

CpuBlock cpu_allocate(size_t nbytes);  // throws MemoryError when the system has no memory
void cpu_release(CpuBlock block);

struct AllocatorStats {
  size_t in_use_bytes = 0;  // handed out and not yet released
  size_t cached_bytes = 0;  // released, kept for reuse
  size_t peak_in_use_bytes = 0;
};
AllocatorStats allocator_stats();
void empty_cache();                  // returns every cached block to the system
void set_cache_limit(size_t bytes);  // default 256 MiB; 0 disables caching

}  // namespace vk
