// matmul, addmm, im2col, col2im, conv2d and pooling on the Vulkan device against the CPU kernels:
// shapes that cross the GEMM's 64 x 64 tiles and 16-deep K slices, K in several passes,
// transposed, strided and broadcast operands, batches the shader walks and batches the host
// walks, empty dims, special values, and the pooling tie and NaN rules.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "vkml/backend/vulkan/linalg.h"
#include "vkml/core/geometry.h"
#include "vulkan_fixture.h"

namespace vk {
namespace {

using test::dev;
using test::expect_close;
using test::expect_same_ints;
using test::f32;
using test::host;
using test::kVulkan;
using Vulkan = test::VulkanTest;

const double kInf = std::numeric_limits<double>::infinity();

// A float32 CPU tensor of normal samples (fixed seed per call site).
Tensor normal(const Shape& s, uint64_t seed = 7) {
  manual_seed(seed);
  return randn(s, DType::Float32);
}

// Restores the default K pass of the GEMM when a test ends.
struct KPass {
  explicit KPass(int64_t k) { vulkan::set_gemm_k_pass(k); }
  ~KPass() { vulkan::set_gemm_k_pass(0); }
};

// Restores the default window taps per pass of pooling and col2im when a test ends.
struct TapsPass {
  explicit TapsPass(int64_t n) { vulkan::set_taps_per_pass(n); }
  ~TapsPass() { vulkan::set_taps_per_pass(0); }
};

TEST_F(Vulkan, MatmulCrossesTileBoundaries) {
  const int64_t sizes[] = {1, 17, 65, 130};
  for (int64_t M : sizes)
    for (int64_t K : {int64_t{1}, int64_t{17}, int64_t{130}})
      for (int64_t N : sizes) {
        if (M * N * K > 130 * 130 * 17) continue;  // the fast corner of the grid
        const Tensor a = normal({M, K}, 1), b = normal({K, N}, 2);
        expect_close(
            matmul(dev(a), dev(b)), matmul(a, b), 1e-5,
            "matmul " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N));
      }
  const Tensor a = normal({130, 130}, 3), b = normal({130, 65}, 4);
  expect_close(matmul(dev(a), dev(b)), matmul(a, b), 1e-5, "matmul 130x130x65");
}

TEST_F(Vulkan, MatmulReadsTransposedStridedAndBroadcastOperandsInPlace) {
  const Tensor a = normal({40, 70}, 5), b = normal({90, 40}, 6);
  const Tensor da = dev(a), db = dev(b);
  // both transposed: (70 x 40) @ (40 x 90)
  expect_close(matmul(transpose(da, 0, 1), transpose(db, 0, 1)),
               matmul(transpose(a, 0, 1), transpose(b, 0, 1)), 1e-5, "transposed");
  // every other row and column of a, every other row of b, both at offsets: 20 x 34 @ 34 x 40
  auto sa = [](const Tensor& t) { return slice(slice(t, 0, 1, 40, 2), 1, 3, 70, 2); };
  auto sb = [](const Tensor& t) { return slice(t, 0, 5, 73, 2); };
  expect_close(matmul(sa(da), sb(db)), matmul(sa(a), sb(b)), 1e-5, "sliced");
  // a row broadcast over 33 rows (stride 0)
  const Tensor row = normal({1, 40}, 8);
  expect_close(matmul(expand(dev(row), {33, 40}), transpose(db, 0, 1)),
               matmul(expand(row, {33, 40}), transpose(b, 0, 1)), 1e-5, "broadcast rows");
}

TEST_F(Vulkan, BatchedProductsWithBroadcastAndUnmergeableBatchDims) {
  const Tensor a = normal({2, 3, 17, 5}, 9), b = normal({3, 5, 70}, 10);
  expect_close(matmul(dev(a), dev(b)), matmul(a, b), 1e-5, "broadcast batch");
  // batch dims the shader cannot merge: a permuted 4-D batch (the host walks the outer ones)
  const Tensor x = normal({3, 2, 4, 2, 6, 9}, 11), y = normal({2, 3, 4, 2, 9, 5}, 12);
  const Tensor px = permute(x, {1, 0, 3, 2, 4, 5}), py = permute(y, {0, 1, 3, 2, 4, 5});
  const Tensor dx = permute(dev(x), {1, 0, 3, 2, 4, 5}), dy = permute(dev(y), {0, 1, 3, 2, 4, 5});
  expect_close(matmul(dx, dy), matmul(px, py), 1e-5, "unmergeable batch");
  // batched vector products and a batch times a matrix (folded into one product)
  const Tensor v = normal({5}, 13);
  expect_close(matmul(dev(a), dev(v)), matmul(a, v), 1e-5, "batched vec");
  expect_close(matmul(dev(a), dev(normal({5, 3}, 14))), matmul(a, normal({5, 3}, 14)), 1e-5,
               "batch times matrix");
}

TEST_F(Vulkan, AddmmAddsTheBiasOnEveryRow) {
  const Tensor bias = normal({70}, 15), a = normal({65, 33}, 16), w = normal({70, 33}, 17);
  expect_close(addmm(dev(bias), dev(a), transpose(dev(w), 0, 1)),
               addmm(bias, a, transpose(w, 0, 1)), 1e-5, "addmm");
  // a strided bias: every other element
  const Tensor b2 = normal({140}, 18);
  expect_close(addmm(slice(dev(b2), 0, 0, 140, 2), dev(a), transpose(dev(w), 0, 1)),
               addmm(slice(b2, 0, 0, 140, 2), a, transpose(w, 0, 1)), 1e-5, "strided bias");
}

TEST_F(Vulkan, KInSeveralPassesAddsInOrder) {
  const Tensor a = normal({33, 100}, 19), b = normal({100, 67}, 20), bias = normal({67}, 21);
  const Tensor one = matmul(dev(a), dev(b));
  KPass pass(32);  // 4 passes: 32, 32, 32, 4
  expect_close(matmul(dev(a), dev(b)), matmul(a, b), 1e-5, "matmul in passes");
  expect_close(addmm(dev(bias), dev(a), dev(b)), addmm(bias, a, b), 1e-5, "addmm in passes");
  // deterministic: the same passes give the same bits
  EXPECT_EQ(host(matmul(dev(a), dev(b))), host(matmul(dev(a), dev(b))));
  expect_close(matmul(dev(a), dev(b)), to_cpu(one), 1e-5, "passes against one pass");
}

TEST_F(Vulkan, KBeyondOnePassAtTheDefaultLength) {
  // K = 20000: passes of 8192, 8192 and 3616 (lavapipe stops a shader after 65535 loop
  // iterations in all)
  const int64_t K = 20000;
  const Tensor a = normal({2, K}, 22), b = normal({K, 3}, 23);
  // float32 sums of 20000 products: within 1e-4 of the largest
  expect_close(matmul(dev(a), dev(b)), matmul(a, b), 1e-4, "K = 20000");
}

TEST_F(Vulkan, EmptyDimsAndAnEmptyK) {
  const Tensor e = matmul(dev(normal({0, 4})), dev(normal({4, 3})));
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(matmul(dev(normal({3, 4})), dev(normal({4, 0}))).shape(), (Shape{3, 0}));
  EXPECT_EQ(matmul(dev(normal({0, 3, 4})), dev(normal({0, 4, 2}))).shape(), (Shape{0, 3, 2}));
  // K = 0: zeros, and the bias on every row for addmm
  EXPECT_EQ(host(matmul(dev(normal({2, 0})), dev(normal({0, 3})))), std::vector<double>(6, 0.0));
  const Tensor bias = f32({1.5, -2, 0.25}, {3});
  EXPECT_EQ(host(addmm(dev(bias), dev(normal({2, 0})), dev(normal({0, 3})))),
            (std::vector<double>{1.5, -2, 0.25, 1.5, -2, 0.25}));
}

TEST_F(Vulkan, MatmulPropagatesNaNAndInfinity) {
  Tensor a = normal({3, 4}, 24);
  a = where(eq(reshape(arange(0, 12), {3, 4}), full({}, 1, DType::Int64)),
            full({}, std::nan(""), DType::Float32), a);
  a = where(eq(reshape(arange(0, 12), {3, 4}), full({}, 6, DType::Int64)),
            full({}, kInf, DType::Float32), a);
  const Tensor b = abs(normal({4, 5}, 25)) + 0.5;
  expect_close(matmul(dev(a), dev(b)), matmul(a, b), 1e-5, "special values");
}

TEST_F(Vulkan, MatmulInFloat64WhereTheDeviceHasIt) {
  const Tensor a = cast(normal({70, 20}, 26), DType::Float64);
  const Tensor b = cast(normal({20, 66}, 27), DType::Float64);
  if (!test::device_has_float64()) {
    VK_EXPECT_ERROR(matmul(dev(a), dev(b)), DTypeError, "matmul", "float64");
    return;
  }
  expect_close(matmul(dev(a), dev(b)), matmul(a, b), 1e-13, "float64");
  const Tensor bias = cast(normal({66}, 28), DType::Float64);
  expect_close(addmm(dev(bias), dev(a), dev(b)), addmm(bias, a, b), 1e-13, "float64 addmm");
}

// ---- vkgaps: integer matmul, im2col and col2im (the dtypes their CPU kernels take) ----
// Integers of dtype t in [-amp, amp] (distinct-ish, fixed per seed), exact in double up to 2^53.
Tensor int_matrix(const Shape& s, DType t, double amp, int64_t seed) {
  std::vector<double> v(static_cast<size_t>(numel_of(s)));
  for (size_t k = 0; k < v.size(); ++k) {
    const double u = std::sin(0.7 * static_cast<double>(k) + static_cast<double>(seed));
    v[k] = std::round(amp * u);
  }
  return from_vector(v, s, t);
}

// int32 and int64 (where the device has shaderInt64), or the int64 DTypeError naming the device.
std::vector<DType> int_dtypes_or_error() {
  if (test::device_has_int64()) return {DType::Int32, DType::Int64};
  const Tensor i = dev(reshape(arange(0, 4), {2, 2}));
  VK_EXPECT_ERROR(matmul(i, i), DTypeError, "matmul", "vulkan", "shaderInt64");
  return {DType::Int32};
}

// Integer products exactly, wrapping around as the CPU's (which computes them unsigned): across
// the 64 x 64 tiles and 16-deep K slices, K in several passes, transposed, strided and broadcast
// views, and the extremes of the dtype.
TEST_F(Vulkan, IntegerMatmulMatchesTheCpuExactly) {
  for (DType t : int_dtypes_or_error()) {
    const std::string n(dtype_name(t));
    const double big = t == DType::Int32 ? 1e5 : 4e12;  // products past the dtype: they wrap
    const Tensor a = int_matrix({70, 37}, t, big, 1), b = int_matrix({37, 130}, t, big, 2);
    expect_same_ints(matmul(dev(a), dev(b)), matmul(a, b), n + " across tiles, wrapping");
    const Tensor sa = int_matrix({70, 37}, t, 50, 3), sb = int_matrix({37, 130}, t, 50, 4);
    expect_same_ints(matmul(dev(sa), dev(sb)), matmul(sa, sb), n + " small values");
    {
      KPass pass(16);  // 3 passes: 16, 16, 5, each adding onto C
      expect_same_ints(matmul(dev(a), dev(b)), matmul(a, b), n + " K in passes");
    }
    const Tensor at = transpose(int_matrix({37, 70}, t, big, 5), 0, 1);
    expect_same_ints(matmul(transpose(dev(int_matrix({37, 70}, t, big, 5)), 0, 1),
                            slice(dev(int_matrix({37, 260}, t, big, 6)), 1, 0, 260, 2)),
                     matmul(at, slice(int_matrix({37, 260}, t, big, 6), 1, 0, 260, 2)),
                     n + " transposed and strided");
    const Tensor x = int_matrix({3, 1, 5, 9}, t, 1000, 7), y = int_matrix({4, 9, 6}, t, 1000, 8);
    expect_same_ints(matmul(dev(x), dev(y)), matmul(x, y), n + " broadcast batch");
    expect_same_ints(matmul(dev(int_matrix({4}, t, 9, 9)), dev(int_matrix({4, 3}, t, 9, 10))),
                     matmul(int_matrix({4}, t, 9, 9), int_matrix({4, 3}, t, 9, 10)),
                     n + " vector @ matrix");
    const Tensor e = from_vector({}, {2, 0}, t), f = from_vector({}, {0, 3}, t);
    expect_same_ints(matmul(dev(e), dev(f)), matmul(e, f), n + " empty K: zeros");
  }
  if (!test::device_has_int64()) return;
  // int64's extremes: min * -1 and max * 2 wrap
  const double lo = -9223372036854775808.0;
  Tensor ex = from_vector({0, 1, 2, -1}, {2, 2}, DType::Int64);
  ex.data<int64_t>()[0] = std::numeric_limits<int64_t>::max();
  ex.data<int64_t>()[1] = static_cast<int64_t>(lo);
  const Tensor ey = from_vector({2, -1, -1, 3}, {2, 2}, DType::Int64);
  expect_same_ints(matmul(dev(ex), dev(ey)), matmul(ex, ey), "int64 extremes");
}

TEST_F(Vulkan, BoolMatmulIsADTypeErrorAsOnTheCpu) {
  const Tensor b = from_vector({1, 0, 1, 1}, {2, 2}, DType::Bool);
  EXPECT_THROW(matmul(b, b), DTypeError);
  EXPECT_THROW(matmul(dev(b), dev(b)), DTypeError);
}
// ---- end vkgaps ----

// Throughput on this machine's device, not a check: run with --gtest_also_run_disabled_tests.
TEST_F(Vulkan, DISABLED_GemmThroughput) {
  for (int64_t n : {int64_t{256}, int64_t{512}}) {
    const Tensor a = dev(normal({n, n}, 1)), b = dev(normal({n, n}, 2));
    (void)host(matmul(a, b));  // pipelines built, memory touched
    const auto t0 = std::chrono::steady_clock::now();
    const int reps = 3;
    Tensor c;
    for (int r = 0; r < reps; ++r) c = matmul(a, b);
    (void)host(c);  // waits for the products, should the device run them after the call
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[gemm] %lld^3 float32 on %s: %.3f s each, %.2f GFLOP/s\n",
                static_cast<long long>(n), vulkan::device_name().c_str(), s / reps,
                2.0 * n * n * n * reps / s * 1e-9);
  }
}

