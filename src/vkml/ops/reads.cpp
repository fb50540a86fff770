// What each gradient rule reads (OpDef::reads), as data: the ops listed here declare it, every
// other op is taken to read everything. The op sweep checks each declaration by writing NaN over
// what a rule claims not to read and asking for the same gradients (OpSweep.RulesReadOnlyWhat-
// TheyDeclare), so an entry can be added here with a case and nothing else.
//
// It matters after an in-place write (ops/inplace.cpp): y = x @ w; y.relu_() leaves matmul's
// node over memory that now holds relu's values, and matmul's rule reads x and w, not its output,
// so backward may go through it; exp's rule reads its output, so y = x.exp(); y.relu_() refuses.
#include <utility>

#include "vkml/ops/op.h"

namespace vk {
namespace {

using Needs = std::vector<bool>;

ReadSet nothing(const Needs&) { return 0; }  // the rule needs shapes only: linear ops
ReadSet output(const Needs&) { return kReadsOutput; }
ReadSet inputs(const Needs&) { return kReadsAll & ~kReadsOutput; }
ReadSet input0(const Needs&) { return 1; }  // where's condition
ReadSet input1(const Needs&) { return 2; }  // an index
// a * b, a @ b: a's gradient reads b and b's reads a.
ReadSet other_operand(const Needs& n) { return (n[0] ? 2 : 0) | (n[1] ? 1 : 0); }
// addmm(bias, a, b): the bias's gradient reads nothing.
ReadSet addmm(const Needs& n) { return (n[1] ? 4 : 0) | (n[2] ? 2 : 0); }
// a / b: da = g / b, db = -g a / b^2.
ReadSet div(const Needs& n) { return 2 | (n[1] ? 1 : 0); }
// a ** b: da = g b a^(b-1), db = g out log(a).
ReadSet pow(const Needs& n) { return 3 | (n[1] ? kReadsOutput : 0); }

constexpr std::pair<OpKind, ReadSet (*)(const Needs&)> kReadSets[] = {
    // shapes only
    {OpKind::Neg, nothing},
    {OpKind::Add, nothing},
    {OpKind::Sub, nothing},
    {OpKind::Cast, nothing},
    {OpKind::Sum, nothing},
    {OpKind::Mean, nothing},
    {OpKind::Reshape, nothing},
    {OpKind::Permute, nothing},
    {OpKind::Expand, nothing},
    {OpKind::Contiguous, nothing},
    {OpKind::Slice, nothing},
    {OpKind::SliceBackward, nothing},
    {OpKind::AsStrided, nothing},
    {OpKind::StridedScatter, nothing},
    {OpKind::Cat, nothing},
    {OpKind::Stack, nothing},
    {OpKind::Pad, nothing},
    {OpKind::Flip, nothing},
    {OpKind::ToDevice, nothing},
    {OpKind::CumSum, nothing},
    {OpKind::AvgPool2d, nothing},
    {OpKind::Im2Col, nothing},
    {OpKind::Col2Im, nothing},
    {OpKind::Frac, nothing},
    // step functions: a zero gradient of the input's shape
    {OpKind::Sign, nothing},
    {OpKind::Floor, nothing},
    {OpKind::Ceil, nothing},
    {OpKind::Round, nothing},
    {OpKind::Trunc, nothing},
    // the indices (another output, which backward checks whatever the op declares)
    {OpKind::Sort, nothing},
    {OpKind::CumMax, nothing},
    {OpKind::CumMin, nothing},
    // the output only
    {OpKind::Exp, output},
    {OpKind::Expm1, output},
    {OpKind::Exp2, output},
    {OpKind::Sqrt, output},
    {OpKind::Rsqrt, output},
    {OpKind::Reciprocal, output},
    {OpKind::Tanh, output},
    {OpKind::Sigmoid, output},
    {OpKind::Relu, output},
    {OpKind::Tan, output},
    {OpKind::Erfinv, output},
    {OpKind::Softmax, output},
    {OpKind::LogSoftmax, output},
    // some inputs
    {OpKind::Where, input0},
    {OpKind::IndexSelect, input1},
    {OpKind::Gather, input1},
    {OpKind::ScatterAdd, input1},
    {OpKind::Mul, other_operand},
    {OpKind::Matmul, other_operand},
    {OpKind::Addmm, addmm},
    {OpKind::Div, div},
    {OpKind::Pow, pow},
    // the inputs, not the output
    {OpKind::Log, inputs},
    {OpKind::Log1p, inputs},
    {OpKind::Log2, inputs},
    {OpKind::Log10, inputs},
    {OpKind::Abs, inputs},
    {OpKind::Sin, inputs},
    {OpKind::Cos, inputs},
    {OpKind::Asin, inputs},
    {OpKind::Acos, inputs},
    {OpKind::Atan, inputs},
    {OpKind::Sinh, inputs},
    {OpKind::Cosh, inputs},
    {OpKind::Asinh, inputs},
    {OpKind::Acosh, inputs},
    {OpKind::Atanh, inputs},
    {OpKind::Atan2, inputs},
    {OpKind::Erf, inputs},
    {OpKind::Erfc, inputs},
    {OpKind::Gelu, inputs},
    {OpKind::Silu, inputs},
    {OpKind::LeakyRelu, inputs},
    {OpKind::Hardtanh, inputs},
    {OpKind::Softplus, inputs},
    {OpKind::Hardsigmoid, inputs},
    {OpKind::Hardswish, inputs},
    {OpKind::Maximum, inputs},
    {OpKind::Minimum, inputs},
    {OpKind::Clamp, inputs},
    {OpKind::Var, inputs},
    {OpKind::SumSquares, inputs},
    {OpKind::SquaredDifference, inputs},
    {OpKind::SmoothL1, inputs},
    {OpKind::Huber, inputs},
    {OpKind::Lerp, inputs},
    {OpKind::Addcmul, inputs},
    {OpKind::Addcdiv, inputs},
    {OpKind::InterpolateDim, inputs},
    {OpKind::LayerNorm, inputs},
    {OpKind::BatchNorm, inputs},
    {OpKind::Conv2d, inputs},
    {OpKind::MaxPool2d, inputs},
    {OpKind::LstmCell, inputs},
    {OpKind::Attention, inputs},
    {OpKind::MaxDim, inputs},
    {OpKind::MinDim, inputs},
    {OpKind::Lgamma, inputs},
    {OpKind::Digamma, inputs},
    {OpKind::Polygamma, inputs},
    {OpKind::I0, inputs},
    {OpKind::Igamma, inputs},
    {OpKind::Igammac, inputs},
    {OpKind::Elu, inputs},
    {OpKind::Remainder, inputs},
    {OpKind::Fmod, inputs},
    // the fused gradients (their own rules serve second order)
    {OpKind::ReluBackward, inputs},
    {OpKind::GeluBackward, inputs},
    {OpKind::TanhBackward, inputs},
    {OpKind::SigmoidBackward, inputs},
    {OpKind::SiluBackward, inputs},
    {OpKind::EluBackward, inputs},
    {OpKind::HardtanhBackward, inputs},
    {OpKind::LeakyReluBackward, inputs},
    {OpKind::SoftplusBackward, inputs},
    {OpKind::HardsigmoidBackward, inputs},
    {OpKind::HardswishBackward, inputs},
    {OpKind::SmoothL1Backward, inputs},
    {OpKind::HuberBackward, inputs},
    {OpKind::SoftmaxBackward, inputs},
    {OpKind::LogSoftmaxBackward, inputs},
    {OpKind::MaxPool2dBackward, inputs},
    {OpKind::Conv2dBackwardInput, inputs},
    {OpKind::Conv2dBackwardWeight, inputs},
    {OpKind::LayerNormBackward, inputs},
    {OpKind::LayerNormParamGrad, inputs},
    {OpKind::BatchNormBackward, inputs},
    {OpKind::BatchNormParamGrad, inputs},
    {OpKind::AttentionBackward, inputs},
    {OpKind::LstmCellBackward, inputs},
};

}  // namespace

ReadSet rule_reads(const OpDef& def, const Attrs& attrs, const std::vector<bool>& needs) {
  if (attrs.custom && attrs.custom->checks_own_reads) return 0;
  return def.reads ? def.reads(needs) : kReadsAll;
}

void set_read_sets(std::vector<OpDef>& table) {
  for (const auto& [kind, reads] : kReadSets) table[static_cast<size_t>(kind)].reads = reads;
}

}  // namespace vk
