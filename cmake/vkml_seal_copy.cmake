# Seals one copy of the CPU kernels (cmake/vkml_cpu_dispatch.cmake) into one object whose only
# global functions are its own, those of namespace vk::cpu::<ISA>.
#
# Why: a copy compiled with -march=x86-64-v3 also compiles every inline function and template it
# uses from outside its namespace (std::vector's, vk::Error's destructor, ...), as weak definitions
# that the generic copy and the rest of the library define under the same names; the linker keeps
# one of each, and when it keeps the wide copy's, generic code runs AVX2 or AVX-512 instructions:
# SIGILL on a CPU without them. So the copy's objects are linked into one (ld -r, their COMDAT
# groups resolved among themselves and dissolved), and every function, vtable and typeinfo it
# defines outside its namespace is made local to it. Data stays global and becomes weak: a static
# variable of an inline function, or an inline variable, must remain one object for every copy
# (out of its COMDAT group, a global definition would clash with the generic copy's).
#
# cmake -DLD=ld -DNM=nm -DOBJCOPY=objcopy -DISA=avx2 -DOUT=sealed.o -DOBJECTS="a.o;b.o" -P this
string(LENGTH "${ISA}" isa_length)
set(own "^_ZN2vk(3cpu|5vmath)${isa_length}${ISA}")  # vk::cpu::<ISA>::..., vk::vmath::<ISA>::...

execute_process(COMMAND ${LD} -r --force-group-allocation -o ${OUT}.merged ${OBJECTS}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "vkml: ld -r of the ${ISA} kernels failed")
endif()

# The defined global symbols, one "name type value size" line each.
function(global_symbols object result)
  execute_process(COMMAND ${NM} --defined-only --extern-only --format=posix ${object}
                  OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vkml: nm ${object} failed")
  endif()
  string(REPLACE "\n" ";" lines "${listing}")
  set(${result} "${lines}" PARENT_SCOPE)
endfunction()

global_symbols(${OUT}.merged lines)
set(localize "")
set(weaken "")
foreach(line IN LISTS lines)
  if(NOT line MATCHES "^([^ ]+) ([A-Za-z]) ")
    continue()
  endif()
  set(name ${CMAKE_MATCH_1})
  set(type ${CMAKE_MATCH_2})
  if(name MATCHES "${own}")
    continue()
  endif()
  # T, W, i: code; _ZTV/_ZTT/_ZTC/_ZTI/_ZTS: vtables (which point at this copy's code) and typeinfo.
  if(type MATCHES "^[TWi]$" OR name MATCHES "^_ZT[VTCIS]")
    string(APPEND localize "${name}\n")
  else()
    string(APPEND weaken "${name}\n")
  endif()
endforeach()
file(WRITE ${OUT}.localize "${localize}")
file(WRITE ${OUT}.weaken "${weaken}")
execute_process(COMMAND ${OBJCOPY} --localize-symbols=${OUT}.localize
                        --weaken-symbols=${OUT}.weaken ${OUT}.merged ${OUT}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "vkml: objcopy of the ${ISA} kernels failed")
endif()

# What is left global: the copy's own functions, and data.
global_symbols(${OUT} lines)
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ ]+) ([TWi]) " AND NOT CMAKE_MATCH_1 MATCHES "${own}")
    message(FATAL_ERROR "vkml: ${CMAKE_MATCH_1} is still global in the sealed ${ISA} kernels")
  endif()
endforeach()
file(REMOVE ${OUT}.merged ${OUT}.localize ${OUT}.weaken)
