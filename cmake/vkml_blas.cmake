# Chooses the BLAS that vkml's matmul/conv call (single-threaded; vkml drives it from its own pool).
#
#   VKML_BLAS=auto              the system's OpenBLAS (Debian: libopenblas-dev) when present, else
#                               the scipy-openblas32 wheel of the Python that builds vkml
#   VKML_BLAS=system            the system's OpenBLAS, or a configure error (the sanitizer builds)
#   VKML_BLAS=scipy-openblas32  the wheel's OpenBLAS (`pip install .` and `make`'s Release build:
#                               one BLAS on every machine; pyproject.toml says why)
#
# Sets VKML_BLAS_LIBRARIES, VKML_BLAS_INCLUDE_DIR, VKML_BLAS_DEFINITIONS and VKML_BLAS_FROM
# ("system" or "scipy-openblas32"); for the wheel also VKML_BLAS_LIB_DIR (the extension's rpath).

set(VKML_BLAS "auto" CACHE STRING "BLAS to use: auto, system or scipy-openblas32")
set_property(CACHE VKML_BLAS PROPERTY STRINGS auto system scipy-openblas32)
if(NOT VKML_BLAS MATCHES "^(auto|system|scipy-openblas32)$")
  message(FATAL_ERROR "vkml: VKML_BLAS must be auto, system or scipy-openblas32, not '${VKML_BLAS}'")
endif()

if(NOT VKML_BLAS STREQUAL "scipy-openblas32")
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS QUIET)
  find_path(VKML_SYSTEM_CBLAS_INCLUDE_DIR cblas.h
    PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/aarch64-linux-gnu/openblas-pthread
          /usr/include/openblas /usr/include)
  if(BLAS_FOUND AND VKML_SYSTEM_CBLAS_INCLUDE_DIR)
    set(VKML_BLAS_FROM "system")
    set(VKML_BLAS_LIBRARIES ${BLAS_LIBRARIES})
    set(VKML_BLAS_INCLUDE_DIR ${VKML_SYSTEM_CBLAS_INCLUDE_DIR})
    set(VKML_BLAS_DEFINITIONS "")
  elseif(VKML_BLAS STREQUAL "system")
    message(FATAL_ERROR "vkml: VKML_BLAS=system but no OpenBLAS with cblas.h was found "
                        "(Debian: apt-get install libopenblas-dev)")
  endif()
endif()

if(NOT VKML_BLAS_FROM)
  # The wheel's library exports every symbol with a `scipy_` prefix (scipy_cblas_sgemm, ...);
  # VKML_BLAS_SCIPY_PREFIX tells backend/cpu/linalg.cpp to call those names.
  if(NOT Python_EXECUTABLE)
    find_package(Python 3.9 COMPONENTS Interpreter)
  endif()
  set(_vkml_probe "import scipy_openblas32 as s, os\nprint(s.get_include_dir())\nprint(os.path.join(s.get_lib_dir(), 'lib' + s.get_library() + '.so'))")
  if(Python_EXECUTABLE)
    execute_process(COMMAND "${Python_EXECUTABLE}" -c "${_vkml_probe}"
      RESULT_VARIABLE _vkml_probe_rc OUTPUT_VARIABLE _vkml_probe_out ERROR_QUIET
      OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  if(NOT Python_EXECUTABLE OR NOT _vkml_probe_rc EQUAL 0)
    message(FATAL_ERROR "vkml: no BLAS found. Install the system's OpenBLAS (Debian: apt-get "
                        "install libopenblas-dev) or the wheel (pip install scipy-openblas32) for "
                        "${Python_EXECUTABLE}")
  endif()
  string(REPLACE "\n" ";" _vkml_probe_out "${_vkml_probe_out}")
  list(GET _vkml_probe_out 0 VKML_BLAS_INCLUDE_DIR)
  list(GET _vkml_probe_out 1 VKML_BLAS_LIBRARIES)
  get_filename_component(VKML_BLAS_LIB_DIR "${VKML_BLAS_LIBRARIES}" DIRECTORY)
  set(VKML_BLAS_FROM "scipy-openblas32")
  set(VKML_BLAS_DEFINITIONS VKML_BLAS_SCIPY_PREFIX)
endif()
message(STATUS "vkml: BLAS from ${VKML_BLAS_FROM}: ${VKML_BLAS_LIBRARIES}")
