// The backends compiled into this library. A new backend adds its folder and one line here.
#include <mutex>

#include "vkml/backend/cpu/register.h"
#include "vkml/core/kernel.h"
#if defined(VKML_HAS_VULKAN)
#include "vkml/backend/vulkan/register.h"
#endif

namespace vk {

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    cpu::register_backend();
#if defined(VKML_HAS_VULKAN)
    vulkan::register_backend();
#endif
  });
}

}  // namespace vk
