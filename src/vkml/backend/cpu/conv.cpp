#include "vkml/backend/cpu/conv.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "vkml/backend/cpu/conv_taps.h"
#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/linalg.h"
#include "vkml/backend/cpu/onednn.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/rows.h"
#include "vkml/backend/cpu/window.h"
#include "vkml/backend/cpu/winograd.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

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

// One plane's max pool by the general walk, for outputs [oh0, oh1) x [ow0, ow1): window
// positions in (i, j) order, each output keeps the first maximum it meets and a NaN always wins
// (as in PyTorch); a window entirely in the padding keeps index -1. The selects are branch-free
// (data comparisons are unpredictable) and independent across outputs.
template <class T>
void max_pool_walk(const T* xp, int64_t sh, int64_t sw, int64_t H, int64_t W, const Window2d& w,
                   int64_t OW, int64_t oh0, int64_t oh1, int64_t ow0, int64_t ow1, T* po,
                   int64_t* pi) {
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    T* __restrict best = po + oh * OW;
    int64_t* __restrict at = pi + oh * OW;
    std::fill(best + ow0, best + ow1, -std::numeric_limits<T>::infinity());
    std::fill(at + ow0, at + ow1, int64_t{-1});
    int64_t ilo, ihi, jlo, jhi;
    valid_range(0, w.kh, H, w.dh, w.ph - oh * w.sh, 0, ilo, ihi);
    window_taps(OW, W, w.kw, w.sw, w.pw, w.dw, jlo, jhi);
    for (int64_t i = ilo; i < ihi; ++i) {
      const int64_t ih = oh * w.sh - w.ph + i * w.dh;
      const T* xr = xp + ih * sh;
      for (int64_t j = jlo; j < jhi; ++j) {
        int64_t lo, hi;
        valid_range(0, OW, W, w.sw, w.pw, j * w.dw, lo, hi);
        const int64_t off = j * w.dw - w.pw;  // input column of output ow: ow * sw + off
        for (int64_t ow = std::max(lo, ow0); ow < std::min(hi, ow1); ++ow) {
          const int64_t iw = ow * w.sw + off;
          const T v = xr[iw * sw];
          const bool take = (at[ow] < 0) | (v > best[ow]) | (v != v);
          select_if(take, v, ih * W + iw, best[ow], at[ow]);
        }
      }
    }
  }
}

