// Fused layer normalisation: each row (the trailing normalized dims, made contiguous) is one work
// item; its mean and biased variance are taken from the row (it stays in L1): for float, sums in
// float blocks added into double (simd.h row_sums) of x - shift and its square in one pass
// (row_shift: the mean of the first 8 elements), a second pass about the mean where the shift
// lies far from it; for double, and for float rows whose float sums would overflow or underflow,
// two passes in double, 16 lanes (element k in lane k mod 16) combined in a fixed tree. The one
// pass took a 768 x 64 forward (gpt_small's) from 66 to 42 us and its forward and backward from
// 168 to 115 (Zen 3, one thread; torch 47 and 147). Rows are split among threads, never a
// row, so results are bitwise identical at any thread count. The backward kernel recomputes the
// same statistics from x rather than keeping them.
//   forward:  xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps); y = xhat * w + b
//   backward: u = g * w; dx = rstd * (u - mean(u) - xhat * mean(u * xhat))
//   weight and bias gradients: sums over rows of g * xhat and of g, in float over blocks of 32
//   rows, added into one double partial per chunk of rows (the chunk size depends only on the
//   shape), the partials added in chunk order. layer_norm_backward can produce them in the same
//   pass as dx (a.norm.with_param_grad), as its output 1.
// y and dx are written around the cache when large (simd.h write_out; the rows of backward_block,
// 2 KB or less, are not); so is batch_norm's y (Zen 3, one thread, training-mode forward of
// 32x64x56x56: 3.79 -> 2.81 ms; 16x64x112x112: 7.63 -> 5.85).
#include "vkml/backend/cpu/norm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "vkml/backend/cpu/cache.h"
#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/simd.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

constexpr int64_t kWork = 32768;         // about this many elements per parallel range
constexpr int64_t kParamChunk = 262144;  // about this many elements per partial weight gradient
constexpr int64_t kMaxChunks = 64;       // at most this many partials

// sum of f(i) for i in [0, n), in 16 double lanes combined in a fixed tree.
template <class F>
inline double lane_sum(int64_t n, F f) {
  double s[16] = {};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int j = 0; j < 16; ++j) s[j] += f(k + j);
  for (int j = 0; k < n; ++k, ++j) s[j] += f(k);
  for (int w = 1; w < 16; w *= 2)
    for (int j = 0; j + w < 16; j += 2 * w) s[j] += s[j + w];
  return s[0];
}

// Three sums in one pass: f(i, a, b, c) adds element i's terms into lanes a, b, c (each as
// lane_sum's, so a sum taken here is bitwise the one lane_sum gives). The elements are `runs` runs
// of n (run r starting at r * stride, its element j in lane j mod 16): one row by default, a
// batch_norm channel's segments otherwise.
template <class F>
inline void lane_sum3(int64_t n, F f, double& ra, double& rb, double& rc, int64_t runs = 1,
                      int64_t stride = 0) {
  double a[16] = {}, b[16] = {}, c[16] = {};
  for (int64_t r = 0; r < runs; ++r) {
    const int64_t base = r * stride;
    int64_t k = 0;
    for (; k + 16 <= n; k += 16)
      for (int j = 0; j < 16; ++j) f(base + k + j, a[j], b[j], c[j]);
    for (int j = 0; k < n; ++k, ++j) f(base + k, a[j], b[j], c[j]);
  }
  for (int w = 1; w < 16; w *= 2)
    for (int j = 0; j + w < 16; j += 2 * w) {
      a[j] += a[j + w];
      b[j] += b[j + w];
      c[j] += c[j + w];
    }
  ra = a[0];
  rb = b[0];
  rc = c[0];
}

template <class T>
struct RowStats {
  T mean, rstd;
};

template <class T>
RowStats<T> stats_of(double mu, double var, double eps) {
  return {static_cast<T>(mu), static_cast<T>(1.0 / std::sqrt(var + eps))};
}

// The double path: mean and biased variance in two passes, every term in double. For the rows
// the float sums cannot take (fits_float_sums).
template <class T>
inline RowStats<T> stats_from_sum(const T* x, int64_t n, double sum, double eps) {
  const double mu = sum / static_cast<double>(n);
  const double var = lane_sum(n,
                              [x, mu](int64_t i) {
                                const double d = static_cast<double>(x[i]) - mu;
                                return d * d;
                              }) /
                     static_cast<double>(n);
  return stats_of<T>(mu, var, eps);
}

template <class T>
inline RowStats<T> row_stats_double(const T* x, int64_t n, double eps) {
  return stats_from_sum(x, n, lane_sum(n, [x](int64_t i) { return static_cast<double>(x[i]); }),
                        eps);
}

