#include "vkml/backend/cpu/winograd.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "vkml/backend/cpu/linalg.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/scratch.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

constexpr int64_t kTaps = 16;  // a 4x4 transformed tile
// A chunk's transformed tiles stay under this many floats per channel count: 1 MiB of taps, an
// L2's worth (2^12 to 2^15 measured within 5% of each other on ResNet's layers).
constexpr int64_t kChunkFloats = 1 << 14;

// The stride between the 16 taps' planes of n floats each: n and a cache line, so that a loop
// reading or writing all 16 (a power of two apart, 1 MiB in a 512-channel layer) does not map
// them all to the same cache set (that ran the weight gradient's last step 3x slower).
int64_t tap_stride(int64_t n) { return n + 16; }

// A stride-1 3x3 convolution of `in` channels into `out` channels cut into 2x2 output tiles,
// and the tiles into chunks of whole tile rows (n, th), numbered r = n * TH + th.
struct Tiling {
  int64_t N, in, H, W, out, ph, pw;
  int64_t OH, OW, TH, TW;
  int64_t rows_per_chunk, ld;   // ld: the tiles of a full chunk, each GEMM's row stride
  int64_t in_plane, out_plane;  // a tap's plane of input / output channels x ld

  Tiling(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t pad_h, int64_t pad_w)
      : N(n), in(cin), H(h), W(w), out(cout), ph(pad_h), pw(pad_w) {
    OH = H + 2 * ph - 2, OW = W + 2 * pw - 2;
    TH = (OH + 1) / 2, TW = (OW + 1) / 2;
    rows_per_chunk = std::clamp<int64_t>(kChunkFloats / std::max(in, out) / TW, 1, N * TH);
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

// U[t][row][col] = (G k G^T)[t] for each kernel k = w[o][c] (O, C, 3, 3): (row, col) = (o, c),
// or, with `flip`, the input gradient's kernel rot180(w[o][c]) at (c, o). A row of U at a time,
// its 16 taps first in a small buffer: stores straight into the 16 planes (megabytes apart in a
// deep layer) ran 5x slower.
void transform_weights(const float* w, int64_t O, int64_t C, bool flip, float* U) {
  const int64_t rows = flip ? C : O, cols = flip ? O : C, plane = tap_stride(O * C);
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(cols, 1));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    std::vector<float> buf(static_cast<size_t>(kTaps * cols));
    for (int64_t row = b; row < e; ++row) {
      for (int64_t col = 0; col < cols; ++col) {
        const float* k = w + (flip ? col * C + row : row * C + col) * 9;
        float f[3][3];
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) f[i][j] = flip ? k[(2 - i) * 3 + 2 - j] : k[i * 3 + j];
        transform_kernel(f, buf.data() + col, cols);
      }
      for (int64_t t = 0; t < kTaps; ++t)
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

// C[t] = A[t] @ B[t] + beta * C[t] for the 16 taps, A[t] = a with its data t * a_plane further
// on (B, C likewise); in the pool unless called from inside it.
void tap_products(int64_t M, int64_t N, int64_t K, MatRef<float> a, int64_t a_plane,
                  MatRef<float> b, int64_t b_plane, float beta, float* C, int64_t c_plane,
                  int64_t ldc) {
  parallel_for(kTaps, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t)
      gemm<float, float>(M, N, K, {a.data + t * a_plane, a.rs, a.cs},
                         {b.data + t * b_plane, b.rs, b.cs}, beta, C + t * c_plane, ldc);
  });
}

