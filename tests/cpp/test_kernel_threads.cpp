// Kernels whose loops or thread split are shaped for speed give the same bits at 1, 2 and 3
// threads, and the right values: the tiled copy of a transposed operand (whole tiles handed out
// among threads, edges walked plainly), where's bit select, gelu's one-formula float path,
// col2im's vectorised rows, conv2d forward and backward passes (im2col, Winograd, by taps) and a
// padded max pool. Run under ThreadSanitizer too (make test-tsan).
#include <cstring>

#include "test_util.h"
#include "vkml/backend/cpu/linalg.h"

namespace vk::test {
namespace {

bool same_bits(const Tensor& x, const Tensor& y) {
  Tensor a = contiguous(x), b = contiguous(y);
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.numel() * dtype_size(a.dtype())) == 0;
}

std::vector<Tensor> kernels_at(int threads) {
  cpu::set_num_threads(threads);
  manual_seed(11);
  std::vector<Tensor> r;
  // transposed copies: tile multiples, ragged edges, a batch dim in front
  for (Shape s : {Shape{256, 256}, Shape{300, 77}, Shape{3, 130, 1030}})
    r.push_back(contiguous(transpose(randn(s), -1, -2)));
  Tensor big = randn({1 << 20});
  r.push_back(where(gt(big, zeros({1})), big, zeros({1})));
  r.push_back(gelu(big));
  r.push_back(gelu(big * 4.0));
  r.push_back(gelu(cast(big, DType::Float64)));
  // conv2d forward and backward (input, weight, bias gradients) on a conv.large-like shape
  Tensor x = randn({8, 16, 28, 28}).set_requires_grad(true);
  Tensor w = (randn({32, 16, 3, 3}) * 0.1).detach().set_requires_grad(true);
  Tensor b = zeros({32}).set_requires_grad(true);
  Tensor y = conv2d(x, w, b, 1, 1, 1, 1);
  autograd::backward(y, randn(y.shape()));
  r.insert(r.end(), {y, x.grad(), w.grad(), b.grad()});
  // a batch big enough that conv2d's rule works a chunk of images at a time
  Tensor x2 = randn({10, 32, 28, 28}).set_requires_grad(true);
  Tensor w2 = (randn({64, 32, 3, 3}) * 0.1).detach().set_requires_grad(true);
  Tensor y2 = conv2d(x2, w2, Tensor(), 1, 1, 1, 1);
  autograd::backward(y2, randn(y2.shape()));
  r.insert(r.end(), {x2.grad(), w2.grad()});
  // Winograd's three passes by F(4x4) (30 x 30: 3 chunks of tiles, the weight gradient in 3
  // parts) and by F(2x2) (14 x 14: 2 chunks, 2 parts), a padded 3x3 onto 2x2 by taps (forward
  // and weight gradient), a padded max pool over its plane copies
  Tensor x3 = randn({4, 64, 30, 30}).set_requires_grad(true);
  Tensor w3 = (randn({64, 64, 3, 3}) * 0.1).detach().set_requires_grad(true);
  Tensor y3 = conv2d(x3, w3, Tensor(), 1, 1, 1, 1);
  autograd::backward(y3, randn(y3.shape()));
  r.insert(r.end(), {y3, x3.grad(), w3.grad()});
  Tensor x5 = randn({8, 64, 14, 14}).set_requires_grad(true);
  Tensor w5 = (randn({64, 64, 3, 3}) * 0.1).detach().set_requires_grad(true);
  Tensor y5 = conv2d(x5, w5, Tensor(), 1, 1, 1, 1);
  autograd::backward(y5, randn(y5.shape()));
  r.insert(r.end(), {y5, x5.grad(), w5.grad()});
  Tensor x4 = randn({6, 64, 2, 2}).set_requires_grad(true);
  Tensor w4 = (randn({96, 64, 3, 3}) * 0.1).detach().set_requires_grad(true);
  Tensor y4 = conv2d(x4, w4, Tensor(), 1, 1, 1, 1);
  autograd::backward(y4, randn(y4.shape()));
  r.insert(r.end(), {y4, x4.grad(), w4.grad()});
  PoolResult pool = max_pool2d(randn({4, 8, 33, 31}), Window2d{3, 3, 2, 2, 1, 1, 1, 1});
  r.insert(r.end(), {pool.values, pool.indices});
  // products cut into tiles (a power of two of them) and a small one over a long K cut into
  // K slices added in order, float and double
  for (DType dt : {DType::Float32, DType::Float64}) {
    r.push_back(matmul(randn({384, 96}, dt), randn({96, 700}, dt)));
    r.push_back(matmul(randn({100, 3000}, dt), randn({3000, 60}, dt)));
    r.push_back(matmul(transpose(randn({4097, 128}, dt), 0, 1), randn({4097, 128}, dt)));
    // a weight gradient: K long next to both sides of C, sliced instead of tiled
    r.push_back(matmul(transpose(randn({2048, 512}, dt), 0, 1), randn({2048, 128}, dt)));
    r.push_back(addmm(randn({60}, dt), randn({100, 3000}, dt), randn({3000, 60}, dt)));
    r.push_back(addmm(randn({700}, dt), randn({384, 96}, dt), randn({96, 700}, dt)));
  }
  cpu::set_num_threads(2);
  return r;
}

// A product over a long K is cut into K slices (gemm_tiles' ksplit) whose products are added in
// order: the result matches a double-precision reference.
TEST(KernelThreads, KSplitProductValues) {
  manual_seed(3);
  const cpu::GemmTiles t = cpu::gemm_tiles(100, 60, 3000);
  ASSERT_GT(t.ksplit, 1) << "the shape no longer takes the K-split path";
  ASSERT_EQ(cpu::gemm_tiles(100, 60, 3000, /*split_k=*/false).ksplit, 1);
  ASSERT_GT(cpu::gemm_tiles(512, 128, 2048).ksplit, 1) << "a weight gradient is not K-sliced";
  EXPECT_EQ(cpu::gemm_tiles(2048, 2048, 8192).ksplit, 1)
      << "a big C is K-sliced (C-sized partials) instead of tiled";
  for (bool transposed : {false, true}) {
    Tensor a = randn({100, 3000}), b = randn({3000, 60});
    if (transposed) a = transpose(contiguous(transpose(a, 0, 1)), 0, 1);  // column-major a
    Tensor got = cast(matmul(a, b), DType::Float64);
    // the reference: float64 products of K chunks too small to be split themselves
    Tensor want = zeros({100, 60}, DType::Float64);
    for (int64_t k0 = 0; k0 < 3000; k0 += 250)
      want = want + matmul(cast(slice(a, 1, k0, k0 + 250, 1), DType::Float64),
                           cast(slice(b, 0, k0, k0 + 250, 1), DType::Float64));
    ASSERT_EQ(cpu::gemm_tiles(100, 60, 250).ksplit, 1);
    const double err = amax(abs(got - want)).item();
    EXPECT_LT(err, 1e-3) << "transposed " << transposed;
    // with a bias: it is added once, to the first slice's product
    Tensor bias = randn({60});
    Tensor got_b = cast(addmm(bias, a, b), DType::Float64);
    EXPECT_LT(amax(abs(got_b - (want + cast(bias, DType::Float64)))).item(), 1e-3);
  }
}

TEST(KernelThreads, BitwiseIdenticalAt1To3Threads) {
  const int saved = cpu::num_threads();
  const std::vector<Tensor> one = kernels_at(1), two = kernels_at(2), three = kernels_at(3);
  cpu::set_num_threads(saved);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(same_bits(one[i], two[i])) << "result " << i << " differs at 2 threads";
    EXPECT_TRUE(same_bits(one[i], three[i])) << "result " << i << " differs at 3 threads";
  }
}

