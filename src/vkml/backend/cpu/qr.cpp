// QR by Householder reflections on the CPU (#15 linalg): LAPACK geqr2's order and signs and
// org2r's formation of Q, each matrix on one thread, in the order of the Vulkan shader
// (shaders/solve.comp, QR) so the two devices agree to rounding.
#include "vkml/backend/cpu/qr.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/rows.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// Householder QR of the m x n row-major a in place, LAPACK geqr2's order and signs: for column j,
// beta = -sign(a_jj) |a[j.., j]| (the norm scaled by the column's largest |a| below the
// diagonal), v = a[j+1.., j] / (a_jj - beta) below an implicit 1, tau_j = (beta - a_jj) / beta,
// and H_j = I - tau_j v v^T applied to the columns right of j. A column already zero below the
// diagonal is not reflected (tau 0), as dlarfg; a NaN there reflects (and spreads) it.
template <class T>
void householder_one(T* a, int64_t m, int64_t n, T* tau, std::vector<T>& w) {
  w.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < std::min(m, n); ++j) {
    const T alpha = a[j * n + j];
    T scale = T(0);
    for (int64_t i = j + 1; i < m; ++i) {
      const T x = std::abs(a[i * n + j]);
      if (x > scale || std::isnan(x)) scale = x;
    }
    tau[j] = T(0);
    if (scale == T(0)) continue;
    T ss = T(0);
    for (int64_t i = j + 1; i < m; ++i) ss += (a[i * n + j] / scale) * (a[i * n + j] / scale);
    const T xnorm = scale * std::sqrt(ss);
    const T big = std::max(std::abs(alpha), xnorm), small = std::min(std::abs(alpha), xnorm);
    const T norm =
        std::isnan(xnorm) ? xnorm : big * std::sqrt(T(1) + (small / big) * (small / big));
    const T beta = std::signbit(alpha) ? norm : -norm;
    tau[j] = (beta - alpha) / beta;
    const T inv = T(1) / (alpha - beta);
    for (int64_t i = j + 1; i < m; ++i) a[i * n + j] *= inv;
    a[j * n + j] = beta;
    for (int64_t c = j + 1; c < n; ++c) w[c] = a[j * n + c];  // w = v^T a[j.., j+1..]
    for (int64_t i = j + 1; i < m; ++i)
      for (int64_t c = j + 1; c < n; ++c) w[c] += a[i * n + j] * a[i * n + c];
    for (int64_t c = j + 1; c < n; ++c) a[j * n + c] -= tau[j] * w[c];
    for (int64_t i = j + 1; i < m; ++i)
      for (int64_t c = j + 1; c < n; ++c) a[i * n + c] -= tau[j] * w[c] * a[i * n + j];
  }
}

// Q = H_0 ... H_k-1 [I_k; 0] (m x k, row stride ld) from householder_one's a and tau, as LAPACK
// org2r: backwards from column k - 1, each H_j applied to the columns right of j, then column j
// set to H_j e_j = e_j - tau_j v.
template <class T>
void form_q(const T* a, const T* tau, T* q, int64_t m, int64_t n, int64_t ld, std::vector<T>& w) {
  const int64_t k = std::min(m, n);
  for (int64_t j = k - 1; j >= 0; --j) {
    for (int64_t c = j + 1; c < k; ++c) w[c] = q[j * ld + c];
    for (int64_t i = j + 1; i < m; ++i)
      for (int64_t c = j + 1; c < k; ++c) w[c] += a[i * n + j] * q[i * ld + c];
    for (int64_t c = j + 1; c < k; ++c) q[j * ld + c] -= tau[j] * w[c];
    for (int64_t i = j + 1; i < m; ++i)
      for (int64_t c = j + 1; c < k; ++c) q[i * ld + c] -= tau[j] * w[c] * a[i * n + j];
    for (int64_t i = 0; i < j; ++i) q[i * ld + j] = T(0);
    q[j * ld + j] = T(1) - tau[j];
    for (int64_t i = j + 1; i < m; ++i) q[i * ld + j] = -tau[j] * a[i * n + j];
  }
}

// The qr op's packed (m + k) x n result (Q, zero beyond column k, then R) or, geqrf, the
// (m + 1) x n reflectors and tau.
template <class T>
void qr_one(const T* in, T* out, int64_t m, int64_t n, bool geqrf, std::vector<T>& a,
            std::vector<T>& tau, std::vector<T>& w) {
  const int64_t k = std::min(m, n);
  a.assign(in, in + m * n);
  tau.assign(static_cast<size_t>(n), T(0));
  householder_one(a.data(), m, n, tau.data(), w);
  if (geqrf) {
    std::copy(a.begin(), a.end(), out);
    std::copy(tau.begin(), tau.end(), out + m * n);
    return;
  }
  std::fill(out, out + m * n, T(0));
  form_q(a.data(), tau.data(), out, m, n, n, w);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t c = 0; c < n; ++c) out[(m + i) * n + c] = c >= i ? a[i * n + c] : T(0);
}

template <class T>
Tensor qr_kernel(const Tensor& A, const Meta& meta, bool geqrf) {
  const int64_t m = A.shape()[A.ndim() - 2], n = A.shape().back();
  const int64_t rows = meta.shape[meta.shape.size() - 2];
  Tensor out = Tensor::empty(meta.shape, meta.dtype);
  if (out.numel() == 0) return out;
  const T* pa = A.data<T>();
  T* po = out.data<T>();
  parallel_for(batch_count(A.shape()), 1, [&](int64_t begin, int64_t end) {
    std::vector<T> a, tau, w;
    for (int64_t b = begin; b < end; ++b)
      qr_one(pa + b * m * n, po + b * rows * n, m, n, geqrf, a, tau, w);
  });
  return out;
}

}  // namespace

VK_KERNEL(qr) {
  (void)a;
  const Tensor A = contiguous_copy(in[0]);
  VK_DISPATCH_FLOAT(m.dtype, "qr", { return qr_kernel<T>(A, m, false); });
  return {};
}

VK_KERNEL(geqrf) {
  (void)a;
  const Tensor A = contiguous_copy(in[0]);
  VK_DISPATCH_FLOAT(m.dtype, "geqrf", { return qr_kernel<T>(A, m, true); });
  return {};
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
