# Fails when an op family's files do not mirror each other by name (ctest: families_mirror). Each
# ops/X.cpp that defines add_X_ops has its kernels in backend/cpu/X.cpp, its sweep cases in
# tests/cpp/cases_X.cpp and its bindings in python/src/bind_X.cpp. custom and device_ops are the
# exceptions: their kernels run on every device (OpDef::any_device), so no backend has a file
# for them.
# Usage: cmake -DROOT=<repo> -P check_mirror.cmake
set(exempt custom device_ops)
file(GLOB op_files RELATIVE ${ROOT}/src/vkml/ops ${ROOT}/src/vkml/ops/*.cpp)
set(missing "")
foreach(file IN LISTS op_files)
  string(REGEX REPLACE "\\.cpp$" "" family "${file}")
  file(STRINGS ${ROOT}/src/vkml/ops/${file} defines REGEX "^void add_${family}_ops\\(OpList& ops\\)")
  if(NOT defines OR family IN_LIST exempt)
    continue()
  endif()
  foreach(mirror src/vkml/backend/cpu/${family}.cpp tests/cpp/cases_${family}.cpp
                 python/src/bind_${family}.cpp)
    if(NOT EXISTS ${ROOT}/${mirror})
      list(APPEND missing "ops/${file} has no ${mirror}")
    endif()
  endforeach()
endforeach()
if(missing)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "op families do not mirror each other:\n  ${text}")
endif()
list(LENGTH op_files n)
message(STATUS "op families mirror each other (${n} files in ops/)")