// Whether float sums (row_sums) can be trusted for a row, from the mean of their squared terms:
// finite (no term or partial sum overflowed, no inf or NaN in the row) and at least 2^-80, far from
// where squares lose bits to underflow (2^-126; a 0 may be one that underflowed). Rows outside
// (constant rows too) take the double path, and their results are those of the double path.
inline bool fits_float_sums(double mean_square) {
  return std::isfinite(mean_square) && mean_square >= 0x1p-80;
}

// The same for a gradient's terms, where 0 also fits: the gradient is 0, or so small that its
// terms' share of the sums does not count.
inline bool gradient_sums_fit(double mean_square) {
  return mean_square == 0.0 || fits_float_sums(mean_square);
}

// The biased variance of `count` values about their mean mu, from the sum of the squares of x - m,
// m = mu rounded to float: that sum is count var + count (mu - m)^2, and the last term is taken
// off. False where the sums do not fit.
inline bool variance_from_squares(double squares, double count, double mu, float m, double& var) {
  const double mean_square = squares / count;
  const double off = mu - static_cast<double>(m);
  var = std::max(mean_square - off * off, 0.0);
  return std::isfinite(mu) && fits_float_sums(mean_square);
}

// The biased variance of a row about its mean mu (variance_from_squares).
inline bool variance_about(const float* x, int64_t n, double mu, double& var) {
  const float m = static_cast<float>(mu);
  const auto [squares] = row_sums<1>(n, [&](int64_t k, int valid, FloatVec(&t)[1]) {
    const FloatVec d = load_floats(x + k, valid) - m;
    t[0] = d * d;
  });
  return variance_from_squares(squares, static_cast<double>(n), mu, m, var);
}

// The point a float row's sums are taken about: the mean of its first 8 elements (x[0] in a
// shorter row), in a fixed order on every instruction set. The sums of x - shift round relative
// to the row's spread, not its magnitude (a value lies at most sqrt(n) standard deviations from
// the mean, and so does the shift), and near the mean their squares give the variance in the
// same pass.
inline float row_shift(const float* x, int64_t n) {
  if (n < 8) return x[0];
  return (((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]))) * 0.125f;
}

// The biased variance from one pass's sums about the shift: mean_square - mean_d^2, mean_d =
// mean - shift. That cancels by mean_d^2 / var, so it is taken only for a shift within a standard
// deviation of the mean (the variance is then good to a few roundings of the float sums); false
// otherwise, or where the sums do not fit, and the caller takes a second pass (variance_about).
inline bool variance_from_shifted(double squares, double count, double mean_d, double& var) {
  const double mean_square = squares / count;
  var = mean_square - mean_d * mean_d;
  return fits_float_sums(mean_square) && mean_d * mean_d <= var;
}

// A float row's biased variance, given its mean mu and one pass's sums about the shift
// (row_shift): from those sums where the shift is near the mean, else from a second pass about mu.
// False where neither fits (the caller takes the double path).
inline bool row_variance(const float* x, int64_t n, double squares, double mean_d, double mu,
                         double& var) {
  return std::isfinite(mu) &&
         (variance_from_shifted(squares, static_cast<double>(n), mean_d, var) ||
          variance_about(x, n, mu, var));
}

// Mean and rstd of a row. float: float sums of d = x - shift (row_shift) and of d^2 in one pass,
// a second pass for the variance (variance_about) where the shift lies far from the mean; about
// half the time of the double path, which double rows and the rows those sums do not fit take.
template <class T>
inline RowStats<T> row_stats(const T* x, int64_t n, double eps) {
  if constexpr (!std::is_same_v<T, float>) {
    return row_stats_double(x, n, eps);
  } else {
    const float shift = row_shift(x, n);
    const auto [sd, sdd] = row_sums<2>(n, [&](int64_t k, int valid, FloatVec(&t)[2]) {
      const FloatVec d = load_floats(x + k, valid) - shift;
      t[0] = d;
      t[1] = d * d;
    });
    const double mean_d = sd / static_cast<double>(n);
    const double mu = static_cast<double>(shift) + mean_d;
    double var;
    if (!row_variance(x, n, sdd, mean_d, mu, var)) return row_stats_double(x, n, eps);
    return stats_of<float>(mu, var, eps);
  }
}

Tensor contiguous_of(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor c = Tensor::empty(x.shape(), x.dtype());
  copy_into(c, x);
  return c;
}

// A normalisation kernel's operands, contiguous. Forward: x[, weight][, bias]; backward: g,
// x[, weight] (a.norm says which are given). Absent ones are undefined.
struct NormOperands {
  Tensor g, x, w, b;
};

NormOperands forward_operands(const std::vector<Tensor>& in, const Attrs& a) {
  const bool has_w = a.norm.has_weight, has_b = a.norm.has_bias;
  return {Tensor(), contiguous_of(in[0]), has_w ? contiguous_of(in[1]) : Tensor(),
          has_b ? contiguous_of(in[has_w ? 2 : 1]) : Tensor()};
}

