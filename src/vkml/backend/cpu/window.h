// The window walks shared by the CPU's convolution kernels (conv.cpp: im2col, col2im, conv2d and
// pooling; conv_backward.cpp: conv2d's two gradients): an image plane's windows copied out as the
// rows of a column matrix, and a column matrix's rows added back into a plane.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "vkml/backend/cpu/isa.h"
#include "vkml/core/attrs.h"
#include "vkml/core/geometry.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
// Internal to each file that includes it: padded_buffer's per-thread buffer would otherwise be a
// weak global symbol, which the sealing of each capability's copy (cmake/vkml_seal_copy.cmake)
// refuses.
namespace {

// Ranges of about this many inner-loop steps go to one thread.
constexpr int64_t kGrainWork = 1 << 17;

inline int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kGrainWork / std::max<int64_t>(work_per_item, 1));
}

// [lo, hi): the output positions o in [lo0, hi0) whose input position o * s - p + off lies in
// [0, n_in).
inline void valid_range(int64_t lo0, int64_t hi0, int64_t n_in, int64_t s, int64_t p, int64_t off,
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
inline void window_taps(int64_t n_out, int64_t n_in, int64_t k, int64_t s, int64_t p, int64_t d,
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
inline void zero_short(T* d, int64_t n) {
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
inline T* padded_buffer(int64_t n) {
  thread_local std::vector<T> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

template <class T>
inline bool use_padded(const Plane& p, const Window2d& w) {
  return w.sw == 1 && (p.H + 2 * w.ph) * (p.W + 2 * w.pw) <= kPaddedPlaneMax;
}

// The padded copy of a plane as im2col reads it: (H + 2 ph) x (W + 2 pw), its columns split by
// their residue modulo the window's column stride (phase q holds padded columns q, q + sw, ...,
// as rows of ceil((W + 2 pw) / sw)), zeros around. A tap's columns in an output row, padded
// columns ow * sw + j * dw, are then one contiguous run of one phase: strided windows copy
// short runs as stride-1 ones do, where the gather of every sw-th element, one output row at a
// time, took 0.65 of the 2.45 ms of ResNet-18's 64 -> 128 stride-2 weight gradient (2.0 ms with
// the copy).
struct PhasedPlane {
  int64_t Hp, Wp, Wq, phases;  // padded height and width, a phase's row length, sw
  int64_t size() const { return phases * Hp * Wq; }
};

inline PhasedPlane phased_plane(const Plane& p, const Window2d& w) {
  const int64_t Hp = p.H + 2 * w.ph, Wp = p.W + 2 * w.pw;
  return {Hp, Wp, Wp / w.sw + (Wp % w.sw != 0 ? 1 : 0), w.sw};  // sw may be near 2^63
}

// Not for a strided window of one tap: it reads a quarter of the plane (stride 2) once, and
// copying the whole plane first cost more than the gather (ResNet's 1x1 stride-2 downsampling:
// forward 0.24 -> 0.30 ms, weight gradient 0.28 -> 0.34).
template <class T>
inline bool use_phased(const Plane& p, const Window2d& w) {
  if (w.sw > 1 && w.kh == 1 && w.kw == 1) return false;
  const PhasedPlane q = phased_plane(p, w);  // each factor bounded first: no overflow
  return q.phases <= kPaddedPlaneMax && q.Hp <= kPaddedPlaneMax && q.Wq <= kPaddedPlaneMax &&
         q.size() <= kPaddedPlaneMax;
}

template <class T>
inline T* fill_phased(const T* x, const Plane& p, const Window2d& w, const PhasedPlane& q) {
  T* P = padded_buffer<T>(q.size());
  if (q.phases == 1 && p.sw == 1) {  // one phase, contiguous rows: fill only the border
    std::fill(P, P + w.ph * q.Wp, T{});
    for (int64_t h = 0; h < p.H; ++h) {
      T* r = P + (h + w.ph) * q.Wp;
      std::fill(r, r + w.pw, T{});
      with_width(p.W, [&](auto wd) { copy_short(r + w.pw, x + h * p.sh, wd); });
      std::fill(r + w.pw + p.W, r + q.Wp, T{});
    }
    std::fill(P + (p.H + w.ph) * q.Wp, P + q.Hp * q.Wp, T{});
    return P;
  }
  std::fill(P, P + q.size(), T{});
  for (int64_t f = 0; f < q.phases; ++f) {
    const int64_t c0 = ((f - w.pw) % q.phases + q.phases) % q.phases;  // first column in phase f
    if (c0 >= p.W) continue;
    const int64_t step = q.phases * p.sw, n = (p.W - c0 + q.phases - 1) / q.phases;
    for (int64_t h = 0; h < p.H; ++h) {
      T* dst = P + (f * q.Hp + h + w.ph) * q.Wq + (c0 + w.pw) / q.phases;
      const T* src = x + h * p.sh + c0 * p.sw;
      for (int64_t k = 0; k < n; ++k) dst[k] = src[k * step];
    }
  }
  return P;
}

// im2col of one whole plane (all OH*OW columns) through its phased copy: row (i, j) is the
// OH x OW block of phase (j dw) mod sw at (i dh, (j dw) / sw) with row step sh, each output row
// one short contiguous copy.
template <class T>
inline void im2col_plane_padded(const T* x, const Plane& p, const Window2d& w, int64_t OH,
                                int64_t OW, T* dst, int64_t ld) {
  const PhasedPlane q = phased_plane(p, w);
  const T* P = fill_phased(x, p, w, q);
  with_width(OW, [&](auto ow) {
    const int64_t ow_n = ow;
    for (int64_t i = 0; i < w.kh; ++i)
      for (int64_t j = 0; j < w.kw; ++j) {
        T* row = dst + (i * w.kw + j) * ld;
        const int64_t col = j * w.dw;
        const T* src = P + (col % q.phases * q.Hp + i * w.dh) * q.Wq + col / q.phases;
        for (int64_t oh = 0; oh < OH; ++oh) copy_short(row + oh * ow_n, src + oh * w.sh * q.Wq, ow);
      }
  });
}

// Writes the kh*kw rows of one input plane's columns [l0, l1) of im2col: row i*kw + j at
// dst + (i*kw + j) * ld, column l - l0 for output position l = oh * OW + ow.
template <class T>
inline void im2col_rows(const T* x, const Plane& p, const Window2d& w, int64_t OW, int64_t l0,
                        int64_t l1, T* dst, int64_t ld) {
  const int64_t OH = window_out(p.H, w.kh, w.sh, w.ph, w.dh);
  if (l0 == 0 && l1 == OH * OW && use_phased<T>(p, w)) {
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

// col2im of one plane: its kh*kw tap rows (row t at src + t * s1, column l at l * s2, for output
// position l = oh * OW + ow) added back at their windows' positions in o (H x W, contiguous,
// overwritten), each element summed in tap order.
template <class T>
void col2im_plane(const T* src, int64_t s1, int64_t s2, int64_t H, int64_t W, const Window2d& w,
                  int64_t OH, int64_t OW, T* o) {
  if (s2 == 1 && use_padded<T>(Plane{H, W, W, 1}, w)) {
    // The same additions in the same order as below, into a padded plane whose border takes the
    // windows' overhang, then the interior copied out.
    const int64_t Wp = W + 2 * w.pw, Hp = H + 2 * w.ph;
    T* P = padded_buffer<T>(Hp * Wp);
    std::fill(P, P + Hp * Wp, T(0));
    with_width(OW, [&](auto ow) {
      const int64_t ow_n = ow;
      for (int64_t i = 0; i < w.kh; ++i)
        for (int64_t j = 0; j < w.kw; ++j) {
          const T* row = src + (i * w.kw + j) * s1;
          T* dst = P + i * w.dh * Wp + j * w.dw;
          for (int64_t oh = 0; oh < OH; ++oh) add_row(dst + oh * w.sh * Wp, row + oh * ow_n, ow);
        }
    });
    for (int64_t h = 0; h < H; ++h) copy_short(o + h * W, P + (h + w.ph) * Wp + w.pw, W);
    return;
  }
  // avg_pool2d's gradient gives col2im an expanded view of all kh*kw taps, however large the
  // kernel: only the taps that reach the plane are walked.
  int64_t ilo, ihi, jlo, jhi;
  window_taps(OH, H, w.kh, w.sh, w.ph, w.dh, ilo, ihi);
  window_taps(OW, W, w.kw, w.sw, w.pw, w.dw, jlo, jhi);
  std::fill(o, o + H * W, T(0));
  for (int64_t i = ilo; i < ihi; ++i)
    for (int64_t j = jlo; j < jhi; ++j) {
      const T* row = src + (i * w.kw + j) * s1;
      int64_t lo, hi;
      valid_range(0, OW, W, w.sw, w.pw, j * w.dw, lo, hi);
      if (lo >= hi) continue;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t ih = oh * w.sh - w.ph + i * w.dh;
        if (ih < 0 || ih >= H) continue;
        T* orow = o + ih * W + (lo * w.sw - w.pw + j * w.dw);  // input position of ow = lo
        const T* srow = row + (oh * OW + lo) * s2;
        if (w.sw == 1 && s2 == 1)  // the common case, vectorised: each k its own element
          add_row(orow, srow, hi - lo);
        else
          for (int64_t k = 0; k < hi - lo; ++k) orow[k * w.sw] += srow[k * s2];
      }
    }
}

}  // namespace
}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