// One plane's max pool over a source whose every window lies inside it: the plane itself when
// there is no padding, else a copy with -infinity in the padding. Blocks of whole output rows at
// a time; for each window position in (i, j) order -- the same selects in the same order as the
// walk -- the block's candidates are first copied into `cand`, so the select runs as one
// vectorised pass over contiguous outputs (small planes, a 2x2 pool of 8x8, have rows of only a
// few outputs). The pass keeps the window position's number (32 bits, half the select's width),
// made a flat index once per block. A padding element is never taken over a plane element,
// except where every element of the window is -infinity: those outputs (best still -infinity)
// are walked again.
template <class T>
void max_pool_blocks(const T* src, int64_t sh, int64_t sw, const T* xp, int64_t xsh, int64_t xsw,
                     int64_t H, int64_t W, const Window2d& w, int64_t OH, int64_t OW, T* po,
                     int64_t* pi, std::vector<T>& cand, std::vector<int32_t>& tap) {
  const int64_t rows_per_block = std::max<int64_t>(1, 1024 / std::max<int64_t>(OW, 1));
  cand.resize(static_cast<size_t>(std::min(OH, rows_per_block) * OW));
  tap.resize(cand.size());
  const bool padded = w.ph > 0 || w.pw > 0;
  std::vector<int64_t> tap_at(static_cast<size_t>(w.kh * w.kw));  // flat offset of each position
  for (int64_t i = 0; i < w.kh; ++i)
    for (int64_t j = 0; j < w.kw; ++j) tap_at[i * w.kw + j] = i * w.dh * W + j * w.dw;
  for (int64_t oh0 = 0; oh0 < OH; oh0 += rows_per_block) {
    const int64_t oh1 = std::min(OH, oh0 + rows_per_block), n = (oh1 - oh0) * OW;
    T* __restrict best = po + oh0 * OW;
    int32_t* __restrict at = tap.data();
    for (int64_t i = 0; i < w.kh; ++i)
      for (int64_t j = 0; j < w.kw; ++j) {
        // The common strides as constants, so that the copy vectorises (a stride-2 pool's
        // reads are two loads and a permute per vector).
        auto gather = [&](auto step) {
          T* __restrict c = cand.data();
          for (int64_t oh = oh0; oh < oh1; ++oh, c += OW) {
            const T* __restrict xr = src + (oh * w.sh + i * w.dh) * sh + j * w.dw * sw;
            for (int64_t ow = 0; ow < OW; ++ow) c[ow] = xr[ow * step];
          }
        };
        const int64_t step = w.sw * sw;
        if (step == 1)
          gather(std::integral_constant<int64_t, 1>{});
        else if (step == 2)
          gather(std::integral_constant<int64_t, 2>{});
        else
          gather(step);
        const T* __restrict v = cand.data();
        const auto t = static_cast<int32_t>(i * w.kw + j);
        if (t == 0) {
          std::copy(v, v + n, best);
          std::fill(at, at + n, 0);
          continue;
        }
        for (int64_t o = 0; o < n; ++o) {
          const bool take = (v[o] > best[o]) | (v[o] != v[o]);
          best[o] = take ? v[o] : best[o];
          at[o] = take ? t : at[o];
        }
      }
    // Window position t = i * kw + j of output (oh, ow) is the plane's element
    // (oh * sh - ph + i * dh, ow * sw - pw + j * dw) (out of it for a padding position).
    for (int64_t oh = oh0, o = 0; oh < oh1; ++oh) {
      const int64_t row = (oh * w.sh - w.ph) * W - w.pw;
      for (int64_t ow = 0; ow < OW; ++ow, ++o) pi[oh * OW + ow] = row + ow * w.sw + tap_at[at[o]];
    }
    if (!padded) continue;
    for (int64_t o = 0; o < n; ++o)
      if (best[o] == -std::numeric_limits<T>::infinity()) {
        const int64_t oh = oh0 + o / OW, ow = o % OW;
        max_pool_walk(xp, xsh, xsw, H, W, w, OW, oh, oh + 1, ow, ow + 1, po, pi);
      }
  }
}

// conv2d over images of few output positions (a deep layer's 4x4 or 2x2), where a product per
// image would read the whole weight once per image: the batch's columns are made once, side by
// side (C*kh*kw x N*L), and each task multiplies one block of output channels' weights by all of
// them. Blocks fixed by the shapes (at least 8 where there are 16 rows each to make).
template <class T>
void conv2d_images_side_by_side(const Tensor& x, const T* pw, const T* pb, int64_t bs,
                                const Window2d& w, int64_t O, int64_t OW, int64_t L, T* po) {
  using Acc = GemmAcc<T>;
  const int64_t G = w.groups, N = x.shape()[0], C = x.shape()[1], kk = w.kh * w.kw;
  const int64_t Og = O / G, CgKK = C / G * kk, ld = N * L;
  const Plane p{x.shape()[2], x.shape()[3], x.strides()[2], x.strides()[3]};
  const int64_t sN = x.strides()[0], sC = x.strides()[1];
  const T* px = x.data<T>();
  std::vector<T> cols(static_cast<size_t>(C * kk * ld));
  parallel_for(N * C, grain_for(kk * L), [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      const int64_t n = q / C, c = q % C;
      im2col_rows(px + n * sN + c * sC, p, w, OW, 0, L, cols.data() + c * kk * ld + n * L, ld);
    }
  });
  const int64_t per_group = std::clamp<int64_t>((8 + G - 1) / G, 1, std::max<int64_t>(1, Og / 16));
  const int64_t ob = (Og + per_group - 1) / per_group, nblk = (Og + ob - 1) / ob;
  parallel_for(G * nblk, 1, [&](int64_t b, int64_t e) {
    std::vector<T> res(static_cast<size_t>(ob * ld));
    for (int64_t t = b; t < e; ++t) {
      const int64_t gi = t / nblk, o0 = gi * Og + t % nblk * ob;
      const int64_t no = std::min(gi * Og + Og, o0 + ob) - o0;
      if (pb)
        for (int64_t o = 0; o < no; ++o)
          std::fill(res.begin() + o * ld, res.begin() + (o + 1) * ld, pb[(o0 + o) * bs]);
      gemm<T, T>(no, ld, CgKK, MatRef<T>{pw + o0 * CgKK, CgKK, 1},
                 MatRef<T>{cols.data() + gi * CgKK * ld, ld, 1}, pb ? Acc(1) : Acc(0), res.data(),
                 ld);
      for (int64_t o = 0; o < no; ++o)
        for (int64_t n = 0; n < N; ++n)
          std::copy_n(res.begin() + o * ld + n * L, L, po + (n * O + o0 + o) * L);
    }
  });
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
    int64_t ilo, ihi, jlo, jhi;
    window_taps(OH, H, w.kh, w.sh, w.ph, w.dh, ilo, ihi);
    window_taps(OW, W, w.kw, w.sw, w.pw, w.dw, jlo, jhi);
    const int64_t grain = grain_for((ihi - ilo) * (jhi - jlo) * OH * OW + H * W);
    parallel_for(N * C, grain, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const int64_t n = q / C, c = q % C;
        col2im_plane(pc + n * s0 + c * kk * s1, s1, s2, H, W, w, OH, OW, po + q * H * W);
      }
    });
  });
  return out;
}

