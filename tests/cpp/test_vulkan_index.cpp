// The Vulkan device's shape copies (slice_backward, cat, stack, pad, flip, contiguous), index ops
// (index_select, gather, scatter_add) and creation ops (arange, rand, randn, randint) against the
// CPU's kernels: data movement bit for bit in every dtype, scatter_add bit for bit too (it adds in
// the CPU's order), over views, negative dims, empty tensors and sizes that cross the shaders'
// workgroups and scatter_add's passes.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "vulkan_fixture.h"

namespace vk {
namespace {

using test::host;
using test::ints;
using test::kVulkan;
using Vulkan = test::VulkanTest;

const DType kDTypes[] = {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64};

// Distinct values of `dtype`, n = numel(shape), on the CPU: int64 values use both 32-bit words
// (a shader that moved only the low one would fail), floats include NaN, -inf and -0.0, bools
// are not all alike.
Tensor sample(DType dtype, const Shape& shape, bool specials = true) {
  const int64_t n = numel_of(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(i);
    switch (dtype) {
      case DType::Bool:
        v[i] = i % 3 == 1;
        break;
      case DType::Int32:
        v[i] = d * 7919 - 50000;
        break;
      case DType::Int64:
        v[i] = d * 6442450941.0 - 35184372088832.0;  // i * (1.5 * 2^32 - 3) - 2^45
        break;
      default:
        v[i] = d * 0.5 - 3.25;
    }
  }
  if (specials && is_floating(dtype) && n > 3) {
    v[1] = std::nan("");
    v[2] = -std::numeric_limits<double>::infinity();
    v[3] = -0.0;
  }
  return from_vector(v, shape, dtype);
}

// got (on the device) is want (on the cpu): same shape, dtype and bytes.
void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.device(), kVulkan) << what;
  const Tensor g = contiguous(to_cpu(got)), w = contiguous(want);
  ASSERT_EQ(g.shape(), w.shape()) << what;
  ASSERT_EQ(g.dtype(), w.dtype()) << what;
  const size_t nbytes = static_cast<size_t>(w.numel()) * dtype_size(w.dtype());
  EXPECT_TRUE(nbytes == 0 || std::memcmp(g.raw_data(), w.raw_data(), nbytes) == 0)
      << what << " (" << dtype_name(w.dtype()) << "): " << ::testing::PrintToString(to_vector(g))
      << " on the device, " << ::testing::PrintToString(to_vector(w)) << " on the cpu";
}

// f on the CPU tensors and on their copies on the device, compared byte for byte.
template <class F>
void same_on_both(const std::vector<Tensor>& xs, F f, const std::string& what) {
  std::vector<Tensor> dxs;
  for (const Tensor& x : xs) dxs.push_back(to_device(x, kVulkan));
  expect_same(f(dxs), f(xs), what);
}

using V = std::vector<Tensor>;

TEST_F(Vulkan, ShapeCopiesMoveEveryDtypeBitForBit) {
  for (DType dt : kDTypes) {
    const std::string d(dtype_name(dt));
    const V x{sample(dt, {3, 4, 5})};
    same_on_both(
        x, [](const V& t) { return contiguous(transpose(t[0], 0, 2)); }, d + " copy");
    same_on_both(
        x, [](const V& t) { return reshape(transpose(t[0], 1, 2), {60}); }, d + " reshape");
    same_on_both(
        x,
        [](const V& t) {
          return flip(t[0], {0, -1});
        },
        d + " flip");
    same_on_both(
        x, [](const V& t) { return flip(transpose(t[0], 0, 1), {1}); }, d + " flip of a view");
    same_on_both(
        x,
        [](const V& t) {
          return cat({t[0], slice(t[0], 1, 1, 4, 2), flip(t[0], {1})}, -2);
        },
        d + " cat of views");
    same_on_both(
        x,
        [](const V& t) {
          return cat({transpose(t[0], 0, 2), flip(transpose(t[0], 0, 2), {0})}, 1);
        },
        d + " cat of a transposed view");
    same_on_both(
        x,
        [](const V& t) {
          return stack({t[0], flip(t[0], {2}), t[0]}, -1);
        },
        d + " stack");
    same_on_both(
        x,
        [](const V& t) {
          return stack({select(t[0], 1, 2), select(t[0], 1, 0)}, 0);
        },
        d + " stack of strided views");
    same_on_both(
        x,
        [](const V& t) {
          return pad(t[0], {1, 2, -1, 1}, 0.5);
        },
        d + " pad");
    same_on_both(
        x,
        [](const V& t) {
          return pad(t[0], {0, 0, 2, 0, 1, 1}, -7.0);
        },
        d + " pad of three dims");
    same_on_both(
        x,
        [](const V& t) {
          return pad(transpose(t[0], 0, 2), {-1, -2, -1, 0});
        },
        d + " pad that only crops a view");
    same_on_both(
        x,
        [](const V& t) {
          return slice_backward(transpose(t[0], 1, 2), {3, 11, 4}, 1, 1, 11, 2);
        },
        d + " slice_backward");
    same_on_both(
        x,
        [](const V& t) {
          return slice_backward(t[0], {3, 4, 9}, -1, -5, 100, 1);
        },
        d + " slice_backward, negative dim and start");
  }
}

