// Explicit SIMD for the CPU kernels (GCC/Clang vector extensions), shared by the reductions, the
// softmax family and the normalisations.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "vkml/backend/cpu/isa.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// Explicit SIMD (GCC/Clang vector extensions) where the auto-vectoriser gives up: selects with
// NaN handling (max/min, first index of a value). One machine vector of T.
// The width follows the instruction set the file is compiled for, and vectors never cross a
// function boundary by value (their ABI would depend on it). Results do not depend on the width.
#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif
template <class T, int N>
struct SimdOf {
  typedef T type __attribute__((vector_size(N * sizeof(T))));
};
template <class T, int N = kVecBytes / static_cast<int>(sizeof(T))>
using Simd = typename SimdOf<T, N>::type;

template <class V, class T>
inline void load_simd(V& v, const T* p) {
  std::memcpy(&v, p, sizeof v);
}
template <class V, class T>
inline void store_simd(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

// v where v > a (Max; v < a for the minimum), else a -- also where either is NaN, and a where
// they are equal (+0 against -0): the rule of the max/min instructions, which for floats is one
// instruction where the select's compare and blend are two (GCC keeps the select: its NaN rule
// is not the C++ max's).
template <bool Max, class V>
[[gnu::always_inline]] inline V select_extreme(V v, V a) {
#if defined(__AVX512F__)
  // the masked forms with every lane: GCC 12 warns on the plain ones' undefined pass-through
  if constexpr (std::is_same_v<V, Simd<float>>)
    return Max ? _mm512_mask_max_ps(a, 0xffff, v, a) : _mm512_mask_min_ps(a, 0xffff, v, a);
  if constexpr (std::is_same_v<V, Simd<double>>)
    return Max ? _mm512_mask_max_pd(a, 0xff, v, a) : _mm512_mask_min_pd(a, 0xff, v, a);
#elif defined(__AVX__)
  if constexpr (std::is_same_v<V, Simd<float>>)
    return Max ? _mm256_max_ps(v, a) : _mm256_min_ps(v, a);
  if constexpr (std::is_same_v<V, Simd<double>>)
    return Max ? _mm256_max_pd(v, a) : _mm256_min_pd(v, a);
#endif
  return Max ? (v > a ? v : a) : (v < a ? v : a);
}

// Asks for a row's cache lines [p, p + bytes) ahead of its use, for the forward row kernels whose
// first pass over a row (its maximum, its mean) waits on memory: a row of a few KB is a page or
// less, and the hardware prefetchers, which stop at page boundaries, start over on every row.
// Called two rows ahead. Zen 3, one thread, 4096 x 1024 floats: layer_norm's forward 2.50 -> 2.08
// ms, softmax's 3.02 -> 2.80, log_softmax's 3.12 -> 2.78. The backward passes, which read two
// rows each, ran no faster (layer_norm's slower). Rows above 16 KB are left to the hardware.
inline void prefetch_row(const void* p, int64_t bytes) {
  if (bytes > 16384) return;
  const char* c = static_cast<const char*>(p);
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off, 0, 3);
}

// ---- outputs written around the cache ----
// An output larger than the last-level cache can hold beside its inputs (cache.h
// stream_min_bytes) is written with non-temporal stores: a plain store first reads the line it
// overwrites, a third more traffic for a map of two inputs. Zen 3 (32 MB of L3), one thread,
// (a + b) * 2, where the product reads a + b back: 2.95 -> 2.21 ms for outputs of 16 MB, 4.71 ->
// 3.47 for 24 MB, 10.6 -> 7.0 for 48 MB (two threads 1.30 -> 1.12 at 16 MB); in a throwaway
// harness, streaming outputs of 1-4 MB made such a pair 1.15x slower.

// Copies whole 64-byte lines from src to dst (both 64-byte aligned) with non-temporal stores.
inline void stream_lines(void* dst, const void* src, int64_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__AVX512F__)
  for (int64_t off = 0; off < bytes; off += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + off),
                        _mm512_load_si512(reinterpret_cast<const __m512i*>(s + off)));
#elif defined(__AVX__)
  for (int64_t off = 0; off < bytes; off += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + off),
                        _mm256_load_si256(reinterpret_cast<const __m256i*>(s + off)));
#elif defined(__SSE2__)
  for (int64_t off = 0; off < bytes; off += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + off),
                     _mm_load_si128(reinterpret_cast<const __m128i*>(s + off)));