// A conv2d configuration: x (N, C, H, W), weight (O, C / groups, kh, kw).
struct ConvCase {
  int64_t N, C, H, W, O, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

const ConvCase kConvCases[] = {
    {2, 6, 11, 13, 9, 3, 2, 2, 1, 1, 2, 1, 2, 3, true},   // groups, stride, padding, dilation
    {1, 4, 9, 9, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},    // 70 x 81 over K = 36: past the tiles
    {2, 3, 10, 10, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1, false},  // 1x1
    {1, 8, 5, 7, 8, 2, 2, 2, 2, 1, 1, 2, 2, 8, true},     // depthwise
};

// conv2d of c on the device and the CPU: x as a channels-last view, the weight as a transposed
// copy's view (not contiguous), the bias every other element of a longer one.
void expect_conv(const ConvCase& c, const std::string& what) {
  const Tensor xl = normal({c.N, c.H, c.W, c.C}, 30);
  const Tensor wl = normal({c.O, c.C / c.groups, c.kw, c.kh}, 31);
  const Tensor bl = normal({2 * c.O}, 32);
  auto run = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
    return conv2d(permute(x, {0, 3, 1, 2}), transpose(w, 2, 3),
                  c.bias ? slice(b, 0, 1, 2 * c.O, 2) : Tensor(), c.sh, c.sw, c.ph, c.pw, c.dh,
                  c.dw, c.groups);
  };
  expect_close(run(dev(xl), dev(wl), dev(bl)), run(xl, wl, bl), 1e-5, what);
}

