// The instruction set a kernel file is compiled for. Every file of this folder but the thread pool
// (parallel.*) and the capability switch (capability.*) is compiled once per CPU capability
// (capability.h), each copy with its own -march and its own inline namespace vk::cpu::<isa>: the
// copies' functions, templates and inline helpers have different names, so the linker can never
// hand code of a wider instruction set to a caller of a narrower one (one C++ definition compiled
// under two sets of flags would be two definitions of one name). The build defines VKML_CPU_ISA
// for the avx2 and avx512 copies; the library's own copy, compiled with the library's flags, is
// `generic`.
#pragma once

#ifndef VKML_CPU_ISA
#define VKML_CPU_ISA generic
#endif
