// Reduction kernels.
//
// Every reduction goes through run_reduce(), which views x as two index spaces: the kept dims
// (one output element each) and the reduced dims, each coalesced where strides chain. Then one of
// two loops runs:
//   rows:    for each output, fold its reduced elements (contiguous when the reduced dims are
//            innermost: a tight loop over `lanes` independent accumulators, which vectorises);
//            long folds are cut into fixed blocks of kBlock elements whose partial results are
//            combined in a fixed pairwise tree. A full reduction is the one-output case.
//   columns: when the innermost kept dim is contiguous, whole rows of outputs are accumulated at
//            once (a vectorisable add of a row of x into a row of accumulators).
// Max/min, first-index searches and the double accumulators use explicit SIMD (vector
// extensions, simd.h) where the auto-vectoriser gives up. logsumexp is fused: one pass for the
// max, one for the sum of exp (vmath::exp, the exp op's own, vectorised). The softmax family is in
// softmax.cpp.
// Determinism: the order in which elements are combined depends only on the shape and strides of
// x, never on how parallel_for splits the work, so results are bitwise identical at any thread
// count. Float32 accumulates in double (a column sum adds eight rows in float first: reduce_cols).
#include "vkml/backend/cpu/reduction.h"

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/simd.h"
#include "vkml/backend/cpu/vmath.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

constexpr int64_t kBlock = 8192;     // reduced elements per partial result in row reductions
constexpr int64_t kColWidth = 256;   // output columns per work item in column reductions
constexpr int64_t kWork = 32768;     // about this many elements per parallel range
constexpr int64_t kColRows = 65536;  // elements per row block of a blocked column reduction
constexpr int64_t kThinSpan = 64;    // accumulators for column reductions of narrow rows

// ---- layout ----

struct Dim {
  int64_t size, stride;
};

// Appends an inner dim, merging it into the previous one when their strides chain.
void push_dim(std::vector<Dim>& v, int64_t size, int64_t stride) {
  if (size == 1) return;
  if (!v.empty() && v.back().stride == size * stride) {
    v.back().size *= size;
    v.back().stride = stride;
    return;
  }
  v.push_back({size, stride});
}

// kept: the output's index space, red: the reduced one; both row-major, coalesced, size-1 dims
// dropped (so an empty list is one element).
struct Plan {
  std::vector<Dim> kept, red;
  std::vector<Dim> red_outer;  // red without its innermost dim
  int64_t n_out = 1, n_red = 1;
};

Plan make_plan(const Tensor& x, const std::vector<int64_t>& dims) {
  Plan p;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    bool reduced = std::binary_search(dims.begin(), dims.end(), d);
    int64_t size = x.shape()[d];
    push_dim(reduced ? p.red : p.kept, size, x.strides()[d]);
    (reduced ? p.n_red : p.n_out) *= size;
  }
  if (!p.red.empty()) p.red_outer.assign(p.red.begin(), p.red.end() - 1);
  return p;
}

// Walks an index space in row-major order, tracking the element offset.
struct Walker {
  const std::vector<Dim>& dims;
  std::vector<int64_t> idx;
  int64_t off = 0;

  explicit Walker(const std::vector<Dim>& d) : dims(d), idx(d.size(), 0) {}
  void seek(int64_t linear) {
    off = 0;
    for (size_t k = dims.size(); k-- > 0;) {
      idx[k] = linear % dims[k].size;
      off += idx[k] * dims[k].stride;
      linear /= dims[k].size;
    }
  }
  void next() {
    for (size_t k = dims.size(); k-- > 0;) {
      off += dims[k].stride;
      if (++idx[k] < dims[k].size) return;
      off -= dims[k].size * dims[k].stride;
      idx[k] = 0;
    }
  }
};

int64_t offset_of(int64_t linear, const std::vector<Dim>& dims) {
  int64_t off = 0;
  for (size_t k = dims.size(); k-- > 0;) {
    off += (linear % dims[k].size) * dims[k].stride;
    linear /= dims[k].size;
  }
  return off;
}

// Combines a[0..n) into a[0] in a fixed pairwise tree; a[k] and a[k + stride * w] are combined.
template <class R>
void merge_tree(const R& r, typename R::Acc* a, int64_t n, int64_t stride = 1) {
  for (int64_t w = 1; w < n; w *= 2)
    for (int64_t i = 0; i + w < n; i += 2 * w) r.merge(a[i * stride], a[(i + w) * stride]);
}