TEST_F(Vulkan, Conv2dMatchesTheCpu) {
  for (size_t i = 0; i < std::size(kConvCases); ++i)
    expect_conv(kConvCases[i], "conv2d case " + std::to_string(i));
}

TEST_F(Vulkan, Conv2dWithKInSeveralPasses) {
  KPass pass(10);  // K = 36: passes of 10, 10, 10, 6
  expect_conv(kConvCases[1], "conv2d in passes");
  expect_conv(kConvCases[0], "conv2d groups in passes");
}

// Restores the device's workgroup limits for the GEMM when a test ends.
struct GridLimit {
  explicit GridLimit(uint32_t n) { vulkan::set_gemm_grid_limit(n); }
  ~GridLimit() { vulkan::set_gemm_grid_limit(0); }
};

TEST_F(Vulkan, GridsBeyondOneDispatchGoInSeveral) {
  // 2 workgroups per axis: 5 batches, 200 rows and 150 columns take 3 x 2 x 2 dispatches (the
  // device's 65535 would need millions of rows, too slow for lavapipe)
  GridLimit limit(2);
  const Tensor a = normal({5, 200, 7}, 51), b = normal({5, 7, 150}, 52);
  expect_close(matmul(dev(a), dev(b)), matmul(a, b), 1e-5, "split grid");
  const Tensor bias = normal({150}, 53);
  auto first = [](const Tensor& t) { return squeeze(slice(t, 0, 0, 1), 0); };
  expect_close(addmm(dev(bias), dev(first(a)), dev(first(b))), addmm(bias, first(a), first(b)),
               1e-5, "split grid addmm");
  expect_conv({3, 4, 12, 13, 130, 3, 3, 1, 1, 1, 1, 1, 1, 2, true}, "split grid conv2d");
}

