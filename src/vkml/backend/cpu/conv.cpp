#include "vkml/backend/cpu/conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/linalg.h"
#include "vkml/backend/cpu/onednn.h"
#include "vkml/backend/cpu/parallel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// Ranges of about this many inner-loop steps go to one thread.
constexpr int64_t kGrainWork = 1 << 17;

int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kGrainWork / std::max<int64_t>(work_per_item, 1));
}

// [lo, hi): the output positions o in [lo0, hi0) whose input position o * s - p + off lies in
// [0, n_in).
void valid_range(int64_t lo0, int64_t hi0, int64_t n_in, int64_t s, int64_t p, int64_t off,
                 int64_t& lo, int64_t& hi) {
  const int64_t q = p - off;  // o * s >= q and o * s <= n_in - 1 + q
  lo = q <= 0 ? 0 : (q + s - 1) / s;
  const int64_t top = n_in - 1 + q;
  hi = top < 0 ? 0 : top / s + 1;
  lo = std::clamp(lo, lo0, hi0);
  hi = std::clamp(hi, lo, hi0);
}

// [lo, hi): the kernel taps t in [0, k) that some output o in [0, n_out) puts on the input:
// o * s - p + t * d in [0, n_in). A pooling kernel is a parameter, not memory, so it may be far
// larger than the plane (k = 2**32 with padding to match): the loops walk only these taps, in
// the same order as before, instead of skipping over billions of others.
void window_taps(int64_t n_out, int64_t n_in, int64_t k, int64_t s, int64_t p, int64_t d,
                 int64_t& lo, int64_t& hi) {
  const int64_t reach = (n_out - 1) * s;  // the last output's start, relative to the first's
  valid_range(0, k, n_in + reach, d, p - reach, 0, lo, hi);
}

struct Plane {  // one (H, W) input plane: element (h, w) at base[h * sh + w * sw]
  int64_t H, W, sh, sw;
};

// d[k] = s[k] for k < n when bit C of n - k is set (the tail of copy_short).
template <int64_t C, class T>
[[gnu::always_inline]] inline void copy_bit(T* __restrict d, const T* __restrict s, int64_t n,
                                            int64_t& k) {
  if ((n - k) & C) {
    std::memcpy(d + k, s + k, C * sizeof(T));
    k += C;
  }
}

// d[k] = s[k] for k < n, for the short rows of an image (tens of elements): fixed-size copies
// the compiler inlines as vector moves, where std::copy calls memmove once per row.
template <class T>
[[gnu::always_inline]] inline void copy_short(T* __restrict d, const T* __restrict s, int64_t n) {
  constexpr int64_t kChunk = 64 / static_cast<int64_t>(sizeof(T));
  int64_t k = 0;
  for (; k + kChunk <= n; k += kChunk) std::memcpy(d + k, s + k, kChunk * sizeof(T));
  if constexpr (kChunk > 32) copy_bit<32>(d, s, n, k);
  if constexpr (kChunk > 16) copy_bit<16>(d, s, n, k);
  if constexpr (kChunk > 8) copy_bit<8>(d, s, n, k);
  if constexpr (kChunk > 4) copy_bit<4>(d, s, n, k);
  copy_bit<2>(d, s, n, k);
  copy_bit<1>(d, s, n, k);
}

// Calls f(width) with width a compile-time constant for the common small widths of an image row
// (so the per-row copies and sums become a vector move or two), else with the runtime value.
template <class F>
[[gnu::always_inline]] inline void with_width(int64_t n, F&& f) {
  switch (n) {
    case 4:
      f(std::integral_constant<int64_t, 4>{});
      break;
    case 8:
      f(std::integral_constant<int64_t, 8>{});
      break;
    case 14:
      f(std::integral_constant<int64_t, 14>{});
      break;
    case 16:
      f(std::integral_constant<int64_t, 16>{});
      break;
    case 28:
      f(std::integral_constant<int64_t, 28>{});
      break;
    default:
      f(n);
  }
}