// conv2d's rule on a big batch (chunks of images) against the same rule image by image (one
// product for the whole batch), plain and grouped. The two may take different kernels (the batch
// Winograd F(4x4, 3x3) or oneDNN, one image im2col + GEMM), each within a few float32 roundings
// of the sum of its terms' magnitudes, so they are compared relative to the gradients' size
// (on Zen 3's AVX2 kernels they differed by 1.8e-5 where |dx| reaches 12; a lost or misplaced
// chunk differs by O(1)).
TEST(KernelThreads, Conv2dChunkedGradValues) {
  manual_seed(5);
  for (int64_t groups : {1, 2}) {
    const int64_t N = 10;
    Tensor x = randn({N, 32, 28, 28}).set_requires_grad(true);
    Tensor w = (randn({64, 32 / groups, 3, 3}) * 0.1).detach().set_requires_grad(true);
    Tensor y = conv2d(x, w, Tensor(), 1, 1, 1, 1, 1, 1, groups);
    Tensor g = randn(y.shape());
    autograd::backward(y, g);
    Tensor dw_sum = zeros(w.shape());
    const double dx_scale = amax(abs(x.grad())).item();
    for (int64_t n = 0; n < N; ++n) {
      Tensor xn = slice(x, 0, n, n + 1).detach().set_requires_grad(true);
      Tensor wn = w.detach().set_requires_grad(true);
      Tensor yn = conv2d(xn, wn, Tensor(), 1, 1, 1, 1, 1, 1, groups);
      autograd::backward(yn, slice(g, 0, n, n + 1));
      const double dx_err = amax(abs(sub(xn.grad(), slice(x.grad(), 0, n, n + 1)))).item();
      EXPECT_LE(dx_err, 1e-5 * dx_scale) << "groups " << groups << " image " << n;
      dw_sum = add(dw_sum, wn.grad());
    }
    const double dw_err = amax(abs(sub(dw_sum, w.grad()))).item();
    const double dw_scale = amax(abs(dw_sum)).item();
    EXPECT_LE(dw_err, 1e-5 * dw_scale) << "groups " << groups;
  }
}