#else
  std::memcpy(d, s, static_cast<size_t>(bytes));
#endif
}

// Orders the non-temporal stores before every later store: a range that streamed with write_out
// calls it before it returns to the pool, whose completion signal is a plain store.
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Writes out[0, n) as produce(dst, i0, count) computes elements [i0, i0 + count) into dst: with
// non-temporal stores where `stream` (blocks of 512 bytes computed into a buffer in L1, then
// streamed; the unaligned head and the tail written directly), else straight into out. Each
// element gets the same value either way. After streamed writes, stream_fence(). Blocks of 256 B,
// 512 B, 1 KB, 4 KB on Zen 3 (add of 64 MB arrays, layer_norm 4096 x 1024): 512 B was best (add
// 5.1 ms against 6.4 with 4 KB and 7.8 unstreamed). Only for cheap elements: behind an element
// of tens of instructions (exp, tanh, gelu) streamed blocks ran 10-18% slower than plain stores,
// the core waiting on each block's stores where it would have gone on computing.
template <class T, class Produce>
[[gnu::always_inline]] inline void write_out(T* out, int64_t n, bool stream, Produce&& produce) {
  constexpr int64_t kBlock = 512 / static_cast<int64_t>(sizeof(T));
  const auto addr = reinterpret_cast<uintptr_t>(out);
  if (!stream || n < kBlock || addr % sizeof(T) != 0) {
    produce(out, int64_t{0}, n);
    return;
  }
  const int64_t head = static_cast<int64_t>((64 - addr % 64) % 64 / sizeof(T));
  produce(out, int64_t{0}, head);
  alignas(64) T block[kBlock];
  int64_t i = head;
  for (; i + kBlock <= n; i += kBlock) {
    produce(block, i, kBlock);
    stream_lines(out + i, block, kBlock * static_cast<int64_t>(sizeof(T)));
  }
  if (i < n) produce(out + i, i, n - i);
}

// The first `valid` T at p in a machine vector (the other lanes 0), and back.
template <class T>
inline Simd<T> load_part(const T* p, int valid) {
  Simd<T> v{};
  std::memcpy(&v, p, sizeof(T) * static_cast<size_t>(valid));
  return v;
}
template <class T>
inline void store_part(T* p, const Simd<T>& v, int valid) {
  std::memcpy(p, &v, sizeof(T) * static_cast<size_t>(valid));
}

// The 16 double lanes as machine vectors (lane j in vector j / DW, element j % DW).
constexpr int kLaneDW = kVecBytes / 8;  // doubles per vector
constexpr int kLaneNV = 16 / kLaneDW;   // vectors
using LaneVec = Simd<double, kLaneDW>;

// Adds f(p[k]) for the whole blocks of 16 of p[0, n) into acc, lane (k mod 16) for element k;
// returns how many elements it took. f transforms, in place, a vector of doubles (or one double,
// for a tail) into what is added.
template <class T, class F>
[[gnu::always_inline]] inline int64_t add_blocks16(LaneVec* acc, const T* p, int64_t n, F f) {
  constexpr int DW = kLaneDW;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int v = 0; v < kLaneNV; ++v) {
      LaneVec x;
      if constexpr (std::is_same_v<T, float>) {
#if defined(__AVX512F__)
        // one vcvtps2pd of 8 floats: GCC lowers the generic conversion below to two 4-wide ones
        // with an extract and an insert, which bounded a float sum at 2.2 elements a cycle
        // (the masked form with a zero source: GCC 12 warns on _mm512_cvtps_pd's undefined one)
        x = reinterpret_cast<LaneVec>(
            _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xff, _mm256_loadu_ps(p + k + v * DW)));
#else
        Simd<float, DW> h;
        load_simd(h, p + k + v * DW);
        x = __builtin_convertvector(h, LaneVec);
#endif
      } else {
        load_simd(x, p + k + v * DW);
      }
      f(x);
      acc[v] += x;
    }
  return k;
}

// The last n - k (< 16) elements into lanes 0, 1, ... one at a time.
template <class T, class F>
[[gnu::always_inline]] inline void add_tail16(double* lane, const T* p, int64_t k, int64_t n, F f) {
  for (int j = 0; k < n; ++k, ++j) {
    double x = static_cast<double>(p[k]);
    f(x);
    lane[j] += x;
  }
}

