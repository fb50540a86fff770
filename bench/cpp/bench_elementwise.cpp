// Element-wise throughput on 16M float32 (64 MiB per tensor), against a STREAM-triad figure
// measured with a plain C++ loop on the same machine.
//
//   bench_elementwise [threads...]      default: 1 2
//
// For each thread count: the triad a[i] = b[i] + s * c[i] (12 bytes moved per element, as STREAM
// counts them), then vkml ops. Binary ops move 12 bytes per element, unary ones 8.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "vkml/vkml.h"

using namespace vk;
using vk::bench::keep;
using vk::bench::median_seconds;

namespace {

constexpr int64_t kN = int64_t{1} << 24;

// STREAM triad over `threads` std::threads, each on one contiguous slice.
double triad_gbs(int threads) {
  std::vector<float> a(kN), b(kN, 1.0f), c(kN, 2.0f);
  const float s = 3.0f;
  auto run = [&] {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        int64_t lo = kN * t / threads, hi = kN * (t + 1) / threads;
        float* __restrict pa = a.data();
        const float* __restrict pb = b.data();
        const float* __restrict pc = c.data();
        for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
      });
    for (auto& t : ts) t.join();
    keep(a[kN / 2]);
  };
  double sec = median_seconds(run);
  return 12.0 * kN / sec / 1e9;
}

void report(const char* name, double sec, double bytes_per_elem, double triad) {
  double gbs = bytes_per_elem * kN / sec / 1e9;
  std::printf("  %-22s %8.2f ms  %6.3f ns/elem  %6.1f GB/s  (%3.0f%% of triad)\n", name, sec * 1e3,
              sec / kN * 1e9, gbs, 100.0 * gbs / triad);
}

template <class F>
void op(const char* name, double bytes, double triad, F f) {
  report(name, median_seconds([&] { keep(f().impl()); }), bytes, triad);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1, 2};
  manual_seed(0);
  Tensor x = randn({kN}), y = randn({kN}), pos = rand({kN}) + 0.5;
  Tensor x2 = reshape(x, {4096, 4096}), y2 = reshape(y, {4096, 4096});
  Tensor col = randn({4096, 1}), row = randn({1, 4096});
  Tensor xd = randn({kN}, DType::Float64);
  for (int t : threads) {
    cpu::set_num_threads(t);
    double tri = triad_gbs(t);
    std::printf("threads=%d  triad %.1f GB/s\n", t, tri);
    op("add", 12, tri, [&] { return x + y; });
    op("mul", 12, tri, [&] { return x * y; });
    op("mul scalar", 8, tri, [&] { return x * 0.5; });
    op("add column bcast", 8, tri, [&] { return x2 + col; });
    op("add row bcast", 8, tri, [&] { return x2 + row; });
    op("add transposed", 12, tri, [&] { return transpose(x2, 0, 1) + y2; });
    op("copy transposed", 8, tri, [&] { return contiguous(transpose(x2, 0, 1)); });
    op("exp", 8, tri, [&] { return exp(x); });
    op("log", 8, tri, [&] { return log(pos); });
    op("tanh", 8, tri, [&] { return tanh(x); });
    op("sigmoid", 8, tri, [&] { return sigmoid(x); });
    op("erf", 8, tri, [&] { return erf(x); });
    op("gelu (erf)", 8, tri, [&] { return gelu(x); });
    op("gelu (tanh)", 8, tri, [&] { return gelu(x, true); });
    op("exp float64", 16, tri, [&] { return exp(xd); });
    op("gelu float64", 16, tri, [&] { return gelu(xd); });
  }
  return 0;
}
