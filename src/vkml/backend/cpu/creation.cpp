#include "vkml/backend/cpu/creation.h"

#include <algorithm>
#include <cmath>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/vmath.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

void philox(uint64_t seed, uint64_t ctr, uint32_t out[4], uint32_t sub) {
  uint32_t c0 = static_cast<uint32_t>(ctr), c1 = static_cast<uint32_t>(ctr >> 32), c2 = sub, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{0xD2511F53u} * c0, p1 = uint64_t{0xCD9E8D57u} * c2;
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

constexpr int64_t kLanes = kPhiloxLanes;  // counters per philox_lanes call

namespace {

// Philox's round on vectors of counters: each multiplication's high and low words come from two
// 32 x 32 -> 64 products (even lanes, odd lanes) put back in lane order. Written out because GCC
// vectorised the portable loop below with 64-bit multiplies of zero-extended words (vpmullq),
// which left rand at 2.8 ns a float32 on Zen 4 (torch 2.9); the generic copy keeps that loop.
#if defined(__AVX512F__)
using WordVec = __m512i;  // 16 words
constexpr int kWordLanes = 16;
[[gnu::always_inline]] inline WordVec load_words(const uint32_t* p) {
  return _mm512_loadu_si512(p);
}
[[gnu::always_inline]] inline void store_words(uint32_t* p, WordVec v) {
  _mm512_storeu_si512(p, v);
}
[[gnu::always_inline]] inline WordVec broadcast_word(uint32_t v) {
  return _mm512_set1_epi32(static_cast<int>(v));
}
[[gnu::always_inline]] inline WordVec xor3(WordVec a, WordVec b, WordVec c) {
  return _mm512_ternarylogic_epi32(a, b, c, 0x96);
}
// hi, lo: the high and low words of m * c, lane by lane.
[[gnu::always_inline]] inline void mul_words(WordVec c, WordVec m, WordVec& hi, WordVec& lo) {
  // (the zero-masked forms with every lane: GCC 12 warns on the plain ones' undefined source)
  const WordVec even = _mm512_maskz_mul_epu32(0xff, c, m);
  const WordVec odd = _mm512_maskz_mul_epu32(0xff, _mm512_maskz_srli_epi64(0xff, c, 32), m);
  const WordVec hi_of =
      _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  const WordVec lo_of =
      _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
  hi = _mm512_permutex2var_epi32(even, hi_of, odd);
  lo = _mm512_permutex2var_epi32(even, lo_of, odd);
}
#elif defined(__AVX2__)
using WordVec = __m256i;  // 8 words
constexpr int kWordLanes = 8;
[[gnu::always_inline]] inline WordVec load_words(const uint32_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
[[gnu::always_inline]] inline void store_words(uint32_t* p, WordVec v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}
[[gnu::always_inline]] inline WordVec broadcast_word(uint32_t v) {
  return _mm256_set1_epi32(static_cast<int>(v));
}
[[gnu::always_inline]] inline WordVec xor3(WordVec a, WordVec b, WordVec c) {
  return _mm256_xor_si256(_mm256_xor_si256(a, b), c);
}
[[gnu::always_inline]] inline void mul_words(WordVec c, WordVec m, WordVec& hi, WordVec& lo) {
  const WordVec even = _mm256_mul_epu32(c, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}
#endif

}  // namespace

// philox(seed, ctr0 + j) for j < kLanes (block 0), word k of lane j in w[k][j]: the same rounds
// as philox's on every lane at once (one element at a time, rand took 12.7 ns per float32 on Zen
// 4; torch 2.9).
void philox_lanes(uint64_t seed, uint64_t ctr0, uint32_t (&w)[4][kLanes]) {
  uint32_t c0[kLanes], c1[kLanes];  // the counter's words; the other two start at 0
  for (int64_t j = 0; j < kLanes; ++j) {
    const uint64_t ctr = ctr0 + static_cast<uint64_t>(j);
    c0[j] = static_cast<uint32_t>(ctr), c1[j] = static_cast<uint32_t>(ctr >> 32);
  }
  const uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
#if defined(__AVX512F__) || defined(__AVX2__)
  const WordVec m0 = broadcast_word(0xD2511F53u), m1 = broadcast_word(0xCD9E8D57u);
  for (int64_t j = 0; j < kLanes; j += kWordLanes) {
    WordVec v0 = load_words(c0 + j), v1 = load_words(c1 + j), v2 = broadcast_word(0),
            v3 = broadcast_word(0);
    uint32_t k0 = key0, k1 = key1;
    for (int round = 0; round < 10; ++round) {
      WordVec hi0, lo0, hi1, lo1;
      mul_words(v0, m0, hi0, lo0);
      mul_words(v2, m1, hi1, lo1);
      v0 = xor3(hi1, v1, broadcast_word(k0));
      v2 = xor3(hi0, v3, broadcast_word(k1));
      v1 = lo1;
      v3 = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    store_words(w[0] + j, v0);
    store_words(w[1] + j, v1);
    store_words(w[2] + j, v2);
    store_words(w[3] + j, v3);
  }
#else
  uint32_t c2[kLanes] = {}, c3[kLanes] = {};
  uint32_t k0 = key0, k1 = key1;
  for (int round = 0; round < 10; ++round) {
    for (int64_t j = 0; j < kLanes; ++j) {
      const uint64_t p0 = uint64_t{0xD2511F53u} * c0[j], p1 = uint64_t{0xCD9E8D57u} * c2[j];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[j] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[j] ^ k1;
      c1[j] = static_cast<uint32_t>(p1);
      c3[j] = static_cast<uint32_t>(p0);
      c0[j] = n0;
      c2[j] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  std::copy_n(c0, kLanes, w[0]);
  std::copy_n(c1, kLanes, w[1]);
  std::copy_n(c2, kLanes, w[2]);
  std::copy_n(c3, kLanes, w[3]);
#endif
}

namespace {

// Element i uses counter (offset + i): the value at a position never depends on the split.
// f(w0, w1, w2, w3) maps an element's four words to its value.
template <class F>
void fill_random(const Tensor& out, const Attrs& a, F f) {
  VK_DISPATCH_ALL(out.dtype(), "random", {
    T* p = out.data<T>();
    parallel_for(out.numel(), 4096, [&](int64_t b, int64_t e) {
      uint32_t w[4][kLanes];
      int64_t i0 = b;
      for (; i0 + kLanes <= e; i0 += kLanes) {  // a fixed count: this loop vectorises too
        philox_lanes(a.seed, a.offset + static_cast<uint64_t>(i0), w);
        for (int64_t j = 0; j < kLanes; ++j)
          p[i0 + j] = static_cast<T>(f(w[0][j], w[1][j], w[2][j], w[3][j]));
      }
      if (i0 < e) {
        philox_lanes(a.seed, a.offset + static_cast<uint64_t>(i0), w);
        for (int64_t j = 0; j < e - i0; ++j)
          p[i0 + j] = static_cast<T>(f(w[0][j], w[1][j], w[2][j], w[3][j]));
      }
    });
  });
}

[[gnu::always_inline]] inline double uniform53(uint32_t hi, uint32_t lo) {  // [0, 1), 53 bits
  return static_cast<double>((uint64_t{hi} << 21) ^ (lo >> 11)) * 0x1.0p-53;
}

}  // namespace

VK_KERNEL(full) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_ALL(m.dtype, "full", {
    const T v = a.value.convert<T>();  // full() checked that it fits
    T* p = out.data<T>();
    parallel_for(out.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = v;
    });
  });
  return out;
}

VK_KERNEL(arange) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  // Locals, not a's fields: a store through p may alias them, which kept the loops scalar
  // (1.4 ns an element).
  const bool integers = a.arange.integers;
  const uint64_t istart = static_cast<uint64_t>(a.start), istep = static_cast<uint64_t>(a.step);
  const double start = a.arange.start, step = a.arange.step;
  VK_DISPATCH_NUMERIC(m.dtype, "arange", {
    T* p = out.data<T>();
    parallel_for(out.numel(), kElementwiseGrain, [=](int64_t b, int64_t e) {
      if (integers) {  // exact integers: start + i * step in uint64 (no signed overflow on the
                       // way), every value in the range arange() checked
        for (int64_t i = b; i < e; ++i)
          p[i] = static_cast<T>(static_cast<int64_t>(istart + static_cast<uint64_t>(i) * istep));
      } else {
        for (int64_t i = b; i < e; ++i)
          p[i] = static_cast<T>(start + static_cast<double>(i) * step);
      }
    });
  });
  return out;
}

VK_KERNEL(rand) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  bool f32 = m.dtype == DType::Float32;
  fill_random(out, a, [f32](uint32_t w0, uint32_t w1, uint32_t, uint32_t) {
    // float32 keeps 24 bits so that rounding can never produce 1.0
    return f32 ? static_cast<double>(w0 >> 8) * 0x1.0p-24 : uniform53(w0, w1);
  });
  return out;
}

// Elements 2q and 2q + 1 are the Box-Muller pair of counter offset + q: r cos(2 pi v) and
// r sin(2 pi v), r = sqrt(-2 log(1 - u)), u and v 53-bit uniforms from the counter's four words,
// in double through vmath's log and cos_sin_2pi (one draw, log and square root for two samples:
// with each element its own counter's cosine, randn of 1M float32 took 5.5 ms on Zen 4, torch
// 3.6). The counter of an element depends on its position alone, so any split gives the same
// numbers.
VK_KERNEL(randn) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const int64_t n = out.numel(), whole_pairs = n / 2;
  VK_DISPATCH_FLOAT(m.dtype, "randn", {
    T* p = out.data<T>();
    parallel_for((n + 1) / 2, 2048, [&](int64_t b, int64_t e) {
      uint32_t w[4][kLanes];
      double zc[kLanes], zs[kLanes];
      for (int64_t q0 = b; q0 < e; q0 += kLanes) {
        philox_lanes(a.seed, a.offset + static_cast<uint64_t>(q0), w);
        for (int64_t j = 0; j < kLanes; ++j) {  // a fixed count: vectorised
          const double u = 1.0 - uniform53(w[0][j], w[1][j]), v = uniform53(w[2][j], w[3][j]);
          const double r = std::sqrt(-2.0 * vmath::log(u));
          double c, s;
          vmath::cos_sin_2pi(v, c, s);
          zc[j] = r * c;
          zs[j] = r * s;
        }
        const int64_t k = std::min(kLanes, e - q0), whole = std::min(k, whole_pairs - q0);
        T* o = p + 2 * q0;
        for (int64_t j = 0; j < whole; ++j) {
          o[2 * j] = static_cast<T>(zc[j]);
          o[2 * j + 1] = static_cast<T>(zs[j]);
        }
        if (whole < k) o[2 * whole] = static_cast<T>(zc[whole]);  // n odd: the last pair's cosine
      }
    });
  });
  return out;
}

VK_KERNEL(randint) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  // In uint64: high - low may exceed int64 (randint(-2^63, 2^63 - 1)).
  const uint64_t low = static_cast<uint64_t>(a.start);
  const uint64_t span = static_cast<uint64_t>(a.stop) - low;
  fill_random(out, a, [low, span](uint32_t w0, uint32_t w1, uint32_t, uint32_t) {
    uint64_t r = (uint64_t{w0} << 32) | w1;
    return static_cast<int64_t>(low + r % span);
  });
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
