// In-place ops: compute out of place with the table's ops, then write into x's storage; the
// arithmetic ones (add_, sub_, mul_, div_) straight into x where the device has a kernel for it.
//
// While grad mode is on and x or a value written requires grad, the write is recorded (as
// torch's): the out-of-place result is computed with its graph, its values are copied into x's
// memory, and a new tensor over that memory takes the result's history (rebase). It is returned
// and stands for x from then on (the Python binding rebinds the object the user holds). The nodes
// recorded before over x's memory keep their history: those whose rules read the old values
// refuse in backward (OpDef::reads), the others still give their gradients.
//
// When x is a view (y[0].mul_(2), buf[:, t].copy_(h)), its base's memory takes a node too, as
// torch's CopySlices: strided_scatter(the base's node before, x's new node, x's region), which the
// base (TensorImpl::successor) and every tensor over its memory made before the write are
// regenerated from when used (dispatch; the binding rebinds the base's object at once); x itself
// becomes that node's view. A tensor over memory written otherwise (a base that is no contiguous
// tensor) refuses to be used while grad mode is on (Tensor::stale).
#include "vkml/ops/inplace.h"

#include <memory>
#include <utility>

#include "vkml/core/grad_mode.h"
#include "vkml/core/kernel.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/indexing.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

// Whether writing into x changes a leaf that requires grad: x itself, or the tensor x is a view
// of (the nodes over x's memory lead to it). Its .grad would answer for values it no longer holds.
bool writes_leaf_requiring_grad(const Tensor& x, bool& through_view) {
  const Tensor base = x.view_base();
  through_view = base.defined();
  if (base.defined() && base.is_leaf() && base.requires_grad()) return true;
  for (const Tensor* t = &x;;) {
    if (t->is_leaf()) return t->requires_grad();
    const auto& parents = t->parents();
    if (parents.empty() || parents[0].storage() != x.storage()) return false;
    t = &parents[0];
    through_view = true;
  }
}

// The node standing for base's memory now: base itself, or after a recorded write into that
// memory the node it made (TensorImpl::successor). Undefined when that node is gone or was written
// over otherwise.
Tensor current_of(const Tensor& base) {
  if (!base.stale()) return base;
  Tensor now(base.impl()->successor.lock());
  return now.defined() && !now.stale() ? now : Tensor();
}

// The tensor whose memory a recorded write into x changes, when its node can follow the write: x
// itself, or the base x is a view of when x's region lies in the base's row-major order (a
// contiguous base over the same memory, of x's dtype). Undefined otherwise.
Tensor writable_base(const Tensor& x) {
  Tensor base = x.view_base();
  if (!base.defined()) return x;
  if (base.storage() != x.storage() || base.dtype() != x.dtype() || !base.is_contiguous())
    return Tensor();
  return base;
}

bool same_geometry(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.strides() == b.strides() && a.offset() == b.offset();
}

// x, or the tensor standing for it since a recorded write into its memory (a view taken before
// y[0] = v, y after y[:, 0].fill_(0)): a write into it continues that history.
Tensor target(const Tensor& x, const char* op) {
  if (!GradMode::is_enabled()) return x;
  Tensor t = x.stale() ? regenerated(x) : x;
  if (!t.defined()) throw_stale(x, op, 0);
  bool view = false;
  VK_CHECK(!writes_leaf_requiring_grad(t, view), RuntimeError, op, ": a ",
           view ? "view of a leaf" : "leaf", " (", t.describe(),
           ") that requires grad is being used in an in-place operation while grad mode is on; "
           "use the out-of-place op, or no_grad() for updates such as optimizer steps");
  // As torch: a view made under no_grad of a tensor that requires grad has no history linking
  // it to its base, so a recorded write through it could not reach the base's gradient.
  if (view && !t.requires_grad()) {
    const Tensor base = current_of(t.view_base());
    VK_CHECK(!base.defined() || !base.requires_grad(), RuntimeError, op, ": a view (", t.describe(),
             ") made under no_grad of a tensor that requires grad is being written in place "
             "with grad mode on; take the view with grad mode on, or write under no_grad()");
  }
  return t;
}
void check_target(const Tensor& x, const char* op) { (void)target(x, op); }

