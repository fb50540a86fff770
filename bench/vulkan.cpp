// The Vulkan backend's speed on the machine it runs on (issue #14, item 6): one JSON line per
// workload, with the fixed ids the issue names. Built by `make bench-vulkan`; bench/gpu.sh runs it
// on a lent GPU machine (with the libraries it needs carried beside it). Torch's GPU figures for
// the same ids come from bench/compare.py on a machine where torch has that GPU (not yet run).
//
//   gemm.4096 / gemm.8192   float32 C = A B: TFLOP/s
//   copy.256M               a contiguous copy of 256M floats: GB/s (read + write)
//   eltwise.add.256M        a + b over 256M floats: GB/s (two reads, one write) and % of copy
//   overhead.add            host time per recorded op (a 1-element add), and per op when each
//                           op is waited for
//   softmax.4096 / layer_norm.4096   fused rows of 4096, 4096 rows: GB/s
//   train.mlp               one step of a 3-layer MLP (batch 1024, width 4096, Adam): ms
//
// Usage: vkml_vulkan_bench [--quick] (quick: small sizes, to check the binary on lavapipe).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "vkml/backend/vulkan/register.h"
#include "vkml/vkml.h"

namespace {

using Clock = std::chrono::steady_clock;
const vk::Device kVulkan{vk::DeviceType::Vulkan, 0};

// Median-free and simple: warm up once, then time `reps` calls between two synchronizations.
double seconds_per_call(const std::function<void()>& f, int reps) {
  f();
  vk::vulkan::synchronize();
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) f();
  vk::vulkan::synchronize();
  return std::chrono::duration<double>(Clock::now() - t0).count() / reps;
}

void report(const std::string& id, const std::string& unit, double value, double seconds,
            const std::string& extra = "") {
  std::printf("{\"workload\": \"%s\", \"%s\": %.4g, \"seconds\": %.6g%s}\n", id.c_str(),
              unit.c_str(), value, seconds, extra.c_str());
  std::fflush(stdout);
}

vk::Tensor randn_on(const vk::Shape& shape) {
  return vk::to_device(vk::randn(shape, vk::DType::Float32), kVulkan);
}

void gemm(int64_t n, int reps) {
  const vk::Tensor a = randn_on({n, n}), b = randn_on({n, n});
  const double s = seconds_per_call([&] { vk::matmul(a, b); }, reps);
  report("gemm." + std::to_string(n), "tflops", 2.0 * n * n * n / s / 1e12, s);
}

void bandwidth(int64_t n, int reps) {
  const vk::Tensor a = randn_on({n}), b = randn_on({n});
  const vk::Tensor dst = vk::Tensor::empty({n}, vk::DType::Float32, kVulkan);
  const double copy_s = seconds_per_call([&] { vk::in_place::copy(dst, a); }, reps);
  const double copy_gbs = 2.0 * 4 * n / copy_s / 1e9;
  const std::string m = std::to_string(n >> 20) + "M";
  report("copy." + m, "gbs", copy_gbs, copy_s);
  const double add_s = seconds_per_call([&] { a + b; }, reps);
  const double add_gbs = 3.0 * 4 * n / add_s / 1e9;
  char extra[64];
  std::snprintf(extra, sizeof extra, ", \"pct_of_copy\": %.1f", 100.0 * add_gbs / copy_gbs);
  report("eltwise.add." + m, "gbs", add_gbs, add_s, extra);
}

void overhead() {
  const vk::Tensor x = randn_on({1});
  const int n = 20000;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) x + x;
  const double recorded = std::chrono::duration<double>(Clock::now() - t0).count() / n;
  vk::vulkan::synchronize();
  const double waited = seconds_per_call(
      [&] {
        x + x;
        vk::vulkan::synchronize();
      },
      2000);
  char extra[64];
  std::snprintf(extra, sizeof extra, ", \"waited_us\": %.2f", waited * 1e6);
  report("overhead.add", "recorded_us", recorded * 1e6, recorded, extra);
}

void fused(int64_t rows, int64_t cols, int reps) {
  const vk::Tensor x = randn_on({rows, cols});
  const vk::Tensor w = randn_on({cols}), b = randn_on({cols});
  const double bytes = 2.0 * 4 * rows * cols;
  const double s1 = seconds_per_call([&] { vk::softmax(x, -1); }, reps);
  report("softmax." + std::to_string(cols), "gbs", bytes / s1 / 1e9, s1);
  const double s2 = seconds_per_call([&] { vk::layer_norm(x, {cols}, w, b, 1e-5); }, reps);
  report("layer_norm." + std::to_string(cols), "gbs", bytes / s2 / 1e9, s2);
}

void train_mlp(int64_t batch, int64_t width, int reps) {
  vk::manual_seed(0);
  std::vector<vk::Tensor> params;
  for (int64_t in : {width, width, width}) {
    params.push_back(randn_on({width, in}) * (1.0 / std::sqrt(static_cast<double>(in))));
    params.push_back(vk::to_device(vk::zeros({width}), kVulkan));
  }
  for (auto& p : params) p = p.detach().set_requires_grad(true);
  std::vector<vk::Tensor> m, v;
  for (const auto& p : params) {
    m.push_back(vk::zeros_like(p));
    v.push_back(vk::zeros_like(p));
  }
  const vk::Tensor x = randn_on({batch, width});
  const vk::Tensor y = vk::to_device(vk::randint(0, width, {batch}), kVulkan);
  int64_t step = 0;
  const double s = seconds_per_call(
      [&] {
        vk::Tensor h = x;
        for (size_t l = 0; l < params.size(); l += 2) {
          h = vk::addmm(params[l + 1], h, vk::transpose(params[l], 0, 1));
          if (l + 2 < params.size()) h = vk::relu(h);
        }
        vk::Tensor loss = vk::nn::functional::cross_entropy(h, y);
        std::vector<vk::Tensor> g = vk::autograd::grad({loss}, params);
        ++step;
        for (size_t i = 0; i < params.size(); ++i)
          vk::optim::adam_step_(params[i], g[i], m[i], v[i], step, 1e-3);
      },
      reps);
  report("train.mlp", "ms", s * 1e3, s);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::printf("{\"device\": \"%s\"}\n", vk::vulkan::device_name().c_str());
  if (quick) {
    gemm(256, 2);
    bandwidth(int64_t{1} << 20, 3);
    overhead();
    fused(256, 256, 3);
    train_mlp(64, 256, 2);
    return 0;
  }
  gemm(4096, 10);
  gemm(8192, 3);
  bandwidth(int64_t{256} << 20, 10);
  overhead();
  fused(4096, 4096, 20);
  train_mlp(1024, 4096, 10);
  return 0;
}
