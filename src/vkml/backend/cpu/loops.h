// Strided loops shared by the CPU kernels.
//
// An element-wise kernel over N operands of one shape calls for_each_run(), which merges
// dimensions that are contiguous for every operand, splits the elements into ranges for the
// thread pool, and hands the body runs along the innermost dimension:
//   body(ptrs, byte_strides, n)  — n elements, operand k at ptrs[k] stepping byte_strides[k].
// A body tests whether every stride equals the element size to take a vectorisable loop.
//
// map_elements() is the element-wise map built on it: out[i] = f(in[i]...). Each run takes a
// vectorisable loop when every input steps by one element or by zero (a broadcast along the
// run, as b in x[N, C] + b[N, 1]); and when an input is transposed against the output, the
// walk goes tile by tile, so that both sides stay in cache. A large contiguous output of a cheap
// element (ElementCost) is written around the cache (simd.h write_out).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "vkml/backend/cpu/cache.h"
#include "vkml/backend/cpu/isa.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/simd.h"
#include "vkml/core/tensor.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// A short list of int64 held inline up to 8 entries (a coalesced layout rarely has more than
// three dims), spilling to the heap beyond: building a layout allocates nothing.
class DimVec {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_.empty() ? inline_ : heap_.data(); }
  const int64_t* data() const { return heap_.empty() ? inline_ : heap_.data(); }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& back() { return data()[size_ - 1]; }
  int64_t back() const { return data()[size_ - 1]; }
  void push_back(int64_t v) {
    if (heap_.empty() && size_ < kInline) {
      inline_[size_++] = v;
      return;
    }
    if (heap_.empty()) heap_.assign(inline_, inline_ + size_);
    heap_.push_back(v);
    ++size_;
  }

 private:
  static constexpr size_t kInline = 8;
  int64_t inline_[kInline];  // the first size_ entries are set
  std::vector<int64_t> heap_;
  size_t size_ = 0;
};

template <size_t N>
struct StridedLayout {
  DimVec shape;                 // coalesced, innermost last
  std::array<DimVec, N> bytes;  // byte stride of each operand per coalesced dim
  int64_t numel = 1;
};

template <size_t N>
StridedLayout<N> coalesce(const Shape& shape, const std::array<const Tensor*, N>& ts) {
  StridedLayout<N> L;
  std::array<int64_t, N> esize;
  for (size_t k = 0; k < N; ++k) esize[k] = static_cast<int64_t>(dtype_size(ts[k]->dtype()));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !L.shape.empty();
    for (size_t k = 0; k < N && merge; ++k)
      merge = L.bytes[k].back() == ts[k]->strides()[d] * esize[k] * shape[d];
    if (merge) {
      L.shape.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) L.bytes[k].back() = ts[k]->strides()[d] * esize[k];
    } else {
      L.shape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) L.bytes[k].push_back(ts[k]->strides()[d] * esize[k]);
    }
  }
  for (size_t d = 0; d < L.shape.size(); ++d) L.numel *= L.shape[d];
  if (L.shape.empty()) {  // a single element
    L.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) L.bytes[k].push_back(0);
  }
  return L;
}

// Runs body over elements [begin, end) of the layout, one innermost run at a time. The operand
// pointers advance like an odometer: a step adds a stride, a wrap subtracts a whole dim.
template <size_t N, class Body>
void run_range(const StridedLayout<N>& L, std::array<char*, N> ptrs, int64_t begin, int64_t end,
               Body& body) {
  const size_t nd = L.shape.size();
  const int64_t inner = L.shape[nd - 1];
  DimVec idx;
  for (size_t d = 0; d < nd; ++d) idx.push_back(0);
  int64_t rest = begin;
  for (size_t d = nd; d-- > 0;) {
    idx[d] = rest % L.shape[d];
    rest /= L.shape[d];
    for (size_t k = 0; k < N; ++k) ptrs[k] += idx[d] * L.bytes[k][d];
  }
  std::array<int64_t, N> inner_bytes;
  for (size_t k = 0; k < N; ++k) inner_bytes[k] = L.bytes[k][nd - 1];
  for (int64_t pos = begin; pos < end;) {
    const int64_t n = std::min(inner - idx[nd - 1], end - pos);
    body(ptrs, inner_bytes, n);
    pos += n;
    idx[nd - 1] += n;
    for (size_t k = 0; k < N; ++k) ptrs[k] += n * inner_bytes[k];
    for (size_t d = nd - 1; d > 0 && idx[d] == L.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
      for (size_t k = 0; k < N; ++k) ptrs[k] += L.bytes[k][d - 1] - L.shape[d] * L.bytes[k][d];
    }
  }
}

