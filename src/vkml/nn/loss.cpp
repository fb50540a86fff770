// torch.nn.functional's distances and the losses beyond the classic ones (issue #16), composed
// from ops: gradients of any order come from the ops' rules. Where torch checks shapes with a
// RuntimeError, vkml raises SizeError (a ShapeError and a RuntimeError).
#include <cmath>
#include <limits>
#include <numbers>

#include "vkml/core/grad_mode.h"
#include "vkml/nn/breadth_util.h"
#include "vkml/nn/functional.h"
#include "vkml/ops/activation.h"
#include "vkml/ops/shape.h"

namespace vk::nn::functional {

using breadth::check_companion;
using breadth::check_float;
using breadth::reduce_loss;

namespace {

Tensor zero(const Tensor& like) { return scalar_like(0.0, like); }

// sqrt(s) with the subgradient 0 at s = 0 (a plain sqrt would give 0 * inf = NaN there).
Tensor safe_sqrt(const Tensor& s) {
  Tensor positive = gt(s, zero(s));
  return where(positive, sqrt(where(positive, s, scalar_like(1.0, s))), zero(s));
}

// The p-norm of x along dim (p = inf: the largest |x|; p = 0: the count of non-zeros).
Tensor norm_along(const Tensor& x, double p, int64_t dim, bool keepdim) {
  if (p == 2.0) return safe_sqrt(sum_squares(x, {dim}, keepdim));
  if (p == 1.0) return sum(abs(x), {dim}, keepdim);
  if (std::isinf(p)) return p > 0 ? amax(abs(x), {dim}, keepdim) : amin(abs(x), {dim}, keepdim);
  if (p == 0.0) return sum(cast(ne(x, zero(x)), x.dtype()), {dim}, keepdim);
  Tensor s = sum(pow(abs(x), Scalar(p)), {dim}, keepdim);
  Tensor positive = gt(s, zero(s));
  return where(positive, pow(where(positive, s, scalar_like(1.0, s)), Scalar(1.0 / p)), zero(s));
}

void check_pair(const Tensor& a, const Tensor& b, const char* fn, const char* wa, const char* wb) {
  check_float(a, fn, wa);
  check_companion(b, a, fn, wb);
}

// The difference of input and target (same dtype, broadcastable), for the regression losses.
Tensor difference(const Tensor& input, const Tensor& target, const char* fn) {
  check_pair(input, target, fn, "input", "target");
  broadcast_shapes(input.shape(), target.shape(), fn);
  return input - target;
}

Tensor positive_part(const Tensor& x) { return clamp(x, Scalar(0.0), std::nullopt); }

void check_ndims_equal(std::initializer_list<const Tensor*> ts, const char* fn, const char* what) {
  const int64_t n = (*ts.begin())->ndim();
  for (const Tensor* t : ts)
    VK_CHECK(t->ndim() == n, SizeError, fn, ": ", what, " must have the same number of dims, got ",
             shape_str((*ts.begin())->shape()), " and ", shape_str(t->shape()));
}

}  // namespace

// ======================= distances =======================

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  constexpr const char* fn = "pairwise_distance";
  check_pair(x1, x2, fn, "x1", "x2");
  broadcast_shapes(x1.shape(), x2.shape(), fn);
  Tensor d = x1 - x2 + eps;
  if (d.ndim() == 0) d = unsqueeze(d, 0);
  return norm_along(d, p, -1, keepdim && std::max(x1.ndim(), x2.ndim()) > 0);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  constexpr const char* fn = "cosine_similarity";
  check_pair(x1, x2, fn, "x1", "x2");
  const Shape shape = broadcast_shapes(x1.shape(), x2.shape(), fn);
  const int64_t nd = static_cast<int64_t>(shape.size());
  VK_CHECK(dim >= -nd && dim < std::max<int64_t>(nd, 1), IndexError, fn, ": dim ", dim,
           " is out of range for the broadcast shape ", shape_str(shape));
  Tensor a = broadcast_to(x1, shape), b = broadcast_to(x2, shape);
  // each side normalised first (torch), the norms clamped at eps
  Tensor na = clamp(norm_along(a, 2.0, dim, true), Scalar(eps), std::nullopt);
  Tensor nb = clamp(norm_along(b, 2.0, dim, true), Scalar(eps), std::nullopt);
  return sum((a / na) * (b / nb), {dim});
}

Tensor normalize(const Tensor& x, double p, int64_t dim, double eps) {
  check_float(x, "normalize", "input");
  return x / clamp(norm_along(x, p, dim, true), Scalar(eps), std::nullopt);
}