TEST_F(Vulkan, ShapeCopiesOfEmptyAndLargeTensors) {
  const V e{sample(DType::Float32, {2, 0, 3}), sample(DType::Float32, {0}),
            sample(DType::Float32, {2, 4, 3})};
  same_on_both(
      e,
      [](const V& t) {
        return cat({t[0], t[2], t[1], t[0]}, 1);
      },
      "cat skipping 1-D empties");
  same_on_both(
      e,
      [](const V& t) {
        return cat({t[0], t[0]}, 0);
      },
      "cat of empties");
  same_on_both(
      e,
      [](const V& t) {
        return stack({t[0], t[0]}, 1);
      },
      "stack of empties");
  same_on_both(
      e, [](const V& t) { return flip(t[0], {1}); }, "flip of empty");
  same_on_both(
      e,
      [](const V& t) {
        return pad(t[0], {1, 1}, 2.0);
      },
      "pad of empty");
  same_on_both(
      e,
      [](const V& t) {
        return pad(t[2], {-1, -2}, 2.0);
      },
      "pad cropping all");
  same_on_both(
      e,
      [](const V& t) {
        return slice_backward(t[0], {2, 0, 5}, 2, 1, 4, 1);
      },
      "slice_backward of empty");
  // Many workgroups of 256, and a view with 7 dims that do not merge.
  const V big{sample(DType::Int64, {3, 700, 5})};
  same_on_both(
      big,
      [](const V& t) {
        return flip(permute(t[0], {2, 0, 1}), {2});
      },
      "large flip");
  const V seven{sample(DType::Float32, {2, 3, 2, 3, 2, 3, 2})};
  same_on_both(
      seven,
      [](const V& t) {
        return contiguous(permute(t[0], {6, 5, 4, 3, 2, 1, 0}));
      },
      "7 dims");
  // Past the 8 dims a copy walks at once, the error names the op.
  const Tensor nine = to_device(sample(DType::Float32, Shape(9, 2)), kVulkan);
  VK_EXPECT_ERROR(contiguous(permute(nine, {8, 7, 6, 5, 4, 3, 2, 1, 0})), NotImplementedError,
                  "contiguous", "8 dims");
}

TEST_F(Vulkan, IndexSelectAndGatherEveryDtype) {
  const Tensor i64 = ints({3, 0, 3, 1, 3}, {5}), i32 = cast(i64, DType::Int32);
  const Tensor g64 = ints({2, 0, 1, 1, 0, 0, 2, 2, 1, 0, 1, 2}, {3, 4});
  for (DType dt : kDTypes) {
    const std::string d(dtype_name(dt));
    const Tensor x = sample(dt, {3, 4, 5});
    for (const Tensor& idx : {i64, i32}) {
      const std::string di = d + " by " + std::string(dtype_name(idx.dtype()));
      same_on_both(
          {x, idx}, [](const V& t) { return index_select(t[0], 1, t[1]); }, di + " index_select");
      same_on_both(
          {x, idx}, [](const V& t) { return index_select(t[0], -1, t[1]); },
          di + " index_select, dim -1");
      same_on_both(
          {x, idx}, [](const V& t) { return index_select(transpose(t[0], 0, 2), 0, t[1]); },
          di + " index_select of a transposed view");
      same_on_both(
          {x, idx}, [](const V& t) { return index_select(t[0], 2, slice(t[1], 0, 0, 5, 2)); },
          di + " index_select by a strided index");
    }
    const Tensor g = sample(dt, {4, 3, 5});
    same_on_both(
        {g, g64},
        [](const V& t) {
          return gather(t[0], 1, reshape(t[1], {4, 3, 1}));
        },
        d + " gather, index smaller than x");
    same_on_both(
        {g, g64},
        [](const V& t) {
          return gather(transpose(t[0], 0, 1), -3, reshape(t[1], {3, 4, 1}));
        },
        d + " gather of a view, dim -3");
    same_on_both(
        {g, cast(g64, DType::Int32)},
        [](const V& t) {
          return gather(t[0], 0, expand(reshape(t[1], {1, 3, 4}), {2, 3, 4}));
        },
        d + " gather by a broadcast int32 index");
    same_on_both(
        {sample(dt, {}), ints({0}, {1})}, [](const V& t) { return index_select(t[0], 0, t[1]); },
        d + " 0-d index_select");
  }
  same_on_both(
      {sample(DType::Float32, {3, 4}), ints({}, {0})},
      [](const V& t) { return index_select(t[0], 1, t[1]); }, "empty index_select");
  same_on_both(
      {sample(DType::Float32, {3, 4}), ints({}, {3, 0})},
      [](const V& t) { return gather(t[0], 1, t[1]); }, "empty gather");
}

