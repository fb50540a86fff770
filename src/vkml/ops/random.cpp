// Random sampling ops (issue 15 item 3): randperm, multinomial, bernoulli, normal, poisson, and
// standard_gamma (#18, for vk.distributions' Gamma family). Each
// reserves its draws from a Generator (ops/creation.h) and keeps the (seed, offset) it got as its
// attributes, so that the kernels of every device draw the same Philox stream and a seed gives the
// same numbers on every device. bernoulli and normal are made of rand / randn and elementwise ops
// (OpDef::any_device), so they run on every device that has those. As torch, the samples are not
// reparameterised: bernoulli, normal and poisson give zero gradients to their inputs, and
// randperm and multinomial (integer results) none. standard_gamma is, as torch's: its rule is the
// implicit derivative of the sample at its quantile (ops/special.h: standard_gamma_grad).
#include <cmath>
#include <limits>

#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"
#include "vkml/ops/special.h"

namespace vk {
namespace {

constexpr std::string_view kNoGradInteger = "none: an integer result";
constexpr std::string_view kZeroGrad =
    "zero for every input, as torch (a sample is not reparameterised)";

Meta infer_randperm(const std::vector<Tensor>&, const Attrs& a, std::string_view op) {
  VK_CHECK(a.dtype != DType::Bool, NotImplementedError, op, ": not implemented for dtype bool");
  const int64_t n = a.shape.empty() ? 0 : a.shape[0];
  // Every value 0 .. n - 1 must be exact in the dtype (float32: 2^24, int32: 2^31 - 1).
  const int64_t most = a.dtype == DType::Float32   ? (int64_t{1} << 24) + 1
                       : a.dtype == DType::Int32   ? (int64_t{1} << 31)
                       : a.dtype == DType::Float64 ? (int64_t{1} << 53) + 1
                                                   : std::numeric_limits<int64_t>::max();
  VK_CHECK(n <= most, RuntimeError, op, ": n cannot be greater than ", most - 1, " for dtype ",
           dtype_name(a.dtype), ", got ", n);
  return {a.shape, a.dtype};
}

Meta infer_multinomial(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& p = in[0];
  VK_CHECK(is_floating(p.dtype()), DTypeError, op,
           ": only floating-point probabilities are supported, got ", dtype_name(p.dtype()));
  VK_CHECK(p.ndim() == 1 || p.ndim() == 2, ShapeError, op,
           ": prob_dist must be 1 or 2 dim, got shape ", shape_str(p.shape()));
  const int64_t k = a.random.num_samples, categories = p.shape().back();
  VK_CHECK(k > 0, RuntimeError, op, ": cannot sample n_sample <= 0 samples (got ", k, ")");
  VK_CHECK(a.random.replacement || k <= categories, RuntimeError, op,
           ": cannot sample n_sample > prob_dist.size(-1) samples without replacement (", k,
           " samples, ", categories, " categories)");
  if (p.ndim() == 1) return {{k}, DType::Int64};
  return {{p.shape()[0], k}, DType::Int64};
}

Meta infer_float_sample(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  VK_CHECK(is_floating(in[0].dtype()), DTypeError, op,
           ": only floating-point inputs are supported, got ", dtype_name(in[0].dtype()));
  return {in[0].shape(), in[0].dtype()};
}

// normal(mean, std): std in mean's dtype (as torch: the result has mean's dtype), broadcast.
void prepare_normal(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(is_floating(in[0].dtype()) && is_floating(in[1].dtype()), DTypeError, op,
           ": only floating-point mean and std are supported, got ", dtype_name(in[0].dtype()),
           " and ", dtype_name(in[1].dtype()));
  in[1] = cast(in[1], in[0].dtype());
  prepare_broadcast(in, a, op);
}

Grads zero_grads(const GradCtx& c) {
  Grads g(c.in.size());
  for (size_t i = 0; i < c.in.size(); ++i)
    if (c.needs[i]) g[i] = zeros_like(c.in[i]);
  return g;
}

// x = F^-1(u; alpha) with u held: dx/dalpha = -F_alpha / F_x, which standard_gamma_grad computes.
Grads standard_gamma_grads(const GradCtx& c) {
  return {c.grad * standard_gamma_grad(c.in[0], c.out)};
}

// The uniform / standard normal draws of the stream position an op reserved, on `device`.
Tensor draws_at(OpKind kind, const Attrs& from, const Meta& m) {
  Attrs a;
  a.shape = m.shape;
  a.dtype = m.dtype;
  a.device = m.device;
  a.seed = from.seed;
  a.offset = from.offset;
  return dispatch(kind, {}, a);
}

// u < p with u ~ U[0, 1): 1 with probability p.
VK_KERNEL(bernoulli_any_device) {
  NoGradGuard no_grad;
  return cast(lt(draws_at(OpKind::Rand, a, m), in[0]), m.dtype);
}

VK_KERNEL(normal_any_device) {
  NoGradGuard no_grad;
  return add(in[0], mul(in[1], draws_at(OpKind::Randn, a, m)));
}

Attrs drawn(Generator* gen, Device device, uint64_t n, std::string_view op) {
  Attrs a;
  const RngState s = reserve_draws(gen, device, n, op);
  a.seed = s.seed;
  a.offset = s.offset;
  a.device = device;
  return a;
}

// RuntimeError naming op unless every element of x lies in [lo, hi] (NaN does not).
void check_range(const Tensor& x, double lo, double hi, std::string_view op,
                 std::string_view what) {
  if (x.numel() == 0) return;
  NoGradGuard no_grad;
  const double min = item_scalar(to_cpu(amin(x))).to_double(),
               max = item_scalar(to_cpu(amax(x))).to_double();
  VK_CHECK(min >= lo && max <= hi, RuntimeError, op, ": ", what, " (the values lie in [", min, ", ",
           max, "])");
}

}  // namespace

void add_random_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Randperm,
                 .name = "randperm",
                 .arity = 0,
                 .signature = "randperm(n, dtype, device, generator)",
                 .summary = "a random permutation of 0 .. n - 1 (Fisher-Yates over Philox)",
                 .infer = infer_randperm,
                 .grad_doc = "none: no tensor inputs"});
  ops.push_back({.kind = OpKind::Multinomial,
                 .name = "multinomial",
                 .arity = 1,
                 .signature = "multinomial(probs, num_samples, replacement, generator)",
                 .summary = "category indices drawn per row of probs (weights, not normalised)",
                 .infer = infer_multinomial,
                 .grad_doc = kNoGradInteger});
  ops.push_back({.kind = OpKind::Bernoulli,
                 .name = "bernoulli",
                 .arity = 1,
                 .signature = "bernoulli(p, generator)",
                 .summary = "1 with probability p, else 0 (rand(...) < p)",
                 .infer = infer_float_sample,
                 .any_device = bernoulli_any_device,
                 .grad = zero_grads,
                 .grad_doc = kZeroGrad});
  ops.push_back({.kind = OpKind::Normal,
                 .name = "normal",
                 .arity = 2,
                 .signature = "normal(mean, std, generator)",
                 .summary = "samples of N(mean, std^2): mean + std * randn(...)",
                 .prepare = prepare_normal,
                 .infer = infer_float_sample,
                 .any_device = normal_any_device,
                 .grad = zero_grads,
                 .grad_doc = kZeroGrad});
  ops.push_back({.kind = OpKind::Poisson,
                 .name = "poisson",
                 .arity = 1,
                 .signature = "poisson(rates, generator)",
                 .summary = "Poisson samples (Knuth below rate 10, Hormann's PTRS above)",
                 .infer = infer_float_sample,
                 .grad = zero_grads,
                 .grad_doc = kZeroGrad});
  ops.push_back({.kind = OpKind::StandardGamma,
                 .name = "standard_gamma",
                 .arity = 1,
                 .signature = "standard_gamma(concentration, generator)",
                 .summary = "Gamma(concentration, 1) samples (Marsaglia and Tsang; below 1 by "
                            "Gamma(alpha + 1) * U^(1 / alpha))",
                 .infer = infer_float_sample,
                 .grad = standard_gamma_grads,
                 .grad_doc = "dconcentration = g * standard_gamma_grad(concentration, out) (the "
                             "sample held at its quantile)"});
}