NormOperands backward_operands(const std::vector<Tensor>& in, const Attrs& a) {
  const bool has_w = a.norm.has_weight;
  return {contiguous_of(in[0]), contiguous_of(in[1]), has_w ? contiguous_of(in[2]) : Tensor(),
          Tensor()};
}

}  // namespace

VK_KERNEL(layer_norm) {
  const NormOperands ops = forward_operands(in, a);
  const Tensor &x = ops.x, &w = ops.w, &b = ops.b;
  const bool has_w = w.defined(), has_b = b.defined();
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const int64_t n = numel_of(a.shape);
  if (x.numel() == 0 || n == 0) return out;
  const int64_t rows = x.numel() / n;
  const double eps = a.norm.eps;
  VK_DISPATCH_FLOAT(x.dtype(), "layer_norm", {
    const T* xp = x.data<T>();
    const T* wp = has_w ? w.data<T>() : nullptr;
    const T* bp = has_b ? b.data<T>() : nullptr;
    T* yp = out.data<T>();
    const bool stream = streams(x);
    parallel_for(rows, std::max<int64_t>(1, kWork / n), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = xp + r * n;
        if (r + 2 < r1) prefetch_row(xr + 2 * n, n * sizeof(T));
        const RowStats<T> st = row_stats(xr, n, eps);
        const T mu = st.mean, rs = st.rstd;
        write_out(yp + r * n, n, stream, [&](T* __restrict y, int64_t i0, int64_t k) {
          const T* xi = xr + i0;
          if (wp && bp) {
            for (int64_t i = 0; i < k; ++i) y[i] = (xi[i] - mu) * rs * wp[i0 + i] + bp[i0 + i];
          } else if (wp) {
            for (int64_t i = 0; i < k; ++i) y[i] = (xi[i] - mu) * rs * wp[i0 + i];
          } else if (bp) {
            for (int64_t i = 0; i < k; ++i) y[i] = (xi[i] - mu) * rs + bp[i0 + i];
          } else {
            for (int64_t i = 0; i < k; ++i) y[i] = (xi[i] - mu) * rs;
          }
        });
      }
      if (stream) stream_fence();
    });
  });
  return out;
}

namespace {

// Rows per partial weight/bias gradient: a function of the shape alone, never of the threads.
int64_t param_chunk(int64_t rows, int64_t n) {
  return std::max({int64_t{1}, kParamChunk / n, (rows + kMaxChunks - 1) / kMaxChunks});
}

// What the backward pass needs of one row: mean, rstd, mean(u) and mean(u * xhat), u = g * w.
template <class T>
struct BackRow {
  T mu, rs, mean_u, mean_ux;
};

template <class T, bool W>
inline T u_at(const T* gr, const T* wp, int64_t i) {
  if constexpr (W) {
    return gr[i] * wp[i];
  } else {
    return gr[i];
  }
}

// The double path of back_row: one pass over both rows, sum(x), sum(u), sum(u x) in double; the
// variance from L1; then sum(u xhat) = rstd (sum(u x) - mean sum(u)).
template <class T, bool W>
inline BackRow<T> back_row_double(const T* gr, const T* xr, const T* wp, int64_t n, double eps) {
  const double inv_n = 1.0 / static_cast<double>(n);
  double sx, su, sux;
  lane_sum3(
      n,
      [&](int64_t i, double& a, double& b, double& c) {
        const double xi = static_cast<double>(xr[i]),
                     ui = static_cast<double>(u_at<T, W>(gr, wp, i));
        a += xi;
        b += ui;
        c += ui * xi;
      },
      sx, su, sux);
  const RowStats<T> st = stats_from_sum(xr, n, sx, eps);
  const T mean_ux = static_cast<T>(static_cast<double>(st.rstd) * (sux - sx * inv_n * su) * inv_n);
  return {st.mean, st.rstd, static_cast<T>(su * inv_n), mean_ux};
}

// One pass over both rows (the only one that reads memory). float: sums in float (row_sums) of
// d = x - shift (row_shift), d^2, u, u d and u^2 (the last only to check that u's terms fit),
// the variance as row_stats', then sum(u xhat) = rstd sum(u (x - mean)) = rstd (sum(u d) - (mean
// - shift) sum(u)), which cancels relative to the row's spread only. double rows, and rows whose
// sums do not fit, take back_row_double.
template <class T, bool W>
inline BackRow<T> back_row(const T* gr, const T* xr, const T* wp, int64_t n, double eps) {
  if constexpr (!std::is_same_v<T, float>) {
    return back_row_double<T, W>(gr, xr, wp, n, eps);
  } else {
    const double inv_n = 1.0 / static_cast<double>(n);
    const float shift = row_shift(xr, n);
    const auto [sd, sdd, su, sud, suu] = row_sums<5>(n, [&](int64_t k, int valid, FloatVec(&t)[5]) {
      const FloatVec d = load_floats(xr + k, valid) - shift;
      FloatVec u = load_floats(gr + k, valid);
      if constexpr (W) u *= load_floats(wp + k, valid);
      t[0] = d;
      t[1] = d * d;
      t[2] = u;
      t[3] = u * d;
      t[4] = u * u;
    });
    const double mean_d = sd * inv_n;  // mean - shift
    const double mu = static_cast<double>(shift) + mean_d;
    double var;
    if (!gradient_sums_fit(suu * inv_n) || !std::isfinite(sud) ||
        !row_variance(xr, n, sdd, mean_d, mu, var))
      return back_row_double<T, W>(gr, xr, wp, n, eps);
    const RowStats<float> st = stats_of<float>(mu, var, eps);
    const float mean_ux =
        static_cast<float>(static_cast<double>(st.rstd) * (sud - mean_d * su) * inv_n);
    return {st.mean, st.rstd, static_cast<float>(su * inv_n), mean_ux};
  }
}

// Rows [r0, r1) of the backward pass. DX: write dx (u = g * w when W); P: add g * xhat and g
// into aw, ab (float, one block of rows at a time; the caller folds them into double).
// The pointers never alias (restrict lets the row loops vectorise with several stores).
template <class T, bool W, bool DX, bool P>
void backward_rows(const T* __restrict gp, const T* __restrict xp, const T* __restrict wp,
                   T* __restrict dp, int64_t r0, int64_t r1, int64_t n, double eps,
                   T* __restrict aw, T* __restrict ab, bool stream) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* gr = gp + r * n;
    const T* xr = xp + r * n;
    if constexpr (DX) {
      const BackRow<T> p = back_row<T, W>(gr, xr, wp, n, eps);
      write_out(dp + r * n, n, stream, [&](T* __restrict dx, int64_t i0, int64_t k) {
        for (int64_t j = 0; j < k; ++j) {
          const int64_t i = i0 + j;
          const T xh = (xr[i] - p.mu) * p.rs;
          dx[j] = p.rs * ((u_at<T, W>(gr, wp, i) - p.mean_u) - xh * p.mean_ux);
          if constexpr (P) {
            aw[i] += gr[i] * xh;
            ab[i] += gr[i];
          }
        }
      });
    } else {
      const RowStats<T> st = row_stats(xr, n, eps);
      const T mu = st.mean, rs = st.rstd;
      for (int64_t i = 0; i < n; ++i) {
        aw[i] += gr[i] * ((xr[i] - mu) * rs);
        ab[i] += gr[i];
      }
    }
  }
}