// Runs body over a whole layout, its elements split among the thread pool.
template <size_t N, class Body>
void run_layout(const StridedLayout<N>& L, const std::array<char*, N>& base, Body& body,
                int64_t grain) {
  if (L.numel == 0) return;
  parallel_for(L.numel, grain, [&](int64_t b, int64_t e) { run_range(L, base, b, e, body); });
}

// ts[0] is usually the output. All operands share `shape` (broadcasting is done by expand views).
template <size_t N, class Body>
void for_each_run(const Shape& shape, const std::array<const Tensor*, N>& ts, Body body,
                  int64_t grain = kElementwiseGrain) {
  StridedLayout<N> L = coalesce(shape, ts);
  std::array<char*, N> base;
  for (size_t k = 0; k < N; ++k) base[k] = static_cast<char*>(ts[k]->raw_data());
  run_layout(L, base, body, grain);
}

// ---- tiled walks for transposed operands ----

// The tiles the last two dims are walked in when an operand is transposed against the output:
// kTileRows x kTileCols. Narrow tiles: the transposed operand then touches only kTileCols cache
// lines per tile (at a power-of-two row pitch they all fall in one L1 set, and an L1 set has 8
// ways), each reused over 16 rows; the other operands' lines carry over to the next tile along
// the row. Measured against square tiles of 8 to 32 on 4096 x 4096 and 4000 x 4000 float32.
inline constexpr int64_t kTileRows = 64;
inline constexpr int64_t kTileCols = 8;
// Below this many elements everything is in cache anyway and the plain walk is cheaper.
inline constexpr int64_t kTiledMinElements = 16384;

// True when some operand steps further than one element along the innermost dim but by one
// element along the dim before it: walking rows would touch a new cache line (and, for large
// tensors, a new page) at every element of that operand.
template <size_t N>
bool wants_tiles(const StridedLayout<N>& L, const std::array<int64_t, N>& esize) {
  const size_t nd = L.shape.size();
  if (nd < 2 || L.numel < kTiledMinElements || L.shape[nd - 1] < kTileCols ||
      L.shape[nd - 2] < kTileRows)
    return false;
  for (size_t k = 0; k < N; ++k) {
    const int64_t inner = L.bytes[k][nd - 1], outer = L.bytes[k][nd - 2];
    if ((outer == esize[k] || outer == -esize[k]) && inner != esize[k] && inner != 0) return true;
  }
  return false;
}

// The part rows [r0, r1) x columns [c0, c1) of the last two dims, walked in tiles of
// tr x tc: dims (outer..., row tiles, column tiles, tr, tc). With tr = r1 - r0 and
// tc = c1 - c0 it is a plain sub-block.
template <size_t N>
StridedLayout<N> tile_layout(const StridedLayout<N>& L, int64_t r0, int64_t r1, int64_t c0,
                             int64_t c1, int64_t tr, int64_t tc, std::array<char*, N>& base) {
  const size_t nd = L.shape.size();
  StridedLayout<N> T;
  for (size_t d = 0; d + 2 < nd; ++d) {
    T.shape.push_back(L.shape[d]);
    for (size_t k = 0; k < N; ++k) T.bytes[k].push_back(L.bytes[k][d]);
  }
  const int64_t dims[4] = {(r1 - r0) / tr, (c1 - c0) / tc, tr, tc};
  for (int i = 0; i < 4; ++i) {
    T.shape.push_back(dims[i]);
    for (size_t k = 0; k < N; ++k) {
      const int64_t row = L.bytes[k][nd - 2], col = L.bytes[k][nd - 1];
      const int64_t step[4] = {row * tr, col * tc, row, col};
      T.bytes[k].push_back(step[i]);
    }
  }
  for (size_t k = 0; k < N; ++k) base[k] += r0 * L.bytes[k][nd - 2] + c0 * L.bytes[k][nd - 1];
  for (size_t d = 0; d < T.shape.size(); ++d) T.numel *= T.shape[d];
  return T;
}

