// Op cases for the sort family: sort along first, middle and last dims, descending, strided,
// with ties and NaN (in a constant input, so that finite differences stay away from them), a
// row long enough for many merge passes, and the ops built on it (topk, kthvalue, median).
// Outputs are squared so that gradgradcheck goes through the rules' own ops.
#include <cmath>
#include <limits>

#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

Tensor sq(const Tensor& y) { return y * y; }
Tensor as_float(const Tensor& i) { return cast(i, DType::Float64); }

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Ties and NaN along the last dim: stable order and NaN placement show in the indices.
Tensor ties_and_nan() {
  return values({2, 1, kNaN, 1, 2, 0, 1, kNaN, 3, 3, 3, 3, -1, kNaN, -1, 0}, {2, 8}, false);
}

RegisterOpCases sort_cases({
    {OpKind::Sort, "sort/last",
     [] {
       return V{leaf({3, 5})};
     },
     [](const V& x) { return sq(sort(x[0]).values); }},
    {OpKind::Sort, "sort/dim0_descending",
     [] {
       return V{leaf({5, 3})};
     },
     [](const V& x) { return sq(sort(x[0], 0, true).values); }},
    {OpKind::Sort, "sort/middle_strided",
     [] {
       return V{leaf({4, 3, 2})};
     },
     [](const V& x) { return sq(sort(transpose(x[0], 0, 2), 1).values); }},
    {OpKind::Sort, "sort/indices",
     [] {
       return V{leaf({3, 7})};
     },
     [](const V& x) {
       ValuesIndices s = sort(x[0], -1, true);
       return sq(s.values) + as_float(s.indices);
     }},
    {OpKind::Sort, "sort/ties_and_nan_stable",
     [] {
       return V{leaf({2, 8}), ties_and_nan()};
     },
     [](const V& x) {
       ValuesIndices up = sort(x[1], -1, false, true), down = sort(x[1], -1, true, true);
       return sq(sort(x[0]).values) + as_float(up.indices) * 0.5 + as_float(down.indices) * 0.25;
     }},
    // 300 elements: nine merge passes on the device, the last one with a short right run.
    {OpKind::Sort, "sort/long_row",
     [] {
       return V{leaf({1, 300})};
     },
     [](const V& x) {
       ValuesIndices s = sort(x[0]);
       return sq(s.values) + as_float(s.indices);
     },
     false},  // 300 elements: first order is enough here; the short cases check second order
    {OpKind::Sort, "sort/scalar", [] { return V{leaf({})}; },
     [](const V& x) { return sq(sort(x[0], 0).values); }},
    {OpKind::Sort, "topk/largest",
     [] {
       return V{leaf({3, 6})};
     },
     [](const V& x) {
       ValuesIndices t = topk(x[0], 3);
       return sq(t.values) + as_float(t.indices);
     }},
    {OpKind::Sort, "topk/smallest_dim0",
     [] {
       return V{leaf({5, 2})};
     },
     [](const V& x) { return sq(topk(x[0], 2, 0, false).values); }},
    // k <= K / 4: selected by a partial sort rather than the whole row sorted
    {OpKind::Sort, "topk/selected_middle_dim",
     [] {
       return V{leaf({2, 12, 3})};
     },
     [](const V& x) {
       ValuesIndices t = topk(x[0], 3, 1);
       return sq(t.values) + as_float(t.indices);
     }},
    {OpKind::Sort, "kthvalue/keepdim",
     [] {
       return V{leaf({3, 5})};
     },
     [](const V& x) {
       ValuesIndices k = kthvalue(x[0], 2, 1, true);
       return sq(k.values) + as_float(k.indices);
     }},
    {OpKind::Sort, "median/dim_even",
     [] {
       return V{leaf({4, 3})};
     },
     [](const V& x) {
       ValuesIndices md = median(x[0], 0);
       return sq(md.values) + as_float(md.indices);
     }},
    {OpKind::Sort, "median/all",
     [] {
       return V{leaf({3, 3})};
     },
     [](const V& x) { return sq(median(x[0])); }},
    // Values equal to boundaries (and a NaN) tell left from right.
    {OpKind::SearchSorted, "searchsorted/left_and_right",
     [] {
       return V{values({-0.5, 0, 0.25, 0.5}, {4}, false),
                values({-1, -0.5, 0, 0.1, 0.25, 0.5, 0.7, kNaN}, {2, 4}, false)};
     },
     [](const V& x) {
       return as_float(searchsorted(x[0], x[1])) + as_float(searchsorted(x[0], x[1], true)) * 10;
     }},
    {OpKind::SearchSorted, "searchsorted/rows_int32",
     [] {
       return V{values({-1, 0, 1, 0.5, 0.6, 0.7}, {2, 3}, false), leaf({2, 5}, -1.5, 1.5, false)};
     },
     [](const V& x) { return as_float(searchsorted(x[0], x[1], true, true)); }},
    {OpKind::SearchSorted, "bucketize/ties",
     [] {
       return V{values({1, 2, 2, 3, 0, 4}, {2, 3}, false), values({1, 2, 3}, {3}, false)};
     },
     [](const V& x) { return as_float(bucketize(x[0], x[1])); }},
});