constexpr int64_t kSubRows = 32;          // rows summed in float before they are added into double
constexpr int64_t kStrip = 64;            // columns of a strip in backward_block
constexpr int64_t kStripRowBytes = 2048;  // backward_block's strips for rows of at most this

// Rows [r0, r1) (at most kSubRows) of the backward pass with the weight and bias gradients, for
// rows of at most kStripRowBytes: the float sums over these rows of g * xhat and g are written to
// aw and ab; DX: dx too. Every row's statistics first (back_row or row_stats: the pass that reads
// memory), then the rows again a strip of kStrip columns at a time, the strip's sums held in
// registers across the block's rows, where running sums per column in memory (backward_rows)
// cost two loads and two stores per element more. Zen 4, one thread, the whole backward pass:
// 128 columns 342 -> 287 us for 2048 rows, 512 columns 380 -> 343 us for 1024 rows. Wider rows
// keep backward_rows, each row's pass right after its statistics: the block's rows no longer fit
// in L1 for a second visit (1024 columns ran 2% slower with strips). A column's sum adds the rows
// in row order from 0 either way, and the results are those of backward_rows to the bit. The
// strips are kStrip columns at every vector width, and the last, partial one takes the same
// vector code: every element sees the same operations on every instruction set.
template <class T, bool W, bool DX>
void backward_block(const T* gp, const T* xp, const T* wp, T* dp, int64_t r0, int64_t r1, int64_t n,
                    double eps, T* __restrict aw, T* __restrict ab) {
  using V = Simd<T>;
  constexpr int L = static_cast<int>(sizeof(V) / sizeof(T)), K = static_cast<int>(kStrip) / L;
  auto stats = [&](int64_t r) -> BackRow<T> {
    if constexpr (DX) {
      return back_row<T, W>(gp + r * n, xp + r * n, wp, n, eps);
    } else {
      const RowStats<T> s = row_stats(xp + r * n, n, eps);
      return {s.mean, s.rstd, T(0), T(0)};
    }
  };
  BackRow<T> st[kSubRows];
  for (int64_t r = r0; r < r1; ++r) st[r - r0] = stats(r);
  // columns [c, c + kStrip) of every row; Full: all of them exist, else the first `left`
  auto strip = [&]<bool Full>(int64_t c, int64_t left) __attribute__((always_inline)) {
    V sw[K] = {}, sb[K] = {}, wv[K];
    int valid[K];
#pragma GCC unroll 16
    for (int j = 0; j < K; ++j) {
      valid[j] = Full ? L : static_cast<int>(std::clamp<int64_t>(left - j * L, 0, L));
      if constexpr (W) wv[j] = load_part(wp + c + j * L, Full ? L : valid[j]);
    }
    for (int64_t r = r0; r < r1; ++r) {
      const BackRow<T>& p = st[r - r0];
#pragma GCC unroll 16
      for (int j = 0; j < K; ++j) {
        if (!Full && valid[j] == 0) break;
        const int64_t at = r * n + c + j * L;
        const int vl = Full ? L : valid[j];
        const V g = load_part(gp + at, vl);
        const V xh = (load_part(xp + at, vl) - p.mu) * p.rs;
        if constexpr (DX) {
          const V u = W ? g * wv[j] : g;
          store_part(dp + at, V(p.rs * ((u - p.mean_u) - xh * p.mean_ux)), vl);
        }
        sw[j] += g * xh;
        sb[j] += g;
      }
    }
#pragma GCC unroll 16
    for (int j = 0; j < K; ++j) {
      if (!Full && valid[j] == 0) break;
      store_part(aw + c + j * L, sw[j], Full ? L : valid[j]);
      store_part(ab + c + j * L, sb[j], Full ? L : valid[j]);
    }
  };
  int64_t c = 0;
  for (; c + kStrip <= n; c += kStrip) strip.template operator()<true>(c, kStrip);
  if (c < n) strip.template operator()<false>(c, n - c);
}

