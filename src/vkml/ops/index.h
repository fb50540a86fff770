// Index ops. Index tensors are int64 (int32 accepted) and are constants in every gradient rule.
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);  // index is 1-D
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// base + src scattered along dim at index (torch.Tensor.scatter_add); repeated indices add up.
Tensor scatter_add(const Tensor& base, int64_t dim, const Tensor& index, const Tensor& src);
// base with src's slices added at `index` along dim (torch.index_add), via scatter_add.
Tensor index_add(const Tensor& base, int64_t dim, const Tensor& index, const Tensor& src);
// The slices of x at lo and hi (1-D, one length) along dim, weighted: x[lo[j]] * w_lo[j] +
// x[hi[j]] * w_hi[j] at position j (w_lo, w_hi: 1-D, x's floating dtype): interpolate's linear
// step.
Tensor interpolate_dim(const Tensor& x, int64_t dim, const Tensor& lo, const Tensor& hi,
                       const Tensor& w_lo, const Tensor& w_hi);

}  // namespace vk