// ---- the reduction engine ----
// A reducer R provides: T (element type), Acc (accumulator), init(), add(acc, v, i, o) (fold
// element v at reduced index i into output o's accumulator), merge(a, b) (b's elements come
// after a's), finish(acc, o) (writes output o). Optional: kPositionFree (add ignores i and o),
// kLanes + fold_contiguous (below).

template <int L, bool Contig, class R>
inline void fold_run(const R& r, typename R::Acc* lane, const typename R::T* p, int64_t stride,
                     int64_t n, int64_t i0, int64_t o) {
  const int64_t s = Contig ? 1 : stride;
  int64_t k = 0;
  for (; k + L <= n; k += L)
    for (int j = 0; j < L; ++j) r.add(lane[j], p[(k + j) * s], i0 + k + j, o);
  for (int j = 0; k < n; ++k, ++j) r.add(lane[j], p[k * s], i0 + k, o);
}

// A reducer may fold contiguous runs itself with explicit SIMD: it then names its lane count
// (kLanes) and provides fold_contiguous(lanes, p, n, i0, o), equivalent to add() of each element
// of the run into lane (k mod kLanes).
template <class R, int L>
concept VectorFold = requires {
  R::kLanes;
}
&&R::kLanes == L;

// Folds reduced elements [rb, re) of the output whose elements start at `base`; `w` walks the
// reduced dims outside the innermost one (scratch owned by the caller).
template <int L, class R>
typename R::Acc fold_range(const R& r, const typename R::T* base, const Plan& p, Walker& w,
                           int64_t rb, int64_t re, int64_t o) {
  using Acc = typename R::Acc;
  Acc lane[L];
  for (int j = 0; j < L; ++j) lane[j] = r.init();
  if (p.red.empty()) {
    r.add(lane[0], base[0], 0, o);
    return lane[0];
  }
  const Dim inner = p.red.back();
  const bool one_run = p.red.size() == 1 && inner.stride == 1;  // (rows of small reductions:
  int64_t i = rb, j = one_run ? rb : rb % inner.size;           // no division on the way)
  if (!one_run) w.seek(rb / inner.size);
  while (i < re) {
    int64_t n = std::min(inner.size - j, re - i);
    const typename R::T* run = base + w.off + j * inner.stride;
    if constexpr (VectorFold<R, L>) {
      if (inner.stride == 1)
        r.fold_contiguous(lane, run, n, i, o);
      else
        fold_run<L, false>(r, lane, run, inner.stride, n, i, o);
    } else if (inner.stride == 1)
      fold_run<L, true>(r, lane, run, 1, n, i, o);
    else
      fold_run<L, false>(r, lane, run, inner.stride, n, i, o);
    i += n;
    j = 0;
    w.next();
  }
  if constexpr (VectorFold<R, L> && requires { r.merge_lanes(lane); })
    r.merge_lanes(lane);
  else
    merge_tree(r, lane, L);
  return lane[0];
}

// The reduced extent from which a reducer with kLanes folds in its kLanes lanes (below: one).
template <class R>
constexpr int64_t vector_from() {
  if constexpr (requires { R::kVectorFrom; })
    return R::kVectorFrom;
  else
    return 2 * R::kLanes;
}

template <class R>
typename R::Acc fold_any(const R& r, const typename R::T* base, const Plan& p, Walker& w,
                         int64_t rb, int64_t re, int64_t o) {
  // The lane count is a function of the reduced extent (and the reducer) only.
  if constexpr (requires { R::kLanes; }) {
    if (p.n_red >= vector_from<R>()) return fold_range<R::kLanes>(r, base, p, w, rb, re, o);
    return fold_range<1>(r, base, p, w, rb, re, o);
  }
  if (p.n_red >= 256) return fold_range<16>(r, base, p, w, rb, re, o);
  if (p.n_red >= 16) return fold_range<4>(r, base, p, w, rb, re, o);
  return fold_range<1>(r, base, p, w, rb, re, o);
}

// A reducer whose lanes fold a whole contiguous row in registers: row(p, n, o) is what
// fold_range<kLanes> and the lanes' merge give for the row.
template <class R>
concept RowFold = requires(const R& r, const typename R::T* p) {
  { r.row(p, int64_t{}, int64_t{}) } -> std::same_as<typename R::Acc>;
};