// Defect: an index out of range gave zeros on the device (the CPU raises IndexError): a silent
// wrong value. The device now raises it at the next read, without a read-back at the call:
// test_vulkan_deferred.cpp (AnIndexOutOfRangeIsRaisedAtTheNextReadNamingTheOp).

TEST_F(Vulkan, ScatterAddAddsInTheCpusOrderBitForBit) {
  // Values of mixed magnitudes: a different order of the sums would round differently.
  auto mixed = [](DType dt, const Shape& s) {
    const Tensor v = sample(DType::Float64, s, false);
    return cast(v * v * v * 1e3 + 1e-3, dt);
  };
  const Tensor idx = ints({0, 2, 0, 2, 2, 0, 1, 1, 0, 0, 2, 0}, {2, 6});
  for (DType dt : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
    const std::string d(dtype_name(dt));
    const Tensor base = is_floating(dt) ? mixed(dt, {3, 6}) : sample(dt, {3, 6});
    const Tensor src = is_floating(dt) ? mixed(dt, {4, 7}) : sample(dt, {4, 7});
    same_on_both(
        {base, idx, src}, [](const V& t) { return scatter_add(t[0], 0, t[1], t[2]); },
        d + " scatter_add, src larger than index");
    same_on_both(
        {base, idx * 2 + 1, is_floating(dt) ? mixed(dt, {8, 3}) : sample(dt, {8, 3})},
        [](const V& t) {
          return scatter_add(t[0], -1, t[1], transpose(slice(t[2], 0, 1, 8), 0, 1));
        },
        d + " scatter_add, dim -1, transposed src");
    same_on_both(
        {base, ints({2, 0, 2, 1, 2}, {5}), src},
        [](const V& t) { return index_add(t[0], 1, t[1], slice(slice(t[2], 0, 0, 3), 1, 1, 6)); },
        d + " index_add (one broadcast index line)");
    same_on_both(
        {expand(slice(base, 0, 0, 1), {3, 6}), idx, src},
        [](const V& t) { return scatter_add(t[0], 0, t[1], t[2]); },
        d + " scatter_add into a broadcast base");
    // An int32 index read through a transposed view (its values come back in row-major order).
    same_on_both(
        {base, cast(transpose(idx * 2 + 1, 0, 1), DType::Int32), src},
        [](const V& t) { return scatter_add(t[0], 1, transpose(t[1], 0, 1), t[2]); },
        d + " scatter_add by a transposed int32 index");
  }
  same_on_both(
      {sample(DType::Float32, {}), ints({0}, {}), sample(DType::Float32, {})},
      [](const V& t) { return scatter_add(t[0], 0, t[1], t[2]); }, "0-d scatter_add");
  same_on_both(
      {sample(DType::Float32, {3, 2}), ints({}, {0, 2}), sample(DType::Float32, {1, 2})},
      [](const V& t) { return scatter_add(t[0], 0, t[1], t[2]); }, "empty index");
}

TEST_F(Vulkan, ScatterAddOfManyRepeatsRunsSeveralPasses) {
  // 9000 contributions to one element: three passes of 4096 (a shader loop must stay far below
  // lavapipe's 65535 iterations), still in index order.
  std::vector<double> iv(9000);
  for (size_t i = 0; i < iv.size(); ++i) iv[i] = i % 5 == 4 ? 1 : 0;
  const Tensor src = cast(sample(DType::Float64, {9000}, false) * 1.1, DType::Float32);
  same_on_both(
      {sample(DType::Float32, {3}), ints(iv, {9000}), src},
      [](const V& t) { return scatter_add(t[0], 0, t[1], t[2]); }, "9000 repeats");
}

TEST_F(Vulkan, IndexOpsOverManyWorkgroups) {
  // More elements than one workgroup of 256 handles, in every shader, both index dtypes.
  manual_seed(11);
  const Tensor x = cast(rand({50, 40}, DType::Float64) * 100.0 - 50.0, DType::Float32);
  const Tensor rows = randint(0, 50, {30, 40}), cols = randint(0, 40, {50, 33});
  const Tensor pick = randint(0, 50, {700}, DType::Int32);
  const Tensor src = cast(rand({30, 40}, DType::Float64) * 1e3, DType::Float32);
  const Tensor src_t = cast(rand({33, 50}, DType::Float64) * 1e3, DType::Float32);
  same_on_both(
      {x, rows, src}, [](const V& t) { return scatter_add(t[0], 0, t[1], t[2]); },
      "scatter_add along dim 0");
  same_on_both(
      {x, cols, transpose(src_t, 0, 1)},
      [](const V& t) { return scatter_add(t[0], 1, slice(t[1], 1, 0, 30), t[2]); },
      "scatter_add along dim 1 from a view");
  same_on_both(
      {x, rows}, [](const V& t) { return gather(t[0], 0, t[1]); }, "gather");
  same_on_both(
      {x, pick}, [](const V& t) { return index_select(t[0], 0, t[1]); }, "index_select");
}

