// Scaled dot-product attention on the CPU, fused. A head's products are small (64 x 64 x 32 in
// a GPT's training step) and, under a causal mask, triangular: BLAS calls on blocks of queries
// cost more in calls and packing than the mask saves (blocks of 16 ran 1.9x slower than the
// unfused ops). So the products run in a register-blocked kernel of this file (tiles of 6 rows by
// two machine vectors; k and v transposed once per head for the score products), each tile of
// rows stopping at the last key its queries see: a causal head costs about half the full
// products. The forward goes by tiles of queries: scores, each row's softmax in place (scaled,
// masked), then the tile's output, the scores never leaving the cache. The backward recomputes
// the weights the same way (the same bits) and keeps a chunk of queries' weights and score
// gradients in scratch: dq by tiles of queries, dk and dv by tiles of keys over the queries that
// see them. Tiles are fixed by the shapes and every sum runs in a fixed order, so results do not
// depend on the thread count (the work items, which group tiles, do: few heads of long sequences
// still spread over the pool).
#include "vkml/backend/cpu/attention.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/scratch.h"
#include "vkml/backend/cpu/simd.h"
#include "vkml/backend/cpu/softmax.h"
#include "vkml/backend/cpu/vmath.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

constexpr int kRows = 6;  // rows of a tile: 6 x 2 accumulator vectors, 2 of B, 1 broadcast
// Queries per forward work item at most, and per backward chunk at most this many elements of
// weights (2 x 256 KB of floats: the chunk stays in L2 for the key tiles' products, which read
// it again). Both multiples of kRows, so that tiles of queries and of keys line up.
constexpr int64_t kForwardRows = 40 * kRows;
constexpr int64_t kChunkElements = int64_t{1} << 16;
// An entry's backward with at least this many multiply-adds (tq tk (e + ev)) spreads its tiles
// over the pool when there are fewer entries than threads (inference-sized batches, few heads).
constexpr int64_t kWideWork = int64_t{1} << 22;

template <class T>
constexpr int64_t kW = static_cast<int64_t>(sizeof(Simd<T>) / sizeof(T));
template <class T>
int64_t padded(int64_t n) {
  return (n + kW<T> - 1) / kW<T> * kW<T>;
}

// An operand matrix: element (i, j) at data[i * rs + j * cs].
template <class T>
struct Mat {
  const T* data;
  int64_t rs, cs;
  Mat at(int64_t i, int64_t j) const { return {data + i * rs + j * cs, rs, cs}; }
  Mat t() const { return {data, cs, rs}; }
};

