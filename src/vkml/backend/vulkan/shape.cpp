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
  const Tensor& x = in[0];
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  const int64_t nd = x.ndim();
  // The region of x that survives (negative widths crop) and where it lands in out.
  Shape region = x.shape();
  int64_t x_off = x.offset(), o_off = 0;
  bool covers_all = true;
  for (size_t k = 0; k * 2 < a.pad.widths.size(); ++k) {
    const int64_t d = nd - 1 - static_cast<int64_t>(k);
    const int64_t before = a.pad.widths[2 * k], after = a.pad.widths[2 * k + 1];
    const int64_t crop_lo = std::max<int64_t>(0, -before), crop_hi = std::max<int64_t>(0, -after);
    region[d] = std::max<int64_t>(0, x.shape()[d] - crop_lo - crop_hi);
    x_off += crop_lo * x.strides()[d];
    o_off += std::max<int64_t>(0, before) * out.strides()[d];
    covers_all = covers_all && before <= 0 && after <= 0;
  }
  if (!covers_all) {
    // The value as the CPU's static_cast<T> gives it (its bits are what the shader writes).
    uint64_t bits = 0;
    VK_DISPATCH_ALL(m.dtype, "pad", bits = bits_of(static_cast<T>(a.pad.value)));
    fill_bits(out, bits, "pad");
  }
  if (numel_of(region) > 0)
    copy_strided(out.alias(region, out.strides(), o_off), x.alias(region, x.strides(), x_off),
                 "pad");
  return out;
}

VK_KERNEL(flip) {
  const Tensor& x = in[0];
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  Strides st = x.strides();
  int64_t offset = x.offset();
  for (int64_t d : a.dims) {
    offset += (x.shape()[d] - 1) * st[d];
    st[d] = -st[d];
  }
  copy_strided(out, x.alias(x.shape(), st, offset), "flip");
  return out;
}

}  // namespace vk::vulkan
