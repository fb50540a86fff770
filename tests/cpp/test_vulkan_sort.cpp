// The sort and scan families on the Vulkan device beyond the sweep's small cases: long rows with
// many ties and NaNs (the merge passes, stability), every dtype the kernels take, bitwise equal to
// the CPU; the scans' loop bound.
#include <cmath>

#include "vulkan_fixture.h"

namespace vk::test {
namespace {

// Values with many ties (k distinct levels) and, with nans, a NaN every 37th; deterministic.
Tensor tied(const Shape& shape, int k, bool nans) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        nans && i % 37 == 5 ? std::nan("") : static_cast<double>((i * 7919) % k);
  return values(v, shape, false);
}

void expect_bitwise(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> g = host(got), w = to_vector(want);
  for (size_t i = 0; i < w.size(); ++i) {
    const bool same = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i];
    ASSERT_TRUE(same) << what << "[" << i << "]: " << g[i] << " on the device, " << w[i];
  }
}

class VulkanSort : public VulkanTest {};

TEST_F(VulkanSort, LongTiedRowsAreStableAndBitwiseTheCpus) {
  for (DType t : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
    if (t == DType::Float64 && !device_has_float64()) continue;
    if (t == DType::Int64 && !device_has_int64()) continue;
    // 3 x 1000 x 2 along the middle dim (strided rows), and one row of 5000 along the last.
    for (const auto& [shape, dim] :
         {std::pair<Shape, int64_t>{{3, 1000, 2}, 1}, std::pair<Shape, int64_t>{{1, 5000}, 1}}) {
      const Tensor x = cast(tied(shape, 50, is_floating(t)), t);
      const Tensor dx = to_device(x, kVulkan);
      for (bool descending : {false, true}) {
        const ValuesIndices want = sort(x, dim, descending, true);
        const ValuesIndices got = sort(dx, dim, descending, true);
        const std::string what = std::string(dtype_name(t)) + (descending ? " descending" : "");
        expect_bitwise(got.values, want.values, what + " values");
        expect_bitwise(got.indices, want.indices, what + " indices");
      }
      // topk: each row's first k of the same sort (the finish pass writes rows of k)
      for (int64_t k : {1, 7}) {
        const ValuesIndices want = topk(x, k, dim);
        const ValuesIndices got = topk(dx, k, dim);
        const std::string what = std::string(dtype_name(t)) + " topk " + std::to_string(k);
        expect_bitwise(got.values, want.values, what + " values");
        expect_bitwise(got.indices, want.indices, what + " indices");
      }
      for (bool is_max : {true, false}) {
        const ValuesIndices want = is_max ? cummax(x, dim) : cummin(x, dim);
        const ValuesIndices got = is_max ? cummax(dx, dim) : cummin(dx, dim);
        expect_bitwise(got.values, want.values, std::string(dtype_name(t)) + " cummax/min");
        expect_bitwise(got.indices, want.indices, std::string(dtype_name(t)) + " cummax/min idx");
      }
    }
  }
}

TEST_F(VulkanSort, IntegerScansAreExact) {
  const Tensor x = cast(ints({1, -2, 3, 4, 5, -6}, {2, 3}), DType::Int32);
  expect_bitwise(cumsum(to_device(x, kVulkan), 1), cumsum(x, 1), "cumsum int32");
  expect_bitwise(cumprod(to_device(x, kVulkan), 0), cumprod(x, 0), "cumprod int32");
  // Rows past one pass (60,000): test_vulkan_limits.cpp.
  VK_EXPECT_ERROR(sort(zeros({3}, DType::Bool, kVulkan)), DTypeError, "sort");
}

}  // namespace
}  // namespace vk::test