// y = conv(x, the kernels transformed in U[t][out][in]) (+ bias). The chunks spread over the
// pool, each on one thread (its transforms and 16 products inline), or, for a single chunk (a
// deep layer's whole batch), the chunk's own loops spread over the pool: per-chunk barriers cost
// more than the work at two threads (a 32 x 32 x 28 x 28 convolution: 25 chunks).
void forward(const Tiling& T, const float* x, const float* U, const float* bias, float* y) {
  parallel_for(chunks(T), 1, [&](int64_t b, int64_t e) {
    Scratch<float> V(kTaps * T.in_plane), M(kTaps * T.out_plane);
    for (int64_t k = b; k < e; ++k) {
      const auto [r0, r1] = chunk_rows(T, k);
      transform_input(T, x, r0, r1, V.get());
      tap_products(T.out, (r1 - r0) * T.TW, T.in, {U, T.in, 1}, tap_stride(T.out * T.in),
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
// which transforms the wider side's tiles, only from 64 channels (at 32 -> 64: 8.9 against 8.6
// ms); the weight gradient from 64 channels (10.3 against 9.5 ms at 32 -> 64) down to a tile per
// 8 channels (256 -> 256 at 4 x 4: 2.1 against 3.1 ms).
bool use_winograd(const ConvShape& s) {
  return winograd_shape(s) && std::min(s.C, s.O) >= 32 && s.W + 2 * s.pw - 2 >= 8 &&
         tiles(s) >= std::max(s.C, s.O);
}

bool use_winograd_backward_input(const ConvShape& s) {
  return winograd_shape(s) && std::min(s.C, s.O) >= 64 && s.W + 2 * s.pw - 2 >= 8 &&
         tiles(s) >= std::max(s.C, s.O);
}

bool use_winograd_weight_grad(const ConvShape& s) {
  return winograd_shape(s) && std::min(s.C, s.O) >= 64 && 8 * tiles(s) >= std::max(s.C, s.O);
}

void winograd_conv2d(const ConvShape& s, const float* x, const float* w, const float* bias,
                     float* y) {
  const Tiling T(s.N, s.C, s.H, s.W, s.O, s.ph, s.pw);
  Scratch<float> U(kTaps * tap_stride(s.O * s.C));
  transform_weights(w, s.O, s.C, false, U.get());
  forward(T, x, U.get(), bias, y);
}

void winograd_conv2d_backward_input(const ConvShape& s, const float* g, const float* w, float* dx) {
  const int64_t OH = s.H + 2 * s.ph - 2, OW = s.W + 2 * s.pw - 2;
  const Tiling T(s.N, s.O, OH, OW, s.C, 2 - s.ph, 2 - s.pw);
  Scratch<float> U(kTaps * tap_stride(s.O * s.C));
  transform_weights(w, s.O, s.C, true, U.get());
  forward(T, g, U.get(), nullptr, dx);
}

void winograd_conv2d_backward_weight(const ConvShape& s, const float* x, const float* g,
                                     float* dw) {
  const Tiling T(s.N, s.C, s.H, s.W, s.O, s.ph, s.pw);
  // The chunks' products summed into M[t][o][c], in chunk order within each of up to 8 parts of
  // the chunks (fixed by the shapes; a part's chunks on one thread), the parts' partial sums then
  // added in part order.
  const int64_t plane = tap_stride(s.O * s.C), n = chunks(T), parts = std::min<int64_t>(n, 8);
  Scratch<float> M(kTaps * plane * parts);
  parallel_for(parts, 1, [&](int64_t pb, int64_t pe) {
    Scratch<float> V(kTaps * T.in_plane), Gt(kTaps * T.out_plane);
    for (int64_t part = pb; part < pe; ++part)
      for (int64_t k = part * n / parts; k < (part + 1) * n / parts; ++k) {
        const auto [r0, r1] = chunk_rows(T, k);
        transform_input(T, x, r0, r1, V.get());
        transform_grad(T, g, r0, r1, Gt.get());
        tap_products(s.O, s.C, (r1 - r0) * T.TW, {Gt.get(), T.ld, 1}, T.out_plane,
                     {V.get(), 1, T.ld}, T.in_plane, k == part * n / parts ? 0.0f : 1.0f,
                     M.get() + part * kTaps * plane, plane, s.C);
      }
  });
  for (int64_t part = 1; part < parts; ++part) {
    const float* from = M.get() + part * kTaps * plane;
    float* to = M.get();
    parallel_for(kTaps * plane, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) to[i] += from[i];
    });
  }
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
