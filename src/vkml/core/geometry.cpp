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

}  // namespace vk
