// The CPU backend's registration: every op's CPU kernel, and the services the engine and the
// optimizers use to write into existing memory. Nothing outside this folder names a CPU kernel.
#include "vkml/backend/cpu/register.h"

#include <utility>

#include "vkml/backend/cpu/activation.h"
#include "vkml/backend/cpu/attention.h"
#include "vkml/backend/cpu/conv.h"
#include "vkml/backend/cpu/creation.h"
#include "vkml/backend/cpu/divmod.h"
#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/index.h"
#include "vkml/backend/cpu/interpolate.h"
#include "vkml/backend/cpu/linalg.h"
#include "vkml/backend/cpu/math.h"  // math ops (#15)
#include "vkml/backend/cpu/norm.h"
#include "vkml/backend/cpu/onednn.h"
#include "vkml/backend/cpu/optim.h"
#include "vkml/backend/cpu/pointwise.h"
#include "vkml/backend/cpu/qr.h"  // QR (#15 linalg)
#include "vkml/backend/cpu/random.h"
#include "vkml/backend/cpu/reduction.h"
#include "vkml/backend/cpu/rnn.h"  // recurrent cells (rnn)
#include "vkml/backend/cpu/scan.h"
#include "vkml/backend/cpu/shape.h"
#include "vkml/backend/cpu/softmax.h"
#include "vkml/backend/cpu/solve.h"  // solvers (#15 linalg)
#include "vkml/backend/cpu/sort.h"
#include "vkml/backend/cpu/special.h"  // special functions (#15)

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

