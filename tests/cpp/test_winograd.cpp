// float32 3x3 stride-1 convolutions and both their gradients as Winograd F(2x2, 3x3), and those
// of wide images as F(4x4, 3x3) (#18 item 4; backend/cpu/winograd.h):
// chosen for ResNet's wide layers and the MNIST net's second, checked against the float64
// convolution (im2col + GEMM) of the same values elementwise, relative to the sum of the terms'
// magnitudes, at shapes that reach every part of the kernels: tiles cut at odd edges, paddings
// 0, 1 and 2, a bias, a strided input, chunks that split an image and a weight gradient summed in
// parts; and bit for bit at one and two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/winograd.h"
#include "vkml/vkml.h"

namespace vk::test {
namespace {

cpu::ConvShape shape_of(const Shape& x, int64_t O, int64_t pad) {
  return {x[0], x[1], x[2], x[3], O, 3, 3, 1, 1, pad, pad, 1, 1};
}

Window2d win3(int64_t pad) { return Window2d{3, 3, 1, 1, pad, pad, 1, 1}; }

// |got - want| <= 1e-5 * scale + 1e-6 elementwise, scale the same sum over |terms|.
void expect_near_scaled(const Tensor& got, const Tensor& want, const Tensor& scale) {
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> g = to_vector(got), w = to_vector(want), s = to_vector(scale);
  int64_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(g[i] - w[i]) <= 1e-5 * s[i] + 1e-6) && bad++ < 5)
      ADD_FAILURE() << i << ": " << g[i] << " vs float64 " << w[i] << " (scale " << s[i] << ")";
  EXPECT_EQ(bad, 0);
}

// Regression (#18: ResNet-18's 3x3 convolutions ran at the FMA peak through im2col + GEMM and
// oneDNN's direct convolution, 0.99-1.07 of torch): the wide layers take Winograd; a deep layer's
// forward and input gradient (weights far bigger than its few tiles), narrow layers and other
// windows do not.
TEST(Winograd, ChosenForResNetsWideLayers) {
  const cpu::ConvShape layer1{16, 64, 16, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1};
  const cpu::ConvShape layer2{16, 128, 8, 8, 128, 3, 3, 1, 1, 1, 1, 1, 1};
  const cpu::ConvShape layer3{16, 256, 4, 4, 256, 3, 3, 1, 1, 1, 1, 1, 1};
  const cpu::ConvShape layer4{16, 512, 2, 2, 512, 3, 3, 1, 1, 1, 1, 1, 1};
  for (const cpu::ConvShape& s : {layer1, layer2}) {
    EXPECT_TRUE(cpu::use_winograd(s));
    EXPECT_TRUE(cpu::use_winograd_backward_input(s));
    EXPECT_TRUE(cpu::use_winograd_weight_grad(s));
  }
  EXPECT_FALSE(cpu::use_winograd(layer3));
  EXPECT_FALSE(cpu::use_winograd_backward_input(layer3));
  EXPECT_TRUE(cpu::use_winograd_weight_grad(layer3));
  EXPECT_FALSE(cpu::use_winograd(layer4));
  EXPECT_FALSE(cpu::use_winograd_weight_grad(layer4));
  const cpu::ConvShape mnist2{64, 32, 26, 26, 64, 3, 3, 1, 1, 0, 0, 1, 1};
  EXPECT_TRUE(cpu::use_winograd(mnist2));
  EXPECT_TRUE(cpu::use_winograd_backward_input(mnist2));  // both by F(4x4) from 32 channels
  EXPECT_TRUE(cpu::use_winograd_weight_grad(mnist2));
  cpu::ConvShape narrow = layer2;  // 8 x 8: F(2x2) only, and its input gradient from 64 channels
  narrow.C = 32;
  EXPECT_TRUE(cpu::use_winograd(narrow));
  EXPECT_FALSE(cpu::use_winograd_backward_input(narrow));
  EXPECT_FALSE(cpu::use_winograd_weight_grad(narrow));
  const cpu::ConvShape small{64, 32, 4, 4, 64, 3, 3, 1, 1, 1, 1, 1, 1};  // rows of 4 outputs
  EXPECT_FALSE(cpu::use_winograd(small));
  cpu::ConvShape other = layer1;
  other.sh = other.sw = 2;  // strided
  EXPECT_FALSE(cpu::use_winograd(other));
  other = layer1;
  other.dh = other.dw = 2;  // dilated
  EXPECT_FALSE(cpu::use_winograd(other));
  other = layer1;
  other.kh = other.kw = 5;
  EXPECT_FALSE(cpu::use_winograd(other));
  other = layer1;
  other.ph = 3;  // padding past the kernel
  EXPECT_FALSE(cpu::use_winograd(other));
  other = layer1;
  other.C = 16;
  EXPECT_FALSE(cpu::use_winograd(other));
}