template <class R>
void reduce_rows(const R& r, const typename R::T* base, const Plan& p) {
  using Acc = typename R::Acc;
  const int64_t nb = (p.n_red + kBlock - 1) / kBlock;
  const int64_t per_item = std::min(p.n_red, kBlock);
  const int64_t grain = std::max<int64_t>(1, kWork / per_item);
  if constexpr (RowFold<R>) {
    // one contiguous row per output, where fold_any would take the lanes: the same bits, without
    // a call per row or the lanes' trip through memory (sums over rows of 64 floats: 15 -> 8 ns
    // a row)
    if (nb == 1 && p.red.size() == 1 && p.red[0].stride == 1 && p.n_red >= vector_from<R>()) {
      parallel_for(p.n_out, grain, [&](int64_t b, int64_t e) {
        Walker wo(p.kept);
        wo.seek(b);
        for (int64_t o = b; o < e; ++o, wo.next()) r.finish(r.row(base + wo.off, p.n_red, o), o);
      });
      return;
    }
  }
  if (nb == 1) {
    parallel_for(p.n_out, grain, [&](int64_t b, int64_t e) {
      Walker wo(p.kept), wr(p.red_outer);
      wo.seek(b);
      for (int64_t o = b; o < e; ++o, wo.next())
        r.finish(fold_any(r, base + wo.off, p, wr, 0, p.n_red, o), o);
    });
    return;
  }
  auto part = std::make_unique_for_overwrite<Acc[]>(static_cast<size_t>(p.n_out * nb));
  parallel_for(p.n_out * nb, grain, [&](int64_t b, int64_t e) {
    Walker wr(p.red_outer);
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / nb, k = t % nb;
      part[t] = fold_any(r, base + offset_of(o, p.kept), p, wr, k * kBlock,
                         std::min(p.n_red, (k + 1) * kBlock), o);
    }
  });
  parallel_for(p.n_out, std::max<int64_t>(1, kWork / nb), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      merge_tree(r, &part[o * nb], nb);
      r.finish(part[o * nb], o);
    }
  });
}

// A float sum (SumR<float, ...>), whose rows reduce_cols may add in float eight at a time.
template <class R>
constexpr bool kFloatSum = requires {
  R::kSum;
}
&&std::is_same_v<typename R::T, float>;

