#include "vkml/backend/cpu/winograd.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "vkml/backend/cpu/linalg.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/scratch.h"
#include "vkml/backend/cpu/simd.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// A chunk's transformed tiles stay under this many floats per channel count: 1 MiB of taps, an
// L2's worth (2^12 to 2^15 measured within 5% of each other on ResNet's layers).
constexpr int64_t kChunkFloats = 1 << 14;

// The stride between the 16 taps' planes of n floats each: n and a cache line, so that a loop
// reading or writing all 16 (a power of two apart, 1 MiB in a 512-channel layer) does not map
// them all to the same cache set (that ran the weight gradient's last step 3x slower).
int64_t tap_stride(int64_t n) { return n + 16; }

// A stride-1 3x3 convolution of `in` channels into `out` channels cut into m x m output tiles
// (F(2x2, 3x3) or F(4x4, 3x3): (m + 2)^2 taps), and the tiles into chunks of whole tile rows
// (n, th), numbered r = n * TH + th.
struct Tiling {
  int64_t m, taps;
  int64_t N, in, H, W, out, ph, pw;
  int64_t OH, OW, TH, TW;
  int64_t rows_per_chunk, ld;   // ld: the tiles of a full chunk, each GEMM's row stride
  int64_t in_plane, out_plane;  // a tap's plane of input / output channels x ld

  Tiling(int64_t tile, int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t pad_h,
         int64_t pad_w)
      : m(tile),
        taps((tile + 2) * (tile + 2)),
        N(n),
        in(cin),
        H(h),
        W(w),
        out(cout),
        ph(pad_h),
        pw(pad_w) {
    OH = H + 2 * ph - 2, OW = W + 2 * pw - 2;
    TH = (OH + m - 1) / m, TW = (OW + m - 1) / m;
    // At most kChunkFloats * 16 / taps per tap and channel count, in chunks of equal size (the
    // last at most one row short): at two threads, 28 + 4 rows ran no faster than one thread.
    const int64_t most =
        std::clamp<int64_t>(kChunkFloats * 16 / taps / std::max(in, out) / TW, 1, N * TH);
    const int64_t n_chunks = (N * TH + most - 1) / most;
    rows_per_chunk = (N * TH + n_chunks - 1) / n_chunks;
    ld = rows_per_chunk * TW;
    in_plane = tap_stride(in * ld), out_plane = tap_stride(out * ld);
  }
  int64_t rows() const { return N * TH; }
};

// u[t * stride] = (G k G^T)[t] for a 3x3 kernel k. G's rows: (1, 0, 0), (1/2, 1/2, 1/2),
// (1/2, -1/2, 1/2), (0, 0, 1).
void transform_kernel(const float (&k)[3][3], float* u, int64_t stride) {
  float gk[4][3];  // G k
  for (int j = 0; j < 3; ++j) {
    gk[0][j] = k[0][j];
    gk[1][j] = 0.5f * (k[0][j] + k[1][j] + k[2][j]);
    gk[2][j] = 0.5f * (k[0][j] - k[1][j] + k[2][j]);
    gk[3][j] = k[2][j];
  }
  for (int i = 0; i < 4; ++i) {  // (G k) G^T: the same on the columns
    u[(i * 4 + 0) * stride] = gk[i][0];
    u[(i * 4 + 1) * stride] = 0.5f * (gk[i][0] + gk[i][1] + gk[i][2]);
    u[(i * 4 + 2) * stride] = 0.5f * (gk[i][0] - gk[i][1] + gk[i][2]);
    u[(i * 4 + 3) * stride] = gk[i][2];
  }
}

// F(4x4, 3x3) on the points 0, 1, -1, 2, -1/2 and infinity (B^T's rows scaled by 2 but the
// fifth, G's by 1/2 to match): against the usual 0, +-1, +-2 its error is half (a float32
// simulation over 64 channels, relative to the sum of the terms' magnitudes: 1.8e-7 mean and
// 4.6e-7 worst against 3.4e-7 and 1.2e-6), for a few more additions in the input transform.
//
// u[t] = (G k G^T)[t], G's rows (1/2, 0, 0), -(1, 1, 1)/6, (1, -1, 1)/6,
// (1/30, 1/15, 2/15), (-16/15, 8/15, -4/15), (0, 0, 1/2): in double, rounded once.
void transform_kernel4(const float (&k)[3][3], float (&u)[36]) {
  const auto g_rows = [](double a, double b, double c, double* r) {  // G (a, b, c)^T
    r[0] = a / 2;
    r[1] = -(a + b + c) / 6;
    r[2] = (a - b + c) / 6;
    r[3] = a / 30 + b / 15 + 2 * c / 15;
    r[4] = (-16 * a + 8 * b - 4 * c) / 15;
    r[5] = c / 2;
  };
  double gk[6][3], row[6];  // G k, then each row of (G k) G^T
  for (int j = 0; j < 3; ++j) {
    g_rows(k[0][j], k[1][j], k[2][j], row);
    for (int i = 0; i < 6; ++i) gk[i][j] = row[i];
  }
  for (int i = 0; i < 6; ++i) {
    g_rows(gk[i][0], gk[i][1], gk[i][2], row);
    for (int j = 0; j < 6; ++j) u[i * 6 + j] = static_cast<float>(row[j]);
  }
}

