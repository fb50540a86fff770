// bfloat16 matrix products and convolutions (#19 item 3): on AVX512-BF16 / AMX hardware their
// GEMMs run through oneDNN (backend/cpu/onednn.h), elsewhere they widen to float32 and sgemm.
// Either way the result is the float32-accumulated product rounded once to bfloat16: checked
// against float64 products of the same bfloat16 values, in every layout BLAS sees (row- and
// column-major operands, K slices, batches, a bias), at one and two threads bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "vkml/core/kernel.h"
#include "vkml/vkml.h"

namespace vk {
namespace {

// A (shape) bfloat16 tensor of values near N(0, 1), and its values.
Tensor bf16_randn(const Shape& shape) {
  NoGradGuard ng;
  return cast(randn(shape, DType::Float32), DType::BFloat16);
}

// Every element of `got` (bfloat16) within one rounding of the float64 product `want` (computed
// from the same bfloat16 inputs), plus float32 accumulation error: 2^-16 of the terms' magnitudes
// `scale` (sum |a_ik b_kj|), ~1000 float32 roundings, far below any wrong term or missing slice.
void expect_rounded_product(const Tensor& got, const Tensor& want, const Tensor& scale) {
  ASSERT_EQ(got.dtype(), DType::BFloat16);
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> g = to_vector(got), w = to_vector(want), s = to_vector(scale);
  int64_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double tol = std::ldexp(std::fabs(w[i]), -8) + std::ldexp(s[i], -16);
    if (!(std::fabs(g[i] - w[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": " << g[i] << " vs float64 " << w[i] << " (tol " << tol
                    << ")";
  }
  EXPECT_EQ(bad, 0);
}

// a @ b in float64 from the same bfloat16 values, and sum |a| @ |b| (the accumulation's scale).
std::pair<Tensor, Tensor> reference(const Tensor& a, const Tensor& b) {
  const Tensor a64 = cast(a, DType::Float64), b64 = cast(b, DType::Float64);
  return {matmul(a64, b64), matmul(abs(a64), abs(b64))};
}

TEST(Bf16Gemm, NativeWhereverTheHardwareIs) {
  // On a machine with AVX512-BF16 a build with oneDNN must use it: a silent fallback to sgemm
  // (half the speed) is what this catches. VKML_CPU_CAPABILITY below avx512 turns it off.
  const char* cap = std::getenv("VKML_CPU_CAPABILITY");
  const bool capped = cap != nullptr && *cap != '\0' && std::string(cap) != "avx512";
  __builtin_cpu_init();
  const bool hardware = __builtin_cpu_supports("avx512bf16");
  // oneDNN's own cap (ONEDNN_MAX_CPU_ISA) may turn it off too, never on without the hardware.
  const bool onednn_capped = std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA");
  if (onednn_capped)
    EXPECT_LE(cpu::has_bf16_gemm(), hardware && !capped);
  else
    EXPECT_EQ(cpu::has_bf16_gemm(), cpu::has_onednn() && hardware && !capped);
  // Registered for bfloat16 exactly when native; otherwise the op table widens.
  register_builtin_backends();
  for (OpKind op : {OpKind::Matmul, OpKind::Addmm, OpKind::Conv2d})
    EXPECT_EQ(contains(kernel_dtypes(DeviceType::CPU, op), DType::BFloat16), cpu::has_bf16_gemm());
  EXPECT_NE(std::string(cpu::bf16_gemm_name()), "");
}

TEST(Bf16Gemm, EveryOperandLayoutMatchesTheFloat64Product) {
  struct Case {
    int64_t M, N, K;
  };
  // 1 x 1 edges, odd sizes, a product cut into row tiles, one cut into column tiles, one cut
  // into K slices (K long against C), and one with K = 1.
  for (Case c : {Case{1, 1, 1}, Case{3, 5, 7}, Case{33, 17, 65}, Case{1100, 40, 96},
                 Case{40, 1100, 96}, Case{48, 40, 4096}, Case{64, 64, 1}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << c.M << "x" << c.N << "x" << c.K << " ta=" << ta << " tb=" << tb);
        // A column-major operand: the transpose of a row-major one.
        const Tensor a = ta ? transpose(bf16_randn({c.K, c.M}), 0, 1) : bf16_randn({c.M, c.K});
        const Tensor b = tb ? transpose(bf16_randn({c.N, c.K}), 0, 1) : bf16_randn({c.K, c.N});
        const auto [want, scale] = reference(a, b);
        expect_rounded_product(matmul(a, b), want, scale);
      }
  }
}

TEST(Bf16Gemm, StridedBatchedAndBiasedProducts) {
  // A strided operand (every other column) is packed; a batch runs tile by tile.
  const Tensor wide = bf16_randn({20, 64});
  const Tensor a = slice(wide, 1, 0, 64, 2);  // 20 x 32, column stride 2
  const Tensor b = bf16_randn({32, 24});
  auto [want, scale] = reference(a, b);
  expect_rounded_product(matmul(a, b), want, scale);

  const Tensor ba = bf16_randn({3, 4, 9, 33}), bb = bf16_randn({3, 4, 33, 10});
  std::tie(want, scale) = reference(ba, bb);
  expect_rounded_product(matmul(ba, bb), want, scale);

  // addmm: the bias enters the float32 accumulator before the product, rounded once with it.
  const Tensor bias = bf16_randn({24}), bias2 = bf16_randn({20, 24});
  for (const Tensor& bi : {bias, bias2}) {
    const Tensor got = addmm(bi, a, b);
    std::tie(want, scale) = reference(a, b);
    want = add(want, cast(bi, DType::Float64));
    scale = add(scale, abs(cast(bi, DType::Float64)));
    expect_rounded_product(got, want, scale);
  }
}

TEST(Bf16Gemm, ConvolutionsMatchTheFloat64Convolution) {
  // im2col + GEMM per block of output positions, each block's float32 product rounded once: 3x3
  // padded, strided, a 1x1 read in place, grouped, and an image big enough to be cut in blocks.
  struct Case {
    Shape x, w;
    int64_t stride, pad, groups;
    bool bias;
  };
  for (const Case& c : {Case{{2, 3, 9, 9}, {8, 3, 3, 3}, 1, 1, 1, true},
                        Case{{1, 16, 15, 15}, {32, 16, 3, 3}, 2, 1, 1, false},
                        Case{{2, 24, 7, 7}, {12, 24, 1, 1}, 1, 0, 1, true},
                        Case{{2, 8, 10, 10}, {8, 4, 3, 3}, 1, 1, 2, true},
                        Case{{1, 64, 64, 64}, {16, 64, 3, 3}, 1, 1, 1, true}}) {
    SCOPED_TRACE(testing::Message() << "x " << c.x[1] << "x" << c.x[2] << " w " << c.w[0]
                                    << " stride " << c.stride << " groups " << c.groups);
    const Tensor x = bf16_randn(c.x), w = bf16_randn(c.w);
    const Tensor b = c.bias ? bf16_randn({c.w[0]}) : Tensor();
    const Tensor got = conv2d(x, w, b, c.stride, c.stride, c.pad, c.pad, 1, 1, c.groups);
    const Tensor x64 = cast(x, DType::Float64), w64 = cast(w, DType::Float64);
    const Tensor b64 = c.bias ? cast(b, DType::Float64) : Tensor();
    const Tensor want = conv2d(x64, w64, b64, c.stride, c.stride, c.pad, c.pad, 1, 1, c.groups);
    const Tensor scale = conv2d(abs(x64), abs(w64), c.bias ? abs(b64) : Tensor(), c.stride,
                                c.stride, c.pad, c.pad, 1, 1, c.groups);
    expect_rounded_product(got, want, scale);
  }
}

TEST(Bf16Gemm, ResultsIndependentOfThreadCount) {
  const int saved = cpu::num_threads();
  const Tensor a = bf16_randn({300, 520}), b = bf16_randn({520, 260});
  const Tensor ka = bf16_randn({40, 4096}), kb = bf16_randn({4096, 48});  // K slices
  cpu::set_num_threads(1);
  const std::vector<double> one = to_vector(matmul(a, b)), kone = to_vector(matmul(ka, kb));
  cpu::set_num_threads(2);
  const std::vector<double> two = to_vector(matmul(a, b)), ktwo = to_vector(matmul(ka, kb));
  cpu::set_num_threads(saved);
  EXPECT_EQ(one, two);
  EXPECT_EQ(kone, ktwo);
}

TEST(Bf16Gemm, GradientsOfBf16LeavesAreBf16Products) {
  // d(sum(a @ b))/da = ones @ b^T: each element a sum of a row of b, rounded once.
  Tensor a = bf16_randn({6, 40}), b = bf16_randn({40, 5});
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  autograd::backward(sum(matmul(a, b)));
  ASSERT_EQ(a.grad().dtype(), DType::BFloat16);
  ASSERT_EQ(b.grad().dtype(), DType::BFloat16);
  const Tensor ones = full({6, 5}, 1.0, DType::Float64);
  const Tensor b64 = cast(b.detach(), DType::Float64), a64 = cast(a.detach(), DType::Float64);
  expect_rounded_product(a.grad(), matmul(ones, transpose(b64, 0, 1)),
                         matmul(ones, transpose(abs(b64), 0, 1)));
  expect_rounded_product(b.grad(), matmul(transpose(a64, 0, 1), ones),
                         matmul(transpose(abs(a64), 0, 1), ones));
}

TEST(Bf16Gemm, DirectCallsRefuseWithoutTheHardware) {
  if (cpu::has_bf16_gemm()) {
    // A product of nothing (K = 0) writes zeros and never reaches oneDNN's shape checks.
    std::vector<float> c(6, 7.0f);
    cpu::bf16_gemm(false, false, 2, 3, 0, nullptr, 1, nullptr, 3, false, c.data(), 3);
    EXPECT_EQ(c, std::vector<float>(6, 0.0f));
  } else {
    float c = 0.0f;
    const BFloat16 one(1.0f);
    EXPECT_THROW(cpu::bf16_gemm(false, false, 1, 1, 1, &one, 1, &one, 1, false, &c, 1),
                 RuntimeError);
  }
}

}  // namespace
}  // namespace vk