TEST_F(Vulkan, Conv2dGradientsOnTheDevice) {
  const Tensor x = normal({2, 4, 7, 6}, 33), w = normal({6, 2, 3, 3}, 34), b = normal({6}, 35);
  auto grads = [](Tensor x, Tensor w, Tensor b) {
    x.set_requires_grad(true), w.set_requires_grad(true), b.set_requires_grad(true);
    const Tensor y = conv2d(x, w, b, 2, 1, 1, 1, 1, 2, 2);
    const Tensor weight =
        to_device(cos(reshape(cast(arange(0, y.numel()), DType::Float32), y.shape())), y.device());
    return autograd::grad({y}, {x, w, b}, {weight}, false, false, true);
  };
  const std::vector<Tensor> want = grads(x, w, b), got = grads(dev(x), dev(w), dev(b));
  for (size_t i = 0; i < want.size(); ++i)
    expect_close(got[i], want[i], 1e-5, "conv2d grad " + std::to_string(i));
}

TEST_F(Vulkan, Im2colAndCol2imMatchTheCpu) {
  const Window2d w{3, 2, 2, 1, 1, 0, 2, 1};
  const Tensor xl = normal({2, 9, 11, 3}, 36);
  auto x_of = [](const Tensor& t) { return permute(t, {0, 3, 1, 2}); };  // channels-last view
  expect_close(im2col(x_of(dev(xl)), w), im2col(x_of(xl), w), 0, "im2col");
  const Tensor cols = im2col(x_of(xl), w);
  const Tensor tc = normal({cols.shape()[0], cols.shape()[2], cols.shape()[1]}, 37);
  expect_close(col2im(transpose(dev(tc), 1, 2), 9, 11, w), col2im(transpose(tc, 1, 2), 9, 11, w),
               1e-6, "col2im of a transposed view");
  // avg_pool2d's gradient: every tap of a window reads one value (a stride-0 view)
  const Window2d big{5, 4, 2, 3, 2, 2, 1, 1};
  const int64_t L = window_out(9, 5, 2, 2, 1) * window_out(11, 4, 3, 2, 1);
  const Tensor g = normal({6, 1, L}, 38);
  auto spread = [&](const Tensor& t) { return expand(t, {6, 20, L}); };
  expect_close(col2im(spread(dev(g)), 9, 11, big), col2im(spread(g), 9, 11, big), 1e-6,
               "col2im of an expanded view");
  EXPECT_EQ(im2col(dev(normal({0, 2, 4, 4})), w).shape(), im2col(normal({0, 2, 4, 4}), w).shape());
}

