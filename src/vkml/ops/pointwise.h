// The pointwise family (#18): torch's element-wise functions of three tensors, fused into one pass
// each (as composites they took 3 to 8 passes): lerp, addcmul, addcdiv.
#pragma once
#include "vkml/core/scalar.h"
#include "vkml/core/tensor.h"

namespace vk {

// start + weight * (end - start) where |weight| < 0.5, else end - (end - start) * (1 - weight)
// (torch's: weight 1 gives end exactly); start, end (and a tensor weight) share one floating
// dtype. A scalar weight is rounded once to the tensors' compute dtype (float for float32 and the
// 16-bit floats, as torch's opmath).
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight);
// input + value * t1 * t2, and input + value * t1 / t2 (integer t1 and t2 raise, as torch), in
// the three's result type. Floating point: one op each; integers (addcmul): mul and add, which
// wrap.
Tensor addcmul(const Tensor& input, const Tensor& t1, const Tensor& t2, Scalar value = 1);
Tensor addcdiv(const Tensor& input, const Tensor& t1, const Tensor& t2, Scalar value = 1);

}  // namespace vk
