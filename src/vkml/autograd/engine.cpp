// The backward walk. Order the graph once (iteratively), then visit it in reverse: every consumer
// of a tensor comes later in the order, so by the time we reach it its gradient is complete and
// can be split among its parents by the op's rule. Contributions are summed, never assigned.
#include "vkml/autograd/engine.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "vkml/core/geometry.h"
#include "vkml/core/grad_mode.h"
#include "vkml/core/kernel.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/profile.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk::autograd {
namespace {

// Where each node of a walk sits in the walk's order. The position is stamped into the node
// itself (TensorImpl::walk_mark: the walk's id in the high 32 bits, the position in the low), so
// finding a parent's slot is one load instead of a hash lookup. A node that another walk holds
// (backward running at the same time in another thread, or nested in a hook) keeps that walk's
// stamp, and this walk keeps its position in a map instead. Stamps are cleared when the walk
// ends, so a later walk finds every node free.
class WalkIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;  // not in this walk, or not placed yet

  WalkIndex() : id_(next_id()) {}
  ~WalkIndex() {
    for (const Tensor& t : held_) t.impl()->walk_mark.store(0, std::memory_order_relaxed);
  }
  WalkIndex(const WalkIndex&) = delete;
  WalkIndex& operator=(const WalkIndex&) = delete;

  // Enters t into the walk (not yet placed); false when it is in already.
  bool claim(const Tensor& t) {
    std::atomic<uint64_t>& mark = t.impl()->walk_mark;
    uint64_t m = mark.load(std::memory_order_relaxed);
    if ((m >> 32) == id_) return false;
    // in already under another walk's stamp (that walk may have ended since: the node is ours
    // to keep in the map, never to stamp, or it would enter the order twice)
    if (!foreign_.empty() && foreign_.count(t.impl())) return false;
    if (m == 0 && mark.compare_exchange_strong(m, stamp(kNone), std::memory_order_relaxed)) {
      held_.push_back(t);  // a strong reference: the stamp is cleared before the node can die
      return true;
    }
    return foreign_.emplace(t.impl(), kNone).second;
  }

  void place(const Tensor& t, size_t pos) {
    std::atomic<uint64_t>& mark = t.impl()->walk_mark;
    if ((mark.load(std::memory_order_relaxed) >> 32) == id_)
      mark.store(stamp(static_cast<uint32_t>(pos)), std::memory_order_relaxed);
    else
      foreign_[t.impl()] = static_cast<uint32_t>(pos);
  }

  uint32_t find(const Tensor& t) const {
    const uint64_t m = t.impl()->walk_mark.load(std::memory_order_relaxed);
    if ((m >> 32) == id_) return static_cast<uint32_t>(m);
    if (foreign_.empty()) return kNone;
    auto it = foreign_.find(t.impl());
    return it == foreign_.end() ? kNone : it->second;
  }

 private:
  static uint32_t next_id() {
    static std::atomic<uint32_t> counter{0};
    uint32_t id;
    do id = counter.fetch_add(1, std::memory_order_relaxed) + 1;
    while (id == 0);  // 0 marks a free node
    return id;
  }
  uint64_t stamp(uint32_t pos) const { return (static_cast<uint64_t>(id_) << 32) | pos; }

  uint32_t id_;
  std::vector<Tensor> held_;
  std::unordered_map<const TensorImpl*, uint32_t> foreign_;
};

struct Graph {
  std::vector<Tensor> order;  // parents before children; strong refs keep the walk alive
  WalkIndex index;
};

// Iterative post-order DFS over the tensors that require grad.
void topo_sort(const std::vector<Tensor>& roots, Graph& g) {
  struct Frame {
    Tensor t;
    size_t next;
  };
  std::vector<Frame> stack;
  for (const auto& r : roots) {
    if (!r.requires_grad() || !g.index.claim(r)) continue;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& parents = f.t.parents();
      if (f.next < parents.size()) {
        const Tensor& p = parents[f.next++];
        if (p.requires_grad() && g.index.claim(p)) stack.push_back({p, 0});
        continue;
      }
      g.index.place(f.t, g.order.size());
      g.order.push_back(std::move(f.t));
      stack.pop_back();
    }
  }
}

