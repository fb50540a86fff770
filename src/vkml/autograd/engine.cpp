// The backward walk. Order the graph once (iteratively), then visit it in reverse: every consumer
// of a tensor comes later in the order, so by the time we reach it its gradient is complete and
// can be split among its parents by the op's rule. Contributions are summed, never assigned.
#include "vkml/autograd/engine.h"

#include <cmath>
#include <unordered_map>

#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape_ops.h"

namespace vk::autograd {
namespace {

struct Graph {
  std::vector<Tensor> order;  // parents before children; strong refs keep the walk alive
  std::unordered_map<const TensorImpl*, size_t> index;
};

// Iterative post-order DFS over tensors that require grad. `stop` tensors are not expanded.
Graph topo_sort(const std::vector<Tensor>& roots, const std::vector<Tensor>& stop) {
  Graph g;
  std::unordered_map<const TensorImpl*, bool> stopped;
  for (const auto& s : stop) stopped[s.impl()] = true;
  struct Frame {
    Tensor t;
    size_t next;
  };
  std::vector<Frame> stack;
  std::unordered_map<const TensorImpl*, bool> entered;
  for (const auto& r : roots) {
    if (!r.requires_grad() || entered.count(r.impl())) continue;
    entered[r.impl()] = true;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& parents = f.t.parents();
      bool expand = !stopped.count(f.t.impl());
      if (expand && f.next < parents.size()) {
        const Tensor& p = parents[f.next++];
        if (p.requires_grad() && !entered.count(p.impl())) {
          entered[p.impl()] = true;
          stack.push_back({p, 0});
        }
        continue;
      }
      g.index[f.t.impl()] = g.order.size();
      g.order.push_back(std::move(f.t));
      stack.pop_back();
    }
  }
  return g;
}

std::string op_label(const Tensor& t) {
  if (!t.op()) return "leaf";
  if (t.attrs().custom) return t.attrs().custom->name;
  return std::string(t.op()->name);
}

void check_versions(const Tensor& t) {
  const auto& saved = t.impl()->saved_versions;
  const auto& parents = t.parents();
  for (size_t i = 0; i < parents.size(); ++i)
    VK_CHECK(parents[i].version() == saved[i], RuntimeError,
             "one of the tensors needed for gradient computation has been modified by an in-place "
             "operation: input ", i, " (", parents[i].describe(), ") of ", op_label(t),
             " is at version ", parents[i].version(), "; expected version ", saved[i]);
}

void check_finite(const Tensor& g, const Tensor& t, size_t input) {
  bool finite = true;
  for (double v : to_vector(g)) finite = finite && std::isfinite(v);
  if (finite) return;
  std::string shapes;
  for (const auto& p : t.parents()) shapes += (shapes.empty() ? "" : ", ") + p.describe();
  throw RuntimeError(detail::cat("anomaly: the gradient rule of ", op_label(t),
                                 " produced NaN or Inf for input ", input, "; inputs: ", shapes,
                                 t.impl()->anomaly_trace.empty() ? "" : "; forward ran at ",
                                 t.impl()->anomaly_trace));
}

// .grad must own its memory: the arriving gradient may be a broadcast view or the user's seed.
void accumulate_into(const Tensor& t, const Tensor& g, bool create_graph) {
  Tensor old = t.grad();
  Tensor next;
  if (create_graph) next = old.defined() ? old + g : g;
  else if (old.defined()) next = old.detach() + g.detach();
  else next = clone(g.detach());
  const_cast<Tensor&>(t).set_grad(next);
}

Tensor seed_for(const Tensor& root, const Tensor& grad) {
  VK_CHECK(is_floating(root.dtype()), DTypeError, "backward: the root has dtype ",
           dtype_name(root.dtype()), "; only floating-point tensors can be differentiated");
  VK_CHECK(root.requires_grad(), RuntimeError,
           "backward: the root does not require grad and has no grad_fn");
  if (!grad.defined()) {
    VK_CHECK(root.numel() == 1, RuntimeError,
             "backward: grad can be implicitly created only for a one-element root, got shape ",
             shape_str(root.shape()), "; pass a gradient of that shape");
    return ones_like(root);
  }
  VK_CHECK(grad.shape() == root.shape(), ShapeError, "backward: gradient of shape ",
           shape_str(grad.shape()), " does not match the root's shape ", shape_str(root.shape()));
  return cast(grad, root.dtype());
}

struct RunOptions {
  bool retain_graph, create_graph;
  bool accumulate;                  // backward(): deposit into leaves' .grad
  const std::vector<Tensor>* capture;  // grad(): the inputs whose gradients are returned
};

std::vector<Tensor> run(const std::vector<Tensor>& roots, const std::vector<Tensor>& seeds,
                        const RunOptions& opt) {
  const std::vector<Tensor> no_stop;
  Graph graph = topo_sort(roots, no_stop);
  const size_t n = graph.order.size();

  // With `capture`, only nodes from which a captured input can be reached need gradients.
  std::vector<bool> wanted(n, true);
  std::unordered_map<const TensorImpl*, size_t> captured;
  if (opt.capture) {
    for (size_t i = 0; i < opt.capture->size(); ++i) captured[(*opt.capture)[i].impl()] = i;
    for (size_t k = 0; k < n; ++k) {
      const Tensor& t = graph.order[k];
      bool w = captured.count(t.impl()) > 0;
      for (const auto& p : t.parents()) {
        auto it = graph.index.find(p.impl());
        if (it != graph.index.end() && wanted[it->second]) w = true;
      }
      wanted[k] = w;
    }
  }

  std::vector<Tensor> pending(n);
  for (size_t r = 0; r < roots.size(); ++r) {
    size_t k = graph.index.at(roots[r].impl());
    pending[k] = pending[k].defined() ? pending[k] + seeds[r] : seeds[r];
  }

  std::vector<Tensor> results(opt.capture ? opt.capture->size() : 0);
  GradModeGuard mode(opt.create_graph);
  for (size_t k = n; k-- > 0;) {
    Tensor g = std::move(pending[k]);
    if (!g.defined() || !wanted[k]) continue;
    const Tensor& t = graph.order[k];
    for (const auto& hook : t.impl()->hooks) {
      Tensor replaced = hook(g);
      if (!replaced.defined()) continue;
      VK_CHECK(replaced.shape() == t.shape(), RuntimeError, "a hook on a tensor of shape ",
               shape_str(t.shape()), " returned a gradient of shape ",
               shape_str(replaced.shape()));
      g = cast(replaced, t.dtype());
    }
    if (auto it = captured.find(t.impl()); it != captured.end()) results[it->second] = g;
    if (opt.accumulate && (t.is_leaf() || t.retains_grad())) accumulate_into(t, g, opt.create_graph);
    if (t.is_leaf()) continue;

    const OpDef& def = *t.op();
    const std::string name = op_label(t);
    VK_CHECK(!t.impl()->graph_freed, RuntimeError, "backward through ", name,
             " a second time: its saved tensors were freed after the first backward. Pass "
             "retain_graph=True to the first backward to differentiate twice.");
    check_versions(t);
    const auto& parents = t.parents();
    std::vector<bool> needs(parents.size());
    bool any = false;
    for (size_t i = 0; i < parents.size(); ++i) {
      auto it = graph.index.find(parents[i].impl());
      needs[i] = parents[i].requires_grad() && it != graph.index.end() && wanted[it->second];
      any = any || needs[i];
    }
    if (any) {
      VK_CHECK(def.grad != nullptr, NotImplementedError, "backward through ", name,
               ": no gradient rule (", def.grad_doc, ")");
      Grads grads = def.grad(GradCtx{t, g, parents, t.attrs(), needs});
      VK_CHECK(grads.size() == parents.size(), RuntimeError, name, ": the gradient rule returned ",
               grads.size(), " gradients for ", parents.size(), " inputs");
      for (size_t i = 0; i < parents.size(); ++i) {
        if (!needs[i] || !grads[i].defined()) continue;
        VK_CHECK(grads[i].shape() == parents[i].shape(), RuntimeError, name,
                 ": the gradient rule returned shape ", shape_str(grads[i].shape()), " for input ",
                 i, " of shape ", shape_str(parents[i].shape()));
        Tensor gi = cast(grads[i], parents[i].dtype());
        if (AnomalyMode::is_enabled()) check_finite(gi, t, i);
        size_t pk = graph.index.at(parents[i].impl());
        pending[pk] = pending[pk].defined() ? pending[pk] + gi : gi;
      }
    }
    if (!opt.retain_graph) {
      TensorImpl* impl = t.impl();
      impl->graph_freed = true;
      impl->saved.clear();
      // parents are kept alive by graph.order until the walk ends; then they are released.
      impl->parents.clear();
      impl->saved_versions.clear();
    }
  }
  return results;
}

std::vector<Tensor> seeds_for(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads) {
  VK_CHECK(grads.empty() || grads.size() == roots.size(), RuntimeError, "backward: got ",
           grads.size(), " gradients for ", roots.size(), " outputs");
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < roots.size(); ++i)
    seeds.push_back(seed_for(roots[i], grads.empty() ? Tensor() : grads[i]));
  return seeds;
}

}  // namespace

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
              std::optional<bool> retain_graph, bool create_graph) {
  std::vector<Tensor> seeds = seeds_for(roots, grads);
  run(roots, seeds, {retain_graph.value_or(create_graph), create_graph, true, nullptr});
}

void backward(const Tensor& root, const Tensor& grad, std::optional<bool> retain_graph,
              bool create_graph) {
  backward(std::vector<Tensor>{root}, grad.defined() ? std::vector<Tensor>{grad} : std::vector<Tensor>{},
           retain_graph, create_graph);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  for (size_t i = 0; i < inputs.size(); ++i)
    VK_CHECK(inputs[i].requires_grad(), RuntimeError, "grad: input ", i,
             " does not require grad");
  std::vector<Tensor> seeds = seeds_for(outputs, grad_outputs);
  std::vector<Tensor> results =
      run(outputs, seeds, {retain_graph.value_or(create_graph), create_graph, false, &inputs});
  for (size_t i = 0; i < results.size(); ++i)
    VK_CHECK(allow_unused || results[i].defined(), RuntimeError, "grad: input ", i,
             " was not used in the graph of the outputs; pass allow_unused=True to get None");
  return results;
}

}  // namespace vk::autograd
