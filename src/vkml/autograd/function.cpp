#include "vkml/autograd/function.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "vkml/autograd/engine.h"
#include "vkml/core/grad_mode.h"
#include "vkml/ops/autocast.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk::autograd {

namespace {

// Records `result` as the output of a user-defined op whose rule is `grad`.
Tensor record_custom(const Tensor& result, const std::vector<Tensor>& parents, std::string name,
                     std::function<std::vector<Tensor>(const GradCtx&)> grad) {
  bool record = false;
  for (const auto& p : parents) record = record || p.requires_grad();
  if (!record || !GradMode::is_enabled() || !is_floating(result.dtype())) return result.detach();
  auto op = std::make_shared<CustomOp>();
  op->name = std::move(name);
  op->result = result.detach().impl_ptr();
  op->grad = std::move(grad);
  Attrs a;
  a.custom = std::move(op);
  return dispatch(OpKind::Custom, parents, a);
}

}  // namespace

void FunctionCtx::save_for_backward(std::vector<Tensor> tensors) {
  saved_ = std::move(tensors);
  versions_.clear();
  for (const Tensor& t : saved_) versions_.push_back(t.defined() ? t.version() : 0);
}

const std::vector<Tensor>& FunctionCtx::saved_tensors() const {
  for (size_t i = 0; i < saved_.size(); ++i)
    VK_CHECK(!saved_[i].defined() || saved_[i].version() == versions_[i], RuntimeError,
             "one of the tensors needed for gradient computation has been modified by an in-place "
             "operation: saved tensor ",
             i, " (", saved_[i].describe(), ") is at version ", saved_[i].version(),
             "; expected version ", versions_[i]);
  return saved_;
}

Tensor from_op(const Tensor& result, const std::vector<Tensor>& parents, Vjp vjp,
               std::string name) {
  return record_custom(result, parents, std::move(name),
                       [vjp = std::move(vjp)](const GradCtx& c) { return vjp(c.grad); });
}

Tensor apply_function(const std::string& name, const std::vector<Tensor>& inputs,
                      const ForwardFn& forward, const BackwardFn& backward) {
  auto ctx = std::make_shared<FunctionCtx>();
  for (const auto& t : inputs) ctx->needs_input_grad.push_back(t.requires_grad());
  Tensor result;
  {
    NoGradGuard no_grad;
    result = forward(*ctx, inputs);
  }
  return record_custom(result, inputs, name, [ctx, backward](const GradCtx& c) {
    // The context holds the node's output only while backward runs, and lets go of it however
    // backward ends: held after a throw, node -> rule -> context -> output -> node would be a
    // cycle, and the graph would never be freed.
    struct Release {
      FunctionCtx& ctx;
      ~Release() { ctx.output = Tensor(); }
    } release{*ctx};
    ctx->output = c.out;
    return backward(*ctx, c.grad);
  });
}

namespace {

// The stand-in for x in a recompute: a fresh leaf, or under create_graph a recorded view of x
// (its gradient then stays a function of x, so that it can be differentiated again).
Tensor stand_in(const Tensor& x, bool needed, bool create_graph) {
  if (create_graph && x.requires_grad()) {
    Attrs a;
    a.shape = x.shape();
    return dispatch(OpKind::Reshape, {x}, a);
  }
  Tensor leaf = x.detach();
  if (needed) leaf.set_requires_grad(true);
  return leaf;
}

}  // namespace

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                  const std::vector<Tensor>& inputs) {
  RngState rng = get_rng_state();
  const AutocastState autocast = Autocast::state();
  Tensor result;
  // The node's inputs: the explicit ones, then every other tensor requiring grad that fn read
  // (the parameters of a layer it closes over), as PyTorch's non-reentrant checkpoint does.
  std::vector<Tensor> parents = inputs;
  // Run inside another checkpoint's recompute, fn reads that one's stand-ins: so must its own
  // recompute.
  std::vector<InputSubstitution::Layer> enclosing = InputSubstitution::open_layers();
  {
    NoGradGuard no_grad;
    InputWatch watch;
    result = fn(inputs);
    for (const auto& t : watch.seen())
      if (std::none_of(inputs.begin(), inputs.end(), [&](const Tensor& x) { return x.same(t); }))
        parents.push_back(t);
  }
  auto recompute = [fn, rng, autocast, enclosing,
                    explicit_inputs = inputs.size()](const GradCtx& c) {
    // Every parent is replaced by a stand-in while fn runs again, so the walk below ends at the
    // stand-ins: it neither runs the parents' hooks (the outer walk does) nor frees their graph.
    const bool create_graph = GradMode::is_enabled();
    InputSubstitution::Layer from_to;
    std::vector<Tensor> wrt;
    std::vector<size_t> wrt_index;
    for (size_t i = 0; i < c.in.size(); ++i) {
      from_to.emplace_back(c.in[i], stand_in(c.in[i], c.needs[i], create_graph));
      if (!c.needs[i]) continue;
      wrt.push_back(from_to.back().second);
      wrt_index.push_back(i);
    }
    std::vector<Tensor> xs;
    for (size_t i = 0; i < explicit_inputs; ++i) xs.push_back(from_to[i].second);
    RngState current = get_rng_state();
    set_rng_state(rng);
    Tensor out;
    {
      EnableGradGuard enable;
      AutocastStateGuard as_in_forward(autocast);  // the same ops in the same dtypes
      std::vector<InputSubstitution::Layer> layers = enclosing;
      layers.push_back(from_to);
      InputSubstitution substitution(std::move(layers));
      out = fn(xs);
    }
    set_rng_state(current);
    std::vector<Tensor> grads(c.in.size());
    if (!out.requires_grad()) return grads;
    std::vector<Tensor> got = grad({out}, wrt, {c.grad}, true, create_graph, true);
    for (size_t k = 0; k < got.size(); ++k) grads[wrt_index[k]] = got[k];
    return grads;
  };
  return record_custom(result, parents, "checkpoint", recompute);
}

