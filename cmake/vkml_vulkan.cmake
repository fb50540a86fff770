# The Vulkan backend (src/vkml/backend/vulkan, issue #14). VKML_VULKAN=AUTO (the default) builds it
# when the Vulkan headers and glslc are found, ON requires them, OFF leaves it out. The library
# never links libvulkan: it opens libvulkan.so.1 at run time, so a build with the backend still
# imports and runs on machines without Vulkan (the device then reports why it is unavailable).
set(VKML_VULKAN AUTO CACHE STRING "Build the Vulkan backend: AUTO, ON or OFF")
set(VKML_HAS_VULKAN OFF)
if(NOT VKML_VULKAN STREQUAL "OFF")
  find_path(VKML_VULKAN_INCLUDE_DIR vulkan/vulkan.h)
  find_program(VKML_GLSLC glslc)
  if(VKML_VULKAN_INCLUDE_DIR AND VKML_GLSLC)
    set(VKML_HAS_VULKAN ON)
  elseif(VKML_VULKAN STREQUAL "ON")
    message(FATAL_ERROR "vkml: VKML_VULKAN=ON needs the Vulkan headers and glslc "
                        "(apt-get install libvulkan-dev glslc)")
  endif()
endif()
message(STATUS "vkml: Vulkan backend: ${VKML_HAS_VULKAN}")

# The compute shaders, each variant as name|source|defines (comma separated): glslc compiles them
# at build time and embed_spirv.cmake writes them into one generated source (vulkan_shaders.cpp).
set(VKML_VULKAN_SHADERS
  "fill|elementwise|NIN=0,OP_FILL" "copy|elementwise|NIN=1,OP_COPY"
  "neg|elementwise|NIN=1,OP_NEG" "exp|elementwise|NIN=1,OP_EXP" "log|elementwise|NIN=1,OP_LOG"
  "sqrt|elementwise|NIN=1,OP_SQRT" "rsqrt|elementwise|NIN=1,OP_RSQRT"
  "reciprocal|elementwise|NIN=1,OP_RECIPROCAL" "abs|elementwise|NIN=1,OP_ABS"
  "sign|elementwise|NIN=1,OP_SIGN" "sin|elementwise|NIN=1,OP_SIN" "cos|elementwise|NIN=1,OP_COS"
  "tanh|elementwise|NIN=1,OP_TANH" "sigmoid|elementwise|NIN=1,OP_SIGMOID"
  "add|elementwise|NIN=2,OP_ADD" "sub|elementwise|NIN=2,OP_SUB" "mul|elementwise|NIN=2,OP_MUL"
  "div|elementwise|NIN=2,OP_DIV" "reduce|reduce|")
# Reductions, softmax and norms (reduction engineer).
list(APPEND VKML_VULKAN_SHADERS
  "reduce_prod|reduce|OP_PROD" "reduce_max|reduce|OP_MAX" "reduce_min|reduce|OP_MIN"
  "reduce_argmax|reduce|OP_MAX,WITH_INDEX" "reduce_argmin|reduce|OP_MIN,WITH_INDEX"
  "reduce_argmax_merge|reduce|OP_MAX,WITH_INDEX,MERGE_INDEX"
  "reduce_argmin_merge|reduce|OP_MIN,WITH_INDEX,MERGE_INDEX"
  "reduce_sumexp|reduce|OP_SUMEXP" "reduce_sqdev|reduce|OP_SQDEV"
  "reduce_lse_finish|reduce_finish|"
  "softmax|softmax|SOFTMAX" "log_softmax|softmax|LOG_SOFTMAX"
  "softmax_backward|softmax|SOFTMAX_BW" "log_softmax_backward|softmax|LOG_BW"
  "softmax_short|softmax|SOFTMAX,SHORT_ROWS" "log_softmax_short|softmax|LOG_SOFTMAX,SHORT_ROWS"
  "softmax_backward_short|softmax|SOFTMAX_BW,SHORT_ROWS"
  "log_softmax_backward_short|softmax|LOG_BW,SHORT_ROWS"
  "norm_forward|norm|FORWARD" "norm_backward|norm|BACKWARD" "norm_param|norm_param|"
  "norm_forward_short|norm|FORWARD,SHORT_ROWS" "norm_backward_short|norm|BACKWARD,SHORT_ROWS"
  "norm_forward_f64|norm|FORWARD,FLOAT64" "norm_backward_f64|norm|BACKWARD,FLOAT64"
  "norm_forward_short_f64|norm|FORWARD,SHORT_ROWS,FLOAT64"
  "norm_backward_short_f64|norm|BACKWARD,SHORT_ROWS,FLOAT64" "norm_param_f64|norm_param|FLOAT64")
