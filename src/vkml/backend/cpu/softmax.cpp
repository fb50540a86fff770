// The fused softmax family: softmax (scaled, optionally causal), log_softmax and their backward
// kernels. Each row along the dim is three passes -- the max, the sum of exp (vmath::exp, the exp
// op's own, vectorised; summed by row_sums for float, in 16 double lanes for double), the result
// -- or, when the dim is not innermost, the same over blocks of columns at once. The order of every
// sum depends only on the shape, so results are bitwise identical at any thread count.
#include "vkml/backend/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "vkml/backend/cpu/cache.h"
#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/simd.h"
#include "vkml/backend/cpu/vmath.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

constexpr int64_t kColWidth = 256;  // columns per work item when the dim is not innermost
constexpr int64_t kWork = 32768;    // about this many elements per parallel range

// ---- softmax ----

// The sum of a row's exp values (all in [0, 1], the largest 1): float sums (row_sums) where T is
// float -- they cannot overflow, and the float rounding is that of 16 terms in [0, 1] -- and 16
// double lanes otherwise.
template <class T>
double sum_of_exps(const T* e, int64_t K) {
  if constexpr (std::is_same_v<T, float>) {
    return row_sums<1>(
        K, [e](int64_t k, int valid, FloatVec(&t)[1]) { t[0] = load_floats(e + k, valid); })[0];
  } else {
    double s[16] = {};
    add_lanes16(s, e, K, [](auto&) {});
    for (int w = 1; w < 16; w *= 2)
      for (int j = 0; j + w < 16; j += 2 * w) s[j] += s[j + w];
    return s[0];
  }
}

}  // namespace

// The largest of scale * x[k] over a row of K, NaN skipped: machine vectors, then their lanes and
// the tail. (A scalar loop does not vectorise: the compiler keeps its order for NaN's sake.)
template <class T>
T scaled_row_max(const T* x, int64_t K, T scale) {
  using V = Simd<T>;
  constexpr int W = sizeof(V) / sizeof(T);
  V vmx = V{} - std::numeric_limits<T>::infinity();
  int64_t k = 0;
  for (; k + W <= K; k += W) {
    V v;
    load_simd(v, x + k);
    v = v * scale;
    vmx = v > vmx ? v : vmx;
  }
  T m = -std::numeric_limits<T>::infinity();
  for (int j = 0; j < W; ++j) m = vmx[j] > m ? vmx[j] : m;
  for (; k < K; ++k) {
    const T v = x[k] * scale;
    m = v > m ? v : m;
  }
  return m;
}
template float scaled_row_max<float>(const float*, int64_t, float);
template double scaled_row_max<double>(const double*, int64_t, double);

namespace {

// One row of length K (contiguous): max, sum of exp(x - max), then the result. A NaN is skipped
// by the max but makes the sum NaN, so the whole row comes out NaN (as in PyTorch).
template <class T, bool Log>
void softmax_row(const T* x, T* y, int64_t K) {
  const T m = scaled_row_max(x, K, T(1));  // x * 1 is x, NaN and signed zeros included
  // exp(x - max) into y (a plain loop: vectorised), then its sum.
  for (int64_t i = 0; i < K; ++i) y[i] = vmath::exp_nonpositive(T(x[i] - m));
  const double sum = sum_of_exps(y, K);
  if constexpr (Log) {
    const T ls = static_cast<T>(std::log(sum));
    for (int64_t i = 0; i < K; ++i) y[i] = (x[i] - m) - ls;
  } else {
    const T inv = static_cast<T>(1.0 / sum);  // a multiply per element, not a division
    for (int64_t i = 0; i < K; ++i) y[i] = y[i] * inv;
  }
}

// softmax of scale * x[k] over the first `valid` of a row's K elements; the rest come out 0, as if
// they were -inf (a causal mask). softmax_row's steps on the scaled row; the compiler may fuse
// x * scale - max into one rounding, so values can differ from the composed ops in the last bit.
template <class T>
void softmax_row_scaled(const T* x, T* y, int64_t K, T scale, int64_t valid) {
  const T m = scaled_row_max(x, valid, scale);
  // A causal row's exp and scaling run on whole vectors past `valid` where the row has them: the
  // keys past it are read, their values overwritten with 0 below and left out of the sum, and a
  // vectorised loop's scalar epilogue (up to 7 exps) no longer runs on nearly every row. Rows of
  // 1 to 64 keys (attention's 128 x 64 x 64 scores, Zen 3): 550-630 -> 427 us.
  constexpr int64_t W = sizeof(Simd<T>) / sizeof(T);
  const int64_t n = std::min(K, (valid + W - 1) / W * W);
  // (a contracted x * scale - m can exceed 0 by half an ulp of m, which exp_nonpositive takes;
  // past `valid` it may exceed 0 by anything, and those values are discarded)
  for (int64_t i = 0; i < n; ++i) y[i] = vmath::exp_nonpositive(T(x[i] * scale - m));
  const T inv = static_cast<T>(1.0 / sum_of_exps(y, valid));
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] * inv;
  std::fill(y + valid, y + K, T(0));
}

