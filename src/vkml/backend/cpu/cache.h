// What the CPU kernels need to know of the machine's caches, read once (not per kernel copy).
#pragma once
#include <cstdint>

#include "vkml/backend/cpu/isa.h"
#include "vkml/core/tensor.h"

namespace vk::cpu {

// The size in bytes from which an output is written with non-temporal stores (simd.h
// write_out): half the last-level cache this CPU sees (sysfs; a 32 MB cache where it says none).
// An output that large cannot stay in the cache beside its inputs, so a store that goes through
// the cache only adds a read of every line it writes (the line is fetched, then overwritten).
// The environment variable VKML_STREAM_MIN_BYTES sets it (0: every output; the tests use it to
// take the streamed path on small tensors).
int64_t stream_min_bytes();

inline namespace VKML_CPU_ISA {  // inline code is compiled per kernel copy (isa.h)

// Whether an output of t's size (an output, or the input it takes its shape from) is streamed.
inline bool streams(const Tensor& t) {
  return t.numel() * static_cast<int64_t>(dtype_size(t.dtype())) >= stream_min_bytes();
}

}  // namespace VKML_CPU_ISA

}  // namespace vk::cpu
