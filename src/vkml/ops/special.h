// Special functions (issue #15): the modified Bessel functions of the first kind of order 0 and 1
// and their exponentially scaled forms (torch.i0, torch.special.i0e/i1/i1e), and the regularized
// incomplete gamma functions (torch.igamma, torch.igammac), and the derivative of a gamma sample
// with respect to its concentration (torch._standard_gamma_grad). Table ops with kernels on both
// devices (ops/special.cpp, backend/cpu/special.cpp, shaders/special.comp).
#pragma once
#include "vkml/core/tensor.h"

namespace vk {

// Float results; integer and bool inputs compute in the default float dtype, as torch.
Tensor i0(const Tensor& x);   // I0(x)
Tensor i0e(const Tensor& x);  // exp(-|x|) I0(x)
Tensor i1(const Tensor& x);   // I1(x)
Tensor i1e(const Tensor& x);  // exp(-|x|) I1(x)
// P(a, x) = gamma(a, x) / Gamma(a) and Q(a, x) = 1 - P(a, x), broadcast, for floating a and x
// (integer pairs are refused, as torch); NaN for negative a or x, and for a = x = 0. Only x is
// differentiable (torch has no derivative for a either).
Tensor igamma(const Tensor& a, const Tensor& x);
Tensor igammac(const Tensor& a, const Tensor& x);
// dx/dalpha of a Gamma(alpha, 1) sample x held at its quantile, -(dP/dalpha) / (dP/dx) at
// (alpha, x) (torch._standard_gamma_grad): the reparameterisation derivative of standard_gamma.
// 0 at x = 0, NaN for alpha <= 0, x < 0 or x = inf. Differentiable in x only (as torch: none).
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x);

}  // namespace vk