// The innermost kept dim is contiguous: out[o1, m] folds x[o1, r, m] over r, many m at once.
template <class R>
void reduce_cols(const R& r, const typename R::T* base, const Plan& p) {
  using Acc = typename R::Acc;
  const int64_t M = p.kept.back().size;
  const std::vector<Dim> outer(p.kept.begin(), p.kept.end() - 1);
  const int64_t n_o1 = p.n_out / M;
  const int64_t nc = (M + kColWidth - 1) / kColWidth;
  const int64_t width = std::min(M, kColWidth);
  // Few independent items: cut the reduced rows into blocks too (decided by the shape alone).
  const int64_t rows_per_block = std::max<int64_t>(1, kColRows / width);
  const int64_t nrb = n_o1 * nc >= 64 ? 1 : (p.n_red + rows_per_block - 1) / rows_per_block;
  const int64_t rpb = nrb == 1 ? p.n_red : rows_per_block;
  auto part =
      std::make_unique_for_overwrite<Acc[]>(nrb > 1 ? static_cast<size_t>(n_o1 * nrb * M) : 0);
  const int64_t items = n_o1 * nrb * nc;
  const bool thin = M <= kThinSpan / 4 && p.red.size() == 1 && p.red[0].stride == M;
  const int64_t grain = std::max<int64_t>(1, kWork / std::max<int64_t>(1, rpb * width));
  parallel_for(items, grain, [&](int64_t b, int64_t e) {
    Acc acc[kColWidth];
    Walker w(p.red);
    for (int64_t t = b; t < e; ++t) {
      const int64_t c = t % nc, rb = (t / nc) % nrb, o1 = t / (nc * nrb);
      const int64_t m0 = c * kColWidth, mw = std::min(kColWidth, M - m0);
      const int64_t r0 = rb * rpb, r1 = std::min(p.n_red, r0 + rpb);
      const typename R::T* col = base + offset_of(o1, outer) + m0;
      const int64_t o0 = o1 * M + m0;
      for (int64_t m = 0; m < mw; ++m) acc[m] = r.init();
      if (thin) {
        // Narrow rows back to back: fold q rows (q * M contiguous elements) per step into q * M
        // accumulators, then merge the q copies of each column in order.
        const int64_t q = kThinSpan / M, span = q * M;
        Acc wide[kThinSpan];
        for (int64_t k = 0; k < span; ++k) wide[k] = r.init();
        int64_t i = r0;
        for (; i + q <= r1; i += q) {
          const typename R::T* blk = col + i * M;
          if constexpr (requires { R::kPositionFree; }) {  // one flat, vectorisable loop
            for (int64_t k = 0; k < span; ++k) r.add(wide[k], blk[k], 0, 0);
          } else {
            for (int64_t k = 0; k < q; ++k)
              for (int64_t m = 0; m < M; ++m) r.add(wide[k * M + m], blk[k * M + m], i + k, o0 + m);
          }
        }
        for (int64_t k = 0; i < r1; ++i, ++k)
          for (int64_t m = 0; m < M; ++m) r.add(wide[k * M + m], col[i * M + m], i, o0 + m);
        for (int64_t k = 0; k < q; ++k)
          for (int64_t m = 0; m < M; ++m) r.merge(acc[m], wide[k * M + m]);
      } else if (p.red.size() == 1) {
        const int64_t st = p.red[0].stride;
        int64_t i = r0;
        if constexpr (kFloatSum<R>) {
          // Eight rows at a time summed in float, pairwise, then added to the double accumulators:
          // one load and store of an accumulator per eight rows instead of per row (a linear
          // layer's bias gradient, 2048 x 384 floats, Zen 3: 124 -> 75-77 us; torch 73).
          for (; i + 8 <= r1; i += 8) {
            const float* x = col + i * st;
            for (int64_t m = 0; m < mw; ++m) {
              const float s = ((x[m] + x[st + m]) + (x[2 * st + m] + x[3 * st + m])) +
                              ((x[4 * st + m] + x[5 * st + m]) + (x[6 * st + m] + x[7 * st + m]));
              acc[m] += static_cast<double>(s);
            }
          }
        }
        for (; i < r1; ++i) {
          const typename R::T* row = col + i * st;
          for (int64_t m = 0; m < mw; ++m) r.add(acc[m], row[m], i, o0 + m);
        }
      } else {
        w.seek(r0);
        for (int64_t i = r0; i < r1; ++i, w.next()) {
          const typename R::T* row = col + w.off;
          for (int64_t m = 0; m < mw; ++m) r.add(acc[m], row[m], i, o0 + m);
        }
      }
      if (nrb == 1) {
        for (int64_t m = 0; m < mw; ++m) r.finish(acc[m], o0 + m);
      } else {
        Acc* dst = &part[(o1 * nrb + rb) * M + m0];
        for (int64_t m = 0; m < mw; ++m) dst[m] = acc[m];
      }
    }
  });
  if (nrb == 1) return;
  parallel_for(n_o1 * nc, std::max<int64_t>(1, kWork / (nrb * width)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t c = t % nc, o1 = t / nc;
      const int64_t m0 = c * kColWidth, mw = std::min(kColWidth, M - m0);
      Acc* blk = &part[o1 * nrb * M];
      for (int64_t w = 1; w < nrb; w *= 2)
        for (int64_t i = 0; i + w < nrb; i += 2 * w)
          for (int64_t m = m0; m < m0 + mw; ++m) r.merge(blk[i * M + m], blk[(i + w) * M + m]);
      for (int64_t m = m0; m < m0 + mw; ++m) r.finish(blk[m], o1 * M + m);
    }
  });
}

template <class R>
void run_reduce(const Tensor& x, const std::vector<int64_t>& dims, const R& r) {
  Plan p = make_plan(x, dims);
  if (p.n_out == 0) return;
  if (p.n_red == 0) {
    for (int64_t o = 0; o < p.n_out; ++o) r.finish(r.init(), o);
    return;
  }
  const typename R::T* base = x.data<typename R::T>();
  if (!p.kept.empty() && !p.red.empty() && p.kept.back().stride == 1)
    reduce_cols(r, base, p);
  else
    reduce_rows(r, base, p);
}