std::string op_label(const Tensor& t) {
  if (!t.op()) return "leaf";
  if (t.attrs().custom) return t.attrs().custom->name;
  return std::string(t.op()->name);
}

// Refuses a node whose rule would read a value written in place since the node was recorded.
void check_versions(const Tensor& t, ReadSet reads) {
  const auto& saved = t.impl()->saved_versions;
  const auto& parents = t.parents();
  for (size_t i = 0; i < parents.size(); ++i)
    VK_CHECK(!reads_input(reads, i) || parents[i].version() == saved[i], RuntimeError,
             "one of the tensors needed for gradient computation has been modified by an in-place "
             "operation: input ",
             i, " (", parents[i].describe(), ") of ", op_label(t), " is at version ",
             parents[i].version(), "; expected version ", saved[i]);
  // The rule may also read the node's own output (exp's is g * out), which a write under
  // no_grad() (or through a detached alias) changes behind its back.
  VK_CHECK(!(reads & kReadsOutput) || t.version() == t.impl()->own_version, RuntimeError,
           "one of the tensors needed for gradient computation has been modified by an in-place "
           "operation: the output (",
           t.describe(), ") of ", op_label(t), " is at version ", t.version(),
           "; expected version ", t.impl()->own_version);
  // And its other outputs (max's indices, max_pool2d's argmax), which the user holds and may
  // write into: the rule would send the gradient where the new values point.
  const auto& others = t.impl()->other_outputs;
  for (size_t i = 0; i < others.size() && parents.size() + i < saved.size(); ++i)
    VK_CHECK(!others[i].defined() || others[i].version() == saved[parents.size() + i], RuntimeError,
             "one of the tensors needed for gradient computation has been modified by an in-place "
             "operation: output ",
             i + 1, " (", others[i].describe(), ") of ", op_label(t), " is at version ",
             others[i].version(), "; expected version ", saved[parents.size() + i]);
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

// True when t is a plain value that only `refs` references hold and whose memory nothing else
// shares: it may be written in place, or kept as a leaf's .grad as it is.
bool sole_owner(const Tensor& t, long refs) {
  return t.impl_ptr().use_count() == refs && t.storage().use_count() == 1 && t.is_leaf() &&
         !t.requires_grad() && t.is_contiguous();
}

// acc += g, in place when nothing else can see acc (no graph is being built, acc is an
// intermediate sum only this walk holds); otherwise a new tensor.
void sum_into(Tensor& acc, const Tensor& g, bool create_graph) {
  if (!create_graph && sole_owner(acc, 1) && acc.dtype() == g.dtype())
    in_place::add(acc, acc, g);
  else
    acc = acc + g;
}

// A slice's rule places g in zeros of its input's shape (slice_backward), which is then summed
// into the input's pending gradient. When that pending gradient is a buffer only this walk holds,
// adding g into its sliced region instead gives the same sums without the zero tensor and the
// full-size add: q, k and v cut from one qkv product, for one. True when it did so.
bool add_slice_in_place(const Tensor& t, const Tensor& g, Tensor& acc) {
  if (t.op()->kind != OpKind::Slice || !acc.defined() || !sole_owner(acc, 1) ||
      acc.dtype() != g.dtype())
    return false;
  const Attrs& a = t.attrs();
  const SliceRange r = slice_range(acc.shape()[a.dim], a.start, a.stop, a.step);
  Strides st = acc.strides();
  const int64_t offset = acc.offset() + r.start * st[a.dim];
  // A dim of one element never uses its stride: x[::2**62] must not overflow it.
  if (r.len > 1) st[a.dim] *= r.step;
  const Tensor region = acc.alias(g.shape(), st, offset);
  in_place::add(region, region, g);
  return true;
}

// Whether g can be added into the memory of an existing .grad without create_graph: as torch's
// first-order accumulation (variable.grad += new_grad), also where the user holds .grad or it is
// a view of a larger buffer (gradients bucketed into one flat tensor), so that every name of it
// sees the sum. Not where .grad carries history (a create_graph backward's), its elements share
// memory, or g's memory is .grad's own.
bool adds_into_grad(const Tensor& grad, const Tensor& g) {
  return grad.dtype() == g.dtype() && grad.shape() == g.shape() && grad.device() == g.device() &&
         !grad.requires_grad() && grad.is_contiguous() && grad.storage() != g.storage();
}

// Deposits g into t's .grad, which must own its memory (the arriving gradient may be a
// broadcast view, the user's seed, or shared with other tensors). Without create_graph an
// existing .grad is added to in place (adds_into_grad), and a fresh gradient only this walk holds
// becomes .grad as it is. Holds t's grad lock throughout, so walks in several threads that reach
// the same leaf add up.
void accumulate_into(const Tensor& t, Tensor g, bool create_graph) {
  std::shared_ptr<TensorImpl> replaced;  // released after the lock
  std::lock_guard<std::mutex> lock(t.grad_mutex());
  std::shared_ptr<TensorImpl>& slot = t.impl()->grad;
  if (create_graph) {
    Tensor old(slot);
    replaced = std::exchange(slot, (old.defined() ? old + g : g).impl_ptr());
    return;
  }
  if (!slot) {
    const bool whole = g.offset() == 0 && g.storage()->nbytes == static_cast<size_t>(g.numel()) *
                                                                     dtype_size(g.dtype());
    slot = (sole_owner(g, 1) && whole ? g : clone(g.detach())).impl_ptr();
    return;
  }
  Tensor old(slot);
  if (adds_into_grad(old, g)) {
    in_place::add(old, old, g);
    old.bump_version();
  } else {
    replaced = std::exchange(slot, (old.detach() + g.detach()).impl_ptr());
  }
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
  bool accumulate;                     // backward(): deposit into leaves' .grad
  const std::vector<Tensor>* capture;  // grad(): the inputs whose gradients are returned
};

std::vector<Tensor> run(const std::vector<Tensor>& roots, const std::vector<Tensor>& seeds,
                        const RunOptions& opt) {
  Graph graph;
  topo_sort(roots, graph);
  const size_t n = graph.order.size();
  const WalkIndex& index = graph.index;

  // With `capture`, only nodes from which a captured input can be reached need gradients.
  std::vector<bool> wanted(n, true);
  std::unordered_map<const TensorImpl*, size_t> captured;
  if (opt.capture) {
    for (size_t i = 0; i < opt.capture->size(); ++i) captured[(*opt.capture)[i].impl()] = i;
    for (size_t k = 0; k < n; ++k) {
      const Tensor& t = graph.order[k];
      bool w = captured.count(t.impl()) > 0;
      for (const auto& p : t.parents()) {
        const uint32_t pk = index.find(p);
        if (pk != WalkIndex::kNone && wanted[pk]) w = true;
      }
      wanted[k] = w;
    }
  }

  std::vector<Tensor> pending(n);
  for (size_t r = 0; r < roots.size(); ++r) {
    const uint32_t k = index.find(roots[r]);
    pending[k] = pending[k].defined() ? pending[k] + seeds[r] : seeds[r];
  }

  std::vector<Tensor> results(opt.capture ? opt.capture->size() : 0);
  std::vector<bool> needs;
  GradModeGuard mode(opt.create_graph);
  StaleInputsAllowed stale_allowed;  // the rules' reads are checked by version instead
  NoAutocastGuard no_autocast;       // each rule in its forward's dtypes, as PyTorch
  for (size_t k = n; k-- > 0;) {
    Tensor g = std::move(pending[k]);
    if (!g.defined() || !wanted[k]) continue;
    const Tensor& t = graph.order[k];
    for (const Hook& hook : t.hooks()) {
      Tensor replaced = hook(g);
      if (!replaced.defined()) continue;
      VK_CHECK(replaced.shape() == t.shape(), RuntimeError, "a hook on a tensor of shape ",
               shape_str(t.shape()), " returned a gradient of shape ", shape_str(replaced.shape()));
      g = cast(replaced, t.dtype());
    }
    if (!captured.empty())
      if (auto it = captured.find(t.impl()); it != captured.end()) results[it->second] = g;
    if (t.is_leaf()) {
      if (!opt.accumulate) continue;
      accumulate_into(t, std::move(g), opt.create_graph);
      for (const Hook& hook : t.post_accumulate_hooks()) hook(t);
      continue;
    }
    if (opt.accumulate && t.retains_grad()) accumulate_into(t, g, opt.create_graph);

    const OpDef& def = *t.op();
    VK_CHECK(!t.impl()->graph_freed, RuntimeError, "backward through ", op_label(t),
             " a second time: its saved tensors were freed after the first backward. Pass "
             "retain_graph=True to the first backward to differentiate twice.");
    const auto& parents = t.parents();
    needs.assign(parents.size(), false);
    bool any = false;
    for (size_t i = 0; i < parents.size(); ++i) {
      if (!parents[i].requires_grad()) continue;
      const uint32_t pk = index.find(parents[i]);
      needs[i] = pk != WalkIndex::kNone && wanted[pk];
      any = any || needs[i];
    }
    if (any) check_versions(t, rule_reads(def, t.attrs(), needs));
    if (any && !opt.create_graph && !AnomalyMode::is_enabled() && def.kind == OpKind::Slice &&
        add_slice_in_place(t, g, pending[index.find(parents[0])]))
      any = false;
    if (any) {
      VK_CHECK(def.grad != nullptr, NotImplementedError, "backward through ", op_label(t),
               ": no gradient rule (", def.grad_doc, ")");
      const int64_t profiled_from = profile::on() ? profile::now_ns() : -1;
      Grads grads = def.grad(GradCtx{t, g, parents, t.attrs(), needs});
      if (profiled_from >= 0)
        profile::add(detail::cat("backward: ", op_label(t)), profiled_from, true);
      VK_CHECK(grads.size() == parents.size(), RuntimeError, op_label(t),
               ": the gradient rule returned ", grads.size(), " gradients for ", parents.size(),
               " inputs");
      g = Tensor();  // let a rule's result that reused g be summed into in place
      for (size_t i = 0; i < parents.size(); ++i) {
        if (!needs[i] || !grads[i].defined()) continue;
        VK_CHECK(grads[i].shape() == parents[i].shape(), RuntimeError, op_label(t),
                 ": the gradient rule returned shape ", shape_str(grads[i].shape()), " for input ",
                 i, " of shape ", shape_str(parents[i].shape()));
        Tensor gi = grads[i].dtype() == parents[i].dtype() ? std::move(grads[i])
                                                           : cast(grads[i], parents[i].dtype());
        if (AnomalyMode::is_enabled()) check_finite(gi, t, i);
        Tensor& acc = pending[index.find(parents[i])];
        if (acc.defined())
          sum_into(acc, gi, opt.create_graph);
        else
          acc = std::move(gi);
      }
    }
    if (!opt.retain_graph) {
      TensorImpl* impl = t.impl();
      impl->graph_freed = true;
      impl->other_outputs.clear();
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

void accumulate_grad(const Tensor& t, const Tensor& g, bool create_graph) {
  accumulate_into(t, g, create_graph);
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
              std::optional<bool> retain_graph, bool create_graph) {
  std::vector<Tensor> seeds = seeds_for(roots, grads);
  run(roots, seeds, {retain_graph.value_or(create_graph), create_graph, true, nullptr});
}

void backward(const Tensor& root, const Tensor& grad, std::optional<bool> retain_graph,
              bool create_graph) {
  backward(std::vector<Tensor>{root},
           grad.defined() ? std::vector<Tensor>{grad} : std::vector<Tensor>{}, retain_graph,
           create_graph);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  for (size_t i = 0; i < inputs.size(); ++i)
    VK_CHECK(inputs[i].requires_grad(), RuntimeError, "grad: input ", i, " does not require grad");
  std::vector<Tensor> seeds = seeds_for(outputs, grad_outputs);
  std::vector<Tensor> results =
      run(outputs, seeds, {retain_graph.value_or(create_graph), create_graph, false, &inputs});
  for (size_t i = 0; i < results.size(); ++i)
    VK_CHECK(allow_unused || results[i].defined(), RuntimeError, "grad: input ", i,
             " was not used in the graph of the outputs; pass allow_unused=True to get None");
  return results;
}

}  // namespace vk::autograd
