// Matrix products on the Vulkan device: matmul and addmm through the tiled GEMM shader
// (shaders/gemm.comp), which reads strided, transposed and broadcast operands in place. float32,
// float64 (with shaderFloat64), and for matmul int32 and int64 (with shaderInt64), wrapping as the
// CPU's; addmm takes floating tensors only (its op's rule), as on the CPU.
#include "vkml/backend/vulkan/linalg.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>
#include <vector>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

constexpr int64_t kTile = 64;  // rows and columns of C per workgroup (gemm.comp's TILE)
// K per pass: 512 slices of gemm.comp's loop over K (TK = 16 deep), 33 loop iterations each:
// about 17000 in all, where lavapipe stops a shader after 65535.
constexpr int64_t kDefaultKPass = 8192;
std::atomic<int64_t> k_pass{kDefaultKPass};
std::atomic<uint32_t> grid_limit{0};

// The workgroups one dispatch may have along `axis`.
int64_t max_groups(const Context& ctx, int axis) {
  const uint32_t limit = grid_limit.load();
  return limit ? std::min(limit, ctx.max_groups(axis)) : ctx.max_groups(axis);
}

// Push constants of gemm.comp without CONV, laid out as its Params block (std430).
struct MatrixParams {
  GemmHead head;
  int32_t a_off = 0, a_rs = 0, a_cs = 0, a_s0 = 0, a_s1 = 0;
  int32_t b_off = 0, b_rs = 0, b_cs = 0, b_s0 = 0, b_s1 = 0;
  int32_t c_off = 0, c_rs = 0, c_s0 = 0, c_s1 = 0;
  int32_t bias_off = 0, bias_s = 0, bias_sb = 0;
};
static_assert(sizeof(MatrixParams) == 108, "gemm.comp's push constants");

// One batch dim of a product: its extent and the element strides of A, B and C along it.
struct BatchDim {
  int64_t size, sa, sb, sc;
};

// The batch dims of A and B (equal shapes) and the contiguous C, without size-1 dims and with
// neighbours merged where all three step through them as through one.
std::vector<BatchDim> batch_dims(const Tensor& A, const Tensor& B, const Tensor& C) {
  std::vector<BatchDim> dims;
  for (int64_t d = 0; d + 2 < A.ndim(); ++d) {
    const BatchDim bd{A.shape()[d], A.strides()[d], B.strides()[d], C.strides()[d]};
    if (bd.size == 1) continue;
    if (!dims.empty()) {
      BatchDim& last = dims.back();
      if (last.sa == bd.sa * bd.size && last.sb == bd.sb * bd.size && last.sc == bd.sc * bd.size) {
        last = {last.size * bd.size, bd.sa, bd.sb, bd.sc};
        continue;
      }
    }
    dims.push_back(bd);
  }
  return dims;
}

// gemm.comp's parameters for C = A @ B (+ bias on every row) but the batch strides and offsets:
// M, N, K, the row and column strides, the bias.
MatrixParams matrix_params(const Tensor& A, const Tensor& B, const Tensor* bias,
                           std::string_view op) {
  const int64_t nd = A.ndim();
  MatrixParams p;
  p.head.M = static_cast<uint32_t>(i32(A.shape()[nd - 2], op));
  p.head.K = static_cast<uint32_t>(i32(A.shape()[nd - 1], op));
  p.head.N = static_cast<uint32_t>(i32(B.shape()[nd - 1], op));
  p.a_rs = i32(A.strides()[nd - 2], op);
  p.a_cs = i32(A.strides()[nd - 1], op);
  p.b_rs = i32(B.strides()[nd - 2], op);
  p.b_cs = i32(B.strides()[nd - 1], op);
  p.c_rs = static_cast<int32_t>(p.head.N);
  if (bias) {  // (N) on every row, or (M, N) of a 2-D product (bias_sb its row stride)
    p.head.flags = bias->ndim() == 1 ? kGemmBiasCol : kGemmBiasMatrix;
    p.bias_off = i32(bias->offset(), op);
    p.bias_s = i32(bias->strides().back(), op);
    if (bias->ndim() == 2) p.bias_sb = i32(bias->strides()[0], op);
  }
  return p;
}

