// The sort family's kernels. sort: each row along the dim is sorted stably (ties keep their input
// order, so the result is one and the same at any thread count): by a radix sort of (key, index)
// words for rows of 64 or more, by std::stable_sort of (value, index) pairs below; or only its
// first `keep` selected (topk: a scan for a few, a partial sort for more). Rows are independent:
// the pool splits them. searchsorted: a binary search per value.
#include "vkml/backend/cpu/sort.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/rows.h"
#include "vkml/backend/cpu/simd.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

// a goes before b: NaN is larger than every number (last ascending, first descending).
template <class T>
bool before(T a, T b, bool descending) {
  if (descending) return a > b || (is_nan(a) && !is_nan(b));
  return a < b || (is_nan(b) && !is_nan(a));
}

// Up to this many of a row (topk's k) are selected by one scan (select_few) rather than a partial
// sort: each of its insertions shifts up to `keep` pairs.
constexpr int64_t kScanKeep = 32;

// Whether any of row[0, 16) goes before `last` (before()'s order, NaN the largest), in vectors:
// the compares of a scalar loop, with before()'s short-circuits or without, stayed one element at
// a time.
template <bool descending, class T>
bool any_before(const T* row, T last) {
  if constexpr (std::is_same_v<T, bool>) {
    bool any = false;
    for (int i = 0; i < 16; ++i) any |= before(row[i], last, descending);
    return any;
  } else {
    using V = Simd<T, 16>;
    using M = decltype(V{} == V{});  // integers of T's width, all ones where true
    V v;
    load_simd(v, row);
    M m = descending ? M(v > last) : M(v < last);
    if constexpr (std::is_floating_point_v<T>) {
      if (descending && last == last) m |= M(v != v);   // a NaN goes before every number
      if (!descending && last != last) m |= M(v == v);  // every number goes before a NaN
    }
    Simd<uint64_t, sizeof(M) / 8> bits;
    std::memcpy(&bits, &m, sizeof bits);
    uint64_t found = 0;
    for (size_t j = 0; j < sizeof(M) / 8; ++j) found |= bits[j];
    return found != 0;
  }
}

// The first `keep` of a row of K elements `stride` apart under the stable order (ties: the earlier
// element first) into best[0, keep): one scan that keeps them sorted. Elements come in index order,
// so a new one goes before a kept one only if its value is strictly before (a tie stays behind),
// and it enters only if it goes before the last kept. Blocks of 16 whose values are none of them
// before the last kept (most, past the first few blocks) are passed over after one vector compare
// (any_before). (A partial sort of (value, index) pairs took 2.5 ns an element for the top 5 of
// rows of 1024 floats, torch 1.9; this takes 1.2.)
template <class T, bool descending>
void select_few(const T* row, int64_t stride, int64_t K, int64_t keep,
                std::pair<T, int64_t>* best) {
  if (keep == 0) return;
  int64_t n = 0;  // kept so far
  auto offer = [&](T v, int64_t k) {
    if (n == keep && !before(v, best[n - 1].first, descending)) return;
    int64_t j = n < keep ? n++ : keep - 1;  // the slot it starts from (the last is dropped)
    for (; j > 0 && before(v, best[j - 1].first, descending); --j) best[j] = best[j - 1];
    best[j] = {v, k};
  };
  int64_t k = 0;
  for (; k < K && n < keep; ++k) offer(row[k * stride], k);
  constexpr int64_t kBlock = 16;
  if (stride == 1) {
    for (; k + kBlock <= K; k += kBlock) {
      const T last = best[keep - 1].first;
      if (any_before<descending>(row + k, last))
        for (int64_t i = 0; i < kBlock; ++i) offer(row[k + i], k + i);
    }
  }
  for (; k < K; ++k) offer(row[k * stride], k);
}

// The first `keep` of a row's (value, index) pairs in order: a partial sort under the stable order
// made total by the index (ties: the earlier element first) where `select`, else a stable sort.
template <class T>
void sort_pairs(std::vector<std::pair<T, int64_t>>& buf, int64_t keep, bool descending,
                bool select) {
  using Pair = std::pair<T, int64_t>;
  if (select) {
    std::partial_sort(buf.begin(), buf.begin() + keep, buf.end(),
                      [descending](const Pair& a, const Pair& b) {
                        if (before(a.first, b.first, descending)) return true;
                        return !before(b.first, a.first, descending) && a.second < b.second;
                      });
  } else {
    std::stable_sort(buf.begin(), buf.end(), [descending](const Pair& a, const Pair& b) {
      return before(a.first, b.first, descending);
    });
  }
}

