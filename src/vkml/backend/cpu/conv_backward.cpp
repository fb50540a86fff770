// conv2d's two gradients on the CPU, each one kernel: the input's (a transposed convolution) and
// the weight's. Both are im2col + GEMM without the column matrix of the whole batch: each task
// owns a block of input channels, makes only those channels' columns, and writes a part of the
// result no other task touches (the input gradient's planes of its channels; the weight
// gradient's columns of its channels, summed over the batch in image order). The blocks depend
// only on the shapes, so results are bitwise the same at any thread count. On AVX2 and AVX-512
// machines oneDNN's backward convolutions take the float32 shapes where they are faster
// (onednn.h).
#include <algorithm>
#include <vector>

#include "vkml/backend/cpu/conv.h"
#include "vkml/backend/cpu/conv_taps.h"
#include "vkml/backend/cpu/linalg.h"
#include "vkml/backend/cpu/onednn.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/rows.h"
#include "vkml/backend/cpu/window.h"
#include "vkml/backend/cpu/winograd.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// Elements of one task's column buffer: small enough to stay in a core's L2 between being made
// and being read by the product.
constexpr int64_t kTaskCols = 1 << 18;
// Below this many output positions per product, the weight gradient takes several images per
// product (their columns side by side): a product over 4 positions of one image is all overhead.
constexpr int64_t kMinPositions = 512;
// Channels per block: at most what fits kTaskCols, and blocks enough (up to 8 per group, each of
// 4 channels or more) for the pool to balance; equal-sized blocks.
int64_t channel_block(int64_t channels, int64_t cols_per_channel) {
  const int64_t fit = std::max<int64_t>(1, kTaskCols / std::max<int64_t>(cols_per_channel, 1));
  const int64_t blocks = std::max((channels + fit - 1) / fit, std::min<int64_t>(8, channels / 4));
  return (channels + std::max<int64_t>(blocks, 1) - 1) / std::max<int64_t>(blocks, 1);
}

// Images per product: one, or enough images of few positions side by side to make
// kMinPositions columns (each product then reads its block of the weight once for all of them).
// The input's gradient gains from it only below 64 positions (ResNet-18's 4x4 and 2x2 layers:
// 3.4 -> 3.0 and 11.5 -> 4.1 ms; at 8x8 and at 1x1 kernels it lost 6-60%, Zen 4, one thread).
int64_t images_per_product(int64_t N, int64_t L, bool input_gradient) {
  if (input_gradient && L >= 64) return 1;
  return std::clamp<int64_t>((kMinPositions + L - 1) / L, 1, std::max<int64_t>(N, 1));
}

// The rows of g (N, O, L) a product reads: channels o.. of image n0, or, for products over
// several images, of images n0.. side by side (g then copied once as (O, N * L)).
template <class T>
class GradRows {
 public:
  GradRows(const T* g, int64_t N, int64_t O, int64_t L, bool side_by_side)
      : data_(g), O_(O), L_(L), ld_(side_by_side ? N * L : L), side_by_side_(side_by_side) {
    if (!side_by_side) return;
    packed_.resize(static_cast<size_t>(O * N * L));
    parallel_for(O, 1, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        for (int64_t n = 0; n < N; ++n)
          std::copy_n(g + (n * O + o) * L, L, packed_.data() + (o * N + n) * L);
    });
    data_ = packed_.data();
  }
  MatRef<T> at(int64_t n0, int64_t o) const {
    return side_by_side_ ? MatRef<T>{data_ + o * ld_ + n0 * L_, ld_, 1}
                         : MatRef<T>{data_ + (n0 * O_ + o) * L_, L_, 1};
  }

 private:
  std::vector<T> packed_;
  const T* data_;
  int64_t O_, L_, ld_;
  bool side_by_side_;
};

ConvShape conv_shape(const Shape& x, const Shape& w, const Window2d& win) {
  return {x[0],   x[1],   x[2],   x[3],   w[0],   win.kh, win.kw,
          win.sh, win.sw, win.ph, win.pw, win.dh, win.dw};
}

}  // namespace

VK_KERNEL(conv2d_backward_input) {
  const Tensor g = contiguous_copy(in[0]), wt = contiguous_copy(in[1]);
  const Window2d& w = a.win;
  const int64_t G = w.groups;
  const int64_t N = m.shape[0], C = m.shape[1], H = m.shape[2], W = m.shape[3];
  const int64_t O = wt.shape()[0], Og = O / G, Cg = C / G;
  const int64_t OH = g.shape()[2], OW = g.shape()[3], L = OH * OW, kk = w.kh * w.kw;
  const int64_t CgKK = Cg * kk;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  if (g.dtype() == DType::Float32 && G == 1) {
    const ConvShape s = conv_shape(m.shape, wt.shape(), w);
    if (use_winograd_backward_input(s)) {
      winograd_conv2d_backward_input(s, g.data<float>(), wt.data<float>(), out.data<float>());
      return out;
    }
    if (use_onednn_conv_backward_data(s)) {
      conv2d_backward_data_f32(s, g.data<float>(), wt.data<float>(), out.data<float>());
      return out;
    }
  }
  const int64_t nb = images_per_product(N, L, true), chunks = (N + nb - 1) / nb;
  const int64_t cb = channel_block(Cg, kk * nb * L), nblk = (Cg + cb - 1) / cb;
  VK_DISPATCH_FLOAT(g.dtype(), "conv2d_backward_input", {
    const T* pw = wt.data<T>();
    T* po = out.data<T>();
    if (Og == 0) {  // no output channels: nothing flows back
      std::fill(po, po + out.numel(), T(0));
      return out;
    }
    const GradRows<T> rows(g.data<T>(), N, O, L, nb > 1);
    parallel_for(chunks * G * nblk, 1, [&](int64_t b, int64_t e) {
      std::vector<T> cols(static_cast<size_t>(cb * kk * nb * L));
      for (int64_t t = b; t < e; ++t) {
        const int64_t n0 = t / (G * nblk) * nb, gi = t / nblk % G;
        const int64_t c0 = t % nblk * cb, nc = std::min(Cg, c0 + cb) - c0;
        const int64_t images = std::min(N, n0 + nb) - n0, ld = images * L;
        // The columns of channels c0.. of group gi: W_g[:, c0 * kk ...]^T @ g[images, group gi].
        const MatRef<T> wT{pw + gi * Og * CgKK + c0 * kk, 1, CgKK};
        gemm<T, T>(nc * kk, ld, Og, wT, rows.at(n0, gi * Og), T(0), cols.data(), ld);
        for (int64_t ci = 0; ci < nc; ++ci)
          for (int64_t j = 0; j < images; ++j)
            col2im_plane(cols.data() + ci * kk * ld + j * L, ld, int64_t{1}, H, W, w, OH, OW,
                         po + ((n0 + j) * C + gi * Cg + c0 + ci) * H * W);
      }
    });
  });
  return out;
}