void register_kernels() {
  const std::pair<OpKind, Kernel> kernels[] = {
      {OpKind::Full, cpu::full},
      {OpKind::Arange, cpu::arange},
      {OpKind::Rand, cpu::rand},
      {OpKind::Randn, cpu::randn},
      {OpKind::Randint, cpu::randint},
      // random sampling (issue 15 item 3); bernoulli and normal run on every device
      {OpKind::Randperm, cpu::randperm},
      {OpKind::Multinomial, cpu::multinomial},
      {OpKind::Poisson, cpu::poisson},
      {OpKind::StandardGamma, cpu::standard_gamma},
      {OpKind::Neg, cpu::neg},
      {OpKind::Exp, cpu::exp},
      {OpKind::Log, cpu::log},
      {OpKind::Log1p, cpu::log1p},
      {OpKind::Expm1, cpu::expm1},
      {OpKind::Sqrt, cpu::sqrt},
      {OpKind::Rsqrt, cpu::rsqrt},
      {OpKind::Reciprocal, cpu::reciprocal},
      {OpKind::Abs, cpu::abs},
      {OpKind::Sign, cpu::sign},
      {OpKind::Sin, cpu::sin},
      {OpKind::Cos, cpu::cos},
      {OpKind::Tanh, cpu::tanh},
      {OpKind::Sigmoid, cpu::sigmoid},
      {OpKind::Relu, cpu::relu},
      {OpKind::Gelu, cpu::gelu},
      {OpKind::TanhBackward, cpu::tanh_backward},
      {OpKind::SigmoidBackward, cpu::sigmoid_backward},
      {OpKind::ReluBackward, cpu::relu_backward},
      {OpKind::GeluBackward, cpu::gelu_backward},
      {OpKind::LeakyRelu, cpu::leaky_relu},
      {OpKind::LeakyReluBackward, cpu::leaky_relu_backward},
      {OpKind::Hardtanh, cpu::clamp},
      {OpKind::HardtanhBackward, cpu::hardtanh_backward},
      {OpKind::Elu, cpu::elu},
      {OpKind::EluBackward, cpu::elu_backward},
      {OpKind::Softplus, cpu::softplus},
      {OpKind::SoftplusBackward, cpu::softplus_backward},
      {OpKind::Hardsigmoid, cpu::hardsigmoid},
      {OpKind::HardsigmoidBackward, cpu::hardsigmoid_backward},
      {OpKind::Hardswish, cpu::hardswish},
      {OpKind::HardswishBackward, cpu::hardswish_backward},
      {OpKind::Silu, cpu::silu},
      {OpKind::SiluBackward, cpu::silu_backward},
      {OpKind::SmoothL1, cpu::smooth_l1},
      {OpKind::SmoothL1Backward, cpu::smooth_l1_backward},
      {OpKind::Huber, cpu::huber},
      {OpKind::HuberBackward, cpu::huber_backward},
      {OpKind::Erf, cpu::erf},
      {OpKind::Erfc, cpu::erfc},
      {OpKind::Floor, cpu::floor},
      {OpKind::Ceil, cpu::ceil},
      {OpKind::Round, cpu::round},
      {OpKind::Trunc, cpu::trunc},
      {OpKind::Add, cpu::add},
      {OpKind::Sub, cpu::sub},
      {OpKind::Mul, cpu::mul},
      {OpKind::Div, cpu::div},
      {OpKind::FloorDivide, cpu::floor_divide},
      {OpKind::Remainder, cpu::remainder},
      {OpKind::Pow, cpu::pow},
      {OpKind::Maximum, cpu::maximum},
      {OpKind::Minimum, cpu::minimum},
      {OpKind::Where, cpu::where},
      {OpKind::Clamp, cpu::clamp},
      {OpKind::Eq, cpu::eq},
      {OpKind::Ne, cpu::ne},
      {OpKind::Lt, cpu::lt},
      {OpKind::Le, cpu::le},
      {OpKind::Gt, cpu::gt},
      {OpKind::Ge, cpu::ge},
      {OpKind::BitwiseAnd, cpu::bitwise_and},
      {OpKind::BitwiseOr, cpu::bitwise_or},
      {OpKind::BitwiseXor, cpu::bitwise_xor},
      {OpKind::Cast, cpu::cast},
      {OpKind::Sum, cpu::sum},
      {OpKind::Mean, cpu::mean},
      {OpKind::Amax, cpu::amax},
      {OpKind::Amin, cpu::amin},
      {OpKind::MaxDim, cpu::max_dim},
      {OpKind::MinDim, cpu::min_dim},
      {OpKind::Prod, cpu::prod},
      {OpKind::ArgMax, cpu::argmax},
      {OpKind::ArgMin, cpu::argmin},
      {OpKind::LogSumExp, cpu::logsumexp},
      {OpKind::Var, cpu::var},
      {OpKind::SumSquares, cpu::sum_squares},
      {OpKind::Softmax, cpu::softmax},
      {OpKind::LogSoftmax, cpu::log_softmax},
      {OpKind::SoftmaxBackward, cpu::softmax_backward},
      {OpKind::LogSoftmaxBackward, cpu::log_softmax_backward},
      {OpKind::LayerNorm, cpu::layer_norm},
      {OpKind::LayerNormBackward, cpu::layer_norm_backward},
      {OpKind::LayerNormParamGrad, cpu::layer_norm_param_grad},
      {OpKind::BatchNorm, cpu::batch_norm},
      {OpKind::BatchNormBackward, cpu::batch_norm_backward},
      {OpKind::BatchNormParamGrad, cpu::batch_norm_param_grad},
      {OpKind::Reshape, cpu::reshape},
      {OpKind::Permute, cpu::permute},
      {OpKind::Expand, cpu::expand},
      {OpKind::Contiguous, cpu::contiguous},
      {OpKind::Slice, cpu::slice},
      {OpKind::SliceBackward, cpu::slice_backward},
      {OpKind::AsStrided, cpu::as_strided},
      {OpKind::StridedScatter, cpu::strided_scatter},
      {OpKind::Cat, cpu::cat},
      {OpKind::Stack, cpu::stack},
      {OpKind::Pad, cpu::pad},
      {OpKind::Flip, cpu::flip},
      {OpKind::IndexSelect, cpu::index_select},
      {OpKind::Gather, cpu::gather},
      {OpKind::ScatterAdd, cpu::scatter_add},
      {OpKind::Matmul, cpu::matmul},
      {OpKind::Addmm, cpu::addmm},
      {OpKind::Im2Col, cpu::im2col},
      {OpKind::Col2Im, cpu::col2im},
      {OpKind::Conv2d, cpu::conv2d},
      {OpKind::Conv2dBackwardInput, cpu::conv2d_backward_input},
      {OpKind::Conv2dBackwardWeight, cpu::conv2d_backward_weight},
      {OpKind::MaxPool2d, cpu::max_pool2d},
      {OpKind::MaxPool2dBackward, cpu::max_pool2d_backward},
      {OpKind::AvgPool2d, cpu::avg_pool2d},
      // sort and scan families (sortscan)
      {OpKind::Sort, cpu::sort},
      {OpKind::SearchSorted, cpu::searchsorted},
      {OpKind::CumSum, cpu::cumsum},
      {OpKind::CumProd, cpu::cumprod},
      {OpKind::CumMax, cpu::cummax},
      {OpKind::CumMin, cpu::cummin},
      // recurrent cells (issue #16 item 2: rnn)
      {OpKind::LstmCell, cpu::lstm_cell},
      {OpKind::LstmCellBackward, cpu::lstm_cell_backward},
      // math ops (#15)
      {OpKind::Tan, cpu::tan},
      {OpKind::Asin, cpu::asin},
      {OpKind::Acos, cpu::acos},
      {OpKind::Atan, cpu::atan},
      {OpKind::Sinh, cpu::sinh},
      {OpKind::Cosh, cpu::cosh},
      {OpKind::Asinh, cpu::asinh},
      {OpKind::Acosh, cpu::acosh},
      {OpKind::Atanh, cpu::atanh},
      {OpKind::Lgamma, cpu::lgamma},
      {OpKind::Digamma, cpu::digamma},
      {OpKind::Polygamma, cpu::polygamma},
      {OpKind::Erfinv, cpu::erfinv},
      {OpKind::Log2, cpu::log2},
      {OpKind::Log10, cpu::log10},
      {OpKind::Exp2, cpu::exp2},
      {OpKind::Frac, cpu::frac},
      {OpKind::SquaredDifference, cpu::squared_difference},
      {OpKind::InterpolateDim, cpu::interpolate_dim},
      {OpKind::Lerp, cpu::lerp},
      {OpKind::Addcmul, cpu::addcmul},
      {OpKind::Addcdiv, cpu::addcdiv},
      {OpKind::Atan2, cpu::atan2},
      {OpKind::Fmod, cpu::fmod},
      {OpKind::BitwiseLeftShift, cpu::bitwise_left_shift},
      {OpKind::BitwiseRightShift, cpu::bitwise_right_shift},
      {OpKind::Gcd, cpu::gcd},
      {OpKind::Lcm, cpu::lcm},
      {OpKind::Nextafter, cpu::nextafter},
      // solvers (#15 linalg)
      {OpKind::LuFactor, cpu::lu_factor},
      {OpKind::Cholesky, cpu::cholesky},
      {OpKind::Eigh, cpu::eigh},
      {OpKind::Svd, cpu::svd},
      {OpKind::Qr, cpu::qr},
      {OpKind::Geqrf, cpu::geqrf},
      {OpKind::TriangularSolve, cpu::triangular_solve},
      // special functions (#15)
      {OpKind::I0, cpu::i0},
      {OpKind::I0e, cpu::i0e},
      {OpKind::I1, cpu::i1},
      {OpKind::I1e, cpu::i1e},
      {OpKind::Igamma, cpu::igamma},
      {OpKind::Igammac, cpu::igammac},
      {OpKind::StandardGammaGrad, cpu::standard_gamma_grad},
      // scaled dot-product attention (#18)
      {OpKind::Attention, cpu::attention},
      {OpKind::AttentionBackward, cpu::attention_backward},
  };
  // bfloat16 products (and convolutions: im2col + GEMM) run natively on 16-bit matrix hardware
  // (onednn.h); elsewhere the op table's dispatch widens them to float32.
  const DTypeSet native_bf16 = has_bf16_gemm() ? dtype_bit(DType::BFloat16) : DTypeSet{0};
  for (const auto& [kind, kernel] : kernels) {
    const bool gemm = kind == OpKind::Matmul || kind == OpKind::Addmm || kind == OpKind::Conv2d;
    register_kernel(DeviceType::CPU, kind, kernel,
                    static_cast<DTypeSet>(standard_kernel_dtypes(kind) | (gemm ? native_bf16 : 0)));
  }
  register_services(DeviceType::CPU, {.copy_into = copy_into,
                                      .add_into = add_into,
                                      .binary_into = binary_into,
                                      .sgd_update = sgd_update,
                                      .adam_update = adam_update,
                                      .adadelta_update = adadelta_update});
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
