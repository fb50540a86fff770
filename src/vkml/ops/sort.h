// The sort family (issue #15 item 4): one sorting op (stable, values and int64 indices along a
// dim) and what is built from it: argsort, msort, topk, kthvalue,
// median; and searchsorted/bucketize, a binary search in sorted boundaries.
#pragma once
#include "vkml/core/tensor.h"
#include "vkml/ops/reduction.h"

namespace vk {

// Always stable (ties keep their input order), whatever `stable` says; NaN sorts as the largest
// value (last ascending, first descending), as PyTorch. The gradient goes back by the indices.
ValuesIndices sort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
Tensor msort(const Tensor& x);  // sort along dim 0, values only
// The k largest (or smallest) along dim, in sorted order (also when sorted = false: any order is
// allowed then, and sorted is the one vkml gives). RuntimeError when k is not in [0, size].
ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                   bool sorted = true);
// The k-th smallest (1-based) along dim. RuntimeError when k is not in [1, size].
ValuesIndices kthvalue(const Tensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);
// The lower of the two middle values (NaN when the row holds a NaN), as torch.median.
ValuesIndices median(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor median(const Tensor& x);  // of all elements
// The most frequent value along dim (the smallest of equally frequent ones) and the index of its
// last occurrence, as torch.mode.
ValuesIndices mode(const Tensor& x, int64_t dim = -1, bool keepdim = false);
// For each value, the number of boundaries (along the last dim) < it, or <= it with right: where
// it goes in the sorted boundaries. boundaries is 1-D, or (..., M) with values (..., N) sharing
// the leading dims; the two take their common dtype. int64, or int32 with out_int32. Boundaries
// that are not sorted give an unspecified result (as PyTorch: no check).
Tensor searchsorted(const Tensor& boundaries, const Tensor& values, bool right = false,
                    bool out_int32 = false);
// searchsorted with 1-D boundaries, the arguments the other way round (torch.bucketize).
Tensor bucketize(const Tensor& values, const Tensor& boundaries, bool right = false,
                 bool out_int32 = false);

// Built from sort, cumsum, nonzero and scatter_add; their results are integers or data-dependent
// in size, and carry no gradient (as PyTorch's).
// The distinct values of x (flattened) in ascending order; each NaN is distinct, as PyTorch's.
// inverse (x's shape): the position in values of each element; counts: how often each occurs.
struct Unique {
  Tensor values, inverse, counts;
};
// with_inverse = false leaves `inverse` undefined (its scatter was a quarter of unique's time).
Unique unique(const Tensor& x, bool with_inverse = true);
// How often each value of a 1-D non-negative integer tensor occurs (bins 0..max(x), at least
// minlength of them); with weights (x's length), their sums instead: the weights' floating dtype,
// float64 for integer weights.
Tensor bincount(const Tensor& x, const Tensor& weights = Tensor(), int64_t minlength = 0);
// The positions of the nonzero elements, (n, ndim) int64 (nonzero of x != 0).
Tensor argwhere(const Tensor& x);

}  // namespace vk