// Runs body over the layout in kTileRows x kTileCols tiles of its last two dims (the full
// tiles, then the strips left over at the right and bottom edges, each as a plain block).
// With `tiles`, the full tiles go to it instead, tiles(ptrs, byte_strides, n): n whole tiles
// in a row, the first at ptrs, each next one byte_strides further.
template <size_t N, class Body, class Tiles = Body>
void run_tiled(const StridedLayout<N>& L, const std::array<char*, N>& base, Body& body,
               int64_t grain, Tiles* tiles = nullptr) {
  const size_t nd = L.shape.size();
  const int64_t R = L.shape[nd - 2], C = L.shape[nd - 1];
  const int64_t R1 = R - R % kTileRows, C1 = C - C % kTileCols;
  auto part = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t tr, int64_t tc) {
    if (r1 <= r0 || c1 <= c0) return;
    std::array<char*, N> b = base;
    StridedLayout<N> T = tile_layout(L, r0, r1, c0, c1, tr, tc, b);
    run_layout(T, b, body, grain);
  };
  if (tiles != nullptr && R1 > 0 && C1 > 0) {
    // The layout of the tiles themselves: (outer..., row tiles, column tiles).
    std::array<char*, N> b = base;
    StridedLayout<N> T = tile_layout(L, 0, R1, 0, C1, kTileRows, kTileCols, b);
    StridedLayout<N> O;
    for (size_t d = 0; d + 2 < T.shape.size(); ++d) {
      O.shape.push_back(T.shape[d]);
      for (size_t k = 0; k < N; ++k) O.bytes[k].push_back(T.bytes[k][d]);
    }
    O.numel = T.numel / (kTileRows * kTileCols);
    run_layout(O, b, *tiles, std::max<int64_t>(1, grain / (kTileRows * kTileCols)));
  } else {
    part(0, R1, 0, C1, kTileRows, kTileCols);
  }
  part(0, R1, C1, C, R1, C - C1);  // right strip
  part(R1, R, 0, C, R - R1, C);    // bottom strip
}

// ---- element-wise maps ----

// An input of a vectorisable run: consecutive elements, or one value repeated (Uniform).
template <class T, bool Uniform>
struct Reader {
  const T* p;
  T operator[](int64_t i) const { return p[i]; }
};
template <class T>
struct Reader<T, true> {
  T v;
  T operator[](int64_t) const { return v; }
};

template <class T, bool Uniform>
Reader<T, Uniform> reader_at(const char* p) {
  if constexpr (Uniform)
    return {*reinterpret_cast<const T*>(p)};
  else
    return {reinterpret_cast<const T*>(p)};
}

// out[i] = f(in[i]...) for i < n, with input k uniform when bit k of Mask is set. The readers
// are copied into locals, so the compiler sees they cannot alias the output and vectorises.
template <unsigned Mask, class Out, class... In, class F, size_t... K>
void map_run(Out* o, const std::array<const char*, sizeof...(In)>& in, int64_t n, F& f,
             std::index_sequence<K...>) {
  const std::tuple<Reader<In, ((Mask >> K) & 1u) != 0>...> r{
      reader_at<In, ((Mask >> K) & 1u) != 0>(in[K])...};
  for (int64_t i = 0; i < n; ++i) o[i] = f(std::get<K>(r)[i]...);
}

// map_run for a mask known only at run time. The mask with every input uniform is left out (a
// constant output, which the strided loop handles): each variant is one more vectorised copy of f
// per op and dtype, and these copies are most of the CPU backend's compile time.
template <class Out, class... In, class F, unsigned... M>
bool map_run_masked(unsigned mask, Out* o, const std::array<const char*, sizeof...(In)>& in,
                    int64_t n, F& f, std::integer_sequence<unsigned, M...>) {
  return ((mask == M ? (map_run<M, Out, In...>(o, in, n, f, std::index_sequence_for<In...>{}), true)
                     : false) ||
          ...);
}

// True when every element of t is the same memory element: a scalar broadcast by an expand view
// (x * 0.5, x ** 2.0), with all strides 0.
inline bool is_uniform(const Tensor& t) {
  for (size_t d = 0; d < t.shape().size(); ++d)
    if (t.strides()[d] != 0 && t.shape()[d] != 1) return false;
  return true;
}

// The byte step of each operand when the whole map is one flat run: a contiguous output (a fresh
// result) and inputs each contiguous or one broadcast value (the common cases). Then the map
// needs no layout at all.
template <size_t N>
std::optional<std::array<int64_t, N>> flat_steps(const std::array<const Tensor*, N>& ts,
                                                 const std::array<int64_t, N>& unit) {
  if (!ts[0]->is_contiguous()) return std::nullopt;
  std::array<int64_t, N> step = unit;
  for (size_t k = 1; k < N; ++k) {
    if (ts[k]->is_contiguous()) continue;
    if (!is_uniform(*ts[k])) return std::nullopt;
    step[k] = 0;
  }
  return step;
}

// What one element of a map costs, which decides how a large output is written: a cheap element
// (a few instructions: arithmetic, a comparison, a conversion) leaves the map memory-bound, and a
// contiguous output of stream_min_bytes or more is then streamed (simd.h write_out: c = a + b on
// 64 MB, Zen 3, 7.8 -> 5.1 ms); a costly one (exp, tanh, gelu: tens of instructions) keeps plain
// stores, which streamed ran 10-18% slower.
enum class ElementCost { costly, cheap };

