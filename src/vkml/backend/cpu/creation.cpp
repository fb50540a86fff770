#include "vkml/backend/cpu/creation.h"

#include <cmath>

#include "vkml/backend/cpu/parallel.h"

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

// Element i uses counter (offset + i): the value at a position never depends on the split.
template <class F>
void fill_random(const Tensor& out, const Attrs& a, F f) {
  VK_DISPATCH_ALL(out.dtype(), "random", {
    T* p = out.data<T>();
    parallel_for(out.numel(), 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        uint32_t w[4];
        philox(a.seed, a.offset + static_cast<uint64_t>(i), w);
        p[i] = static_cast<T>(f(w));
      }
    });
  });
}

double uniform53(uint32_t hi, uint32_t lo) {  // [0, 1) with 53 random bits
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
  VK_DISPATCH_NUMERIC(m.dtype, "arange", {
    T* p = out.data<T>();
    if (a.arange.integers) {  // exact integers: start + i * step in uint64 (no signed overflow on
                              // the way),
      // every value in the range arange() checked
      const uint64_t start = static_cast<uint64_t>(a.start), step = static_cast<uint64_t>(a.step);
      for (int64_t i = 0; i < out.numel(); ++i)
        p[i] = static_cast<T>(static_cast<int64_t>(start + static_cast<uint64_t>(i) * step));
    } else {
      for (int64_t i = 0; i < out.numel(); ++i)
        p[i] = static_cast<T>(a.arange.start + i * a.arange.step);
    }
  });
  return out;
}

VK_KERNEL(rand) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  bool f32 = m.dtype == DType::Float32;
  fill_random(out, a, [f32](const uint32_t* w) {
    // float32 keeps 24 bits so that rounding can never produce 1.0
    return f32 ? static_cast<double>(w[0] >> 8) * 0x1.0p-24 : uniform53(w[0], w[1]);
  });
  return out;
}

VK_KERNEL(randn) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  fill_random(out, a, [](const uint32_t* w) {  // Box-Muller on two uniforms from one counter
    double u1 = 1.0 - uniform53(w[0], w[1]), u2 = uniform53(w[2], w[3]);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  });
  return out;
}

VK_KERNEL(randint) {
  (void)in;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  // In uint64: high - low may exceed int64 (randint(-2^63, 2^63 - 1)).
  const uint64_t low = static_cast<uint64_t>(a.start);
  const uint64_t span = static_cast<uint64_t>(a.stop) - low;
  fill_random(out, a, [low, span](const uint32_t* w) {
    uint64_t r = (uint64_t{w[0]} << 32) | w[1];
    return static_cast<int64_t>(low + r % span);
  });
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
