// matmul, convolution and pooling: values against naive loops, worked gradients, bitwise
// determinism across thread counts, and the errors users see.
#include <cstring>

#include "test_util.h"

namespace vk::test {
namespace {

Window2d win(int64_t k, int64_t s = 1, int64_t p = 0, int64_t d = 1) {
  return {k, k, s, s, p, p, d, d};
}

// Row-major (M x K) @ (K x N) in double.
std::vector<double> naive_matmul(const std::vector<double>& a, const std::vector<double>& b,
                                 int64_t M, int64_t K, int64_t N) {
  std::vector<double> c(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
      c[i * N + j] = s;
    }
  return c;
}

void expect_close(const Tensor& t, const std::vector<double>& expected, double rtol, double atol) {
  std::vector<double> got = to_vector(t);
  ASSERT_EQ(got.size(), expected.size()) << t.describe();
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], atol + rtol * std::fabs(expected[i]))
        << "at flat index " << i << " of " << t.describe();
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ca = contiguous(a), cb = contiguous(b);
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.numel() * dtype_size(ca.dtype())) == 0;
}

// Restores the thread count a test changed.
struct ThreadsGuard {
  int saved = cpu::num_threads();
  ~ThreadsGuard() { cpu::set_num_threads(saved); }
};

// ---- matmul ----

TEST(Matmul, WorkedExampleSeed003) {
  Tensor X = values({1, -2, 3, 0.5, 4, -1}, {2, 3});
  Tensor M = values({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor Y = matmul(X, M);
  expect_values(Y, {1 - 6 + 15, 2 - 8 + 18, 0.5 + 12 - 5, 1 + 16 - 6});
  Tensor G = eye(2, DType::Float64);  // upstream gradient: the identity
  autograd::backward(Y, G);
  expect_values(X.grad(), {1, 3, 5, 2, 4, 6});  // G @ M^T = M^T
  // dL/dM = X^T @ G = X^T
  expect_values(M.grad(), {1, 0.5, -2, 4, 3, -1});
}

TEST(Matmul, MatchesNaiveLoopFloat32AndFloat64) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    manual_seed(7);
    Tensor a = randn({37, 53}, dt), b = randn({53, 29}, dt);
    Tensor c = matmul(a, b);
    EXPECT_EQ(c.shape(), (Shape{37, 29}));
    EXPECT_EQ(c.dtype(), dt);
    double tol = dt == DType::Float32 ? 1e-4 : 1e-12;
    expect_close(c, naive_matmul(to_vector(a), to_vector(b), 37, 53, 29), tol, tol);
    // The same product from transposed (column-major) and strided operands.
    Tensor at = transpose(contiguous(transpose(a, 0, 1)), 0, 1);
    Tensor bt = transpose(contiguous(transpose(b, 0, 1)), 0, 1);
    expect_close(matmul(at, bt), to_vector(c), tol, tol);
    Tensor wide = randn({37, 106}, dt);
    Tensor strided = wide.alias({37, 53}, {106, 2}, 0);  // column stride 2: packed before BLAS
    expect_close(matmul(strided, b), naive_matmul(to_vector(strided), to_vector(b), 37, 53, 29),
                 tol, tol);
  }
}

TEST(Matmul, ShapesFollowTorch) {
  manual_seed(3);
  EXPECT_EQ(matmul(randn({4}), randn({4})).shape(), Shape{});
  EXPECT_EQ(matmul(randn({3}), randn({3, 5})).shape(), (Shape{5}));
  EXPECT_EQ(matmul(randn({2, 3}), randn({3})).shape(), (Shape{2}));
  EXPECT_EQ(matmul(randn({2, 1, 3, 4}), randn({3, 4, 2})).shape(), (Shape{2, 3, 3, 2}));
  EXPECT_EQ(matmul(randn({3}), randn({2, 3, 4})).shape(), (Shape{2, 4}));
  EXPECT_EQ(matmul(randn({2, 5, 3}), randn({3})).shape(), (Shape{2, 5}));
  EXPECT_EQ(matmul(randn({2, 5, 0}), randn({0, 4})).shape(), (Shape{2, 5, 4}));
  expect_values(matmul(zeros({2, 0}), zeros({0, 3})), {0, 0, 0, 0, 0, 0});
}