// d[k] = 0 for k < n, as copy_short (the padding at a row's ends: an element or two).
template <class T>
void zero_short(T* d, int64_t n) {
  static constexpr T kZeros[64 / sizeof(T)] = {};
  copy_short(d, kZeros, n % (64 / static_cast<int64_t>(sizeof(T))));
  for (int64_t k = n % (64 / static_cast<int64_t>(sizeof(T))); k < n;
       k += 64 / static_cast<int64_t>(sizeof(T)))
    std::memcpy(d + k, kZeros, 64);
}

// Planes up to this many elements, padded, go through a per-thread copy with the padding in
// place (below): small images, whose rows are a few elements long, where the per-row bounds
// logic of the general walk costs more than the copying.
constexpr int64_t kPaddedPlaneMax = 16384;

// The padded copy of a plane for a stride-1-along-rows window: (H + 2 ph) x (W + 2 pw), row pitch
// W + 2 pw, zeros around. Per thread, reused.
template <class T>
T* padded_buffer(int64_t n) {
  thread_local std::vector<T> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

template <class T>
bool use_padded(const Plane& p, const Window2d& w) {
  return w.sw == 1 && (p.H + 2 * w.ph) * (p.W + 2 * w.pw) <= kPaddedPlaneMax;
}

// im2col of one whole plane (all OH*OW columns) through its padded copy: row (i, j) is the
// OH x OW block of the padded plane at (i*dh, j*dw) with row step sh, each output row one short
// contiguous copy.
template <class T>
void im2col_plane_padded(const T* x, const Plane& p, const Window2d& w, int64_t OH, int64_t OW,
                         T* dst, int64_t ld) {
  const int64_t Wp = p.W + 2 * w.pw, Hp = p.H + 2 * w.ph;
  T* P = padded_buffer<T>(Hp * Wp);
  std::fill(P, P + w.ph * Wp, T{});
  for (int64_t h = 0; h < p.H; ++h) {
    T* r = P + (h + w.ph) * Wp;
    std::fill(r, r + w.pw, T{});
    if (p.sw == 1)
      with_width(p.W, [&](auto wd) { copy_short(r + w.pw, x + h * p.sh, wd); });
    else
      for (int64_t c = 0; c < p.W; ++c) r[w.pw + c] = x[h * p.sh + c * p.sw];
    std::fill(r + w.pw + p.W, r + Wp, T{});
  }
  std::fill(P + (p.H + w.ph) * Wp, P + Hp * Wp, T{});
  with_width(OW, [&](auto ow) {
    const int64_t ow_n = ow;
    for (int64_t i = 0; i < w.kh; ++i)
      for (int64_t j = 0; j < w.kw; ++j) {
        T* row = dst + (i * w.kw + j) * ld;
        const T* src = P + i * w.dh * Wp + j * w.dw;
        for (int64_t oh = 0; oh < OH; ++oh) copy_short(row + oh * ow_n, src + oh * w.sh * Wp, ow);
      }
  });
}

// Writes the kh*kw rows of one input plane's columns [l0, l1) of im2col: row i*kw + j at
// dst + (i*kw + j) * ld, column l - l0 for output position l = oh * OW + ow.
template <class T>
void im2col_rows(const T* x, const Plane& p, const Window2d& w, int64_t OW, int64_t l0, int64_t l1,
                 T* dst, int64_t ld) {
  const int64_t OH = window_out(p.H, w.kh, w.sh, w.ph, w.dh);
  if (l0 == 0 && l1 == OH * OW && use_padded<T>(p, w)) {
    im2col_plane_padded(x, p, w, OH, OW, dst, ld);
    return;
  }
  const int64_t step = w.sw * p.sw;
  for (int64_t i = 0; i < w.kh; ++i)
    for (int64_t j = 0; j < w.kw; ++j) {
      T* row = dst + (i * w.kw + j) * ld;
      int64_t jlo, jhi;  // the outputs of a full row whose input column is inside the plane
      valid_range(0, OW, p.W, w.sw, w.pw, j * w.dw, jlo, jhi);
      const int64_t off = j * w.dw - w.pw;  // input column of output ow: ow * sw + off
      int64_t oh = l0 / OW, ow0 = l0 % OW;
      for (int64_t l = l0; l < l1; ++oh, ow0 = 0) {
        const int64_t ow1 = std::min(OW, ow0 + (l1 - l));
        T* r = row + (l - l0);  // r[k] is output (oh, ow0 + k)
        const int64_t ih = oh * w.sh - w.ph + i * w.dh;
        if (ih < 0 || ih >= p.H) {
          zero_short(r, ow1 - ow0);
        } else {
          const int64_t lo = std::clamp(jlo, ow0, ow1), hi = std::clamp(jhi, lo, ow1);
          zero_short(r, lo - ow0);
          const T* src = x + ih * p.sh + (lo * w.sw + off) * p.sw;
          T* rl = r + (lo - ow0);
          if (step == 1)
            copy_short(rl, src, hi - lo);
          else
            for (int64_t k = 0; k < hi - lo; ++k) rl[k] = src[k * step];
          zero_short(r + (hi - ow0), ow1 - hi);
        }
        l += ow1 - ow0;
      }
    }
}

// o[k] += s[k] for k < n (o and s never overlap: an output plane and a column matrix).
template <class T, class N>
[[gnu::always_inline]] inline void add_row(T* __restrict o, const T* __restrict s, N n) {
  for (int64_t k = 0; k < n; ++k) o[k] += s[k];
}

// best, at = v, flat when take, without a branch.
template <class T>
inline void select_if(bool take, T v, int64_t flat, T& best, int64_t& at) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  U vb, bb;
  std::memcpy(&vb, &v, sizeof(T));
  std::memcpy(&bb, &best, sizeof(T));
  const U m = U(0) - static_cast<U>(take);
  bb = (vb & m) | (bb & ~m);
  std::memcpy(&best, &bb, sizeof(T));
  const int64_t mi = -static_cast<int64_t>(take);
  at = (flat & mi) | (at & ~mi);
}

}  // namespace

