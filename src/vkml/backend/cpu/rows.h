// Rows along one dim of a contiguous tensor, for the kernels that work row by row (sort, scans):
// the shape seen as (outer, K, inner), row r = (r / inner, :, r % inner), K elements `inner`
// apart.
#pragma once
#include <cstdint>

#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/kernel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

struct Rows {
  int64_t outer = 1, K = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  int64_t base(int64_t r) const { return (r / inner) * K * inner + r % inner; }
};

inline Rows rows_along(const Shape& shape, int64_t dim) {
  Rows s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < dim ? s.outer : d == dim ? s.K : s.inner) *= shape[d];
  return s;
}

// The number of matrices in a batch of shape (..., m, n): the product of the batch dims.
inline int64_t batch_count(const Shape& s) {
  int64_t b = 1;
  for (size_t d = 0; d + 2 < s.size(); ++d) b *= s[d];
  return b;
}

inline Tensor contiguous_copy(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor c = Tensor::empty(x.shape(), x.dtype());
  copy_into(c, x);
  return c;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