TEST(Matmul, BatchedBroadcastMatchesPerBatchProducts) {
  manual_seed(11);
  Tensor a = randn({2, 1, 3, 4}, DType::Float64), b = randn({3, 4, 5}, DType::Float64);
  Tensor c = matmul(a, b);
  std::vector<double> av = to_vector(a), bv = to_vector(b), expected;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      std::vector<double> ai(av.begin() + i * 12, av.begin() + i * 12 + 12);
      std::vector<double> bj(bv.begin() + j * 20, bv.begin() + j * 20 + 20);
      std::vector<double> cij = naive_matmul(ai, bj, 3, 4, 5);
      expected.insert(expected.end(), cij.begin(), cij.end());
    }
  expect_close(c, expected, 1e-12, 1e-12);
  // dot and vector-matrix forms
  Tensor v = values({1, 2, 3}, {3}, false), w = values({4, 5, 6}, {3}, false);
  expect_values(matmul(v, w), {32});
  expect_values(matmul(v, values({1, 0, 0, 1, 1, 1}, {3, 2}, false)), {1 + 3, 2 + 3});
}

TEST(Matmul, Integers) {
  Tensor a = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Int64);
  Tensor b = from_vector({1, -1, 2, 0, 0, 3}, {3, 2}, DType::Int64);
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.dtype(), DType::Int64);
  expect_values(c, {5, 8, 14, 14});
  Tensor f = matmul(a, cast(b, DType::Float32));  // promoted like the binary ops
  EXPECT_EQ(f.dtype(), DType::Float32);
  expect_values(f, {5, 8, 14, 14});
}

TEST(Matmul, BitwiseIdenticalAcrossThreadCounts) {
  ThreadsGuard guard;
  manual_seed(5);
  Tensor a = randn({300, 200}), b = randn({200, 150});
  Tensor ba = randn({6, 40, 70}, DType::Float64), bb = randn({70, 33}, DType::Float64);
  Tensor bc = randn({6, 33, 70}, DType::Float64);
  cpu::set_num_threads(1);
  Tensor c1 = matmul(a, b), d1 = matmul(ba, bb), e1 = matmul(ba, transpose(bc, 1, 2));
  cpu::set_num_threads(2);
  Tensor c2 = matmul(a, b), d2 = matmul(ba, bb), e2 = matmul(ba, transpose(bc, 1, 2));
  EXPECT_TRUE(bitwise_equal(c1, c2));
  EXPECT_TRUE(bitwise_equal(d1, d2));
  EXPECT_TRUE(bitwise_equal(e1, e2));
}

TEST(Matmul, ShapeErrorsNameTheOpAndShapes) {
  VK_EXPECT_ERROR(matmul(zeros({2, 3}), zeros({4, 5})), ShapeError, "matmul", "[2, 3]", "[4, 5]");
  VK_EXPECT_ERROR(matmul(zeros({3}), zeros({4})), ShapeError, "matmul", "[3]", "[4]");
  VK_EXPECT_ERROR(matmul(zeros({2, 2, 3}), zeros({3, 3, 4})), ShapeError, "matmul", "[2, 2, 3]",
                  "[3, 3, 4]");
  VK_EXPECT_ERROR(matmul(zeros({}), zeros({3})), ShapeError, "matmul");
  VK_EXPECT_ERROR(matmul(zeros({2, 2}, DType::Bool), zeros({2, 2}, DType::Bool)), DTypeError,
                  "matmul");
}