Tensor randperm(int64_t n, DType dtype, Device device, Generator* gen) {
  VK_CHECK(n >= 0, SizeError, "randperm: n must be non-negative, got ", n);
  Attrs a = drawn(gen, device, static_cast<uint64_t>(n), "randperm");
  a.shape = {n};
  a.dtype = dtype;
  return dispatch(OpKind::Randperm, {}, a);
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  VK_CHECK(probs.defined(), RuntimeError, "multinomial: probs is undefined");
  const int64_t rows = probs.ndim() == 2 ? probs.shape()[0] : 1;
  const int64_t categories = probs.ndim() >= 1 ? probs.shape().back() : 0;
  // One counter per sample drawn (with replacement) or per category (the race without).
  const int64_t stride = replacement ? std::max<int64_t>(num_samples, 0) : categories;
  Attrs a = drawn(gen, probs.device(), static_cast<uint64_t>(rows * stride), "multinomial");
  a.random.num_samples = num_samples;
  a.random.replacement = replacement;
  return dispatch(OpKind::Multinomial, {probs}, a);
}

Tensor bernoulli(const Tensor& p, Generator* gen) {
  VK_CHECK(p.defined(), RuntimeError, "bernoulli: p is undefined");
  VK_CHECK(is_floating(p.dtype()), DTypeError,
           "bernoulli: only floating-point probabilities are supported, got ",
           dtype_name(p.dtype()));
  check_range(p, 0.0, 1.0, "bernoulli", "expected every probability p to be in [0, 1]");
  Attrs a = drawn(gen, p.device(), static_cast<uint64_t>(p.numel()), "bernoulli");
  return dispatch(OpKind::Bernoulli, {p}, a);
}