TEST(Sort, StableTiesAndNaNAsTorch) {
  const Tensor x = ties_and_nan();
  const ValuesIndices up = sort(x, -1, false, true), down = sort(x, -1, true, true);
  // torch.sort(x, stable=True) and torch.sort(x, descending=True, stable=True)
  expect_values(up.indices, {5, 1, 3, 6, 0, 4, 2, 7, 4, 6, 7, 0, 1, 2, 3, 5});
  expect_values(down.indices, {2, 7, 0, 4, 1, 3, 6, 5, 5, 0, 1, 2, 3, 7, 4, 6});
  const std::vector<double> v = to_vector(up.values);
  EXPECT_EQ(v[0], 0.0);
  EXPECT_TRUE(std::isnan(v[6]) && std::isnan(v[7]));
}

// The regression: topk sorted whole rows (topk(5) of 4096 rows of 256: 41 ms, 4.4x torch's time).
// It now selects the first k (a partial sort when k <= K / 4) under the stable order made total
// by the index: the same values and indices as the stable sort's first k, ties and NaNs
// included, in both orders, along the last and a middle dim, for every k.
TEST(Sort, TopkIsTheStableSortsFirstK) {
  std::vector<double> v(3 * 64 * 5);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = i % 23 == 4 ? kNaN : static_cast<double>((i * 7919) % 8);  // ties and NaNs
  const Tensor base = values(v, {3, 64, 5}, false);
  auto same = [](const Tensor& got, const Tensor& want, const std::string& what) {
    const std::vector<double> g = to_vector(got), w = to_vector(contiguous(want));
    ASSERT_EQ(g.size(), w.size()) << what;
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_TRUE((std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i])
          << what << "[" << i << "]";
  };
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64}) {
    const Tensor x = dt == DType::Int64 ? cast(nan_to_num(base, -1.0), dt) : cast(base, dt);
    for (int64_t dim : {1, 2})
      for (bool largest : {true, false})
        for (int64_t k : {0, 1, 2, 5, 16, 40}) {
          if (k > x.shape()[static_cast<size_t>(dim)]) continue;
          const ValuesIndices t = topk(x, k, dim, largest);
          const ValuesIndices s = sort(x, dim, largest, true);
          const std::string what = std::string(dtype_name(dt)) + " dim " + std::to_string(dim) +
                                   (largest ? " largest" : " smallest") + " k " + std::to_string(k);
          same(t.values, slice(s.values, dim, 0, k), what + " values");
          same(t.indices, slice(s.indices, dim, 0, k), what + " indices");
        }
  }
}

