// Shape kernels on the Vulkan device: views are the same geometry as on any device (no data
// moves); copies go through the strided copy and fill shaders (movement.h), for every dtype.
#include <algorithm>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/movement.h"
#include "vkml/core/geometry.h"

namespace vk::vulkan {

VK_KERNEL(reshape) {
  (void)a;
  const Tensor& x = in[0];
  if (std::optional<Strides> st = view_strides(x, m.shape))
    return x.alias(m.shape, std::move(*st), x.offset());
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  copy_strided(out.alias(x.shape(), contiguous_strides(x.shape()), 0), x, "reshape");
  return out;
}

VK_KERNEL(permute) {
  const Tensor& x = in[0];
  Strides st(m.shape.size());
  for (size_t i = 0; i < a.dims.size(); ++i) st[i] = x.strides()[a.dims[i]];
  return x.alias(m.shape, st, x.offset());
}

VK_KERNEL(expand) {
  (void)a;
  const Tensor& x = in[0];
  const size_t lead = m.shape.size() - x.shape().size();
  Strides st(m.shape.size(), 0);
  for (size_t i = 0; i < x.shape().size(); ++i)
    st[lead + i] = (x.shape()[i] == 1 && m.shape[lead + i] != 1) ? 0 : x.strides()[i];
  return x.alias(m.shape, st, x.offset());
}

VK_KERNEL(contiguous) {
  (void)a;
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  copy_strided(out, in[0], "contiguous");
  return out;
}

VK_KERNEL(slice) {
  const Tensor& x = in[0];
  const SliceRange r = slice_range(x.shape()[a.dim], a.start, a.stop, a.step);
  Strides st = x.strides();
  const int64_t offset = x.offset() + (r.len > 0 ? r.start * st[a.dim] : 0);
  if (r.len > 1) st[a.dim] *= r.step;  // a dim of one element never uses its stride
  return x.alias(m.shape, st, offset);
}

VK_KERNEL(slice_backward) {
  const Tensor& g = in[0];
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  fill_bits(out, 0, "slice_backward");
  if (g.numel() == 0) return out;
  const SliceRange r = slice_range(m.shape[a.dim], a.start, a.stop, a.step);
  Strides st = out.strides();
  const int64_t offset = r.start * st[a.dim];
  if (r.len > 1) st[a.dim] *= r.step;  // a dim of one element never uses its stride
  copy_strided(out.alias(g.shape(), st, offset), g, "slice_backward");
  return out;
}

VK_KERNEL(as_strided) {
  Tensor x = in[0];
  if (!x.is_contiguous()) {  // the region is of the row-major order
    x = Tensor::empty(x.shape(), x.dtype(), m.device);
    copy_strided(x, in[0], "as_strided");
  }
  return x.alias(m.shape, a.strided.strides, x.offset() + a.strided.offset);
}

VK_KERNEL(strided_scatter) {
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  copy_strided(out, in[0], "strided_scatter");
  const Tensor& value = in[1];
  if (value.numel() > 0)
    copy_strided(out.alias(value.shape(), a.strided.strides, a.strided.offset), value,
                 "strided_scatter");
  return out;
}

namespace {

// Writes the parts one after another along `dim` of the fresh contiguous `out` (one strided copy
// per part: every part has out's shape except in dim).
void cat_into(const Tensor& out, const std::vector<Tensor>& parts, int64_t dim,
              std::string_view op) {
  int64_t at = 0;  // position along dim
  for (const Tensor& p : parts) {
    if (p.numel() > 0)
      copy_strided(out.alias(p.shape(), out.strides(), at * out.strides()[dim]), p, op);
    at += p.shape()[dim];
  }
}

}  // namespace

VK_KERNEL(cat) {
  const int64_t ref_ndim = in[cat_reference(in)].ndim();
  std::vector<Tensor> parts;
  for (const Tensor& x : in)
    if (!cat_skips(x, ref_ndim)) parts.push_back(x);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  cat_into(out, parts, a.dim, "cat");
  return out;
}

VK_KERNEL(stack) {
  // Each input viewed with a size-1 dim inserted at a.dim, then concatenated along it.
  std::vector<Tensor> parts;
  parts.reserve(in.size());
  for (const Tensor& x : in) {
    Shape s = x.shape();
    Strides st = x.strides();
    s.insert(s.begin() + a.dim, 1);
    st.insert(st.begin() + a.dim, 1);  // any stride: the dim has one element
    parts.push_back(x.alias(s, st, x.offset()));
  }
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  cat_into(out, parts, a.dim, "stack");
  return out;
}

VK_KERNEL(pad) {
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  const PadViews v = pad_views(in[0], out, a.pad.widths);
  if (v.fill) {
    // The value as the CPU's static_cast<T> gives it (its bits are what the shader writes).
    uint64_t bits = 0;
    VK_DISPATCH_STORAGE(m.dtype, "pad", bits = bits_of(static_cast<T>(a.pad.value)));
    fill_bits(out, bits, "pad");
  }
  if (v.src.numel() > 0) copy_strided(v.dst, v.src, "pad");
  return out;
}

VK_KERNEL(flip) {
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  copy_strided(out, flipped_view(in[0], a.dims), "flip");
  return out;
}

}  // namespace vk::vulkan