VK_KERNEL(im2col) {
  const Tensor& x = in[0];
  const Window2d& w = a.win;
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t OW = window_out(W, w.kw, w.sw, w.pw, w.dw);
  const int64_t L = m.shape[2], kk = w.kh * w.kw;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  const Plane p{H, W, x.strides()[2], x.strides()[3]};
  const int64_t sN = x.strides()[0], sC = x.strides()[1];
  VK_DISPATCH_NUMERIC(x.dtype(), "im2col", {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    parallel_for(N * C, grain_for(kk * L), [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const int64_t n = q / C, c = q % C;
        im2col_rows(px + n * sN + c * sC, p, w, OW, 0, L, po + q * kk * L, L);
      }
    });
  });
  return out;
}

VK_KERNEL(col2im) {
  const Tensor& cols = in[0];
  const Window2d& w = a.win;
  const int64_t N = m.shape[0], C = m.shape[1], H = m.shape[2], W = m.shape[3];
  const int64_t OH = window_out(H, w.kh, w.sh, w.ph, w.dh);
  const int64_t OW = window_out(W, w.kw, w.sw, w.pw, w.dw);
  const int64_t kk = w.kh * w.kw;
  const int64_t s0 = cols.strides()[0], s1 = cols.strides()[1], s2 = cols.strides()[2];
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  VK_DISPATCH_NUMERIC(cols.dtype(), "col2im", {
    const T* pc = cols.data<T>();
    T* po = out.data<T>();
    const bool padded = s2 == 1 && use_padded<T>(Plane{H, W, W, 1}, w);
    // avg_pool2d's gradient gives col2im an expanded view of all kh*kw taps, however large
    // the kernel: only the taps that reach the plane are walked.
    int64_t ilo, ihi, jlo, jhi;
    window_taps(OH, H, w.kh, w.sh, w.ph, w.dh, ilo, ihi);
    window_taps(OW, W, w.kw, w.sw, w.pw, w.dw, jlo, jhi);
    const int64_t grain = grain_for((ihi - ilo) * (jhi - jlo) * OH * OW + H * W);
    parallel_for(N * C, grain, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const int64_t n = q / C, c = q % C;
        T* o = po + q * H * W;
        if (padded) {
          // The same additions in the same order as below, into a padded plane whose border
          // takes the windows' overhang, then the interior copied out.
          const int64_t Wp = W + 2 * w.pw, Hp = H + 2 * w.ph;
          T* P = padded_buffer<T>(Hp * Wp);
          std::fill(P, P + Hp * Wp, T(0));
          with_width(OW, [&](auto ow) {
            const int64_t ow_n = ow;
            for (int64_t i = 0; i < w.kh; ++i)
              for (int64_t j = 0; j < w.kw; ++j) {
                const T* src = pc + n * s0 + (c * kk + i * w.kw + j) * s1;
                T* dst = P + i * w.dh * Wp + j * w.dw;
                for (int64_t oh = 0; oh < OH; ++oh)
                  add_row(dst + oh * w.sh * Wp, src + oh * ow_n, ow);
              }
          });
          for (int64_t h = 0; h < H; ++h) copy_short(o + h * W, P + (h + w.ph) * Wp + w.pw, W);
          continue;
        }
        std::fill(o, o + H * W, T(0));
        for (int64_t i = ilo; i < ihi; ++i)
          for (int64_t j = jlo; j < jhi; ++j) {
            const T* src = pc + n * s0 + (c * kk + i * w.kw + j) * s1;
            int64_t lo, hi;
            valid_range(0, OW, W, w.sw, w.pw, j * w.dw, lo, hi);
            if (lo >= hi) continue;
            for (int64_t oh = 0; oh < OH; ++oh) {
              const int64_t ih = oh * w.sh - w.ph + i * w.dh;
              if (ih < 0 || ih >= H) continue;
              T* orow = o + ih * W + (lo * w.sw - w.pw + j * w.dw);  // input position of ow = lo
              const T* srow = src + (oh * OW + lo) * s2;
              if (w.sw == 1 && s2 == 1)  // the common case, vectorised: each k its own element
                add_row(orow, srow, hi - lo);
              else
                for (int64_t k = 0; k < hi - lo; ++k) orow[k * w.sw] += srow[k * s2];
            }
          }
      }
    });
  });
  return out;
}