// `w` columns at once, K rows apart by `stride` elements (softmax along a non-innermost dim).
template <class T, bool Log>
void softmax_cols(const T* x, T* y, int64_t K, int64_t stride, int64_t w) {
  T mx[kColWidth];
  double s[kColWidth];
  for (int64_t c = 0; c < w; ++c) {
    mx[c] = -std::numeric_limits<T>::infinity();
    s[c] = 0.0;
  }
  for (int64_t k = 0; k < K; ++k) {
    const T* row = x + k * stride;
    for (int64_t c = 0; c < w; ++c) mx[c] = row[c] > mx[c] ? row[c] : mx[c];
  }
  for (int64_t k = 0; k < K; ++k) {
    const T* row = x + k * stride;
    T* out = y + k * stride;
    for (int64_t c = 0; c < w; ++c) {
      T e = vmath::exp_nonpositive(T(row[c] - mx[c]));
      if constexpr (!Log) out[c] = e;
      s[c] += static_cast<double>(e);
    }
  }
  if constexpr (Log) {
    T ls[kColWidth];
    for (int64_t c = 0; c < w; ++c) ls[c] = static_cast<T>(std::log(s[c]));
    for (int64_t k = 0; k < K; ++k) {
      const T* row = x + k * stride;
      T* out = y + k * stride;
      for (int64_t c = 0; c < w; ++c) out[c] = (row[c] - mx[c]) - ls[c];
    }
  } else {
    T inv[kColWidth];
    for (int64_t c = 0; c < w; ++c) inv[c] = static_cast<T>(1.0 / s[c]);
    for (int64_t k = 0; k < K; ++k) {
      T* out = y + k * stride;
      for (int64_t c = 0; c < w; ++c) out[c] = out[c] * inv[c];
    }
  }
}

Tensor contiguous_input(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor c = Tensor::empty(x.shape(), x.dtype());
  copy_into(c, x);
  return c;
}

// A shape seen as (outer, K, inner) around dim: rows of K elements along dim, inner apart.
struct DimSplit {
  int64_t outer = 1, K = 1, inner = 1;
};
DimSplit split_at(const Shape& shape, int64_t dim) {
  DimSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < dim ? s.outer : d == dim ? s.K : s.inner) *= shape[d];
  return s;
}

template <bool Log>
Tensor softmax_kernel(const std::vector<Tensor>& in, const Attrs& a, const Meta& m,
                      const char* name) {
  Tensor x = contiguous_input(in[0]);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (x.numel() == 0) return out;
  const DimSplit split = split_at(x.shape(), a.dim);
  const int64_t outer = split.outer, K = split.K, inner = split.inner;
  VK_DISPATCH_FLOAT(x.dtype(), name, {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    // softmax only (attrs.softmax): the row scaled, and under a causal mask, row i of
    // each (queries, keys) matrix keeps its first i + 1 keys
    const T scale = Log ? T(1) : static_cast<T>(a.softmax.scale);
    const bool causal = !Log && a.softmax.causal;
    const int64_t queries = causal ? x.shape()[x.ndim() - 2] : 1;
    if (inner == 1 && (scale != T(1) || causal)) {
      parallel_for(outer, std::max<int64_t>(1, kWork / K), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const int64_t valid = causal ? std::min(K, o % queries + 1) : K;
          softmax_row_scaled<T>(xp + o * K, yp + o * K, K, scale, valid);
        }
      });
    } else if (inner == 1) {
      parallel_for(outer, std::max<int64_t>(1, kWork / K), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          if (o + 2 < e) prefetch_row(xp + (o + 2) * K, K * sizeof(T));
          softmax_row<T, Log>(xp + o * K, yp + o * K, K);
        }
      });
    } else {
      // along a middle dim (rare), a scaled x is made first
      std::vector<T> scaled(scale != T(1) ? static_cast<size_t>(x.numel()) : 0);
      for (size_t i = 0; i < scaled.size(); ++i) scaled[i] = xp[i] * scale;
      const T* xs = scaled.empty() ? xp : scaled.data();
      const int64_t nc = (inner + kColWidth - 1) / kColWidth;
      const int64_t per = K * std::min(inner, kColWidth);
      parallel_for(outer * nc, std::max<int64_t>(1, kWork / per), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const int64_t o = t / nc, c0 = (t % nc) * kColWidth;
          const int64_t off = o * K * inner + c0;
          softmax_cols<T, Log>(xs + off, yp + off, K, inner, std::min(kColWidth, inner - c0));
        }
      });
    }
  });
  return out;
}

// ---- softmax backward ----
// softmax:     dx = y * (g - sum(g * y))
// log_softmax: dx = g - exp(y) * sum(g)
// The row sum as the forward's (row_grad_sum); the column path accumulates each column in double
// in row order.

