// The solver family on the CPU (#15 linalg): an unblocked right-looking LU (LAPACK getf2's order),
// a right-looking Cholesky and substitution, each matrix on one thread, in the same order of
// operations as the Vulkan shaders so the two devices agree to rounding.
#include "vkml/backend/cpu/solve.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/rows.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// One n x n row-major matrix in place: pivot = the first largest |a| of column k at or below row
// k; rows swapped whole; the column below scaled and the trailing block updated only when the
// pivot is nonzero (a zero column has nothing to eliminate).
template <class T>
void lu_one(T* a, int64_t n, int32_t* piv, int64_t* perm) {
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    T best = std::abs(a[k * n + k]);
    for (int64_t i = k + 1; i < n; ++i) {
      const T v = std::abs(a[i * n + k]);
      if (v > best) best = v, p = i;
    }
    piv[k] = static_cast<int32_t>(p + 1);
    if (p != k) {
      std::swap_ranges(a + k * n, a + k * n + n, a + p * n);
      std::swap(perm[k], perm[p]);
    }
    const T pivot = a[k * n + k];
    if (pivot == T(0)) continue;
    for (int64_t i = k + 1; i < n; ++i) {
      T* row = a + i * n;
      const T l = row[k] / pivot;
      row[k] = l;
      for (int64_t j = k + 1; j < n; ++j) row[j] -= l * a[k * n + j];
    }
  }
}

// A = L L^T of one n x n row-major matrix in place, from its lower triangle (right-looking, the
// shader's order): l_kk = sqrt(a_kk), the column below divided by it, the trailing lower triangle
// updated. A non-positive pivot leaves a NaN or zero l_kk for cholesky_info to find. The strict
// upper triangle is zeroed.
template <class T>
void cholesky_one(T* a, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const T diag = std::sqrt(a[k * n + k]);
    a[k * n + k] = diag;
    for (int64_t i = k + 1; i < n; ++i) a[i * n + k] /= diag;
    for (int64_t i = k + 1; i < n; ++i) {
      const T lik = a[i * n + k];
      for (int64_t j = k + 1; j <= i; ++j) a[i * n + j] -= lik * a[j * n + k];
    }
  }
  for (int64_t i = 0; i < n; ++i) std::fill(a + i * n + i + 1, a + i * n + n, T(0));
}

// X = A^-1 B in place of B (n x k row-major): x[i] = (b[i] - sum a[i][j] x[j]) / a[i][i], the j
// in the order the shader subtracts them (ascending for lower, descending for upper).
template <class T>
void solve_one(const T* a, T* x, int64_t n, int64_t k, bool upper, bool unit) {
  for (int64_t s = 0; s < n; ++s) {
    const int64_t i = upper ? n - 1 - s : s;
    T* xi = x + i * k;
    for (int64_t t = 0; t < s; ++t) {
      const int64_t j = upper ? n - 1 - t : t;
      const T aij = a[i * n + j];
      const T* xj = x + j * k;
      for (int64_t c = 0; c < k; ++c) xi[c] -= aij * xj[c];
    }
    if (!unit)
      for (int64_t c = 0; c < k; ++c) xi[c] /= a[i * n + i];
  }
}

// The pair of the round-robin schedule's round r at slot k (m players, m even, player m - 1 fixed,
// the others turning): every pair once in m - 1 rounds, the pairs of a round disjoint.
std::pair<int64_t, int64_t> round_pair(int64_t m, int64_t r, int64_t k) {
  const int64_t p = k == 0 ? m - 1 : (r + k) % (m - 1), q = (r - k + (m - 1)) % (m - 1);
  return {std::min(p, q), std::max(p, q)};
}