VK_KERNEL(conv2d) {
  const Tensor& x = in[0];
  Tensor wt = in[1];
  const bool has_bias = in.size() == 3;
  const Window2d& w = a.win;
  const int64_t groups = a.win.groups;
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t O = wt.shape()[0], Cg = C / groups, Og = O / groups;
  const int64_t OW = m.shape[3], L = m.shape[2] * m.shape[3];
  const int64_t kk = w.kh * w.kw, CgKK = Cg * kk, CKK = C * kk;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  if (!wt.is_contiguous()) {
    Tensor c = Tensor::empty(wt.shape(), wt.dtype());
    copy_into(c, wt);
    wt = c;
  }
  if (x.dtype() == DType::Float32 && groups == 1) {
    const ConvShape shape{N, C, H, W, O, w.kh, w.kw, w.sh, w.sw, w.ph, w.pw, w.dh, w.dw};
    if (use_onednn_conv(shape)) {
      const auto dense = [](const Tensor& t) {
        if (t.is_contiguous()) return t;
        Tensor c = Tensor::empty(t.shape(), t.dtype());
        copy_into(c, t);
        return c;
      };
      const Tensor xc = dense(x), bias = has_bias ? dense(in[2]) : Tensor();
      conv2d_f32(shape, xc.data<float>(), wt.data<float>(), has_bias ? bias.data<float>() : nullptr,
                 out.data<float>());
      return out;
    }
  }
  const Plane p{H, W, x.strides()[2], x.strides()[3]};
  const int64_t sN = x.strides()[0], sC = x.strides()[1];
  // A 1x1 kernel with stride 1 and no padding reads x itself as the column matrix, when each
  // plane's H*W positions are evenly spaced.
  const int64_t ls = W > 1 ? p.sw : (H > 1 ? p.sh : 1);
  const bool direct = w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 && w.ph == 0 && w.pw == 0 &&
                      (H == 1 || p.sh == W * ls);
  // Output columns per task: a partition fixed by the shapes alone, so results are bitwise the
  // same at any thread count. A block's im2col buffer stays under kColBuf elements, and a big
  // product is cut into at least 4 tasks; blocks stay wide because each task re-packs the
  // weights inside BLAS.
  constexpr int64_t kColBuf = 1 << 20, kMinCols = 512, kSplitMacs = 1 << 24;
  auto round64 = [](int64_t v) { return (v + 63) / 64 * 64; };
  int64_t lb = L;
  if (!direct && CKK * L > kColBuf) lb = std::max(kMinCols, kColBuf / CKK / 64 * 64);
  if (N < 4 && static_cast<double>(N) * O * CgKK * L > kSplitMacs)
    lb = std::min(lb, std::max(kMinCols, round64((L + (4 + N - 1) / N - 1) / ((4 + N - 1) / N))));
  lb = std::min(lb, L);
  const int64_t nblk = (L + lb - 1) / lb;
  const int64_t grain = grain_for(O * CgKK * lb / 4);
  // A bfloat16 convolution (registered only with has_bf16_gemm()) accumulates each block's
  // product in float32, rounded into the output once (by oneDNN, on store).
  auto run = [&]<class T>(const T*) {
    using Acc = GemmAcc<T>;
    const T* px = x.data<T>();
    const T* pw = wt.data<T>();
    T* po = out.data<T>();
    const T* pb = has_bias ? in[2].data<T>() : nullptr;
    const int64_t bs = has_bias ? in[2].strides()[0] : 0;
    parallel_for(N * nblk, grain, [&](int64_t b, int64_t e) {
      std::vector<T> buf(direct ? 0 : static_cast<size_t>(CKK * lb));
      for (int64_t t = b; t < e; ++t) {
        const int64_t n = t / nblk, l0 = (t % nblk) * lb, l1 = std::min(L, l0 + lb);
        const int64_t nl = l1 - l0;
        const T* xn = px + n * sN;
        if (!direct)
          for (int64_t c = 0; c < C; ++c)
            im2col_rows(xn + c * sC, p, w, OW, l0, l1, buf.data() + c * kk * nl, nl);
        for (int64_t g = 0; g < groups; ++g) {
          T* cm = po + (n * O + g * Og) * L + l0;
          if (has_bias)
            for (int64_t o = 0; o < Og; ++o)
              std::fill(cm + o * L, cm + o * L + nl, pb[(g * Og + o) * bs]);
          MatRef<T> am{pw + g * Og * CgKK, CgKK, 1};
          MatRef<T> bm = direct ? MatRef<T>{xn + g * Cg * sC + l0 * ls, sC, ls}
                                : MatRef<T>{buf.data() + g * CgKK * nl, nl, 1};
          gemm<T, T>(Og, nl, CgKK, am, bm, has_bias ? Acc(1) : Acc(0), cm, L);
        }
      }
    });
  };
  if (x.dtype() == DType::BFloat16)
    run(static_cast<const BFloat16*>(nullptr));
  else
    VK_DISPATCH_FLOAT(x.dtype(), "conv2d", { run(static_cast<const T*>(nullptr)); });
  return out;
}

