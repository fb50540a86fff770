// torch.nn.functional composed from the op table's public ops: no gradient rule lives here, so
// every function is differentiable to any order through the rules of the ops it uses.
//
// Names shared with vk:: ops (relu, softmax, conv2d, ...) are always called as vk::name: an
// unqualified call would find this namespace's function and, by argument-dependent lookup, the
// op as well.
#include "vkml/nn/functional.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "vkml/core/grad_mode.h"
#include "vkml/nn/breadth_util.h"
#include "vkml/ops/activation.h"
#include "vkml/ops/attention.h"
#include "vkml/ops/autocast.h"
#include "vkml/ops/composite.h"
#include "vkml/ops/conv.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/expect.h"  // hostwait
#include "vkml/ops/index.h"
#include "vkml/ops/inplace.h"
#include "vkml/ops/linalg.h"
#include "vkml/ops/norm.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"
#include "vkml/ops/softmax.h"

namespace vk::nn::functional {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- argument checks ----

void check_defined(const Tensor& t, const char* fn, const char* what) {
  VK_CHECK(t.defined(), RuntimeError, fn, ": ", what, " is undefined");
}

void check_floating(const Tensor& t, const char* fn, const char* what) {
  check_defined(t, fn, what);
  VK_CHECK(is_floating(t.dtype()), DTypeError, fn, ": ", what, " must be floating point, got ",
           t.describe());
}

void check_integral(const Tensor& t, const char* fn, const char* what) {
  check_defined(t, fn, what);
  VK_CHECK(is_integral(t.dtype()), DTypeError, fn, ": ", what,
           " must hold integer indices (int64 or int32), got ", t.describe());
}

// A companion tensor (target, weight, ...) must share the input's floating dtype, as in torch;
// inside an autocast region the region decides (a bfloat16 activation meets float32 weights, and
// the ops cast or promote them, as torch's autocast does).
void check_same_dtype(const Tensor& t, const Tensor& input, const char* fn, const char* what) {
  VK_CHECK(t.dtype() == input.dtype() || Autocast::is_enabled(input.device().type), DTypeError, fn,
           ": ", what, " has dtype ", dtype_name(t.dtype()), " but the input is ",
           input.describe());
}

void check_same_shape(const Tensor& t, const Tensor& input, const char* fn, const char* what) {
  VK_CHECK(t.shape() == input.shape(), ShapeError, fn, ": ", what, " of shape ",
           shape_str(t.shape()), " must match the input's shape ", shape_str(input.shape()));
}

// `t` must broadcast to exactly `shape` (it may not enlarge the result).
void check_broadcasts_to(const Tensor& t, const Shape& shape, const char* fn, const char* what) {
  const Shape& from = t.shape();
  bool fits = from.size() <= shape.size();
  for (size_t i = 0; fits && i < from.size(); ++i) {
    const int64_t extent = from[from.size() - 1 - i];
    fits = extent == 1 || extent == shape[shape.size() - 1 - i];
  }
  VK_CHECK(fits, ShapeError, fn, ": ", what, " of shape ", shape_str(from),
           " does not broadcast to the input's shape ", shape_str(shape));
}

// An optional per-channel tensor (weight, bias, running stats) of shape (C).
void check_per_channel(const Tensor& t, int64_t channels, const Tensor& input, const char* fn,
                       const char* what) {
  if (!t.defined()) return;
  VK_CHECK(t.shape() == Shape{channels}, ShapeError, fn, ": ", what, " of shape ",
           shape_str(t.shape()), " does not match the ", channels,
           " channels of the input of shape ", shape_str(input.shape()));
  check_same_dtype(t, input, fn, what);
}

// ---- reductions of element-wise losses ----

enum class Reduction { None, Mean, Sum };

Reduction parse_reduction(std::string_view reduction, const char* fn) {
  if (reduction == "mean") return Reduction::Mean;
  if (reduction == "sum") return Reduction::Sum;
  if (reduction == "none") return Reduction::None;
  throw RuntimeError(
      detail::cat(fn, ": reduction must be 'mean', 'sum' or 'none', got '", reduction, "'"));
}

Tensor reduce(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::Mean:
      return mean(loss);
    case Reduction::Sum:
      return sum(loss);
    case Reduction::None:
      break;
  }
  return loss;
}