// U[t][row][col] = (G k G^T)[t] for each kernel k = w[o][c] (O, C, 3, 3): (row, col) = (o, c),
// or, with `flip`, the input gradient's kernel rot180(w[o][c]) at (c, o). A row of U at a time,
// its 16 taps first in a small buffer: stores straight into the 16 planes (megabytes apart in a
// deep layer) ran 5x slower.
void transform_weights(const float* w, int64_t O, int64_t C, bool flip, float* U) {
  const int64_t rows = flip ? C : O, cols = flip ? O : C, plane = tap_stride(O * C);
  constexpr int64_t taps = 16;
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(cols, 1));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    std::vector<float> buf(static_cast<size_t>(taps * cols));
    for (int64_t row = b; row < e; ++row) {
      for (int64_t col = 0; col < cols; ++col) {
        const float* k = w + (flip ? col * C + row : row * C + col) * 9;
        float f[3][3];
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) f[i][j] = flip ? k[(2 - i) * 3 + 2 - j] : k[i * 3 + j];
        transform_kernel(f, buf.data() + col, cols);
      }
      for (int64_t t = 0; t < taps; ++t)
        std::copy(buf.data() + t * cols, buf.data() + (t + 1) * cols, U + t * plane + row * cols);
    }
  });
}

// The images and tile rows [th0, th1) of each that tile rows [r0, r1) cover, with the position
// of each image's first tile in the chunk: f(n, th0, th1, p0).
template <class F>
void for_each_image_rows(const Tiling& T, int64_t r0, int64_t r1, F&& f) {
  for (int64_t n = r0 / T.TH; n * T.TH < r1; ++n) {
    const int64_t th0 = std::max(r0, n * T.TH) - n * T.TH;
    const int64_t th1 = std::min(r1, (n + 1) * T.TH) - n * T.TH;
    f(n, th0, th1, (n * T.TH + th0 - r0) * T.TW);
  }
}

// V[t][c][p] = (B^T d B)[t] for the 4x4 input tile d of each tile p of rows [r0, r1) (p counted
// from r0's first) of each input channel c; x is (N, in, H, W), zero outside the plane. B is
// applied to each input row first: tile tw reads columns 2tw to 2tw + 3 of a row, the even and
// odd columns tw and tw + 1, so with the row split into even and odd columns each of the four
// results is one unit-stride loop. Those are kept split by the rows' parity, which makes B^T's
// rows 2th to 2th + 3 the same arrays at tile p and p + TW: four long unit-stride loops per
// column of B, written straight to V.
void transform_input(const Tiling& T, const float* x, int64_t r0, int64_t r1, float* V) {
  const int64_t TW = T.TW, half = TW + 1, plane = T.in_plane;
  const int64_t span = (std::min(T.TH, T.rows_per_chunk) + 1) * TW;  // tile rows + 1, each TW
  parallel_for(T.in, 1, [&](int64_t b, int64_t e) {
    std::vector<float> ev(static_cast<size_t>(half)), od(ev.size());
    std::vector<float> h(static_cast<size_t>(8 * span));  // [column of B][row parity][span]
    for (int64_t c = b; c < e; ++c)
      for_each_image_rows(T, r0, r1, [&](int64_t n, int64_t th0, int64_t th1, int64_t p0) {
        const float* xp = x + (n * T.in + c) * T.H * T.W;
        for (int64_t row = 0; row < 2 * (th1 - th0) + 2; ++row) {
          const int64_t ih = 2 * th0 + row - T.ph;
          std::fill(ev.begin(), ev.end(), 0.0f);
          std::fill(od.begin(), od.end(), 0.0f);
          if (ih >= 0 && ih < T.H) {
            // Padded column k = iw + pw goes to (k even ? ev : od)[k / 2]: two stride-2 copies.
            const float* __restrict xr = xp + ih * T.W;
            const int64_t first = T.pw % 2;  // the first iw of an even padded column
            float* __restrict to_even = ev.data() + (T.pw + first) / 2;
            float* __restrict to_odd = od.data() + (T.pw + 1 - first) / 2;
            for (int64_t m = 0; 2 * m + first < T.W; ++m) to_even[m] = xr[2 * m + first];
            for (int64_t m = 0; 2 * m + 1 - first < T.W; ++m) to_odd[m] = xr[2 * m + 1 - first];
          }
          float* h0 = h.data() + (row % 2) * span + row / 2 * TW;
          float* h1 = h0 + 2 * span;
          float* h2 = h1 + 2 * span;
          float* h3 = h2 + 2 * span;
          for (int64_t tw = 0; tw < TW; ++tw) {  // d B: d0 - d2, d1 + d2, d2 - d1, d1 - d3
            h0[tw] = ev[tw] - ev[tw + 1];
            h1[tw] = od[tw] + ev[tw + 1];
            h2[tw] = ev[tw + 1] - od[tw];
            h3[tw] = od[tw] - od[tw + 1];
          }
        }
        const int64_t np = (th1 - th0) * TW;
        // B^T (d B) for column j of B: tile p's input rows 2th, 2th + 1, 2th + 2, 2th + 3 are
        // E[p], O[p], E[p + TW], O[p + TW] (E, O: the even and odd rows' results).
        for (int64_t j = 0; j < 4; ++j) {
          const float* __restrict E = h.data() + 2 * j * span;
          const float* __restrict O = E + span;
          float* __restrict v0 = V + j * plane + c * T.ld + p0;
          float* __restrict v1 = v0 + 4 * plane;
          float* __restrict v2 = v1 + 4 * plane;
          float* __restrict v3 = v2 + 4 * plane;
          for (int64_t p = 0; p < np; ++p) {
            v0[p] = E[p] - E[p + TW];
            v1[p] = O[p] + E[p + TW];
            v2[p] = E[p + TW] - O[p];
            v3[p] = O[p] - O[p + TW];
          }
        }
      });
  });
}