// ---- reducers ----

template <class T>
using WideAcc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Integer sums and products wrap around (as in PyTorch) instead of overflowing.
template <class A>
inline A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <class A>
inline A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

// Sum; with a divisor, the mean. Out may differ from T (double for internal passes).
template <class T_, class Out>
struct SumRBase {
  using T = T_;
  using Acc = WideAcc<T>;
  static constexpr bool kPositionFree = true;  // add() ignores the element's position
  Out* out;
  double divisor = 0;  // 0: plain sum
  Acc init() const { return Acc(0); }
  void add(Acc& a, T v, int64_t, int64_t) const { a = wrap_add(a, static_cast<Acc>(v)); }
  void merge(Acc& a, const Acc& b) const { a = wrap_add(a, b); }
  void finish(const Acc& a, int64_t o) const {
    if constexpr (std::is_floating_point_v<Acc>)
      out[o] = static_cast<Out>(divisor != 0 ? a / divisor : a);
    else
      out[o] = static_cast<Out>(a);
  }
};

template <class T_, class Out>
struct SumR : SumRBase<T_, Out> {};

template <class T_, class Out>
requires std::is_floating_point_v<T_>
struct SumR<T_, Out> : SumRBase<T_, Out> {
  static constexpr bool kSum = true;
  static constexpr int kLanes = 16;
  void fold_contiguous(double* lane, const T_* p, int64_t n, int64_t, int64_t) const {
    add_lanes16(lane, p, n, [](auto&) {});
  }
  // merge_tree's sums in vectors (the same additions: the same bits). The scalar tree's short
  // loops mispredicted and kept every partial in memory: rows of 64 floats spent most of their
  // time there.
  void merge_lanes(double* lane) const { lane[0] = sum_lanes16(lane); }
  double row(const T_* p, int64_t n, int64_t) const {
    return row_sum16(p, n, [](auto&) {});
  }
};

template <class T_>
struct ProdR {
  using T = T_;
  using Acc = WideAcc<T>;
  static constexpr bool kPositionFree = true;
  T* out;
  Acc init() const { return Acc(1); }
  void add(Acc& a, T v, int64_t, int64_t) const { a = wrap_mul(a, static_cast<Acc>(v)); }
  void merge(Acc& a, const Acc& b) const { a = wrap_mul(a, b); }
  void finish(const Acc& a, int64_t o) const { out[o] = static_cast<T>(a); }
};

template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}

// v replaces the running extreme a: larger (smaller for min), or NaN (NaN propagates, as in
// PyTorch: once a is NaN nothing replaces it). Bitwise, not short-circuit, so loops vectorise.
template <bool Max, class T>
inline bool takes(T v, T a) {
  if constexpr (std::is_same_v<T, bool>)
    return Max ? (v && !a) : (!v && a);
  else
    return (Max ? v > a : v < a) | is_nan(v);
}

