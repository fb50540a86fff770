#include "vkml/backend/cpu/cache.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace vk::cpu {
namespace {

// The largest cache of the highest level that sysfs lists for cpu0, in bytes; 0 when it lists none.
int64_t last_level_cache_bytes() {
  int best_level = 0;
  int64_t best_bytes = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), size_file(dir + "/size");
    int level = 0;
    std::string size;  // "32768K"
    if (!(level_file >> level) || !(size_file >> size)) break;
    char* unit = nullptr;
    int64_t bytes = std::strtoll(size.c_str(), &unit, 10);
    if (*unit == 'K') bytes <<= 10;
    if (*unit == 'M') bytes <<= 20;
    if (level > best_level || (level == best_level && bytes > best_bytes)) {
      best_level = level;
      best_bytes = bytes;
    }
  }
  return best_bytes;
}

}  // namespace

int64_t stream_min_bytes() {
  static const int64_t bytes = [] {
    if (const char* env = std::getenv("VKML_STREAM_MIN_BYTES"); env != nullptr && *env != '\0') {
      char* end = nullptr;
      const long long v = std::strtoll(env, &end, 10);
      if (*end == '\0' && v >= 0) return static_cast<int64_t>(v);
      // Not an error: a typo in a tuning variable must not stop every program at import.
      std::fprintf(stderr, "vkml: VKML_STREAM_MIN_BYTES=%s is not a byte count; ignored\n", env);
    }
    const int64_t llc = last_level_cache_bytes();
    return (llc > 0 ? llc : int64_t{32} << 20) / 2;
  }();
  return bytes;
}

}  // namespace vk::cpu
