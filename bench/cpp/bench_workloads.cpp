// The kernel-heavy workloads of bench/compare.py, in C++, for profilers (perf, callgrind) that
// need the library's symbols. Built against a library build, e.g.
//   g++ -std=c++20 -O3 -march=native -g -Isrc bench/cpp/bench_workloads.cpp build/libvkml.a
//       -lopenblas -lpthread -o bench_workloads
//
//   bench_workloads KIND [iters] [threads] [wall]     KIND: conv_large conv_small gelu exp mlp cnn
//
// conv_*: F.conv2d(x, w, b, padding=1).backward(g), as compare.py's conv.large / conv.small;
// gelu / exp: the op on 16M float32; mlp: one SGD step of train.mlp's model (64-256-256-10, batch
// 64, momentum 0.9, weight decay 1e-4); cnn: one Adam step of train.cnn's model. Prints the median
// process CPU time per call.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/vkml.h"

using namespace vk;

namespace {

// Median process CPU time of one call: on a machine shared with other work, the time the call
// actually ran, without the time it waited for a core (one thread; with more it sums them).
bool g_wall = false;  // report wall time instead (a fourth argument "wall")

template <class F>
double median_cpu_seconds(F&& fn, int reps) {
  if (g_wall) return bench::median_seconds(fn, reps);
  fn();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    timespec a{}, b{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    fn();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    t.push_back(static_cast<double>(b.tv_sec - a.tv_sec) +
                1e-9 * static_cast<double>(b.tv_nsec - a.tv_nsec));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_workloads KIND [iters] [threads]\n");
    return 1;
  }
  const std::string kind = argv[1];
  const int iters = argc > 2 ? std::atoi(argv[2]) : 10;
  if (argc > 3) cpu::set_num_threads(std::atoi(argv[3]));
  g_wall = argc > 4 && std::strcmp(argv[4], "wall") == 0;
  double s = 0;
  if (kind == "conv_large" || kind == "conv_small") {
    const bool large = kind == "conv_large";
    const int64_t n = large ? 32 : 64, cin = large ? 32 : 1, hw = large ? 28 : 8,
                  cout = large ? 64 : 16;
    Tensor x = randn({n, cin, hw, hw});
    if (large) x.set_requires_grad(true);
    Tensor w = (randn({cout, cin, 3, 3}) * 0.1).set_requires_grad(true);
    Tensor b = zeros({cout}).set_requires_grad(true);
    Tensor g = randn({n, cout, hw, hw});
    s = median_cpu_seconds(
        [&] {
          x.set_grad(Tensor());
          w.set_grad(Tensor());
          b.set_grad(Tensor());
          autograd::backward(nn::functional::conv2d(x, w, b, {1, 1}, {1, 1}), g);
        },
        iters);
  } else if (kind == "gelu" || kind == "exp") {
    Tensor a = randn({int64_t{1} << 24});
    s = median_cpu_seconds(
        [&] {
          Tensor r = kind == "gelu" ? nn::functional::gelu(a) : exp(a);
          bench::keep(r.impl());
        },
        iters);
  } else if (kind == "mlp") {
    const int64_t sizes[] = {64, 256, 256, 10};
    std::vector<Tensor> params, bufs;
    for (int l = 0; l < 3; ++l) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(sizes[l]));
      params.push_back(
          ((rand({sizes[l + 1], sizes[l]}) * 2.0 - 1.0) * bound).set_requires_grad(true));
      params.push_back(((rand({sizes[l + 1]}) * 2.0 - 1.0) * bound).set_requires_grad(true));
    }
    bufs.resize(params.size());
    std::vector<std::pair<Tensor, Tensor>> batches;
    for (int i = 0; i < 8; ++i) batches.emplace_back(rand({64, 64}), randint(0, 10, {64}));
    int step = 0;
    s = median_cpu_seconds(
        [&] {
          for (int rep = 0; rep < 100; ++rep) {
            const auto& [x, y] = batches[step++ % batches.size()];
            Tensor h = x;
            for (int l = 0; l < 3; ++l) {
              h = nn::functional::linear(h, params[2 * l], params[2 * l + 1]);
              if (l < 2) h = nn::functional::relu(h);
            }
            Tensor loss = nn::functional::cross_entropy(h, y);
            for (Tensor& p : params) p.set_grad(Tensor());
            autograd::backward(loss);
            NoGradGuard ng;
            for (size_t k = 0; k < params.size(); ++k)
              bufs[k] = optim::sgd_step_(params[k], params[k].grad(), bufs[k], 0.05, 0.9, 0.0,
                                         false, 1e-4);
          }
        },
        iters);
    s /= 100;
  } else if (kind == "cnn") {
    namespace F = nn::functional;
    // conv(1->32) BN ReLU maxpool conv(32->64) BN ReLU flatten linear(1024->10), Adam, batch 64
    std::vector<Tensor> params = {(randn({32, 1, 3, 3}) * 0.3).set_requires_grad(true),
                                  zeros({32}).set_requires_grad(true),
                                  ones({32}).set_requires_grad(true),
                                  zeros({32}).set_requires_grad(true),
                                  (randn({64, 32, 3, 3}) * 0.06).set_requires_grad(true),
                                  zeros({64}).set_requires_grad(true),
                                  ones({64}).set_requires_grad(true),
                                  zeros({64}).set_requires_grad(true),
                                  (randn({10, 1024}) * 0.03).set_requires_grad(true),
                                  zeros({10}).set_requires_grad(true)};
    Tensor rm1 = zeros({32}), rv1 = ones({32}), rm2 = zeros({64}), rv2 = ones({64});
    std::vector<Tensor> m, v;
    for (const Tensor& p : params) {
      m.push_back(zeros(p.shape()));
      v.push_back(zeros(p.shape()));
    }
    std::vector<std::pair<Tensor, Tensor>> batches;
    for (int i = 0; i < 8; ++i) batches.emplace_back(rand({64, 1, 8, 8}), randint(0, 10, {64}));
    int step = 0;
    s = median_cpu_seconds(
        [&] {
          for (int rep = 0; rep < 10; ++rep) {
            const auto& [x, y] = batches[step++ % batches.size()];
            Tensor h = F::conv2d(x, params[0], params[1], {1, 1}, {1, 1});
            h = F::relu(F::batch_norm(h, rm1, rv1, params[2], params[3], true));
            h = F::max_pool2d(h, {2, 2});
            h = F::conv2d(h, params[4], params[5], {1, 1}, {1, 1});
            h = F::relu(F::batch_norm(h, rm2, rv2, params[6], params[7], true));
            h = F::linear(reshape(h, {64, -1}), params[8], params[9]);
            Tensor loss = F::cross_entropy(h, y);
            for (Tensor& p : params) p.set_grad(Tensor());
            autograd::backward(loss);
            NoGradGuard ng;
            for (size_t k = 0; k < params.size(); ++k)
              optim::adam_step_(params[k], params[k].grad(), m[k], v[k], step, 2e-3);
          }
        },
        iters);
    s /= 10;
  } else {
    std::fprintf(stderr, "unknown kind %s\n", kind.c_str());
    return 1;
  }
  std::printf("%s: %.3f ms %s per call\n", kind.c_str(), s * 1e3,
              g_wall ? "wall time" : "CPU time");
  return 0;
}