// The backward pass over all rows. With P, the weight and bias gradients go to pg (2 * n
// values): per chunk of rows, float sums of kSubRows rows at a time added into a double partial;
// the partials added in chunk order.
template <class T, bool W, bool DX, bool P>
void backward_all(const T* gp, const T* xp, const T* wp, T* dp, T* pg, int64_t rows, int64_t n,
                  double eps) {
  const bool stream = DX && rows * n * static_cast<int64_t>(sizeof(T)) >= stream_min_bytes();
  if constexpr (!P) {
    parallel_for(rows, std::max<int64_t>(1, kWork / n), [&](int64_t r0, int64_t r1) {
      backward_rows<T, W, DX, false>(gp, xp, wp, dp, r0, r1, n, eps, nullptr, nullptr, stream);
      if (stream) stream_fence();
    });
  } else {
    const int64_t chunk = param_chunk(rows, n);
    const int64_t chunks = (rows + chunk - 1) / chunk;
    const bool strips = n * static_cast<int64_t>(sizeof(T)) <= kStripRowBytes;
    std::vector<double> part(static_cast<size_t>(std::max<int64_t>(chunks, 1) * 2 * n), 0.0);
    parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      std::vector<T> acc(static_cast<size_t>(2 * n));
      for (int64_t c = c0; c < c1; ++c) {
        double* pw = part.data() + c * 2 * n;
        const int64_t end = std::min(rows, (c + 1) * chunk);
        for (int64_t r = c * chunk; r < end; r += kSubRows) {
          const int64_t r1 = std::min(end, r + kSubRows);
          if (strips) {
            backward_block<T, W, DX>(gp, xp, wp, dp, r, r1, n, eps, acc.data(), acc.data() + n);
          } else {
            std::fill(acc.begin(), acc.end(), T(0));
            backward_rows<T, W, DX, true>(gp, xp, wp, dp, r, r1, n, eps, acc.data(), acc.data() + n,
                                          stream);
          }
          for (int64_t i = 0; i < 2 * n; ++i) pw[i] += static_cast<double>(acc[i]);
        }
      }
      if (stream) stream_fence();
    });
    for (int64_t c = 1; c < chunks; ++c) {
      const double* src = part.data() + c * 2 * n;
      for (int64_t i = 0; i < 2 * n; ++i) part[i] += src[i];
    }
    for (int64_t i = 0; i < 2 * n; ++i) pg[i] = static_cast<T>(part[i]);
  }
}

}  // namespace