Tensor normal(const Tensor& mean, const Tensor& std, Generator* gen) {
  VK_CHECK(mean.defined() && std.defined(), RuntimeError, "normal: mean or std is undefined");
  check_range(std, 0.0, std::numeric_limits<double>::infinity(), "normal",
              "expects all elements of std >= 0.0");
  const Shape shape = broadcast_shapes(mean.shape(), std.shape(), "normal");
  // Where the op runs (a 0-d CPU operand joins the other's device, as in every op).
  const Device device = mean.ndim() == 0 && mean.device().is_cpu() ? std.device() : mean.device();
  Attrs a = drawn(gen, device, static_cast<uint64_t>(numel_of(shape, "normal")), "normal");
  return dispatch(OpKind::Normal, {mean, std}, a);
}

Tensor normal(const Tensor& mean, double std, Generator* gen) {
  VK_CHECK(std >= 0.0, RuntimeError, "normal expects std >= 0.0, but found std ", std);
  VK_CHECK(mean.defined(), RuntimeError, "normal: mean is undefined");
  return normal(mean, scalar_tensor(std, is_floating(mean.dtype()) ? mean.dtype() : DType::Float32),
                gen);
}

Tensor normal(double mean, const Tensor& std, Generator* gen) {
  VK_CHECK(std.defined(), RuntimeError, "normal: std is undefined");
  // The result takes std's dtype: mean is a 0-d tensor of it, on std's device.
  const DType dtype = is_floating(std.dtype()) ? std.dtype() : DType::Float32;
  return normal(full({}, mean, dtype, std.device()), std, gen);
}

Tensor normal(double mean, double std, const Shape& shape, DType dtype, Device device,
              Generator* gen) {
  VK_CHECK(std >= 0.0, RuntimeError, "normal expects std >= 0.0, but found std ", std);
  return normal(full({}, mean, dtype, device), expand(full({}, std, dtype, device), shape), gen);
}

Tensor poisson(const Tensor& rates, Generator* gen) {
  VK_CHECK(rates.defined(), RuntimeError, "poisson: rates is undefined");
  Attrs a = drawn(gen, rates.device(), static_cast<uint64_t>(rates.numel()), "poisson");
  return dispatch(OpKind::Poisson, {rates}, a);
}

Tensor standard_gamma(const Tensor& concentration, Generator* gen) {
  VK_CHECK(concentration.defined(), RuntimeError, "standard_gamma: concentration is undefined");
  Attrs a = drawn(gen, concentration.device(), static_cast<uint64_t>(concentration.numel()),
                  "standard_gamma");
  return dispatch(OpKind::StandardGamma, {concentration}, a);
}

}  // namespace vk
