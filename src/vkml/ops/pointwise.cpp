// The pointwise family (#18, ops/pointwise.h): lerp, addcmul and addcdiv, one pass each way. Their
// rules are torch's (derivatives.yaml), made of forward ops. Before, as composites: lerp with a
// tensor weight took 8 passes (where picks the side), with a scalar 3; addcmul and addcdiv 3.
#include "vkml/ops/pointwise.h"

#include <optional>
#include <string_view>
#include <vector>

#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"

namespace vk {
namespace {

void check_lerp_dtypes(const Tensor& start, const Tensor& other, const char* what) {
  VK_CHECK(other.dtype() == start.dtype(), RuntimeError, "lerp: expected dtype ",
           dtype_name(start.dtype()), " for `", what, "` but got dtype ",
           dtype_name(other.dtype()));
  VK_CHECK(is_floating(start.dtype()), NotImplementedError, "lerp: not implemented for dtype ",
           dtype_name(start.dtype()), " (floating point tensors only)");
}

// lerp(start, end, weight): start and end share a dtype; the weight has it too, or is the 0-d
// scalar weight in its compute dtype (lerp(.., Scalar): float for the 16-bit floats, as torch's
// opmath). All three broadcast.
void prepare_lerp(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const DType dt = in[0].dtype();
  VK_CHECK(is_floating(dt) && in[1].dtype() == dt &&
               (in[2].dtype() == dt || (in[2].ndim() == 0 && in[2].dtype() == compute_dtype(dt))),
           DTypeError, op, ": start, end and weight must share one floating dtype, got ",
           in[0].describe(), ", ", in[1].describe(), " and ", in[2].describe());
  prepare_broadcast(in, a, op);
}

// The result type of three operands, torch's rule: the dimensioned ones promoted together, the
// 0-d ones deciding only where their category (bool < int < float) is above.
DType result_type3(const std::vector<Tensor>& in) {
  std::optional<DType> dimmed, zero_d;
  for (const Tensor& t : in) {
    std::optional<DType>& r = t.ndim() == 0 ? zero_d : dimmed;
    r = r ? promote(*r, t.dtype()) : t.dtype();
  }
  if (!dimmed || !zero_d) return dimmed ? *dimmed : *zero_d;
  return category(*zero_d) > category(*dimmed) ? *zero_d : *dimmed;
}

// addcmul / addcdiv(input, t1, t2; attrs.value): the three in their common floating dtype
// (integers take the composite: addcmul below), broadcast together.
void prepare_addc(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const DType common = result_type3(in);
  VK_CHECK(is_floating(common), DTypeError, op, ": takes floating point tensors, got ",
           in[0].describe(), ", ", in[1].describe(), " and ", in[2].describe());
  for (Tensor& t : in) t = cast(t, common);
  prepare_broadcast(in, a, op);
}

// torch's rules (derivatives.yaml).
Grads lerp_grad(const GradCtx& c) {
  const Tensor &start = c.in[0], &end = c.in[1], &w = c.in[2];
  return {c.needs[0] ? c.grad * (1.0 - w) : Tensor(), c.needs[1] ? c.grad * w : Tensor(),
          c.needs[2] ? c.grad * (end - start) : Tensor()};
}
Grads addcmul_grad(const GradCtx& c) {
  const double v = c.attrs.value.to_double();
  return {c.needs[0] ? c.grad : Tensor(), c.needs[1] ? c.grad * (c.in[2] * v) : Tensor(),
          c.needs[2] ? c.grad * (c.in[1] * v) : Tensor()};
}
Grads addcdiv_grad(const GradCtx& c) {
  const double v = c.attrs.value.to_double();
  const Tensor &t1 = c.in[1], &t2 = c.in[2];
  return {c.needs[0] ? c.grad : Tensor(), c.needs[1] ? c.grad * (v / t2) : Tensor(),
          c.needs[2] ? neg(c.grad) * (t1 * v / (t2 * t2)) : Tensor()};
}

OpDef addc_op(OpKind kind, std::string_view name, std::string_view signature,
              std::string_view summary, Grads (*grad)(const GradCtx&), std::string_view doc) {
  return {.kind = kind,
          .name = name,
          .arity = 3,
          .signature = signature,
          .summary = summary,
          .prepare = prepare_addc,
          .infer = infer_same_as_first,
          .grad = grad,
          .grad_doc = doc};
}

}  // namespace

void add_pointwise_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Lerp,
                 .name = "lerp",
                 .arity = 3,
                 .signature = "lerp(start, end, weight)",
                 .summary = "base + coef (end - start): start and w where |w| < 0.5, else end and "
                            "w - 1 (torch's two-sided form: w = 1 gives end exactly)",
                 .prepare = prepare_lerp,
                 .infer = infer_same_as_first,
                 .grad = lerp_grad,
                 .grad_doc = "dstart = g (1 - w), dend = g w, dw = g (end - start)"});
  ops.push_back(addc_op(OpKind::Addcmul, "addcmul", "addcmul(input, t1, t2, value)",
                        "input + value * t1 * t2 (attrs.value), in torch's order", addcmul_grad,
                        "dinput = g, dt1 = g * t2 * value, dt2 = g * t1 * value"));
  ops.push_back(addc_op(OpKind::Addcdiv, "addcdiv", "addcdiv(input, t1, t2, value)",
                        "input + value * t1 / t2 (attrs.value), in torch's order", addcdiv_grad,
                        "dinput = g, dt1 = g * value / t2, dt2 = -g * value * t1 / t2^2"));
}

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  check_lerp_dtypes(start, end, "end");
  check_lerp_dtypes(start, weight, "weight");
  return dispatch(OpKind::Lerp, {start, end, weight});
}
Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight) {
  check_lerp_dtypes(start, end, "end");
  return dispatch(OpKind::Lerp,
                  {start, end, full({}, weight, compute_dtype(start.dtype()), start.device())});
}
Tensor addcmul(const Tensor& input, const Tensor& t1, const Tensor& t2, Scalar value) {
  const DType common = result_type3({input, t1, t2});
  VK_CHECK(!value.is_floating() || is_floating(common), RuntimeError,
           "addcmul: for integral input tensors, argument value must not be a floating point "
           "number");
  if (!is_floating(common)) {
    Tensor prod = t1 * t2;
    if (!(value.is_integral() && value.to_int64() == 1)) prod = prod * value;
    return input + prod;
  }
  Attrs a;
  a.value = value;
  return dispatch(OpKind::Addcmul, {input, t1, t2}, a);
}
Tensor addcdiv(const Tensor& input, const Tensor& t1, const Tensor& t2, Scalar value) {
  VK_CHECK(is_floating(t1.dtype()) || is_floating(t2.dtype()), RuntimeError,
           "addcdiv: integer division with addcdiv is not supported (tensor1 ",
           dtype_name(t1.dtype()), ", tensor2 ", dtype_name(t2.dtype()),
           "); use addcmul(input, tensor1, 1 / tensor2) for true division");
  Attrs a;
  a.value = value;
  return dispatch(OpKind::Addcdiv, {input, t1, t2}, a);
}

}  // namespace vk
