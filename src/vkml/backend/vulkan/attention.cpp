// Scaled dot-product attention on the Vulkan device, composed of the device's own kernels
// (gemm.comp products, softmax.comp's scaled and causal rows): the same values as the unfused ops,
// the (..., Tq, Tk) weights in device memory for the op's duration only; the backward recomputes
// them, as the CPU's kernel does. float32, and float64 where the device has it.
#include <utility>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/linalg.h"

namespace vk::vulkan {
namespace {

// t with its last two dims swapped, a view.
Tensor swap_last(const Tensor& t) {
  Shape shape = t.shape();
  Strides strides = t.strides();
  const size_t n = shape.size();
  std::swap(shape[n - 1], shape[n - 2]);
  std::swap(strides[n - 1], strides[n - 2]);
  return t.alias(shape, strides, t.offset());
}

Tensor product(const Tensor& a, const Tensor& b) {
  Shape shape = a.shape();
  shape.back() = b.shape().back();
  return matmul({a, b}, no_attrs(), Meta{shape, a.dtype(), a.device()})[0];
}

// softmax(scale * q k^T, causal) along the keys.
Tensor weights(const Tensor& q, const Tensor& k, const Attrs& a) {
  const Tensor scores = product(q, swap_last(k));
  Attrs sa;
  sa.dim = scores.ndim() - 1;
  sa.softmax = a.softmax;
  return softmax({scores}, sa, Meta{scores.shape(), scores.dtype(), scores.device()})[0];
}

// x * s, s a scalar broadcast over x.
Tensor scaled(const Tensor& x, double s) {
  Attrs fa;
  fa.value = s;
  const Tensor one = full({}, fa, Meta{{}, x.dtype(), x.device()})[0];
  const Tensor spread = one.alias(x.shape(), Strides(x.shape().size(), 0), one.offset());
  return mul({x, spread}, no_attrs(), Meta{x.shape(), x.dtype(), x.device()})[0];
}

// flat's n elements from `at` on, viewed as t's shape (contiguous).
Tensor part(const Tensor& flat, int64_t at, const Tensor& t) {
  Strides strides(t.shape().size());
  int64_t s = 1;
  for (size_t d = strides.size(); d-- > 0;) {
    strides[d] = s;
    s *= t.shape()[d];
  }
  return flat.alias(t.shape(), strides, flat.offset() + at);
}

}  // namespace

VK_KERNEL(attention) {
  (void)m;
  check_float(in[0], "attention");  // the error names the op, not the kernels it runs
  return product(weights(in[0], in[1], a), in[2]);
}

VK_KERNEL(attention_backward) {
  const Tensor &g = in[0], &q = in[1], &k = in[2], &v = in[3];
  check_float(q, "attention_backward");
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  const Tensor p = weights(q, k, a);
  const Tensor dp = product(g, swap_last(v));
  Attrs sa;
  sa.dim = p.ndim() - 1;
  const Tensor ds = softmax_backward({dp, p}, sa, Meta{p.shape(), p.dtype(), p.device()})[0];
  const double s = a.softmax.scale;
  copy_into(part(out, 0, q), scaled(product(ds, k), s));
  copy_into(part(out, q.numel(), k), scaled(product(swap_last(ds), q), s));
  copy_into(part(out, q.numel() + k.numel(), v), product(swap_last(p), g));
  return out;
}

}  // namespace vk::vulkan
