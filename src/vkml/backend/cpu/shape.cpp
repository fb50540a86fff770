#include "vkml/backend/cpu/shape.h"

#include "vkml/backend/cpu/elementwise.h"
#include "vkml/ops/op.h"

namespace vk::cpu {

// Walks old and new dims in groups whose element counts match; each group of old dims must be
// contiguous among themselves to be re-split into the new dims (PyTorch's computeStride).
Strides view_strides(const Tensor& x, const Shape& shape) {
  const Shape& os = x.shape();
  const Strides& ost = x.strides();
  if (x.numel() == 0 || os.empty()) return contiguous_strides(shape);
  Strides st(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_stride = ost.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(os.size()) - 1; d >= 0; --d) {
    tensor_numel *= os[d];
    bool chunk_ends = d == 0 || (os[d - 1] != 1 && ost[d - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
      st[view_d] = view_numel * chunk_stride;
      view_numel *= shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return {};
    if (d > 0) {
      chunk_stride = ost[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return {};
  return st;
}

VK_KERNEL(reshape) {
  (void)a;
  const Tensor& x = in[0];
  Strides st = view_strides(x, m.shape);
  if (!st.empty() || m.shape.empty()) return x.alias(m.shape, st, x.offset());
  // Not viewable: copy into row-major order (x's logical order), then label it with the new shape.
  Tensor out = Tensor::empty(m.shape, m.dtype);
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
  size_t lead = m.shape.size() - x.shape().size();
  Strides st(m.shape.size(), 0);
  for (size_t i = 0; i < x.shape().size(); ++i)
    st[lead + i] = (x.shape()[i] == 1 && m.shape[lead + i] != 1) ? 0 : x.strides()[i];
  return x.alias(m.shape, st, x.offset());
}

VK_KERNEL(contiguous) {
  (void)a;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  copy_into(out, in[0]);
  return out;
}

}  // namespace vk::cpu