// y's tiles of rows [r0, r1) = A^T m A for each tile's 4x4 m = M[.][o][p] (+ bias[o]); y is
// (N, out, OH, OW), tiles past its edge cut. A^T's rows (1, 1, 1, 0) and (0, 1, -1, -1) over
// each tap column first, as long unit-stride loops over the tiles.
void transform_output(const Tiling& T, const float* M, const float* bias, int64_t r0, int64_t r1,
                      float* y) {
  const int64_t TW = T.TW, plane = T.out_plane;
  const int64_t span = std::min(T.TH, T.rows_per_chunk) * TW;
  parallel_for(T.out, 1, [&](int64_t b, int64_t e) {
    std::vector<float> s(static_cast<size_t>(8 * span)), row(static_cast<size_t>(2 * TW));
    for (int64_t o = b; o < e; ++o) {
      const float add = bias ? bias[o] : 0.0f;
      for_each_image_rows(T, r0, r1, [&](int64_t n, int64_t th0, int64_t th1, int64_t p0) {
        const int64_t np = (th1 - th0) * TW;
        for (int64_t j = 0; j < 4; ++j) {
          const float* __restrict m0 = M + j * plane + o * T.ld + p0;
          const float* __restrict m1 = m0 + 4 * plane;
          const float* __restrict m2 = m1 + 4 * plane;
          const float* __restrict m3 = m2 + 4 * plane;
          float* __restrict s0 = s.data() + j * span;
          float* __restrict s1 = s0 + 4 * span;
          for (int64_t p = 0; p < np; ++p) {
            s0[p] = m0[p] + m1[p] + m2[p];
            s1[p] = m1[p] - m2[p] - m3[p];
          }
        }
        for (int64_t th = th0; th < th1; ++th)
          for (int64_t a = 0; a < 2 && 2 * th + a < T.OH; ++a) {
            const float* sa = s.data() + a * 4 * span + (th - th0) * TW;
            float* __restrict r = row.data();
            for (int64_t tw = 0; tw < TW; ++tw) {  // (A^T m) A: the same on the columns
              r[2 * tw] = sa[tw] + sa[span + tw] + sa[2 * span + tw] + add;
              r[2 * tw + 1] = sa[span + tw] - sa[2 * span + tw] - sa[3 * span + tw] + add;
            }
            std::copy(r, r + T.OW, y + ((n * T.out + o) * T.OH + 2 * th + a) * T.OW);
          }
      });
    }
  });
}

// Gt[t][o][p] = (A g A^T)[t] for the 2x2 tile g of each tile p of rows [r0, r1) of each output
// channel o of g (N, out, OH, OW), zero past its edge: g's four parities (even and odd rows and
// columns) split into arrays over the tiles, then the 16 taps as long unit-stride loops.
void transform_grad(const Tiling& T, const float* g, int64_t r0, int64_t r1, float* Gt) {
  const int64_t TW = T.TW, plane = T.out_plane;
  const int64_t span = std::min(T.TH, T.rows_per_chunk) * TW;
  parallel_for(T.out, 1, [&](int64_t b, int64_t e) {
    std::vector<float> q(static_cast<size_t>(4 * span));
    for (int64_t o = b; o < e; ++o)
      for_each_image_rows(T, r0, r1, [&](int64_t n, int64_t th0, int64_t th1, int64_t p0) {
        const float* gp = g + (n * T.out + o) * T.OH * T.OW;
        float* __restrict a0 = q.data();  // g[2th][2tw], g[2th][2tw + 1], g[2th + 1][2tw], ...
        float* __restrict b0 = a0 + span;
        float* __restrict a1 = b0 + span;
        float* __restrict b1 = a1 + span;
        for (int64_t th = th0; th < th1; ++th)
          for (int64_t i = 0; i < 2; ++i) {
            const int64_t oh = 2 * th + i;
            const float* gr = gp + oh * T.OW;
            float* ea = (i ? a1 : a0) + (th - th0) * TW;
            float* eb = (i ? b1 : b0) + (th - th0) * TW;
            for (int64_t tw = 0; tw < TW; ++tw) {
              ea[tw] = oh < T.OH ? gr[2 * tw] : 0.0f;
              eb[tw] = oh < T.OH && 2 * tw + 1 < T.OW ? gr[2 * tw + 1] : 0.0f;
            }
          }
        const int64_t np = (th1 - th0) * TW;
        float* __restrict v = Gt + o * T.ld + p0;
        // A g: rows g0, g0 + g1, g0 - g1, -g1; then (A g) A^T: columns (a, b) -> a, a + b,
        // a - b, -b.
        // Row i of A g, as a function of p, for rows g0, g0 + g1, g0 - g1, -g1 (no multiplies:
        // a 0 * inf would make a NaN the direct sum has not).
        const auto taps_of_row = [&](int64_t i, auto row) {
          float* __restrict v0 = v + i * 4 * plane;
          float* __restrict v1 = v0 + plane;
          float* __restrict v2 = v1 + plane;
          float* __restrict v3 = v2 + plane;
          for (int64_t p = 0; p < np; ++p) {
            const float ra = row(a0[p], a1[p]), rb = row(b0[p], b1[p]);
            v0[p] = ra;
            v1[p] = ra + rb;
            v2[p] = ra - rb;
            v3[p] = -rb;
          }
        };
        taps_of_row(0, [](float u, float) { return u; });
        taps_of_row(1, [](float u, float w) { return u + w; });
        taps_of_row(2, [](float u, float w) { return u - w; });
        taps_of_row(3, [](float, float w) { return -w; });
      });
  });
}

int64_t chunks(const Tiling& T) { return (T.rows() + T.rows_per_chunk - 1) / T.rows_per_chunk; }