// a.norm.with_param_grad: also compute the weight and bias gradients (layer_norm_param_grad's
// values) from the same pass, as output 1 (undefined without it).
VK_KERNEL(layer_norm_backward) {
  const NormOperands ops = backward_operands(in, a);
  const Tensor &g = ops.g, &x = ops.x, &w = ops.w;
  const bool has_w = w.defined();
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const int64_t n = numel_of(a.shape);
  Tensor pg;
  if (a.norm.with_param_grad) {
    Shape ps{2};
    ps.insert(ps.end(), a.shape.begin(), a.shape.end());
    pg = Tensor::empty(ps, m.dtype);
  }
  if (n == 0) return {out, pg};
  const int64_t rows = x.numel() / n;
  VK_DISPATCH_FLOAT(x.dtype(), "layer_norm_backward", {
    const T* gp = g.data<T>();
    const T* xp = x.data<T>();
    const T* wp = has_w ? w.data<T>() : nullptr;
    T* dp = out.data<T>();
    T* pp = a.norm.with_param_grad ? pg.data<T>() : nullptr;
    const bool pgrad = a.norm.with_param_grad;
    const double eps = a.norm.eps;
    if (has_w && pgrad) backward_all<T, true, true, true>(gp, xp, wp, dp, pp, rows, n, eps);
    if (has_w && !pgrad) backward_all<T, true, true, false>(gp, xp, wp, dp, pp, rows, n, eps);
    if (!has_w && pgrad) backward_all<T, false, true, true>(gp, xp, wp, dp, pp, rows, n, eps);
    if (!has_w && !pgrad) backward_all<T, false, true, false>(gp, xp, wp, dp, pp, rows, n, eps);
  });
  return {out, pg};
}

VK_KERNEL(layer_norm_param_grad) {
  Tensor g = contiguous_of(in[0]);
  Tensor x = contiguous_of(in[1]);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const int64_t n = numel_of(a.shape);
  if (n == 0) return out;
  const int64_t rows = x.numel() / n;
  VK_DISPATCH_FLOAT(x.dtype(), "layer_norm_param_grad", {
    backward_all<T, false, false, true>(g.data<T>(), x.data<T>(), nullptr, nullptr, out.data<T>(),
                                        rows, n, a.norm.eps);
  });
  return out;
}

// ---- batch normalisation ----
// x is (N, C, S...) made contiguous: channel c's M = N * S values lie in N segments of S. Each
// channel is one work item (channels split among threads, never a channel). Sums are taken in
// float blocks (row_sums) where the segments are whole 16-lane vectors (channel_float_sums), else
// in double in 16 lanes kept across the segments and combined in a fixed tree (channel_sum), so
// results are bitwise the same at any thread count. Same formulas as layer_norm with a row being
// a channel: xhat = (x - mean) * rstd; y = xhat * w[c] + b[c];
// dx = w[c] * rstd * (g - mean(g) - xhat * mean(g * xhat)).