// The write must be recorded: a gradient flows through x's old values or into the new ones.
bool records(const Tensor& x, const std::vector<Tensor>& values) {
  if (!GradMode::is_enabled()) return false;
  bool any = x.requires_grad();
  for (const Tensor& v : values) any = any || v.requires_grad();
  return any;
}
bool records(const Tensor& x, const Tensor& value) {  // no vector on add_'s fast path
  return GradMode::is_enabled() && (x.requires_grad() || value.requires_grad());
}

// `result` checked against x (dtype it can be cast to, a shape that broadcasts to x's) and made
// x's dtype and shape; recorded when grad mode is on.
Tensor fit_result(const Tensor& x, Tensor result, const char* op) {
  // As PyTorch: never into a lower category (int += 1.5 is float32, which an int64 x cannot hold).
  VK_CHECK(can_cast(result.dtype(), x.dtype()), RuntimeError, op, ": result type ",
           dtype_name(result.dtype()), " can't be cast to the desired output type ",
           dtype_name(x.dtype()), " (the dtype of the tensor written in place)");
  Tensor r = result.dtype() == x.dtype() ? std::move(result) : cast(result, x.dtype());
  if (r.shape() != x.shape()) {
    Shape b = broadcast_shapes(x.shape(), r.shape(), op);
    VK_CHECK(b == x.shape(), ShapeError, op, ": cannot write a result of shape ",
             shape_str(r.shape()), " in place into shape ", shape_str(x.shape()));
    r = expand(r, x.shape());
  }
  return r;
}

// Writes `result` (same shape as x after broadcasting) into x's memory and bumps its version.
void write_back(const Tensor& x, const Tensor& result, const char* op) {
  NoGradGuard no_grad;
  Tensor r = fit_result(x, result, op);
  // As torch: element-wise results cannot go into memory that several elements share; one value
  // (fill_, zero_, a 0-d source) can.
  if (result.ndim() > 0) check_no_internal_overlap(x, op);
  if (r.storage() == x.storage()) r = clone(r);  // e.g. x.copy_(flip(x)): read before writing
  in_place::copy(x, r);
  x.bump_version();
}

// Values the node's rule reads from x's memory (mul_'s rule reads x for the other factor's
// gradient) are copied before the write overwrites them, as torch keeps the original self.
void keep_read_values(TensorImpl& n, const Tensor& x) {
  std::vector<bool> needs(n.parents.size());
  for (size_t i = 0; i < needs.size(); ++i) needs[i] = n.parents[i].requires_grad();
  const ReadSet reads = rule_reads(*n.op, n.attrs ? *n.attrs : no_attrs(), needs);
  for (size_t i = 0; i < n.parents.size(); ++i)
    if (reads_input(reads, i) && n.parents[i].storage() == x.storage()) {
      n.parents[i] = clone(n.parents[i]);
      n.saved_versions[i] = n.parents[i].version();
    }
}

// `node`, over memory a recorded write has just changed, stands for it from now: the tensors over
// that memory made before are stale (Tensor::stale).
void mark_written(const Tensor& node) {
  node.impl()->own_version = node.version();
  node.storage()->recorded_write.store(node.impl()->own_version, std::memory_order_relaxed);
}

