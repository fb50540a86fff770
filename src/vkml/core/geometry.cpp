#include "vkml/core/geometry.h"

#include <algorithm>

namespace vk {

// Walks old and new dims in groups whose element counts match; each group of old dims must be
// contiguous among themselves to be re-split into the new dims (PyTorch's computeStride).
std::optional<Strides> view_strides(const Tensor& x, const Shape& shape) {
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
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = ost[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return st;
}

SliceRange slice_range(int64_t n, int64_t start, int64_t stop, int64_t step) {
  auto resolve = [n](int64_t v) {
    if (v < 0) v += n;  // v >= INT64_MIN and n >= 0: no overflow
    return std::clamp<int64_t>(v, 0, n);
  };
  SliceRange r;
  r.start = resolve(start);
  r.stop = std::max(r.start, resolve(stop));
  r.step = step;
  const int64_t span = r.stop - r.start;
  r.len = span == 0 ? 0 : (span - 1) / step + 1;
  return r;
}

size_t cat_reference(const std::vector<Tensor>& xs) {
  for (size_t i = 0; i < xs.size(); ++i)
    if (!(xs[i].ndim() == 1 && xs[i].shape()[0] == 0)) return i;
  return 0;
}

bool cat_skips(const Tensor& x, int64_t reference_ndim) {
  return reference_ndim != 1 && x.ndim() == 1 && x.shape()[0] == 0;
}

PadViews pad_views(const Tensor& x, const Tensor& out, const std::vector<int64_t>& widths) {
  const int64_t nd = x.ndim();
  Shape region = x.shape();
  int64_t x_off = x.offset(), o_off = out.offset();
  bool fill = false;
  for (size_t k = 0; k * 2 < widths.size(); ++k) {  // widths pair up from the last dim
    const int64_t d = nd - 1 - static_cast<int64_t>(k);
    const int64_t before = widths[2 * k], after = widths[2 * k + 1];
    const int64_t crop_lo = std::max<int64_t>(0, -before), crop_hi = std::max<int64_t>(0, -after);
    region[d] = std::max<int64_t>(0, x.shape()[d] - crop_lo - crop_hi);
    x_off += crop_lo * x.strides()[d];
    o_off += std::max<int64_t>(0, before) * out.strides()[d];
    fill = fill || before > 0 || after > 0;
  }
  return {x.alias(region, x.strides(), x_off), out.alias(region, out.strides(), o_off), fill};
}

Tensor flipped_view(const Tensor& x, const std::vector<int64_t>& dims) {
  Strides st = x.strides();
  int64_t offset = x.offset();
  for (int64_t d : dims) {
    offset += (x.shape()[d] - 1) * st[d];
    st[d] = -st[d];
  }
  return x.alias(x.shape(), st, offset);
}

}  // namespace vk
