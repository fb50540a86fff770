// The GEMM runner of the Vulkan backend (shaders/gemm.comp), shared by matmul/addmm (linalg.cpp)
// and conv2d (conv.cpp), and the checks every linalg/conv kernel makes of its tensors.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "vkml/backend/vulkan/context.h"
#include "vkml/core/tensor.h"

namespace vk::vulkan {

// The fields every gemm.comp variant starts its push constants with (std430, uint each).
struct GemmHead {
  uint32_t M = 0, N = 0, K = 0;
  uint32_t k_begin = 0, k_end = 0;              // this pass's slice of K (set by run_gemm)
  uint32_t flags = 0;                           // kGemm* below
  uint32_t nb1 = 1;                             // batch index b = b0 * nb1 + b1
  uint32_t m_base = 0, n_base = 0, b_base = 0;  // this dispatch's first row, column, batch
};
inline constexpr uint32_t kGemmBiasCol = 1, kGemmBiasRow = 2, kGemmAccumulate = 4,
                          kGemmBiasMatrix = 8;

// Runs gemm.comp variant `shader` over M x N x K for `batches` batches with push constants
// `params` (`bytes` of them, starting with `head`, which this fills in per dispatch): dispatches
// as many as the device's workgroup limits need, and K in passes of a bounded length, each later
// pass adding onto C. buffers: C, A, B, bias.
void run_gemm(std::string_view shader, GemmHead& head, const void* params, uint32_t bytes,
              std::span<Buffer* const> buffers, uint64_t batches);

// K per pass (0: the default). Tests shorten it to cover the passes with small products.
void set_gemm_k_pass(int64_t k);
// At most n workgroups per dispatch along each axis (0: the device's limits), as set_gemm_k_pass:
// tests cover the split of big grids into several dispatches with small products.
void set_gemm_grid_limit(uint32_t n);
// Window taps per pass of pooling and col2im (0: the default), as set_gemm_k_pass (conv.cpp).
void set_taps_per_pass(int64_t n);

// DTypeError naming op and the device unless t is float32, or float64 where the device has it.
void check_float(const Tensor& t, std::string_view op);
// The same, int32 and int64 (where the device has shaderInt64) allowed too: matmul, im2col and
// col2im take integer tensors, as on the CPU.
void check_numeric(const Tensor& t, std::string_view op);
// The suffix of t's dtype in shader variants' names: "" (float32), "_f64", "_i32" or "_i64".
std::string_view dtype_suffix(const Tensor& t);
// t's buffer, after checking that the device binds it whole and that every element t reaches
// (from its offset along its strides) has a 32-bit index: SizeError naming op otherwise.
Buffer& checked_buffer(const Tensor& t, std::string_view op);
// SizeError naming op unless v fits a 32-bit signed int (what shaders index with).
int32_t i32(int64_t v, std::string_view op);

}  // namespace vk::vulkan
