// The solver family on the Vulkan device (#15 linalg, shaders/solve.comp): LU factorization,
// Cholesky and triangular solves, one workgroup cooperating per matrix (per 16 columns of B for the
// solves), float32 and float64 (shaderFloat64). The inputs are copied into the outputs first (a
// strided copy) and factored or solved there in place. Deterministic: fixed trees, fixed orders.
#include <algorithm>
#include <limits>
#include <string>

#include "vkml/backend/vulkan/rows.h"

namespace vk::vulkan {
namespace {

// Push constants of solve.comp, laid out as its Params block (std430).
struct SolveParams {
  uint32_t n = 0, k = 0, batch_base = 0, flags = 0;
  int32_t a_offset = 0;
};
static_assert(sizeof(SolveParams) == 20, "solve.comp's push constants");

// The largest n each shader takes within lavapipe's 65535 loop iterations per invocation
// (solve.comp's counts: LU about n^3 / 768 + 12 n, Cholesky n^3 / 768 + 4 n, TRSM about
// n^2 / 32 + 2 n).
constexpr int64_t kMaxLu = 256, kMaxTrsm = 1024;
constexpr int64_t kCols = 16;          // TRSM's columns per workgroup
constexpr int64_t kMaxGroups = 65535;  // per dispatch dimension (the guaranteed minimum)

int64_t batch_count(const Shape& s) {
  int64_t b = 1;
  for (size_t d = 0; d + 2 < s.size(); ++d) b *= s[d];
  return b;
}

const Pipeline& pipeline_of(const std::string& name, size_t bindings) {
  return context().pipeline(name, shader_spirv(name), static_cast<uint32_t>(bindings),
                            sizeof(SolveParams));
}

void check_size(const Tensor& t, const char* op) {
  VK_CHECK(t.numel() <= std::numeric_limits<int32_t>::max() / 2, SizeError, op, ": ", t.describe(),
           " reaches elements beyond the vulkan backend's 32-bit indices");
}

// The factorizations' matrices: a dtype the device computes in (float64 needs shaderFloat64),
// n within what one workgroup factors.
void check_factor(const Tensor& A, const char* op) {
  rows::dtype_suffix(A.dtype(), op);
  const int64_t n = A.shape().back();
  VK_CHECK(n <= kMaxLu, SizeError, op, ": ", n, " x ", n,
           " matrices are larger than the vulkan backend factors (", kMaxLu, " x ", kMaxLu,
           "); factor them on the cpu");
  check_size(A, op);
}

// Shader `name`_<dtype> over every matrix of m's shape, one workgroup each (in dispatches of at
// most kMaxGroups), with p.n = cols, p.k = height and flags.
void dispatch_matrices(const char* name, const Meta& m, const std::vector<Buffer*>& buffers,
                       uint32_t cols, uint32_t height, uint32_t flags) {
  const Pipeline& pipe =
      pipeline_of(std::string(name) + "_" + rows::dtype_suffix(m.dtype, name), buffers.size());
  const int64_t batch = batch_count(m.shape);
  SolveParams p;
  p.n = cols;
  p.k = height;
  p.flags = flags;
  for (int64_t b0 = 0; b0 < batch; b0 += kMaxGroups) {
    p.batch_base = static_cast<uint32_t>(b0);
    const auto groups = static_cast<uint32_t>(std::min(kMaxGroups, batch - b0));
    context().dispatch(pipe, buffers, &p, Groups{groups, 1, 1},
                       static_cast<uint32_t>(buffers.size()));
  }
}

// The factorization `op` of every matrix of m's shape (n x n), the first buffer factored in place.
void factor_in_place(const char* op, const Meta& m, const std::vector<Buffer*>& buffers) {
  const auto n = static_cast<uint32_t>(m.shape.back());
  dispatch_matrices(op, m, buffers, n, n, 0);
}

// Householder QR, one workgroup per m x n matrix on a copy of A, into the packed (..., m + k, n)
// Q and R or (geqrf) (..., m + 1, n) reflectors and tau: the shader's shared vectors take n <= 128
// columns, lavapipe's loop budget m k <= 16384 (about 2 m k + m n k / 128 iterations).
Tensor householder(const Tensor& A, const Meta& m, const char* op, bool geqrf) {
  constexpr int64_t kMaxCols = 128, kMaxWork = 16384;
  const int64_t height = A.shape()[A.ndim() - 2], n = A.shape().back();
  VK_CHECK(n <= kMaxCols && height * std::min(height, n) <= kMaxWork, SizeError, op, ": ", height,
           " x ", n, " matrices are larger than the vulkan backend factors (n <= ", kMaxCols,
           ", m min(m, n) <= ", kMaxWork, "); factor them on the cpu");
  rows::dtype_suffix(m.dtype, op);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  check_size(out, op);
  if (out.numel() == 0) return out;
  Tensor work = Tensor::empty(A.shape(), m.dtype, m.device);
  copy_into(work, A);
  dispatch_matrices("qr", m, bound_buffers({&out, &work}, op), static_cast<uint32_t>(n),
                    static_cast<uint32_t>(height), geqrf ? 1u : 0u);
  return out;
}

}  // namespace

VK_KERNEL(lu_factor) {
  (void)a;
  check_factor(in[0], "lu_factor");
  Tensor lu = Tensor::empty(m.shape, m.dtype, m.device);
  const Shape ps(m.shape.begin(), m.shape.end() - 1);
  Tensor pivots = Tensor::empty(ps, DType::Int32, m.device);
  Tensor perm = Tensor::empty(ps, DType::Int64, m.device);
  if (lu.numel() == 0) return {lu, pivots, perm};
  copy_into(lu, in[0]);
  factor_in_place("lu_factor", m, bound_buffers({&lu, &pivots, &perm}, "lu_factor"));
  return {lu, pivots, perm};
}

VK_KERNEL(cholesky) {
  (void)a;
  check_factor(in[0], "cholesky");
  Tensor l = Tensor::empty(m.shape, m.dtype, m.device);
  if (l.numel() == 0) return l;
  copy_into(l, in[0]);
  factor_in_place("cholesky", m, bound_buffers({&l}, "cholesky"));
  return l;
}

// Jacobi sweeps, one workgroup per matrix on a copy of A (and V beside it), into the packed
// (..., n + 1, n) result: at most 30 sweeps of n - 1 rounds keep n <= 64 within lavapipe's loop
// budget (about 36 n^2 / 256 + 3 n iterations per sweep and invocation).
VK_KERNEL(eigh) {
  (void)a;
  const char* op = "eigh";
  constexpr int64_t kMaxEigh = 64;
  const int64_t n = in[0].shape().back();
  VK_CHECK(n <= kMaxEigh, SizeError, op, ": ", n, " x ", n,
           " matrices are larger than the vulkan backend decomposes (", kMaxEigh, " x ", kMaxEigh,
           "); decompose them on the cpu");
  const std::string suffix = rows::dtype_suffix(m.dtype, op);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  check_size(out, op);
  if (out.numel() == 0) return out;
  Shape ws = in[0].shape();
  ws[ws.size() - 2] *= 2;  // A, then V, per matrix
  Tensor work = Tensor::empty(ws, m.dtype, m.device);
  check_size(work, op);
  copy_into(work.alias(in[0].shape(), work.strides(), 0), in[0]);
  Meta per_matrix{in[0].shape(), m.dtype, m.device};
  factor_in_place(op, per_matrix, bound_buffers({&out, &work}, op));
  return out;
}

// One-sided Jacobi sweeps, one workgroup per tall m x n matrix on a copy of A (and V below it),
// into the packed (..., m + n + 1, n) result: at most 20 sweeps of n - 1 rounds keep m <= 64, n <=
// 32 within lavapipe's loop budget (about 3 m + (m + n) n / 512 iterations per round).
VK_KERNEL(svd) {
  (void)a;
  const char* op = "svd";
  constexpr int64_t kMaxRows = 64, kMaxCols = 32;
  const int64_t height = in[0].shape()[in[0].ndim() - 2], n = in[0].shape().back();
  VK_CHECK(height <= kMaxRows && n <= kMaxCols, SizeError, op, ": ", height, " x ", n,
           " matrices are larger than the vulkan backend decomposes (", kMaxRows, " x ", kMaxCols,
           " after transposing wide ones); decompose them on the cpu");
  rows::dtype_suffix(m.dtype, op);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  check_size(out, op);
  if (out.numel() == 0) return out;
  Shape ws = in[0].shape();
  ws[ws.size() - 2] = height + n;  // W, then V, per matrix
  Tensor work = Tensor::empty(ws, m.dtype, m.device);
  check_size(work, op);
  copy_into(work.alias(in[0].shape(), work.strides(), 0), in[0]);
  dispatch_matrices("svd", m, bound_buffers({&out, &work}, op), static_cast<uint32_t>(n),
                    static_cast<uint32_t>(height), 0);
  return out;
}

VK_KERNEL(qr) {
  (void)a;
  return householder(in[0], m, "qr", false);
}

VK_KERNEL(geqrf) {
  (void)a;
  return householder(in[0], m, "geqrf", true);
}

VK_KERNEL(triangular_solve) {
  const char* op = "triangular_solve";
  const std::string suffix = rows::dtype_suffix(m.dtype, op);
  const Tensor A = rows::contiguous_of(in[0], op);
  const int64_t n = A.shape().back(), k = m.shape.back();
  VK_CHECK(n <= kMaxTrsm, SizeError, op, ": ", n, " x ", n,
           " triangular matrices are larger than the vulkan backend solves (", kMaxTrsm, " x ",
           kMaxTrsm, "); solve them on the cpu");
  Tensor x = Tensor::empty(m.shape, m.dtype, m.device);
  check_size(x, op);
  if (x.numel() == 0) return x;
  copy_into(x, in[1]);
  const std::vector<Buffer*> buffers = bound_buffers({&x, &A}, op);
  const Pipeline& pipe = pipeline_of("triangular_solve_" + suffix, buffers.size());
  const int64_t batch = batch_count(m.shape);
  SolveParams p;
  p.n = static_cast<uint32_t>(n);
  p.k = static_cast<uint32_t>(k);
  p.flags = (a.triangular.upper ? 1u : 0u) | (a.triangular.unitriangular ? 2u : 0u);
  p.a_offset = static_cast<int32_t>(A.offset());
  const auto col_groups = static_cast<uint32_t>((k + kCols - 1) / kCols);
  for (int64_t b0 = 0; b0 < batch; b0 += kMaxGroups) {
    p.batch_base = static_cast<uint32_t>(b0);
    const auto groups = static_cast<uint32_t>(std::min(kMaxGroups, batch - b0));
    context().dispatch(pipe, buffers, &p, Groups{col_groups, groups, 1}, 1);
  }
  return x;
}

}  // namespace vk::vulkan