// The Jacobi rotation (c, s) that zeroes the off-diagonal `off` of the symmetric 2 x 2 block
// [[dp, off], [off, dq]] (the smaller angle: |t| <= 1): eigh's a_pq between a_pp and a_qq, svd's
// inner product of columns p and q between their squared norms. False, without a rotation, when
// `off` is negligible beside the diagonal (the Demmel-Veselic test, which keeps small eigen and
// singular values accurate).
template <class T>
bool jacobi_rotation(T dp, T dq, T off, T& c, T& s) {
  if (off == T(0) || std::abs(off) <= std::numeric_limits<T>::epsilon() * std::sqrt(std::abs(dp)) *
                                          std::sqrt(std::abs(dq)))
    return false;
  const T theta = (dq - dp) / (T(2) * off);
  const T at = std::abs(theta);
  const T root =
      at > T(1) ? at * std::sqrt(T(1) + T(1) / (theta * theta)) : std::sqrt(theta * theta + T(1));
  const T t = (theta < T(0) ? T(-1) : T(1)) / (at + root);
  c = T(1) / std::sqrt(t * t + T(1));
  s = t * c;
  return true;
}

// Columns p and q of the row-major rows x n matrix x become c x_p - s x_q and s x_p + c x_q (x J);
// rotate_rows does the same to rows p and q (J^T x).
template <class T>
void rotate_columns(T* x, int64_t rows, int64_t n, int64_t p, int64_t q, T c, T s) {
  for (int64_t i = 0; i < rows; ++i) {
    const T xp = x[i * n + p], xq = x[i * n + q];
    x[i * n + p] = c * xp - s * xq;
    x[i * n + q] = s * xp + c * xq;
  }
}
template <class T>
void rotate_rows(T* x, int64_t n, int64_t p, int64_t q, T c, T s) {
  for (int64_t j = 0; j < n; ++j) {
    const T xp = x[p * n + j], xq = x[q * n + j];
    x[p * n + j] = c * xp - s * xq;
    x[q * n + j] = s * xp + c * xq;
  }
}

