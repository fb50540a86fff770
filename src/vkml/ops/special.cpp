// Special functions (issue #15): I0, I1 and their exponentially scaled forms, and the regularized
// incomplete gamma functions P(a, x) and Q(a, x). Their kernels evaluate the published Chebyshev
// expansions and the series / continued fraction (backend/cpu/special.cpp, shaders/special.comp);
// every gradient rule is made of forward ops, so derivatives of any order exist.
#include "vkml/ops/special.h"

#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/math.h"
#include "vkml/ops/op.h"

namespace vk {
namespace {

// d/dx of a function whose derivative at 0 is a removable 0/0 (I1 and I1e: 1/2 there): `value`
// elsewhere, 1/2 at 0 (where picks it, so the NaN of the other branch does not leak).
Tensor half_at_zero(const Tensor& x, const Tensor& value) {
  return where(eq(x, zeros_like(x)), full_like(x, 0.5), value);
}

Grads i0_grad(const GradCtx& c) { return {c.grad * i1(c.in[0])}; }
// (e^-|x| I0)' = e^-|x| I1 - sgn(x) e^-|x| I0
Grads i0e_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  return {c.grad * (i1e(x) - sign(x) * c.out)};
}
// I1' = I0 - I1 / x
Grads i1_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  return {c.grad * half_at_zero(x, i0(x) - c.out / x)};
}
// (e^-|x| I1)' = e^-|x| I0 - e^-|x| I1 (sgn(x) + 1/x)
Grads i1e_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  return {c.grad * half_at_zero(x, i0e(x) - c.out * (sign(x) + reciprocal(x)))};
}

// Both operands floating after promotion: an integer pair has no kernel, as in torch.
Meta infer_igamma(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(is_floating(in[0].dtype()), NotImplementedError, op, ": not implemented for ",
           dtype_name(in[0].dtype()), " tensors (as in PyTorch)");
  return {in[0].shape(), in[0].dtype()};
}

// dP/dx = x^(a-1) e^-x / Gamma(a), in log space (no overflow of x^(a-1) or Gamma(a) on the way);
// dQ/dx = -dP/dx. torch has no derivative with respect to a (it needs a series in a of its own).
Tensor igamma_density(const Tensor& a, const Tensor& x) {
  return exp(xlogy(a - 1.0, x) - x - lgamma(a));
}
Grads igamma_grads(const GradCtx& c, std::string_view op, double sign) {
  VK_CHECK(!c.needs[0], NotImplementedError, "the derivative for '", op,
           ": input' is not implemented (a, the first argument; as in PyTorch)");
  return {Tensor(), c.grad * igamma_density(c.in[0], c.in[1]) * sign};
}
Grads igamma_grad(const GradCtx& c) { return igamma_grads(c, "igamma", 1.0); }
Grads igammac_grad(const GradCtx& c) { return igamma_grads(c, "igammac", -1.0); }

// h(alpha, x) = dx/dalpha = -P_alpha / p, p = P_x. Its x-derivative from the ratio's:
// h_x = -(P_alpha,x p - P_alpha p_x) / p^2, with P_alpha,x = p (log x - psi(alpha)) and
// p_x = p ((alpha - 1) / x - 1), so h_x = psi(alpha) - log x - h ((alpha - 1) / x - 1). Its
// alpha-derivative needs P_alpha,alpha, a series of its own, which torch has no rule for either.
Grads standard_gamma_grad_grad(const GradCtx& c) {
  VK_CHECK(!c.needs[0], NotImplementedError,
           "the derivative for 'standard_gamma_grad: alpha' is not implemented (as in PyTorch)");
  const Tensor& alpha = c.in[0];
  const Tensor& x = c.in[1];
  const Tensor slope = digamma(alpha) - log(x) - c.out * ((alpha - 1.0) / x - 1.0);
  return {Tensor(), c.grad * slope};
}

OpDef igamma_op(OpKind kind, std::string_view name, std::string_view summary,
                Grads (*grad)(const GradCtx&), std::string_view grad_doc) {
  return {.kind = kind,
          .name = name,
          .arity = 2,
          .signature = "(a, x)",
          .summary = summary,
          .prepare = prepare_binary,
          .infer = infer_igamma,
          .grad = grad,
          .grad_doc = grad_doc};
}

}  // namespace

void add_special_ops(OpList& ops) {
  ops.push_back(float_unary(OpKind::I0, "i0", "i0(x)",
                            "modified Bessel function of the first kind of order 0 (Cephes' "
                            "Chebyshev expansions; NaN at +-inf, as torch)",
                            i0_grad, "dx = g * i1(x)"));
  ops.push_back(float_unary(OpKind::I0e, "i0e", "i0e(x)", "exp(-|x|) * i0(x), without overflow",
                            i0e_grad, "dx = g * (i1e(x) - sgn(x) * out)"));
  ops.push_back(float_unary(OpKind::I1, "i1", "i1(x)",
                            "modified Bessel function of the first kind of order 1 (odd)", i1_grad,
                            "dx = g * (i0(x) - out / x); g / 2 at x = 0"));
  ops.push_back(float_unary(OpKind::I1e, "i1e", "i1e(x)", "exp(-|x|) * i1(x), without overflow",
                            i1e_grad,
                            "dx = g * (i0e(x) - out * (sgn(x) + 1 / x)); g / 2 at x = 0"));
  ops.push_back(igamma_op(OpKind::Igamma, "igamma",
                          "regularized lower incomplete gamma P(a, x) (power series up to "
                          "max(a, 1), continued fraction past it); NaN for a < 0, x < 0 or "
                          "a = x = 0",
                          igamma_grad,
                          "dx = g * exp(xlogy(a - 1, x) - x - lgamma(a)); none for a (as torch)"));
  ops.push_back(igamma_op(OpKind::Igammac, "igammac",
                          "regularized upper incomplete gamma Q(a, x) = 1 - P(a, x), without "
                          "the cancellation of 1 - P where P is near 1",
                          igammac_grad,
                          "dx = -g * exp(xlogy(a - 1, x) - x - lgamma(a)); none for a (as torch)"));
  ops.push_back(igamma_op(OpKind::StandardGammaGrad, "standard_gamma_grad",
                          "dx/dalpha of a Gamma(alpha, 1) sample x at its quantile, -P_alpha / "
                          "P_x (series below x = alpha + 1, Legendre's fraction differentiated "
                          "above, Cornish-Fisher's expansion for alpha >= 1e5 near the mean)",
                          standard_gamma_grad_grad,
                          "dx = g * (digamma(alpha) - log(x) - out * ((alpha - 1) / x - 1)); none "
                          "for alpha (as torch)"));
}

Tensor i0(const Tensor& x) { return dispatch(OpKind::I0, {x}); }
Tensor i0e(const Tensor& x) { return dispatch(OpKind::I0e, {x}); }
Tensor i1(const Tensor& x) { return dispatch(OpKind::I1, {x}); }
Tensor i1e(const Tensor& x) { return dispatch(OpKind::I1e, {x}); }
Tensor igamma(const Tensor& a, const Tensor& x) { return dispatch(OpKind::Igamma, {a, x}); }
Tensor igammac(const Tensor& a, const Tensor& x) { return dispatch(OpKind::Igammac, {a, x}); }
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x) {
  return dispatch(OpKind::StandardGammaGrad, {alpha, x});
}

}  // namespace vk