// Runs p over the batch dims of A, B and C: the last two in the shader (b0, b1), any before them
// one run_gemm each, at their offsets.
void run_batches(MatrixParams& p, const Tensor& A, const Tensor& B, const Tensor& C,
                 std::span<Buffer* const> buffers, std::string_view op) {
  const std::vector<BatchDim> dims = batch_dims(A, B, C);
  const size_t inner = std::min<size_t>(dims.size(), 2), outer = dims.size() - inner;
  const BatchDim none{1, 0, 0, 0};
  const BatchDim d0 = inner == 2 ? dims[outer] : none, d1 = inner >= 1 ? dims.back() : none;
  p.head.nb1 = static_cast<uint32_t>(d1.size);
  p.a_s0 = i32(d0.sa, op), p.a_s1 = i32(d1.sa, op);
  p.b_s0 = i32(d0.sb, op), p.b_s1 = i32(d1.sb, op);
  p.c_s0 = i32(d0.sc, op), p.c_s1 = i32(d1.sc, op);
  int64_t n_outer = 1;
  for (size_t d = 0; d < outer; ++d) n_outer *= dims[d].size;
  const std::string shader = "gemm" + std::string(dtype_suffix(C));
  for (int64_t o = 0; o < n_outer; ++o) {
    int64_t ao = A.offset(), bo = B.offset(), co = 0;
    for (int64_t d = static_cast<int64_t>(outer) - 1, rest = o; d >= 0; --d) {
      const int64_t idx = rest % dims[d].size;
      rest /= dims[d].size;
      ao += idx * dims[d].sa, bo += idx * dims[d].sb, co += idx * dims[d].sc;
    }
    p.a_off = i32(ao, op), p.b_off = i32(bo, op), p.c_off = i32(co, op);
    run_gemm(shader, p.head, &p, sizeof(p), buffers, uint64_t(d0.size * d1.size));
  }
}

// C (B..., M, N) = A @ B (+ bias on every row) for A (B..., M, K), B (B..., K, N).
Tensor product(const Tensor& A, const Tensor& B, const Tensor* bias, const Meta& m,
               std::string_view op) {
  check_numeric(A, op);
  check_numeric(B, op);
  if (bias) check_float(*bias, op);
  Tensor C = Tensor::empty(m.shape, m.dtype, m.device);
  if (C.numel() == 0) return C;
  MatrixParams p = matrix_params(A, B, bias, op);
  Buffer* buffers[] = {&checked_buffer(C, op), &checked_buffer(A, op), &checked_buffer(B, op),
                       &checked_buffer(bias ? *bias : A, op)};
  run_batches(p, A, B, C, buffers, op);
  return C;
}

uint32_t groups_for(int64_t n, int64_t per) { return static_cast<uint32_t>((n + per - 1) / per); }

}  // namespace

void set_gemm_k_pass(int64_t k) { k_pass = k > 0 ? k : kDefaultKPass; }
void set_gemm_grid_limit(uint32_t n) { grid_limit = n; }

void check_float(const Tensor& t, std::string_view op) {
  if (t.dtype() == DType::Float64) {
    VK_CHECK(context().has_float64(), DTypeError, op, ": the vulkan device ",
             context().device_name(), " has no float64 (move the tensors to the cpu)");
    return;
  }
  VK_CHECK(t.dtype() == DType::Float32, DTypeError, op,
           ": the vulkan device computes float32 and float64 tensors here, got ",
           dtype_name(t.dtype()), " (move it to the cpu, or cast it)");
}

