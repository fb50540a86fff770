// Shapes and strides (in elements), and the rules that combine them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vk {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

std::string shape_str(const Shape& s);  // "[2, 3]"

// Number of elements. Validates the shape: SizeError (naming `op` when given) on a negative extent
// or when the product of the extents, counting a 0 as 1, overflows int64. Counting 0 as 1 also
// rejects [0, 2^40, 2^40]: its row-major strides overflow even though it has no element, and
// every partial product of a valid shape's extents (outer/inner counts in kernels) must fit.
int64_t numel_of(const Shape& s, std::string_view op = {});

// Checked size arithmetic: every size, count, stride or offset computed from user-given sizes
// goes through these (or numel_of), so an overflow is a SizeError naming `op` and the operands
// instead of a wrapped-around (often zero or negative) size.
int64_t checked_mul(int64_t a, int64_t b, std::string_view op);
int64_t checked_add(int64_t a, int64_t b, std::string_view op);

Strides contiguous_strides(const Shape& s);  // SizeError when a stride overflows

// NumPy broadcasting of two shapes; throws ShapeError naming `op` and both shapes (SizeError when
// the broadcast shape is too large to count).
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Maps a possibly negative dim into [0, ndim); throws IndexError naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

// Sorted, de-duplicated, wrapped dims; an empty list means "all dims".
std::vector<int64_t> wrap_dims(const std::vector<int64_t>& dims, int64_t ndim, const char* op);

// `s` with the dims in `dims` (wrapped, sorted) removed or set to 1.
Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim);

}  // namespace vk