// addmm: the bias on every row of the product, by hand; its errors name the op and the shapes.
TEST(Addmm, BiasOnEveryRowAndErrors) {
  Tensor bias = values({10, 20}, {2}, false);
  Tensor a = values({1, 2, 3, 4, 5, 6}, {3, 2}, false), b = values({1, 0, 0, 1}, {2, 2}, false);
  expect_values(addmm(bias, a, b), {11, 22, 13, 24, 15, 26}, 0);
  // float32, a linear layer's x @ W^T + b over more rows than a tile: against matmul + bias
  manual_seed(4);
  Tensor x = randn({600, 70}), w = randn({90, 70}), bb = randn({90});
  const double err =
      amax(abs(addmm(bb, x, transpose(w, 0, 1)) - (matmul(x, transpose(w, 0, 1)) + bb))).item();
  EXPECT_LT(err, 1e-4);
  VK_EXPECT_ERROR(addmm(zeros({3}), zeros({2, 3}), zeros({3, 4})), ShapeError, "addmm", "[3]",
                  "[2, 3]", "[3, 4]");
  VK_EXPECT_ERROR(addmm(zeros({4}), zeros({2, 3}), zeros({2, 4})), ShapeError, "addmm");
  VK_EXPECT_ERROR(addmm(zeros({3, 4}), zeros({2, 3}), zeros({3, 4})), ShapeError, "addmm", "[3, 4]",
                  "expected [2, 4]");
  VK_EXPECT_ERROR(addmm(zeros({1, 2, 4}), zeros({2, 3}), zeros({3, 4})), ShapeError, "addmm");
  // a bias of the product's shape: added element by element
  Tensor full_bias = values({10, 20, 30, 40, 50, 60}, {3, 2}, false);
  expect_values(addmm(full_bias, a, b), {11, 22, 33, 44, 55, 66}, 0);
  VK_EXPECT_ERROR(
      addmm(zeros({4}, DType::Int64), zeros({2, 3}, DType::Int64), zeros({3, 4}, DType::Int64)),
      DTypeError, "addmm", "int64");
}

// ---- convolution ----

struct ConvSpec {
  int64_t N, C, H, W, O, kh, kw, sh, sw, ph, pw, dh, dw, groups;
};

// Direct convolution in double: out[n, o, y, x] = b[o] + sum_{c in o's group, i, j} ...
std::vector<double> naive_conv(const ConvSpec& s, const std::vector<double>& x,
                               const std::vector<double>& w, const std::vector<double>& b) {
  const int64_t OH = (s.H + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  const int64_t OW = (s.W + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  const int64_t Cg = s.C / s.groups, Og = s.O / s.groups;
  std::vector<double> out;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t o = 0; o < s.O; ++o)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = b.empty() ? 0.0 : b[o];
          const int64_t g = o / Og;
          for (int64_t cg = 0; cg < Cg; ++cg)
            for (int64_t i = 0; i < s.kh; ++i)
              for (int64_t j = 0; j < s.kw; ++j) {
                int64_t iy = oy * s.sh - s.ph + i * s.dh, ix = ox * s.sw - s.pw + j * s.dw;
                if (iy < 0 || iy >= s.H || ix < 0 || ix >= s.W) continue;
                int64_t c = g * Cg + cg;
                acc += x[((n * s.C + c) * s.H + iy) * s.W + ix] *
                       w[((o * Cg + cg) * s.kh + i) * s.kw + j];
              }
          out.push_back(acc);
        }
  return out;
}

