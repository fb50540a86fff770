#include "vkml/backend/vulkan/register.h"

#include <memory>
#include <utility>

#include "vkml/backend/vulkan/expect.h"  // hostwait
#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/math.h"  // math ops (#15)
#include "vkml/backend/vulkan/memory.h"
#include "vkml/backend/vulkan/special.h"  // special functions (#15)
#include "vkml/core/deferred.h"           // hostwait

namespace vk::vulkan {

void register_backend() {
  const DeviceType type = register_device_type("vulkan", std::make_unique<VulkanMemory>());
  const std::pair<OpKind, Kernel> kernels[] = {
      {OpKind::Full, full},
      {OpKind::Add, add},
      {OpKind::Sub, sub},
      {OpKind::Mul, mul},
      {OpKind::Div, div},
      {OpKind::Neg, neg},
      {OpKind::Exp, exp},
      {OpKind::Log, log},
      {OpKind::Sqrt, sqrt},
      {OpKind::Rsqrt, rsqrt},
      {OpKind::Reciprocal, reciprocal},
      {OpKind::Abs, abs},
      {OpKind::Sign, sign},
      {OpKind::Sin, sin},
      {OpKind::Cos, cos},
      {OpKind::Tanh, tanh},
      {OpKind::Sigmoid, sigmoid},
      {OpKind::Sum, sum},
      {OpKind::Mean, mean},
      {OpKind::Reshape, reshape},
      {OpKind::Permute, permute},
      {OpKind::Expand, expand},
      {OpKind::Contiguous, contiguous},
      {OpKind::Slice, slice},
      // Shape copies, index and creation (index family).
      {OpKind::SliceBackward, slice_backward},
      {OpKind::AsStrided, as_strided},
      {OpKind::StridedScatter, strided_scatter},
      {OpKind::Cat, cat},
      {OpKind::Stack, stack},
      {OpKind::Pad, pad},
      {OpKind::Flip, flip},
      {OpKind::IndexSelect, index_select},
      {OpKind::InterpolateDim, interpolate_dim},
      {OpKind::Gather, gather},
      {OpKind::ScatterAdd, scatter_add},
      {OpKind::Arange, arange},
      {OpKind::Rand, rand},
      {OpKind::Randn, randn},
      {OpKind::Randint, randint},
      // random sampling (issue 15 item 3)
      {OpKind::Randperm, randperm},
      {OpKind::Multinomial, multinomial},
      {OpKind::Poisson, poisson},
      {OpKind::StandardGamma, standard_gamma},
      // End of the index family.
      // linalg
      {OpKind::Matmul, matmul},
      {OpKind::Addmm, addmm},
      {OpKind::Im2Col, im2col},
      {OpKind::Col2Im, col2im},
      {OpKind::Conv2d, conv2d},
      {OpKind::Conv2dBackwardInput, conv2d_backward_input},
      {OpKind::Conv2dBackwardWeight, conv2d_backward_weight},
      {OpKind::MaxPool2d, max_pool2d},
      {OpKind::MaxPool2dBackward, max_pool2d_backward},
      {OpKind::AvgPool2d, avg_pool2d},
      // end linalg
      // ---- reductions, softmax and norms (reduction engineer) ----
      {OpKind::Amax, amax},
      {OpKind::Amin, amin},
      {OpKind::MaxDim, max_dim},
      {OpKind::MinDim, min_dim},
      {OpKind::Prod, prod},
      {OpKind::ArgMax, argmax},
      {OpKind::ArgMin, argmin},
      {OpKind::LogSumExp, logsumexp},
      {OpKind::Var, var},
      {OpKind::SumSquares, sum_squares},
      {OpKind::Softmax, softmax},
      {OpKind::LogSoftmax, log_softmax},
      {OpKind::SoftmaxBackward, softmax_backward},
      {OpKind::LogSoftmaxBackward, log_softmax_backward},
      {OpKind::LayerNorm, layer_norm},
      {OpKind::LayerNormBackward, layer_norm_backward},
      {OpKind::LayerNormParamGrad, layer_norm_param_grad},
      {OpKind::BatchNorm, batch_norm},
      {OpKind::BatchNormBackward, batch_norm_backward},
      {OpKind::BatchNormParamGrad, batch_norm_param_grad},
      // ---- end of reductions, softmax and norms ----
      // ---- element-wise family ----
      {OpKind::Log1p, log1p},
      {OpKind::Expm1, expm1},
      {OpKind::Relu, relu},
      {OpKind::Gelu, gelu},
      {OpKind::TanhBackward, tanh_backward},
      {OpKind::SigmoidBackward, sigmoid_backward},
      {OpKind::ReluBackward, relu_backward},
      {OpKind::LeakyRelu, leaky_relu},
      {OpKind::LeakyReluBackward, leaky_relu_backward},
      {OpKind::Hardtanh, clamp},
      {OpKind::HardtanhBackward, hardtanh_backward},
      {OpKind::Elu, elu},
      {OpKind::EluBackward, elu_backward},
      {OpKind::Softplus, softplus},
      {OpKind::SoftplusBackward, softplus_backward},
      {OpKind::Hardsigmoid, hardsigmoid},
      {OpKind::HardsigmoidBackward, hardsigmoid_backward},
      {OpKind::Hardswish, hardswish},
      {OpKind::HardswishBackward, hardswish_backward},
      {OpKind::Silu, silu},
      {OpKind::SiluBackward, silu_backward},
      {OpKind::SmoothL1, smooth_l1},
      {OpKind::SmoothL1Backward, smooth_l1_backward},
      {OpKind::Huber, huber},
      {OpKind::HuberBackward, huber_backward},
      {OpKind::GeluBackward, gelu_backward},
      {OpKind::Erf, erf},
      {OpKind::Erfc, erfc},
      {OpKind::Floor, floor},
      {OpKind::Ceil, ceil},
      {OpKind::Round, round},
      {OpKind::Trunc, trunc},
      {OpKind::Frac, frac},
      {OpKind::SquaredDifference, squared_difference},
      {OpKind::Lerp, lerp},
      {OpKind::Addcmul, addcmul},
      {OpKind::Addcdiv, addcdiv},
      {OpKind::FloorDivide, floor_divide},
      {OpKind::Remainder, remainder},
      {OpKind::Pow, pow},
      {OpKind::Maximum, maximum},
      {OpKind::Minimum, minimum},
      {OpKind::Where, where},
      {OpKind::Clamp, clamp},
      {OpKind::Eq, eq},
      {OpKind::Ne, ne},
      {OpKind::Lt, lt},
      {OpKind::Le, le},
      {OpKind::Gt, gt},
      {OpKind::Ge, ge},
      {OpKind::BitwiseAnd, bitwise_and},
      {OpKind::BitwiseOr, bitwise_or},
      {OpKind::BitwiseXor, bitwise_xor},
      {OpKind::Cast, cast},
      // ---- end of the element-wise family ----
      // ---- sort and scan families (sortscan) ----
      {OpKind::Sort, sort},
      {OpKind::SearchSorted, searchsorted},
      {OpKind::CumSum, cumsum},
      {OpKind::CumProd, cumprod},
      {OpKind::CumMax, cummax},
      {OpKind::CumMin, cummin},
      // ---- end of the sort and scan families ----
      // recurrent cells (issue #16 item 2: rnn)
      {OpKind::LstmCell, lstm_cell},
      {OpKind::LstmCellBackward, lstm_cell_backward},
      // ---- math ops (#15) ----
      {OpKind::Tan, tan},
      {OpKind::Asin, asin},
      {OpKind::Acos, acos},
      {OpKind::Atan, atan},
      {OpKind::Sinh, sinh},
      {OpKind::Cosh, cosh},
      {OpKind::Asinh, asinh},
      {OpKind::Acosh, acosh},
      {OpKind::Atanh, atanh},
      {OpKind::Lgamma, lgamma},
      {OpKind::Digamma, digamma},
      {OpKind::Polygamma, polygamma},
      {OpKind::Erfinv, erfinv},
      {OpKind::Log2, log2},
      {OpKind::Log10, log10},
      {OpKind::Exp2, exp2},
      {OpKind::Atan2, atan2},
      {OpKind::Fmod, fmod},
      {OpKind::BitwiseLeftShift, bitwise_left_shift},
      {OpKind::BitwiseRightShift, bitwise_right_shift},
      {OpKind::Gcd, gcd},
      {OpKind::Lcm, lcm},
      {OpKind::Nextafter, nextafter},
      // ---- end of math ops (#15) ----
      // solvers (#15 linalg)
      {OpKind::LuFactor, lu_factor},
      {OpKind::Cholesky, cholesky},
      {OpKind::Eigh, eigh},
      {OpKind::Svd, svd},
      {OpKind::Qr, qr},
      {OpKind::Geqrf, geqrf},
      {OpKind::TriangularSolve, triangular_solve},
      // special functions (#15)
      {OpKind::I0, i0},
      {OpKind::I0e, i0e},
      {OpKind::I1, i1},
      {OpKind::I1e, i1e},
      {OpKind::Igamma, igamma},
      {OpKind::Igammac, igammac},
      {OpKind::StandardGammaGrad, standard_gamma_grad},
      // scaled dot-product attention (#18)
      {OpKind::Attention, attention},
      {OpKind::AttentionBackward, attention_backward},
  };
  // Narrow dtypes (#19 item 7): views, copies and cast take them as the CPU's; the rest compute
  // them in float32 / int32 (16- and 8-bit storage: check_dtype).
  for (const auto& [kind, kernel] : kernels)
    register_kernel(type, kind, kernel, standard_kernel_dtypes(kind));
  register_services(type, {.copy_into = copy_into,
                           .add_into = add_into,
                           .sgd_update = sgd_update,
                           .adam_update = adam_update,
                           .adadelta_update = adadelta_update});
  register_deferred_check(type, expect_all);  // hostwait (issue #14): expect.h
}

std::string device_name() { return context().device_name(); }

void synchronize() { context().synchronize(); }

void empty_cache() { context().empty_cache(); }

Stats stats() {
  Context& c = context();
  const StreamStats s = c.stats();
  Stats out;
  out.allocated = c.memory_allocated();
  out.reserved = c.memory_reserved();
  out.submissions = s.submissions;
  out.dispatches = s.dispatches;
  out.barriers = s.barriers;
  out.host_to_device = s.host_to_device;
  out.device_to_host = s.device_to_host;
  out.host_to_device_bytes = s.host_to_device_bytes;
  out.device_to_host_bytes = s.device_to_host_bytes;
  out.staged = s.staged;
  out.host_waits = s.host_waits;  // vkfix
  return out;
}

// vkgaps
Features features() {
  const Context& c = context();
  return {c.has_float64(), c.has_int64(), c.has_int8_storage(), c.has_int16_storage()};
}

int validation_messages() {
  const Context* c = Context::get();
  return c ? c->validation_messages() : 0;
}

}  // namespace vk::vulkan