#if defined(__AVX__)
// dst's 8 rows (ld apart) := the columns of the 8 x 8 floats at src (rows rs apart).
inline void transpose8(const float* src, int64_t rs, float* dst, int64_t ld) {
  __m256 r[8], t[8], h[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * rs);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);  // r0[0] r1[0] r0[1] r1[1] | r0[4] ...
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // rows i..i+3 of columns 0-3 | 4-7
    h[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    h[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    h[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    h[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    _mm256_storeu_ps(dst + c * ld, _mm256_permute2f128_ps(h[c], h[c + 4], 0x20));
    _mm256_storeu_ps(dst + (c + 4) * ld, _mm256_permute2f128_ps(h[c], h[c + 4], 0x31));
  }
}
#endif

// Rows [0, rows) x columns [0, cols) of m into dst, row stride ld (cols <= ld, a multiple of the
// vector width), the padding zero: a B operand of tile_product.
template <class T>
void pack(Mat<T> m, int64_t rows, int64_t cols, T* dst, int64_t ld) {
  if (m.cs == 1 || m.rs != 1) {  // by rows of m
    for (int64_t i = 0; i < rows; ++i) {
      T* d = dst + i * ld;
      for (int64_t j = 0; j < cols; ++j) d[j] = m.data[i * m.rs + j * m.cs];
    }
  } else {  // m a transposed row-major matrix (k^T): read its rows, which are m's columns
    int64_t i0 = 0, j0 = 0;
#if defined(__AVX__)
    if constexpr (std::is_same_v<T, float>) {  // blocks of 8 x 8 (the scalar loop: 0.6 ns each)
      for (; i0 + 8 <= rows; i0 += 8)
        for (int64_t j = 0; j + 8 <= cols; j += 8)
          transpose8(m.data + i0 + j * m.cs, m.cs, dst + i0 * ld + j, ld);
      j0 = cols / 8 * 8;
    }
#endif
    for (int64_t j = 0; j < cols; ++j)  // what the blocks left: rows from i0, columns from j0
      for (int64_t i = j < j0 ? i0 : 0; i < rows; ++i) dst[i * ld + j] = m.data[i + j * m.cs];
  }
  for (int64_t i = 0; i < rows; ++i) std::fill(dst + i * ld + cols, dst + (i + 1) * ld, T(0));
}

// Whether rows x cols of a matrix with column stride cs can be a B operand of tile_product as it
// is: its rows contiguous and whole vectors (the usual head sizes).
template <class T>
bool in_place(int64_t cs, int64_t cols) {
  return cs == 1 && cols % kW<T> == 0;
}
// The scratch operand() needs for rows x cols of a matrix with column stride cs: none in place.
template <class T>
int64_t operand_scratch(int64_t cs, int64_t rows, int64_t cols) {
  return in_place<T>(cs, cols) ? 0 : rows * padded<T>(cols);
}
// A B operand of tile_product for rows x cols of m: m itself where in_place (no copy), else
// packed into dst. Returns the rows and their stride.
template <class T>
std::pair<const T*, int64_t> operand(Mat<T> m, int64_t rows, int64_t cols, T* dst) {
  if (in_place<T>(m.cs, cols)) return {m.data, m.rs};
  pack(m, rows, cols, dst, padded<T>(cols));
  return {dst, padded<T>(cols)};
}

// C (R x NV vectors) = or += A (R x k, any strides) B (k x NV vectors, rows ldb apart); the
// last vector of a C row holds `last` valid lanes. Each element sums its k terms in order.
template <class T, int R, int NV>
void micro(int64_t k, Mat<T> a, const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate,
           int last) {
  using V = Simd<T>;
  constexpr int W = static_cast<int>(kW<T>);
  V acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  for (int64_t p = 0; p < k; ++p) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) load_simd(bv[v], b + p * ldb + v * W);
    for (int r = 0; r < R; ++r) {
      const T av = a.data[r * a.rs + p * a.cs];
      for (int v = 0; v < NV; ++v) acc[r][v] += av * bv[v];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) {
      T* out = c + r * ldc + v * W;
      if (v < NV - 1 || last == W) {
        if (accumulate) {
          V old;
          load_simd(old, out);
          acc[r][v] += old;
        }
        store_simd(out, acc[r][v]);
      } else {
        if (accumulate) acc[r][v] += load_part<T>(out, last);
        store_part<T>(out, acc[r][v], last);
      }
    }
}

template <class T, int R>
void tile_rows(int64_t n, int64_t k, Mat<T> a, const T* b, int64_t ldb, T* c, int64_t ldc,
               bool accumulate) {
  constexpr int64_t W = kW<T>;
  int64_t j = 0;
  for (; j + 2 * W <= n; j += 2 * W) micro<T, R, 2>(k, a, b + j, ldb, c + j, ldc, accumulate, W);
  const int64_t rest = n - j;
  if (rest > W)
    micro<T, R, 2>(k, a, b + j, ldb, c + j, ldc, accumulate, static_cast<int>(rest - W));
  else if (rest > 0)
    micro<T, R, 1>(k, a, b + j, ldb, c + j, ldc, accumulate, static_cast<int>(rest));
}

// C (m x n, m <= kRows, rows ldc apart) = or += A (m x k) B (k x n, packed: rows ldb apart,
// readable up to n rounded up to the vector width).
template <class T>
void tile_product(int64_t m, int64_t n, int64_t k, Mat<T> a, const T* b, int64_t ldb, T* c,
                  int64_t ldc, bool accumulate) {
  switch (m) {
    case 6:
      return tile_rows<T, 6>(n, k, a, b, ldb, c, ldc, accumulate);
    case 5:
      return tile_rows<T, 5>(n, k, a, b, ldb, c, ldc, accumulate);
    case 4:
      return tile_rows<T, 4>(n, k, a, b, ldb, c, ldc, accumulate);
    case 3:
      return tile_rows<T, 3>(n, k, a, b, ldb, c, ldc, accumulate);
    case 2:
      return tile_rows<T, 2>(n, k, a, b, ldb, c, ldc, accumulate);
    case 1:
      return tile_rows<T, 1>(n, k, a, b, ldb, c, ldc, accumulate);
    default:
      return;
  }
}

// ---- rows of weights: softmax of the scaled scores and its gradient, short rows in mind (a
// causal head's average 32 keys), each sum in the lanes of machine vectors ----

template <class T>
T row_dot(const T* a, const T* b, int64_t n) {  // b null: the sum of a
  using V = Simd<T>;
  constexpr int64_t W = kW<T>;
  V acc{};
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    V u, w;
    load_simd(u, a + j);
    if (b) {
      load_simd(w, b + j);
      u = u * w;
    }
    acc += u;
  }
  T s = 0;
  for (int l = 0; l < W; ++l) s += acc[l];
  for (; j < n; ++j) s += b ? a[j] * b[j] : a[j];
  return s;
}