// sum(g * y) (softmax) or sum(g) (log_softmax) over a row: float sums (row_sums) where T is float
// and they stay finite; 16 double lanes otherwise (a row of huge gradients whose float sums
// overflow gets the double path's sum).
template <class T, bool Log>
double row_grad_sum(const T* g, const T* y, int64_t K) {
  if constexpr (std::is_same_v<T, float>) {
    const double sum = row_sums<1>(K, [&](int64_t k, int valid, FloatVec(&t)[1]) {
      const FloatVec gv = load_floats(g + k, valid);
      t[0] = Log ? gv : gv * load_floats(y + k, valid);
    })[0];
    if (std::isfinite(sum)) return sum;
  }
  double s[16] = {};
  int64_t k = 0;
  for (; k + 16 <= K; k += 16)
    for (int j = 0; j < 16; ++j) {
      const double gj = static_cast<double>(g[k + j]);
      s[j] += Log ? gj : gj * static_cast<double>(y[k + j]);
    }
  for (int j = 0; k < K; ++k, ++j) {
    const double gj = static_cast<double>(g[k]);
    s[j] += Log ? gj : gj * static_cast<double>(y[k]);
  }
  for (int w = 1; w < 16; w *= 2)
    for (int j = 0; j + w < 16; j += 2 * w) s[j] += s[j + w];
  return s[0];
}

// stream: dx is written with non-temporal stores (softmax's only: log_softmax's element takes an
// exp, and streamed it ran 4-13% slower, Zen 3, 4096 x 1024).
template <class T, bool Log>
void softmax_backward_row(const T* g, const T* y, T* dx, int64_t K, bool stream) {
  const T s = static_cast<T>(row_grad_sum<T, Log>(g, y, K));
  if constexpr (Log) {
    for (int64_t i = 0; i < K; ++i) dx[i] = g[i] - vmath::exp(y[i]) * s;
  } else {
    write_out(dx, K, stream, [&](T* __restrict o, int64_t i0, int64_t k) {
      for (int64_t i = 0; i < k; ++i) o[i] = y[i0 + i] * (g[i0 + i] - s);
    });
  }
}

template <class T, bool Log>
void softmax_backward_cols(const T* g, const T* y, T* dx, int64_t K, int64_t stride, int64_t w) {
  double s[kColWidth];
  for (int64_t c = 0; c < w; ++c) s[c] = 0.0;
  for (int64_t k = 0; k < K; ++k) {
    const T* gr = g + k * stride;
    const T* yr = y + k * stride;
    for (int64_t c = 0; c < w; ++c) {
      const double gc = static_cast<double>(gr[c]);
      s[c] += Log ? gc : gc * static_cast<double>(yr[c]);
    }
  }
  T st[kColWidth];
  for (int64_t c = 0; c < w; ++c) st[c] = static_cast<T>(s[c]);
  for (int64_t k = 0; k < K; ++k) {
    const T* gr = g + k * stride;
    const T* yr = y + k * stride;
    T* out = dx + k * stride;
    if constexpr (Log) {
      for (int64_t c = 0; c < w; ++c) out[c] = gr[c] - vmath::exp(yr[c]) * st[c];
    } else {
      for (int64_t c = 0; c < w; ++c) out[c] = yr[c] * (gr[c] - st[c]);
    }
  }
}

template <bool Log>
Tensor softmax_backward_kernel(const std::vector<Tensor>& in, const Attrs& a, const Meta& m,
                               const char* name) {
  Tensor g = contiguous_input(in[0]);
  Tensor y = contiguous_input(in[1]);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (y.numel() == 0) return out;
  const DimSplit split = split_at(y.shape(), a.dim);
  const int64_t outer = split.outer, K = split.K, inner = split.inner;
  VK_DISPATCH_FLOAT(y.dtype(), name, {
    const T* gp = g.data<T>();
    const T* yp = y.data<T>();
    T* dp = out.data<T>();
    if (inner == 1) {
      const bool stream = !Log && streams(y);
      parallel_for(outer, std::max<int64_t>(1, kWork / K), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o)
          softmax_backward_row<T, Log>(gp + o * K, yp + o * K, dp + o * K, K, stream);
        if (stream) stream_fence();
      });
    } else {
      const int64_t nc = (inner + kColWidth - 1) / kColWidth;
      const int64_t per = K * std::min(inner, kColWidth);
      parallel_for(outer * nc, std::max<int64_t>(1, kWork / per), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const int64_t o = t / nc, c0 = (t % nc) * kColWidth;
          const int64_t off = o * K * inner + c0;
          softmax_backward_cols<T, Log>(gp + off, yp + off, dp + off, K, inner,
                                        std::min(kColWidth, inner - c0));
        }
      });
    }
  });
  return out;
}

}  // namespace

VK_KERNEL(softmax) { return softmax_kernel<false>(in, a, m, "softmax"); }
VK_KERNEL(log_softmax) { return softmax_kernel<true>(in, a, m, "log_softmax"); }
VK_KERNEL(softmax_backward) { return softmax_backward_kernel<false>(in, a, m, "softmax_backward"); }
VK_KERNEL(log_softmax_backward) {
  return softmax_backward_kernel<true>(in, a, m, "log_softmax_backward");
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