TEST(KernelThreads, TransposedCopyValues) {
  for (Shape s : {Shape{256, 256}, Shape{300, 77}, Shape{3, 130, 1030}, Shape{64, 8}}) {
    Tensor x = randn(s);
    Tensor t = contiguous(transpose(x, -1, -2));
    const int64_t R = s[s.size() - 2], C = s[s.size() - 1], B = x.numel() / (R * C);
    const float* px = contiguous(x).data<float>();
    const float* pt = t.data<float>();
    int64_t wrong = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < C; ++j) wrong += pt[(b * C + j) * R + i] != px[(b * R + i) * C + j];
    EXPECT_EQ(wrong, 0) << shape_str(s);
  }
}

TEST(KernelThreads, WhereSelectsBits) {
  Tensor c = from_vector({1, 0, 1, 0, 1}, {5}, DType::Bool);
  const double nan = std::nan("");
  Tensor a = from_vector({-0.0, 1.0, nan, 3.0, 4.0}, {5}, DType::Float64);
  Tensor b = from_vector({9.0, -0.0, 7.0, nan, 6.0}, {5}, DType::Float64);
  std::vector<double> got = to_vector(where(c, a, b));
  EXPECT_TRUE(got[0] == 0.0 && std::signbit(got[0]));
  EXPECT_TRUE(got[1] == 0.0 && std::signbit(got[1]));
  EXPECT_TRUE(std::isnan(got[2]));
  EXPECT_TRUE(std::isnan(got[3]));
  EXPECT_EQ(got[4], 4.0);
  Tensor ia = from_vector({1, 2, 3, 4, 5}, {5}, DType::Int64);
  Tensor ib = from_vector({-1, -2, -3, -4, -5}, {5}, DType::Int64);
  EXPECT_EQ(to_vector(where(c, ia, ib)), (std::vector<double>{1, -2, 3, -4, 5}));
  Tensor ba = from_vector({1, 1, 0, 0, 1}, {5}, DType::Bool);
  Tensor bb = from_vector({0, 0, 1, 1, 0}, {5}, DType::Bool);
  EXPECT_EQ(to_vector(where(c, ba, bb)), (std::vector<double>{1, 0, 0, 1, 1}));
}

}  // namespace
}  // namespace vk::test
