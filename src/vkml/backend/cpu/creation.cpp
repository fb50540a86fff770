#include "vkml/backend/cpu/creation.h"

#include <algorithm>
#include <cmath>

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

namespace {

constexpr int64_t kLanes = 64;  // counters per philox_lanes call

// philox(seed, ctr0 + j) for j < kLanes (block 0), word k of lane j in w[k][j]: the same rounds
// as philox's with each lane in its own array slot, a loop the compiler vectorises (one element
// at a time, rand took 12.7 ns per float32 on Zen 4; torch 2.9).
void philox_lanes(uint64_t seed, uint64_t ctr0, uint32_t (&w)[4][kLanes]) {
  uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) {
    const uint64_t ctr = ctr0 + static_cast<uint64_t>(j);
    c0[j] = static_cast<uint32_t>(ctr), c1[j] = static_cast<uint32_t>(ctr >> 32);
    c2[j] = 0, c3[j] = 0;
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
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
}

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

VK_KERNEL(randn) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  // Box-Muller on two uniforms from one counter, in double through vmath's log and cos(2 pi t)
  // (vectorised: libm's took 25 ns per element, 7x torch's time)
  // (always_inline: left a call per element, GCC would not vectorise the loop)
  fill_random(out, a, [](uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3) VK_ELEMENT {
    const double u1 = 1.0 - uniform53(w0, w1), u2 = uniform53(w2, w3);
    return std::sqrt(-2.0 * vmath::log(u1)) * vmath::cos_2pi(u2);
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