// The recorded write: `result` (computed from x and the values with grad mode on) into x's
// memory, and the tensor over it that carries result's history. Into a view (`into_view`, whose
// base's node takes what is returned: write_through_view), the result itself, with its own buffer:
// a rule that reads its output (sigmoid_'s) then reads values that a later write through another
// view cannot overwrite.
Tensor rebase(const Tensor& x, Tensor result, const char* op, bool into_view) {
  Tensor r = fit_result(x, std::move(result), op);
  // x's old history still flows (with zeros) where the result does not depend on it: x.zero_()
  // keeps requiring grad, as torch's.
  if (!r.requires_grad() && x.requires_grad()) r = where(ones({}, DType::Bool, x.device()), r, x);
  if (!r.requires_grad()) {  // nothing to record after all (a value cast to integers)
    write_back(x, r, op);
    return x;
  }
  if (into_view) {
    if (r.storage() == x.storage()) r = clone(r);
    if (!r.is_leaf() && r.impl_ptr().use_count() == 1) keep_read_values(*r.impl(), x);
    write_back(x, r, op);
    return r;
  }
  Tensor node = x.alias(x.shape(), x.strides(), x.offset());
  TensorImpl* n = node.impl();
  if (r.is_leaf() || r.impl_ptr().use_count() > 1) {
    // A tensor the caller holds (copy_'s source): the gradient passes through it, to its hooks.
    n->op = &op_def(OpKind::Contiguous);
    n->parents = {r};
    n->saved_versions = {r.version()};
  } else {  // a result only this write holds: its node moves onto x's memory, its buffer goes
    const TensorImpl* from = r.impl();
    n->op = from->op;
    n->attrs = from->attrs;
    n->parents = from->parents;
    n->saved_versions = from->saved_versions;
    n->other_outputs = from->other_outputs;
    n->anomaly_trace = from->anomaly_trace;
    keep_read_values(*n, x);
  }
  n->requires_grad = true;
  write_back(x, r, op);
  // x.retain_grad() asked for the gradient of the tensor the user holds: after the write, of
  // its new values (as torch's); hooks stay with the old values, whose gradient they were for.
  n->retains_grad = std::exchange(x.impl()->retains_grad, false);
  mark_written(node);
  return node;
}

// x[items] = value by basic items into a contiguous x, recorded: the value is written into the
// region (a view of x) and the tensor over x's memory is one strided_scatter node whose parents are
// x's old history and the value. The write costs the region (rebase of index_put's result built
// and copied a tensor of x's size: a recurrent loop writing out[:, t] = h paid the whole buffer at
// every step), and the rule reads neither parent, so nothing is kept.
Tensor rebase_region(const Tensor& x, const std::vector<IndexItem>& items, const Tensor& value) {
  Tensor region;
  {
    NoGradGuard no_grad;
    region = index(x, items);
  }
  Tensor v = fit_setitem_value(value, x, region.shape());
  if (!v.requires_grad() && !x.requires_grad()) {  // a value cast to integers: nothing recorded
    index_write(x, items, v);
    return x;
  }
  Attrs a;
  a.shape = region.shape();
  a.strided = {region.strides(), region.offset() - x.offset()};  // x's row-major order: contiguous
  Tensor node = x.alias(x.shape(), x.strides(), x.offset());
  TensorImpl* n = node.impl();
  n->op = &op_def(OpKind::StridedScatter);
  n->attrs = std::make_shared<const Attrs>(std::move(a));
  n->parents = {x, v};
  n->saved_versions = {x.version(), v.version()};
  n->requires_grad = true;
  note_forward_site(*n);
  {
    NoGradGuard no_grad;
    in_place::copy(region, v.storage() == x.storage() ? clone(v) : v);  // x[1:] = x[:-1] * 2
    x.bump_version();
  }
  n->retains_grad = std::exchange(x.impl()->retains_grad, false);  // as rebase's
  mark_written(node);
  return node;
}

// After a recorded write into view x (n: the node over x's memory that carries it), the base's
// memory takes a node for it: strided_scatter(before, n, x's region), `before` being the node that
// stood for the base until now. Returns the tensor that stands for x: that node's view, as torch
// regenerates a written view (its later uses reach the base's history).
Tensor write_through_view(const Tensor& base, const Tensor& before, const Tensor& x,
                          const Tensor& n) {
  Attrs a;
  a.shape = x.shape();
  a.strided = {x.strides(), x.offset() - base.offset()};  // the base's row-major order
  Tensor node = base.alias(base.shape(), base.strides(), base.offset());
  TensorImpl* b = node.impl();
  b->op = &op_def(OpKind::StridedScatter);
  b->attrs = std::make_shared<const Attrs>(a);
  b->parents = {before, n};
  b->saved_versions = {before.version(), n.version()};
  b->requires_grad = true;
  b->view_base = base.impl_ptr();
  mark_written(node);
  note_forward_site(*b);
  base.impl()->successor = node.impl_ptr();
  Tensor view = as_strided(node, a.shape, a.strided.strides, a.strided.offset);
  // x.retain_grad() asked for the gradient of the view the user holds: after the write, of its new
  // values (a node over x's memory took the flag from x; a result rebase kept is the caller's)
  TensorImpl* asked = n.storage() == x.storage() ? n.impl() : x.impl();
  view.impl()->retains_grad = std::exchange(asked->retains_grad, false);
  return view;
}