VK_KERNEL(conv2d_backward_weight) {
  const Tensor g = contiguous_copy(in[0]);
  const Tensor& x = in[1];
  const Window2d& w = a.win;
  const int64_t G = w.groups;
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t O = m.shape[0], Og = O / G, Cg = C / G;
  const int64_t OW = g.shape()[3], L = g.shape()[2] * OW, kk = w.kh * w.kw, CgKK = Cg * kk;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  const bool by_taps = (g.dtype() == DType::Float32 || g.dtype() == DType::Float64) && G == 1 &&
                       use_conv_weight_grad_by_taps(conv_shape(x.shape(), m.shape, w));
  if (by_taps) {
    const Tensor xc = contiguous_copy(x);
    VK_DISPATCH_FLOAT(g.dtype(), "conv2d_backward_weight", {
      conv2d_backward_weight_by_taps<T>(conv_shape(x.shape(), m.shape, w), xc.data<T>(),
                                        g.data<T>(), out.data<T>());
    });
    return out;
  }
  if (g.dtype() == DType::Float32 && G == 1) {
    const ConvShape s = conv_shape(x.shape(), m.shape, w);
    if (use_winograd_weight_grad(s)) {
      const Tensor xc = contiguous_copy(x);
      winograd_conv2d_backward_weight(s, xc.data<float>(), g.data<float>(), out.data<float>());
      return out;
    }
    if (use_onednn_conv_backward_weights(s)) {
      const Tensor xc = contiguous_copy(x);
      conv2d_backward_weights_f32(s, xc.data<float>(), g.data<float>(), out.data<float>());
      return out;
    }
  }
  const int64_t nb = images_per_product(N, L, false);
  const int64_t cb = channel_block(Cg, kk * nb * L), nblk = (Cg + cb - 1) / cb;
  const Plane p{H, W, x.strides()[2], x.strides()[3]};
  const int64_t sN = x.strides()[0], sC = x.strides()[1];
  VK_DISPATCH_FLOAT(g.dtype(), "conv2d_backward_weight", {
    const T* px = x.data<T>();
    T* po = out.data<T>();
    if (N == 0) {  // an empty batch: no gradient
      std::fill(po, po + out.numel(), T(0));
      return out;
    }
    const GradRows<T> rows(g.data<T>(), N, O, L, nb > 1);
    // Few channel blocks (a first layer's 1 to 3 channels) would leave cores idle: the batch is
    // then cut into parts as well, each summed into a partial gradient of its own (small, as the
    // weight is), the partials added in part order.
    const int64_t chunks = (N + nb - 1) / nb, wsize = out.numel();
    const int64_t parts = G * nblk >= 8 ? 1 : std::min(chunks, (8 + G * nblk - 1) / (G * nblk));
    std::vector<T> partial(static_cast<size_t>(parts > 1 ? parts * wsize : 0));
    parallel_for(parts * G * nblk, 1, [&](int64_t b, int64_t e) {
      std::vector<T> cols(static_cast<size_t>(cb * kk * nb * L));
      for (int64_t t = b; t < e; ++t) {
        const int64_t part = t / (G * nblk), gi = t / nblk % G;
        const int64_t c0 = t % nblk * cb, nc = std::min(Cg, c0 + cb) - c0;
        T* dst = parts > 1 ? partial.data() + part * wsize : po;
        T* dw = dst + gi * Og * CgKK + c0 * kk;  // columns c0 * kk.. of group gi's rows
        const int64_t first = part * chunks / parts * nb, last = (part + 1) * chunks / parts * nb;
        for (int64_t n0 = first; n0 < std::min(N, last); n0 += nb) {
          const int64_t images = std::min(N, n0 + nb) - n0, ld = images * L;
          for (int64_t ci = 0; ci < nc; ++ci)
            for (int64_t j = 0; j < images; ++j)
              im2col_rows(px + (n0 + j) * sN + (gi * Cg + c0 + ci) * sC, p, w, OW, 0, L,
                          cols.data() + ci * kk * ld + j * L, ld);
          const MatRef<T> colsT{cols.data(), 1, ld};
          gemm<T, T>(Og, nc * kk, ld, rows.at(n0, gi * Og), colsT, n0 == first ? T(0) : T(1), dw,
                     CgKK);
        }
      }
    });
    if (parts > 1)
      parallel_for(wsize, grain_for(parts), [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          T acc = partial[static_cast<size_t>(k)];
          for (int64_t i = 1; i < parts; ++i) acc += partial[static_cast<size_t>(i * wsize + k)];
          po[k] = acc;
        }
      });
  });
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