// x[0, n) := softmax of scale * x over [0, valid), 0 past it (the masked keys). x is readable and
// writable up to `valid` rounded up to whole vectors (the exp runs on those).
template <class T>
void softmax_row(T* x, int64_t n, int64_t valid, T scale) {
  const T m = scaled_row_max(x, valid, scale);
  // (past `valid`, x * scale - m may be positive, its exp anything: overwritten below)
  for (int64_t j = 0, nv = padded<T>(valid); j < nv; ++j)
    x[j] = vmath::exp_nonpositive(T(x[j] * scale - m));
  const T inv = T(1) / row_dot<T>(x, nullptr, valid);
  for (int64_t j = 0; j < valid; ++j) x[j] = x[j] * inv;
  std::fill(x + valid, x + n, T(0));
}

// dp[0, n) := scale * p (dp - sum(p dp)): the scores' gradient from the weights' (0 where p is).
template <class T>
void softmax_grad_row(const T* p, T* dp, int64_t n, T scale) {
  const T dot = row_dot(p, dp, n);
  for (int64_t j = 0; j < n; ++j) dp[j] = scale * (p[j] * (dp[j] - dot));
}

// The element offsets of every batch entry (the dims before the last two) of t.
std::vector<int64_t> batch_offsets(const Tensor& t) {
  const int64_t nd = t.ndim() - 2;
  int64_t n = 1;
  for (int64_t d = 0; d < nd; ++d) n *= t.shape()[d];
  std::vector<int64_t> off(static_cast<size_t>(n));
  for (int64_t b = 0; b < n; ++b) {
    int64_t o = 0;
    for (int64_t d = nd - 1, rest = b; d >= 0; --d) {
      o += rest % t.shape()[d] * t.strides()[d];
      rest /= t.shape()[d];
    }
    off[static_cast<size_t>(b)] = o;
  }
  return off;
}

// One input's matrices, batch entry by batch entry.
template <class T>
struct Operand {
  const T* base;
  std::vector<int64_t> offsets;
  int64_t rs, cs;
  explicit Operand(const Tensor& t)
      : base(t.data<T>()),
        offsets(batch_offsets(t)),
        rs(t.strides()[t.ndim() - 2]),
        cs(t.strides()[t.ndim() - 1]) {}
  Mat<T> at(int64_t b) const { return {base + offsets[static_cast<size_t>(b)], rs, cs}; }
};

