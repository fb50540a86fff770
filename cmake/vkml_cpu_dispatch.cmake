# The CPU kernels, compiled once per capability (src/vkml/backend/cpu/capability.h): the library's
# own copy with its baseline flags (generic x86-64), and copies for x86-64-v3 (AVX2, FMA) and
# x86-64-v4 (AVX-512), each in its own namespace (isa.h). The backend picks one at start-up, so one
# build, a wheel among them, runs on any x86-64 and at full width on each machine.
# Off with VKML_NATIVE (one copy for the build machine), in the sanitizer builds (one copy, as they
# always tested: their CI builds cost minutes per copy), off x86-64, and with compilers other than
# GCC (the choice asks libgcc's __builtin_cpu_supports("x86-64-v3"), a name clang 14 lacks).
option(VKML_CPU_DISPATCH "Compile the CPU kernels per capability (x86-64, -v3, -v4), chosen at run time" ON)
set(VKML_HAS_CPU_DISPATCH OFF)
if(VKML_CPU_DISPATCH AND NOT VKML_NATIVE AND NOT VKML_SANITIZE AND NOT VKML_TSAN
   AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  if(CMAKE_LINKER AND CMAKE_NM AND CMAKE_OBJCOPY)  # binutils, to seal each copy
    set(VKML_HAS_CPU_DISPATCH ON)
  else()
    message(STATUS "vkml: no ld/nm/objcopy found: one copy of the CPU kernels, for x86-64")
  endif()
endif()

# The flags every copy of the kernels shares with the library's own sources.
function(vkml_kernel_flags target)
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${VKML_BLAS_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE ${VKML_BLAS_DEFINITIONS})
  target_compile_options(${target} PRIVATE -Wall -Wextra $<$<BOOL:${VKML_WERROR}>:-Werror>)
  # The library never reads errno after a math call; with errno semantics GCC cannot vectorise a
  # loop that calls std::sqrt (Adam's update ran one sqrtss and two divss per element). Values are
  # unchanged: sqrt is correctly rounded either way.
  target_compile_options(${target} PRIVATE -fno-math-errno)
  # GCC warns that wide vector types change the calling convention when the ISA is not enabled;
  # the kernels never pass them across a function boundary (simd.h).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-psabi)
  endif()
endfunction()

# Adds to `library` a copy of the kernel files among `sources`, compiled with -march=`march` in
# namespace vk::cpu::`isa` and sealed into one object (cmake/vkml_seal_copy.cmake says why and how).
function(vkml_add_kernel_copy library sources isa march)
  set(kernels ${sources})
  list(FILTER kernels INCLUDE REGEX "/backend/cpu/")
  list(FILTER kernels EXCLUDE REGEX "/backend/cpu/(parallel|capability|onednn|cache)\\.cpp$")
  add_library(vkml_cpu_${isa} OBJECT ${kernels})
  vkml_kernel_flags(vkml_cpu_${isa})
  target_compile_definitions(vkml_cpu_${isa} PRIVATE VKML_CPU_ISA=${isa})
  target_compile_options(vkml_cpu_${isa} PRIVATE -march=${march})
  set(sealed ${CMAKE_CURRENT_BINARY_DIR}/vkml_cpu_${isa}.o)
  add_custom_command(OUTPUT ${sealed}
    COMMAND ${CMAKE_COMMAND} -DLD=${CMAKE_LINKER} -DNM=${CMAKE_NM} -DOBJCOPY=${CMAKE_OBJCOPY}
            -DISA=${isa} -DOUT=${sealed} "-DOBJECTS=$<TARGET_OBJECTS:vkml_cpu_${isa}>"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/vkml_seal_copy.cmake
    DEPENDS vkml_cpu_${isa} $<TARGET_OBJECTS:vkml_cpu_${isa}>
            ${CMAKE_CURRENT_SOURCE_DIR}/cmake/vkml_seal_copy.cmake
    COMMENT "vkml: sealing the ${isa} copy of the CPU kernels" VERBATIM)
  set_source_files_properties(${sealed} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(${library} PRIVATE ${sealed})
endfunction()

function(vkml_add_cpu_dispatch library sources)
  if(NOT VKML_HAS_CPU_DISPATCH)
    return()
  endif()
  target_compile_definitions(${library} PRIVATE VKML_CPU_DISPATCH)
  vkml_add_kernel_copy(${library} "${sources}" avx2 x86-64-v3)
  vkml_add_kernel_copy(${library} "${sources}" avx512 x86-64-v4)
endfunction()