TEST(Sort, TopkAndKthvalueRejectKOutOfRange) {
  const Tensor x = leaf({2, 3}, -1.0, 1.0, false);
  VK_EXPECT_ERROR(topk(x, 4), RuntimeError, "selected index k out of range");
  VK_EXPECT_ERROR(topk(x, -1), RuntimeError, "selected index k out of range");
  VK_EXPECT_ERROR(kthvalue(x, 0), RuntimeError, "out of range");
  VK_EXPECT_ERROR(sort(x, 2), IndexError, "sort");
  VK_EXPECT_ERROR(median(zeros({0, 2}), 0), IndexError, "median");
}

TEST(Sort, SearchsortedCountsAsTorch) {
  const Tensor b = values({1, 2, 3}, {3}, false);
  const Tensor v = values({0.5, 2, kNaN, 3, 3.5, 1}, {2, 3}, false);
  // torch.searchsorted(b, v) and right=True
  expect_values(searchsorted(b, v), {0, 1, 3, 2, 3, 0});
  expect_values(searchsorted(b, v, true), {0, 2, 3, 3, 3, 1});
  EXPECT_EQ(searchsorted(b, v, false, true).dtype(), DType::Int32);
  VK_EXPECT_ERROR(searchsorted(zeros({2, 3}), zeros({3, 3})), RuntimeError, "searchsorted");
  VK_EXPECT_ERROR(bucketize(v, zeros({2, 2})), RuntimeError, "1 dimension");
}

TEST(Sort, UniqueBincountArgwhereAsTorch) {
  // torch.unique(x, return_inverse=True, return_counts=True): each NaN is distinct
  const Unique u = unique(values({3, 1, kNaN, 1, kNaN}, {5}, false));
  const std::vector<double> v = to_vector(u.values);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0], 1.0);
  EXPECT_EQ(v[1], 3.0);
  EXPECT_TRUE(std::isnan(v[2]) && std::isnan(v[3]));
  expect_values(u.inverse, {1, 0, 2, 0, 3});
  expect_values(u.counts, {2, 1, 1, 1});
  // without the inverse (torch's default): the same values and counts, no inverse made
  const Unique lean = unique(values({3, 1, kNaN, 1, kNaN}, {5}, false), false);
  EXPECT_FALSE(lean.inverse.defined());
  EXPECT_EQ(to_vector(lean.counts), to_vector(u.counts));
  EXPECT_EQ(to_vector(lean.values).size(), 4u);
  expect_values(bincount(ints({1, 3, 1, 0}, {4}), Tensor(), 6), {1, 2, 0, 1, 0, 0});
  const Tensor w = bincount(ints({2, 0, 2}, {3}), values({0.5, 1, 2}, {3}, false));
  EXPECT_EQ(w.dtype(), DType::Float64);
  expect_values(w, {1, 0, 2.5});
  VK_EXPECT_ERROR(bincount(ints({1, -1}, {2})), RuntimeError, "non-negative");
  expect_values(argwhere(values({0, 1.5, 2, 0}, {2, 2}, false)), {0, 1, 1, 0});
}

TEST(Sort, ModeIsTheSmallestMostFrequentAtItsLastIndex) {
  // torch.mode(x, 1)
  const ValuesIndices m =
      mode(values({1, 2, 2, 1, 3, 5, 4, 4, 5, 0, 7, 7, 7, 7, 7}, {3, 5}, false), 1);
  expect_values(m.values, {1, 4, 7});
  expect_values(m.indices, {3, 2, 4});
}

TEST(Sort, MedianIsTheLowerMiddleAndNaNPropagates) {
  expect_values(median(values({4, 1, 3, 2}, {4}, false)), {2});
  const ValuesIndices m = median(values({4, kNaN, 3, 1, 5, 2}, {2, 3}, false), 1);
  const std::vector<double> v = to_vector(m.values);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 2.0);
  expect_values(m.indices, {1, 2});
}

}  // namespace
}  // namespace vk::test