// A recorded write into x: `write_node(into_view)` writes and returns the node that carries it
// (x itself when nothing was recorded after all); then x's base follows (write_through_view), or
// x, when it is the base, becomes the node its earlier views are regenerated from. Without the
// base's current node (gone, or written over by other means) the base stays stale.
template <class F>
Tensor recorded_write(const Tensor& x, F write_node) {
  const Tensor base = writable_base(x);
  const Tensor before = base.defined() ? current_of(base) : Tensor();
  const bool into_view = before.defined() && !same_geometry(x, base);
  Tensor n = write_node(into_view);
  if (n.same(x) || !base.defined()) return n;
  if (into_view) return write_through_view(base, before, x, n);
  if (same_geometry(x, base)) {
    if (!n.same(base)) n.impl()->view_base = base.impl_ptr();
    base.impl()->successor = n.impl_ptr();
  }
  return n;
}

// Runs the out-of-place form: recorded and rebased, or under no_grad and written into x.
template <class F>
Tensor write(const Tensor& x_in, const std::vector<Tensor>& values, const char* op, F compute) {
  const Tensor x = target(x_in, op);
  if (records(x, values))
    return recorded_write(x, [&](bool into_view) { return rebase(x, compute(), op, into_view); });
  NoGradGuard no_grad;
  write_back(x, compute(), op);
  return x;
}

// Whether `small`'s shape broadcasts to `big`'s without growing it.
bool broadcasts_to(const Shape& small, const Shape& big) {
  if (small.size() > big.size()) return false;
  const size_t lead = big.size() - small.size();
  for (size_t i = 0; i < small.size(); ++i)
    if (small[i] != 1 && small[i] != big[lead + i]) return false;
  return true;
}

// x = x op other straight into x's memory (one pass, no temporary: x.add_(y) took 2.6x torch's
// time through an out-of-place sum and a copy), where that gives the out-of-place result bit for
// bit: nothing to record, one floating dtype on one device that has the kernel, other
// broadcasting to x's shape and either apart from x's memory or x itself (x.mul_(x)). Otherwise
// false, nothing written.
bool direct(const Tensor& x, const Tensor& other, InPlaceOp kind, const char* op) {
  const bool floating = x.dtype() == DType::Float32 || x.dtype() == DType::Float64;
  if (!floating || other.dtype() != x.dtype() || other.device() != x.device() ||
      !broadcasts_to(other.shape(), x.shape()) || records(x, other))
    return false;
  const bool is_x =
      other.offset() == x.offset() && other.shape() == x.shape() && other.strides() == x.strides();
  if (other.storage() == x.storage() && !is_x) return false;
  if (GradMode::is_enabled() && x.stale()) return false;  // write() takes it again first
  check_target(x, op);
  if (x.ndim() > 0) check_no_internal_overlap(x, op);
  NoGradGuard no_grad;
  if (!in_place::binary(x, x, other.shape() == x.shape() ? other : expand(other, x.shape()), kind))
    return false;
  x.bump_version();
  return true;
}

template <class F>
Tensor arithmetic(const Tensor& x, const Tensor& other, InPlaceOp kind, const char* op, F f) {
  if (direct(x, other, kind, op)) return x;
  return write(x, {other}, op, [&] { return f(x, other); });
}

}  // namespace

