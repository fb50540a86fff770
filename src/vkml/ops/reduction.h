// Reductions over any set of dims (empty = all).
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

using Dims = std::vector<int64_t>;

Tensor sum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// Ties split the gradient evenly among the tied elements (torch.amax).
Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// Values along one dim; the gradient goes to the returned index (the first maximum).
struct ValuesIndices {
  Tensor values, indices;
};
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor prod(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // first occurrence
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x);  // over the flattened tensor
Tensor argmin(const Tensor& x);
Tensor logsumexp(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor var(const Tensor& x, const Dims& dims = {}, double correction = 1, bool keepdim = false);
// sum(x * x) without x * x: the 2-norm's (vector_norm, clip_grad_norm_) in one pass.
Tensor sum_squares(const Tensor& x, const Dims& dims = {}, bool keepdim = false);

}  // namespace vk