struct Case {
  Shape x;
  int64_t O, pad;
  bool bias, strided;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {{4, 64, 9, 9}, 64, 1, true, false},     // odd sizes: the last tiles cut
      {{8, 64, 10, 11}, 72, 0, false, false},  // no padding (the input gradient's is 2)
      {{4, 64, 5, 7}, 80, 2, true, true},      // padding 2, a strided input
      {{2, 64, 70, 66}, 64, 1, false, false},  // chunks of 7 tile rows: 10 chunks, 8 parts
      // F(4x4), all three passes: 40 and 33 channels (vectors of channels, the last partial), 17
      // outputs a row (the last tile cut), a bias and a strided input; padding 2 (the input
      // gradient's 0)
      {{3, 40, 21, 19}, 33, 0, true, true},
      {{2, 32, 16, 20}, 48, 2, false, false}};
  return c;
}

TEST(Winograd, MatchesTheFloat64ConvolutionAndItsGradients) {
  manual_seed(5);
  for (const Case& c : cases()) {
    SCOPED_TRACE(testing::Message() << "x " << shape_str(c.x) << " O " << c.O << " pad " << c.pad);
    const cpu::ConvShape s = shape_of(c.x, c.O, c.pad);
    ASSERT_TRUE(cpu::use_winograd(s));
    ASSERT_TRUE(cpu::use_winograd_backward_input(s));
    ASSERT_TRUE(cpu::use_winograd_weight_grad(s));
    const Shape ws{c.O, c.x[1], 3, 3};
    const Tensor x64 = randn(c.x, DType::Float64), w64 = randn(ws, DType::Float64);
    const Tensor b64 = c.bias ? randn({c.O}, DType::Float64) : Tensor();
    Tensor x = cast(x64, DType::Float32);
    if (c.strided)  // every other row of a taller image
      x = slice(cast(repeat_interleave(x64, 2, 2), DType::Float32), 2, 0, 2 * c.x[2], 2);
    const Tensor w = cast(w64, DType::Float32), b = c.bias ? cast(b64, DType::Float32) : Tensor();
    const int64_t p = c.pad;
    const Tensor y64 = conv2d(x64, w64, b64, 1, 1, p, p);
    expect_near_scaled(conv2d(x, w, b, 1, 1, p, p), y64,
                       conv2d(abs(x64), abs(w64), c.bias ? abs(b64) : Tensor(), 1, 1, p, p));
    const Tensor g64 = randn(y64.shape(), DType::Float64), g = cast(g64, DType::Float32);
    expect_near_scaled(conv2d_backward_input(g, w, c.x, win3(p)),
                       conv2d_backward_input(g64, w64, c.x, win3(p)),
                       conv2d_backward_input(abs(g64), abs(w64), c.x, win3(p)));
    expect_near_scaled(conv2d_backward_weight(g, x, ws, win3(p)),
                       conv2d_backward_weight(g64, x64, ws, win3(p)),
                       conv2d_backward_weight(abs(g64), abs(x64), ws, win3(p)));
  }
}

TEST(Winograd, ResultsIndependentOfThreadCount) {
  const int saved = cpu::num_threads();
  for (const Case& c : {cases()[0], cases()[3], cases()[4]}) {
    const Shape ws{c.O, c.x[1], 3, 3};
    const Tensor x = randn(c.x), w = randn(ws), b = randn({c.O});
    const Tensor g = randn(conv2d(x, w, b, 1, 1, c.pad, c.pad).shape());
    std::vector<double> at[2][3];
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      at[threads - 1][0] = to_vector(conv2d(x, w, b, 1, 1, c.pad, c.pad));
      at[threads - 1][1] = to_vector(conv2d_backward_input(g, w, c.x, win3(c.pad)));
      at[threads - 1][2] = to_vector(conv2d_backward_weight(g, x, ws, win3(c.pad)));
    }
    for (int k = 0; k < 3; ++k) EXPECT_EQ(at[0][k], at[1][k]) << "pass " << k;
  }
  cpu::set_num_threads(saved);
}

}  // namespace
}  // namespace vk::test
