// The scan family (issue #15 item 4): cumulative ops along a dim (cumsum, cumprod, cummax,
// cummin), and tril/triu.
#pragma once
#include "vkml/core/tensor.h"
#include "vkml/ops/reduction.h"

namespace vk {

// Bool and integer inputs give int64, as PyTorch.
Tensor cumsum(const Tensor& x, int64_t dim);
Tensor cumprod(const Tensor& x, int64_t dim);
// The running maximum (minimum) and the index it was taken from: on ties the latest index; a NaN
// propagates and its own index is taken (as PyTorch).
ValuesIndices cummax(const Tensor& x, int64_t dim);
ValuesIndices cummin(const Tensor& x, int64_t dim);
// The lower (upper) triangle of the last two dims: elements with col - row <= diagonal
// (>= diagonal) kept, the others 0.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

}  // namespace vk
