// Autograd engine cost on a long chain of scalar adds: build (record), free, backward.
//
//   bench_autograd [nodes]     default 10,000
// Medians of 9 runs, in microseconds per node. "build" includes the op itself; "free" drops a
// chain that was never differentiated; "backward" includes releasing the graph it walked
// (retain_graph=false), as a training step does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_util.h"
#include "vkml/vkml.h"

using namespace vk;
using vk::bench::median_seconds;

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Tensor chain(const Tensor& x, const Tensor& one, int n) {
  Tensor y = x;
  for (int i = 0; i < n; ++i) y = y + one;
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  const Tensor one = full({}, 1.0);
  std::vector<double> build, free_, back;
  for (int r = 0; r < 10; ++r) {
    Tensor x = full({}, 0.5).set_requires_grad(true);
    auto t0 = Clock::now();
    Tensor y = chain(x, one, n);
    auto t1 = Clock::now();
    y = Tensor();
    auto t2 = Clock::now();
    y = chain(x, one, n);
    auto t3 = Clock::now();
    autograd::backward(y);
    auto t4 = Clock::now();
    if (x.grad().item() != 1.0) std::printf("wrong gradient %g\n", x.grad().item());
    if (r == 0) continue;  // warm-up
    build.push_back(seconds(t0, t1));
    free_.push_back(seconds(t1, t2));
    back.push_back(seconds(t3, t4));
  }
  std::printf("chain of %d scalar adds (float32)\n", n);
  std::printf("  build (forward + record)  %7.3f us/node\n", median(build) / n * 1e6);
  std::printf("  free (never differentiated) %5.3f us/node\n", median(free_) / n * 1e6);
  std::printf("  backward (and release)    %7.3f us/node\n", median(back) / n * 1e6);

  // Many small backward calls on one leaf: .grad accumulates (in place when only it is held).
  Tensor w = randn({1024}).set_requires_grad(true);
  const double acc = median_seconds(
      [&] {
        for (int i = 0; i < 1000; ++i) autograd::backward(sum(w * 2.0));
      },
      5);
  std::printf("  backward(sum(w * 2)), w[1024], .grad accumulating: %7.3f us/call\n",
              acc / 1000 * 1e6);
  return 0;
}
