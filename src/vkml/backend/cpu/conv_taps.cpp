#include "vkml/backend/cpu/conv_taps.h"

#include <algorithm>
#include <vector>

#include "vkml/backend/cpu/linalg.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/scratch.h"
#include "vkml/backend/cpu/window.h"
#include "vkml/core/geometry.h"
#include "vkml/core/tensor.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// A tap t = i * kw + j and the rectangle of output positions where it reads inside the image.
struct Tap {
  int64_t t, i, j;
  int64_t oh0, oh1, ow0, ow1;
  int64_t col0;  // its first column in the packed operands: its positions x the batch's images
  int64_t positions() const { return (oh1 - oh0) * (ow1 - ow0); }
};

struct Taps {
  int64_t OH, OW, L, KK;
  std::vector<Tap> taps;  // those that read the image, in t order
  int64_t cols = 0;       // the packed operands' columns: sum of positions() x N
  int64_t widest = 0;     // the most columns of one tap
};

Taps taps_of(const ConvShape& s) {
  Taps p;
  p.OH = window_out(s.H, s.kh, s.sh, s.ph, s.dh);
  p.OW = window_out(s.W, s.kw, s.sw, s.pw, s.dw);
  p.L = p.OH * p.OW, p.KK = s.kh * s.kw;
  for (int64_t i = 0; i < s.kh; ++i)
    for (int64_t j = 0; j < s.kw; ++j) {
      Tap tap{i * s.kw + j, i, j, 0, 0, 0, 0, p.cols};
      valid_range(0, p.OH, s.H, s.sh, s.ph, i * s.dh, tap.oh0, tap.oh1);
      valid_range(0, p.OW, s.W, s.sw, s.pw, j * s.dw, tap.ow0, tap.ow1);
      if (tap.positions() == 0) continue;
      p.cols += tap.positions() * s.N;
      p.widest = std::max(p.widest, tap.positions() * s.N);
      p.taps.push_back(tap);
    }
  return p;
}

// For each column block of tap `tap` (one per output position in its rectangle, row by row):
// f(k, oh, ow, ih, iw), k the block's number, (ih, iw) the input position the tap reads.
template <class F>
void for_each_position(const ConvShape& s, const Tap& tap, F&& f) {
  int64_t k = 0;
  for (int64_t oh = tap.oh0; oh < tap.oh1; ++oh)
    for (int64_t ow = tap.ow0; ow < tap.ow1; ++ow, ++k)
      f(k, oh, ow, oh * s.sh - s.ph + tap.i * s.dh, ow * s.sw - s.pw + tap.j * s.dw);
}

// Wr[t][o][c] = w[o][c][t]: each tap's weights an O x C matrix.
template <class T>
void tap_major(const ConvShape& s, int64_t KK, const T* w, T* Wr) {
  const int64_t O = s.O, C = s.C;
  parallel_for(O, grain_for(C * KK), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)  // o's weights (C x KK) stay in L1 over the taps
      for (int64_t t = 0; t < KK; ++t) {
        const T* from = w + o * C * KK + t;
        T* to = Wr + (t * O + o) * C;
        for (int64_t c = 0; c < C; ++c) to[c] = from[c * KK];
      }
  });
}

// A (rows x cols) matrix whose column k * N + n is what tap t reads for position k of image n:
// Xc[c][col0 + k * N + n] = x[n][c][ih][iw] (rows: C), or, from g (N, O, OH, OW),
// Gc[o][col0 + k * N + n] = g[n][o][oh][ow] (rows: O). The source is first put images last,
// [r][position][n], so that each block is one run of N values.
template <class T>
void pack_columns(const ConvShape& s, const Taps& plan, const T* src, int64_t rows, bool input,
                  T* dst) {
  const int64_t N = s.N, plane = input ? s.H * s.W : plan.L;
  parallel_for(rows, grain_for(plan.cols + plane * N), [&](int64_t b, int64_t e) {
    std::vector<T> last(static_cast<size_t>(plane * N));
    for (int64_t r = b; r < e; ++r) {
      for (int64_t n = 0; n < N; ++n) {
        const T* from = src + (n * rows + r) * plane;
        for (int64_t q = 0; q < plane; ++q) last[q * N + n] = from[q];
      }
      for (const Tap& tap : plan.taps)
        for_each_position(s, tap, [&](int64_t k, int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
          const int64_t at = input ? ih * s.W + iw : oh * plan.OW + ow;
          std::copy(last.data() + at * N, last.data() + (at + 1) * N,
                    dst + r * plan.cols + tap.col0 + k * N);
        });
    }
  });
}

// Rows per task of a product over `rows` output rows, fixed by the shape: 4 tasks from 64 rows
// up, none under 16 rows.
int64_t row_block(int64_t rows) { return std::max<int64_t>(16, (rows + 3) / 4); }

// z[r][k * N + n] added into acc[r][at(k) * N + n] for each position block k of the tap.
template <class T, class At>
void add_blocks(const T* z, int64_t ldz, int64_t rows, int64_t blocks, int64_t N, T* acc,
                int64_t ldacc, At&& at) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < blocks; ++k) {
      const T* from = z + r * ldz + k * N;
      T* to = acc + r * ldacc + at(k) * N;
      for (int64_t n = 0; n < N; ++n) to[n] += from[n];
    }
}

// out[n][r][q] = acc[r][q * N + n].
template <class T>
void images_first(const T* acc, int64_t rows, int64_t positions, int64_t N, T* out) {
  parallel_for(rows, grain_for(positions * N), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      for (int64_t q = 0; q < positions; ++q)
        for (int64_t n = 0; n < N; ++n)
          out[(n * rows + r) * positions + q] = acc[(r * positions + q) * N + n];
  });
}

