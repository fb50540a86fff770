// The CPU kernels' run-time dispatch (backend/cpu/capability.h, issue 18 item 6): the name parser,
// the capability detected against the kernel's own report of the machine (/proc/cpuinfo), and
// that the kernels registered are the chosen copy's. make test runs the whole suite once more with
// VKML_CPU_CAPABILITY=default (the generic copy) and a subset under qemu-x86_64 as a Haswell (no
// AVX-512) and a Nehalem (no AVX), where VKML_EXPECT_CPU_CAPABILITY names what must be chosen.
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "test_util.h"
#include "vkml/backend/cpu/capability.h"
#include "vkml/core/kernel.h"

#if defined(VKML_CPU_DISPATCH)
// Each copy's add kernel (backend/cpu/elementwise.cpp, compiled once per capability).
namespace vk::cpu {
inline namespace generic {
VK_KERNEL(add);
}  // namespace generic
}  // namespace vk::cpu
namespace vk::cpu {
inline namespace avx2 {
VK_KERNEL(add);
}  // namespace avx2
}  // namespace vk::cpu
namespace vk::cpu {
inline namespace avx512 {
VK_KERNEL(add);
}  // namespace avx512
}  // namespace vk::cpu
#endif

namespace vk::test {
namespace {

using cpu::CpuCapability;

TEST(CpuCapability, NamesParseCaseInsensitivelyAndNeverAboveTheSupported) {
  EXPECT_EQ(cpu::parse_cpu_capability("default", CpuCapability::Avx512), CpuCapability::Default);
  EXPECT_EQ(cpu::parse_cpu_capability("AVX2", CpuCapability::Avx512), CpuCapability::Avx2);
  EXPECT_EQ(cpu::parse_cpu_capability("Avx512", CpuCapability::Avx512), CpuCapability::Avx512);
  EXPECT_EQ(cpu::parse_cpu_capability("avx512", CpuCapability::Avx2), CpuCapability::Avx2);
  EXPECT_EQ(cpu::parse_cpu_capability("avx2", CpuCapability::Default), CpuCapability::Default);
  EXPECT_EQ(cpu::parse_cpu_capability("sse4", CpuCapability::Avx2), std::nullopt);
  EXPECT_EQ(cpu::parse_cpu_capability("", CpuCapability::Avx2), std::nullopt);
  EXPECT_STREQ(cpu::cpu_capability_name(CpuCapability::Default), "DEFAULT");
  EXPECT_STREQ(cpu::cpu_capability_name(CpuCapability::Avx2), "AVX2");
  EXPECT_STREQ(cpu::cpu_capability_name(CpuCapability::Avx512), "AVX512");
}

// The flags the kernel reports for this machine (empty when /proc/cpuinfo cannot be read).
std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuCapability, DetectedLevelIsTheMachines) {
  if (const char* expected = std::getenv("VKML_EXPECT_CPU_CAPABILITY")) {
    // Under an emulator /proc/cpuinfo is the host's: the caller names the emulated level.
    EXPECT_STREQ(cpu::cpu_capability_name(cpu::supported_cpu_capability()), expected);
    return;
  }
  const std::set<std::string> f = cpuinfo_flags();
  ASSERT_FALSE(f.empty()) << "no flags line in /proc/cpuinfo";
  auto has = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (!f.count(n)) return false;
    return true;
  };
  const bool v3 = has({"avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "movbe", "abm", "xsave"});
  const bool v4 = v3 && has({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"});
  const CpuCapability machine = v4   ? CpuCapability::Avx512
                                : v3 ? CpuCapability::Avx2
                                     : CpuCapability::Default;
#if defined(VKML_CPU_DISPATCH)
  EXPECT_EQ(cpu::supported_cpu_capability(), machine)
      << "detected " << cpu::cpu_capability_name(cpu::supported_cpu_capability());
#else
  // One copy, compiled for a level (the sanitizer builds: x86-64) that this machine runs.
  EXPECT_LE(cpu::supported_cpu_capability(), machine)
      << "compiled for " << cpu::cpu_capability_name(cpu::supported_cpu_capability());
#endif
}

TEST(CpuCapability, RegisteredKernelsAreTheChosenCopys) {
  const CpuCapability chosen = cpu::cpu_capability();
  EXPECT_LE(chosen, cpu::supported_cpu_capability());
  if (const char* asked = std::getenv("VKML_CPU_CAPABILITY")) {
    const CpuCapability supported = cpu::supported_cpu_capability();
    EXPECT_EQ(chosen, cpu::parse_cpu_capability(asked, supported).value_or(supported));
  }
#if defined(VKML_CPU_DISPATCH)
  EXPECT_TRUE(cpu::has_cpu_dispatch());
  register_builtin_backends();
  const Kernel registered = find_kernel(DeviceType::CPU, OpKind::Add);
  const Kernel copy = chosen == CpuCapability::Avx512 ? &cpu::avx512::add
                      : chosen == CpuCapability::Avx2 ? &cpu::avx2::add
                                                      : &cpu::generic::add;
  EXPECT_EQ(registered, copy) << "the add kernel registered is not the "
                              << cpu::cpu_capability_name(chosen) << " copy's";
#else
  EXPECT_FALSE(cpu::has_cpu_dispatch());
#endif
}

}  // namespace
}  // namespace vk::test