// Accumulates f(p[k]) into 16 double lanes, lane (k mod 16) for element k, keeping the lanes in
// registers. The lane of every element is the same at any vector width.
template <class T, class F>
inline void add_lanes16(double* lane, const T* p, int64_t n, F f) {
  LaneVec acc[kLaneNV];
  for (int v = 0; v < kLaneNV; ++v) load_simd(acc[v], lane + v * kLaneDW);
  int64_t k = add_blocks16(acc, p, n, f);
  for (int v = 0; v < kLaneNV; ++v) store_simd(lane + v * kLaneDW, acc[v]);
  add_tail16(lane, p, k, n, f);
}

namespace simd_detail {
// v plus v rotated down by W lanes, then the same for 2W, ... below the vector's width: lane 0
// ends with its pairs' tree (lane j takes j + W, then j + 2W, ...).
template <int W, class D, size_t... J>
[[gnu::always_inline]] inline D fold_down(D v, std::index_sequence<J...> lanes) {
  if constexpr (W >= static_cast<int>(sizeof...(J))) {
    return v;
  } else {
    return fold_down<2 * W>(v + __builtin_shufflevector(v, v, ((J + W) % sizeof...(J))...), lanes);
  }
}

// The tree of sum_lanes16 over lanes held in vectors.
[[gnu::always_inline]] inline double tree_sum16(const LaneVec* acc) {
  LaneVec v[kLaneNV];
  for (int i = 0; i < kLaneNV; ++i)
    v[i] = fold_down<1>(acc[i], std::make_index_sequence<kLaneDW>{});
  for (int w = 1; w < kLaneNV; w *= 2)  // across vectors: lane 0 of vector i takes that of i + w
    for (int i = 0; i + w < kLaneNV; i += 2 * w) v[i] += v[i + w];
  return v[0][0];
}
}  // namespace simd_detail

// The 16 lanes' sum by merge_tree's fixed tree (lane j takes j + 1, then j + 2, j + 4, j + 8),
// in vectors: the same additions in the same order, so the same bits.
inline double sum_lanes16(const double* lane) {
  LaneVec acc[kLaneNV];
  for (int i = 0; i < kLaneNV; ++i) load_simd(acc[i], lane + i * kLaneDW);
  return simd_detail::tree_sum16(acc);
}

// add_lanes16 into zeroed lanes, then sum_lanes16: the same additions, so the same bits, with the
// lanes in registers throughout where the row is whole blocks of 16. The reductions' rows of a few
// vectors spent most of their time storing the lanes and loading them back, and in a call per
// row. A tail goes through memory and add_tail16, as add_lanes16's (GCC may fuse its
// multiply-add, as there: a vector add of the tail's terms gave other bits).
template <class T, class F>
[[gnu::always_inline]] inline double row_sum16(const T* p, int64_t n, F f) {
  LaneVec acc[kLaneNV];
  for (int v = 0; v < kLaneNV; ++v) acc[v] = LaneVec{};
  const int64_t k = add_blocks16(acc, p, n, f);
  if (k == n) return simd_detail::tree_sum16(acc);
  alignas(64) double lane[16];
  for (int v = 0; v < kLaneNV; ++v) store_simd(lane + v * kLaneDW, acc[v]);
  add_tail16(lane, p, k, n, f);
  return sum_lanes16(lane);
}

// ---- float sums along a row, in blocks ----
// A row's element k is in lane k mod 16, whatever the machine's vector width (W floats): a
// machine vector at offset k holds lanes k mod 16 .. k mod 16 + W - 1.
constexpr int kRowLanes = 16;
using FloatVec = Simd<float>;
constexpr int kFloatWidth = static_cast<int>(sizeof(FloatVec) / sizeof(float));

// The `valid` floats at p in a machine vector's first lanes; the other lanes 0.
// A partial vector is a masked load where the instruction set has one: a copy of a run-time
// length is a call to memcpy, which on the short rows of causal attention (1 to 64 keys) cost
// more than the sums.
inline FloatVec load_floats(const float* p, int valid = kFloatWidth) {
  if (__builtin_constant_p(valid) && valid == kFloatWidth) {
    FloatVec v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
#if defined(__AVX512F__)
  return reinterpret_cast<FloatVec>(
      _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << valid) - 1u), p));