// The integer values of an index tensor, read on the host (for range checks): a host read.
std::vector<int64_t> read_indices(const Tensor& indices) {
  Tensor dense = host_read(cast(indices, DType::Int64));
  const int64_t* p = dense.data<int64_t>();
  return std::vector<int64_t>(p, p + dense.numel());
}

Tensor zero_like_scalar(const Tensor& like) { return scalar_like(0.0, like); }

// A (C) tensor viewed as (1, C, 1, ...) so it broadcasts along dim 1 of an ndim-dim tensor.
Tensor along_channels(const Tensor& t, int64_t ndim) {
  Shape shape(static_cast<size_t>(ndim), 1);
  shape[1] = t.numel();
  return reshape(t, shape);
}

}  // namespace

// ======================= linear layers and activations =======================

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  constexpr const char* fn = "linear";
  check_floating(x, fn, "input");
  check_floating(w, fn, "weight");
  check_same_dtype(w, x, fn, "weight");
  VK_CHECK(w.ndim() == 2, ShapeError, fn, ": weight must be 2-D (out_features, in_features), got ",
           shape_str(w.shape()));
  VK_CHECK(x.ndim() >= 1 && x.size(-1) == w.size(1), ShapeError, fn, ": input of shape ",
           shape_str(x.shape()), " does not end in the ", w.size(1),
           " in_features of weight of shape ", shape_str(w.shape()));
  if (!b.defined()) return matmul(x, transpose(w, 0, 1));
  check_same_dtype(b, x, fn, "bias");
  VK_CHECK(b.shape() == Shape{w.size(0)}, ShapeError, fn, ": bias of shape ", shape_str(b.shape()),
           " does not match the ", w.size(0), " out_features of weight of shape ",
           shape_str(w.shape()));
  if (x.ndim() == 1) return matmul(x, transpose(w, 0, 1)) + b;
  // (..., in) rows as one (rows, in) matrix: one addmm, the bias added inside the product
  Shape out_shape = x.shape();
  out_shape.back() = w.size(0);
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.ndim(); ++d) rows *= x.size(d);
  return reshape(addmm(b, reshape(x, {rows, x.size(-1)}), transpose(w, 0, 1)), out_shape);
}

Tensor relu(const Tensor& x) { return vk::relu(x); }

