// Reductions over any set of dims (empty = all), and the fused softmax family.
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
// softmax of scale * x along dim; causal: along the last dim of (..., queries, keys), query i
// sees keys 0..i only (attention's is_causal), the others come out 0.
Tensor softmax(const Tensor& x, int64_t dim, double scale = 1.0, bool causal = false);
Tensor log_softmax(const Tensor& x, int64_t dim);
// The gradients of softmax/log_softmax from their output `out` and the gradient g arriving at
// it (torch._softmax_backward_data / _log_softmax_backward_data), each one fused op.
Tensor softmax_backward(const Tensor& g, const Tensor& out, int64_t dim);
Tensor log_softmax_backward(const Tensor& g, const Tensor& out, int64_t dim);

}  // namespace vk