// values and indices of max_pool2d on the device, exactly the CPU's.
void expect_max_pool(const Tensor& x, const Window2d& w, const std::string& what) {
  const PoolResult want = max_pool2d(x, w), got = max_pool2d(dev(x), w);
  expect_close(got.values, want.values, 0, what + " values");
  EXPECT_EQ(got.indices.dtype(), DType::Int64) << what;
  EXPECT_EQ(host(got.indices), to_vector(want.indices)) << what;
}

TEST_F(Vulkan, MaxPoolTiesNaNPaddingAndDilationAsTheCpu) {
  const double nan = std::nan("");
  // ties: the first maximum of each window; NaN wins (the last one); -inf is a value like others
  const Tensor x = f32({1, 3, 3, 0, 2, 3, nan, 3, -kInf, -kInf, 1, nan, 3, 3, 3, 3}, {1, 1, 4, 4});
  expect_max_pool(x, Window2d{2, 2, 1, 1}, "ties");
  expect_max_pool(x, Window2d{3, 3, 1, 1, 1, 1}, "ties padded");
  expect_max_pool(transpose(x, 2, 3), Window2d{2, 3, 2, 1, 1, 1, 1, 1}, "transposed input");
  // a window wholly in the padding (dilation): -inf and index -1
  expect_max_pool(f32({5}, {1, 1, 1, 1}), Window2d{2, 2, 1, 1, 1, 1, 2, 2}, "empty window");
  const Tensor r = round(normal({3, 2, 17, 20}, 39) * 2.0);  // many ties
  expect_max_pool(r, Window2d{3, 2, 2, 3, 1, 1, 2, 1}, "random ties");
}

