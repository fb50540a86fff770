// Per-op overhead: a one-element float32 `a * b` in a loop, without and with recording.
//
//   bench_overhead [iterations]     default 200,000
// Reports the fastest of 15 timed loops (the machines are shared: the fastest loop is the one
// nothing preempted), in microseconds per op.
#include <cstdio>
#include <cstdlib>

#include "bench_util.h"
#include "vkml/vkml.h"

using namespace vk;
using vk::bench::keep;
using vk::bench::min_seconds;

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 200000;
  Tensor a = full({1}, 1.5), b = full({1}, 2.0);
  Tensor ag = full({1}, 1.5).set_requires_grad(true);
  Tensor s = full({}, 1.5), big = full({16}, 1.5);
  auto per_op = [&](const char* name, auto body) {
    double sec = min_seconds([&] {
      for (int i = 0; i < iters; ++i) keep(body().impl());
    });
    std::printf("  %-34s %7.3f us/op\n", name, sec / iters * 1e6);
  };
  {
    NoGradGuard ng;
    per_op("a * b   [1]     no grad mode", [&] { return a * b; });
  }
  per_op("a * b   [1]     grad mode, no grad", [&] { return a * b; });
  per_op("a * b   [1]     records (a requires grad)", [&] { return ag * b; });
  per_op("a * 2.0 [1]     (scalar operand)", [&] { return a * 2.0; });
  per_op("a * s   [1] x []  (broadcast)", [&] { return a * s; });
  per_op("exp(a)  [1]", [&] { return exp(a); });
  per_op("a + b   [16]", [&] { return big + big; });
  return 0;
}