// ---- full sorts of rows by radix ----
// A row of 64 or more elements (sort, argsort, and topk of more than a quarter of the row) is
// sorted by an LSD radix sort of (key, index) pairs, a byte per pass: key_of maps each value to an
// unsigned integer whose order is before()'s ascending one, ties included (-0.0 and 0.0 share a
// key, every NaN has the largest), and its complement gives the descending one. Each pass is
// stable, so equal keys keep their input order: the stable sort's result, exactly. A pass whose
// byte is the same in every key is skipped (small integers, values of one sign and exponent).
// std::stable_sort of the pairs took 50 ns an element over rows of 1024 floats (torch 50); this
// takes 6-9.
constexpr int64_t kRadixFrom = 64;

template <class T>
using RadixKey = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

template <class T>
RadixKey<T> key_of(T v, bool descending) {
  using U = RadixKey<T>;
  constexpr U kSign = U{1} << (8 * sizeof(U) - 1);
  U u;
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) {
      u = ~U{0};
    } else {
      u = std::bit_cast<U>(v == T(0) ? T(0) : v);  // -0.0 ties with 0.0
      u = (u & kSign) ? ~u : u | kSign;
    }
  } else {  // integers (two's complement, the sign flipped: unsigned order) and bool
    u = static_cast<U>(v) ^ kSign;
  }
  return descending ? ~u : u;
}

// Sorts the words by their keys (key_bits(w): Bytes bytes, unsigned) in place, a byte per pass;
// scratch is a vector of the same size. The histograms of every byte are taken in one pass first.
template <int Bytes, class W, class KeyBits>
void radix_sort(std::vector<W>& word, std::vector<W>& scratch, KeyBits key_bits) {
  const int64_t n = static_cast<int64_t>(word.size());
  int64_t count[Bytes][256] = {};
  for (const W& w : word)
    for (int b = 0; b < Bytes; ++b) ++count[b][(key_bits(w) >> (8 * b)) & 255];
  for (int b = 0; b < Bytes; ++b) {
    int64_t* c = count[b];
    if (c[(key_bits(word[0]) >> (8 * b)) & 255] == n) continue;  // one byte value: none moves
    int64_t at = 0;
    for (int d = 0; d < 256; ++d) {
      const int64_t here = c[d];
      c[d] = at;
      at += here;
    }
    for (const W& w : word) scratch[c[(key_bits(w) >> (8 * b)) & 255]++] = w;
    word.swap(scratch);
  }
}

// A 32-bit key and its position packed in one word (one store per element and pass; rows of up
// to 2^32 elements); a 64-bit key beside its position.
template <class T>
using RadixWord = std::conditional_t<sizeof(T) <= 4, uint64_t, std::pair<RadixKey<T>, int64_t>>;

// The first `keep` of a row of K elements `stride` apart, radix sorted, into val / idx (`stride`
// apart too).
template <class T>
void radix_row(const T* row, int64_t stride, int64_t K, int64_t keep, bool descending, T* val,
               int64_t* idx, std::vector<RadixWord<T>>& word, std::vector<RadixWord<T>>& scratch) {
  if constexpr (sizeof(T) <= 4) {
    for (int64_t k = 0; k < K; ++k)
      word[k] = uint64_t{key_of(row[k * stride], descending)} << 32 | static_cast<uint64_t>(k);
    radix_sort<4>(word, scratch, [](uint64_t w) { return w >> 32; });
    for (int64_t k = 0; k < keep; ++k) {
      const auto at = static_cast<int64_t>(word[k] & 0xffffffffu);
      val[k * stride] = row[at * stride];
      idx[k * stride] = at;
    }
  } else {
    for (int64_t k = 0; k < K; ++k) word[k] = {key_of(row[k * stride], descending), k};
    radix_sort<8>(word, scratch, [](const RadixWord<T>& w) { return w.first; });
    for (int64_t k = 0; k < keep; ++k) {
      val[k * stride] = row[word[k].second * stride];
      idx[k * stride] = word[k].second;
    }
  }
}

