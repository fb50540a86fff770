# vk::distributed (the vkml_distributed library, src/vkml/distributed): data-parallel collectives
# over MPI, built when MPI is found (Open MPI or MPICH from Debian). Without MPI the
# rest of vkml builds as before and vk.distributed.is_available() is False.
# VKML_DISTRIBUTED: AUTO (when MPI is found), ON (MPI required), OFF.
set(VKML_DISTRIBUTED AUTO CACHE STRING "Build vk::distributed over MPI: AUTO, ON or OFF")
set(VKML_HAS_MPI OFF)
# The project is C++ only: MPI's C API through FindMPI's CXX component, without the deprecated
# C++ bindings (libmpi_cxx).
set(MPI_CXX_SKIP_MPICXX TRUE)
if(VKML_DISTRIBUTED STREQUAL "ON")
  find_package(MPI REQUIRED COMPONENTS CXX)
elseif(NOT VKML_DISTRIBUTED STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS CXX)
endif()
if(MPI_CXX_FOUND)
  set(VKML_HAS_MPI ON)
endif()
message(STATUS "vkml: distributed (MPI): ${VKML_HAS_MPI}")

# The library, after the main one's compile settings are known (sanitizers, -march).
function(vkml_add_distributed)
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/vkml/distributed/*.cpp)
  add_library(vkml_distributed ${sources})
  add_library(vkml::distributed ALIAS vkml_distributed)
  set_target_properties(vkml_distributed PROPERTIES EXPORT_NAME distributed)  # installed: the same
  target_link_libraries(vkml_distributed PUBLIC vkml MPI::MPI_CXX)
  # mpi.h from C++ would pull in the deprecated C++ bindings; only the C API is used.
  target_compile_definitions(vkml_distributed PUBLIC OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  target_compile_options(vkml_distributed PRIVATE -Wall -Wextra $<$<BOOL:${VKML_WERROR}>:-Werror>)
  if(VKML_NATIVE)
    target_compile_options(vkml_distributed PRIVATE -march=native)
  endif()
endfunction()