// Tile rows [r0, r1) of chunk k.
std::pair<int64_t, int64_t> chunk_rows(const Tiling& T, int64_t k) {
  return {k * T.rows_per_chunk, std::min(T.rows(), (k + 1) * T.rows_per_chunk)};
}

// C[t] = A[t] @ B[t] + beta * C[t] for each tap t, A[t] = a with its data t * a_plane further
// on (B, C likewise); in the pool unless called from inside it.
void tap_products(int64_t taps, int64_t M, int64_t N, int64_t K, MatRef<float> a, int64_t a_plane,
                  MatRef<float> b, int64_t b_plane, float beta, float* C, int64_t c_plane,
                  int64_t ldc) {
  parallel_for(taps, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t)
      gemm<float, float>(M, N, K, {a.data + t * a_plane, a.rs, a.cs},
                         {b.data + t * b_plane, b.rs, b.cs}, beta, C + t * c_plane, ldc);
  });
}

// ---- F(4x4, 3x3), channels innermost ----
// Each 4x4 output tile from a 6x6 input tile with 36 multiplications per channel pair (against
// 64 for four F(2x2) tiles). Its transforms run on vectors of channels: a tile's 36 inputs are
// 36 vectors of kLanes channels, read from a copy of the image rows with channels innermost, and
// its 16 outputs go to such a copy, then out to (N, C, H, W). Tiles in a row are few (6 in a
// 24-wide image), so loops over them, as F(2x2)'s transforms run, would be short; channels are
// 32 or more. V[t] is (tiles, in), U[t] (in, out) and M[t] = V[t] U[t] (tiles, out); V and M
// keep a tile's 36 taps together (V[p][t][c]: the GEMMs read and write rows 36 apart), so that
// the transforms read and write one block per tile, not 36 streams (1.3x faster).
using Lanes = Simd<float>;
constexpr int64_t kLanes = static_cast<int64_t>(sizeof(Lanes) / sizeof(float));

// The first n <= kLanes floats at p (the rest zero), and their store: a whole vector but for a
// channel count's last, partial block.
template <bool Full>
inline Lanes load_lanes(const float* p, int64_t n) {
  Lanes v = {};
  if (Full)
    std::memcpy(&v, p, sizeof v);
  else
    for (int64_t l = 0; l < n; ++l) v[l] = p[l];
  return v;
}
template <bool Full>
inline void store_lanes(float* p, const Lanes& v, int64_t n) {
  if (Full)
    std::memcpy(p, &v, sizeof v);
  else
    for (int64_t l = 0; l < n; ++l) p[l] = v[l];
}

// r = B^T d for six values d (B^T's rows: (2, 3, -4, -3, 2, 0), (0, -2, -5, -1, 2, 0),
// (0, 2, 1, -5, 2, 0), (0, -1, -2, 1, 2, 0), (0, 2, -1, -2, 1, 0), (0, 2, 3, -4, -3, 2)).
inline void bt6(const Lanes (&d)[6], Lanes (&r)[6]) {
  r[0] = 2.0f * (d[0] + d[4]) + 3.0f * (d[1] - d[3]) - 4.0f * d[2];
  r[1] = 2.0f * (d[4] - d[1]) - 5.0f * d[2] - d[3];
  r[2] = 2.0f * (d[1] + d[4]) + d[2] - 5.0f * d[3];
  r[3] = (d[3] - d[1]) + 2.0f * (d[4] - d[2]);
  r[4] = 2.0f * (d[1] - d[3]) - d[2] + d[4];
  r[5] = 2.0f * (d[1] + d[5]) + 3.0f * (d[2] - d[4]) - 4.0f * d[3];
}

// r = A^T m for six values m (A^T's rows: (1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -1/2, 0),
// (0, 1, 1, 4, 1/4, 0), (0, 1, -1, 8, -1/8, 1)).
inline void at6(const Lanes (&m)[6], Lanes (&r)[4]) {
  const Lanes a = m[1] + m[2], b = m[1] - m[2];
  r[0] = m[0] + a + m[3] + m[4];
  r[1] = b + 2.0f * m[3] - 0.5f * m[4];
  r[2] = a + 4.0f * m[3] + 0.25f * m[4];
  r[3] = b + 8.0f * m[3] - 0.125f * m[4] + m[5];
}

// The image rows and columns a segment of tile rows [th0, th1) reads or writes, channels
// innermost: rows 4 th0 - ph.. (4 (th1 - th0) + 2 of them), columns -pw.. (4 TW + 2), kLanes
// floats each; zero outside the image.
struct LaneRows {
  int64_t rows, cols;
  int64_t at(int64_t r, int64_t c) const { return (r * cols + c) * kLanes; }
};

// dst[(i * 6 + j) * ld] = (S d S^T)[i][j] for the In x In tile of vectors d (laid out as R's)
// and a 6 x In matrix S applied by `apply` (In values to 6): over each column of d, then each
// row of the result. The first n lanes stored.
template <int In, auto apply, bool Full>
inline void store_taps(const float* d, const LaneRows& R, float* dst, int64_t ld, int64_t n) {
  Lanes sd[6][In];  // (S d)[i][k]
  for (int64_t k = 0; k < In; ++k) {
    Lanes col[In], r[6];
    for (int64_t i = 0; i < In; ++i) col[i] = load_lanes<true>(d + R.at(i, k), kLanes);
    apply(col, r);
    for (int64_t i = 0; i < 6; ++i) sd[i][k] = r[i];
  }
  for (int64_t i = 0; i < 6; ++i) {  // (S d) S^T, row i
    Lanes r[6];
    apply(sd[i], r);
    for (int64_t j = 0; j < 6; ++j) store_lanes<Full>(dst + (i * 6 + j) * ld, r[j], n);
  }
}