// Each row's first `keep` elements in order (all of them: keep == K). A few of many (topk) are
// selected by a scan (select_few, keep <= kScanKeep) or a partial sort (sort_pairs); whole rows of
// kRadixFrom or more are radix sorted, shorter ones stable sorted (sort_pairs). Each gives exactly
// the stable sort's first `keep`, ties included.
template <class T>
void sort_rows(const Tensor& x, Tensor& values, Tensor& indices, int64_t dim, bool descending,
               int64_t keep) {
  const Rows rows = rows_along(x.shape(), dim);
  const Rows out = {rows.outer, keep, rows.inner};
  const T* src = x.data<T>();
  T* val = values.data<T>();
  int64_t* idx = indices.data<int64_t>();
  const bool select = keep * 4 <= rows.K;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(rows.K, 1));
  parallel_for(rows.count(), grain, [&](int64_t begin, int64_t end) {
    // (value, index) pairs side by side: the comparisons read the buffer, not the row through
    // its stride (sorting indices that read the row took 47 ns per element over rows of 256)
    using Pair = std::pair<T, int64_t>;
    const bool radix =
        !select && rows.K >= kRadixFrom && (sizeof(T) > 4 || rows.K <= int64_t{1} << 32);
    std::vector<Pair> buf(radix ? 0 : static_cast<size_t>(rows.K));
    std::vector<RadixWord<T>> word(radix ? rows.K : 0), scratch(word.size());
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = rows.base(r);
      if (radix) {
        radix_row(src + base, rows.inner, rows.K, keep, descending, val + out.base(r),
                  idx + out.base(r), word, scratch);
        continue;
      }
      if (select && keep <= kScanKeep) {
        if (descending)  // (the order a constant in the scan's compares)
          select_few<T, true>(src + base, rows.inner, rows.K, keep, buf.data());
        else
          select_few<T, false>(src + base, rows.inner, rows.K, keep, buf.data());
      } else {
        for (int64_t k = 0; k < rows.K; ++k)
          buf[static_cast<size_t>(k)] = {src[base + k * rows.inner], k};
        sort_pairs(buf, keep, descending, select);
      }
      const int64_t to = out.base(r);
      for (int64_t k = 0; k < keep; ++k) {
        val[to + k * rows.inner] = buf[static_cast<size_t>(k)].first;
        idx[to + k * rows.inner] = buf[static_cast<size_t>(k)].second;
      }
    }
  });
}

// The number of b[0..M) before v: those < v, or <= v with right. Written as "not >=" ("not >")
// so that a NaN value counts every boundary, as PyTorch's.
template <class T>
int64_t insertion_point(const T* b, int64_t M, T v, bool right) {
  int64_t lo = 0, hi = M;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const bool goes_before = right ? !(b[mid] > v) : !(b[mid] >= v);
    if (goes_before) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <class T, class I>
void search_all(const Tensor& boundaries, const Tensor& values, Tensor& out, bool right) {
  const T* b = boundaries.data<T>();
  const T* v = values.data<T>();
  I* o = out.data<I>();
  const int64_t M = boundaries.shape().back();
  // 1-D boundaries serve every value; else value i searches row i / N of them.
  const int64_t N = boundaries.ndim() == 1 ? values.numel() : values.shape().back();
  parallel_for(values.numel(), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      o[i] = static_cast<I>(insertion_point(b + (i / N) * M, M, v[i], right));
  });
}

}  // namespace

VK_KERNEL(searchsorted) {
  const Tensor boundaries = contiguous_copy(in[0]), values = contiguous_copy(in[1]);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  VK_DISPATCH_NUMERIC(values.dtype(), "searchsorted", {
    if (m.dtype == DType::Int32) {
      search_all<T, int32_t>(boundaries, values, out, a.sort.right);
    } else {
      search_all<T, int64_t>(boundaries, values, out, a.sort.right);
    }
  });
  return out;
}

VK_KERNEL(sort) {
  const Tensor x = contiguous_copy(in[0]);
  Tensor values = Tensor::empty(m.shape, m.dtype);
  Tensor indices = Tensor::empty(m.shape, DType::Int64);
  if (x.numel() == 0) return {values, indices};
  const int64_t dim = x.ndim() == 0 ? 0 : a.dim;
  const int64_t keep = x.ndim() == 0 ? 1 : m.shape[static_cast<size_t>(dim)];
  VK_DISPATCH_ALL(x.dtype(), "sort",
                  sort_rows<T>(x, values, indices, dim, a.sort.descending, keep));
  return {values, indices};
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