namespace {

struct ChannelShape {
  int64_t N, C, S;
  int64_t count() const { return N * S; }  // the values of one channel
};

ChannelShape channel_shape(const Tensor& x) {
  const int64_t N = x.shape()[0], C = x.shape()[1];
  return {N, C, N * C == 0 ? 0 : x.numel() / (N * C)};
}

// Channel statistics from its values: the mean in one pass, the biased variance in a second.
struct ChannelStats {
  double mean, var;
};

// sum of f(k) over a channel's values, k = the offset of a value from the channel's first (N
// segments of S, segment n at n * C * S): 16 double lanes kept across the segments (value i of a
// segment in lane i mod 16), combined in lane_sum's fixed tree.
template <class F>
double channel_sum(const ChannelShape& cs, F f) {
  double s[16] = {};
  for (int64_t n = 0; n < cs.N; ++n) {
    const int64_t base = n * cs.C * cs.S;
    int64_t k = 0;
    for (; k + 16 <= cs.S; k += 16)
      for (int j = 0; j < 16; ++j) s[j] += f(base + k + j);
    for (int j = 0; k < cs.S; ++k, ++j) s[j] += f(base + k);
  }
  for (int w = 1; w < 16; w *= 2)
    for (int j = 0; j + w < 16; j += 2 * w) s[j] += s[j + w];
  return s[0];
}

// The biased variance of a channel about mu, in a second pass.
template <class T>
double channel_var(const T* xc, const ChannelShape& cs, double mu) {
  return channel_sum(cs,
                     [xc, mu](int64_t k) {
                       const double d = static_cast<double>(xc[k]) - mu;
                       return d * d;
                     }) /
         static_cast<double>(cs.count());
}

template <class T>
ChannelStats channel_stats_double(const T* xc, const ChannelShape& cs) {
  const double m = static_cast<double>(cs.count());
  const double mu = channel_sum(cs, [xc](int64_t k) { return static_cast<double>(xc[k]); }) / m;
  return {mu, channel_var(xc, cs, mu)};
}

// What a channel's backward needs: mean, rstd, mean(g) and mean(g * xhat).
struct ChannelGrad {
  double mean, rstd, mean_g, mean_gx;
};

// The double path of channel_grad: sum(x), sum(g) and sum(g x) in one pass over both (in
// channel_sum's lanes and order: lane_sum3 over the channel's segments), then the variance.
template <class T>
ChannelGrad channel_grad_double(const T* gc, const T* xc, const ChannelShape& cs, double eps) {
  const double m = static_cast<double>(cs.count());
  double sx, sg, sgx;
  lane_sum3(
      cs.S,
      [gc, xc](int64_t k, double& a, double& b, double& c) {
        const double xk = static_cast<double>(xc[k]), gk = static_cast<double>(gc[k]);
        a += xk;
        b += gk;
        c += gk * xk;
      },
      sx, sg, sgx, cs.N, cs.C * cs.S);
  const double mean = sx / m;
  const double rstd = 1.0 / std::sqrt(channel_var(xc, cs, mean) + eps);
  // sum(g * xhat) = rstd * (sum(g x) - mean * sum(g))
  return {mean, rstd, sg / m, rstd * (sgx - mean * sg) / m};
}

// Float sums over a channel (row_sums over its values in order) where its segments are whole
// 16-lane vectors, so that no machine vector crosses a segment and value i of a segment is in
// lane i mod 16 at every vector width. terms(at, valid, t) as row_sums', `at` the value's offset
// from the channel's first. row_sums asks for increasing values, so the segment is tracked as it
// goes (no division per vector).
inline bool channel_takes_float_sums(const ChannelShape& cs) {
  return cs.S % kRowLanes == 0 && cs.count() > 0;
}
template <int Nt, class F>
std::array<double, Nt> channel_float_sums(const ChannelShape& cs, F terms) {
  int64_t segment_end = cs.S, skip = 0;  // value k lies at k + skip
  return row_sums<Nt>(cs.count(), [&](int64_t k, int valid, FloatVec(&t)[Nt]) {
    while (k >= segment_end) {
      segment_end += cs.S;
      skip += (cs.C - 1) * cs.S;
    }
    terms(k + skip, valid, t);
  });
}

// variance_about for a channel whose segments are whole vectors.
inline bool channel_variance_about(const float* xc, const ChannelShape& cs, double mu,
                                   double& var) {
  const float m = static_cast<float>(mu);
  const auto [squares] = channel_float_sums<1>(cs, [&](int64_t at, int valid, FloatVec(&t)[1]) {
    const FloatVec d = load_floats(xc + at, valid) - m;
    t[0] = d * d;
  });
  return variance_from_squares(squares, static_cast<double>(cs.count()), mu, m, var);
}

// A channel's statistics. float channels whose segments are whole vectors: float sums as
// layer_norm's rows take them (the mean about the channel's first value, the variance about the
// mean rounded to float, corrected), about half the time of the double path, which the other
// channels and those whose sums do not fit (fits_float_sums) take.
template <class T>
ChannelStats channel_stats(const T* xc, const ChannelShape& cs) {
  if constexpr (std::is_same_v<T, float>) {
    if (channel_takes_float_sums(cs)) {
      const double count = static_cast<double>(cs.count());
      const float x0 = xc[0];
      const auto [shifted] = channel_float_sums<1>(cs, [&](int64_t at, int valid, FloatVec(&t)[1]) {
        t[0] = load_floats(xc + at, valid) - x0;
      });
      const double mu = static_cast<double>(x0) + shifted / count;
      double var;
      if (channel_variance_about(xc, cs, mu, var)) return {mu, var};
    }
  }
  return channel_stats_double(xc, cs);
}

// What a channel's backward needs. float channels whose segments are whole vectors: float sums of
// d = x - x[0], g, g d and g^2 (the last to check that g's terms fit) in one pass, the variance
// as channel_stats', sum(g xhat) = rstd (sum(g d) - (mean - x[0]) sum(g)); the double path
// otherwise.
template <class T>
ChannelGrad channel_grad(const T* gc, const T* xc, const ChannelShape& cs, double eps) {
  if constexpr (std::is_same_v<T, float>) {
    if (channel_takes_float_sums(cs)) {
      const double count = static_cast<double>(cs.count());
      const float x0 = xc[0];
      const auto [sd, sg, sgd, sgg] =
          channel_float_sums<4>(cs, [&](int64_t at, int valid, FloatVec(&t)[4]) {
            const FloatVec d = load_floats(xc + at, valid) - x0;
            const FloatVec g = load_floats(gc + at, valid);
            t[0] = d;
            t[1] = g;
            t[2] = g * d;
            t[3] = g * g;
          });
      const double shift = sd / count, mu = static_cast<double>(x0) + shift;
      double var;
      if (channel_variance_about(xc, cs, mu, var) && gradient_sums_fit(sgg / count) &&
          std::isfinite(sgd)) {
        const double rstd = 1.0 / std::sqrt(var + eps);
        return {mu, rstd, sg / count, rstd * (sgd - shift * sg) / count};
      }
    }
  }
  return channel_grad_double(gc, xc, cs, eps);
}

// Channel c's weight and bias gradients into the (2, C) pg: sum(g * xhat), sum(g).
template <class T>
void write_param_grad(const ChannelGrad& p, const ChannelShape& cs, int64_t c, T* pg) {
  const double count = static_cast<double>(cs.count());
  pg[c] = static_cast<T>(p.mean_gx * count);
  pg[cs.C + c] = static_cast<T>(p.mean_g * count);
}

int64_t channel_grain(const ChannelShape& cs) {
  return std::max<int64_t>(1, kWork / std::max<int64_t>(cs.count(), 1));
}

}  // namespace

