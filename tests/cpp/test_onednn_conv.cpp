// float32 convolutions through oneDNN's direct convolution (#18 item 4; backend/cpu/onednn.h): on
// an AVX2 or AVX-512 machine, batches of 8+ images, 3x3-and-wider kernels over 32+ channels and
// 7x7 stems.
// Checked against the float64 convolution (im2col + GEMM) of the same values, with a bias, strides,
// dilation, padding and a strided input, and bit for bit at one and two threads (one oneDNN call
// per image).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "vkml/vkml.h"

namespace vk {
namespace {

// Whether the environment describes a machine below AVX2 (VKML_CPU_CAPABILITY=default caps oneDNN
// to SSE4.1) or caps oneDNN itself.
bool capped() {
  const char* cap = std::getenv("VKML_CPU_CAPABILITY");
  return (cap != nullptr && std::string(cap) == "default") || std::getenv("ONEDNN_MAX_CPU_ISA") ||
         std::getenv("DNNL_MAX_CPU_ISA");
}

// Regression (#18 item 4's AVX2 decision): oneDNN's AVX2 convolutions beat im2col + GEMM too
// (Zen 4 capped to AVX2: 75-108 against 66-94 GFLOP/s), so AVX2 machines take them.
TEST(OnednnConv, ChosenForWideKernelsOverManyChannelsOnAvx2AndUp) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const cpu::ConvShape resnet{16, 64, 16, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1};
  if (!capped()) {
    EXPECT_EQ(cpu::use_onednn_conv(resnet), cpu::has_onednn() && avx2);
  }
  EXPECT_LE(cpu::use_onednn_conv(resnet), avx2);
  EXPECT_FALSE(cpu::use_onednn_conv({16, 64, 16, 16, 128, 1, 1, 2, 2, 0, 0, 1, 1}));  // 1x1
  EXPECT_FALSE(cpu::use_onednn_conv({4, 64, 16, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1}));    // 4 images
}

// Regression (#18, ResNet-18's stem at 16 x 3 x 64 x 64 ran 5.2 ms forward against torch's 2.9-3.4
// and 6.4 ms for its weight gradient, 3.5 through oneDNN): first layers from 3 channels take
// oneDNN's weight gradient, 7x7 stems its forward; their input gradient, 3x3 first-layer
// forwards and single-channel layers stay with im2col + GEMM (measured slower through oneDNN).
TEST(OnednnConv, StemsAndFirstLayersByPassWhereMeasuredFaster) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool on = cpu::has_onednn() && avx2 && !capped();
  const cpu::ConvShape stem{16, 3, 64, 64, 64, 7, 7, 2, 2, 3, 3, 1, 1};
  const cpu::ConvShape cifar{32, 3, 32, 32, 64, 3, 3, 1, 1, 1, 1, 1, 1};
  const cpu::ConvShape mnist{64, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0, 1, 1};
  EXPECT_EQ(cpu::use_onednn_conv(stem), on);
  EXPECT_EQ(cpu::use_onednn_conv_backward_weights(stem), on);
  EXPECT_FALSE(cpu::use_onednn_conv_backward_data(stem));
  EXPECT_FALSE(cpu::use_onednn_conv(cifar));
  EXPECT_EQ(cpu::use_onednn_conv_backward_weights(cifar), on);
  EXPECT_FALSE(cpu::use_onednn_conv_backward_data(cifar));
  EXPECT_FALSE(cpu::use_onednn_conv(mnist));
  EXPECT_FALSE(cpu::use_onednn_conv_backward_weights(mnist));
  EXPECT_FALSE(cpu::use_onednn_conv_backward_data(mnist));
}