TEST_F(Vulkan, MaxPoolBackwardAddsAtTheIndicesAsTheCpu) {
  const Tensor x = round(normal({2, 3, 9, 8}, 40) * 2.0);
  const Window2d w{3, 3, 1, 1, 1, 1, 1, 1};  // overlapping windows share their maxima
  const Tensor idx = max_pool2d(x, w).indices;
  const Tensor g = normal({2, 3, 8, 9}, 41);
  auto run = [](const Tensor& g, const Tensor& i) {
    return max_pool2d_backward(transpose(g, 2, 3), i, {2, 3, 9, 8});
  };
  expect_close(run(dev(g), dev(idx)), run(g, idx), 1e-6, "int64 indices");
  const Tensor i32 = cast(idx, DType::Int32);
  expect_close(run(dev(g), dev(i32)), run(g, i32), 1e-6, "int32 indices");
  // index -1 (a window in the padding) adds nothing
  const Tensor one = f32({5}, {1, 1, 1, 1});
  const PoolResult p = max_pool2d(dev(one), Window2d{2, 2, 1, 1, 1, 1, 2, 2});
  EXPECT_EQ(host(max_pool2d_backward(dev(f32({2}, {1, 1, 1, 1})), p.indices, {1, 1, 1, 1})),
            (std::vector<double>{0}));
}

TEST_F(Vulkan, MaxPoolBackwardOverPlanesOfManyOutputs) {
  // 130 x 130 outputs in a plane: more than one dispatch's run of them
  const Tensor x = normal({1, 2, 131, 131}, 42);
  const Window2d w{2, 2, 1, 1};
  const PoolResult p = max_pool2d(x, w);
  const Tensor g = normal({1, 2, 130, 130}, 43);
  expect_close(max_pool2d_backward(dev(g), dev(p.indices), x.shape()),
               max_pool2d_backward(g, p.indices, x.shape()), 1e-6, "many outputs");
}