struct Dims {
  int64_t tq, tk, e, ev;
  bool causal;
  // The keys a tile of queries [.., i1) computes: all, or under the mask up to its last query.
  int64_t keys(int64_t i1) const { return causal ? std::min(tk, i1) : tk; }
  int64_t valid(int64_t i) const { return causal ? std::min(tk, i + 1) : tk; }  // row i's keys
};

Dims dims_of(const Tensor& q, const Tensor& k, const Tensor& v, const Attrs& a) {
  const int64_t nd = q.ndim();
  return {q.shape()[nd - 2], k.shape()[nd - 2], q.shape()[nd - 1], v.shape()[nd - 1],
          a.softmax.causal};
}

// The weights of queries [i0, i0 + m) (one tile) over their keys [0, n) into p (rows ld apart):
// the scores against kt (k transposed, packed), then softmax's rows in place.
template <class T>
void tile_weights(const Dims& d, Mat<T> q, const T* kt, int64_t ldk, T scale, int64_t i0, int64_t m,
                  int64_t n, T* p, int64_t ld) {
  // whole vectors (kt and p are padded): the scores past n are computed and left unread
  tile_product<T>(m, padded<T>(n), d.e, q.at(i0, 0), kt, ldk, p, ld, false);
  for (int64_t r = 0; r < m; ++r) softmax_row<T>(p + r * ld, n, d.valid(i0 + r), scale);
}

// Queries [c0, c1) of one batch entry.
template <class T>
void forward_rows(const Dims& d, Mat<T> q, Mat<T> k, Mat<T> v, T scale, int64_t c0, int64_t c1,
                  T* kt, T* vp, T* p, T* y) {
  const int64_t nk = d.keys(c1), ldk = padded<T>(nk);
  pack(k.t(), d.e, nk, kt, ldk);
  const auto [vb, ldv] = operand(v, nk, d.ev, vp);
  for (int64_t i0 = c0; i0 < c1; i0 += kRows) {
    const int64_t m = std::min<int64_t>(kRows, c1 - i0), n = d.keys(i0 + m);
    tile_weights<T>(d, q, kt, ldk, scale, i0, m, n, p, ldk);
    tile_product<T>(m, d.ev, n, {p, ldk, 1}, vb, ldv, y + i0 * d.ev, d.ev, false);
  }
}

// Where an entry's forward work items start, and the end: about kForwardRows queries each, or
// fewer items where that leaves the pool idle (few entries: two items a thread, down to items of
// 4 tiles), each about an equal share of the entry's products (under the causal mask a query's
// cost grows with its position; the pool hands out contiguous runs of items). Cut at whole tiles
// from 0, so every query's tile, and with it every bit of its output, is the same at any cut.
std::vector<int64_t> forward_cuts(const Dims& d, int64_t entries) {
  const int64_t wanted = 2 * static_cast<int64_t>(num_threads());
  const int64_t rows = (entries * d.tq + wanted - 1) / wanted;
  const int64_t size =
      std::clamp<int64_t>((rows + kRows - 1) / kRows * kRows, 4 * kRows, kForwardRows);
  const int64_t items = (d.tq + size - 1) / size;
  // a tile's cost: its keys, plus a few for the per-row work (softmax, output row)
  auto tile_cost = [&](int64_t i0) { return d.keys(std::min(d.tq, i0 + kRows)) + 16; };
  int64_t total = 0;
  for (int64_t i0 = 0; i0 < d.tq; i0 += kRows) total += tile_cost(i0);
  std::vector<int64_t> cuts{0};
  int64_t done = 0;
  for (int64_t i0 = 0; i0 + kRows < d.tq; i0 += kRows) {  // the last tile ends the last item
    done += tile_cost(i0);
    const auto next = static_cast<int64_t>(cuts.size());  // the item this tile may end
    if (next < items && done * items >= next * total) cuts.push_back(i0 + kRows);
  }
  cuts.push_back(d.tq);
  return cuts;
}