void check_conv(const ConvSpec& s, DType dt, bool with_bias) {
  Tensor x = randn({s.N, s.C, s.H, s.W}, dt);
  Tensor w = randn({s.O, s.C / s.groups, s.kh, s.kw}, dt);
  Tensor b = with_bias ? randn({s.O}, dt) : Tensor();
  Tensor y = conv2d(x, w, b, s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, s.groups);
  std::vector<double> expected =
      naive_conv(s, to_vector(x), to_vector(w), with_bias ? to_vector(b) : std::vector<double>{});
  const int64_t OH = (s.H + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  const int64_t OW = (s.W + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  EXPECT_EQ(y.shape(), (Shape{s.N, s.O, OH, OW}));
  double tol = dt == DType::Float32 ? 1e-4 : 1e-11;
  expect_close(y, expected, tol, tol);
}

TEST(Conv2d, MatchesNaiveDirectConvolution) {
  manual_seed(21);
  // stride, padding, dilation and groups, rectangular everything
  check_conv({2, 4, 7, 6, 6, 3, 2, 2, 1, 1, 2, 1, 2, 2}, DType::Float64, true);
  check_conv({2, 4, 7, 6, 6, 3, 2, 2, 1, 1, 2, 1, 2, 2}, DType::Float32, false);
  check_conv({1, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1}, DType::Float64, false);
  // depthwise, and a 1x1 kernel (x read directly as the column matrix)
  check_conv({2, 3, 4, 5, 3, 3, 3, 1, 2, 1, 1, 1, 1, 3}, DType::Float64, true);
  check_conv({2, 5, 3, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1}, DType::Float64, true);
  // big enough that the columns are split into several blocks per image
  check_conv({1, 64, 64, 64, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1}, DType::Float32, true);
}

TEST(Conv2d, NonContiguousInputsAndWeights) {
  manual_seed(22);
  Tensor xl = randn({2, 5, 6, 3}, DType::Float64);  // channels-last storage
  Tensor x = permute(xl, {0, 3, 1, 2});
  Tensor wl = randn({3, 3, 3, 4}, DType::Float64);
  Tensor w = permute(wl, {3, 2, 0, 1});
  ASSERT_EQ(w.shape(), (Shape{4, 3, 3, 3}));
  Tensor y = conv2d(x, w, Tensor(), 1, 1, 1, 1, 1, 1, 1);
  Tensor y_ref = conv2d(contiguous(x), contiguous(w), Tensor(), 1, 1, 1, 1, 1, 1, 1);
  expect_close(y, to_vector(y_ref), 1e-12, 1e-12);
  ConvSpec s{2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  expect_close(y, naive_conv(s, to_vector(x), to_vector(w), {}), 1e-11, 1e-11);
}

TEST(Conv2d, GradientsMatchTheDefinition) {
  // dL/db = sum of g over N, H, W; dL/dx and dL/dW of sum(y) against a naive convolution's
  // linearity: d sum(conv(x, w)) / dw[o, c, i, j] = sum of x over the positions it multiplies.
  manual_seed(23);
  Tensor x = leaf({2, 2, 4, 4}), w = leaf({3, 2, 2, 2}), b = leaf({3});
  Tensor y = conv2d(x, w, b, 1, 1, 0, 0);
  autograd::backward(sum(y));
  expect_values(b.grad(), {2 * 9, 2 * 9, 2 * 9}, 1e-12);
  std::vector<double> xv = to_vector(x), dw = to_vector(w.grad());
  for (int64_t o = 0; o < 3; ++o)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          double s = 0;
          for (int64_t n = 0; n < 2; ++n)
            for (int64_t oy = 0; oy < 3; ++oy)
              for (int64_t ox = 0; ox < 3; ++ox) s += xv[((n * 2 + c) * 4 + oy + i) * 4 + ox + j];
          EXPECT_NEAR(dw[((o * 2 + c) * 2 + i) * 2 + j], s, 1e-12);
        }
}

TEST(Conv2d, BitwiseIdenticalAcrossThreadCounts) {
  ThreadsGuard guard;
  manual_seed(9);
  Tensor x = randn({3, 16, 20, 20}), w = randn({12, 8, 3, 3}), b = randn({12});
  Tensor xb = randn({1, 64, 64, 64}), wb = randn({16, 64, 3, 3});  // several column blocks
  cpu::set_num_threads(1);
  Tensor y1 = conv2d(x, w, b, 1, 1, 1, 1, 1, 1, 2), z1 = conv2d(xb, wb, Tensor(), 1, 1, 1, 1);
  cpu::set_num_threads(2);
  Tensor y2 = conv2d(x, w, b, 1, 1, 1, 1, 1, 1, 2), z2 = conv2d(xb, wb, Tensor(), 1, 1, 1, 1);
  EXPECT_TRUE(bitwise_equal(y1, y2));
  EXPECT_TRUE(bitwise_equal(z1, z2));
}

// The weight gradient by its definition, in double: dw[o, c, i, j] = sum over n, oy, ox of
// g[n, o, oy, ox] * x[n, c, oy sh - ph + i dh, ox sw - pw + j dw] (groups = 1).
std::vector<double> naive_conv_dw(const ConvSpec& s, const std::vector<double>& x,
                                  const std::vector<double>& g) {
  const int64_t OH = (s.H + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  const int64_t OW = (s.W + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  std::vector<double> dw(static_cast<size_t>(s.O * s.C * s.kh * s.kw), 0.0);
  for (int64_t o = 0; o < s.O; ++o)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t i = 0; i < s.kh; ++i)
        for (int64_t j = 0; j < s.kw; ++j) {
          double acc = 0;
          for (int64_t n = 0; n < s.N; ++n)
            for (int64_t oy = 0; oy < OH; ++oy)
              for (int64_t ox = 0; ox < OW; ++ox) {
                const int64_t iy = oy * s.sh - s.ph + i * s.dh, ix = ox * s.sw - s.pw + j * s.dw;
                if (iy < 0 || iy >= s.H || ix < 0 || ix >= s.W) continue;
                acc += g[((n * s.O + o) * OH + oy) * OW + ox] *
                       x[((n * s.C + c) * s.H + iy) * s.W + ix];
              }
          dw[static_cast<size_t>(((o * s.C + c) * s.kh + i) * s.kw + j)] = acc;
        }
  return dw;
}

// im2col copies a strided window's columns from a copy of the plane split by column phase
// (window.h); each case's phases, offsets (j dw) / sw and paddings differ, the input is
// contiguous and channels-last (a column step of C), the forward and the weight gradient both
// read those columns (shapes few enough channels for im2col, not oneDNN, Winograd or taps).
TEST(Conv2d, StridedColumnsReadAPhasedCopyAndMatchTheDefinition) {
  manual_seed(24);
  const std::vector<ConvSpec> specs = {
      {2, 3, 9, 11, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1},     // ResNet's strided 3x3
      {2, 2, 8, 13, 3, 3, 3, 1, 3, 0, 2, 1, 2, 1},     // sw 3, dilation 2: taps in phases 0, 2, 1
      {1, 3, 7, 12, 2, 2, 5, 3, 2, 1, 3, 2, 1, 1},     // padding wider than the stride; sh 3
      {2, 2, 6, 9, 3, 1, 4, 2, 4, 0, 1, 1, 3, 1},      // sw 4 > kw reach: some phases unused
      {2, 3, 9, 10, 4, 1, 1, 2, 2, 0, 0, 1, 1, 1},     // 1x1 stride 2: gathered, not copied
      {1, 1, 130, 130, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1},  // a plane past the copy's bound: walked
      // a stride of 2^63 - 1 (the fuzzer's): the phase count is bounded before any product
      {1, 1, 4, 4, 1, 2, 2, INT64_MAX, INT64_MAX, 0, 0, 1, 1, 1}};
  for (const ConvSpec& s : specs)
    for (DType dt : {DType::Float64, DType::Float32})
      for (bool channels_last : {false, true}) {
        SCOPED_TRACE(std::to_string(s.sw) + " " + std::to_string(s.W) + " " +
                     std::string(dtype_name(dt)) + (channels_last ? " channels-last" : ""));
        Tensor x = channels_last ? permute(randn({s.N, s.H, s.W, s.C}, dt), {0, 3, 1, 2})
                                 : randn({s.N, s.C, s.H, s.W}, dt);
        Tensor w = randn({s.O, s.C, s.kh, s.kw}, dt);
        const std::vector<double> xv = to_vector(x);
        const double tol = dt == DType::Float32 ? 1e-4 : 1e-11;
        Tensor y = conv2d(x, w, Tensor(), s.sh, s.sw, s.ph, s.pw, s.dh, s.dw);
        expect_close(y, naive_conv(s, xv, to_vector(w), {}), tol, tol);
        Tensor g = randn(y.shape(), dt);
        const Window2d win{s.kh, s.kw, s.sh, s.sw, s.ph, s.pw, s.dh, s.dw};
        expect_close(conv2d_backward_weight(g, x, w.shape(), win),
                     naive_conv_dw(s, xv, to_vector(g)), tol, tol);
      }
}

TEST(Conv2d, ShapeErrors) {
  VK_EXPECT_ERROR(conv2d(zeros({1, 1, 3, 3}), zeros({1, 1, 5, 5}), Tensor(), 1, 1, 0, 0),
                  ShapeError, "conv2d", "[1, 1, 3, 3]", "[1, 1, 5, 5]");
  // padding makes it fit
  EXPECT_EQ(conv2d(zeros({1, 1, 3, 3}), zeros({1, 1, 5, 5}), Tensor(), 1, 1, 1, 1).shape(),
            (Shape{1, 1, 1, 1}));
  VK_EXPECT_ERROR(conv2d(zeros({1, 3, 5, 5}), zeros({2, 2, 3, 3}), Tensor(), 1, 1, 0, 0),
                  ShapeError, "conv2d", "channels", "[1, 3, 5, 5]", "[2, 2, 3, 3]");
  VK_EXPECT_ERROR(conv2d(zeros({1, 3, 5, 5}), zeros({2, 1, 3, 3}), Tensor(), 1, 1, 0, 0, 1, 1, 2),
                  ShapeError, "conv2d", "groups");
  VK_EXPECT_ERROR(conv2d(zeros({1, 2, 5, 5}), zeros({2, 2, 3, 3}), zeros({3}), 1, 1, 0, 0),
                  ShapeError, "conv2d", "bias");
  VK_EXPECT_ERROR(conv2d(zeros({2, 5, 5}), zeros({2, 2, 3, 3}), Tensor(), 1, 1, 0, 0), ShapeError,
                  "conv2d", "[2, 5, 5]");
  VK_EXPECT_ERROR(im2col(zeros({1, 1, 2, 2}), win(3)), ShapeError, "im2col", "[1, 1, 2, 2]");
}

// ---- im2col / col2im ----

TEST(Im2Col, ValuesByHand) {
  Tensor x = values({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}, false);
  Tensor c = im2col(x, win(2));
  EXPECT_EQ(c.shape(), (Shape{1, 4, 4}));
  expect_values(c, {1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9});
  // padding 1, stride 2: windows at (-1, -1), (-1, 1), (1, -1), (1, 1)
  expect_values(im2col(x, win(2, 2, 1)), {0, 0, 0, 5, 0, 0, 4, 6, 0, 2, 0, 8, 1, 3, 7, 9});
  // col2im sums overlaps: every position counted once per window covering it
  expect_values(col2im(ones({1, 4, 4}, DType::Float64), 3, 3, win(2)), {1, 2, 1, 2, 4, 2, 1, 2, 1});
}

TEST(Im2Col, Col2ImIsTheAdjoint) {
  // <im2col(x), y> == <x, col2im(y)> for strided, padded, dilated, rectangular windows.
  manual_seed(31);
  for (Window2d w : {win(2, 2, 1), win(3, 1, 1, 2), Window2d{2, 3, 2, 1, 0, 1, 1, 2}}) {
    Tensor x = randn({2, 3, 7, 6}, DType::Float64);
    Tensor cx = im2col(x, w);
    Tensor y = randn(cx.shape(), DType::Float64);
    double lhs = sum(cx * y).item(), rhs = sum(x * col2im(y, 7, 6, w)).item();
    EXPECT_NEAR(lhs, rhs, 1e-10);
  }
}

// ---- pooling ----

TEST(MaxPool2d, ValuesAndIndicesByHandTiesTakeTheFirst) {
  Tensor x = values({1, 5, 2, 0,  //
                     3, 5, 7, 7,  //
                     0, 1, 2, 3,  //
                     4, 1, 3, 3},
                    {1, 1, 4, 4});
  PoolResult r = max_pool2d(x, win(2, 2));
  EXPECT_EQ(r.indices.dtype(), DType::Int64);
  expect_values(r.values, {5, 7, 4, 3});
  expect_values(r.indices, {1, 6, 12, 11});
  // padded, overlapping windows: position 6 is the argmax of two windows
  PoolResult p = max_pool2d(x, win(3, 2, 1));
  expect_values(p.values, {5, 7, 5, 7});
  expect_values(p.indices, {1, 6, 5, 6});
  autograd::backward(sum(p.values));
  expect_values(x.grad(), {0, 1, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  // max_pool2d_backward scatters directly
  Tensor g = values({1, 2, 3, 4}, {1, 1, 2, 2}, false);
  expect_values(max_pool2d_backward(g, p.indices, {1, 1, 4, 4}),
                {0, 1, 0, 0, 0, 3, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0});
}

// max_pool2d by its definition, over an (N, C, H, W) row-major plane stack: the first maximum in
// (i, j) order over the positions inside the plane, a NaN always taken; -1 where a window has
// none inside.
void naive_max_pool(const std::vector<double>& x, int64_t NC, int64_t H, int64_t W,
                    const Window2d& w, int64_t OH, int64_t OW, std::vector<double>& best,
                    std::vector<double>& at) {
  best.assign(static_cast<size_t>(NC * OH * OW), -INFINITY);
  at.assign(best.size(), -1);
  for (int64_t q = 0; q < NC; ++q)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const size_t o = static_cast<size_t>((q * OH + oh) * OW + ow);
        for (int64_t i = 0; i < w.kh; ++i)
          for (int64_t j = 0; j < w.kw; ++j) {
            const int64_t ih = oh * w.sh - w.ph + i * w.dh, iw = ow * w.sw - w.pw + j * w.dw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x[static_cast<size_t>((q * H + ih) * W + iw)];
            if (at[o] < 0 || v > best[o] || std::isnan(v)) best[o] = v, at[o] = double(ih * W + iw);
          }
      }
}

// The padded windows read a copy of each plane with -infinity in the padding (a padding element
// never wins except in a window of -infinity alone, walked again), through constant-stride
// copies: ties, NaNs, windows of -infinity only, strided (channels-last) inputs and rows longer
// than a block all give the definition's values and indices, in float32 and float64.
TEST(MaxPool2d, PaddedPoolsReadAPaddedCopyAndMatchTheDefinition) {
  manual_seed(7);
  struct Case {
    Shape shape;
    Window2d w;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 8}, win(3, 2, 1)},                         // ResNet's stem pool
      {{1, 2, 7, 7}, win(3, 1, 1)},                         // stride 1
      {{1, 2, 8, 9}, win(2, 2, 1, 2)},                      // dilated
      {{1, 2, 6, 11}, Window2d{2, 3, 1, 2, 1, 0, 1, 1}},    // rectangular, padding in h only
      {{1, 2, 5, 6}, Window2d{3, 2, 3, 1, 1, 1, 1, 2}},     // stride 3 in h
      {{1, 1, 3, 2101}, Window2d{3, 3, 1, 2, 1, 1, 1, 1}},  // rows of 1051 outputs
      {{1, 1, 3, 3}, win(2, 2, 1)},                         // a row of -infinity at the top
      {{2, 2, 10, 10}, win(2, 2)},                          // no padding (the plane itself)
  };
  for (DType dt : {DType::Float32, DType::Float64})
    for (bool channels_last : {false, true})
      for (const Case& c : cases) {
        const int64_t N = c.shape[0], C = c.shape[1], H = c.shape[2], W = c.shape[3];
        // Small integers (many ties), a NaN here and there, and a band of -infinity.
        std::vector<double> v(static_cast<size_t>(N * C * H * W));
        Tensor r = randint(0, 40, {static_cast<int64_t>(v.size())});
        std::vector<double> rv = to_vector(r);
        for (size_t k = 0; k < v.size(); ++k)
          v[k] = rv[k] < 2 ? NAN : rv[k] < 10 ? -INFINITY : std::floor(rv[k] / 10);
        for (int64_t k = 0; k < std::min<int64_t>(W, 5); ++k) v[static_cast<size_t>(k)] = -INFINITY;
        Tensor x = from_vector(v, c.shape, dt);
        if (channels_last) x = permute(contiguous(permute(x, {0, 2, 3, 1})), {0, 3, 1, 2});
        const Window2d& w = c.w;
        const int64_t OH = (H + 2 * w.ph - w.dh * (w.kh - 1) - 1) / w.sh + 1;
        const int64_t OW = (W + 2 * w.pw - w.dw * (w.kw - 1) - 1) / w.sw + 1;
        std::vector<double> best, at;
        naive_max_pool(v, N * C, H, W, w, OH, OW, best, at);
        PoolResult p = max_pool2d(x, w);
        ASSERT_EQ(p.values.shape(), (Shape{N, C, OH, OW}));
        std::vector<double> got = to_vector(p.values), got_at = to_vector(p.indices);
        for (size_t o = 0; o < best.size(); ++o) {
          ASSERT_TRUE(got[o] == best[o] || (std::isnan(got[o]) && std::isnan(best[o])))
              << "value " << o << " of " << x.describe() << ": " << got[o] << " vs " << best[o];
          ASSERT_EQ(got_at[o], at[o]) << "index " << o << " of " << x.describe();
        }
      }
}

TEST(MaxPool2d, Errors) {
  VK_EXPECT_ERROR(max_pool2d(zeros({1, 1, 4, 4}), win(2, 1, 2)), ShapeError, "max_pool2d",
                  "padding");
  VK_EXPECT_ERROR(max_pool2d(zeros({1, 1, 2, 2}), win(3)), ShapeError, "max_pool2d");
  VK_EXPECT_ERROR(max_pool2d_backward(zeros({1, 1, 1, 1}), ints({4}, {1, 1, 1, 1}), {1, 1, 2, 2}),
                  IndexError, "max_pool2d_backward");
}

TEST(AvgPool2d, ValuesByHandCountIncludePad) {
  Tensor x = values({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}, false);
  expect_values(avg_pool2d(x, win(2)), {3, 4, 6, 7});
  expect_values(avg_pool2d(x, win(2, 2, 1)), {0.25, 1.25, 2.75, 7});
  Tensor xg = values({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  autograd::backward(sum(avg_pool2d(xg, win(2))));
  expect_values(xg.grad(), {0.25, 0.5, 0.25, 0.5, 1, 0.5, 0.25, 0.5, 0.25});
}

TEST(Pooling, KernelFarLargerThanThePlaneReturns) {
  // Only the kernel taps that reach the input are walked: a kernel of 2**32 positions (padding
  // 2**31 - 1) pools the whole 4x4 plane in each of its 2x2 windows, at once.
  Tensor x = values({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4}, false);
  const int64_t k = int64_t{1} << 32;
  expect_values(max_pool2d(x, win(k, 2, k / 2 - 1)).values, {16, 16, 16, 16});
  const double avg = 136.0 / 18446744073709551616.0;  // the divisor is all k * k positions
  expect_values(avg_pool2d(x, win(k, 2, k / 2 - 1)), {avg, avg, avg, avg}, 1e-30);
  // backward (col2im over an expanded view of all taps) too: every input is in the 4 windows
  Tensor xg = values({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4});
  const int64_t k16 = int64_t{1} << 16;
  autograd::backward(sum(avg_pool2d(xg, win(k16, 2, k16 / 2 - 1))));
  expect_values(xg.grad(), std::vector<double>(16, 4.0 / (double(k16) * double(k16))), 1e-24);
}

TEST(Pooling, BitwiseIdenticalAcrossThreadCounts) {
  ThreadsGuard guard;
  manual_seed(41);
  Tensor x = randn({4, 8, 33, 31});
  cpu::set_num_threads(1);
  Tensor a1 = avg_pool2d(x, win(3, 2, 1)), m1 = max_pool2d(x, win(3, 2, 1)).values;
  Tensor c1 = col2im(im2col(x, win(3, 1, 1)), 33, 31, win(3, 1, 1));
  cpu::set_num_threads(2);
  Tensor a2 = avg_pool2d(x, win(3, 2, 1)), m2 = max_pool2d(x, win(3, 2, 1)).values;
  Tensor c2 = col2im(im2col(x, win(3, 1, 1)), 33, 31, win(3, 1, 1));
  EXPECT_TRUE(bitwise_equal(a1, a2));
  EXPECT_TRUE(bitwise_equal(m1, m2));
  EXPECT_TRUE(bitwise_equal(c1, c2));
}

}  // namespace
}  // namespace vk::test