// One symmetric n x n matrix (its lower triangle read from `in`) into `out` (n + 1 rows of n):
// cyclic Jacobi sweeps in the round-robin order, each round's disjoint rotations applied to the
// rows, then the columns, then V's columns (the shader's order), until a sweep rotates nothing
// (at most kSweeps); then the eigenvalues ascending with their vectors, each vector's largest
// component positive.
template <class T>
void eigh_one(const T* in, T* out, int64_t n, std::vector<T>& a, std::vector<T>& v) {
  constexpr int kSweeps = 30;
  a.assign(static_cast<size_t>(n * n), T(0));
  v.assign(static_cast<size_t>(n * n), T(0));
  for (int64_t i = 0; i < n; ++i) {
    v[i * n + i] = T(1);
    for (int64_t j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = in[i * n + j];
  }
  const int64_t m = n + (n & 1);
  std::vector<T> cs(static_cast<size_t>(m)), sn(static_cast<size_t>(m));
  std::vector<char> on(static_cast<size_t>(m / 2));
  for (int sweep = 0; sweep < kSweeps && n > 1; ++sweep) {
    bool rotated = false;
    for (int64_t r = 0; r < m - 1; ++r) {
      for (int64_t k = 0; k < m / 2; ++k) {
        const auto [p, q] = round_pair(m, r, k);
        on[k] = q < n && jacobi_rotation(a[p * n + p], a[q * n + q], a[p * n + q], cs[k], sn[k]);
        rotated = rotated || on[k];
      }
      for (int64_t k = 0; k < m / 2; ++k) {  // rows p and q: J^T A
        if (!on[k]) continue;
        const auto [p, q] = round_pair(m, r, k);
        rotate_rows(a.data(), n, p, q, cs[k], sn[k]);
      }
      for (int64_t k = 0; k < m / 2; ++k) {  // columns p and q: (J^T A) J, and V J
        if (!on[k]) continue;
        const auto [p, q] = round_pair(m, r, k);
        rotate_columns(a.data(), n, n, p, q, cs[k], sn[k]);
        rotate_columns(v.data(), n, n, p, q, cs[k], sn[k]);
      }
    }
    if (!rotated) break;
  }
  for (int64_t i = 0; i < n; ++i) {
    const T d = a[i * n + i];
    int64_t rank = 0;  // ascending, ties in index order (NaN last)
    for (int64_t j = 0; j < n; ++j) {
      const T e = a[j * n + j];
      rank += (e < d || (e == d && j < i) || (std::isnan(d) && !std::isnan(e)) ||
               (std::isnan(d) && std::isnan(e) && j < i))
                  ? 1
                  : 0;
    }
    int64_t big = 0;
    for (int64_t r = 1; r < n; ++r)
      if (std::abs(v[r * n + i]) > std::abs(v[big * n + i])) big = r;
    const T sign = v[big * n + i] < T(0) ? T(-1) : T(1);
    out[rank] = d;
    for (int64_t r = 0; r < n; ++r) out[(r + 1) * n + rank] = sign * v[r * n + i];
  }
}

// One tall m x n matrix (m >= n) into `out` (m + n + 1 rows of n): one-sided Jacobi sweeps over
// its columns in the round-robin order (each round's rotations computed, then applied to W's and
// V's columns: the shader's order) until a sweep rotates nothing (at most kSweeps); then S (the
// column norms) descending with U = W / S and V, each U column's largest component positive.
template <class T>
void svd_one(const T* in, T* out, int64_t m, int64_t n, std::vector<T>& w, std::vector<T>& v) {
  constexpr int kSweeps = 20;
  w.assign(in, in + m * n);
  v.assign(static_cast<size_t>(n * n), T(0));
  for (int64_t i = 0; i < n; ++i) v[i * n + i] = T(1);
  const int64_t mm = n + (n & 1);
  std::vector<T> cs(static_cast<size_t>(mm)), sn(static_cast<size_t>(mm));
  std::vector<char> on(static_cast<size_t>(mm / 2));
  for (int sweep = 0; sweep < kSweeps && n > 1; ++sweep) {
    bool rotated = false;
    for (int64_t r = 0; r < mm - 1; ++r) {
      for (int64_t k = 0; k < mm / 2; ++k) {
        const auto [p, q] = round_pair(mm, r, k);
        on[k] = false;
        if (q >= n) continue;
        T alpha = T(0), beta = T(0), gamma = T(0);
        for (int64_t i = 0; i < m; ++i) {
          const T wp = w[i * n + p], wq = w[i * n + q];
          alpha += wp * wp, beta += wq * wq, gamma += wp * wq;
        }
        on[k] = jacobi_rotation(alpha, beta, gamma, cs[k], sn[k]);
        rotated = rotated || on[k];
      }
      for (int64_t k = 0; k < mm / 2; ++k) {
        if (!on[k]) continue;
        const auto [p, q] = round_pair(mm, r, k);
        rotate_columns(w.data(), m, n, p, q, cs[k], sn[k]);
        rotate_columns(v.data(), n, n, p, q, cs[k], sn[k]);
      }
    }
    if (!rotated) break;
  }
  std::vector<T> norm(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    T ss = T(0);
    for (int64_t i = 0; i < m; ++i) ss += w[i * n + j] * w[i * n + j];
    norm[j] = std::sqrt(ss);
  }
  for (int64_t j = 0; j < n; ++j) {
    const T s = norm[j];
    int64_t rank = 0;  // descending, ties in index order (NaN first)
    for (int64_t l = 0; l < n; ++l) {
      const T e = norm[l];
      rank += (e > s || (e == s && l < j) || (std::isnan(e) && !std::isnan(s)) ||
               (std::isnan(e) && std::isnan(s) && l < j))
                  ? 1
                  : 0;
    }
    int64_t big = 0;
    for (int64_t i = 1; i < m; ++i)
      if (std::abs(w[i * n + j]) > std::abs(w[big * n + j])) big = i;
    const T sign = w[big * n + j] < T(0) ? T(-1) : T(1);
    const T scale = s > T(0) ? sign / s : T(0);
    out[rank] = s;
    for (int64_t i = 0; i < m; ++i) out[(i + 1) * n + rank] = scale * w[i * n + j];
    for (int64_t i = 0; i < n; ++i) out[(m + 1 + i) * n + rank] = sign * v[i * n + j];
  }
}

}  // namespace