template <class T>
constexpr T worst(bool max) {
  if constexpr (std::is_same_v<T, bool>)
    return !max;
  else if constexpr (std::is_floating_point_v<T>)
    return max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else
    return max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

template <class T_, bool Max, class Out>
struct ExtremeRBase {
  using T = T_;
  using Acc = T;
  static constexpr bool kPositionFree = true;
  Out* out;
  Acc init() const { return worst<T>(Max); }
  void add(Acc& a, T v, int64_t, int64_t) const { a = takes<Max>(v, a) ? v : a; }
  void merge(Acc& a, const Acc& b) const { a = takes<Max>(b, a) ? b : a; }
  void finish(const Acc& a, int64_t o) const { out[o] = static_cast<Out>(a); }
};

template <class T_, bool Max, class Out>
struct ExtremeR : ExtremeRBase<T_, Max, Out> {};

// Arithmetic types: contiguous runs four machine vectors at a time (one vector's compare and
// select wait on its last result; four chains keep the loads busy: amax over rows of 1024 floats
// 2x faster). kVectorFrom: rows of a vector or more take this path (kLanes is four vectors).
template <class T_, bool Max, class Out>
requires(!std::is_same_v<T_, bool>) struct ExtremeR<T_, Max, Out> : ExtremeRBase<T_, Max, Out> {
  using V = Simd<T_>;
  static constexpr int kWidth = sizeof(V) / sizeof(T_);
  static constexpr int kLanes = 4 * kWidth;
  static constexpr int64_t kVectorFrom = kWidth;
  // v where v > a (Max) or v is NaN, else a: the max/min instruction, then the NaN's select (the
  // select of v > a | v != v took two compares and two mask operations: on the chain that merges
  // a row's lanes, rows of 64 floats went 17 -> 7 ns)
  [[gnu::always_inline]] static void take(V& a, V v) {
    V m = select_extreme<Max>(v, a);
    if constexpr (std::is_floating_point_v<T_>) m = v != v ? v : m;
    a = m;
  }
  [[gnu::always_inline]] static void take(V& a, const T_* p) {
    V v;
    load_simd(v, p);
    take(a, v);
  }
  template <int S, size_t... I>
  static V rotated(V v, std::index_sequence<I...>) {
    return __builtin_shufflevector(v, v, ((I + S) % kWidth)...);
  }
  template <int S>
  static void fold_halves(V& a) {  // lane 0 takes lanes S, S / 2, ..., 1 (then all of them)
    if constexpr (S >= 1) {
      take(a, rotated<S>(a, std::make_index_sequence<kWidth>{}));
      fold_halves<S / 2>(a);
    }
  }
  // The lanes into lane[0] by vector selects: the scalar tree's compares branch, and on random
  // data they mispredict (64 lanes took 340 ns a row). A different order than merge_tree's, which
  // only a NaN's payload or a zero's sign could tell.
  [[gnu::always_inline]] static T_ merged(V* a) {
    take(a[0], a[2]);
    take(a[1], a[3]);
    take(a[0], a[1]);
    fold_halves<kWidth / 2>(a[0]);
    return a[0][0];
  }
  void merge_lanes(T_* lane) const {
    V a[4];
    for (int j = 0; j < 4; ++j) load_simd(a[j], lane + j * kWidth);
    lane[0] = merged(a);
  }
  // The whole vectors of p[0, n) into a[]; returns how many elements it took.
  [[gnu::always_inline]] static int64_t take_vectors(V* a, const T_* p, int64_t n) {
    int64_t k = 0;
    for (; k + kLanes <= n; k += kLanes)
      for (int j = 0; j < 4; ++j) take(a[j], p + k + j * kWidth);
    // constant indices only: one variable index would keep a[] in memory, not registers
    if (k + kWidth <= n) take(a[0], p + k), k += kWidth;
    if (k + kWidth <= n) take(a[1], p + k), k += kWidth;
    if (k + kWidth <= n) take(a[2], p + k), k += kWidth;
    return k;
  }
  void fold_contiguous(T_* lane, const T_* p, int64_t n, int64_t i0, int64_t o) const {
    V a[4];
    for (int j = 0; j < 4; ++j) load_simd(a[j], lane + j * kWidth);
    int64_t k = take_vectors(a, p, n);
    for (int j = 0; j < 4; ++j) store_simd(lane + j * kWidth, a[j]);
    for (int j = 0; k < n; ++k, ++j) this->add(lane[j], p[k], i0 + k, o);
  }
  // fold_contiguous into fresh lanes and merge_lanes, in registers: the tail (under a vector)
  // goes into a[0]'s first lanes as a vector padded with init(), which takes no lane's place.
  [[gnu::always_inline]] T_ row(const T_* p, int64_t n, int64_t) const {
    const V none = V{} + this->init();  // init() in every lane (0 + -inf is -inf)
    V a[4] = {none, none, none, none};
    int64_t k = take_vectors(a, p, n);
    if (k < n) {
      alignas(64) T_ tail[kWidth];
      for (int i = 0; i < kWidth; ++i) tail[i] = k + i < n ? p[k + i] : this->init();
      take(a[0], tail);
    }
    return merged(a);
  }
};

// The first reduced index i with x[i] equal to target[o] (a NaN target matches the first NaN):
// argmax is the first index of the maximum.
template <class T_>
struct FirstIndexRBase {
  using T = T_;
  using Acc = int64_t;
  int64_t* idx;
  const T* target;
  Acc init() const { return std::numeric_limits<int64_t>::max(); }
  void add(Acc& a, T v, int64_t i, int64_t o) const {
    const T t = target[o];
    const bool match = (v == t) || (is_nan(v) && is_nan(t));
    a = (match && i < a) ? i : a;
  }
  void merge(Acc& a, const Acc& b) const { a = b < a ? b : a; }
  void finish(const Acc& a, int64_t o) const { idx[o] = a; }
};

template <class T_>
struct FirstIndexR : FirstIndexRBase<T_> {};

// Arithmetic types: a contiguous run is searched four machine vectors at a time, and the search
// stops at its first match -- no later element of the run can give a smaller index (argmax over
// rows of 1024 floats: half the row read on average, a compare per vector instead of index
// arithmetic).
template <class T_>
requires(!std::is_same_v<T_, bool>) struct FirstIndexR<T_> : FirstIndexRBase<T_> {
  using V = Simd<T_>;
  static constexpr int kLanes = sizeof(V) / sizeof(T_);
  using M = decltype(V{} == V{});  // the comparison mask: integers of T's width
  void fold_contiguous(int64_t* lane, const T_* p, int64_t n, int64_t i0, int64_t o) const {
    const T_ t = this->target[o];
    const bool nan_target = is_nan(t);
    auto match = [&](int64_t at) __attribute__((always_inline)) {
      V v;
      load_simd(v, p + at);
      return nan_target ? M(v != v) : M(v == t);
    };
    int64_t k = 0;
    for (; k + 4 * kLanes <= n; k += 4 * kLanes) {
      const M any = match(k) | match(k + kLanes) | match(k + 2 * kLanes) | match(k + 3 * kLanes);
      Simd<uint64_t, kVecBytes / 8> bits;
      std::memcpy(&bits, &any, sizeof bits);
      uint64_t found = 0;
      for (int j = 0; j < kVecBytes / 8; ++j) found |= bits[j];
      if (found != 0) break;  // the element-wise search below finds it among these 4 vectors
    }
    for (; k < n; ++k)
      if (p[k] == t || (nan_target && is_nan(p[k]))) {
        lane[0] = std::min(lane[0], i0 + k);
        return;
      }
  }
};

// Sum of squared deviations from mean[o], divided by `divisor`.
template <class T_>
struct SqDevR {
  using T = T_;
  using Acc = double;
  T* out;
  const double* mean;
  double divisor;
  Acc init() const { return 0.0; }
  void add(Acc& a, T v, int64_t, int64_t o) const {
    double d = static_cast<double>(v) - mean[o];
    a += d * d;
  }
  void merge(Acc& a, const Acc& b) const { a += b; }
  void finish(const Acc& a, int64_t o) const { out[o] = static_cast<T>(a / divisor); }
  static constexpr int kLanes = 16;
  void fold_contiguous(double* lane, const T* p, int64_t n, int64_t, int64_t o) const {
    const double mu = mean[o];
    add_lanes16(lane, p, n, [mu](auto& v) { v = (v - mu) * (v - mu); });
  }
  double row(const T* p, int64_t n, int64_t o) const {
    const double mu = mean[o];
    return row_sum16(p, n, [mu](auto& v) { v = (v - mu) * (v - mu); });
  }
};

// Sum of exp(x - shift[o]); writes shift + log(sum).
template <class T_>
struct SumExpR {
  using T = T_;
  using Acc = double;
  T* out;
  const T* shift;
  Acc init() const { return 0.0; }
  void add(Acc& a, T v, int64_t, int64_t o) const {
    a += static_cast<double>(vmath::exp(T(v - shift[o])));
  }
  void merge(Acc& a, const Acc& b) const { a += b; }
  void finish(const Acc& a, int64_t o) const {
    out[o] = static_cast<T>(std::log(a) + static_cast<double>(shift[o]));
  }
};

std::vector<int64_t> one_dim(const Tensor& x, int64_t dim) {
  return x.ndim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{dim};
}

int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[d];
  return n;
}

