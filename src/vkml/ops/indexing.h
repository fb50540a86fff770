// NumPy/PyTorch-style indexing built from the op table's view and index ops:
// ints and slices are views (select/slice), None inserts a dim, Ellipsis fills the rest,
// integer tensors gather with index_select (repeated indices accumulate in backward), and a
// bool mask selects the positions where it is true.
#pragma once
#include <optional>
#include <vector>

#include "vkml/core/tensor.h"

namespace vk {

struct IndexItem {
  enum class Kind { Int, Slice, None, Ellipsis, Tensor };
  Kind kind = Kind::Slice;
  int64_t index = 0;                         // Int
  std::optional<int64_t> start, stop, step;  // Slice (Python semantics; step may be negative? no:
                                             // step must be positive, as in PyTorch)
  Tensor tensor;                             // Tensor: int64/int32 indices or a bool mask

  static IndexItem integer(int64_t i) {
    IndexItem it;
    it.kind = Kind::Int;
    it.index = i;
    return it;
  }
  static IndexItem slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                         std::optional<int64_t> step) {
    IndexItem it;
    it.kind = Kind::Slice;
    it.start = start;
    it.stop = stop;
    it.step = step;
    return it;
  }
  static IndexItem none() {
    IndexItem it;
    it.kind = Kind::None;
    return it;
  }
  static IndexItem ellipsis() {
    IndexItem it;
    it.kind = Kind::Ellipsis;
    return it;
  }
  static IndexItem of(const Tensor& t) {
    IndexItem it;
    it.kind = Kind::Tensor;
    it.tensor = t;
    return it;
  }
};

// x[items]. Advanced (tensor) indices: one tensor index, or several broadcast together as NumPy.
Tensor index(const Tensor& x, const std::vector<IndexItem>& items);

// x with x[items] = value, out of place (torch.index_put; recorded when grad mode is on); value
// broadcasts to the indexed shape; of repeated positions the last written wins.
Tensor index_put(const Tensor& x, const std::vector<IndexItem>& items, const Tensor& value);
// x[items] = value written into x's memory, not recorded (bumps x's version counter): the
// in-place form, index_put_ (ops/inplace.h), checks and records. A region of basic items in
// which elements share memory raises, as torch.
void index_write(const Tensor& x, const std::vector<IndexItem>& items, const Tensor& value);

// `value` made to fill a region of x of shape `region`, as x[...] = value does: in x's dtype, on
// x's device, leading size-1 dims beyond the region's dropped (as torch), then broadcast;
// ShapeError when it cannot. Recorded when grad mode is on.
Tensor fit_setitem_value(const Tensor& value, const Tensor& x, const Shape& region);
// Whether every item is basic (an int, a slice, None or Ellipsis): x[items] is a view.
bool all_basic(const std::vector<IndexItem>& items);

// RuntimeError naming `op` when two elements of x are one memory location (a dim of size > 1
// and stride 0, as expand() makes): an element-wise write into x would have no defined result.
void check_no_internal_overlap(const Tensor& x, const char* op);

// The positions (int64, shape (n, ndim)) where a bool tensor is true, in row-major order.
Tensor nonzero(const Tensor& mask);

}  // namespace vk
