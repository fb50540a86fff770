// The Vulkan backend (issue #14) on this machine's Vulkan device (lavapipe in CI); the fixture
// (vulkan_fixture.h) skips or fails without one.
#include <cmath>
#include <limits>

#include "vulkan_fixture.h"

namespace vk {
namespace {

using test::f32;
using test::host;
using test::kVulkan;
using test::values;
using Vulkan = test::VulkanTest;

TEST_F(Vulkan, MovesKeepEveryBit) {
  const Tensor x = f32({1.5, -2.25, 3e-8, 1e30, -0.0, 7}, {2, 3});
  const Tensor on = to_device(x, kVulkan);
  EXPECT_EQ(on.device(), kVulkan);
  EXPECT_EQ(on.dtype(), DType::Float32);
  const Tensor back = to_cpu(on);
  EXPECT_EQ(std::memcmp(back.data<float>(), x.data<float>(), 6 * sizeof(float)), 0);
  // A view moves as its elements in order; int64 bytes move too (no kernel needed).
  EXPECT_EQ(host(to_device(transpose(x, 0, 1), kVulkan)), to_vector(transpose(x, 0, 1)));
  const Tensor i = to_device(arange(0, 5), kVulkan);
  EXPECT_EQ(host(i), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(reshape(slice(on, 1, 1, 2), {2}).device(), kVulkan);  // views stay on the device
  EXPECT_EQ(to_device(f32({-2.25}, {}), kVulkan).item(), -2.25);  // item() reads through a copy
}

TEST_F(Vulkan, ArithmeticMatchesTheCpuBitForBit) {
  const Tensor a = f32({1.5, -2.25, 3.125, 0.5, 8, -1}, {2, 3});
  const Tensor b = f32({0.75, -4, 2.5}, {3});  // broadcast along rows
  const Tensor da = to_device(a, kVulkan), db = to_device(b, kVulkan);
  EXPECT_EQ(host(da + db), to_vector(a + b));
  EXPECT_EQ(host(da - db), to_vector(a - b));
  EXPECT_EQ(host(da * db), to_vector(a * b));
  EXPECT_EQ(host(-da), to_vector(-a));
  EXPECT_EQ(host(transpose(da, 0, 1) * 3.0), to_vector(transpose(a, 0, 1) * 3.0));
  EXPECT_EQ(host(slice(da, 1, 0, 3, 2) + 1.0), to_vector(slice(a, 1, 0, 3, 2) + 1.0));
  test::expect_values(to_cpu(da / db), to_vector(a / b), 1e-6);
}

// Within a few ulp of the CPU's (GLSL's builtins on lavapipe), special values exactly.
TEST_F(Vulkan, UnaryMathMatchesTheCpu) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Tensor x = f32({-100, -3.5, -1, -0.0, 0, 1e-3, 0.5, 2, 9.5, 100, inf, -inf, nan}, {13});
  const Tensor pos = f32({1e-30, 1e-3, 0.5, 1, 2, 10, 1e10, 0, inf, -1, nan}, {11});
  const Tensor dx = to_device(x, kVulkan), dpos = to_device(pos, kVulkan);
  auto same = [](const Tensor& got, const Tensor& want, const char* op) {
    const std::vector<double> g = host(got), w = to_vector(want);
    ASSERT_EQ(g.size(), w.size()) << op;
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(w[i]) || std::isinf(w[i])) {
        EXPECT_TRUE(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i])
            << op << " element " << i << ": " << g[i] << " vs the cpu's " << w[i];
        continue;
      }
      EXPECT_NEAR(g[i], w[i], 4e-7 * std::abs(w[i]) + 1e-7) << op << " element " << i;
    }
  };
  same(exp(dx), exp(x), "exp");
  same(tanh(dx), tanh(x), "tanh");
  same(sigmoid(dx), sigmoid(x), "sigmoid");
  same(abs(dx), abs(x), "abs");
  same(sign(dx), sign(x), "sign");
  same(sin(slice(dx, 0, 1, 9)), sin(slice(x, 0, 1, 9)), "sin");  // |x| < 10: no range reduction
  same(cos(slice(dx, 0, 1, 9)), cos(slice(x, 0, 1, 9)), "cos");
  same(log(dpos), log(pos), "log");
  same(sqrt(dpos), sqrt(pos), "sqrt");
  same(rsqrt(dpos), rsqrt(pos), "rsqrt");
  same(reciprocal(dpos), reciprocal(pos), "reciprocal");
}