// The (position, tap) pairs that read the image, of the L x KK there are.
int64_t pairs_reading(const Taps& plan) {
  int64_t pairs = 0;
  for (const Tap& tap : plan.taps) pairs += tap.positions();
  return pairs;
}

// Whether s has at most `positions` output positions per image and 64+ channels each side:
// checked before any taps are planned (every float conv2d call asks).
bool few_positions_wide(const ConvShape& s, int64_t positions) {
  const int64_t OH = window_out(s.H, s.kh, s.sh, s.ph, s.dh);
  const int64_t OW = window_out(s.W, s.kw, s.sw, s.pw, s.dw);
  return OH * OW <= positions && std::min(s.C, s.O) >= 64;
}

}  // namespace

// Measured against oneDNN's direct convolution, im2col + GEMM and Winograd (Zen 4, one and two
// threads, ResNet-18's last three stages at 16 x 3 x 64 x 64): the forward won where at most half
// the pairs read the image (512 -> 512 at 2 x 2, 16 of 36: 4.2 -> 2.9 ms; at 4 x 4, 100 of 144,
// oneDNN, which skips the padding's taps there too, stayed ahead: 2.2 against 2.8-3.2); the weight
// gradient onto 4 positions or fewer (3.5 -> 2.6 ms at 2 x 2, 2.0 -> 1.8 for 256 -> 512 with
// stride 2; at 4 x 4 Winograd's 2.1 stays). The input gradient by taps never won (3.2-3.7 against
// oneDNN's 3.1 at 2 x 2). A quarter of the time goes to putting each tap's weights in one matrix
// (the weight, 9.4 MB at 512 channels, read and written once per call).
bool use_conv_by_taps(const ConvShape& s) {
  if (!few_positions_wide(s, 16)) return false;
  const Taps plan = taps_of(s);
  return 2 * pairs_reading(plan) <= plan.L * plan.KK;
}

bool use_conv_weight_grad_by_taps(const ConvShape& s) {
  if (!few_positions_wide(s, 4)) return false;
  const Taps plan = taps_of(s);
  return 4 * pairs_reading(plan) <= 3 * plan.L * plan.KK;
}

template <class T>
void conv2d_by_taps(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  const Taps plan = taps_of(s);
  const int64_t N = s.N, C = s.C, O = s.O, LN = plan.L * N;
  Scratch<T> Wr(plan.KK * O * C), Xc(C * plan.cols), Y(O * LN);
  tap_major(s, plan.KK, w, Wr.get());
  pack_columns(s, plan, x, C, true, Xc.get());
  const int64_t ob = row_block(O), blocks = (O + ob - 1) / ob;
  parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
    Scratch<T> Z(ob * plan.widest);
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t o0 = blk * ob, rows = std::min(O, o0 + ob) - o0;
      T* acc = Y.get() + o0 * LN;
      for (int64_t r = 0; r < rows; ++r)
        std::fill(acc + r * LN, acc + (r + 1) * LN, bias ? bias[o0 + r] : T(0));
      for (const Tap& tap : plan.taps) {
        const int64_t ncol = tap.positions() * N;
        gemm<T, T>(rows, ncol, C, {Wr.get() + (tap.t * O + o0) * C, C, 1},
                   {Xc.get() + tap.col0, plan.cols, 1}, T(0), Z.get(), ncol);
        const int64_t width = tap.ow1 - tap.ow0;
        add_blocks(Z.get(), ncol, rows, tap.positions(), N, acc, LN, [&](int64_t k) {
          return (tap.oh0 + k / width) * plan.OW + tap.ow0 + k % width;
        });
      }
    }
  });
  images_first(Y.get(), O, plan.L, N, y);
}

template <class T>
void conv2d_backward_weight_by_taps(const ConvShape& s, const T* x, const T* g, T* dw) {
  const Taps plan = taps_of(s);
  const int64_t C = s.C, O = s.O, KK = plan.KK;
  Scratch<T> Xc(C * plan.cols), Gc(O * plan.cols), dWr(KK * O * C);
  pack_columns(s, plan, x, C, true, Xc.get());
  pack_columns(s, plan, g, O, false, Gc.get());
  const int64_t ob = row_block(O), blocks = (O + ob - 1) / ob;
  parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t o0 = blk * ob, rows = std::min(O, o0 + ob) - o0;
      size_t next = 0;
      for (int64_t t = 0; t < KK; ++t) {
        T* to = dWr.get() + (t * O + o0) * C;
        if (next < plan.taps.size() && plan.taps[next].t == t) {
          const Tap& tap = plan.taps[next++];
          // (rows x positions N) @ (positions N x C): Xc's columns of the tap, transposed
          gemm<T, T>(rows, C, tap.positions() * s.N,
                     {Gc.get() + o0 * plan.cols + tap.col0, plan.cols, 1},
                     {Xc.get() + tap.col0, 1, plan.cols}, T(0), to, C);
        } else {
          std::fill(to, to + rows * C, T(0));  // a tap that reads only padding
        }
      }
    }
  });
  const T* from = dWr.get();
  parallel_for(O, grain_for(C * KK), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      for (int64_t t = 0; t < KK; ++t) {
        const T* row = from + (t * O + o) * C;
        for (int64_t c = 0; c < C; ++c) dw[(o * C + c) * KK + t] = row[c];
      }
  });
}

template void conv2d_by_taps<float>(const ConvShape&, const float*, const float*, const float*,
                                    float*);
template void conv2d_by_taps<double>(const ConvShape&, const double*, const double*, const double*,
                                     double*);
template void conv2d_backward_weight_by_taps<float>(const ConvShape&, const float*, const float*,
                                                    float*);
template void conv2d_backward_weight_by_taps<double>(const ConvShape&, const double*, const double*,
                                                     double*);

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
