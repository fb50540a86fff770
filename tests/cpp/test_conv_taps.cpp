// Convolutions onto few output positions by kernel position, the taps that read only padding
// skipped (#18; backend/cpu/conv_taps.h): chosen for ResNet's deep padded layers; the forward and
// the weight gradient (and the input gradient beside them, by its own kernels) against the
// composite rule (im2col, matmul, col2im) in float64 to 1e-12 and in float32 to 1e-5, with
// strides, dilation, a bias, positions whose taps differ and taps that read nothing; bit for bit
// at one and two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"
#include "vkml/backend/cpu/conv_taps.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/vkml.h"

namespace vk::test {
namespace {

struct Case {
  Shape x, w;
  Window2d win;
  bool bias;
  bool forward, weight_grad;  // which go by taps
};

cpu::ConvShape shape_of(const Case& c) {
  return {c.x[0],   c.x[1],   c.x[2],   c.x[3],   c.w[0],   c.w[2],  c.w[3],
          c.win.sh, c.win.sw, c.win.ph, c.win.pw, c.win.dh, c.win.dw};
}

Window2d window(int64_t k, int64_t s, int64_t p, int64_t d = 1) { return {k, k, s, s, p, p, d, d}; }

// The composite rule: y = W @ im2col(x) (+ b), dx = col2im(W^T @ g), dW = sum over n of
// g @ im2col(x)^T.
Tensor reference_y(const Tensor& x, const Tensor& w, const Tensor& b, const Window2d& win,
                   const Shape& ys) {
  Tensor y = reshape(matmul(reshape(w, {w.shape()[0], -1}), im2col(x, win)), ys);
  return b.defined() ? y + reshape(b, {1, -1, 1, 1}) : y;
}
Tensor reference_dx(const Tensor& g, const Tensor& w, const Shape& xs, const Window2d& win) {
  const int64_t N = xs[0], O = w.shape()[0], L = g.shape()[2] * g.shape()[3];
  Tensor cols = matmul(transpose(reshape(w, {O, -1}), 0, 1), reshape(g, {N, O, L}));
  return col2im(cols, xs[2], xs[3], win);
}
Tensor reference_dw(const Tensor& g, const Tensor& x, const Shape& ws, const Window2d& win) {
  const int64_t N = x.shape()[0], O = ws[0], L = g.shape()[2] * g.shape()[3];
  Tensor cols = im2col(x, win);
  return reshape(sum(matmul(reshape(g, {N, O, L}), transpose(cols, 1, 2)), {0}), ws);
}

// Regression (#18: ResNet-18's 512-channel 3x3 layer at 2x2 multiplied 20 of every 36 weights by
// the padding's zeros, 4.2 ms forward through oneDNN and 3.5 for its weight gradient): the
// forward goes by taps where at most half the (position, tap) pairs read the image, the weight
// gradient onto 4 positions or fewer; narrow layers and ones with many positions do not.
TEST(ConvByTaps, ChosenForDeepPaddedLayers) {
  const cpu::ConvShape layer4{16, 512, 2, 2, 512, 3, 3, 1, 1, 1, 1, 1, 1};  // 16 of 36 pairs
  const cpu::ConvShape layer3{16, 256, 4, 4, 256, 3, 3, 1, 1, 1, 1, 1, 1};  // 100 of 144
  const cpu::ConvShape down4{16, 256, 4, 4, 512, 3, 3, 2, 2, 1, 1, 1, 1};   // 25 of 36
  const cpu::ConvShape down3{16, 128, 8, 8, 256, 3, 3, 2, 2, 1, 1, 1, 1};   // 121 of 144
  EXPECT_TRUE(cpu::use_conv_by_taps(layer4));
  EXPECT_TRUE(cpu::use_conv_weight_grad_by_taps(layer4));
  EXPECT_FALSE(cpu::use_conv_by_taps(layer3));
  EXPECT_FALSE(cpu::use_conv_weight_grad_by_taps(layer3));
  EXPECT_FALSE(cpu::use_conv_by_taps(down4));
  EXPECT_TRUE(cpu::use_conv_weight_grad_by_taps(down4));
  EXPECT_FALSE(cpu::use_conv_by_taps(down3));
  EXPECT_FALSE(cpu::use_conv_weight_grad_by_taps(down3));
  for (const cpu::ConvShape& s : {cpu::ConvShape{16, 256, 4, 4, 512, 1, 1, 2, 2, 0, 0, 1, 1},
                                  cpu::ConvShape{16, 32, 2, 2, 32, 3, 3, 1, 1, 1, 1, 1, 1},
                                  cpu::ConvShape{16, 64, 8, 8, 64, 5, 5, 1, 1, 2, 2, 1, 1}}) {
    EXPECT_FALSE(cpu::use_conv_by_taps(s));  // 1x1, narrow, 64 positions
    EXPECT_FALSE(cpu::use_conv_weight_grad_by_taps(s));
  }
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {{6, 64, 2, 2}, {64, 64, 3, 3}, window(3, 1, 1), true, true, true},    // ResNet's last stage
      {{3, 64, 3, 3}, {72, 64, 5, 5}, window(5, 1, 2), false, true, false},  // 9 tap rectangles
      {{4, 64, 4, 4}, {80, 64, 3, 3}, window(3, 2, 1), true, false, true},   // stride 2 onto 2x2
      {{2, 64, 3, 3}, {64, 64, 3, 3}, window(3, 1, 2, 2), false, true, false},  // dilation 2
      {{3, 64, 3, 2}, {64, 64, 5, 5}, window(5, 1, 2), true, true, false},   // taps reading nothing
      {{5, 64, 2, 1}, {64, 64, 3, 3}, window(3, 1, 1), false, true, true}};  // ... weight grad too
  return c;
}

TEST(ConvByTaps, MatchesTheCompositeRuleInFloat64AndFloat32) {
  manual_seed(11);
  for (const Case& c : cases()) {
    SCOPED_TRACE(testing::Message() << "x " << shape_str(c.x) << " w " << shape_str(c.w));
    ASSERT_EQ(cpu::use_conv_by_taps(shape_of(c)), c.forward);
    ASSERT_EQ(cpu::use_conv_weight_grad_by_taps(shape_of(c)), c.weight_grad);
    const Window2d& win = c.win;
    const Tensor x = randn(c.x, DType::Float64), w = randn(c.w, DType::Float64);
    const Tensor b = c.bias ? randn({c.w[0]}, DType::Float64) : Tensor();
    const Tensor y = conv2d(x, w, b, win.sh, win.sw, win.ph, win.pw, win.dh, win.dw);
    EXPECT_LT(max_rel_diff(y, reference_y(x, w, b, win, y.shape())), 1e-12);
    const Tensor g = randn(y.shape(), DType::Float64);
    const Tensor dx = conv2d_backward_input(g, w, c.x, win);
    const Tensor dw = conv2d_backward_weight(g, x, c.w, win);
    EXPECT_LT(max_rel_diff(dx, reference_dx(g, w, c.x, win)), 1e-12);
    EXPECT_LT(max_rel_diff(dw, reference_dw(g, x, c.w, win)), 1e-12);
    const auto f32 = [](const Tensor& t) { return t.defined() ? cast(t, DType::Float32) : t; };
    EXPECT_LT(
        max_rel_diff(conv2d(f32(x), f32(w), f32(b), win.sh, win.sw, win.ph, win.pw, win.dh, win.dw),
                     y),
        1e-5);
    EXPECT_LT(max_rel_diff(conv2d_backward_input(f32(g), f32(w), c.x, win), dx), 1e-5);
    EXPECT_LT(max_rel_diff(conv2d_backward_weight(f32(g), f32(x), c.w, win), dw), 1e-5);
  }
}

TEST(ConvByTaps, ResultsIndependentOfThreadCount) {
  const int saved = cpu::num_threads();
  for (const Case& c : cases()) {
    const Window2d& win = c.win;
    const Tensor x = randn(c.x), w = randn(c.w), b = randn({c.w[0]});
    const Tensor g = randn(conv2d(x, w, b, win.sh, win.sw, win.ph, win.pw, win.dh, win.dw).shape());
    std::vector<double> at[2][3];
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      at[threads - 1][0] =
          to_vector(conv2d(x, w, b, win.sh, win.sw, win.ph, win.pw, win.dh, win.dw));
      at[threads - 1][1] = to_vector(conv2d_backward_input(g, w, c.x, win));
      at[threads - 1][2] = to_vector(conv2d_backward_weight(g, x, c.w, win));
    }
    for (int k = 0; k < 3; ++k) EXPECT_EQ(at[0][k], at[1][k]) << "pass " << k;
  }
  cpu::set_num_threads(saved);
}

}  // namespace
}  // namespace vk::test
