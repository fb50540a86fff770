// Pure shape arithmetic that the op table's shape rules and every backend's kernels share:
// view strides, slice ranges, cat's reference input, window extents.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "vkml/core/shape.h"
#include "vkml/core/tensor.h"

namespace vk {

// Strides for viewing x as `shape` (same element count) without a copy; nullopt when no strides
// over x's memory give the elements in x's row-major order (then only a copy can reshape x).
std::optional<Strides> view_strides(const Tensor& x, const Shape& shape);

// A Python slice start:stop:step (step >= 1) resolved against an extent n: negative bounds count
// from the end, both are clamped to [0, n], and stop >= start. len is the number of elements.
struct SliceRange {
  int64_t start, stop, step, len;
};
SliceRange slice_range(int64_t n, int64_t start, int64_t stop, int64_t step);

// cat's legacy rule (as torch): a 1-D tensor with no elements is skipped when the others are not
// 1-D. The reference input (whose ndim the others must have) is the first one not of that kind.
size_t cat_reference(const std::vector<Tensor>& xs);
bool cat_skips(const Tensor& x, int64_t reference_ndim);

// pad: the part of x that survives (negative widths crop it) as a view of x, the place it lands
// as a view of out, and whether out has elements outside that place (to fill with the value).
struct PadViews {
  Tensor src, dst;
  bool fill;
};
PadViews pad_views(const Tensor& x, const Tensor& out, const std::vector<int64_t>& widths);

// flip: x viewed with `dims` reversed (negative strides), so that a copy of it is the flip.
Tensor flipped_view(const Tensor& x, const std::vector<int64_t>& dims);

// Output extent of a window sweep over `in` positions; <= 0 when the dilated kernel is larger
// than the padded input. Expects a valid window (k, s, d >= 1, p >= 0); SizeError naming `op`
// when the padded input or the dilated kernel does not fit in int64.
inline int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                          std::string_view op = "window") {
  const int64_t padded = checked_add(in, checked_mul(2, p, op), op);
  const int64_t reach = checked_add(checked_mul(d, k - 1, op), 1, op);
  const int64_t span = padded - reach;  // both >= 0: no overflow
  return span < 0 ? 0 : span / s + 1;
}

}  // namespace vk
