// Shapes and strides (in elements), and the rules that combine them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vk {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

std::string shape_str(const Shape& s);  // "[2, 3]"

// Number of elements; throws ShapeError on a negative extent or int64 overflow.
int64_t numel_of(const Shape& s);

Strides contiguous_strides(const Shape& s);

// NumPy broadcasting of two shapes; throws ShapeError naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Maps a possibly negative dim into [0, ndim); throws IndexError naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

// Sorted, de-duplicated, wrapped dims; an empty list means "all dims".
std::vector<int64_t> wrap_dims(const std::vector<int64_t>& dims, int64_t ndim, const char* op);

// `s` with the dims in `dims` (wrapped, sorted) removed or set to 1.
Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim);

}  // namespace vk