VK_KERNEL(max_pool2d) {
  const Tensor& x = in[0];
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t OH = m.shape[2], OW = m.shape[3];
  Tensor out = Tensor::empty(m.shape, m.dtype);
  Tensor idx = Tensor::empty(m.shape, DType::Int64);
  if (out.numel() == 0) return {out, idx};
  const int64_t sN = x.strides()[0], sC = x.strides()[1], sH = x.strides()[2], sW = x.strides()[3];
  const Window2d w = a.win;
  VK_DISPATCH_FLOAT(x.dtype(), "max_pool2d", {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    int64_t* pi = idx.data<int64_t>();
    const int64_t rows_per_block = std::max<int64_t>(1, 1024 / std::max<int64_t>(OW, 1));
    int64_t jlo, jhi;
    window_taps(OW, W, w.kw, w.sw, w.pw, w.dw, jlo, jhi);
    const int64_t grain = grain_for(OH * OW * std::min(w.kh, H) * (jhi - jlo));
    parallel_for(N * C, grain, [&, w](int64_t b, int64_t e) {
      const int64_t h = H, wd = W, sh = sH, sw = sW, ow_n = OW;
      std::vector<T> cand;
      std::vector<int64_t> first_flat;
      if (w.ph == 0 && w.pw == 0) {
        cand.resize(static_cast<size_t>(std::min(OH, rows_per_block) * OW));
        first_flat.resize(cand.size());
      }
      for (int64_t q = b; q < e; ++q) {
        const T* xp = px + (q / C) * sN + (q % C) * sC;
        if (w.ph == 0 && w.pw == 0) {
          // No padding: every window lies inside the plane. Blocks of whole output rows at a
          // time; for each window position in (i, j) order -- the same selects in the same
          // order as the general walk below -- the block's candidates are first copied into
          // `cand`, so the select runs as one vectorised pass over contiguous outputs (small
          // planes, a 2x2 pool of 8x8, have rows of only a few outputs).
          for (int64_t oh0 = 0; oh0 < OH; oh0 += rows_per_block) {
            const int64_t oh1 = std::min(OH, oh0 + rows_per_block), n = (oh1 - oh0) * ow_n;
            T* __restrict best = po + (q * OH + oh0) * ow_n;
            int64_t* __restrict at = pi + (q * OH + oh0) * ow_n;
            for (int64_t oh = oh0; oh < oh1; ++oh)
              for (int64_t ow = 0; ow < ow_n; ++ow)
                first_flat[(oh - oh0) * ow_n + ow] = oh * w.sh * wd + ow * w.sw;
            for (int64_t i = 0; i < w.kh; ++i)
              for (int64_t j = 0; j < w.kw; ++j) {
                T* __restrict c = cand.data();
                for (int64_t oh = oh0; oh < oh1; ++oh) {
                  const T* xr = xp + (oh * w.sh + i * w.dh) * sh + j * w.dw * sw;
                  for (int64_t ow = 0; ow < ow_n; ++ow) *c++ = xr[ow * w.sw * sw];
                }
                const int64_t off = i * w.dh * wd + j * w.dw;
                const T* __restrict v = cand.data();
                const int64_t* __restrict f = first_flat.data();
                if (i == 0 && j == 0) {
                  for (int64_t o = 0; o < n; ++o) best[o] = v[o], at[o] = f[o] + off;
                  continue;
                }
                for (int64_t o = 0; o < n; ++o) {
                  const bool take = (v[o] > best[o]) | (v[o] != v[o]);
                  best[o] = take ? v[o] : best[o];
                  at[o] = take ? f[o] + off : at[o];
                }
              }
          }
          continue;
        }
        for (int64_t oh = 0; oh < OH; ++oh) {
          // A row of outputs at a time, window positions in (i, j) order: each output keeps the
          // first maximum it meets, a NaN always wins (as in PyTorch). The selects are
          // branch-free (data comparisons are unpredictable) and independent across outputs.
          T* __restrict best = po + (q * OH + oh) * ow_n;
          int64_t* __restrict at = pi + (q * OH + oh) * ow_n;
          std::fill(best, best + ow_n, -std::numeric_limits<T>::infinity());
          std::fill(at, at + ow_n, int64_t{-1});
          int64_t ilo, ihi;
          valid_range(0, w.kh, h, w.dh, w.ph - oh * w.sh, 0, ilo, ihi);
          for (int64_t i = ilo; i < ihi; ++i) {
            const int64_t ih = oh * w.sh - w.ph + i * w.dh;
            const T* xr = xp + ih * sh;
            for (int64_t j = jlo; j < jhi; ++j) {
              int64_t lo, hi;
              valid_range(0, ow_n, wd, w.sw, w.pw, j * w.dw, lo, hi);
              const int64_t off = j * w.dw - w.pw;  // input column of output ow: ow * sw + off
              for (int64_t ow = lo; ow < hi; ++ow) {
                const int64_t iw = ow * w.sw + off;
                const T v = xr[iw * sw];
                const bool take = (at[ow] < 0) | (v > best[ow]) | (v != v);
                select_if(take, v, ih * wd + iw, best[ow], at[ow]);
              }
            }
          }
        }
      }
    });
  });
  return {out, idx};
}