template <bool Max>
Tensor extreme(const std::vector<Tensor>& in, const Attrs& a, const Meta& m, const char* name) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_ALL(in[0].dtype(), name,
                  run_reduce(in[0], a.dims, ExtremeR<T, Max, T>{{out.data<T>()}}));
  return out;
}

// Values, then the first index holding each value.
template <bool Max>
Outputs extreme_dim(const std::vector<Tensor>& in, const Attrs& a, const Meta& m,
                    const char* name) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  Tensor idx = Tensor::empty(m.shape, DType::Int64);
  std::vector<int64_t> dims = one_dim(in[0], a.dim);
  VK_DISPATCH_ALL(in[0].dtype(), name, {
    run_reduce(in[0], dims, ExtremeR<T, Max, T>{{out.data<T>()}});
    run_reduce(in[0], dims, FirstIndexR<T>{{idx.data<int64_t>(), out.data<T>()}});
  });
  return {out, idx};
}

template <bool Max>
Tensor arg_extreme(const std::vector<Tensor>& in, const Attrs& a, const Meta& m, const char* name) {
  Tensor idx = Tensor::empty(m.shape, DType::Int64);
  std::vector<int64_t> dims = one_dim(in[0], a.dim);
  VK_DISPATCH_ALL(in[0].dtype(), name, {
    auto values = std::make_unique_for_overwrite<T[]>(static_cast<size_t>(idx.numel()));
    run_reduce(in[0], dims, ExtremeR<T, Max, T>{{values.get()}});
    run_reduce(in[0], dims, FirstIndexR<T>{{idx.data<int64_t>(), values.get()}});
  });
  return idx;
}

}  // namespace