// ======================= regression losses =======================

Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction,
              bool log_target) {
  constexpr const char* fn = "kl_div";
  VK_CHECK(
      reduction == "batchmean" || reduction == "mean" || reduction == "sum" || reduction == "none",
      RuntimeError, fn, ": reduction must be 'batchmean', 'mean', 'sum' or 'none', got '",
      reduction, "'");
  check_pair(input, target, fn, "input", "target");
  broadcast_shapes(input.shape(), target.shape(), fn);
  Tensor loss;
  if (log_target) {
    loss = exp(target) * (target - input);
  } else {  // target * log(target) is 0 where target is 0 (xlogy)
    Tensor positive = gt(target, zero(target));
    Tensor safe = where(positive, target, scalar_like(1.0, target));
    loss = where(positive, target * log(safe), zero(target)) - target * input;
  }
  if (reduction == "batchmean") {
    Tensor total = sum(loss);
    return input.ndim() == 0 ? total : total / static_cast<double>(input.size(0));
  }
  return reduce_loss(loss, reduction, fn);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                      double beta) {
  constexpr const char* fn = "smooth_l1_loss";
  breadth::check_reduction(reduction, fn);
  VK_CHECK(beta >= 0.0, RuntimeError, fn, ": beta must be >= 0, got ", beta);
  Tensor d = difference(input, target, fn);
  // beta 0 is the l1 loss, as torch's (whose smooth_l1 gradient at 0 would be +-g, not 0)
  if (beta == 0.0) return reduce_loss(abs(d), reduction, fn);
  return reduce_loss(smooth_l1(d, beta), reduction, fn);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                  double delta) {
  constexpr const char* fn = "huber_loss";
  breadth::check_reduction(reduction, fn);
  VK_CHECK(delta > 0.0, RuntimeError, fn, ": delta must be > 0, got ", delta);
  return reduce_loss(huber(difference(input, target, fn), delta), reduction, fn);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full,
                        double eps, std::string_view reduction) {
  constexpr const char* fn = "poisson_nll_loss";
  breadth::check_reduction(reduction, fn);
  check_pair(input, target, fn, "input", "target");
  broadcast_shapes(input.shape(), target.shape(), fn);
  Tensor loss = log_input ? exp(input) - target * input : input - target * log(input + eps);
  if (full) {  // Stirling's term target log target - target + log(2 pi target) / 2, for target > 1
    Tensor big = gt(target, scalar_like(1.0, target));
    Tensor t = where(big, target, scalar_like(2.0, target));
    Tensor stirling = t * log(t) - t + log(t * (2.0 * std::numbers::pi)) * 0.5;
    loss = loss + where(big, stirling, zero(stirling));
  }
  return reduce_loss(loss, reduction, fn);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full,
                         double eps, std::string_view reduction) {
  constexpr const char* fn = "gaussian_nll_loss";
  VK_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", ShapeError, fn, ": ",
           reduction, " is not a valid value for reduction");
  check_pair(input, target, fn, "input", "target");
  check_companion(var, input, fn, "var");
  Tensor v = var;
  const Shape& in = input.shape();
  if (v.shape() != in) {
    const Shape lead(in.begin(), in.end() - (in.empty() ? 0 : 1));
    if (!in.empty() && v.shape() == lead) {
      v = unsqueeze(v, -1);  // homoscedastic: one variance per sample
    } else {
      const bool last_is_one = v.ndim() == input.ndim() && v.ndim() >= 1 && v.size(-1) == 1 &&
                               Shape(v.shape().begin(), v.shape().end() - 1) == lead;
      VK_CHECK(last_is_one, ShapeError, fn, ": var of shape ", shape_str(var.shape()),
               " is of incorrect size for the input of shape ", shape_str(in));
    }
  }
  // torch clamps a clone of var at eps without recording it: the value is clamped, the gradient
  // flows to var as if it were not.
  Tensor clamped_delta;
  {
    NoGradGuard no_grad;
    clamped_delta = clamp(v.detach(), Scalar(eps), std::nullopt) - v.detach();
  }
  v = v + clamped_delta;
  Tensor d = input - target;
  Tensor loss = (log(v) + d * d / v) * 0.5;
  if (full) loss = loss + 0.5 * std::log(2.0 * std::numbers::pi);
  return reduce_loss(loss, reduction, fn);
}