VK_KERNEL(batch_norm) {
  const NormOperands ops = forward_operands(in, a);
  const Tensor &x = ops.x, &w = ops.w, &b = ops.b;
  const bool has_w = w.defined(), has_b = b.defined();
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const ChannelShape cs = channel_shape(x);
  Tensor stats = Tensor::empty({2, cs.C}, m.dtype);  // [mean, biased variance] per channel
  const double eps = a.norm.eps;
  VK_DISPATCH_FLOAT(x.dtype(), "batch_norm", {
    const T* xp = x.data<T>();
    const T* wp = has_w ? w.data<T>() : nullptr;
    const T* bp = has_b ? b.data<T>() : nullptr;
    T* yp = out.data<T>();
    T* sp = stats.data<T>();
    const bool stream = streams(x);
    parallel_for(cs.C, channel_grain(cs), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const ChannelStats st = channel_stats(xp + c * cs.S, cs);
        sp[c] = static_cast<T>(st.mean);
        sp[cs.C + c] = static_cast<T>(st.var);
        // y = x * scale + shift: scale = rstd * w and shift = b - mean * scale taken in double
        // and rounded once each (torch's form)
        const double rstd = 1.0 / std::sqrt(st.var + eps);
        const double scale = rstd * (wp ? static_cast<double>(wp[c]) : 1.0);
        const double shift = (bp ? static_cast<double>(bp[c]) : 0.0) - st.mean * scale;
        const T sc = static_cast<T>(scale), sh = static_cast<T>(shift);
        for (int64_t n = 0; n < cs.N; ++n) {
          const T* xs = xp + (n * cs.C + c) * cs.S;
          write_out(yp + (n * cs.C + c) * cs.S, cs.S, stream,
                    [&](T* __restrict y, int64_t i0, int64_t k) {
                      for (int64_t i = 0; i < k; ++i) y[i] = xs[i0 + i] * sc + sh;
                    });
        }
      }
      if (stream) stream_fence();
    });
  });
  return {out, stats};
}

VK_KERNEL(batch_norm_backward) {
  const NormOperands ops = backward_operands(in, a);
  const Tensor &g = ops.g, &x = ops.x, &w = ops.w;
  const bool has_w = w.defined();
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const ChannelShape cs = channel_shape(x);
  Tensor pg;
  if (a.norm.with_param_grad) {
    pg = Tensor::empty({2, cs.C}, m.dtype);
  }
  VK_DISPATCH_FLOAT(x.dtype(), "batch_norm_backward", {
    const T* gp = g.data<T>();
    const T* xp = x.data<T>();
    const T* wp = has_w ? w.data<T>() : nullptr;
    T* dp = out.data<T>();
    T* pp = a.norm.with_param_grad ? pg.data<T>() : nullptr;
    parallel_for(cs.C, channel_grain(cs), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const ChannelGrad p = channel_grad(gp + c * cs.S, xp + c * cs.S, cs, a.norm.eps);
        if (pp) write_param_grad(p, cs, c, pp);
        // dx = k * (g - mean(g) - xhat * mean(g xhat)), k = w * rstd, xhat = (x - mean) * rstd,
        // as layer_norm's. (Folded into k g + kx x + k0, the coefficient kx = -k rstd mean(g xhat)
        // scales as 1 / var: a subnormal for channels of 1e20, an overflow for 1e-25 with eps 0.)
        const T k = static_cast<T>((wp ? static_cast<double>(wp[c]) : 1.0) * p.rstd);
        const T mean = static_cast<T>(p.mean), rstd = static_cast<T>(p.rstd);
        const T mean_g = static_cast<T>(p.mean_g), mean_gx = static_cast<T>(p.mean_gx);
        for (int64_t n = 0; n < cs.N; ++n) {
          const T* gs = gp + (n * cs.C + c) * cs.S;
          const T* xs = xp + (n * cs.C + c) * cs.S;
          T* ds = dp + (n * cs.C + c) * cs.S;
          for (int64_t i = 0; i < cs.S; ++i)
            ds[i] = k * ((gs[i] - mean_g) - (xs[i] - mean) * rstd * mean_gx);
        }
      }
    });
  });
  return {out, pg};
}

VK_KERNEL(batch_norm_param_grad) {
  Tensor g = contiguous_of(in[0]);
  Tensor x = contiguous_of(in[1]);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const ChannelShape cs = channel_shape(x);
  VK_DISPATCH_FLOAT(x.dtype(), "batch_norm_param_grad", {
    const T* gp = g.data<T>();
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    parallel_for(cs.C, channel_grain(cs), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        write_param_grad(channel_grad(gp + c * cs.S, xp + c * cs.S, cs, a.norm.eps), cs, c, op);
      }
    });
  });
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