VK_KERNEL(svd) {
  (void)a;
  const Tensor A = contiguous_copy(in[0]);
  const int64_t rows = A.shape()[A.ndim() - 2], n = A.shape().back();
  const int64_t batch = batch_count(A.shape());
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  VK_DISPATCH_FLOAT(m.dtype, "svd", {
    const T* pa = A.data<T>();
    T* po = out.data<T>();
    parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> w, v;
      for (int64_t b = begin; b < end; ++b)
        svd_one(pa + b * rows * n, po + b * (rows + n + 1) * n, rows, n, w, v);
    });
  });
  return out;
}

VK_KERNEL(eigh) {
  (void)a;
  const Tensor A = contiguous_copy(in[0]);
  const int64_t n = A.shape().back();
  const int64_t batch = batch_count(A.shape());
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  VK_DISPATCH_FLOAT(m.dtype, "eigh", {
    const T* pa = A.data<T>();
    T* po = out.data<T>();
    parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> work, vecs;
      for (int64_t b = begin; b < end; ++b)
        eigh_one(pa + b * n * n, po + b * (n + 1) * n, n, work, vecs);
    });
  });
  return out;
}

VK_KERNEL(lu_factor) {
  (void)a;
  const Tensor A = contiguous_copy(in[0]);
  const int64_t n = A.ndim() >= 1 ? A.shape().back() : 0;
  const int64_t batch = batch_count(A.shape());
  Tensor lu = Tensor::empty(m.shape, m.dtype);
  Shape ps(m.shape.begin(), m.shape.end() - 1);
  Tensor pivots = Tensor::empty(ps, DType::Int32);
  Tensor perm = Tensor::empty(ps, DType::Int64);
  if (lu.numel() == 0) return {lu, pivots, perm};
  VK_DISPATCH_FLOAT(m.dtype, "lu_factor", {
    std::memcpy(lu.data<T>(), A.data<T>(), static_cast<size_t>(A.numel()) * sizeof(T));
    T* out = lu.data<T>();
    int32_t* pv = pivots.data<int32_t>();
    int64_t* pm = perm.data<int64_t>();
    parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) lu_one(out + b * n * n, n, pv + b * n, pm + b * n);
    });
  });
  return {lu, pivots, perm};
}

VK_KERNEL(cholesky) {
  (void)a;
  const Tensor A = contiguous_copy(in[0]);
  const int64_t n = A.shape().back();
  const int64_t batch = batch_count(A.shape());
  Tensor l = Tensor::empty(m.shape, m.dtype);
  if (l.numel() == 0) return l;
  VK_DISPATCH_FLOAT(m.dtype, "cholesky", {
    std::memcpy(l.data<T>(), A.data<T>(), static_cast<size_t>(A.numel()) * sizeof(T));
    T* out = l.data<T>();
    parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) cholesky_one(out + b * n * n, n);
    });
  });
  return l;
}

VK_KERNEL(triangular_solve) {
  const Tensor A = contiguous_copy(in[0]), B = contiguous_copy(in[1]);
  const int64_t n = A.shape().back(), k = B.shape().back();
  const int64_t batch = batch_count(B.shape());
  Tensor x = Tensor::empty(m.shape, m.dtype);
  if (x.numel() == 0) return x;
  const bool upper = a.triangular.upper, unit = a.triangular.unitriangular;
  VK_DISPATCH_FLOAT(m.dtype, "triangular_solve", {
    std::memcpy(x.data<T>(), B.data<T>(), static_cast<size_t>(B.numel()) * sizeof(T));
    const T* pa = A.data<T>();
    T* px = x.data<T>();
    parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b)
        solve_one(pa + b * n * n, px + b * n * k, n, k, upper, unit);
    });
  });
  return x;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
