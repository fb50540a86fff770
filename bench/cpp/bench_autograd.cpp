// Autograd engine cost on a long chain of scalar adds: build (record), backward, free.
//
//   bench_autograd [nodes]     default 10,000
// Reports microseconds per node for each phase; the forward figure includes the op itself.
#include <cstdio>
#include <cstdlib>

#include "bench_util.h"
#include "vkml/vkml.h"

using namespace vk;
using vk::bench::median_seconds;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  Tensor one = full({}, 1.0);
  double build = 0, back = 0, free_ = 0, back_acc = 0;
  const int reps = 9;
  std::vector<double> tb, tk, tf;
  for (int r = 0; r < reps + 1; ++r) {
    Tensor x = full({}, 0.5).set_requires_grad(true);
    auto t0 = std::chrono::steady_clock::now();
    Tensor y = x;
    for (int i = 0; i < n; ++i) y = y + one;
    auto t1 = std::chrono::steady_clock::now();
    autograd::backward(y);
    auto t2 = std::chrono::steady_clock::now();
    y = Tensor();
    auto t3 = std::chrono::steady_clock::now();
    if (r == 0) continue;  // warm-up
    tb.push_back(std::chrono::duration<double>(t1 - t0).count());
    tk.push_back(std::chrono::duration<double>(t2 - t1).count());
    tf.push_back(std::chrono::duration<double>(t3 - t2).count());
    if (x.grad().item() != 1.0) std::printf("wrong gradient %g\n", x.grad().item());
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  build = med(tb), back = med(tk), free_ = med(tf);
  std::printf("chain of %d scalar adds (float32)\n", n);
  std::printf("  build (forward + record)  %7.3f us/node\n", build / n * 1e6);
  std::printf("  backward                  %7.3f us/node\n", back / n * 1e6);
  std::printf("  free                      %7.3f us/node\n", free_ / n * 1e6);

  // Gradient accumulation into an existing .grad: many small backward calls on one leaf.
  Tensor w = randn({1024}).set_requires_grad(true);
  back_acc = median_seconds(
      [&] {
        for (int i = 0; i < 1000; ++i) autograd::backward(sum(w * 2.0));
      },
      5);
  std::printf("  backward(sum(w * 2)) w[1024], .grad accumulating: %7.3f us/call\n",
              back_acc / 1000 * 1e6);
  return 0;
}