// V[t][p][c] = (B^T d B)[t] for channels [c0, c0 + n) of the tiles of image n's tile rows
// [th0, th1), p counted from p0.
template <bool Full>
void input_tiles4(const Tiling& T, const float* x, float* V, int64_t img, int64_t th0, int64_t th1,
                  int64_t p0, int64_t c0, int64_t n, float* buf) {
  const LaneRows R{4 * (th1 - th0) + 2, 4 * T.TW + 2};
  std::fill(buf, buf + R.rows * R.cols * kLanes, 0.0f);
  for (int64_t l = 0; l < n; ++l) {
    const float* xp = x + (img * T.in + c0 + l) * T.H * T.W;
    for (int64_t r = 0; r < R.rows; ++r) {
      const int64_t ih = 4 * th0 + r - T.ph;
      if (ih < 0 || ih >= T.H) continue;
      float* to = buf + R.at(r, T.pw) + l;
      for (int64_t iw = 0; iw < T.W; ++iw) to[iw * kLanes] = xp[ih * T.W + iw];
    }
  }
  for (int64_t th = th0; th < th1; ++th)
    for (int64_t tw = 0; tw < T.TW; ++tw) {
      const int64_t p = p0 + (th - th0) * T.TW + tw;
      store_taps<6, bt6, Full>(buf + R.at(4 * (th - th0), 4 * tw), R, V + p * 36 * T.in + c0, T.in,
                               n);
    }
}

// y's tiles of image n's tile rows [th0, th1) = A^T m A (+ bias) for output channels
// [o0, o0 + n), m = M[.][p][o].
template <bool Full>
void output_tiles4(const Tiling& T, const float* M, const float* bias, float* y, int64_t img,
                   int64_t th0, int64_t th1, int64_t p0, int64_t o0, int64_t n, float* buf) {
  const LaneRows R{4 * (th1 - th0), 4 * T.TW};
  const Lanes add = bias ? load_lanes<Full>(bias + o0, n) : Lanes{};
  for (int64_t th = th0; th < th1; ++th)
    for (int64_t tw = 0; tw < T.TW; ++tw) {
      const int64_t p = p0 + (th - th0) * T.TW + tw;
      Lanes am[4][6];  // (A^T m)[a][j]
      for (int64_t j = 0; j < 6; ++j) {
        Lanes col[6], r[4];
        for (int64_t i = 0; i < 6; ++i)
          col[i] = load_lanes<Full>(M + (p * 36 + i * 6 + j) * T.out + o0, n);
        at6(col, r);
        for (int64_t a = 0; a < 4; ++a) am[a][j] = r[a];
      }
      float* out = buf + R.at(4 * (th - th0), 4 * tw);
      for (int64_t a = 0; a < 4; ++a) {  // (A^T m) A: row a of the tile
        Lanes r[4];
        at6(am[a], r);
        for (int64_t b = 0; b < 4; ++b) store_lanes<true>(out + R.at(a, b), r[b] + add, kLanes);
      }
    }
  for (int64_t l = 0; l < n; ++l) {
    float* yp = y + (img * T.out + o0 + l) * T.OH * T.OW;
    for (int64_t r = 0; r < R.rows && 4 * th0 + r < T.OH; ++r) {
      const float* from = buf + R.at(r, 0) + l;
      float* to = yp + (4 * th0 + r) * T.OW;
      for (int64_t ow = 0; ow < T.OW; ++ow) to[ow] = from[ow * kLanes];
    }
  }
}

// r = A g for four values g (A's rows: (1, 0, 0, 0), (1, 1, 1, 1), (1, -1, 1, -1), (1, 2, 4, 8),
// (1, -1/2, 1/4, -1/8), (0, 0, 0, 1)): at6's transposed, for the weight gradient.
inline void a4(const Lanes (&g)[4], Lanes (&r)[6]) {
  const Lanes even = g[0] + g[2], odd = g[1] + g[3];
  r[0] = g[0];
  r[1] = even + odd;
  r[2] = even - odd;
  r[3] = g[0] + 2.0f * g[1] + 4.0f * g[2] + 8.0f * g[3];
  r[4] = g[0] - 0.5f * g[1] + 0.25f * g[2] - 0.125f * g[3];
  r[5] = g[3];
}

// Gt[p][t][o] = (A g A^T)[t] for the 4x4 tile g of each tile of image n's tile rows [th0, th1)
// of output channels [o0, o0 + n) of g (N, out, OH, OW), zero past its edge.
template <bool Full>
void grad_tiles4(const Tiling& T, const float* g, float* Gt, int64_t img, int64_t th0, int64_t th1,
                 int64_t p0, int64_t o0, int64_t n, float* buf) {
  const LaneRows R{4 * (th1 - th0), 4 * T.TW};
  std::fill(buf, buf + R.rows * R.cols * kLanes, 0.0f);
  for (int64_t l = 0; l < n; ++l) {
    const float* gp = g + (img * T.out + o0 + l) * T.OH * T.OW;
    for (int64_t r = 0; r < R.rows && 4 * th0 + r < T.OH; ++r) {
      const float* from = gp + (4 * th0 + r) * T.OW;
      float* to = buf + R.at(r, 0) + l;
      for (int64_t ow = 0; ow < T.OW; ++ow) to[ow * kLanes] = from[ow];
    }
  }
  for (int64_t th = th0; th < th1; ++th)
    for (int64_t tw = 0; tw < T.TW; ++tw) {
      const int64_t p = p0 + (th - th0) * T.TW + tw;
      store_taps<4, a4, Full>(buf + R.at(4 * (th - th0), 4 * tw), R, Gt + p * 36 * T.out + o0,
                              T.out, n);
    }
}