TEST_F(Vulkan, IndexGradientsAddRepeatsOnTheDevice) {
  // An embedding lookup with repeated rows, its gradient a scatter_add on the device.
  const Tensor w = cast(test::leaf({6, 5}), DType::Float32).detach();
  const Tensor ids = ints({4, 1, 4, 4, 0, 1, 5}, {7});
  const Tensor gi = ints({0, 2, 2, 1, 0, 1, 1, 1, 2, 0}, {2, 5});
  auto grads = [&](Device dev) {
    Tensor x = to_device(w, dev).detach();
    x.set_requires_grad(true);
    const Tensor i = to_device(ids, dev), g = to_device(gi, dev);
    const Tensor y = sum(index_select(x, 0, i) * index_select(x, 0, i)) +
                     sum(gather(x, 0, g) * 3.0) +
                     sum(nn::functional::embedding(reshape(i, {7, 1}), x));
    autograd::backward(y);
    return x.grad();
  };
  const Tensor want = grads(kCPU), got = grads(kVulkan);
  EXPECT_EQ(got.device(), kVulkan);
  test::expect_values(to_cpu(got), to_vector(want), 1e-6);
}

TEST_F(Vulkan, ArangeMatchesTheCpuBitForBit) {
  for (DType dt : {DType::Int32, DType::Int64, DType::Float32, DType::Float64}) {
    const std::string d(dtype_name(dt));
    expect_same(arange(-3, 1000, 7, dt, kVulkan), arange(-3, 1000, 7, dt), d + " arange");
    expect_same(arange(500, -20, -3, dt, kVulkan), arange(500, -20, -3, dt), d + " down");
    expect_same(arange(0.5, 300.1, 0.7, dt, kVulkan), arange(0.5, 300.1, 0.7, dt),
                d + " arange of doubles");
    expect_same(arange(5, 5, 1, dt, kVulkan), arange(5, 5, 1, dt), d + " empty");
  }
  // int64 values past 32 bits, and steps whose products wrap through uint64 as on the cpu.
  const int64_t big = int64_t{1} << 40;
  expect_same(arange(-big, big, big / 300 + 12345, DType::Int64, kVulkan),
              arange(-big, big, big / 300 + 12345, DType::Int64), "int64 arange past 32 bits");
  expect_same(arange(0.1, 1e10, 3.3e7, DType::Float32, kVulkan),
              arange(0.1, 1e10, 3.3e7, DType::Float32), "float32 arange of large doubles");
}

TEST_F(Vulkan, RandomOpsMatchTheCpuSeedForSeed) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    const std::string d(dtype_name(dt));
    manual_seed(7);
    const Tensor r = rand({3, 300}, dt, kVulkan), n = randn({3, 5}, dt, kVulkan);
    manual_seed(7);
    expect_same(r, rand({3, 300}, dt), d + " rand");
    expect_same(n, randn({3, 5}, dt), d + " randn after rand");  // the stream moved on alike
  }
  for (DType dt : kDTypes) {
    const std::string d(dtype_name(dt));
    manual_seed(3);
    const Tensor i = randint(-5, 1000, {2, 150}, dt, kVulkan);
    const Tensor b = randint(0, 2, {40}, dt, kVulkan);
    manual_seed(3);
    expect_same(i, randint(-5, 1000, {2, 150}, dt), d + " randint");
    expect_same(b, randint(0, 2, {40}, dt), d + " randint of 0 and 1");
  }
  // The widest range (its span overflows int64), and counters whose low word wraps mid-tensor.
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  set_rng_state({0xabcdef0123456789ull, (uint64_t{1} << 32) - 100});
  const Tensor w = randint(lo, hi, {300}, DType::Int64, kVulkan);
  const Tensor u = rand({300}, DType::Float64, kVulkan);
  set_rng_state({0xabcdef0123456789ull, (uint64_t{1} << 32) - 100});
  expect_same(w, randint(lo, hi, {300}, DType::Int64), "randint over all of int64");
  expect_same(u, rand({300}, DType::Float64), "rand across a counter carry");
  manual_seed(1);
  const Tensor e = rand({0, 4}, DType::Float32, kVulkan);
  EXPECT_EQ(e.shape(), (Shape{0, 4}));
  EXPECT_EQ(e.device(), kVulkan);
}

}  // namespace
}  // namespace vk
