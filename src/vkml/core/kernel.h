// What a backend sees of the op table: the op kinds, the kernel signature, and the per-device
// kernel registry that each backend fills from its own folder (backend/<device>/register.cpp).
// The op table (ops/op.h) holds everything else about an op; ops/ never names a backend.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "vkml/core/attrs.h"
#include "vkml/core/device.h"
#include "vkml/core/shape.h"
#include "vkml/core/tensor.h"

namespace vk {

// The kinds are grouped by family, several to a line.
// clang-format off
enum class OpKind : uint16_t {
  // creation
  Full, Arange, Rand, Randn, Randint,
  // random sampling (issue 15 item 3)
  Randperm, Multinomial, Bernoulli, Normal, Poisson,
  // unary
  Neg, Exp, Log, Log1p, Expm1, Sqrt, Rsqrt, Reciprocal, Abs, Sign, Sin, Cos, Tanh, Sigmoid, Relu,
  TanhBackward, SigmoidBackward, ReluBackward, Gelu, GeluBackward, Erf, Erfc, Floor, Ceil, Round,
  // binary and friends
  Add, Sub, Mul, Div, FloorDivide, Remainder, Pow, Maximum, Minimum, Where, Clamp,
  // comparison
  Eq, Ne, Lt, Le, Gt, Ge,
  // bitwise (bool and integers)
  BitwiseAnd, BitwiseOr, BitwiseXor,
  Cast,
  // reductions
  Sum, Mean, Amax, Amin, MaxDim, MinDim, Prod, ArgMax, ArgMin, LogSumExp, Var,
  // fused
  Softmax, LogSoftmax, SoftmaxBackward, LogSoftmaxBackward, LayerNorm, LayerNormBackward,
  LayerNormParamGrad, BatchNorm, BatchNormBackward, BatchNormParamGrad,
  // shape
  Reshape, Permute, Expand, Contiguous, Slice, SliceBackward, Cat, Stack, Pad, Flip,
  // index
  IndexSelect, Gather, ScatterAdd,
  // linear algebra, convolution, pooling
  Matmul, Addmm, Im2Col, Col2Im, Conv2d, Conv2dBackwardInput, Conv2dBackwardWeight, MaxPool2d,
  MaxPool2dBackward, AvgPool2d,
  // moving data between devices
  ToDevice,
  // user-defined (custom functions, checkpoint)
  Custom,
  // sort and scan families (issue #15 item 4: sortscan)
  Sort, SearchSorted, CumSum, CumProd, CumMax, CumMin,
  // recurrent cells (issue #16 item 2: rnn)
  LstmCell, LstmCellBackward,
  // math ops (#15): the elementwise math torch has beyond the basics
  Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Lgamma, Digamma, Polygamma, Erfinv,
  Atan2, Fmod,
  // integer bits and steps (#15): shifts, gcd/lcm, nextafter
  BitwiseLeftShift, BitwiseRightShift, Gcd, Lcm, Nextafter,
  // solvers (#15 linalg): LU factorization, Cholesky and triangular solves
  LuFactor, Cholesky, TriangularSolve,
  // symmetric eigendecomposition and singular values (#15 linalg)
  Eigh, Svd,
  // QR by Householder reflections (#15 linalg)
  Qr, Geqrf,
  // special functions (#15): modified Bessel functions, regularized incomplete gamma
  I0, I0e, I1, I1e, Igamma, Igammac,
  // torch.nn.functional's activations with parameters and their gradients, one pass each (#18)
  LeakyRelu, LeakyReluBackward, Hardtanh, HardtanhBackward, Elu, EluBackward, Softplus,
  SoftplusBackward, Hardsigmoid, HardsigmoidBackward, Hardswish, HardswishBackward,
  // scaled dot-product attention, fused (#18)
  Attention, AttentionBackward,
  // rounding toward zero, one pass (it was where(x < 0, ceil, floor)) (#18)
  Trunc,
  // silu and the regression losses' element-wise pieces, one pass each way (#18)
  Silu, SiluBackward, SmoothL1, SmoothL1Backward, Huber, HuberBackward,
  // log2, log10, exp2 and frac one pass each (were composites: float64 casts, pow, x - trunc) (#18)
  Log2, Log10, Exp2, Frac,
  // lerp, addcmul and addcdiv fused: one pass each (were 3 to 8 ops) (#18)
  Lerp, Addcmul, Addcdiv,
  // mse_loss's element (a - b)^2 in one pass (was sub, then mul) (#18)
  SquaredDifference,
  // the 2-norm's sum of squares in one pass (x * x was a pass and a tensor of its own) (#18)
  SumSquares,
  // interpolate's linear step along one dim in one pass (two gathers, two products and a sum) (#18)
  InterpolateDim,
  // Gamma(concentration, 1) samples and their reparameterisation derivative (torch's
  // _standard_gamma and _standard_gamma_grad; vk.distributions' Gamma family) (#18)
  StandardGamma, StandardGammaGrad,
  // a region of a row-major tensor as a view, and a copy with the region written: a recorded
  // setitem by basic indices (y[:, t] = h) as one node that costs the region (#18)
  AsStrided, StridedScatter,
  kCount
};
// clang-format on
inline constexpr size_t kNumOps = static_cast<size_t>(OpKind::kCount);

// The output an op's shape/dtype rule inferred, and the device the kernel runs on.
struct Meta {
  Shape shape;
  DType dtype;
  Device device = kCPU;  // set by dispatch: shape rules leave it out
};

// What a kernel returns: the op's outputs by position, as many as its OpDef declares. Output 0 is
// the op's result (the tensor that becomes the graph node, shaped as Meta says); the others are
// what the op computes beside it in the same pass (max_dim's indices, batch_norm's statistics, a
// fused backward's parameter gradients), which callers take from dispatch_outputs and gradient
// rules read by position. An output an op may leave out (a statistic nobody asked for) is
// undefined. A kernel with one output returns its Tensor (converted implicitly).
inline constexpr size_t kMaxOutputs = 3;
class Outputs {
 public:
  Outputs(Tensor t) : v_{std::move(t)}, n_(1) {}  // NOLINT: implicit, so that `return out;` works
  Outputs(std::initializer_list<Tensor> ts) : n_(ts.size()) {
    VK_CHECK(ts.size() >= 1 && ts.size() <= kMaxOutputs, RuntimeError, "a kernel returned ",
             ts.size(), " outputs; an op has 1 to ", kMaxOutputs);
    size_t i = 0;
    for (const Tensor& t : ts) v_[i++] = t;
  }
  size_t size() const { return n_; }
  Tensor& operator[](size_t i) { return v_[i]; }
  const Tensor& operator[](size_t i) const { return v_[i]; }

