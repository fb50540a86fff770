// Shape ops. reshape/permute/expand/slice/squeeze/unsqueeze return views when they can.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

Tensor reshape(const Tensor& x, const Shape& shape);  // one -1 allowed; copies only if needed
// torch's view: reshape that never copies. RuntimeError when the shape cannot be expressed with
// strides over x's memory (then a write through the result would be lost); use reshape instead.
Tensor view(const Tensor& x, const Shape& shape);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor expand(const Tensor& x, const Shape& shape);  // -1 keeps a dim; new dims go in front
Tensor broadcast_to(const Tensor& x, const Shape& shape);
// Sums x down to `shape` (the adjoint of broadcasting `shape` to x's shape).
Tensor sum_to(const Tensor& x, const Shape& shape);
// Python slice semantics on one dim (start/stop clamped, step >= 1).
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t stop, int64_t step = 1);
// The adjoint of slice: g placed into zeros of `input_shape` at the sliced positions.
Tensor slice_backward(const Tensor& g, const Shape& input_shape, int64_t dim, int64_t start,
                      int64_t stop, int64_t step);
Tensor select(const Tensor& x, int64_t dim, int64_t index);  // slice + drop the dim
// x[start:start + length] along dim, as torch.narrow: IndexError when start is outside [-n, n],
// RuntimeError when length is negative or the range runs past the end (never clamped).
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor contiguous(const Tensor& x);  // the same tensor when already contiguous
Tensor clone(const Tensor& x);       // always a fresh contiguous copy (identity gradient)
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);
// Constant padding; `pad` lists (before, after) pairs starting from the LAST dim, as torch.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, double value = 0.0);
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);
// A region of x's elements in row-major order: element i is element offset + sum(i_k strides_k)
// (torch.as_strided over a contiguous x). A view when x is contiguous, of a row-major copy
// otherwise. The region must hold each element at most once (ShapeError): its rule places the
// gradient without summing.
Tensor as_strided(const Tensor& x, const Shape& shape, const std::vector<int64_t>& strides,
                  int64_t offset);
// A row-major copy of x with as_strided(x, shape, strides, offset)'s region holding `value` (of
// that shape and x's dtype): torch.as_strided_scatter. Its rule reads nothing (a recorded
// setitem by basic indices is one such node: ops/inplace.cpp).
Tensor strided_scatter(const Tensor& x, const Tensor& value, const Shape& shape,
                       const std::vector<int64_t>& strides, int64_t offset);

}  // namespace vk
