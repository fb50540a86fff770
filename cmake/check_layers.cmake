# Fails when a file includes a layer above its own (ctest: layers_hold). The layers, each using
# only those before it: core, backend/<device>, ops, autograd, then nn / optim / io (siblings,
# which do not use one another). A backend folder uses core and itself; backend/builtin.cpp,
# the list of backends compiled in, is the one file that names them all.
# Usage: cmake -DSRC=<repo>/src/vkml -P check_layers.cmake
set(allowed_core core)
set(allowed_backend core)
set(allowed_ops core ops)
set(allowed_autograd core ops autograd)
set(allowed_nn core ops autograd nn)
set(allowed_optim core ops autograd optim)
set(allowed_io core ops autograd io)

file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/*.h ${SRC}/*.cpp)
set(violations "")
foreach(file IN LISTS files)
  string(REGEX MATCH "^[a-z_]+" layer "${file}")
  if(NOT DEFINED allowed_${layer})
    continue()  # vkml.h: the umbrella header includes everything
  endif()
  string(REGEX MATCH "^backend/([a-z_]+)/" in_backend "${file}")
  set(device "${CMAKE_MATCH_1}")
  file(STRINGS ${SRC}/${file} includes REGEX "^#include \"vkml/")
  foreach(line IN LISTS includes)
    string(REGEX MATCH "\"vkml/([a-z_]+)/?([a-z_]*)" _ "${line}")
    set(target "${CMAKE_MATCH_1}")
    set(target_device "${CMAKE_MATCH_2}")
    set(ok FALSE)
    if(target IN_LIST allowed_${layer})
      set(ok TRUE)
    elseif(layer STREQUAL "backend" AND target STREQUAL "backend")
      # a device's folder includes only itself; the backend root (builtin.cpp) any device
      if(device STREQUAL "" OR device STREQUAL target_device)
        set(ok TRUE)
      endif()
    endif()
    if(NOT ok)
      string(APPEND violations "  ${file}: ${line}\n")
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "includes that cross the layers (see README, Layout):\n${violations}")
endif()
