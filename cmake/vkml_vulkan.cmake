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
# optim.cpp: the fused optimizer steps
list(APPEND VKML_VULKAN_SHADERS
  "sgd_f32|optim|SGD,T=float" "sgd_f64|optim|SGD,T=double,USE_FLOAT64"
  "adam_f32|optim|ADAM,T=float" "adam_f64|optim|ADAM,T=double,USE_FLOAT64"
  "adadelta_f32|optim|ADADELTA,T=float" "adadelta_f64|optim|ADADELTA,T=double,USE_FLOAT64")

# Shape copies, index and creation (index family): data movement keyed on the element size.
list(APPEND VKML_VULKAN_SHADERS
  "shape_copy_1|shape_copy|ES=1,COPY" "shape_copy_2|shape_copy|ES=2,COPY"
  "shape_copy_4|shape_copy|ES=4,COPY" "shape_copy_8|shape_copy|ES=8,COPY"
  "shape_fill_1|shape_copy|ES=1,FILL" "shape_fill_2|shape_copy|ES=2,FILL"
  "shape_fill_4|shape_copy|ES=4,FILL" "shape_fill_8|shape_copy|ES=8,FILL"
  "index_gather_1_i32|index_gather|ES=1,IDX32" "index_gather_1_i64|index_gather|ES=1,IDX64"
  "index_gather_2_i32|index_gather|ES=2,IDX32" "index_gather_2_i64|index_gather|ES=2,IDX64"
  "index_gather_4_i32|index_gather|ES=4,IDX32" "index_gather_4_i64|index_gather|ES=4,IDX64"
  "index_gather_8_i32|index_gather|ES=8,IDX32" "index_gather_8_i64|index_gather|ES=8,IDX64"
  "index_scatter_f32|index_scatter|F32" "index_scatter_f64|index_scatter|F64"
  "index_scatter_i32|index_scatter|I32" "index_scatter_i64|index_scatter|I64"
  "index_invert|index_invert|INVERT"
  "rand_f32|creation|RAND,F32" "rand_f64|creation|RAND,F64"
  "randint_b8|creation|RANDINT,B8" "randint_i32|creation|RANDINT,I32"
  "randint_i64|creation|RANDINT,I64" "randint_f32|creation|RANDINT,F32"
  "randint_f64|creation|RANDINT,F64"
  "arange_i32|creation|ARANGE,I32" "arange_i64|creation|ARANGE,I64"
  "arange_f32|creation|ARANGE,F32" "arange_f64|creation|ARANGE,F64")
# linalg: GEMM (matmul, addmm, conv2d), im2col/col2im and pooling, float32 and float64
list(APPEND VKML_VULKAN_SHADERS
  "gemm|gemm|" "gemm_f64|gemm|F64" "gemm_conv|gemm|CONV" "gemm_conv_f64|gemm|CONV,F64"
  "im2col|conv|IM2COL" "im2col_f64|conv|IM2COL,F64" "col2im|conv|COL2IM"
  "col2im_f64|conv|COL2IM,F64" "pool_max|pool|MAX" "pool_max_f64|pool|MAX,F64"
  "pool_avg|pool|AVG" "pool_avg_f64|pool|AVG,F64" "pool_max_backward|pool_backward|"
  "pool_max_backward_i32|pool_backward|IDX32" "pool_max_backward_f64|pool_backward|F64"
  "pool_max_backward_f64_i32|pool_backward|F64,IDX32")