// Element-wise map: out[i] = f(in[i]...) with per-dtype element types Out and In... Every
// element goes through the same f whatever loop computes it, so the loop taken (vectorised,
// strided, tiled, streamed) and the split among threads never change a result.
template <class Out, class... In, class F>
void map_elements(const Tensor& out, std::array<const Tensor*, sizeof...(In)> ins, F f,
                  int64_t grain = kElementwiseGrain, ElementCost cost = ElementCost::costly) {
  constexpr size_t NI = sizeof...(In);
  constexpr size_t N = NI + 1;
  constexpr std::array<int64_t, N> unit = {static_cast<int64_t>(sizeof(Out)),
                                           static_cast<int64_t>(sizeof(In))...};
  std::array<const Tensor*, N> ts;
  ts[0] = &out;
  for (size_t k = 0; k < NI; ++k) ts[k + 1] = ins[k];
  auto body = [&](const std::array<char*, N>& p, const std::array<int64_t, N>& s, int64_t n) {
    bool flat = s[0] == unit[0];
    unsigned mask = 0;  // bit k: input k is the same element all along the run
    for (size_t k = 0; k < NI && flat; ++k) {
      if (s[k + 1] == 0)
        mask |= 1u << k;
      else
        flat = s[k + 1] == unit[k + 1];
    }
    if (flat && NI > 0 && mask == (1u << NI) - 1) {
      // Every input one value along the run (a broadcast scalar: scatter_add's zero base, a
      // filled tensor): f once, then a fill, where the strided loop below took 3x a memset's
      // time (cross_entropy's backward, 4096 x 1024: 2.1 of its 9.5 ms). f is a function of its
      // inputs alone, so every element gets the value it would have had.
      const Out v = [&]<size_t... K>(std::index_sequence<K...>) {
        return f(*reinterpret_cast<const In*>(p[K + 1])...);
      }
      (std::index_sequence_for<In...>{});
      std::fill_n(reinterpret_cast<Out*>(p[0]), n, v);
      return;
    }
    if (flat) {
      std::array<const char*, NI> in;
      for (size_t k = 0; k < NI; ++k) in[k] = p[k + 1];
      if (map_run_masked<Out, In...>(mask, reinterpret_cast<Out*>(p[0]), in, n, f,
                                     std::make_integer_sequence<unsigned, (1u << NI) - 1>{}))
        return;
    }
    [&]<size_t... K>(std::index_sequence<K...>) {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            f(*reinterpret_cast<const In*>(p[K + 1] + i * s[K + 1])...);
    }
    (std::index_sequence_for<In...>{});
  };
  std::array<char*, N> base;
  for (size_t k = 0; k < N; ++k) base[k] = static_cast<char*>(ts[k]->raw_data());
  if (const std::optional<std::array<int64_t, N>> step = flat_steps(ts, unit)) {
    const bool stream = cost == ElementCost::cheap && streams(out);
    parallel_for(out.numel(), grain, [&](int64_t b, int64_t e) {
      std::array<char*, N> p;
      for (size_t k = 0; k < N; ++k) p[k] = base[k] + b * (*step)[k];
      if (!stream) {
        body(p, *step, e - b);
        return;
      }
      write_out(reinterpret_cast<Out*>(p[0]), e - b, true, [&](Out* dst, int64_t i0, int64_t n) {
        std::array<char*, N> q;
        q[0] = reinterpret_cast<char*>(dst);
        for (size_t k = 1; k < N; ++k) q[k] = p[k] + i0 * (*step)[k];
        body(q, *step, n);
      });
      stream_fence();
    });
    return;
  }
  StridedLayout<N> L = coalesce(out.shape(), ts);
  if (!wants_tiles(L, unit)) {
    run_layout(L, base, body, grain);
    return;
  }
  // A whole kTileRows x kTileCols tile per call, in two plain loops: as runs of kTileCols
  // elements, each run would pay the walker's step and the body's stride checks.
  const size_t nd = L.shape.size();
  std::array<int64_t, N> rb, cb;  // byte steps along the tile's rows and columns
  for (size_t k = 0; k < N; ++k) {
    rb[k] = L.bytes[k][nd - 2];
    cb[k] = L.bytes[k][nd - 1];
  }
  auto tile = [&](const std::array<char*, N>& p, const std::array<int64_t, N>& s, int64_t n) {
    [&]<size_t... K>(std::index_sequence<K...>) {
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < kTileRows; ++r)
          for (int64_t c = 0; c < kTileCols; ++c)
            *reinterpret_cast<Out*>(p[0] + t * s[0] + r * rb[0] + c * cb[0]) =
                f(*reinterpret_cast<const In*>(p[K + 1] + t * s[K + 1] + r * rb[K + 1] +
                                               c * cb[K + 1])...);
    }
    (std::index_sequence_for<In...>{});
  };
  run_tiled(L, base, body, grain, &tile);
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