template <class T>
void forward(const std::vector<Tensor>& in, const Attrs& a, Tensor& y) {
  const Dims d = dims_of(in[0], in[1], in[2], a);
  const Operand<T> oq(in[0]), ok(in[1]), ov(in[2]);
  const auto nb = static_cast<int64_t>(oq.offsets.size());
  const std::vector<int64_t> cuts = forward_cuts(d, nb);
  const auto chunks = static_cast<int64_t>(cuts.size()) - 1;
  T* out = y.data<T>();
  const auto scale = static_cast<T>(a.softmax.scale);
  const int64_t ldk = padded<T>(d.tk);
  parallel_for(nb * chunks, 1, [&](int64_t w0, int64_t w1) {
    Scratch<T> kt(d.e * ldk), vp(operand_scratch<T>(ov.cs, d.tk, d.ev)), p(kRows * ldk);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / chunks, c = w % chunks;
      forward_rows<T>(d, oq.at(b), ok.at(b), ov.at(b), scale, cuts[c], cuts[c + 1], kt.get(),
                      vp.get(), p.get(), out + b * d.tq * d.ev);
    }
  });
}

// One batch entry's packed operands and chunk scratch (backward).
template <class T>
struct Packed {
  int64_t ldk;  // row stride of k^T, v^T and the chunk's weights
  Scratch<T> kt, vt, k, q, g, p, ds;
  // cs_*: the column strides of k, q and g (their rows are copied only where operand() must)
  Packed(const Dims& d, int64_t chunk, int64_t cs_k, int64_t cs_q, int64_t cs_g)
      : ldk(padded<T>(d.tk)),
        kt(d.e * ldk),
        vt(d.ev * ldk),
        k(operand_scratch<T>(cs_k, d.tk, d.e)),
        q(operand_scratch<T>(cs_q, d.tq, d.e)),
        g(operand_scratch<T>(cs_g, d.tq, d.ev)),
        p(chunk * ldk),
        ds(chunk * ldk) {}
};

// One batch entry: per chunk of queries, its tiles of queries (weights, score gradients, dq),
// then the tiles of keys they see (dk, dv). With `wide`, each of the two goes to the pool by
// tiles; every tile computes the same either way.
template <class T>
void backward_entry(const Dims& d, Mat<T> g, Mat<T> q, Mat<T> k, Mat<T> v, T scale, int64_t chunk,
                    Packed<T>& s, T* dq, T* dk, T* dv, bool wide) {
  pack(k.t(), d.e, d.tk, s.kt.get(), s.ldk);
  pack(v.t(), d.ev, d.tk, s.vt.get(), s.ldk);
  // (no structured bindings: the tile lambdas below capture these, which clang 14 refuses)
  const std::pair<const T*, int64_t> ko = operand(k, d.tk, d.e, s.k.get()),
                                     qo = operand(q, d.tq, d.e, s.q.get()),
                                     go = operand(g, d.tq, d.ev, s.g.get());
  const T *kb = ko.first, *qb = qo.first, *gb = go.first;
  const int64_t ldkb = ko.second, ldq = qo.second, ldg = go.second;
  T *p = s.p.get(), *ds = s.ds.get();
  const int64_t ld = s.ldk;
  int64_t seen = 0;  // keys the chunks so far saw: their dk and dv rows are written
  for (int64_t c0 = 0; c0 < d.tq; c0 += chunk) {
    const int64_t c1 = std::min(d.tq, c0 + chunk);
    auto query_tiles = [&](int64_t t0, int64_t t1) {
      for (int64_t i0 = c0 + t0 * kRows; i0 < std::min(c1, c0 + t1 * kRows); i0 += kRows) {
        const int64_t m = std::min<int64_t>(kRows, c1 - i0), n = d.keys(i0 + m);
        T* pr = p + (i0 - c0) * ld;
        T* sr = ds + (i0 - c0) * ld;
        tile_weights<T>(d, q, s.kt.get(), ld, scale, i0, m, n, pr, ld);
        tile_product<T>(m, padded<T>(n), d.ev, g.at(i0, 0), s.vt.get(), ld, sr, ld,
                        false);  // g v^T
        for (int64_t r = 0; r < m; ++r) softmax_grad_row<T>(pr + r * ld, sr + r * ld, n, scale);
        tile_product<T>(m, d.e, n, {sr, ld, 1}, kb, ldkb, dq + i0 * d.e, d.e, false);
      }
    };
    // Keys [j0, j0 + m) are seen by the chunk's queries from j0 on under the mask: a query's
    // tile computed every key up to its tile's end, and tiles of keys line up with them.
    auto key_tiles = [&](int64_t t0, int64_t t1) {
      for (int64_t j0 = t0 * kRows; j0 < std::min(d.keys(c1), t1 * kRows); j0 += kRows) {
        const int64_t m = std::min<int64_t>(kRows, d.keys(c1) - j0);
        const int64_t r0 = d.causal ? std::max(c0, j0) : c0;  // < c1, as j0 < c1
        const Mat<T> pt{p + (r0 - c0) * ld + j0, 1, ld}, st{ds + (r0 - c0) * ld + j0, 1, ld};
        const bool add = j0 < seen;
        tile_product<T>(m, d.ev, c1 - r0, pt, gb + r0 * ldg, ldg, dv + j0 * d.ev, d.ev, add);
        tile_product<T>(m, d.e, c1 - r0, st, qb + r0 * ldq, ldq, dk + j0 * d.e, d.e, add);
      }
    };
    const int64_t query_count = (c1 - c0 + kRows - 1) / kRows;
    const int64_t key_count = (d.keys(c1) + kRows - 1) / kRows;
    if (wide) {
      parallel_for(query_count, 1, query_tiles);
      parallel_for(key_count, 1, key_tiles);
    } else {
      query_tiles(0, query_count);
      key_tiles(0, key_count);
    }
    seen = d.keys(c1);
  }
  std::fill(dk + seen * d.e, dk + d.tk * d.e, T(0));  // keys no query sees
  std::fill(dv + seen * d.ev, dv + d.tk * d.ev, T(0));
}

