// Peak FP32 FMA throughput: independent FMA chains on the widest vectors the compiler targets
// (-O3 -march=native: AVX-512 where available, else AVX2/FMA). Usage: peak_fma [threads] [seconds]
// Prints one JSON line: {"threads": n, "gflops": best, "isa": "..."}. Used by bench/compare.py.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__AVX512F__)
using vec = __m512;
static constexpr int kLanes = 16;
static const char* kIsa = "avx512";
static inline vec vset(float x) { return _mm512_set1_ps(x); }
static inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline float vsum(vec a) { return _mm512_reduce_add_ps(a); }
#elif defined(__FMA__)
using vec = __m256;
static constexpr int kLanes = 8;
static const char* kIsa = "avx2+fma";
static inline vec vset(float x) { return _mm256_set1_ps(x); }
static inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline float vsum(vec a) {
  alignas(32) float t[8];
  _mm256_store_ps(t, a);
  float s = 0;
  for (float x : t) s += x;
  return s;
}
#else
#error "peak_fma needs FMA (compile with -march=native on an FMA-capable x86 CPU)"
#endif

// More chains than latency (4) x FMA pipes (2) keeps every pipe busy, and all of them (with the
// two constants) must stay in registers: AVX2 has 16 (16 chains spilled, and measured half the
// peak on a Zen 3 whose GEMM ran at 155% of it), AVX-512 32.
#if defined(__AVX512F__)
static constexpr int kChains = 16;
#else
static constexpr int kChains = 12;
#endif

// Returns a value depending on every chain so the compiler keeps them all.
__attribute__((noinline)) static float kernel(long iters, float seed) {
  vec acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = vset(seed + 0.001f * i);
  const vec m = vset(0.999999f), a = vset(1e-6f);  // acc -> acc*m + a: bounded, no denormals
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = vfma(acc[i], m, a);
  }
  float s = 0;
  for (int i = 0; i < kChains; ++i) s += vsum(acc[i]);
  return s;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, atoi(argv[1])) : 1;
  const double seconds = argc > 2 ? atof(argv[2]) : 0.3;
  const long iters = 20'000'000;  // per thread per trial: 20M x 16 chains x lanes x 2 flop
  std::vector<float> sink(threads);
  double best = 0;
  auto t_end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int trials = 0;
  do {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        sink[t] = kernel(iters, 1.0f + t);
      });
    while (ready.load() != threads) {
    }
    auto t0 = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double flops = 2.0 * kLanes * kChains * double(iters) * threads;
    best = std::max(best, flops / dt * 1e-9);
    ++trials;
  } while (std::chrono::steady_clock::now() < t_end || trials < 3);
  float s = 0;
  for (float x : sink) s += x;
  printf("{\"threads\": %d, \"gflops\": %.2f, \"isa\": \"%s\", \"checksum\": %g}\n", threads, best,
         kIsa, double(s));
  return 0;
}
