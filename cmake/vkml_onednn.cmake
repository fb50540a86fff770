# oneDNN, for bfloat16 matrix products on AVX512-BF16 / AMX hardware (src/vkml/backend/cpu/onednn.h).
#   VKML_ONEDNN=auto  Debian's libdnnl-dev (oneDNN 2.6, OpenMP runtime) when installed, as `make`
#                     does; without it bfloat16 products widen to float32 and run through sgemm
#   VKML_ONEDNN=ON    oneDNN or a configure error;  OFF: never
# Linked by file path (as the BLAS), so an installed vkml needs no oneDNN CMake package.
# Sets VKML_HAS_ONEDNN and VKML_ONEDNN_LIBRARIES.
set(VKML_ONEDNN "auto" CACHE STRING "oneDNN for bfloat16 GEMM: auto, ON or OFF")
set_property(CACHE VKML_ONEDNN PROPERTY STRINGS auto ON OFF)
set(VKML_HAS_ONEDNN OFF)
set(VKML_ONEDNN_LIBRARIES "")
if(NOT VKML_ONEDNN STREQUAL "OFF")
  find_library(VKML_DNNL_LIBRARY dnnl)
  find_path(VKML_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
  # Debian's oneDNN runs its kernels under GNU OpenMP; onednn.cpp pins each calling thread to one
  # OpenMP thread, which must be libgomp's setting (clang's libomp would set its own).
  find_package(OpenMP COMPONENTS CXX QUIET)
  if(VKML_DNNL_LIBRARY AND VKML_DNNL_INCLUDE_DIR AND "gomp" IN_LIST OpenMP_CXX_LIB_NAMES)
    set(VKML_HAS_ONEDNN ON)
    set(VKML_ONEDNN_LIBRARIES ${VKML_DNNL_LIBRARY} ${OpenMP_CXX_LIBRARIES})
    message(STATUS "vkml: bfloat16 GEMM through oneDNN: ${VKML_DNNL_LIBRARY}")
  elseif(VKML_ONEDNN STREQUAL "ON")
    message(FATAL_ERROR "vkml: VKML_ONEDNN=ON but oneDNN or OpenMP was not found "
                        "(Debian: apt-get install libdnnl-dev)")
  else()
    message(STATUS "vkml: no oneDNN (apt-get install libdnnl-dev): bfloat16 products widen to sgemm")
  endif()
endif()

# Adds oneDNN to `library` (the one source that uses it reads VKML_HAVE_ONEDNN).
function(vkml_add_onednn library)
  if(VKML_HAS_ONEDNN)
    target_compile_definitions(${library} PRIVATE VKML_HAVE_ONEDNN)
    target_include_directories(${library} SYSTEM PRIVATE ${VKML_DNNL_INCLUDE_DIR})
    target_link_libraries(${library} PRIVATE ${VKML_ONEDNN_LIBRARIES})
  endif()
endfunction()