template <class T>
void backward(const std::vector<Tensor>& in, const Attrs& a, Tensor& out) {
  const Dims d = dims_of(in[1], in[2], in[3], a);
  const Operand<T> og(in[0]), oq(in[1]), ok(in[2]), ov(in[3]);
  const auto nb = static_cast<int64_t>(oq.offsets.size());
  const int64_t fit = kChunkElements / std::max<int64_t>(1, padded<T>(d.tk)) / kRows * kRows;
  const int64_t chunk = std::min(d.tq, std::max<int64_t>(kRows, fit));
  T* dq = out.data<T>();
  T* dk = dq + nb * d.tq * d.e;
  T* dv = dk + nb * d.tk * d.e;
  const auto scale = static_cast<T>(a.softmax.scale);
  // The pool takes the entries, or, where they are fewer than its threads and large, each
  // entry's tiles in turn.
  const bool wide = nb < num_threads() && d.tq * d.tk * (d.e + d.ev) >= kWideWork;
  auto entries = [&](int64_t b0, int64_t b1) {
    Packed<T> s(d, chunk, ok.cs, oq.cs, og.cs);
    for (int64_t b = b0; b < b1; ++b) {
      backward_entry<T>(d, og.at(b), oq.at(b), ok.at(b), ov.at(b), scale, chunk, s,
                        dq + b * d.tq * d.e, dk + b * d.tk * d.e, dv + b * d.tk * d.ev, wide);
    }
  };
  if (wide)
    entries(0, nb);
  else
    parallel_for(nb, 1, entries);
}

}  // namespace

VK_KERNEL(attention) {
  Tensor y = Tensor::empty(m.shape, m.dtype);
  if (y.numel() == 0) return y;
  VK_DISPATCH_FLOAT(m.dtype, "attention", { forward<T>(in, a, y); });
  return y;
}

VK_KERNEL(attention_backward) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  VK_DISPATCH_FLOAT(m.dtype, "attention_backward", { backward<T>(in, a, out); });
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