// Whether oneDNN runs its AVX-512 kernels here: the CPU has AVX512-F/BW/VL/DQ (oneDNN's
// avx512_core) and neither vkml's capability variable nor oneDNN's own caps it below.
bool avx512_kernels() {
  __builtin_cpu_init();
  const char* cap = std::getenv("VKML_CPU_CAPABILITY");
  if (cap != nullptr && (std::string(cap) == "avx2" || std::string(cap) == "default")) return false;
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

// Regression (#18, conv.3x3.s2.128 at 1.03-1.16 of torch at one thread on Zen 3, and its weight
// gradient 2.9 ms through oneDNN against 2.1 through im2col + GEMM): on AVX2, strided layers over
// 32+ channels take im2col + GEMM in all three passes; stride-1 layers and stems keep oneDNN.
TEST(OnednnConv, StridedLayersTakeIm2colOnAvx2) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool on = cpu::has_onednn() && avx2 && !capped(), wide = avx512_kernels();
  const cpu::ConvShape resnet{16, 64, 16, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1};
  const cpu::ConvShape stem{16, 3, 64, 64, 64, 7, 7, 2, 2, 3, 3, 1, 1};
  for (const cpu::ConvShape& down : {cpu::ConvShape{16, 64, 16, 16, 128, 3, 3, 2, 2, 1, 1, 1, 1},
                                     cpu::ConvShape{16, 64, 64, 64, 128, 3, 3, 2, 2, 1, 1, 1, 1},
                                     cpu::ConvShape{16, 128, 8, 8, 256, 3, 3, 2, 2, 1, 1, 1, 1}}) {
    SCOPED_TRACE(testing::Message() << "C " << down.C << " H " << down.H);
    if (!capped()) {
      EXPECT_EQ(cpu::use_onednn_conv(down), on && wide);
    }
    if (!wide) {  // AVX2 kernels (or none): no pass through oneDNN
      EXPECT_FALSE(cpu::use_onednn_conv_backward_data(down));
      EXPECT_FALSE(cpu::use_onednn_conv_backward_weights(down));
    }
  }
  // 5x5 and 7x7 strided kernels ran slower through im2col + GEMM: oneDNN's forward on AVX2 too.
  const cpu::ConvShape wide5{16, 64, 32, 32, 64, 5, 5, 2, 2, 2, 2, 1, 1};
  if (!capped()) {
    EXPECT_EQ(cpu::use_onednn_conv(wide5), on);
    EXPECT_EQ(cpu::use_onednn_conv(resnet), on);
    EXPECT_EQ(cpu::use_onednn_conv_backward_data(resnet), on);
    EXPECT_EQ(cpu::use_onednn_conv(stem), on);
    EXPECT_EQ(cpu::use_onednn_conv_backward_weights(stem), on);
  }
}

TEST(OnednnConv, MatchesTheFloat64Convolution) {
  struct Case {
    Shape x, w;
    int64_t stride, pad, dil;
    bool bias, strided;
  };
  // (3x3 stride-1 layers over many tiles go to Winograd first: winograd.h, test_winograd.cpp.)
  for (const Case& c : {Case{{8, 32, 9, 9}, {32, 32, 5, 5}, 1, 2, 1, true, false},
                        Case{{8, 64, 12, 12}, {48, 64, 3, 3}, 2, 1, 1, false, false},
                        Case{{9, 32, 11, 10}, {40, 32, 3, 3}, 1, 2, 2, true, false},
                        Case{{8, 40, 8, 8}, {64, 40, 5, 5}, 1, 0, 1, true, true},
                        Case{{16, 64, 2, 2}, {64, 64, 3, 3}, 1, 1, 1, false, true},
                        Case{{8, 3, 20, 20}, {32, 3, 7, 7}, 2, 3, 1, true, true}}) {
    SCOPED_TRACE(testing::Message() << "C " << c.x[1] << " O " << c.w[0] << " k " << c.w[2]
                                    << " stride " << c.stride << " dil " << c.dil);
    Tensor x64 = randn(c.x, DType::Float64), w64 = randn(c.w, DType::Float64);
    Tensor b64 = c.bias ? randn({c.w[0]}, DType::Float64) : Tensor();
    Tensor x = cast(x64, DType::Float32);
    if (c.strided)  // a non-contiguous input: every other row of a taller image
      x = slice(cast(repeat_interleave(x64, 2, 2), DType::Float32), 2, 0, 2 * c.x[2], 2);
    const Tensor got =
        conv2d(x, cast(w64, DType::Float32), c.bias ? cast(b64, DType::Float32) : Tensor(),
               c.stride, c.stride, c.pad, c.pad, c.dil, c.dil);
    const Tensor want = conv2d(x64, w64, b64, c.stride, c.stride, c.pad, c.pad, c.dil, c.dil);
    const Tensor scale = conv2d(abs(x64), abs(w64), c.bias ? abs(b64) : Tensor(), c.stride,
                                c.stride, c.pad, c.pad, c.dil, c.dil);
    ASSERT_EQ(got.shape(), want.shape());
    const std::vector<double> g = to_vector(got), wv = to_vector(want), s = to_vector(scale);
    int64_t bad = 0;
    for (size_t i = 0; i < g.size(); ++i)
      if (!(std::fabs(g[i] - wv[i]) <= 1e-5 * s[i] + 1e-6) && bad++ < 5)
        ADD_FAILURE() << i << ": " << g[i] << " vs float64 " << wv[i];
    EXPECT_EQ(bad, 0);
  }
}

TEST(OnednnConv, ResultsIndependentOfThreadCount) {
  const int saved = cpu::num_threads();
  const Tensor x = randn({9, 64, 10, 10}), w = randn({64, 64, 5, 5}), b = randn({64});
  cpu::set_num_threads(1);
  const std::vector<double> one = to_vector(conv2d(x, w, b, 1, 1, 2, 2));
  cpu::set_num_threads(2);
  const std::vector<double> two = to_vector(conv2d(x, w, b, 1, 1, 2, 2));
  cpu::set_num_threads(saved);
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace vk
