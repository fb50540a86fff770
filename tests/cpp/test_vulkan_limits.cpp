// vkfix: sizes the Vulkan backend once refused with a SizeError (issue 14 (c)), each crossing the
// old limit once and compared with the CPU: scans (cumsum, cumprod, cummax, cummin) along rows
// past the 60,000 elements one pass walks; causal softmax rows past 2^20; layer_norm rows and
// batch_norm channels past 2^20 values (forward, backward and parameter gradients).
#include <cmath>
#include <string>
#include <vector>

#include "vulkan_fixture.h"

namespace vk {
namespace {

using test::host;
using test::ints;
using test::kVulkan;
using Vulkan = test::VulkanTest;

// got equals want exactly (NaNs alike), element by element.
void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = host(got), w = to_vector(want);
  size_t bad = 0;
  for (size_t i = 0; i < w.size() && bad < 5; ++i)
    if (!(g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]))))
      ADD_FAILURE() << what << " [" << i << "]: " << g[i] << " != " << w[i] << " (" << ++bad << ")";
}

// Regression (scans past 60,000 elements per row were a SizeError on Vulkan): three passes over
// rows of 130,001, carried on exactly, along the last dim and along dim 0 (rows `inner` apart).
TEST_F(Vulkan, ScansPastOnePassPerRowEqualTheCpu) {
  constexpr int64_t kLong = 130001;
  std::vector<double> v(2 * kLong);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7919) % 13) - 6.0;
  const Tensor wide = cast(ints(v, {2, kLong}), DType::Int32);
  const Tensor tall = cast(ints(v, {kLong, 2}), DType::Int32);
  for (const auto& [x, dim] : {std::pair{wide, int64_t{1}}, std::pair{tall, int64_t{0}}}) {
    const std::string what = shape_str(x.shape());
    const Tensor dx = to_device(x, kVulkan);
    expect_same(cumsum(dx, dim), cumsum(x, dim), what + " cumsum");
    const ValuesIndices want = cummax(x, dim), got = cummax(dx, dim);
    expect_same(got.values, want.values, what + " cummax");
    expect_same(got.indices, want.indices, what + " cummax indices");
    const ValuesIndices want_min = cummin(x, dim), got_min = cummin(dx, dim);
    expect_same(got_min.values, want_min.values, what + " cummin");
    expect_same(got_min.indices, want_min.indices, what + " cummin indices");
  }
  // cumprod of values near 1 (float64: the same sequence of products as the CPU's).
  if (test::device_has_float64()) {
    std::vector<double> f(kLong);
    for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0 + (static_cast<double>(i % 11) - 5.0) * 1e-6;
    const Tensor x = cast(test::values(f, {kLong}, false), DType::Float64);
    expect_same(cumprod(to_device(x, kVulkan), 0), cumprod(x, 0), "float64 cumprod");
  }
}

// Regression (a causal softmax over rows past 2^20 keys was a SizeError on Vulkan): the masked
// keys are -inf before the passes, so row q keeps its first q + 1 keys; the scale before the mask.
TEST_F(Vulkan, CausalSoftmaxRowsPastOnePassEqualTheCpu) {
  constexpr int64_t kKeys = (int64_t{1} << 20) + 3;
  const Shape shape{1, 3, kKeys};
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7919) % 17) * 0.25 - 2.0;
  v[5] = 40.0;  // in row 0's hidden keys: must not count
  const Tensor x = cast(test::values(v, shape, false), DType::Float32);
  const Tensor want = softmax(x, -1, 0.5, true);
  const Tensor got = to_cpu(softmax(to_device(x, kVulkan), -1, 0.5, true));
  const std::vector<double> g = to_vector(got), w = to_vector(want);
  ASSERT_EQ(g.size(), w.size());
  size_t bad = 0;
  for (size_t i = 0; i < w.size() && bad < 5; ++i)
    if (std::abs(g[i] - w[i]) > 1e-6 * std::max(1.0, std::abs(w[i])))
      ADD_FAILURE() << "[" << i << "]: " << g[i] << " != " << w[i] << " (" << ++bad << ")";
  EXPECT_EQ(g[0], 1.0);  // row 0 sees key 0 only
}

// Distinct float32 values of `shape` in [-2, 2) plus `shift` (a mean away from 0).
Tensor wavy(const Shape& shape, double seed, double shift) {
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(seed + 0.37 * static_cast<double>(i)) * 2.0 + shift;
  return cast(test::values(v, shape, false), DType::Float32);
}

// Regression (layer_norm rows past 2^20 values were a SizeError on Vulkan): rows of 2^20 + 3 in
// passes, forward, backward and the weight and bias gradients, against the CPU.
TEST_F(Vulkan, LayerNormRowsPastOnePassEqualTheCpu) {
  constexpr int64_t kRow = (int64_t{1} << 20) + 3;
  const Tensor x = wavy({2, kRow}, 1.0, 0.5), g = wavy({2, kRow}, 2.0, 0.0);
  const Tensor w = wavy({kRow}, 3.0, 1.0), b = wavy({kRow}, 4.0, 0.0);
  const Tensor dxv = test::dev(x), dg = test::dev(g), dw = test::dev(w), db = test::dev(b);
  test::expect_close(layer_norm(dxv, {kRow}, dw, db, 1e-5), layer_norm(x, {kRow}, w, b, 1e-5), 1e-5,
                     "layer_norm");
  test::expect_close(layer_norm_backward(dg, dxv, {kRow}, dw, 1e-5),
                     layer_norm_backward(g, x, {kRow}, w, 1e-5), 1e-4, "layer_norm_backward");
  test::expect_close(layer_norm_param_grad(dg, dxv, {kRow}, 1e-5),
                     layer_norm_param_grad(g, x, {kRow}, 1e-5), 1e-4, "layer_norm_param_grad");
}

// Regression (batch_norm channels past 2^20 values were a SizeError on Vulkan): channels of
// N * S = 2^20 + 6 values, forward with its statistics, backward and parameter gradients.
TEST_F(Vulkan, BatchNormChannelsPastOnePassEqualTheCpu) {
  const Shape shape{2, 2, (int64_t{1} << 19) + 3};
  const Tensor x = wavy(shape, 5.0, -0.5), g = wavy(shape, 6.0, 0.1);
  const Tensor w = cast(ints({2, -1}, {2}), DType::Float32), b = wavy({2}, 7.0, 0.0);
  const Tensor dxv = test::dev(x), dg = test::dev(g), dw = test::dev(w), db = test::dev(b);
  const BatchNormResult want = batch_norm_with_stats(x, w, b, 1e-5);
  const BatchNormResult got = batch_norm_with_stats(dxv, dw, db, 1e-5);
  test::expect_close(got.y, want.y, 1e-5, "batch_norm");
  test::expect_close(got.stats, want.stats, 1e-5, "batch_norm stats");
  test::expect_close(batch_norm_backward(dg, dxv, dw, 1e-5), batch_norm_backward(g, x, w, 1e-5),
                     1e-4, "batch_norm_backward");
  test::expect_close(batch_norm_param_grad(dg, dxv, 1e-5), batch_norm_param_grad(g, x, 1e-5), 1e-4,
                     "batch_norm_param_grad");
}

}  // namespace
}  // namespace vk