foreach(bits IN ITEMS 32 64)  # the integer reductions: sum, prod and the extremes
  list(APPEND VKML_VULKAN_SHADERS
    "reduce_i${bits}|reduce|INT${bits}" "reduce_prod_i${bits}|reduce|INT${bits},OP_PROD"
    "reduce_max_i${bits}|reduce|INT${bits},OP_MAX" "reduce_min_i${bits}|reduce|INT${bits},OP_MIN"
    "reduce_argmax_i${bits}|reduce|INT${bits},OP_MAX,WITH_INDEX"
    "reduce_argmin_i${bits}|reduce|INT${bits},OP_MIN,WITH_INDEX"
    "reduce_argmax_merge_i${bits}|reduce|INT${bits},OP_MAX,WITH_INDEX,MERGE_INDEX"
    "reduce_argmin_merge_i${bits}|reduce|INT${bits},OP_MIN,WITH_INDEX,MERGE_INDEX")
endforeach()
list(APPEND VKML_VULKAN_SHADERS  # float64: all but logsumexp
  "reduce_f64|reduce|FLOAT64" "reduce_prod_f64|reduce|FLOAT64,OP_PROD"
  "reduce_max_f64|reduce|FLOAT64,OP_MAX" "reduce_min_f64|reduce|FLOAT64,OP_MIN"
  "reduce_argmax_f64|reduce|FLOAT64,OP_MAX,WITH_INDEX"
  "reduce_argmin_f64|reduce|FLOAT64,OP_MIN,WITH_INDEX"
  "reduce_argmax_merge_f64|reduce|FLOAT64,OP_MAX,WITH_INDEX,MERGE_INDEX"
  "reduce_argmin_merge_f64|reduce|FLOAT64,OP_MIN,WITH_INDEX,MERGE_INDEX"
  "reduce_sqdev_f64|reduce|FLOAT64,OP_SQDEV" "reduce_divide_f64|reduce_finish|DIVIDE64")
list(APPEND VKML_VULKAN_SHADERS  # bool: the extremes
  "reduce_max_b8|reduce|BOOL,OP_MAX" "reduce_min_b8|reduce|BOOL,OP_MIN"
  "reduce_argmax_b8|reduce|BOOL,OP_MAX,WITH_INDEX" "reduce_argmin_b8|reduce|BOOL,OP_MIN,WITH_INDEX"
  "reduce_argmax_merge_b8|reduce|BOOL,OP_MAX,WITH_INDEX,MERGE_INDEX"
  "reduce_argmin_merge_b8|reduce|BOOL,OP_MIN,WITH_INDEX,MERGE_INDEX")

function(vkml_add_vulkan_backend target)
  set(src_dir ${CMAKE_CURRENT_SOURCE_DIR}/src/vkml/backend/vulkan/shaders)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/vulkan_shaders)
  file(MAKE_DIRECTORY ${out_dir})
  set(spvs "")
  set(names "")
  foreach(variant IN LISTS VKML_VULKAN_SHADERS)
    string(REPLACE "|" ";" parts "${variant}")
    list(GET parts 0 name)
    list(GET parts 1 source)
    list(GET parts 2 defines)
    string(REPLACE "," ";" defines "${defines}")
    list(TRANSFORM defines PREPEND "-D")
    add_custom_command(
      OUTPUT ${out_dir}/${name}.spv
      COMMAND ${VKML_GLSLC} --target-env=vulkan1.1 -O ${defines}
              -o ${out_dir}/${name}.spv ${src_dir}/${source}.comp
      DEPENDS ${src_dir}/${source}.comp
      COMMENT "vkml: glslc ${name}.spv" VERBATIM)
    list(APPEND spvs ${out_dir}/${name}.spv)
    list(APPEND names ${name})
  endforeach()
  string(REPLACE ";" "," names_arg "${names}")
  set(generated ${CMAKE_CURRENT_BINARY_DIR}/vulkan_shaders.cpp)
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -DOUT=${generated} -DDIR=${out_dir} -DNAMES=${names_arg}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPENDS ${spvs} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_spirv.cmake
    COMMENT "vkml: embedding the SPIR-V shaders" VERBATIM)
  target_sources(${target} PRIVATE ${generated})
  # Vulkan's create-info structs are C structs meant to be partly initialised (the rest zero):
  # designated initialisers name the fields that matter, which GCC's -Wextra would flag.
  file(GLOB vulkan_sources ${CMAKE_CURRENT_SOURCE_DIR}/src/vkml/backend/vulkan/*.cpp)
  set_source_files_properties(${vulkan_sources} PROPERTIES COMPILE_OPTIONS
                              -Wno-missing-field-initializers)
  target_include_directories(${target} PRIVATE ${VKML_VULKAN_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE VKML_HAS_VULKAN=1)
  target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
  set(VKML_VULKAN_SPIRV ${spvs} PARENT_SCOPE)
endfunction()