TEST_F(Vulkan, AvgPoolCountsThePaddingAsTheCpu) {
  const Tensor x = normal({2, 3, 10, 9}, 44);
  for (const Window2d& w :
       {Window2d{3, 3, 2, 2, 1, 1}, Window2d{2, 3, 1, 2, 1, 1, 2, 1}, Window2d{9, 9, 1, 1}}) {
    expect_close(avg_pool2d(dev(x), w), avg_pool2d(x, w), 1e-6, "avg_pool2d");
    expect_close(avg_pool2d(transpose(dev(x), 2, 3), w), avg_pool2d(transpose(x, 2, 3), w), 1e-6,
                 "avg_pool2d of a transposed view");
  }
  const double inf = kInf;
  const Tensor s = f32({1, inf, 2, 3}, {1, 1, 2, 2});
  expect_close(avg_pool2d(dev(s), Window2d{2, 2, 1, 1}), avg_pool2d(s, Window2d{2, 2, 1, 1}), 0,
               "infinity");
}

TEST_F(Vulkan, GlobalPoolsOverSeveralPassesOfTaps) {
  // 150 x 150 taps per output: two passes of whole rows at the default 16384 taps per pass
  const Tensor x = round(normal({2, 2, 150, 150}, 47) * 4.0);
  const Window2d global{150, 150, 1, 1};
  expect_close(avg_pool2d(dev(x), global), avg_pool2d(x, global), 1e-6, "global avg_pool2d");
  expect_max_pool(x, global, "global max_pool2d");
  // 90000 taps for one output: more loop iterations than lavapipe runs in one shader (in one
  // pass the average came out wrong)
  const Tensor big = round(normal({1, 1, 300, 300}, 55) * 4.0);
  const Window2d all{300, 300, 1, 1};
  expect_close(avg_pool2d(dev(big), all), avg_pool2d(big, all), 1e-6, "avg_pool2d of 90000");
  expect_max_pool(big, all, "max_pool2d of 90000");
  const Tensor cols = normal({1, 90000, 1}, 56);
  expect_close(col2im(dev(cols), 300, 300, all), col2im(cols, 300, 300, all), 0, "col2im of 90000");
}

TEST_F(Vulkan, PoolsAndCol2imResumeAcrossShortPasses) {
  const Tensor x = round(normal({1, 2, 9, 10}, 48) * 2.0);  // ties across passes
  const Tensor cols = normal({1, 2 * 12, 8 * 8}, 49);
  const Window2d w{4, 3, 1, 1, 1, 1, 1, 2};  // 8 x 8 outputs of 4 x 3 taps
  for (int64_t taps : {5, 2}) {              // rows of 3 columns in passes of 1 row, or of 2 taps
    TapsPass pass(taps);
    const std::string what = " in passes of " + std::to_string(taps) + " taps";
    expect_close(avg_pool2d(dev(x), w), avg_pool2d(x, w), 1e-6, "avg_pool2d" + what);
    expect_max_pool(x, w, "max_pool2d" + what);
    expect_close(col2im(dev(cols), 9, 10, w), col2im(cols, 9, 10, w), 1e-6, "col2im" + what);
  }
}