// ======================= margin and embedding losses =======================

Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target, double margin,
                           std::string_view reduction) {
  constexpr const char* fn = "margin_ranking_loss";
  breadth::check_reduction(reduction, fn);
  check_pair(x1, x2, fn, "input1", "input2");
  check_ndims_equal({&x1, &x2, &target}, fn, "input1, input2 and target");
  // any numeric target, as torch's: it promotes with the inputs (int64: theirs; float64: float64)
  return reduce_loss(positive_part(-target * (x1 - x2) + margin), reduction, fn);
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin,
                            std::string_view reduction) {
  constexpr const char* fn = "hinge_embedding_loss";
  breadth::check_reduction(reduction, fn);
  check_float(input, fn, "input");  // the target, any dtype (torch's), is only compared to +-1
  broadcast_shapes(input.shape(), target.shape(), fn);
  Tensor margin_part = positive_part(margin - input);
  Tensor from_margin = where(ne(target, scalar_like(1.0, target)), margin_part, zero(margin_part));
  Tensor from_input = where(ne(target, scalar_like(-1.0, target)), input, zero(input));
  return reduce_loss(from_margin + from_input, reduction, fn);
}

Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                             double margin, std::string_view reduction) {
  constexpr const char* fn = "cosine_embedding_loss";
  breadth::check_reduction(reduction, fn);
  check_pair(x1, x2, fn, "input1", "input2");  // the target, any dtype, is only compared to +-1
  VK_CHECK(x1.shape() == x2.shape() && (x1.ndim() == 1 || x1.ndim() == 2), SizeError, fn,
           ": input1 of shape ", shape_str(x1.shape()), " and input2 of shape ",
           shape_str(x2.shape()), " must be equal 1-D or 2-D shapes");
  VK_CHECK(target.ndim() == x1.ndim() - 1 && (target.ndim() == 0 || target.size(0) == x1.size(0)),
           SizeError, fn, ": target of shape ", shape_str(target.shape()),
           " must be 0-D for 1-D inputs or (N) for (N, D) inputs of shape ", shape_str(x1.shape()));
  constexpr double tiny = 1e-12;  // torch's epsilon inside the magnitudes
  const int64_t dim = x1.ndim() - 1;
  Tensor dot = sum(x1 * x2, {dim});
  Tensor mag = sqrt((sum_squares(x1, {dim}) + tiny) * (sum_squares(x2, {dim}) + tiny));
  Tensor cos = dot / mag;
  Tensor pos = where(eq(target, scalar_like(1.0, target)), 1.0 - cos, zero(cos));
  Tensor neg = where(eq(target, scalar_like(-1.0, target)), positive_part(cos - margin), zero(cos));
  return reduce_loss(pos + neg, reduction, fn);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           double margin, double p, double eps, bool swap,
                           std::string_view reduction) {
  constexpr const char* fn = "triplet_margin_loss";
  breadth::check_reduction(reduction, fn);
  check_pair(anchor, positive, fn, "anchor", "positive");
  check_companion(negative, anchor, fn, "negative");
  check_ndims_equal({&anchor, &positive, &negative}, fn, "anchor, positive and negative");
  VK_CHECK(anchor.ndim() == 1 || anchor.ndim() == 2, SizeError, fn,
           ": expected 1-D or 2-D inputs, got anchor of shape ", shape_str(anchor.shape()));
  Tensor d_pos = pairwise_distance(anchor, positive, p, eps);
  Tensor d_neg = pairwise_distance(anchor, negative, p, eps);
  if (swap) d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps));
  return reduce_loss(positive_part(d_pos - d_neg + margin), reduction, fn);
}

// ======================= soft-margin losses =======================

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   std::string_view reduction) {
  constexpr const char* fn = "multilabel_soft_margin_loss";
  breadth::check_reduction(reduction, fn);
  check_pair(input, target, fn, "input", "target");
  breadth::check_same_shape(target, input, fn, "target");
  VK_CHECK(input.ndim() >= 1, SizeError, fn, ": input must have a class dim, got a 0-d tensor");
  // -(y log sigmoid(x) + (1 - y) log sigmoid(-x)) = (1 - y) x - log sigmoid(x)
  Tensor loss = (1.0 - target) * input - breadth::log_sigmoid(input);
  if (weight.defined()) {
    check_companion(weight, input, fn, "weight");
    broadcast_shapes(weight.shape(), input.shape(), fn);
    loss = loss * weight;
  }
  const int64_t classes = input.size(-1);
  loss = sum(loss, {-1}) / static_cast<double>(classes);
  return reduce_loss(loss, reduction, fn);
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  constexpr const char* fn = "soft_margin_loss";
  breadth::check_reduction(reduction, fn);
  check_pair(input, target, fn, "input", "target");
  broadcast_shapes(input.shape(), target.shape(), fn);
  return reduce_loss(breadth::softplus_stable(-target * input), reduction, fn);
}

}  // namespace vk::nn::functional
