// libFuzzer target: vk::io::parse_safetensors on arbitrary bytes. A typed vk::Error is the
// expected answer to a broken file; anything else (another exception, a crash, a sanitizer
// report, a leak, an allocation over -rss_limit_mb/-malloc_limit_mb) is a bug.
// Build and run: see fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "vkml/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> metadata;
  vk::io::NamedTensors tensors;
  try {
    tensors = vk::io::parse_safetensors(data, size, &metadata);
  } catch (const vk::Error&) {
    return 0;
  }
  // Accepted: every tensor is a fresh row-major CPU tensor whose bytes can all be read, and
  // together they cannot hold more than a few times the input (widening is at most 1 -> 4 bytes,
  // plus a 64-byte minimum allocation per tensor).
  size_t total = 0;
  uint8_t sum = 0;
  for (const auto& [name, t] : tensors) {
    // A fresh row-major tensor. (Not t.is_contiguous(): in vkml that is false for some empty
    // shapes such as [0, 0], which the first run of this fuzzer found.)
    if (!t.defined() || t.offset() != 0 || t.strides() != vk::contiguous_strides(t.shape()))
      std::abort();
    size_t n = static_cast<size_t>(t.numel()) * vk::dtype_size(t.dtype());
    if (n > 4 * size) std::abort();
    total += n;
    const auto* p = static_cast<const uint8_t*>(t.raw_data());
    for (size_t i = 0; i < n; ++i) sum = static_cast<uint8_t>(sum + p[i]);
    if (t.dtype() == vk::DType::Bool)
      for (size_t i = 0; i < n; ++i)
        if (p[i] > 1) std::abort();  // a bool must hold 0 or 1
  }
  if (total > 4 * size) std::abort();
  volatile uint8_t sink = sum;
  (void)sink;
  return 0;
}