TEST_F(Vulkan, PoolsAndConvInFloat64WhereTheDeviceHasIt) {
  const Tensor x = cast(normal({1, 2, 7, 6}, 45), DType::Float64);
  const Tensor w = cast(normal({4, 2, 3, 3}, 46), DType::Float64);
  if (!test::device_has_float64()) {
    VK_EXPECT_ERROR(conv2d(dev(x), dev(w), Tensor(), 1, 1, 1, 1), DTypeError, "conv2d", "float64");
    return;
  }
  expect_close(conv2d(dev(x), dev(w), Tensor(), 1, 1, 1, 1), conv2d(x, w, Tensor(), 1, 1, 1, 1),
               1e-13, "conv2d float64");
  expect_close(conv2d(dev(x), transpose(dev(w), 2, 3), Tensor(), 1, 1, 1, 1),
               conv2d(x, transpose(w, 2, 3), Tensor(), 1, 1, 1, 1), 1e-13,
               "conv2d float64, a transposed weight");
  const Window2d win{3, 2, 2, 1, 1, 1, 1, 1};
  expect_close(avg_pool2d(dev(x), win), avg_pool2d(x, win), 1e-15, "avg_pool2d float64");
  expect_max_pool(x, win, "max_pool2d float64");
  expect_close(im2col(dev(x), win), im2col(x, win), 0, "im2col float64");
  const Tensor cols = im2col(x, win);
  expect_close(col2im(dev(cols), 7, 6, win), col2im(cols, 7, 6, win), 1e-15, "col2im float64");
  const PoolResult p = max_pool2d(x, win);
  const Tensor g = cast(normal(p.values.shape(), 50), DType::Float64);
  for (const Tensor& idx : {p.indices, cast(p.indices, DType::Int32)})
    expect_close(max_pool2d_backward(dev(g), dev(idx), x.shape()),
                 max_pool2d_backward(g, idx, x.shape()), 1e-15, "max_pool2d_backward float64");
}

// ---- vkgaps: integer im2col and col2im exactly as the CPU's, over views and in passes ----
TEST_F(Vulkan, IntegerIm2colAndCol2imMatchTheCpuExactly) {
  for (DType t : int_dtypes_or_error()) {
    const std::string n(dtype_name(t));
    const Window2d w{3, 2, 2, 1, 1, 0, 2, 1};
    const double big = t == DType::Int32 ? 1e9 : 4e15;
    const Tensor xl = int_matrix({2, 9, 11, 3}, t, big, 11);
    auto x_of = [](const Tensor& v) { return permute(v, {0, 3, 1, 2}); };  // channels-last view
    expect_same_ints(im2col(x_of(dev(xl)), w), im2col(x_of(xl), w), n + " im2col of a view");
    const Tensor cols = im2col(x_of(xl), w);
    const Tensor tc = int_matrix({cols.shape()[0], cols.shape()[2], cols.shape()[1]}, t, 1e6, 12);
    expect_same_ints(col2im(transpose(dev(tc), 1, 2), 9, 11, w),
                     col2im(transpose(tc, 1, 2), 9, 11, w), n + " col2im of a transposed view");
    // overlapping windows summed per output element, over several passes of taps
    const Window2d big_w{5, 4, 1, 1, 2, 2, 1, 1};
    const int64_t L = window_out(9, 5, 1, 2, 1) * window_out(11, 4, 1, 2, 1);
    const Tensor g = int_matrix({2, 3 * 20, L}, t, 1e6, 13);
    const Tensor want = col2im(g, 9, 11, big_w);
    expect_same_ints(col2im(dev(g), 9, 11, big_w), want, n + " col2im overlaps");
    {
      TapsPass pass(3);
      expect_same_ints(col2im(dev(g), 9, 11, big_w), want, n + " col2im in passes");
    }
    const Tensor none = from_vector({}, {0, 2, 4, 4}, t);
    expect_same_ints(im2col(dev(none), w), im2col(none, w), n + " im2col of no images");
  }
}

TEST_F(Vulkan, ConvAndPoolDTypeErrorsNameTheOpAndDevice) {
  const Tensor i = dev(reshape(arange(0, 16), {1, 1, 4, 4}));
  VK_EXPECT_ERROR(im2col(cast(i, DType::Bool), Window2d{2, 2}), DTypeError, "im2col", "bool");
  EXPECT_THROW(conv2d(i, i, Tensor(), 1, 1, 0, 0), DTypeError);  // floating only, as on the CPU
}
// ---- end vkgaps ----

}  // namespace
}  // namespace vk