// r = G^T v for six values v at stride s (F(4x4)'s G, as transform_kernel4's), in double.
inline void gt_rows(const double* v, int64_t s, double (&r)[3]) {
  const double v1 = v[s], v2 = v[2 * s], v3 = v[3 * s], v4 = v[4 * s];
  r[0] = v[0] / 2 + (v2 - v1) / 6 + v3 / 30 - 16 * v4 / 15;
  r[1] = -(v1 + v2) / 6 + (v3 + 8 * v4) / 15;
  r[2] = (v2 - v1) / 6 + (2 * v3 - 4 * v4) / 15 + v[5 * s] / 2;
}

// Runs f(n, th0, th1, p0, c0, lanes) for each image segment of rows [r0, r1) and each block of
// kLanes of `channels`, the blocks spread over the pool.
template <class F>
void for_each_lane_block(const Tiling& T, int64_t channels, int64_t r0, int64_t r1, F&& f) {
  const int64_t blocks = (channels + kLanes - 1) / kLanes;
  parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t c0 = blk * kLanes, lanes = std::min(kLanes, channels - c0);
      for_each_image_rows(T, r0, r1, [&](int64_t n, int64_t th0, int64_t th1, int64_t p0) {
        f(n, th0, th1, p0, c0, lanes);
      });
    }
  });
}

// Scratch for one thread's image rows, channels innermost: the most tile rows a segment holds.
int64_t lane_rows_size(const Tiling& T) {
  const int64_t th = std::min(T.TH, T.rows_per_chunk);
  return (4 * th + 2) * (4 * T.TW + 2) * kLanes;
}

// U[t][i][o] = (G k G^T)[t] for each kernel k = w[o][i] (O, C, 3, 3), or, with `flip`, the input
// gradient's kernel rot180(w[i][o]) (in = O, out = C), for input channels [i0, i1).
void transform_weight_rows4(const float* w, int64_t O, int64_t C, bool flip, int64_t i0, int64_t i1,
                            float* U) {
  const int64_t out = flip ? C : O, plane = tap_stride(O * C);
  float u[36];
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t o = 0; o < out; ++o) {
      const float* k = w + (flip ? i * C + o : o * C + i) * 9;
      float f[3][3];
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) f[a][b] = flip ? k[(2 - a) * 3 + 2 - b] : k[a * 3 + b];
      transform_kernel4(f, u);
      for (int64_t t = 0; t < 36; ++t) U[t * plane + i * out + o] = u[t];
    }
}

void transform_weights4(const float* w, int64_t O, int64_t C, bool flip, float* U) {
  const int64_t in = flip ? O : C, out = flip ? C : O;
  parallel_for(in, std::max<int64_t>(1, 4096 / std::max<int64_t>(out, 1)),
               [&](int64_t b, int64_t e) { transform_weight_rows4(w, O, C, flip, b, e, U); });
}

// One of the transforms above over the tiles of rows [r0, r1), for each block of channels
// (`channels`: the transform's side), with its buffer of image rows per thread.
template <auto Full, auto Partial, class... Args>
void each_block4(const Tiling& T, int64_t channels, int64_t r0, int64_t r1, Args... args) {
  for_each_lane_block(
      T, channels, r0, r1,
      [&](int64_t n, int64_t th0, int64_t th1, int64_t p0, int64_t c0, int64_t lanes) {
        thread_local std::vector<float> buf;
        buf.resize(static_cast<size_t>(lane_rows_size(T)));
        if (lanes == kLanes)
          Full(T, args..., n, th0, th1, p0, c0, lanes, buf.data());
        else
          Partial(T, args..., n, th0, th1, p0, c0, lanes, buf.data());
      });
}

// y = conv(x, the kernels transformed in U[t][in][out]) (+ bias), F(4x4, 3x3), chunks of tile
// rows as forward's.
void forward4(const Tiling& T, const float* x, const float* U, const float* bias, float* y) {
  parallel_for(chunks(T), 1, [&](int64_t b, int64_t e) {
    Scratch<float> V(T.taps * T.in_plane), M(T.taps * T.out_plane);
    for (int64_t k = b; k < e; ++k) {
      const auto [r0, r1] = chunk_rows(T, k);
      each_block4<input_tiles4<true>, input_tiles4<false>>(T, T.in, r0, r1, x, V.get());
      tap_products(T.taps, (r1 - r0) * T.TW, T.out, T.in, {V.get(), T.taps * T.in, 1}, T.in,
                   {U, T.out, 1}, tap_stride(T.out * T.in), 0.0f, M.get(), T.out, T.taps * T.out);
      each_block4<output_tiles4<true>, output_tiles4<false>>(T, T.out, r0, r1, M.get(), bias, y);
    }
  });
}

// The weight gradient's tap products summed over the batch: add_chunk(k, beta, V, Gt, M) adds
// chunk k's into M (beta 0 for the first chunk of its part), with scratch V and Gt for its
// transforms. The chunks go in up to 8 parts (fixed by the shapes; a part's chunks on one thread,
// in chunk order), the parts' sums then added in part order. Returns the sums M[t][o][c], planes
// tap_stride(out * in) apart.
template <class F>
Scratch<float> sum_tap_products(const Tiling& T, F&& add_chunk) {
  const int64_t n = chunks(T), parts = std::min<int64_t>(n, 8);
  const int64_t size = T.taps * tap_stride(T.out * T.in);
  Scratch<float> M(size * parts);
  parallel_for(parts, 1, [&](int64_t pb, int64_t pe) {
    Scratch<float> V(T.taps * T.in_plane), Gt(T.taps * T.out_plane);
    for (int64_t part = pb; part < pe; ++part)
      for (int64_t k = part * n / parts; k < (part + 1) * n / parts; ++k)
        add_chunk(k, k == part * n / parts ? 0.0f : 1.0f, V.get(), Gt.get(), M.get() + part * size);
  });
  for (int64_t part = 1; part < parts; ++part) {
    const float* from = M.get() + part * size;
    float* to = M.get();
    parallel_for(size, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) to[i] += from[i];
    });
  }
  return M;
}