namespace {

// Writes v into the i-th element (row-major) of a contiguous float64 tensor.
void set_at(const Tensor& t, int64_t i, double v) { t.data<double>()[i] = v; }

}  // namespace

std::string gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps,
                      double atol, double rtol) {
  for (const auto& x : inputs)
    if (x.requires_grad())
      VK_CHECK(x.dtype() == DType::Float64 && x.is_contiguous(), DTypeError,
               "gradcheck: inputs that require grad must be contiguous float64, got ",
               x.describe());
  Tensor y = fn(inputs);
  VK_CHECK(y.requires_grad(), RuntimeError, "gradcheck: the output does not require grad");
  const int64_t ny = y.numel();
  std::ostringstream err;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    const int64_t nx = x.numel();
    // numeric[j][i] = d y_j / d x_i by central differences
    std::vector<std::vector<double>> numeric(ny, std::vector<double>(nx));
    for (int64_t i = 0; i < nx; ++i) {
      double orig = x.data<double>()[i];
      std::vector<double> plus, minus;
      // Not under no_grad: fn may itself differentiate (gradgradcheck's first derivative).
      set_at(x, i, orig + eps);
      plus = to_vector(cast(fn(inputs), DType::Float64));
      set_at(x, i, orig - eps);
      minus = to_vector(cast(fn(inputs), DType::Float64));
      set_at(x, i, orig);
      for (int64_t j = 0; j < ny; ++j) numeric[j][i] = (plus[j] - minus[j]) / (2 * eps);
    }
    for (int64_t j = 0; j < ny; ++j) {
      std::vector<double> e(static_cast<size_t>(ny), 0.0);
      e[j] = 1.0;
      Tensor onehot = from_vector(e, y.shape(), y.dtype());
      Tensor g = grad({y}, {x}, {onehot}, true, false, true)[0];
      std::vector<double> analytic =
          g.defined() ? to_vector(g) : std::vector<double>(static_cast<size_t>(nx), 0.0);
      for (int64_t i = 0; i < nx; ++i) {
        double a = analytic[i], n = numeric[j][i];
        if (!(std::fabs(a - n) <= atol + rtol * std::fabs(n))) {
          err << "input " << k << " " << x.describe() << ": d out[" << j << "] / d in[" << i
              << "] analytic " << a << " vs numeric " << n << "\n";
          if (err.tellp() > 2000) return err.str();
        }
      }
    }
  }
  return err.str();
}

std::string gradgradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps,
                          double atol, double rtol) {
  Tensor y = fn(inputs);
  VK_CHECK(y.requires_grad(), RuntimeError, "gradgradcheck: the output does not require grad");
  Tensor v;
  {
    NoGradGuard ng;
    v = randn(y.shape(), DType::Float64) + 0.5;
  }
  std::vector<Tensor> wrt;
  for (const auto& x : inputs)
    if (x.requires_grad()) wrt.push_back(x);
  std::string err;
  for (size_t k = 0; k < wrt.size(); ++k) {
    TensorFn first = [&, k](const std::vector<Tensor>& xs) {
      std::vector<Tensor> w;
      for (const auto& x : xs)
        if (x.requires_grad()) w.push_back(x);
      Tensor out = fn(xs);
      Tensor g = grad({out}, w, {v}, true, true, true)[k];
      // A gradient that does not depend on the inputs (a linear op) is a constant: nothing to
      // check.
      return g.defined() ? g : zeros(w[k].shape(), DType::Float64);
    };
    Tensor probe = first(inputs);
    if (!probe.requires_grad()) continue;
    err += gradcheck(first, inputs, eps, atol, rtol);
  }
  return err;
}

}  // namespace vk::autograd