Tensor add_(const Tensor& x, const Tensor& other, double alpha) {
  auto add = [](auto& a, auto& b) { return a + b; };
  if (alpha == 1.0) return arithmetic(x, other, InPlaceOp::Add, "add_", add);
  // x + other * alpha, rounded as its out-of-place form: the product first (then, unrecorded,
  // added straight into x)
  if (records(x, other)) return write(x, {other}, "add_", [&] { return x + other * alpha; });
  check_target(x, "add_");
  Tensor scaled;
  {
    NoGradGuard no_grad;
    scaled = other * alpha;
  }
  return arithmetic(x, scaled, InPlaceOp::Add, "add_", add);
}
Tensor sub_(const Tensor& x, const Tensor& other) {
  return arithmetic(x, other, InPlaceOp::Sub, "sub_", [](auto& a, auto& b) { return a - b; });
}
Tensor mul_(const Tensor& x, const Tensor& other) {
  return arithmetic(x, other, InPlaceOp::Mul, "mul_", [](auto& a, auto& b) { return a * b; });
}
Tensor div_(const Tensor& x, const Tensor& other) {
  return arithmetic(x, other, InPlaceOp::Div, "div_", [](auto& a, auto& b) { return a / b; });
}
Tensor add_(const Tensor& x, Scalar other) { return add_(x, scalar_like(other, x, "add_")); }
Tensor mul_(const Tensor& x, Scalar other) { return mul_(x, scalar_like(other, x, "mul_")); }
Tensor zero_(const Tensor& x) { return fill_(x, 0); }

Tensor fill_(const Tensor& x, Scalar value) {
  // The value is made on the CPU; a device tensor's copy reads its source there (init/utils/hooks
  // (#16): fill_ and zero_ of a Vulkan tensor crashed reading the CPU scalar as device memory).
  return write(x, {}, "fill_",
               [&] { return to_device(scalar_tensor(value, x.dtype(), "fill_"), x.device()); });
}

Tensor copy_(const Tensor& x, const Tensor& src) {
  return write(x, {src}, "copy_", [&] {
    // As torch: the source may be on another device (cpu_tensor.copy_(gpu_tensor)); it moves
    // first.
    Tensor s = to_device(src, x.device());
    return s.dtype() != x.dtype() ? cast(s, x.dtype()) : s;
  });
}

Tensor clamp_(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  return write(x, {}, "clamp_", [&] { return clamp(x, min, max); });
}

// ---- every other in-place op (issue #15, composite ops) ----

Tensor inplace(const Tensor& x, const std::vector<Tensor>& others, const char* op,
               const std::function<Tensor()>& compute) {
  return write(x, others, op, compute);
}

Tensor index_put_(const Tensor& x_in, const std::vector<IndexItem>& items, const Tensor& value_in) {
  const Tensor x = target(x_in, "index_put_");
  const Tensor value = fresh(value_in, "index_put_", 1);  // no op may be dispatched on it
  if (!records(x, value)) {
    index_write(x, items, value);
    return x;
  }
  return recorded_write(x, [&](bool into_view) {
    if (all_basic(items) && x.is_contiguous()) return rebase_region(x, items, value);
    return rebase(x, index_put(x, items, value), "index_put_", into_view);
  });
}

Tensor regenerated(const Tensor& t) {
  const Tensor base = writable_base(t);
  const Tensor now = base.defined() ? current_of(base) : Tensor();
  if (!now.defined() || now.same(t)) return Tensor();
  if (same_geometry(t, base)) return now;
  try {
    return as_strided(now, t.shape(), t.strides(), t.offset() - base.offset());
  } catch (const ShapeError&) {  // a region holding an element twice (an expanded view)
    return Tensor();
  }
}

std::pair<Tensor, Tensor> base_rebinding(const Tensor& view) {
  const Tensor base = view.view_base();
  if (!base.defined() || view.op() != &op_def(OpKind::AsStrided)) return {};
  Tensor after(base.impl()->successor.lock());
  if (!after.defined() || !view.parents()[0].same(after) ||
      after.op() != &op_def(OpKind::StridedScatter))
    return {};
  return {after.parents()[0], after};
}

}  // namespace vk