// dw (out, in, 3, 3) from x (N, in, H, W) and g (N, out, OH, OW) by F(4x4, 3x3)'s adjoint:
// dw[o][c] = G^T [sum over tiles of (A g A^T) * (B^T x B)] G.
void weight_grad4(const Tiling& T, const float* x, const float* g, float* dw) {
  const int64_t plane = tap_stride(T.out * T.in);
  Scratch<float> M =
      sum_tap_products(T, [&](int64_t k, float beta, float* V, float* Gt, float* sums) {
        const auto [r0, r1] = chunk_rows(T, k);
        each_block4<input_tiles4<true>, input_tiles4<false>>(T, T.in, r0, r1, x, V);
        each_block4<grad_tiles4<true>, grad_tiles4<false>>(T, T.out, r0, r1, g, Gt);
        tap_products(T.taps, T.out, T.in, (r1 - r0) * T.TW, {Gt, 1, T.taps * T.out}, T.out,
                     {V, T.taps * T.in, 1}, T.in, beta, sums, plane, T.in);
      });
  const float* sums = M.get();
  parallel_for(T.out * T.in, 256, [&](int64_t lo, int64_t hi) {
    for (int64_t oc = lo; oc < hi; ++oc) {
      double m[36], gm[3][6];
      for (int64_t t = 0; t < 36; ++t) m[t] = sums[t * plane + oc];
      for (int64_t j = 0; j < 6; ++j) {  // G^T m, column j
        double r[3];
        gt_rows(m + j, 6, r);
        for (int64_t a = 0; a < 3; ++a) gm[a][j] = r[a];
      }
      for (int64_t a = 0; a < 3; ++a) {  // (G^T m) G, row a
        double r[3];
        gt_rows(gm[a], 1, r);
        for (int64_t b = 0; b < 3; ++b) dw[oc * 9 + a * 3 + b] = static_cast<float>(r[b]);
      }
    }
  });
}

// y = conv(x, the kernels transformed in U[t][out][in]) (+ bias). The chunks spread over the
// pool, each on one thread (its transforms and 16 products inline), or, for a single chunk (a
// deep layer's whole batch), the chunk's own loops spread over the pool: per-chunk barriers cost
// more than the work at two threads (a 32 x 32 x 28 x 28 convolution: 25 chunks).
void forward(const Tiling& T, const float* x, const float* U, const float* bias, float* y) {
  parallel_for(chunks(T), 1, [&](int64_t b, int64_t e) {
    Scratch<float> V(T.taps * T.in_plane), M(T.taps * T.out_plane);
    for (int64_t k = b; k < e; ++k) {
      const auto [r0, r1] = chunk_rows(T, k);
      transform_input(T, x, r0, r1, V.get());
      tap_products(T.taps, T.out, (r1 - r0) * T.TW, T.in, {U, T.in, 1}, tap_stride(T.out * T.in),
                   {V.get(), T.ld, 1}, T.in_plane, 0.0f, M.get(), T.out_plane, T.ld);
      transform_output(T, M.get(), bias, r0, r1, y);
    }
  });
}

bool winograd_shape(const ConvShape& s) {
  static const bool off = [] {
    const char* v = std::getenv("VKML_WINOGRAD");
    return v && std::string_view(v) == "0";
  }();
  return !off && s.kh == 3 && s.kw == 3 && s.sh == 1 && s.sw == 1 && s.dh == 1 && s.dw == 1 &&
         s.ph >= 0 && s.ph <= 2 && s.pw >= 0 && s.pw <= 2 && s.H + 2 * s.ph >= 3 &&
         s.W + 2 * s.pw >= 3;
}
// F(4x4, 3x3) for images whose rows make 16 outputs or more, F(2x2, 3x3) below: at 8 x 8 the
// two ran level at one thread and F(4x4) 30% slower at two (4 tiles an image, few chunks); at
// 4 x 4 (one tile an image) twice as slow.
int64_t tile_for_width(int64_t out_width) { return out_width >= 16 ? 4 : 2; }
int64_t forward_tile(const ConvShape& s) { return tile_for_width(s.W + 2 * s.pw - 2); }
int64_t input_grad_tile(const ConvShape& s) { return tile_for_width(s.W); }
int64_t weight_grad_tile(const ConvShape& s) { return tile_for_width(s.W + 2 * s.pw - 2); }

int64_t tiles(const ConvShape& s) {
  return s.N * ((s.H + 2 * s.ph - 1) / 2) * ((s.W + 2 * s.pw - 1) / 2);
}
}  // namespace