void check_numeric(const Tensor& t, std::string_view op) {
  if (t.dtype() == DType::Int32) return;
  if (t.dtype() == DType::Int64) {
    VK_CHECK(context().has_int64(), DTypeError, op, ": the vulkan device ", context().device_name(),
             " has no 64-bit integers (shaderInt64), which int64 tensors need (move them to the "
             "cpu)");
    return;
  }
  if (t.dtype() == DType::Float64 || t.dtype() == DType::Float32) return check_float(t, op);
  throw DTypeError(detail::cat(op, ": the vulkan device computes float32, float64, int32 and ",
                               "int64 tensors here, got ", dtype_name(t.dtype()),
                               " (move it to the cpu, or cast it)"));
}

std::string_view dtype_suffix(const Tensor& t) {
  switch (t.dtype()) {
    case DType::Float64:
      return "_f64";
    case DType::Int32:
      return "_i32";
    case DType::Int64:
      return "_i64";
    default:
      return "";
  }
}

int32_t i32(int64_t v, std::string_view op) {
  VK_CHECK(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(),
           SizeError, op, ": ", v, " is beyond the vulkan backend's 32-bit indices");
  return static_cast<int32_t>(v);
}

Buffer& checked_buffer(const Tensor& t, std::string_view op) {
  Buffer& b = bound_buffer(t, op);
  int64_t hi = t.offset();
  if (t.numel() > 0)
    for (int64_t d = 0; d < t.ndim(); ++d) hi += (t.shape()[d] - 1) * t.strides()[d];
  // int64 indices are read as pairs of 32-bit words
  const int64_t words = t.dtype() == DType::Int64 ? 2 : 1;
  VK_CHECK(t.offset() >= 0 && (hi + 1) * words - 1 <= std::numeric_limits<int32_t>::max(),
           SizeError, op, ": ", t.describe(),
           " reaches elements beyond the vulkan backend's 32-bit indices");
  return b;
}

void run_gemm(std::string_view shader, GemmHead& head, const void* params, uint32_t bytes,
              std::span<Buffer* const> buffers, uint64_t batches) {
  Context& ctx = context();
  const std::string name(shader);
  const Pipeline& pipe = ctx.pipeline(name, shader_spirv(shader), 4, bytes);
  const int64_t rows = max_groups(ctx, 1) * kTile, cols = max_groups(ctx, 0) * kTile;
  const int64_t zs = max_groups(ctx, 2), pass = k_pass.load();
  const int64_t M = head.M, N = head.N, K = head.K;
  const uint32_t flags = head.flags;
  // K = 0 is one pass over nothing: C is the bias, or zeros.
  for (int64_t k0 = 0; k0 == 0 || k0 < K; k0 += pass) {
    head.k_begin = static_cast<uint32_t>(k0);
    head.k_end = static_cast<uint32_t>(std::min(K, k0 + pass));
    head.flags = k0 == 0 ? flags : flags | kGemmAccumulate;
    for (int64_t b0 = 0; b0 < static_cast<int64_t>(batches); b0 += zs)
      for (int64_t m0 = 0; m0 < M; m0 += rows)
        for (int64_t n0 = 0; n0 < N; n0 += cols) {
          head.b_base = static_cast<uint32_t>(b0);
          head.m_base = static_cast<uint32_t>(m0);
          head.n_base = static_cast<uint32_t>(n0);
          const Groups g{groups_for(std::min(cols, N - n0), kTile),
                         groups_for(std::min(rows, M - m0), kTile),
                         static_cast<uint32_t>(std::min<int64_t>(zs, batches - b0))};
          ctx.dispatch(pipe, buffers, params, g, 1);
        }
  }
  head.flags = flags;
}

VK_KERNEL(matmul) {
  (void)a;
  return product(in[0], in[1], nullptr, m, "matmul");
}

VK_KERNEL(addmm) {
  (void)a;
  return product(in[1], in[2], &in[0], m, "addmm");
}

}  // namespace vk::vulkan