#elif defined(__AVX2__)
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return reinterpret_cast<FloatVec>(
      _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), lane)));
#else
  return load_part(p, valid);
#endif
}

namespace simd_detail {
// Lanes Off .. Off + H - 1 of a float vector, widened to double.
template <int Off, size_t... I>
inline Simd<double, sizeof...(I)> widen_part(FloatVec v, std::index_sequence<I...>) {
  return __builtin_convertvector(__builtin_shufflevector(v, v, (Off + I)...),
                                 Simd<double, sizeof...(I)>);
}
}  // namespace simd_detail

// N sums over a row of n floats: terms(k, valid, t) puts the N terms of elements k .. k + valid -
// 1 in lanes 0 .. valid - 1 of the machine vectors t[0] .. t[N - 1] (lanes from `valid` on are
// cleared here, so they may hold anything); k steps by the vector width, upwards (callers may
// track where k is rather than divide). A lane adds its terms in float within blocks of 256
// elements (16 per lane in two chains of eight, elements 16 apart alternating between them, then
// the chains' sum: at most 9 roundings), each block's lanes are added into double lanes, and the
// 16 double lanes are combined in a fixed tree (lane j with j + 8, then j + 4, j + 2, j + 1).
// Against sums in double throughout (a conversion per element costs as much as the addition) this
// takes about a third of the time, and the float error stays that of 16 terms. Every lane sees
// the same operations in the same order at any vector width, and the order depends on n alone: a
// row's sums are the same at any thread count and on every instruction set.
template <int N, class F>
[[gnu::always_inline]] inline std::array<double, N> row_sums(int64_t n, F terms) {
  constexpr int W = kFloatWidth, G = kRowLanes / W;  // G vectors hold the 16 lanes
  constexpr int DW = W / 2, DG = kRowLanes / DW;     // the same lanes in double
  using D = Simd<double, DW>;
  static_assert(W >= 4 && kRowLanes % W == 0);
  D total[N][DG] = {};
  FloatVec t[N];
  int64_t k = 0;
  while (k < n) {
    const int64_t end = std::min(n, k + 256);
    FloatVec chain[2][G][N] = {};
    // The vector at k + R (R < 32, k a multiple of 32 in the block) goes to chain R / 16, lane
    // group (R mod 16) / W; R is a constant, so the chains stay in registers.
    auto add = [&]<int R>(std::integer_sequence<int, R>, int valid) __attribute__((always_inline)) {
      terms(k + R, valid, t);
      if (valid < W) {
        Simd<int32_t, W> lane;
        for (int j = 0; j < W; ++j) lane[j] = j;
        for (int i = 0; i < N; ++i) t[i] = lane < valid ? t[i] : FloatVec{};
      }
      for (int i = 0; i < N; ++i) chain[R / kRowLanes][(R % kRowLanes) / W][i] += t[i];
    };
    auto step = [&]<int... R>(std::integer_sequence<int, R...>, int64_t left)
        __attribute__((always_inline)) {
      ((left > R * W ? add(std::integer_sequence<int, R * W>{},
                           static_cast<int>(std::min<int64_t>(W, left - R * W)))
                     : void()),
       ...);
    };
    constexpr auto vectors32 = std::make_integer_sequence<int, 32 / W>{};
    for (; k + 32 <= end; k += 32) step(vectors32, 32);
    if (k < end) step(vectors32, end - k);
    k = end;
    for (int g = 0; g < G; ++g)
      for (int i = 0; i < N; ++i) {
        const FloatVec s = chain[0][g][i] + chain[1][g][i];
        total[i][2 * g] += simd_detail::widen_part<0>(s, std::make_index_sequence<DW>{});
        total[i][2 * g + 1] += simd_detail::widen_part<DW>(s, std::make_index_sequence<DW>{});
      }
  }
  std::array<double, N> out;
  for (int i = 0; i < N; ++i) {  // the tree: whole vectors while the stride allows
    D* v = total[i];
    for (int w = kRowLanes / 2; w >= DW; w /= 2)
      for (int j = 0; j < w / DW; ++j) v[j] += v[j + w / DW];
    double s[DW];
    std::memcpy(s, v, sizeof s);
    for (int w = std::min(kRowLanes / 2, DW / 2); w >= 1; w /= 2)
      for (int j = 0; j < w; ++j) s[j] += s[j + w];
    out[i] = s[0];
  }
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
