// In-place ops: compute out of place with the table's ops, then write into x's storage; the
// arithmetic ones (add_, sub_, mul_, div_) straight into x where the device has a kernel for it.
//
// While grad mode is on and x or a value written requires grad, the write is recorded (as
// torch's): the out-of-place result is computed with its graph, its values are copied into x's
// memory, and a new tensor over that memory takes the result's history (rebase). It is returned
// and stands for x from then on (the Python binding rebinds the object the user holds). The nodes
// recorded before over x's memory keep their history: those whose rules read the old values
// refuse in backward (OpDef::reads), the others still give their gradients. A tensor over that
// memory made before the write (a view taken earlier) shows the new values with the old history,
// so it refuses to be used while grad mode is on (Tensor::stale, checked by dispatch).
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
  through_view = false;
  for (const Tensor* t = &x;;) {
    if (t->is_leaf()) return t->requires_grad();
    const auto& parents = t->parents();
    if (parents.empty() || parents[0].storage() != x.storage()) return false;
    t = &parents[0];
    through_view = true;
  }
}

void check_target(const Tensor& x, const char* op) {
  if (!GradMode::is_enabled()) return;
  bool view = false;
  VK_CHECK(!writes_leaf_requiring_grad(x, view), RuntimeError, op, ": a ",
           view ? "view of a leaf" : "leaf", " (", x.describe(),
           ") that requires grad is being used in an in-place operation while grad mode is on; "
           "use the out-of-place op, or no_grad() for updates such as optimizer steps");
}

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
  const ReadSet reads = n.op->reads ? n.op->reads(needs) : kReadsAll;
  for (size_t i = 0; i < n.parents.size(); ++i)
    if (reads_input(reads, i) && n.parents[i].storage() == x.storage()) {
      n.parents[i] = clone(n.parents[i]);
      n.saved_versions[i] = n.parents[i].version();
    }
}

// The recorded write: `result` (computed from x and the values with grad mode on) into x's
// memory, and the tensor over it that carries result's history.
Tensor rebase(const Tensor& x, Tensor result, const char* op) {
  Tensor r = fit_result(x, std::move(result), op);
  // x's old history still flows (with zeros) where the result does not depend on it: x.zero_()
  // keeps requiring grad, as torch's.
  if (!r.requires_grad() && x.requires_grad()) r = where(ones({}, DType::Bool, x.device()), r, x);
  if (!r.requires_grad()) {  // nothing to record after all (a value cast to integers)
    write_back(x, r, op);
    return x;
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
  n->own_version = node.version();
  x.storage()->recorded_write.store(n->own_version, std::memory_order_relaxed);
  return node;
}

// x[items] = value by basic items into a contiguous x, recorded: the value is written into the
// region (a view of x) and the tensor over x's memory is one strided_scatter node whose parents are
// x's old history and the value. The write costs the region (rebase of index_put's result built
// and copied a tensor of x's size: a recurrent loop writing out[:, t] = h paid the whole buffer at
// every step), and the rule reads neither parent, so nothing is kept.
Tensor rebase_region(const Tensor& x, const std::vector<IndexItem>& items, const Tensor& value) {
  check_fresh(x, "index_put_", 0);  // no op is dispatched on x, nor maybe on the value
  check_fresh(value, "index_put_", 1);
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
  n->own_version = node.version();
  x.storage()->recorded_write.store(n->own_version, std::memory_order_relaxed);
  return node;
}

// Runs the out-of-place form: recorded and rebased, or under no_grad and written into x.
template <class F>
Tensor write(const Tensor& x, const std::vector<Tensor>& values, const char* op, F compute) {
  check_target(x, op);
  if (records(x, values)) return rebase(x, compute(), op);
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

Tensor index_put_(const Tensor& x, const std::vector<IndexItem>& items, const Tensor& value) {
  check_target(x, "index_put_");
  if (!records(x, value)) {
    index_write(x, items, value);
    return x;
  }
  if (all_basic(items) && x.is_contiguous()) return rebase_region(x, items, value);
  return rebase(x, index_put(x, items, value), "index_put_");
}

}  // namespace vk