VK_KERNEL(max_pool2d_backward) {
  (void)a;
  const Tensor& g = in[0];
  const Tensor& idx = in[1];
  const int64_t N = m.shape[0], C = m.shape[1], HW = m.shape[2] * m.shape[3];
  const int64_t OH = g.shape()[2], OW = g.shape()[3];
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  const auto& gs = g.strides();
  const auto& is = idx.strides();
  VK_DISPATCH_FLOAT(g.dtype(), "max_pool2d_backward", {
    using G = T;
    const G* pg = g.data<G>();
    G* po = out.data<G>();
    VK_DISPATCH_NUMERIC(idx.dtype(), "max_pool2d_backward", {
      if constexpr (std::is_integral_v<T>) {
        const T* pi = idx.data<T>();
        parallel_for(N * C, grain_for(OH * OW + HW), [&](int64_t b, int64_t e) {
          for (int64_t q = b; q < e; ++q) {
            const int64_t n = q / C, c = q % C;
            G* o = po + q * HW;
            std::fill(o, o + HW, G(0));
            const G* gp = pg + n * gs[0] + c * gs[1];
            const T* ip = pi + n * is[0] + c * is[1];
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t k = static_cast<int64_t>(ip[oh * is[2] + ow * is[3]]);
                if (k == -1) continue;  // a window entirely in the padding: no input to send to
                VK_CHECK(k >= 0 && k < HW, IndexError, "max_pool2d_backward: index ", k,
                         " is out of range for an input plane of ", HW, " elements");
                o[k] += gp[oh * gs[2] + ow * gs[3]];
              }
          }
        });
      } else {
        throw DTypeError("max_pool2d_backward: indices must be int64 or int32");
      }
    });
  });
  return out;
}

