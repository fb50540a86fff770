// Shape kernels on the Vulkan device: views are the same geometry as on any device (no data
// moves); a copy goes through the strided copy shader.
#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/core/geometry.h"

namespace vk::vulkan {

VK_KERNEL(reshape) {
  (void)a;
  const Tensor& x = in[0];
  if (std::optional<Strides> st = view_strides(x, m.shape))
    return x.alias(m.shape, std::move(*st), x.offset());
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  copy_into(out.alias(x.shape(), contiguous_strides(x.shape()), 0), x);
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
  copy_into(out, in[0]);
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

}  // namespace vk::vulkan