VK_KERNEL(sum) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_NUMERIC(in[0].dtype(), "sum", run_reduce(in[0], a.dims, SumR<T, T>{{out.data<T>()}}));
  return out;
}

VK_KERNEL(mean) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  double n = static_cast<double>(reduced_count(in[0], a.dims));
  VK_DISPATCH_FLOAT(in[0].dtype(), "mean", {
    if (n == 0) {
      std::fill_n(out.data<T>(), out.numel(), std::numeric_limits<T>::quiet_NaN());
    } else {
      run_reduce(in[0], a.dims, SumR<T, T>{{out.data<T>(), n}});
    }
  });
  return out;
}

VK_KERNEL(amax) { return extreme<true>(in, a, m, "amax"); }
VK_KERNEL(amin) { return extreme<false>(in, a, m, "amin"); }
VK_KERNEL(max_dim) { return extreme_dim<true>(in, a, m, "max"); }
VK_KERNEL(min_dim) { return extreme_dim<false>(in, a, m, "min"); }
VK_KERNEL(argmax) { return arg_extreme<true>(in, a, m, "argmax"); }
VK_KERNEL(argmin) { return arg_extreme<false>(in, a, m, "argmin"); }

VK_KERNEL(prod) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_NUMERIC(in[0].dtype(), "prod", run_reduce(in[0], a.dims, ProdR<T>{out.data<T>()}));
  return out;
}

VK_KERNEL(logsumexp) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(in[0].dtype(), "logsumexp", {
    const int64_t n = out.numel();
    std::vector<T> shift(static_cast<size_t>(n));
    run_reduce(in[0], a.dims, ExtremeR<T, true, T>{{shift.data()}});
    for (auto& s : shift) s = std::isinf(s) ? T(0) : s;  // all -inf: -inf; any +inf: +inf
    run_reduce(in[0], a.dims, SumExpR<T>{out.data<T>(), shift.data()});
  });
  return out;
}

VK_KERNEL(var) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const double n = static_cast<double>(reduced_count(in[0], a.dims));
  VK_DISPATCH_FLOAT(in[0].dtype(), "var", {
    std::vector<double> mu(static_cast<size_t>(out.numel()));
    if (n == 0) {
      std::fill_n(out.data<T>(), out.numel(), std::numeric_limits<T>::quiet_NaN());
    } else {
      run_reduce(in[0], a.dims, SumR<T, double>{{mu.data(), n}});
      run_reduce(in[0], a.dims,
                 SqDevR<T>{out.data<T>(), mu.data(), std::max(0.0, n - a.var.correction)});
    }
  });
  return out;
}

// The squared deviations from a mean of 0: v - 0 is exact, and so is a float's square in double,
// so float32 inputs sum their exact squares (torch rounds each square to float first).
VK_KERNEL(sum_squares) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_FLOAT(in[0].dtype(), "sum_squares", {
    const std::vector<double> zero(static_cast<size_t>(out.numel()), 0.0);
    run_reduce(in[0], a.dims, SqDevR<T>{out.data<T>(), zero.data(), 1.0});
  });
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
