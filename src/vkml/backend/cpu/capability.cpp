// Capability detection and the choice of kernel copy (capability.h). Compiled once, with the
// library's baseline flags: it runs before anything is known about the machine.
#include "vkml/backend/cpu/capability.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "vkml/backend/cpu/register.h"

#if defined(VKML_CPU_DISPATCH)
// The other copies' entry points (register.cpp compiled with VKML_CPU_ISA=avx2 / avx512).
namespace vk::cpu {
inline namespace avx2 {
void register_kernels();
}  // namespace avx2
}  // namespace vk::cpu
namespace vk::cpu {
inline namespace avx512 {
void register_kernels();
}  // namespace avx512
}  // namespace vk::cpu
#endif

namespace vk::cpu {

CpuCapability supported_cpu_capability() {
#if defined(VKML_CPU_DISPATCH)
  // The x86-64-v3 / v4 levels: AVX2, FMA, F16C, BMI1/2, MOVBE, LZCNT (v3); AVX-512 F, BW, CD, DQ,
  // VL (v4). libgcc's check includes the OS's XSAVE support of the wider registers.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return CpuCapability::Avx512;
  if (__builtin_cpu_supports("x86-64-v3")) return CpuCapability::Avx2;
  return CpuCapability::Default;
#elif defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  return CpuCapability::Avx512;  // one copy, compiled for this level (-march=native)
#elif defined(__AVX2__) && defined(__FMA__)
  return CpuCapability::Avx2;
#else
  return CpuCapability::Default;
#endif
}

bool has_cpu_dispatch() {
#if defined(VKML_CPU_DISPATCH)
  return true;
#else
  return false;
#endif
}

const char* cpu_capability_name(CpuCapability c) {
  switch (c) {
    case CpuCapability::Avx512:
      return "AVX512";
    case CpuCapability::Avx2:
      return "AVX2";
    case CpuCapability::Default:
      break;
  }
  return "DEFAULT";
}

std::optional<CpuCapability> parse_cpu_capability(std::string_view requested,
                                                  CpuCapability supported) {
  std::string name(requested);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  CpuCapability asked;
  if (name == "default")
    asked = CpuCapability::Default;
  else if (name == "avx2")
    asked = CpuCapability::Avx2;
  else if (name == "avx512")
    asked = CpuCapability::Avx512;
  else
    return std::nullopt;
  return std::min(asked, supported);
}

CpuCapability cpu_capability() {
  static const CpuCapability chosen = [] {
    const CpuCapability supported = supported_cpu_capability();
    const char* env = std::getenv("VKML_CPU_CAPABILITY");
    if (env == nullptr || *env == '\0') return supported;
    if (auto asked = parse_cpu_capability(env, supported)) return *asked;
    // Not an error: a typo in a tuning variable must not stop every program at import.
    std::fprintf(stderr,
                 "vkml: VKML_CPU_CAPABILITY=%s is none of default, avx2, avx512; using %s\n", env,
                 cpu_capability_name(supported));
    return supported;
  }();
  return chosen;
}

void register_backend() {
#if defined(VKML_CPU_DISPATCH)
  switch (cpu_capability()) {
    case CpuCapability::Avx512:
      avx512::register_kernels();
      return;
    case CpuCapability::Avx2:
      avx2::register_kernels();
      return;
    case CpuCapability::Default:
      break;
  }
#endif
  generic::register_kernels();
}

}  // namespace vk::cpu