// Measured against im2col + GEMM and oneDNN's direct convolution (Zen 4, one and two threads;
// ResNet-18's 3x3 layers at 16 x 3 x 64 x 64, the MNIST net's 32 -> 64 at 26 x 26, 32 -> 64 at
// 28 x 28 and at 4 x 4): the forward won from 32 channels each side, on rows of 8 outputs or more
// (at 4 x 4 the transforms' per-row work outweighed the products: 0.60 against 0.40 ms) and
// where the batch has at least as many tiles as channels (a deep layer's weights, transformed per
// call, outweigh a few tiles: 512 -> 512 at 2 x 2 ran 6.1 against 4.2 ms). The input gradient,
// which transforms the wider side's tiles, from 64 channels by F(2x2) (at 32 -> 64: 8.9 against
// 8.6 ms) and from 32 by F(4x4) (the MNIST net's 64 -> 32 input gradient at 26 x 26: 9.1 against
// oneDNN's 13.3 ms); the weight gradient by F(2x2) from 64 channels (10.3 against 9.5 ms at
// 32 -> 64) down to a tile per 8 channels (256 -> 256 at 4 x 4: 2.1 against 3.1 ms), by F(4x4)
// from 32 (the MNIST net's: 7.8 against 14.2 ms). F(4x4) against F(2x2), one thread: forwards
// 7.4 against 12.0 ms (MNIST's 32 -> 64), 1.6 against 2.2 (ResNet's 64 -> 64 at 16 x 16), 5.8
// against 9.4 (64 -> 64 at 32 x 32); weight gradients 1.7 against 2.9 (16 x 16), 6.2 against
// 10.6 (32 x 32); at 8 x 8 the two ran level (F(4x4) 2.5 against 2.1 at one thread, 1.8 against
// 2.3 at two).
bool use_winograd(const ConvShape& s) {
  return winograd_shape(s) && std::min(s.C, s.O) >= 32 && s.W + 2 * s.pw - 2 >= 8 &&
         tiles(s) >= std::max(s.C, s.O);
}

bool use_winograd_backward_input(const ConvShape& s) {
  const int64_t narrow = std::min(s.C, s.O);
  return winograd_shape(s) && tiles(s) >= std::max(s.C, s.O) &&
         ((narrow >= 64 && s.W + 2 * s.pw - 2 >= 8) || (narrow >= 32 && input_grad_tile(s) == 4));
}

bool use_winograd_weight_grad(const ConvShape& s) {
  const int64_t narrow = std::min(s.C, s.O);
  return winograd_shape(s) &&
         ((narrow >= 64 && 8 * tiles(s) >= std::max(s.C, s.O)) ||
          (narrow >= 32 && weight_grad_tile(s) == 4 && tiles(s) >= std::max(s.C, s.O)));
}

void winograd_conv2d(const ConvShape& s, const float* x, const float* w, const float* bias,
                     float* y) {
  const Tiling T(forward_tile(s), s.N, s.C, s.H, s.W, s.O, s.ph, s.pw);
  Scratch<float> U(T.taps * tap_stride(s.O * s.C));
  if (T.m == 4) {
    transform_weights4(w, s.O, s.C, false, U.get());
    forward4(T, x, U.get(), bias, y);
    return;
  }
  transform_weights(w, s.O, s.C, false, U.get());
  forward(T, x, U.get(), bias, y);
}

void winograd_conv2d_backward_input(const ConvShape& s, const float* g, const float* w, float* dx) {
  const int64_t OH = s.H + 2 * s.ph - 2, OW = s.W + 2 * s.pw - 2;
  const Tiling T(input_grad_tile(s), s.N, s.O, OH, OW, s.C, 2 - s.ph, 2 - s.pw);
  Scratch<float> U(T.taps * tap_stride(s.O * s.C));
  if (T.m == 4) {
    transform_weights4(w, s.O, s.C, true, U.get());
    forward4(T, g, U.get(), nullptr, dx);
    return;
  }
  transform_weights(w, s.O, s.C, true, U.get());
  forward(T, g, U.get(), nullptr, dx);
}

void winograd_conv2d_backward_weight(const ConvShape& s, const float* x, const float* g,
                                     float* dw) {
  const Tiling T(weight_grad_tile(s), s.N, s.C, s.H, s.W, s.O, s.ph, s.pw);
  if (T.m == 4) {
    weight_grad4(T, x, g, dw);
    return;
  }
  const int64_t plane = tap_stride(s.O * s.C);
  Scratch<float> M =
      sum_tap_products(T, [&](int64_t k, float beta, float* V, float* Gt, float* sums) {
        const auto [r0, r1] = chunk_rows(T, k);
        transform_input(T, x, r0, r1, V);
        transform_grad(T, g, r0, r1, Gt);
        tap_products(T.taps, s.O, s.C, (r1 - r0) * T.TW, {Gt, T.ld, 1}, T.out_plane, {V, 1, T.ld},
                     T.in_plane, beta, sums, plane, s.C);
      });
  // dw[o][c] = G^T m G for each m = M[.][o][c]; G^T's rows: (1, 1/2, 1/2, 0), (0, 1/2, -1/2, 0),
  // (0, 1/2, 1/2, 1).
  const float* sums = M.get();
  parallel_for(s.O * s.C, 256, [&](int64_t b, int64_t e) {
    for (int64_t oc = b; oc < e; ++oc) {
      float gm[3][4];
      for (int64_t j = 0; j < 4; ++j) {
        const float m0 = sums[j * plane + oc], m1 = sums[(4 + j) * plane + oc];
        const float m2 = sums[(8 + j) * plane + oc], m3 = sums[(12 + j) * plane + oc];
        gm[0][j] = m0 + 0.5f * (m1 + m2);
        gm[1][j] = 0.5f * (m1 - m2);
        gm[2][j] = 0.5f * (m1 + m2) + m3;
      }
      float* k = dw + oc * 9;
      for (int64_t i = 0; i < 3; ++i) {
        k[i * 3 + 0] = gm[i][0] + 0.5f * (gm[i][1] + gm[i][2]);
        k[i * 3 + 1] = 0.5f * (gm[i][1] - gm[i][2]);
        k[i * 3 + 2] = 0.5f * (gm[i][1] + gm[i][2]) + gm[i][3];
      }
    }
  });
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