TEST_F(Vulkan, UnaryGradientsRunOnTheDevice) {
  const std::vector<double> v{-1.5, -0.25, 0.5, 2};
  auto f = [](const Tensor& x) {
    const Tensor p = x * x + 1.0;
    return exp(x) + sin(x) * cos(x) + tanh(x) + sigmoid(x) + abs(x) + sqrt(p) + rsqrt(p) + log(p) +
           reciprocal(p);
  };
  Tensor xc = f32(v, {4}), xd = to_device(f32(v, {4}), kVulkan);
  xc.set_requires_grad(true);
  xd.set_requires_grad(true);
  autograd::backward(sum(f(xc)));
  autograd::backward(sum(to_cpu(f(xd))));
  EXPECT_EQ(xd.grad().device(), kVulkan);
  test::expect_values(to_cpu(xd.grad()), to_vector(xc.grad()), 1e-5);
}

TEST_F(Vulkan, SumAndMeanMatchTheCpu) {
  std::vector<double> v(60);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7 * static_cast<double>(i)) * 3;
  const Tensor x = f32(v, {3, 4, 5}), dx = to_device(x, kVulkan);
  auto close = [](const Tensor& got, const Tensor& want) {
    EXPECT_EQ(got.device(), kVulkan);
    EXPECT_EQ(got.shape(), want.shape());
    test::expect_values(to_cpu(got), to_vector(want), 2e-6);
  };
  close(sum(dx), sum(x));
  close(sum(dx, {1}), sum(x, {1}));
  close(sum(dx, {0, 2}, true), sum(x, {0, 2}, true));
  close(mean(dx, {2}), mean(x, {2}));
  close(mean(transpose(dx, 0, 2), {0}), mean(transpose(x, 0, 2), {0}));  // strided input
  close(sum(slice(dx, 1, 1, 4, 2), {1, 2}), sum(slice(x, 1, 1, 4, 2), {1, 2}));
  // A long sum stays close to the CPU's double accumulation (compensated in float32).
  const Tensor ones_ = full({1 << 18}, 0.1, DType::Float32);
  close(sum(to_device(ones_, kVulkan)), sum(ones_));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(host(sum(to_device(f32({1, inf, 2}, {3}), kVulkan)))[0], inf);
  EXPECT_TRUE(std::isnan(host(mean(to_device(zeros({0}, DType::Float32), kVulkan)))[0]));
  EXPECT_EQ(host(sum(to_device(zeros({0}, DType::Float32), kVulkan)))[0], 0.0);
}

TEST_F(Vulkan, ALossAndItsGradientsOnTheDevice) {
  // mean((x * w - y)^2): forward and backward on the device, as on the CPU.
  const Tensor x = f32({0.5, -1, 2, 1.5, -0.25, 3}, {3, 2}), y = f32({1, 0, -1}, {3, 1});
  auto run = [&](Device d) {
    Tensor w = to_device(f32({0.3, -0.7}, {2}), d);
    w.set_requires_grad(true);
    const Tensor r = sum(to_device(x, d) * w, {1}, true) - to_device(y, d);
    const Tensor loss = mean(r * r);
    EXPECT_EQ(loss.device(), d);
    autograd::backward(loss);
    EXPECT_EQ(w.grad().device(), d);
    return std::pair{to_cpu(loss).item(), to_vector(to_cpu(w.grad()))};
  };
  const auto [cpu_loss, cpu_grad] = run(kCPU);
  const auto [vk_loss, vk_grad] = run(kVulkan);
  EXPECT_NEAR(vk_loss, cpu_loss, 1e-6 * std::abs(cpu_loss));
  ASSERT_EQ(vk_grad.size(), cpu_grad.size());
  for (size_t i = 0; i < vk_grad.size(); ++i) EXPECT_NEAR(vk_grad[i], cpu_grad[i], 1e-6);
}

