#pragma once
#include <optional>

#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
VK_KERNEL(reshape);         // a view when strides allow, else a contiguous copy
VK_KERNEL(permute);         // view
VK_KERNEL(expand);          // view with zero strides
VK_KERNEL(contiguous);      // copy
VK_KERNEL(slice);           // view: a.dim, a.start, a.stop, a.step
VK_KERNEL(slice_backward);  // zeros of a.shape with in[0] written at the sliced positions
VK_KERNEL(cat);             // a.dim; inputs skipped by cat_skips() contribute nothing
VK_KERNEL(stack);           // a.dim is the new dim
VK_KERNEL(pad);             // a.ints: (before, after) pairs from the last dim; a.scalar: value
VK_KERNEL(flip);            // a.dims: wrapped dims to reverse
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

// Sets every byte of a contiguous tensor to zero (the zero of every dtype).
void fill_zero(const Tensor& t);
}  // namespace vk::cpu