 private:
  std::array<Tensor, kMaxOutputs> v_;
  size_t n_;
};

// Every kernel has this signature: the prepared inputs (all on the kernel's device), the op's
// parameters and output 0's inferred shape, dtype and device. A kernel allocates its outputs on
// that device (or returns a view of an input).
using Kernel = Outputs (*)(const std::vector<Tensor>& in, const Attrs& a, const Meta& out);
#define VK_KERNEL(name) \
  ::vk::Outputs name(const std::vector<::vk::Tensor>& in, const ::vk::Attrs& a, const ::vk::Meta& m)

// Registers `kernel` as `kind`'s kernel on devices of `type` (replacing any before it). Backends
// register from a static initialiser or from register_builtin_backends, before their first op.
// `dtypes`: the dtypes the kernel takes as inputs and outputs. Dispatch runs an op whose inputs
// or output fall outside them in compute_dtype (core/dtype.h): the narrow inputs are converted
// by the device's cast kernel, the kernel computes wide, and its wide outputs are rounded back,
// so that a kernel written for the five compute dtypes serves all ten. A kernel that registers a
// narrow dtype handles it itself (a view, a copy, a cast, a native 16-bit GEMM).
void register_kernel(DeviceType type, OpKind kind, Kernel kernel, DTypeSet dtypes = kComputeDTypes);
// The dtypes a backend registers `kind`'s kernel for unless it does more: every dtype for the ops
// that move bits (views, copies, index_select and gather) or convert them (cast), so that a view
// of a float16 tensor is a view and an embedding lookup in a bfloat16 table copies rows instead of
// widening the table; kComputeDTypes for the rest.
DTypeSet standard_kernel_dtypes(OpKind kind);
// The kernel of `kind` on `type`; null when that device has none.
Kernel find_kernel(DeviceType type, OpKind kind);
// The dtypes that kernel takes (kComputeDTypes unless it registered more).
DTypeSet kernel_dtypes(DeviceType type, OpKind kind);

// Registers the backends compiled into the library (backend/builtin.cpp). Idempotent; the op
// table calls it before its first op.
void register_builtin_backends();

// What the engine, the optimizers and in-place ops ask of a device beyond the op table: writes
// into memory that already exists (a gradient accumulated in place, a parameter updated in
// place). A backend registers one per device type; a null entry means "not on this device".
struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
  bool first_step;  // the momentum buffer is (re)initialised to the gradient, as torch
};
struct AdamHyper {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;  // 1-based: the step being taken
  bool decoupled, amsgrad, maximize;
};
// The element-wise ops an in-place write (x.add_(y), x.mul_(y), ...) runs straight into x.
enum class InPlaceOp : uint8_t { Add, Sub, Mul, Div };
struct AdadeltaHyper {
  double lr, rho, eps, weight_decay;
  bool maximize;
};
struct DeviceServices {
  void (*copy_into)(const Tensor& dst, const Tensor& src) = nullptr;
  void (*add_into)(const Tensor& dst, const Tensor& a, const Tensor& b) = nullptr;
  void (*binary_into)(const Tensor& dst, const Tensor& a, const Tensor& b, InPlaceOp op) = nullptr;
  void (*sgd_update)(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                     const SgdHyper& h) = nullptr;
  void (*adam_update)(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                      const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq,
                      const AdamHyper& h) = nullptr;
  void (*adadelta_update)(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                          const Tensor& acc_delta, const AdadeltaHyper& h) = nullptr;
};
void register_services(DeviceType type, const DeviceServices& services);

// The services, called on the device of their first tensor (NotImplementedError naming the
// service and the device when that device has none). The caller checks shapes and dtypes.
namespace in_place {
// dst = src elementwise, converting the dtype; same shape, dst of any strides.
void copy(const Tensor& dst, const Tensor& src);
// dst = a + b elementwise, one shape and dtype; dst may be a itself (gradient accumulation).
void add(const Tensor& dst, const Tensor& a, const Tensor& b);
// dst = a op b elementwise, one shape and floating dtype (b may be an expanded view); dst may be
// a itself. False, writing nothing, where dst's device has no such kernel.
bool binary(const Tensor& dst, const Tensor& a, const Tensor& b, InPlaceOp op);
// Fused optimizer steps over contiguous tensors of one floating dtype and element count;
// momentum_buffer is read and written only when h.momentum != 0, max_exp_avg_sq only when
// h.amsgrad.
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const SgdHyper& h);
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamHyper& h);
void adadelta_update(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                     const Tensor& acc_delta, const AdadeltaHyper& h);
}  // namespace in_place

}  // namespace vk