TEST_F(Vulkan, CreationAndShapesOnTheDevice) {
  const Tensor z = zeros({2, 3}, DType::Float32, kVulkan);
  EXPECT_EQ(z.device(), kVulkan);
  EXPECT_EQ(host(z), std::vector<double>(6, 0.0));
  EXPECT_EQ(host(full({4}, 2.5, DType::Float32, kVulkan)), std::vector<double>(4, 2.5));
  const Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor d = to_device(a, kVulkan);
  EXPECT_EQ(host(reshape(d, {3, 2})), to_vector(reshape(a, {3, 2})));
  EXPECT_EQ(host(contiguous(transpose(d, 0, 1))), to_vector(contiguous(transpose(a, 0, 1))));
  EXPECT_EQ(host(reshape(transpose(d, 0, 1), {6})), to_vector(reshape(transpose(a, 0, 1), {6})));
  EXPECT_EQ(host(expand(slice(d, 0, 0, 1), {3, 3})), to_vector(expand(slice(a, 0, 0, 1), {3, 3})));
}

TEST_F(Vulkan, BackwardRunsOnTheDeviceAndAccumulatesThere) {
  Tensor x = to_device(f32({1, -2, 3}, {3}), kVulkan);
  x.set_requires_grad(true);
  for (int step = 0; step < 2; ++step)  // the second backward accumulates into x.grad in place
    autograd::backward(sum(to_cpu(x * x + x * 2.0)));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().device(), kVulkan);
  EXPECT_EQ(host(x.grad()), (std::vector<double>{8, -4, 16}));  // 2 * (2x + 2)
}

TEST_F(Vulkan, EveryDtypeIsMadeAndComputedThere) {
  // full makes every dtype (the value's bytes, written by the device)
  EXPECT_EQ(host(full({2}, 2.5, DType::Float64, kVulkan)), (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(host(full({3}, -7, DType::Int64, kVulkan)), (std::vector<double>{-7, -7, -7}));
  EXPECT_EQ(host(full({3}, true, DType::Bool, kVulkan)), (std::vector<double>{1, 1, 1}));
  // integer matrix products too (vkgaps; int32 everywhere, int64 with shaderInt64)
  const Tensor i = to_device(cast(reshape(arange(0, 4), {2, 2}), DType::Int32), kVulkan);
  EXPECT_EQ(host(matmul(i, i)), (std::vector<double>{2, 3, 6, 11}));
}

TEST_F(Vulkan, AnOpWithoutAVulkanKernelIsNotImplementedNamingIt) {
  const Tensor x = to_device(f32({1, 2}, {2}), kVulkan);
  // Every op gets a Vulkan kernel in time: this one's is taken away for the test.
  const Kernel kept = find_kernel(DeviceType::Vulkan, OpKind::Matmul);
  register_kernel(DeviceType::Vulkan, OpKind::Matmul, nullptr);
  VK_EXPECT_ERROR(matmul(reshape(x, {1, 2}), reshape(x, {2, 1})), NotImplementedError, "matmul",
                  "vulkan:0");
  register_kernel(DeviceType::Vulkan, OpKind::Matmul, kept);
  VK_EXPECT_ERROR(x.data<float>(), DeviceError, "vulkan:0", ".cpu()");
}

TEST_F(Vulkan, ManyWorkgroupsAndEmptyTensors) {
  // More workgroups than one dimension of a dispatch may hold on some devices (65535 x 256).
  const int64_t n = int64_t{1} << 20;
  const Tensor x = to_device(full({n}, 1.0, DType::Float32), kVulkan);
  const Tensor y = x + x;
  EXPECT_EQ(y.numel(), n);
  const std::vector<double> v = host(y);
  EXPECT_EQ(v.front(), 2.0);
  EXPECT_EQ(v.back(), 2.0);
  const Tensor e = to_device(zeros({0, 3}, DType::Float32), kVulkan);
  EXPECT_EQ((e + e).numel(), 0);
}

}  // namespace
}  // namespace vk
