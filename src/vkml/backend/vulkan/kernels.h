// The Vulkan device's kernels, by family as the CPU's (backend/cpu/*.h): one for every op of the
// table (docs/ops.md), each family noting the dtypes it computes; the others are DTypeErrors
// naming the op and the device.
#pragma once
#include "vkml/core/kernel.h"

namespace vk::vulkan {
// creation.cpp
VK_KERNEL(full);
// elementwise.cpp
VK_KERNEL(add);
VK_KERNEL(sub);
VK_KERNEL(mul);
VK_KERNEL(div);
VK_KERNEL(neg);
VK_KERNEL(exp);
VK_KERNEL(log);
VK_KERNEL(sqrt);
VK_KERNEL(rsqrt);
VK_KERNEL(reciprocal);
VK_KERNEL(abs);
VK_KERNEL(sign);
VK_KERNEL(sin);
VK_KERNEL(cos);
VK_KERNEL(tanh);
VK_KERNEL(sigmoid);
// cast.cpp: dst = src over dst's strides, converting between any of the ten dtypes; dst = a + b
// (gradient accumulation), one shape and dtype (a narrow one added in float32 / int32).
void copy_into(const Tensor& dst, const Tensor& src);
void add_into(const Tensor& dst, const Tensor& a, const Tensor& b);
// optim.cpp: the fused SGD, Adam and Adadelta steps (DeviceServices)
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const SgdHyper& h);
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamHyper& h);
void adadelta_update(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                     const Tensor& acc_delta, const AdadeltaHyper& h);
// ---- element-wise family: the rest of backend/cpu/elementwise.h and divmod.h ----
VK_KERNEL(log1p);
VK_KERNEL(expm1);
VK_KERNEL(relu);
VK_KERNEL(gelu);  // a.gelu
VK_KERNEL(tanh_backward);
VK_KERNEL(sigmoid_backward);
VK_KERNEL(relu_backward);
// activations with parameters (a.activation; hardtanh_backward: a.lo, a.hi; hardtanh: clamp)
VK_KERNEL(leaky_relu);
VK_KERNEL(leaky_relu_backward);
VK_KERNEL(hardtanh_backward);
VK_KERNEL(elu);
VK_KERNEL(elu_backward);
VK_KERNEL(softplus);
VK_KERNEL(softplus_backward);
VK_KERNEL(hardsigmoid);
VK_KERNEL(hardsigmoid_backward);
VK_KERNEL(hardswish);
VK_KERNEL(hardswish_backward);
VK_KERNEL(silu);
VK_KERNEL(silu_backward);
VK_KERNEL(smooth_l1);  // a.activation.width
VK_KERNEL(smooth_l1_backward);
VK_KERNEL(huber);
VK_KERNEL(huber_backward);
VK_KERNEL(gelu_backward);
VK_KERNEL(erf);
VK_KERNEL(erfc);
VK_KERNEL(floor);
VK_KERNEL(ceil);
VK_KERNEL(round);
VK_KERNEL(trunc);
VK_KERNEL(frac);
VK_KERNEL(floor_divide);
VK_KERNEL(remainder);
VK_KERNEL(pow);
VK_KERNEL(maximum);
VK_KERNEL(minimum);
VK_KERNEL(where);               // in: cond (bool), a, b
VK_KERNEL(squared_difference);  // mse_loss's element (a - b)^2
VK_KERNEL(lerp);                // the pointwise family (#18): start, end, weight
VK_KERNEL(addcmul);
VK_KERNEL(addcdiv);
VK_KERNEL(clamp);  // a.lo, a.hi
VK_KERNEL(eq);
VK_KERNEL(ne);
VK_KERNEL(lt);
VK_KERNEL(le);
VK_KERNEL(gt);
VK_KERNEL(ge);
VK_KERNEL(bitwise_and);
VK_KERNEL(bitwise_or);
VK_KERNEL(bitwise_xor);
VK_KERNEL(cast);  // cast.cpp: every dtype
// ---- end of the element-wise family ----
// reduction.cpp: a.dims (wrapped, sorted, never empty), a.keepdim
VK_KERNEL(sum);
VK_KERNEL(mean);
// shape.cpp
VK_KERNEL(reshape);
VK_KERNEL(permute);
VK_KERNEL(expand);
VK_KERNEL(contiguous);
VK_KERNEL(slice);
// Shape copies, index and creation (index family): shape.cpp, index.cpp, creation.cpp; every
// dtype moves (bool needs 8-bit storage), scatter_add adds int32/int64/float32/float64.
VK_KERNEL(slice_backward);
VK_KERNEL(as_strided);
VK_KERNEL(strided_scatter);
VK_KERNEL(cat);
VK_KERNEL(stack);
VK_KERNEL(pad);
VK_KERNEL(flip);
VK_KERNEL(index_select);
VK_KERNEL(gather);
VK_KERNEL(interpolate_dim);  // two gathers, weighted and summed by the element-wise kernels
VK_KERNEL(scatter_add);
VK_KERNEL(arange);
VK_KERNEL(rand);
VK_KERNEL(randn);
VK_KERNEL(randint);
// End of the index family.
// random sampling (random.cpp; issue 15 item 3): the CPU's kernels, their inputs read back and
// their results uploaded
VK_KERNEL(randperm);
VK_KERNEL(multinomial);
VK_KERNEL(poisson);
VK_KERNEL(standard_gamma);
// linalg (linalg.cpp, conv.cpp): float32, and float64 where the device has it; matmul, im2col
// and col2im int32 and int64 too (int64 with shaderInt64), as on the CPU
VK_KERNEL(matmul);
VK_KERNEL(addmm);
VK_KERNEL(im2col);
VK_KERNEL(col2im);
VK_KERNEL(conv2d);
VK_KERNEL(conv2d_backward_input);
VK_KERNEL(conv2d_backward_weight);
VK_KERNEL(max_pool2d);
VK_KERNEL(max_pool2d_backward);
VK_KERNEL(avg_pool2d);
// end linalg
// ---- reductions, softmax and norms (reduction engineer) ----
// reduction.cpp: float32, float64 (integers and bool: see there); a.dims as for sum, a.dim for
// max_dim/min_dim/argmax/argmin
VK_KERNEL(amax);
VK_KERNEL(amin);
VK_KERNEL(max_dim);
VK_KERNEL(min_dim);
VK_KERNEL(prod);
VK_KERNEL(argmax);
VK_KERNEL(argmin);
VK_KERNEL(logsumexp);
VK_KERNEL(var);
VK_KERNEL(sum_squares);
// softmax.cpp: float32 and float64, along a.dim (a.softmax: scale, causal)
VK_KERNEL(softmax);
VK_KERNEL(log_softmax);
VK_KERNEL(softmax_backward);
VK_KERNEL(log_softmax_backward);
// norm.cpp: float32 (a.norm: eps, which of weight and bias are given, with_param_grad)
VK_KERNEL(layer_norm);
VK_KERNEL(layer_norm_backward);
VK_KERNEL(layer_norm_param_grad);
VK_KERNEL(batch_norm);
VK_KERNEL(batch_norm_backward);
VK_KERNEL(batch_norm_param_grad);
// ---- end of reductions, softmax and norms ----
// ---- sort and scan families (sortscan): float32, int32, int64, float64 with shaderFloat64 ----
VK_KERNEL(sort);          // a.dim, a.sort.descending; output 1: int64 indices
VK_KERNEL(searchsorted);  // a.sort.right; int64 or int32 (m.dtype)
VK_KERNEL(cumsum);
VK_KERNEL(cumprod);
VK_KERNEL(cummax);  // output 1: int64 indices
VK_KERNEL(cummin);
// ---- end of the sort and scan families ----
// ---- recurrent cells (issue #16 item 2: rnn), rnn.cpp: float32, float64 ----
VK_KERNEL(lstm_cell);
VK_KERNEL(lstm_cell_backward);
// ---- solvers (#15 linalg), solve.cpp: float32, float64 with shaderFloat64 ----
VK_KERNEL(lu_factor);         // outputs 1, 2: int32 pivots, int64 perm; n <= 256
VK_KERNEL(cholesky);          // n <= 256
VK_KERNEL(eigh);              // n <= 64
VK_KERNEL(svd);               // tall m x n, m <= 64, n <= 32
VK_KERNEL(qr);                // n <= 128, m min(m, n) <= 16384
VK_KERNEL(geqrf);             // as qr
VK_KERNEL(triangular_solve);  // a.triangular; n <= 1024
// ---- scaled dot-product attention (#18), attention.cpp: the kernels above composed ----
VK_KERNEL(attention);           // a.softmax: scale, causal
VK_KERNEL(attention_backward);  // flat dq, dk, dv
}  // namespace vk::vulkan