VK_KERNEL(conv2d) {
  const Tensor& x = in[0];
  const Tensor wt = contiguous_copy(in[1]);
  const bool has_bias = in.size() == 3;
  const Window2d& w = a.win;
  const int64_t groups = a.win.groups;
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t O = wt.shape()[0], Cg = C / groups, Og = O / groups;
  const int64_t OW = m.shape[3], L = m.shape[2] * m.shape[3];
  const int64_t kk = w.kh * w.kw, CgKK = Cg * kk, CKK = C * kk;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  const ConvShape shape{N, C, H, W, O, w.kh, w.kw, w.sh, w.sw, w.ph, w.pw, w.dh, w.dw};
  if ((x.dtype() == DType::Float32 || x.dtype() == DType::Float64) && groups == 1 &&
      use_conv_by_taps(shape)) {
    const Tensor xc = contiguous_copy(x), bias = has_bias ? contiguous_copy(in[2]) : Tensor();
    VK_DISPATCH_FLOAT(x.dtype(), "conv2d", {
      conv2d_by_taps<T>(shape, xc.data<T>(), wt.data<T>(), has_bias ? bias.data<T>() : nullptr,
                        out.data<T>());
    });
    return out;
  }
  if (x.dtype() == DType::Float32 && groups == 1) {
    if (use_winograd(shape)) {
      const Tensor xc = contiguous_copy(x), bias = has_bias ? contiguous_copy(in[2]) : Tensor();
      winograd_conv2d(shape, xc.data<float>(), wt.data<float>(),
                      has_bias ? bias.data<float>() : nullptr, out.data<float>());
      return out;
    }
    if (use_onednn_conv(shape)) {
      const Tensor xc = contiguous_copy(x), bias = has_bias ? contiguous_copy(in[2]) : Tensor();
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
  constexpr int64_t kColBuf = 1 << 20, kMinCols = 512, kSplitMacs = 1 << 24, kFewPositions = 64;
  auto round64 = [](int64_t v) { return (v + 63) / 64 * 64; };
  int64_t lb = L;
  if (!direct && CKK * L > kColBuf) lb = std::max(kMinCols, kColBuf / CKK / 64 * 64);
  if (N < 4 && static_cast<double>(N) * O * CgKK * L > kSplitMacs)
    lb = std::min(lb, std::max(kMinCols, round64((L + (4 + N - 1) / N - 1) / ((4 + N - 1) / N))));
  lb = std::min(lb, L);
  const int64_t nblk = (L + lb - 1) / lb;
  const int64_t grain = grain_for(O * CgKK * lb / 4);
  // Few positions per image over a batch whose columns fit kColBuf: one product for all images.
  const bool side_by_side = !direct && L < kFewPositions && N > 1 && CKK * N * L <= 4 * kColBuf;
  // A bfloat16 convolution (registered only with has_bf16_gemm()) accumulates each block's
  // product in float32, rounded into the output once (by oneDNN, on store).
  auto run = [&]<class T>(const T*) {
    using Acc = GemmAcc<T>;
    const T* px = x.data<T>();
    const T* pw = wt.data<T>();
    T* po = out.data<T>();
    const T* pb = has_bias ? in[2].data<T>() : nullptr;
    const int64_t bs = has_bias ? in[2].strides()[0] : 0;
    if (side_by_side) {
      conv2d_images_side_by_side(x, pw, pb, bs, w, O, OW, L, po);
      return;
    }
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
  // With padding, each plane is first copied into the rows and columns the windows reach, the
  // padding -infinity, so that every window reads inside it -- for the windows pools use; a
  // pooling window is a parameter, not memory, and may be far larger than the plane (its padding
  // to match): those take the walk, over only the window positions that reach the plane (as does
  // a window of 2^31 positions or more, past the blocks' 32-bit position numbers).
  const bool padded = w.ph > 0 || w.pw > 0;
  const bool walk = padded ? w.kh > 16 || w.kw > 16 : w.kh * w.kw > INT32_MAX;
  const int64_t Hp = walk ? 0 : (OH - 1) * w.sh + (w.kh - 1) * w.dh + 1;
  const int64_t Wp = walk ? 0 : (OW - 1) * w.sw + (w.kw - 1) * w.dw + 1;
  int64_t ilo, ihi, jlo, jhi;
  window_taps(OH, H, w.kh, w.sh, w.ph, w.dh, ilo, ihi);
  window_taps(OW, W, w.kw, w.sw, w.pw, w.dw, jlo, jhi);
  const int64_t work = OH * OW * (walk ? (ihi - ilo) * (jhi - jlo) : w.kh * w.kw) + Hp * Wp;
  VK_DISPATCH_FLOAT(x.dtype(), "max_pool2d", {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    int64_t* pi = idx.data<int64_t>();
    parallel_for(N * C, grain_for(work), [&, w](int64_t b, int64_t e) {
      std::vector<T> cand, plane(static_cast<size_t>(padded ? Hp * Wp : 0));
      std::vector<int32_t> tap;
      const int64_t r0 = std::min(Hp, w.ph), r1 = std::min(Hp, H + w.ph);
      const int64_t c0 = std::min(Wp, w.pw), c1 = std::min(Wp, W + w.pw);
      for (int64_t q = b; q < e; ++q) {
        const T* xp = px + (q / C) * sN + (q % C) * sC;
        T* oq = po + q * OH * OW;
        int64_t* iq = pi + q * OH * OW;
        if (walk) {
          max_pool_walk(xp, sH, sW, H, W, w, OW, 0, OH, 0, OW, oq, iq);
          continue;
        }
        if (!padded) {
          max_pool_blocks(xp, sH, sW, xp, sH, sW, H, W, w, OH, OW, oq, iq, cand, tap);
          continue;
        }
        constexpr T kPad = -std::numeric_limits<T>::infinity();
        std::fill(plane.data(), plane.data() + r0 * Wp, kPad);
        std::fill(plane.data() + r1 * Wp, plane.data() + Hp * Wp, kPad);
        for (int64_t r = r0; r < r1; ++r) {
          const T* xr = xp + (r - w.ph) * sH + (c0 - w.pw) * sW;
          T* pr = plane.data() + r * Wp;
          std::fill(pr, pr + c0, kPad);
          std::fill(pr + c1, pr + Wp, kPad);
          if (sW == 1)
            std::copy(xr, xr + (c1 - c0), pr + c0);
          else
            for (int64_t c = c0; c < c1; ++c, xr += sW) pr[c] = *xr;
        }
        max_pool_blocks(plane.data(), Wp, int64_t{1}, xp, sH, sW, H, W, w, OH, OW, oq, iq, cand,
                        tap);
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