# vkgaps: integer matmul, im2col and col2im (the dtypes their CPU kernels take)
list(APPEND VKML_VULKAN_SHADERS
  "gemm_i32|gemm|I32" "gemm_i64|gemm|I64" "im2col_i32|conv|IM2COL,I32" "im2col_i64|conv|IM2COL,I64"
  "col2im_i32|conv|COL2IM,I32" "col2im_i64|conv|COL2IM,I64"
  # float64 softmax family and logsumexp (exp and log by vmath.glsl)
  "softmax_f64|softmax|SOFTMAX,FLOAT64" "log_softmax_f64|softmax|LOG_SOFTMAX,FLOAT64"
  "softmax_backward_f64|softmax|SOFTMAX_BW,FLOAT64"
  "log_softmax_backward_f64|softmax|LOG_BW,FLOAT64"
  "softmax_short_f64|softmax|SOFTMAX,SHORT_ROWS,FLOAT64"
  "log_softmax_short_f64|softmax|LOG_SOFTMAX,SHORT_ROWS,FLOAT64"
  "softmax_backward_short_f64|softmax|SOFTMAX_BW,SHORT_ROWS,FLOAT64"
  "log_softmax_backward_short_f64|softmax|LOG_BW,SHORT_ROWS,FLOAT64"
  "reduce_sumexp_f64|reduce|FLOAT64,OP_SUMEXP" "reduce_lse_finish_f64|reduce_finish|LSE64")
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
list(APPEND VKML_VULKAN_SHADERS  # float64 (logsumexp's two variants: the vkgaps block above)
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

# Sort and scan families (sortscan): per dtype (f32, f64, i32, i64), the sort passes, searchsorted
# and the scans.
foreach(dt IN ITEMS f32 f64 i32 i64)
  set(def_f32 "F32")
  set(def_f64 "FLOAT64")
  set(def_i32 "INT32")
  set(def_i64 "INT64")
  set(d "${def_${dt}}")
  list(APPEND VKML_VULKAN_SHADERS
    "sort_first_${dt}|sort|${d},FIRST" "sort_merge_${dt}|sort|${d}" "sort_finish_${dt}|sort|${d},FINISH"
    "cumsum_${dt}|scan|${d},CUMSUM" "cumprod_${dt}|scan|${d},CUMPROD"
    "cummax_${dt}|scan|${d},CUMMAX" "cummin_${dt}|scan|${d},CUMMIN"
    "searchsorted_${dt}|searchsorted|${d}")
endforeach()
# Recurrent cells (issue #16 item 2: rnn): lstm_cell and its backward, float32 and float64.
list(APPEND VKML_VULKAN_SHADERS
  "lstm_cell_f32|lstm|" "lstm_cell_f64|lstm|FLOAT64"
  "lstm_cell_backward_f32|lstm|BACKWARD" "lstm_cell_backward_f64|lstm|BACKWARD,FLOAT64")
# Solvers (#15 linalg): LU factorization and triangular solves, float32 and float64.
list(APPEND VKML_VULKAN_SHADERS
  "lu_factor_f32|solve|LU" "lu_factor_f64|solve|LU,FLOAT64"
  "cholesky_f32|solve|CHOL" "cholesky_f64|solve|CHOL,FLOAT64"
  "eigh_f32|solve|EIGH" "eigh_f64|solve|EIGH,FLOAT64"
  "svd_f32|solve|SVD" "svd_f64|solve|SVD,FLOAT64"
  "qr_f32|solve|QR" "qr_f64|solve|QR,FLOAT64"
  "triangular_solve_f32|solve|TRSM" "triangular_solve_f64|solve|TRSM,FLOAT64")

# ---- element-wise family: every op in every dtype its CPU kernel takes ----
# A variant is named <op> when all its tensors are float32 (the names above), else
# <op>_<dtypes>, the short names of the output's dtype and the inputs' in order ("add_i64i64i64",
# "eq_b8f64f64"): launch.cpp's variant_name() builds the same. Each combo is those short names
# joined by "-".
set(VKML_DTYPE_CODE_b8 0)
set(VKML_DTYPE_CODE_i32 1)
set(VKML_DTYPE_CODE_i64 2)
set(VKML_DTYPE_CODE_f32 3)
set(VKML_DTYPE_CODE_f64 4)
set(VKML_DTYPE_CODE_f16 5)
set(VKML_DTYPE_CODE_bf16 6)
set(VKML_DTYPE_CODE_u8 7)
set(VKML_DTYPE_CODE_i8 8)
set(VKML_DTYPE_CODE_i16 9)
function(vkml_elementwise_variants op nin defines)
  string(TOUPPER "OP_${op}" op_define)
  foreach(combo IN LISTS ARGN)
    string(REPLACE "-" ";" dts "${combo}")
    set(suffix "")
    set(all_f32 ON)
    set(dt_defines "")
    set(slots DTO DTA DTB DTC)
    foreach(dt IN LISTS dts)
      string(APPEND suffix "${dt}")
      if(NOT dt STREQUAL "f32")
        set(all_f32 OFF)
      endif()
      list(POP_FRONT slots slot)
      list(APPEND dt_defines "${slot}=${VKML_DTYPE_CODE_${dt}}")
    endforeach()
    if(all_f32)
      set(name "${op}")
    else()
      set(name "${op}_${suffix}")
    endif()
    string(REPLACE ";" "," dt_defines "${dt_defines}")
    set(entry "${name}|elementwise|NIN=${nin},${op_define},${dt_defines}")
    if(defines)
      string(APPEND entry ",${defines}")
    endif()
    set(known "${VKML_VULKAN_SHADERS}")
    list(TRANSFORM known REPLACE "\\|.*" "")
    if(NOT name IN_LIST known)
      list(APPEND VKML_VULKAN_SHADERS "${entry}")
    endif()
  endforeach()
  set(VKML_VULKAN_SHADERS "${VKML_VULKAN_SHADERS}" PARENT_SCOPE)
endfunction()
set(vkml_floats f32-f32 f64-f64)
set(vkml_numeric i32-i32 i64-i64 f32-f32 f64-f64)
foreach(op exp log sqrt rsqrt reciprocal tanh sigmoid erf erfc gelu gelu_tanh leaky_relu elu
           softplus hardsigmoid hardswish silu smooth_l1 huber)
  vkml_elementwise_variants(${op} 1 "" ${vkml_floats})
endforeach()
foreach(op sin cos)  # float32 computed in float64; float64 reads 2/pi from a second buffer
  vkml_elementwise_variants(${op} 1 "" f32-f32)
  vkml_elementwise_variants(${op} 2 "" f64-f64-i32)
endforeach()
foreach(op log1p expm1)  # float32 through vmath's float64 exp and log
  vkml_elementwise_variants(${op} 1 "VM_DOUBLE=1" f32-f32)
  vkml_elementwise_variants(${op} 1 "" f64-f64)
endforeach()
# float32 in float32 alone, for a device without shaderFloat64 (elementwise.cpp picks them there)
foreach(op sin cos log1p expm1)
  string(TOUPPER "OP_${op}" op_define)
  list(APPEND VKML_VULKAN_SHADERS "${op}_nof64|elementwise|NIN=1,${op_define},NO_FLOAT64")
endforeach()
list(APPEND VKML_VULKAN_SHADERS "pow_nof64|elementwise|NIN=2,OP_POW,NO_FLOAT64")
foreach(op neg abs sign relu floor ceil round trunc)
  vkml_elementwise_variants(${op} 1 "" ${vkml_numeric})
endforeach()
vkml_elementwise_variants(frac 1 "" f32-f32 f64-f64)
foreach(op add mul maximum minimum)
  vkml_elementwise_variants(${op} 2 "" b8-b8-b8 i32-i32-i32 i64-i64-i64 f32-f32-f32 f64-f64-f64)
endforeach()
vkml_elementwise_variants(sub 2 "" i32-i32-i32 i64-i64-i64 f32-f32-f32 f64-f64-f64)
foreach(op div gelu_backward relu_backward tanh_backward sigmoid_backward leaky_relu_backward
           hardtanh_backward elu_backward softplus_backward hardsigmoid_backward hardswish_backward
           silu_backward smooth_l1_backward huber_backward squared_difference)
  vkml_elementwise_variants(${op} 2 "" f32-f32-f32 f64-f64-f64)
endforeach()
foreach(op floor_divide remainder)
  vkml_elementwise_variants(${op} 2 "FLAG" i32-i32-i32 i64-i64-i64)
  vkml_elementwise_variants(${op} 2 "" f32-f32-f32 f64-f64-f64)
endforeach()
vkml_elementwise_variants(pow 2 "" i32-i32-i32 i64-i64-i64)
vkml_elementwise_variants(pow 2 "VM_DOUBLE=1" f32-f32-f32)
vkml_elementwise_variants(pow 2 "" f64-f64-f64)
foreach(op eq ne lt le gt ge)
  vkml_elementwise_variants(${op} 2 "" b8-b8-b8 b8-i32-i32 b8-i64-i64 b8-f32-f32 b8-f64-f64)
endforeach()
foreach(op bitwise_and bitwise_or bitwise_xor)
  vkml_elementwise_variants(${op} 2 "" b8-b8-b8 i32-i32-i32 i64-i64-i64)
endforeach()
vkml_elementwise_variants(where 3 "" b8-b8-b8-b8 i32-b8-i32-i32 i64-b8-i64-i64 f32-b8-f32-f32
                          f64-b8-f64-f64)
foreach(op lerp addcmul addcdiv)  # the pointwise family (#18)
  vkml_elementwise_variants(${op} 3 "" f32-f32-f32-f32 f64-f64-f64-f64)
endforeach()
vkml_elementwise_variants(clamp 1 "" ${vkml_numeric})
vkml_elementwise_variants(fill 0 "" b8 i32 i64 f32 f64)
foreach(to b8 i32 i64 f32 f64)
  foreach(from b8 i32 i64 f32 f64)
    vkml_elementwise_variants(copy 1 "" ${to}-${from})
  endforeach()
endforeach()
# The narrow dtypes (#19 item 7), each to and from the dtype it computes in: cast.cpp chains
# these with the copies above for every other pair.
foreach(narrow f16 bf16)
  vkml_elementwise_variants(copy 1 "" ${narrow}-f32 f32-${narrow})
endforeach()
foreach(narrow u8 i8 i16)
  vkml_elementwise_variants(copy 1 "" ${narrow}-i32 i32-${narrow})
endforeach()
# ---- end of the element-wise family ----

# ---- math ops (#15): shaders/math.comp, its variants named as the element-wise family's ----
foreach(op tan asin acos atan sinh cosh asinh acosh atanh lgamma digamma polygamma erfinv log2 log10
           exp2)
  string(TOUPPER "OP_${op}" op_define)
  list(APPEND VKML_VULKAN_SHADERS "${op}|math|NIN=1,${op_define}")
  if(NOT op STREQUAL "tan")
    list(APPEND VKML_VULKAN_SHADERS "${op}_f64f64|math|NIN=1,${op_define},DTO=4")
  endif()
endforeach()
# float32 in float32 alone, for a device without shaderFloat64 (math.cpp picks them there)
foreach(op tan asin acos atan sinh cosh asinh acosh atanh lgamma digamma polygamma erfinv log2 log10
           exp2)
  string(TOUPPER "OP_${op}" op_define)
  list(APPEND VKML_VULKAN_SHADERS "${op}_nof64|math|NIN=1,${op_define},NO_FLOAT64")
endforeach()
list(APPEND VKML_VULKAN_SHADERS "atan2_nof64|math|NIN=2,OP_ATAN2,NO_FLOAT64"
  "fmod_nof64|math|NIN=2,OP_FMOD,NO_FLOAT64")
# integer bits and steps (#15): int32 and int64; nextafter float32 (no float64 in it) and float64
foreach(op bitwise_left_shift bitwise_right_shift gcd lcm)
  string(TOUPPER "OP_${op}" op_define)
  list(APPEND VKML_VULKAN_SHADERS "${op}_i32i32i32|math|NIN=2,${op_define},DTO=1"
    "${op}_i64i64i64|math|NIN=2,${op_define},DTO=2")
endforeach()
list(APPEND VKML_VULKAN_SHADERS "nextafter|math|NIN=2,OP_NEXTAFTER,NO_FLOAT64"
  "nextafter_f64f64f64|math|NIN=2,OP_NEXTAFTER,DTO=4")
list(APPEND VKML_VULKAN_SHADERS
  "tan_f64f64i32|math|NIN=2,OP_TAN,DTO=4,DTB=1"  # float64 reads 2/pi from a second buffer
  "atan2|math|NIN=2,OP_ATAN2" "atan2_f64f64f64|math|NIN=2,OP_ATAN2,DTO=4"
  "fmod|math|NIN=2,OP_FMOD" "fmod_f64f64f64|math|NIN=2,OP_FMOD,DTO=4"
  "fmod_i32i32i32|math|NIN=2,OP_FMOD,DTO=1,FLAG" "fmod_i64i64i64|math|NIN=2,OP_FMOD,DTO=2,FLAG")
# ---- end of math ops (#15) ----

# ---- special functions (#15): shaders/special.comp; float32 computed in double, float64, and
# float32 in float alone (_nof64) for a device without shaderFloat64 ----
foreach(op i0 i0e i1 i1e)
  string(TOUPPER "OP_${op}" op_define)
  list(APPEND VKML_VULKAN_SHADERS "${op}|special|NIN=1,${op_define}"
    "${op}_f64f64|special|NIN=1,${op_define},DTO=4"
    "${op}_nof64|special|NIN=1,${op_define},NO_FLOAT64")
endforeach()
foreach(op igamma igammac standard_gamma_grad)
  string(TOUPPER "OP_${op}" op_define)
  list(APPEND VKML_VULKAN_SHADERS "${op}|special|NIN=2,${op_define}"
    "${op}_f64f64f64|special|NIN=2,${op_define},DTO=4"
    "${op}_nof64|special|NIN=2,${op_define},NO_FLOAT64")
endforeach()
# ---- end of special functions (#15) ----

function(vkml_add_vulkan_backend target)
  set(src_dir ${CMAKE_CURRENT_SOURCE_DIR}/src/vkml/backend/vulkan/shaders)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/vulkan_shaders)
  file(MAKE_DIRECTORY ${out_dir})
  set(spvs "")
  set(names "")
  file(GLOB glsl_includes CONFIGURE_DEPENDS ${src_dir}/*.glsl)  # what shaders #include
  foreach(variant IN LISTS VKML_VULKAN_SHADERS)
    string(REPLACE "|" ";" parts "${variant}")
    list(GET parts 0 name)
    list(GET parts 1 source)
    list(GET parts 2 defines)
    string(REPLACE "," ";" defines "${defines}")
    list(TRANSFORM defines PREPEND "-D")
    add_custom_command(
      OUTPUT ${out_dir}/${name}.spv
      COMMAND ${VKML_GLSLC} --target-env=vulkan1.1 -O ${defines} -I ${src_dir}
              -o ${out_dir}/${name}.spv ${src_dir}/${source}.comp
      DEPENDS ${src_dir}/${source}.comp ${glsl_includes}
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