Tensor gelu(const Tensor& x, std::string_view approximate) {
  VK_CHECK(approximate == "none" || approximate == "tanh", RuntimeError,
           "gelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
  return vk::gelu(x, approximate == "tanh");
}

Tensor silu(const Tensor& x) { return vk::silu(x); }
Tensor sigmoid(const Tensor& x) { return vk::sigmoid(x); }
Tensor tanh(const Tensor& x) { return vk::tanh(x); }
Tensor softmax(const Tensor& x, int64_t dim) { return vk::softmax(x, dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return vk::log_softmax(x, dim); }

// ======================= classification losses =======================

namespace {

// Class-index targets made safe to gather with: ignored positions point at class 0, and `valid`
// (bool, the target's shape) marks the positions that count.
struct ClassTargets {
  Tensor safe, valid;
};

// Checks every target is a class in [0, C) or ignore_index: an out-of-range class is an
// IndexError naming fn, the class and C (torch: "Target 5 is out of bounds.").
ClassTargets prepare_class_targets(const Tensor& target, int64_t classes, int64_t ignore_index,
                                   const char* fn) {
  if (!target.device().is_cpu()) {
    // vkfix: no read-back on a device (it would wait for it): ignored positions point at class
    // 0 there, and a class out of range raises gather's IndexError at the next host read.
    Tensor t64 = cast(target, DType::Int64);
    Tensor valid = ne(t64, full({}, ignore_index, DType::Int64));
    return {where(valid, t64, zeros_like(t64)), valid};
  }
  std::vector<int64_t> values = read_indices(target);
  for (int64_t& v : values) {
    if (v == ignore_index) {
      v = 0;
      continue;
    }
    VK_CHECK(v >= 0 && v < classes, IndexError, fn, ": target class ", v, " is out of bounds for ",
             classes, " classes (ignore_index is ", ignore_index, ")");
  }
  Tensor safe = to_device(from_data(values.data(), target.shape(), DType::Int64), target.device());
  Tensor valid = ne(cast(target, DType::Int64), full({}, ignore_index, DType::Int64));
  return {safe, valid};
}

// Batched view of (logits, target): an unbatched (C) input with a 0-d target gains a batch dim of
// one. The target must be (N, d1, ...) for class indices or the input's shape for probabilities.
struct Batched {
  Tensor input, target;
  bool unbatched = false;
};

Batched batch_inputs(const Tensor& input, const Tensor& target, const char* fn) {
  check_floating(input, fn, "input");
  check_defined(target, fn, "target");
  VK_CHECK(input.ndim() >= 1, ShapeError, fn, ": input must have a class dim, got a 0-d tensor");
  if (input.ndim() == 1) {
    VK_CHECK(target.ndim() == 0 || target.shape() == input.shape(), ShapeError, fn,
             ": unbatched input of shape ", shape_str(input.shape()),
             " expects a 0-d class target or probabilities of the same shape, got target of shape ",
             shape_str(target.shape()));
    return {unsqueeze(input, 0), unsqueeze(target, 0), true};
  }
  return {input, target, false};
}

// Class-index targets of batched input (N, C, d...) must have shape (N, d...).
void check_class_target_shape(const Tensor& input, const Tensor& target, const char* fn) {
  Shape expected = input.shape();
  expected.erase(expected.begin() + 1);
  VK_CHECK(target.shape() == expected, ShapeError, fn, ": target of shape ",
           shape_str(target.shape()), " does not fit input of shape ", shape_str(input.shape()),
           ": class indices need shape ", shape_str(expected), " (batch size ", input.size(0), ")");
}

Tensor unbatch(const Tensor& loss, const Batched& b, Reduction reduction) {
  return b.unbatched && reduction == Reduction::None ? squeeze(loss, 0) : loss;
}

// The per-position weight w[target] (0 where ignored), or the valid mask as numbers.
Tensor target_weights(const ClassTargets& t, const Tensor& weight, const Tensor& like) {
  if (!weight.defined()) return cast(t.valid, like.dtype());
  Tensor picked = reshape(index_select(weight, 0, reshape(t.safe, {-1})), t.safe.shape());
  return where(t.valid, picked, zero_like_scalar(picked));
}

// The loss sum(losses) / sum(weights) of torch's weighted mean (NaN when every target is
// ignored, as torch), or the sum / per-position losses.
Tensor reduce_weighted(const Tensor& losses, const Tensor& weights, Reduction reduction) {
  if (reduction == Reduction::Mean) return sum(losses) / sum(weights);
  return reduce(losses, reduction);
}

// nll_loss on batched log-probabilities (N, C, d...) and checked class targets.
Tensor nll_batched(const Tensor& log_probs, const ClassTargets& t, const Tensor& weight,
                   Reduction reduction) {
  Tensor picked = squeeze(gather(log_probs, 1, unsqueeze(t.safe, 1)), 1);
  Tensor weights = target_weights(t, weight, log_probs);
  Tensor losses = where(t.valid, -picked * weights, zero_like_scalar(picked));
  return reduce_weighted(losses, weights, reduction);
}

void check_class_weight(const Tensor& weight, const Tensor& input, const char* fn) {
  check_per_channel(weight, input.size(1), input, fn, "weight");
}

// The uniform part of label smoothing for class-index targets: -sum_c w_c log p_c per position
// (0 where ignored), reduced as torch does (the mean divides by the same weight sum as nll).
Tensor smoothing_term(const Tensor& log_probs, const ClassTargets& t, const Tensor& weight,
                      Reduction reduction) {
  Tensor weighted =
      weight.defined() ? log_probs * along_channels(weight, log_probs.ndim()) : log_probs;
  Tensor per_position = -sum(weighted, {1});
  Tensor losses = where(t.valid, per_position, zero_like_scalar(per_position));
  return reduce_weighted(losses, target_weights(t, weight, log_probs), reduction);
}

Tensor cross_entropy_class_targets(const Batched& b, const Tensor& weight, int64_t ignore_index,
                                   Reduction reduction, double label_smoothing) {
  constexpr const char* fn = "cross_entropy";
  check_class_target_shape(b.input, b.target, fn);
  const int64_t classes = b.input.size(1);
  ClassTargets t = prepare_class_targets(b.target, classes, ignore_index, fn);
  Tensor log_probs = vk::log_softmax(b.input, 1);
  Tensor nll = nll_batched(log_probs, t, weight, reduction);
  if (label_smoothing == 0.0) return nll;
  Tensor smooth = smoothing_term(log_probs, t, weight, reduction);
  return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / static_cast<double>(classes));
}

// Probability targets: -sum_c w_c y_c log p_c; the mean divides by the number of positions
// (N * d1 * ...), not by the weights (torch).
Tensor cross_entropy_prob_targets(const Batched& b, const Tensor& weight, Reduction reduction,
                                  double label_smoothing) {
  constexpr const char* fn = "cross_entropy";
  check_same_dtype(b.target, b.input, fn, "probability target");
  const int64_t classes = b.input.size(1);
  Tensor target = b.target;
  if (label_smoothing > 0.0)
    target = target * (1.0 - label_smoothing) + label_smoothing / static_cast<double>(classes);
  Tensor terms = vk::log_softmax(b.input, 1) * target;
  if (weight.defined()) terms = terms * along_channels(weight, b.input.ndim());
  switch (reduction) {
    case Reduction::None:
      return -sum(terms, {1});
    case Reduction::Sum:
      return -sum(terms);
    case Reduction::Mean:
      break;
  }
  const double positions = static_cast<double>(b.input.numel() / std::max<int64_t>(classes, 1));
  return -sum(terms) / positions;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, std::string_view reduction, double label_smoothing) {
  constexpr const char* fn = "cross_entropy";
  Reduction r = parse_reduction(reduction, fn);
  VK_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, RuntimeError, fn,
           ": label_smoothing must be in [0, 1], got ", label_smoothing);
  Batched b = batch_inputs(logits, target, fn);
  check_class_weight(weight, b.input, fn);
  if (is_floating(b.target.dtype())) {
    VK_CHECK(b.target.shape() == b.input.shape(), ShapeError, fn, ": probability target of shape ",
             shape_str(target.shape()), " must match input of shape ", shape_str(logits.shape()));
    return unbatch(cross_entropy_prob_targets(b, weight, r, label_smoothing), b, r);
  }
  check_integral(b.target, fn, "target");
  return unbatch(cross_entropy_class_targets(b, weight, ignore_index, r, label_smoothing), b, r);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, std::string_view reduction) {
  constexpr const char* fn = "nll_loss";
  Reduction r = parse_reduction(reduction, fn);
  Batched b = batch_inputs(log_probs, target, fn);
  check_integral(b.target, fn, "target");
  check_class_weight(weight, b.input, fn);
  check_class_target_shape(b.input, b.target, fn);
  ClassTargets t = prepare_class_targets(b.target, b.input.size(1), ignore_index, fn);
  return unbatch(nll_batched(b.input, t, weight, r), b, r);
}

// ======================= regression and binary losses =======================

namespace {

// mse / l1's operands: broadcastable floating tensors of one dtype (typed errors naming fn).
void check_difference(const Tensor& input, const Tensor& target, const char* fn) {
  check_floating(input, fn, "input");
  check_floating(target, fn, "target");
  check_same_dtype(target, input, fn, "target");
  broadcast_shapes(input.shape(), target.shape(), fn);  // ShapeError naming fn
}

// max(log_fn(t), -100), torch's clamp of the BCE logs, with a zero gradient where the clamp
// holds. Where it holds log_fn sees `neutral` (a point where it is finite), so neither the value
// nor the gradient of the branch not taken is ever inf or NaN (where's documented pitfall).
template <class LogFn>
Tensor log_clamped_at_minus_100(const Tensor& t, double neutral, LogFn log_fn) {
  Tensor keep;
  {
    NoGradGuard no_grad;
    keep = ge(log_fn(t.detach()), scalar_like(-100.0, t));
  }
  Tensor safe = where(keep, t, scalar_like(neutral, t));
  return where(keep, log_fn(safe), scalar_like(-100.0, t));
}

void check_probabilities(const Tensor& p, const char* fn) {
  if (p.numel() == 0) return;
  NoGradGuard no_grad;
  if (!values_on_host(p)) {
    // issue #14: a device checks without a host wait (raised at its next host read); NaN fails
    expect_all(logical_and(ge(p, scalar_like(0.0, p)), le(p, scalar_like(1.0, p))), false, fn,
               "every element of the input must be a probability in [0, 1]");
    return;
  }
  const Tensor range = host_read(cast(stack({amin(p), amax(p)}), DType::Float64));
  const double lo = range.data<double>()[0], hi = range.data<double>()[1];
  VK_CHECK(lo >= 0.0 && hi <= 1.0, RuntimeError, fn,
           ": every element of the input must be a probability in [0, 1], found values in [", lo,
           ", ", hi, "]");
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  Reduction r = parse_reduction(reduction, "mse_loss");
  check_difference(input, target, "mse_loss");
  return reduce(squared_difference(input, target), r);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  Reduction r = parse_reduction(reduction, "l1_loss");
  check_difference(input, target, "l1_loss");
  return reduce(abs(input - target), r);
}

Tensor binary_cross_entropy(const Tensor& p, const Tensor& target, const Tensor& weight,
                            std::string_view reduction) {
  constexpr const char* fn = "binary_cross_entropy";
  Reduction r = parse_reduction(reduction, fn);
  check_floating(p, fn, "input");
  check_floating(target, fn, "target");
  check_same_dtype(target, p, fn, "target");
  check_same_shape(target, p, fn, "target");
  check_probabilities(p, fn);
  Tensor log_p = log_clamped_at_minus_100(p, 1.0, [](const Tensor& t) { return vk::log(t); });
  Tensor log_1mp = log_clamped_at_minus_100(-p, 0.0, [](const Tensor& t) { return vk::log1p(t); });
  // torch: (target - 1) * max(log1p(-p), -100) - target * max(log(p), -100)
  Tensor loss = (target - 1.0) * log_1mp - target * log_p;
  if (weight.defined()) {
    check_same_dtype(weight, p, fn, "weight");
    check_broadcasts_to(weight, p.shape(), fn, "weight");
    loss = loss * weight;
  }
  return reduce(loss, r);
}

Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, std::string_view reduction) {
  constexpr const char* fn = "binary_cross_entropy_with_logits";
  Reduction r = parse_reduction(reduction, fn);
  check_floating(x, fn, "input");
  check_floating(target, fn, "target");
  check_same_dtype(target, x, fn, "target");
  check_same_shape(target, x, fn, "target");
  // -[pw y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))] = (1 - y) x - (1 + (pw - 1) y)
  // log sigmoid(x)
  Tensor log_term = breadth::log_sigmoid(x);
  if (pos_weight.defined()) {
    check_same_dtype(pos_weight, x, fn, "pos_weight");
    check_broadcasts_to(pos_weight, x.shape(), fn, "pos_weight");
    log_term = ((pos_weight - 1.0) * target + 1.0) * log_term;
  }
  Tensor loss = (1.0 - target) * x - log_term;
  if (weight.defined()) {
    check_same_dtype(weight, x, fn, "weight");
    check_broadcasts_to(weight, x.shape(), fn, "weight");
    loss = loss * weight;
  }
  return reduce(loss, r);
}

// ======================= normalisation and regularisation =======================

namespace {

Tensor affine(const Tensor& y, const Tensor& weight, const Tensor& bias) {
  Tensor out = weight.defined() ? y * weight : y;
  return bias.defined() ? out + bias : out;
}

// running = (1 - momentum) * running + momentum * batch_stat, in place and off the tape.
void update_running(const Tensor& running, const Tensor& batch_stat, double momentum) {
  NoGradGuard no_grad;
  Tensor stat = reshape(batch_stat.detach(), running.shape());
  copy_(running, running * (1.0 - momentum) + stat * momentum);
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  constexpr const char* fn = "layer_norm";
  check_floating(x, fn, "input");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  VK_CHECK(
      k >= 1 && x.ndim() >= k && Shape(x.shape().end() - k, x.shape().end()) == normalized_shape,
      ShapeError, fn, ": input of shape ", shape_str(x.shape()),
      " does not end in normalized_shape ", shape_str(normalized_shape));
  for (const auto& [t, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    if (!t->defined()) continue;
    VK_CHECK(t->shape() == normalized_shape, ShapeError, fn, ": ", what, " of shape ",
             shape_str(t->shape()), " does not match normalized_shape ",
             shape_str(normalized_shape));
    check_same_dtype(*t, x, fn, what);
  }
  return vk::layer_norm(x, normalized_shape, weight, bias, eps);
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  constexpr const char* fn = "batch_norm";
  check_floating(x, fn, "input");
  VK_CHECK(x.ndim() >= 2, ShapeError, fn, ": input must be (N, C, ...), got shape ",
           shape_str(x.shape()));
  const int64_t channels = x.size(1);
  check_per_channel(running_mean, channels, x, fn, "running_mean");
  check_per_channel(running_var, channels, x, fn, "running_var");
  check_per_channel(weight, channels, x, fn, "weight");
  check_per_channel(bias, channels, x, fn, "bias");
  VK_CHECK(running_mean.defined() == running_var.defined(), RuntimeError, fn,
           ": running_mean and running_var must both be given or both be undefined");
  if (!training) {
    VK_CHECK(running_mean.defined(), RuntimeError, fn,
             ": running_mean and running_var must be defined in evaluation mode");
    Tensor mu = along_channels(running_mean, x.ndim());
    Tensor var = along_channels(running_var, x.ndim());
    const Tensor w = weight.defined() ? along_channels(weight, x.ndim()) : weight;
    const Tensor b = bias.defined() ? along_channels(bias, x.ndim()) : bias;
    return affine((x - mu) * rsqrt(var + eps), w, b);
  }
  const int64_t per_channel = channels == 0 ? 0 : x.numel() / channels;
  VK_CHECK(per_channel > 1, ShapeError, fn,
           ": expected more than 1 value per channel when training, got input of shape ",
           shape_str(x.shape()));
  auto [y, stats] = vk::batch_norm_with_stats(x, weight, bias, eps);
  if (running_mean.defined()) {
    // stats: [mean, biased variance] of the batch, constants
    const double n_values = static_cast<double>(per_channel);
    update_running(running_mean, select(stats, 0, 0), momentum);
    update_running(running_var, select(stats, 0, 1) * (n_values / (n_values - 1.0)), momentum);
  }
  return y;
}

Tensor dropout(const Tensor& x, double p, bool training) {
  constexpr const char* fn = "dropout";
  VK_CHECK(p >= 0.0 && p <= 1.0, RuntimeError, fn, ": probability p must be in [0, 1], got ", p);
  check_floating(x, fn, "input");
  if (!training || p == 0.0) return x;
  if (p == 1.0) return x * 0.0;  // torch: everything dropped (inf and NaN stay NaN)
  Tensor keep = lt(rand(x.shape(), x.dtype(), x.device()), scalar_like(1.0 - p, x));
  return x * (cast(keep, x.dtype()) * (1.0 / (1.0 - p)));
}

// ======================= embeddings and encodings =======================

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  constexpr const char* fn = "embedding";
  check_integral(indices, fn, "indices");
  check_floating(weight, fn, "weight");
  VK_CHECK(weight.ndim() == 2, ShapeError, fn,
           ": weight must be 2-D (num_embeddings, embedding_dim), got shape ",
           shape_str(weight.shape()));
  const int64_t rows = weight.size(0);
  // vkfix: on a device, index_select raises an index out of range at the next host read (a
  // check here would read the indices back and wait for the device).
  for (int64_t i : indices.device().is_cpu() ? read_indices(indices) : std::vector<int64_t>{})
    VK_CHECK(i >= 0 && i < rows, IndexError, fn, ": index ", i, " is out of range for ", rows,
             " embeddings (weight of shape ", shape_str(weight.shape()), ")");
  Tensor flat = reshape(indices, {-1});
  Tensor picked = index_select(weight, 0, flat);
  if (padding_idx) {
    const int64_t pad_row = *padding_idx < 0 ? *padding_idx + rows : *padding_idx;
    VK_CHECK(pad_row >= 0 && pad_row < rows, IndexError, fn, ": padding_idx ", *padding_idx,
             " is out of range for ", rows, " embeddings");
    // The padding row's value is returned, but the gradient never reaches it (torch).
    Tensor is_pad = unsqueeze(eq(flat, full({}, pad_row, flat.dtype())), 1);
    picked = where(is_pad, picked.detach(), picked);
  }
  Shape out = indices.shape();
  out.push_back(weight.size(1));
  return reshape(picked, out);
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  constexpr const char* fn = "one_hot";
  check_integral(indices, fn, "indices");
  const Tensor idx = cast(indices, DType::Int64);
  if (num_classes == -1) {
    VK_CHECK(idx.numel() > 0, RuntimeError, fn,
             ": cannot infer num_classes from an empty tensor; pass num_classes");
    // The output's shape depends on the values: a host read (the one wait of one_hot, as torch's
    // on a GPU); with num_classes given, nothing is read back.
    num_classes = static_cast<int64_t>(host_read(amax(idx)).item()) + 1;
  }
  VK_CHECK(num_classes >= 0, RuntimeError, fn, ": num_classes must be >= 0 or -1, got ",
           num_classes);
  // hostwait: checked on the device (raised at its next host read), with torch's errors
  const Tensor zero = zeros({}, DType::Int64, idx.device());
  expect_all(ge(idx, zero), false, fn, "Class values must be non-negative.");
  expect_all(lt(idx, full({}, num_classes, DType::Int64, idx.device())), false, fn,
             detail::cat("Class values must be smaller than num_classes (", num_classes, ")."));
  Tensor classes = arange(0, num_classes, 1, DType::Int64, idx.device());
  Tensor column = unsqueeze(idx, indices.ndim());
  return cast(eq(column, classes), DType::Int64);
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, std::string_view mode, double value) {
  if (mode != "constant") return pad_indexed(x, pad, mode);  // layers.cpp (nn breadth)
  return vk::pad(x, pad, value);
}

// ======================= attention =======================

namespace {

// scores where `allowed` (a bool mask broadcast against them), -inf elsewhere.
Tensor mask_with_minus_inf(const Tensor& scores, const Tensor& allowed) {
  return where(allowed, scores, scalar_like(-kInf, scores));
}

void check_attention_shapes(const Tensor& q, const Tensor& k, const Tensor& v, const char* fn) {
  for (const auto& [t, what] :
       {std::pair{&q, "query"}, std::pair{&k, "key"}, std::pair{&v, "value"}}) {
    check_floating(*t, fn, what);
    check_same_dtype(*t, q, fn, what);
    VK_CHECK(t->ndim() >= 2, ShapeError, fn, ": ", what, " must be (..., seq, features), got ",
             shape_str(t->shape()));
  }
  VK_CHECK(q.size(-1) == k.size(-1), ShapeError, fn, ": query of shape ", shape_str(q.shape()),
           " and key of shape ", shape_str(k.shape()), " differ in their last (feature) dim");
  VK_CHECK(k.size(-2) == v.size(-2), ShapeError, fn, ": key of shape ", shape_str(k.shape()),
           " and value of shape ", shape_str(v.shape()), " differ in sequence length");
}

// Whether a and b have the same dims before their last two (attention's batch; the fused op
// does not broadcast).
bool same_batch(const Tensor& a, const Tensor& b) {
  return a.ndim() == b.ndim() &&
         std::equal(a.shape().begin(), a.shape().end() - 2, b.shape().begin());
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  constexpr const char* fn = "scaled_dot_product_attention";
  check_attention_shapes(q, k, v, fn);
  VK_CHECK(!(is_causal && attn_mask.defined()), RuntimeError, fn,
           ": pass either attn_mask or is_causal, not both");
  const double factor = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  if (!attn_mask.defined() && dropout_p == 0.0 && same_batch(q, k) && same_batch(q, v))
    return attention(q, k, v, factor, is_causal);  // one op: no scores kept for the backward
  Tensor scores = matmul(q, transpose(k, -2, -1));
  if (is_causal) {  // scale, mask and softmax in one op: no mask tensor, no passes over scores
    Tensor weights = vk::softmax(scores, -1, factor, true);
    if (dropout_p > 0.0) weights = dropout(weights, dropout_p, true);
    return matmul(weights, v);
  }
  scores = scores * factor;
  if (attn_mask.defined()) {
    broadcast_shapes(attn_mask.shape(), scores.shape(), fn);  // ShapeError naming fn
    if (attn_mask.dtype() == DType::Bool) {
      scores = mask_with_minus_inf(scores, attn_mask);
    } else {
      check_same_dtype(attn_mask, q, fn, "float attn_mask");
      scores = scores + attn_mask;
    }
  }
  Tensor weights = vk::softmax(scores, -1);
  if (dropout_p > 0.0) weights = dropout(weights, dropout_p, true);
  return matmul(weights, v);
}

// ======================= convolution and pooling =======================

namespace {

Window2d window(Size2 kernel, Size2 stride, Size2 padding, Size2 dilation) {
  return {.kh = kernel[0],
          .kw = kernel[1],
          .sh = stride[0],
          .sw = stride[1],
          .ph = padding[0],
          .pw = padding[1],
          .dh = dilation[0],
          .dw = dilation[1]};
}

// Runs f on a batched input: an unbatched one (ndim == batched_ndim - 1) gains a batch dim of
// one for the call and loses it again.
template <class F>
Tensor with_batch_dim(const Tensor& x, int64_t batched_ndim, const char* fn, F f) {
  check_defined(x, fn, "input");
  if (x.ndim() == batched_ndim - 1) return squeeze(f(unsqueeze(x, 0)), 0);
  VK_CHECK(x.ndim() == batched_ndim, ShapeError, fn, ": expected a ", batched_ndim - 1, "-D or ",
           batched_ndim, "-D input, got shape ", shape_str(x.shape()));
  return f(x);
}

}  // namespace

Tensor unfold(const Tensor& x, Size2 kernel_size, Size2 dilation, Size2 padding, Size2 stride) {
  Window2d w = window(kernel_size, stride, padding, dilation);
  return with_batch_dim(x, 4, "unfold", [&](const Tensor& b) { return im2col(b, w); });
}

Tensor fold(const Tensor& cols, Size2 output_size, Size2 kernel_size, Size2 dilation, Size2 padding,
            Size2 stride) {
  Window2d w = window(kernel_size, stride, padding, dilation);
  return with_batch_dim(cols, 3, "fold", [&](const Tensor& b) {
    return col2im(b, output_size[0], output_size[1], w);
  });
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2 stride,
              Size2 padding, Size2 dilation, int64_t groups) {
  return with_batch_dim(x, 4, "conv2d", [&](const Tensor& b) {
    return vk::conv2d(b, weight, bias, stride[0], stride[1], padding[0], padding[1], dilation[0],
                      dilation[1], groups);
  });
}

Tensor max_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride, Size2 padding,
                  Size2 dilation) {
  return max_pool2d_with_indices(x, kernel_size, stride, padding, dilation).values;
}

PoolWithIndices max_pool2d_with_indices(const Tensor& x, Size2 kernel_size,
                                        std::optional<Size2> stride, Size2 padding,
                                        Size2 dilation) {
  Window2d w = window(kernel_size, stride.value_or(kernel_size), padding, dilation);
  Tensor indices;
  Tensor values = with_batch_dim(x, 4, "max_pool2d", [&](const Tensor& b) {
    PoolResult r = vk::max_pool2d(b, w);
    indices = r.indices;
    return r.values;
  });
  if (x.ndim() == 3) indices = squeeze(indices, 0);
  return {values, indices};
}

Tensor avg_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride, Size2 padding) {
  Window2d w = window(kernel_size, stride.value_or(kernel_size), padding, {1, 1});
  return with_batch_dim(x, 4, "avg_pool2d", [&](const Tensor& b) { return vk::avg_pool2d(b, w); });
}

}  // namespace vk::nn::functional
