// Op cases for convolution and pooling: im2col/col2im, conv2d, max_pool2d (+ its adjoint) and
// avg_pool2d, with strides, padding, dilation and groups. Shapes stay small: the sweep builds
// full Jacobians.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

Window2d win(int64_t k, int64_t s = 1, int64_t p = 0, int64_t d = 1) {
  return {k, k, s, s, p, p, d, d};
}

// A float64 leaf whose values are all distinct and at least 2/n apart (a fixed permutation of a
// grid in [-1, 1)), so max pooling has no ties and finite differences never cross one.
Tensor distinct(const Shape& shape, bool requires_grad = true) {
  int64_t n = numel_of(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = -1.0 + 2.0 * static_cast<double>((i * 7 + 3) % n) / n;
  return values(v, shape, requires_grad);
}

RegisterOpCases conv_cases({
    {OpKind::Im2Col, "im2col/stride2_pad1",
     [] {
       return V{leaf({1, 2, 4, 4})};
     },
     [](const V& x) { return im2col(x[0], win(2, 2, 1)); }},
    {OpKind::Im2Col, "im2col/dilation2_pad1",
     [] {
       return V{leaf({1, 1, 5, 5})};
     },
     [](const V& x) { return im2col(x[0], win(2, 1, 1, 2)); }},
    {OpKind::Im2Col, "im2col/rectangular",
     [] {
       return V{leaf({2, 1, 3, 5})};
     },
     [](const V& x) {
       return im2col(x[0], Window2d{2, 3, 1, 2, 0, 1, 1, 1});
     }},
    {OpKind::Col2Im, "col2im/stride2_pad1",
     [] {
       return V{leaf({1, 8, 9})};
     },
     [](const V& x) { return col2im(x[0], 4, 4, win(2, 2, 1)); }},
    {OpKind::Col2Im, "col2im/dilation2_pad1",
     [] {
       return V{leaf({1, 4, 16})};
     },
     [](const V& x) { return col2im(x[0], 4, 4, win(2, 1, 1, 2)); }},
    {OpKind::Col2Im, "col2im/overlap",
     [] {
       return V{leaf({1, 9, 4})};
     },
     [](const V& x) { return col2im(x[0], 4, 4, win(3)); }},
    {OpKind::Conv2d, "conv2d/bias",
     [] {
       return V{leaf({1, 2, 4, 4}), leaf({3, 2, 2, 2}), leaf({3})};
     },
     [](const V& x) { return conv2d(x[0], x[1], x[2], 1, 1, 0, 0); }},
    {OpKind::Conv2d, "conv2d/stride2_pad1_dilation2",
     [] {
       return V{leaf({2, 1, 5, 5}), leaf({2, 1, 2, 2})};
     },
     [](const V& x) { return conv2d(x[0], x[1], Tensor(), 2, 2, 1, 1, 2, 2); }},
    {OpKind::Conv2d, "conv2d/groups2",
     [] {
       return V{leaf({1, 4, 3, 3}), leaf({4, 2, 2, 2}), leaf({4})};
     },
     [](const V& x) { return conv2d(x[0], x[1], x[2], 1, 1, 0, 0, 1, 1, 2); }},
    {OpKind::Conv2d, "conv2d/groups2_stride_pad",
     [] {
       return V{leaf({2, 2, 3, 3}), leaf({2, 1, 2, 2})};
     },
     [](const V& x) { return conv2d(x[0], x[1], Tensor(), 2, 1, 1, 0, 1, 1, 2); }},
    // 256 output positions per image: the rule's per-image products (as conv.large's shapes).
    {OpKind::Conv2d, "conv2d/per_image_groups2",
     [] {
       return V{leaf({2, 2, 16, 16}), leaf({2, 1, 3, 3}), leaf({2})};
     },
     [](const V& x) { return conv2d(x[0], x[1], x[2], 1, 1, 1, 1, 1, 1, 2); }},
    // A 1x1 kernel reads x directly as the column matrix; here x is a channels-last view.
    {OpKind::Conv2d, "conv2d/1x1_channels_last",
     [] {
       return V{leaf({2, 2, 2, 3}), leaf({2, 3, 1, 1}), leaf({2})};
     },
     [](const V& x) {
       return conv2d(permute(x[0], {0, 3, 1, 2}), x[1], x[2], 1, 1, 0, 0);
     }},
    // conv2d's gradient ops (the CPU's kernels; conv2d's rule uses them there).
    {OpKind::Conv2dBackwardInput, "conv2d_backward_input/stride2_pad1_dilation2",
     [] {
       return V{leaf({2, 2, 3, 3}), leaf({2, 3, 2, 2})};
     },
     [](const V& x) {
       return conv2d_backward_input(x[0], x[1], {2, 3, 5, 5}, win(2, 2, 1, 2));
     }},
    // Stride 2 over an odd extent: x's last row and column are in no window (their gradient 0).
    {OpKind::Conv2dBackwardInput, "conv2d_backward_input/groups2_uncovered_edge",
     [] {
       return V{leaf({1, 4, 2, 2}), leaf({4, 2, 2, 2})};
     },
     [](const V& x) {
       Window2d w = win(2, 2);
       w.groups = 2;
       return conv2d_backward_input(x[0], x[1], {1, 4, 5, 5}, w);
     }},
    {OpKind::Conv2dBackwardWeight, "conv2d_backward_weight/stride2_pad1_dilation2",
     [] {
       return V{leaf({2, 2, 3, 3}), leaf({2, 3, 5, 5})};
     },
     [](const V& x) {
       return conv2d_backward_weight(x[0], x[1], {2, 3, 2, 2}, win(2, 2, 1, 2));
     }},
    {OpKind::Conv2dBackwardWeight, "conv2d_backward_weight/groups2_channels_last",
     [] {
       return V{leaf({1, 4, 2, 2}), leaf({1, 3, 3, 4})};
     },
     [](const V& x) {
       Window2d w = win(2);
       w.groups = 2;
       return conv2d_backward_weight(x[0], permute(x[1], {0, 3, 1, 2}), {4, 2, 2, 2}, w);
     }},
    // 128 positions per image: products over 4 images side by side (g packed), and the batch
    // cut into 3 parts of partial gradients (one input channel).
    {OpKind::Conv2dBackwardWeight, "conv2d_backward_weight/short_images_in_parts",
     [] {
       return V{leaf({9, 2, 8, 16}), leaf({9, 1, 9, 17})};
     },
     [](const V& x) {
       return conv2d_backward_weight(x[0], x[1], {2, 1, 2, 2}, win(2));
     }},
    {OpKind::MaxPool2d, "max_pool2d/distinct",
     [] {
       return V{distinct({1, 2, 4, 4})};
     },
     [](const V& x) { return max_pool2d(x[0], win(2, 2)).values; }},
    {OpKind::MaxPool2d, "max_pool2d/overlap_pad",
     [] {
       return V{distinct({1, 1, 4, 4})};
     },
     [](const V& x) { return max_pool2d(x[0], win(3, 1, 1)).values; }},
    {OpKind::MaxPool2d, "max_pool2d/dilation2",
     [] {
       return V{distinct({1, 1, 5, 5})};
     },
     [](const V& x) { return max_pool2d(x[0], win(2, 1, 1, 2)).values; }},
    // Overlapping windows: one input position is the argmax of several windows (g adds up).
    {OpKind::MaxPool2dBackward, "max_pool2d_backward/overlap",
     [] {
       Tensor idx = max_pool2d(distinct({1, 2, 3, 3}, false), win(2, 1)).indices;
       return V{leaf({1, 2, 2, 2}), idx};
     },
     [](const V& x) {
       return max_pool2d_backward(x[0], x[1], {1, 2, 3, 3});
     }},
    {OpKind::AvgPool2d, "avg_pool2d/pad",
     [] {
       return V{leaf({1, 2, 4, 4})};
     },
     [](const V& x) { return avg_pool2d(x[0], win(3, 2, 1)); }},
    {OpKind::AvgPool2d, "avg_pool2d/overlap",
     [] {
       return V{leaf({2, 1, 3, 3})};
     },
     [](const V& x) { return avg_pool2d(x[0] * x[0], win(2)); }},

});

}  // namespace
}  // namespace vk::test