VK_KERNEL(avg_pool2d) {
  const Tensor& x = in[0];
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t OH = m.shape[2], OW = m.shape[3];
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  const int64_t sN = x.strides()[0], sC = x.strides()[1], sH = x.strides()[2], sW = x.strides()[3];
  const Window2d w = a.win;
  VK_DISPATCH_FLOAT(x.dtype(), "avg_pool2d", {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const T inv = T(1) / (static_cast<T>(w.kh) * static_cast<T>(w.kw));
    int64_t jlo, jhi;
    window_taps(OW, W, w.kw, w.sw, w.pw, w.dw, jlo, jhi);
    const int64_t grain = grain_for(OH * OW * std::min(w.kh, H) * (jhi - jlo));
    parallel_for(N * C, grain, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const T* xp = px + (q / C) * sN + (q % C) * sC;
        for (int64_t oh = 0; oh < OH; ++oh) {
          // Window positions summed in (i, j) order for every output of the row.
          T* __restrict acc = po + (q * OH + oh) * OW;
          std::fill(acc, acc + OW, T(0));
          int64_t ilo, ihi;
          valid_range(0, w.kh, H, w.dh, w.ph - oh * w.sh, 0, ilo, ihi);
          for (int64_t i = ilo; i < ihi; ++i) {
            const int64_t ih = oh * w.sh - w.ph + i * w.dh;
            const T* xr = xp + ih * sH;
            for (int64_t j = jlo; j < jhi; ++j) {
              int64_t lo, hi;
              valid_range(0, OW, W, w.sw, w.pw, j * w.dw, lo, hi);
              if (lo >= hi) continue;
              const T* src = xr + (lo * w.sw + j * w.dw - w.pw) * sW;  // input of ow = lo
              T* a0 = acc + lo;
              const int64_t step = w.sw * sW;
              if (step == 1)
                for (int64_t k = 0; k < hi - lo; ++k) a0[k] += src[k];
              else
                for (int64_t k = 0; k < hi - lo; ++k) a0[k] += src[k * step];
            }
          }
          for (int64_t ow = 0; ow < OW; ++ow) acc[ow] *= inv;
        }
      }
    });
  });
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
