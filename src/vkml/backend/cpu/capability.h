// Which copy of the CPU kernels runs. The kernel files are compiled once per capability (isa.h);
// at start-up the backend registers the copy for the widest instruction set the machine (and its
// OS) supports, so one library runs on any x86-64 and at full width on each. A build without
// dispatch (VKML_CPU_DISPATCH off: -march=native, sanitizer and non-x86 builds) holds one copy and
// reports what it was compiled for.
#pragma once
#include <optional>
#include <string_view>

namespace vk::cpu {

// torch's names and order (torch.backends.cpu.get_cpu_capability()).
enum class CpuCapability { Default, Avx2, Avx512 };  // x86-64, x86-64-v3, x86-64-v4

// The capability whose kernels are registered: the best one compiled in and supported here, or a
// lower one asked for by the environment variable VKML_CPU_CAPABILITY (default, avx2, avx512; as
// torch's ATEN_CPU_CAPABILITY) to run and test the narrower copies on a wide machine.
CpuCapability cpu_capability();
// The best capability compiled into this library that this machine supports.
CpuCapability supported_cpu_capability();
// Whether this build holds the three copies (else one, compiled for supported_cpu_capability()).
bool has_cpu_dispatch();
const char* cpu_capability_name(CpuCapability c);  // "DEFAULT", "AVX2", "AVX512"
// The capability `requested` names (case-insensitive), capped at `supported`; nullopt when the
// name is none of the three.
std::optional<CpuCapability> parse_cpu_capability(std::string_view requested,
                                                  CpuCapability supported);

}  // namespace vk::cpu
