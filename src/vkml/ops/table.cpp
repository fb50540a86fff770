// Collects the op families into one table indexed by OpKind, and runs ops (dispatch).
#include <array>
#include <string>

#include "vkml/core/default_dtype.h"
#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/profile.h"
#include "vkml/ops/shape.h"

namespace vk {

std::function<std::string()> g_anomaly_context;  // set by the Python layer: where forward ran

namespace {

std::vector<OpDef> build_table() {
  OpList ops;
  add_creation_ops(ops);
  add_random_ops(ops);  // issue 15 item 3
  add_elementwise_ops(ops);
  add_reduction_ops(ops);
  add_shape_ops(ops);
  add_index_ops(ops);
  add_linalg_ops(ops);
  add_softmax_ops(ops);
  add_conv_ops(ops);
  add_norm_ops(ops);
  add_device_ops(ops);
  add_custom_ops(ops);
  add_sort_ops(ops);  // sort and scan families (sortscan)
  add_scan_ops(ops);
  add_rnn_ops(ops);   // recurrent cells (issue #16 item 2: rnn)
  add_math_ops(ops);  // math ops (#15)
  // solvers (#15 linalg)
  add_solve_ops(ops);
  add_qr_ops(ops);
  add_special_ops(ops);  // special functions (#15)
  add_activation_ops(ops);
  add_pointwise_ops(ops);
  add_attention_ops(ops);
  std::vector<OpDef> table(kNumOps);
  std::vector<bool> seen(kNumOps, false);
  for (auto& def : ops) {
    size_t k = static_cast<size_t>(def.kind);
    if (k >= kNumOps || seen[k])
      throw RuntimeError(detail::cat("op table: ", def.name, " registered twice"));
    seen[k] = true;
    table[k] = def;
  }
  for (size_t k = 0; k < kNumOps; ++k)
    if (!seen[k]) throw RuntimeError(detail::cat("op table: OpKind ", k, " has no entry"));
  set_autocast_policies(table);
  set_read_sets(table);
  register_builtin_backends();  // before the first op looks up a kernel
  return table;
}

const std::vector<OpDef>& table() {
  static const std::vector<OpDef> t = build_table();
  return t;
}

bool any_requires_grad(const std::vector<Tensor>& in) {
  for (const auto& t : in)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

// What dispatch reads per thread, in one thread_local: a shared library (the Python module)
// reaches thread-local storage through a call to __tls_get_addr, so one lookup per op instead of
// one per variable. Plain pointers and counters: a thread_local without a constructor needs no
// guard.
constexpr size_t kInputSlots = 16;
struct InputStack {
  std::vector<Tensor> slots[kInputSlots];
};
struct OpThreadState {
  InputStack* stack = nullptr;  // made on the thread's first dispatch, freed when it ends
  size_t depth = 0;             // slots in use
  bool ended = false;           // the thread is ending: its stack is gone
  InputWatch* watch = nullptr;
  InputSubstitution* substitution = nullptr;
  int stale_allowed = 0;  // open StaleInputsAllowed guards
};
thread_local OpThreadState t_ops;

// A per-thread stack of input vectors for dispatch(kind, {a, b}): each keeps its capacity from
// call to call, so building an op's input list allocates nothing. Nested dispatches (prepare
// casting or expanding inputs, composite kernels) take the next slot; nesting deeper than
// kInputSlots, or a dispatch while the thread is ending, uses a vector of its own.
class InputSlot {
 public:
  InputSlot(OpThreadState& ts, std::initializer_list<TensorRef> in) : ts_(ts), v_(acquire()) {
    for (const TensorRef& r : in) v_.push_back(r.tensor);
  }
  ~InputSlot() {
    v_.clear();  // drop the references now, keep the capacity
    if (&v_ != &own_) --ts_.depth;
  }
  InputSlot(const InputSlot&) = delete;
  InputSlot& operator=(const InputSlot&) = delete;
  std::vector<Tensor>& get() { return v_; }

 private:
  struct Owner {  // frees the thread's stack when the thread ends
    ~Owner() {
      delete t_ops.stack;
      t_ops.stack = nullptr;
      t_ops.ended = true;
    }
  };

  std::vector<Tensor>& acquire() {
    if (ts_.depth >= kInputSlots || ts_.ended) return own_;
    if (!ts_.stack) {
      thread_local Owner owner;  // registered on the thread's first dispatch
      (void)owner;
      ts_.stack = new InputStack();
    }
    return ts_.stack->slots[ts_.depth++];
  }

  OpThreadState& ts_;
  std::vector<Tensor> own_;
  std::vector<Tensor>& v_;
};

// Makes outs[0] the graph node of `def` applied to `in`, keeping the op's other outputs for its
// rule. `owned`: `in` may be moved from.
void record(Outputs& outs, const OpDef& def, std::vector<Tensor>& in, const Attrs& attrs,
            bool owned) {
  Tensor& out = outs[0];
  TensorImpl* impl = out.impl();
  if (impl->op != nullptr || impl->requires_grad) {  // a kernel returned an existing tensor
    out = out.detach();
    impl = out.impl();
  }
  impl->requires_grad = true;
  impl->op = &def;
  if (&attrs != &no_attrs()) impl->attrs = std::make_shared<const Attrs>(attrs);
  impl->saved_versions.reserve(in.size());
  for (const auto& t : in) impl->saved_versions.push_back(t.version());
  impl->own_version = out.version();
  // The op's other outputs (max's indices) are read by its rule too: their versions follow the
  // parents' in saved_versions, so a write into them before backward is caught.
  for (size_t i = 1; i < outs.size(); ++i) {
    impl->other_outputs.push_back(outs[i]);
    impl->saved_versions.push_back(outs[i].defined() ? outs[i].version() : 0);
  }
  if (owned)
    impl->parents = std::move(in);
  else
    impl->parents.assign(in.begin(), in.end());
  note_forward_site(*impl);
}

// Inputs on several devices: each 0-d CPU tensor joins the others' device (a number made into a
// tensor, as in PyTorch); any other mix is a DeviceError naming the op and the devices.
Device joined_device(const std::vector<Tensor>& in, std::string_view op) {
  const Tensor* first = nullptr;
  for (const auto& t : in) {
    if (t.device().is_cpu() && t.ndim() == 0) continue;
    if (!first) first = &t;
    VK_CHECK(t.device() == first->device(), DeviceError, op,
             ": expected all tensors on one device, got ", device_name(first->device()), " ",
             first->describe(), " and ", device_name(t.device()), " ", t.describe());
  }
  return first ? first->device() : kCPU;
}

// A 0-d CPU input joins the op's device. A constant is made there by `full`, a number the device
// writes (as PyTorch hands a Python scalar to a CUDA kernel), so that `x * 2` costs no copy from
// the host; one that requires grad moves with to_device (recorded: its gradient flows back).
Tensor join(const Tensor& t, Device device) {
  if (t.requires_grad()) return to_device(t, device);
  return full({}, item_scalar(t), t.dtype(), device);
}

Device op_device(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs) {
  if (in.empty() || def.device_from_attrs) return attrs.device;
  const Device d = in[0].device();
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].device() != d) return joined_device(in, def.name);
  return d;
}

// Whether the device's kernel takes the op's inputs and its output as they are.
bool takes_as_is(DTypeSet takes, const std::vector<Tensor>& in, DType out) {
  if (!contains(takes, out)) return false;
  for (const Tensor& t : in)
    if (!contains(takes, t.dtype())) return false;
  return true;
}

// `t` converted to `to` by the device's own cast kernel, not recorded (the node records the op's
// real inputs). A device whose cast does not take the dtype cannot hold it: DTypeError.
Tensor convert_for_kernel(const Tensor& t, DType to, Device device, std::string_view op) {
  const DTypeSet cast_takes = kernel_dtypes(device.type, OpKind::Cast);
  const Kernel cast_kernel = find_kernel(device.type, OpKind::Cast);
  const DType narrow = contains(kComputeDTypes, t.dtype()) ? to : t.dtype();
  VK_CHECK(cast_kernel && contains(cast_takes, t.dtype()) && contains(cast_takes, to), DTypeError,
           op, ": ", dtype_name(narrow), " tensors are not supported on the ", device_name(device),
           " device");
  Attrs a;
  a.dtype = to;
  try {
    return cast_kernel({t}, a, Meta{t.shape(), to, device})[0];
  } catch (const DTypeError& e) {  // a device that cannot hold the dtype after all (its features)
    throw DTypeError(detail::cat(op, ": ", e.what()));
  }
}

// Runs a kernel that does not take the op's narrow dtypes (core/kernel.h, register_kernel): the
// narrow inputs converted to their compute dtype, the output computed there, and the outputs of
// that dtype rounded (or wrapped) back to the op's once.
Outputs run_in_compute_dtype(Kernel kernel, DTypeSet takes, const OpDef& def,
                             const std::vector<Tensor>& in, const Attrs& attrs, const Meta& meta) {
  std::vector<Tensor> wide = in;
  for (Tensor& t : wide)
    if (!contains(takes, t.dtype()))
      t = convert_for_kernel(t, compute_dtype(t.dtype()), meta.device, def.name);
  Meta wide_meta = meta;
  if (!contains(takes, meta.dtype)) wide_meta.dtype = compute_dtype(meta.dtype);
  Outputs outs = kernel(wide, attrs, wide_meta);
  if (wide_meta.dtype != meta.dtype)
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i].defined() && outs[i].dtype() == wide_meta.dtype)
        outs[i] = convert_for_kernel(outs[i], meta.dtype, meta.device, def.name);
  return outs;
}

[[gnu::noinline, gnu::cold]] Tensor regenerate_or_throw(const Tensor& t, std::string_view op,
                                                        size_t i) {
  Tensor now = regenerated(t);
  if (!now.defined()) throw_stale(t, op, i);
  return now;
}

// An output over an input's memory is a view of it: it holds the input's base (or the input, when
// that is no view), which a recorded write through it reaches (ops/inplace.cpp).
void note_views(Outputs& outs, const std::vector<Tensor>& in) {
  for (size_t k = 0; k < outs.size(); ++k) {
    Tensor& o = outs[k];
    if (!o.defined() || o.impl()->view_base) continue;
    for (const Tensor& t : in)
      if (o.storage() == t.storage() && !o.same(t)) {
        const auto& base = t.impl()->view_base;
        o.impl()->view_base = base ? base : t.impl_ptr();
        break;
      }
  }
}

// The op's time in the profile (ops/profile.h), with its inputs' shapes when they are recorded.
[[gnu::noinline]] void note_profiled(const OpDef& def, const std::vector<Tensor>& in,
                                     int64_t from_ns) {
  std::vector<Shape> shapes;
  if (profile::records_shapes())
    for (const Tensor& t : in) shapes.push_back(t.shape());
  profile::add(def.name, from_ns, false, std::move(shapes));
}

Outputs run(OpThreadState& ts, OpKind kind, std::vector<Tensor>& in, const Attrs& attrs,
            bool owned) {
  const int64_t profiled_from = profile::on() ? profile::now_ns() : -1;
  const OpDef& def = op_def(kind);
  VK_CHECK(def.arity < 0 || static_cast<int>(in.size()) == def.arity, RuntimeError, def.name,
           ": expected ", def.arity, " tensor inputs, got ", in.size());
  for (const auto& t : in) VK_CHECK(t.defined(), RuntimeError, def.name, ": an input is undefined");
  // Both read before any call: one thread-local lookup, not one after each call.
  InputSubstitution* const substitution = ts.substitution;
  InputWatch* const watch = ts.watch;
  if (substitution) substitution->apply(in);
  // One thread-local read for the three uses below (kernels restore the mode they change).
  const bool grad_mode = GradMode::is_enabled();
  if (grad_mode && ts.stale_allowed == 0)
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].stale()) in[i] = regenerate_or_throw(in[i], def.name, i);
  if (watch && !grad_mode)
    for (const auto& t : in)
      if (t.requires_grad()) watch->note(t);
  const Device device = op_device(def, in, attrs);
  if (!device.is_cpu()) {
    require_device(device);  // DeviceError when its backend is missing, before any kernel lookup
    if (!def.device_from_attrs)
      for (auto& t : in)
        if (t.device() != device) t = join(t, device);
  }
  if (def.autocast != AutocastPolicy::Keep && Autocast::any_enabled() &&
      Autocast::is_enabled(device.type))
    autocast_inputs(def, in, device.type);
  if (def.prepare) def.prepare(in, attrs, def.name);
  Meta meta = def.infer(in, attrs, def.name);
  meta.device = device;
  // Every output shape is validated here, once for all ops: a view (expand, broadcast) allocates
  // nothing, so without this an uncountable shape would live on with a wrapped-around numel.
  numel_of(meta.shape, def.name);
  const Kernel kernel = def.any_device ? def.any_device : find_kernel(device.type, kind);
  VK_CHECK(kernel != nullptr, NotImplementedError, def.name, ": not implemented on the ",
           device_name(device), " device (its backend registers no kernel for it)");
  const DTypeSet takes = def.any_device ? kEveryDType : kernel_dtypes(device.type, kind);
  Outputs outs = takes_as_is(takes, in, meta.dtype)
                     ? kernel(in, attrs, meta)
                     : run_in_compute_dtype(kernel, takes, def, in, attrs, meta);
  VK_CHECK(outs.size() == static_cast<size_t>(def.outputs), RuntimeError, def.name, ": the ",
           device_name(device), " kernel returned ", outs.size(), " outputs; the op has ",
           def.outputs);
  note_views(outs, in);
  if (grad_mode && is_floating(outs[0].dtype()) && any_requires_grad(in))
    record(outs, def, in, attrs, owned);
  if (profiled_from >= 0) note_profiled(def, in, profiled_from);
  return outs;
}

}  // namespace

void note_forward_site(TensorImpl& node) {
  if (AnomalyMode::is_enabled() && g_anomaly_context) node.anomaly_trace = g_anomaly_context();
}

void throw_stale(const Tensor& t, std::string_view op, size_t i) {
  throw RuntimeError(detail::cat(
      op, ": input ", i, " (", t.describe(),
      ") was made before an in-place write into its memory that autograd recorded, and its "
      "history cannot be taken again from the write's (its base is not contiguous, or no "
      "tensor holds the write's result any more): its history does not explain its values. "
      "Take it again from the tensor written after the write, or use it under no_grad()"));
}

Tensor fresh(const Tensor& t, std::string_view op, size_t i) {
  if (!GradMode::is_enabled() || t_ops.stale_allowed != 0 || !t.stale()) return t;
  return regenerate_or_throw(t, op, i);
}

StaleInputsAllowed::StaleInputsAllowed() { ++t_ops.stale_allowed; }
StaleInputsAllowed::~StaleInputsAllowed() { --t_ops.stale_allowed; }

InputWatch::InputWatch() : outer_(t_ops.watch) { t_ops.watch = this; }

InputWatch::~InputWatch() {
  t_ops.watch = outer_;
  if (outer_)
    for (const auto& t : seen_) outer_->note(t);
}

void InputWatch::note(const Tensor& t) {
  for (const auto& s : seen_)
    if (s.same(t)) return;
  seen_.push_back(t);
}

InputSubstitution::InputSubstitution(std::vector<Layer> layers)
    : layers_(std::move(layers)), outer_(t_ops.substitution) {
  t_ops.substitution = this;
}

InputSubstitution::~InputSubstitution() { t_ops.substitution = outer_; }

void InputSubstitution::apply(std::vector<Tensor>& in) const {
  if (outer_) outer_->apply(in);
  for (const Layer& layer : layers_)
    for (auto& t : in)
      for (const auto& [from, to] : layer)
        if (t.same(from)) {
          t = to;
          break;
        }
}

std::vector<InputSubstitution::Layer> InputSubstitution::open_layers() {
  std::vector<const InputSubstitution*> chain;
  for (const InputSubstitution* s = t_ops.substitution; s; s = s->outer_) chain.push_back(s);
  std::vector<Layer> layers;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    layers.insert(layers.end(), (*it)->layers_.begin(), (*it)->layers_.end());
  return layers;
}

const OpDef& op_def(OpKind kind) { return table()[static_cast<size_t>(kind)]; }
std::span<const OpDef> all_ops() { return table(); }
std::string_view op_name(const OpDef& def) { return def.name; }

Tensor dispatch_vector(OpKind kind, std::vector<Tensor> in, const Attrs& attrs) {
  return std::move(run(t_ops, kind, in, attrs, true)[0]);
}

Tensor dispatch(OpKind kind, std::initializer_list<TensorRef> in, const Attrs& attrs) {
  OpThreadState& ts = t_ops;
  InputSlot slot(ts, in);
  return std::move(run(ts, kind, slot.get(), attrs, false)[0]);
}

Outputs dispatch_outputs(OpKind kind, std::initializer_list<TensorRef> in, const Attrs& attrs) {
  OpThreadState& ts = t_ops;
  InputSlot slot(ts, in);
  return run(ts, kind, slot.get(), attrs, false);
}

const Tensor& GradCtx::output(size_t i) const {
  if (i == 0) return out;
  const std::vector<Tensor>& others = out.impl()->other_outputs;
  VK_CHECK(i <= others.size(), RuntimeError, out.op() ? out.op()->name : "op", ": output ", i,
           " kept for backward is gone (the graph was freed by an earlier backward)");
  return others[i - 1];
}

// ---- shared prepare/infer rules ----

// PyTorch's rule: a 0-d operand only decides the result when its category (bool < int < float)
// is above the dimensioned operands'.
DType result_type(const Tensor& a, const Tensor& b) {
  bool a0 = a.ndim() == 0, b0 = b.ndim() == 0;
  if (a0 == b0) return promote(a.dtype(), b.dtype());
  const Tensor& dimmed = a0 ? b : a;
  const Tensor& zero = a0 ? a : b;
  return category(zero.dtype()) > category(dimmed.dtype()) ? zero.dtype() : dimmed.dtype();
}

void prepare_common_dtype(std::vector<Tensor>& in, const Attrs&, std::string_view) {
  if (in.size() < 2) return;
  DType common = result_type(in[0], in[1]);
  for (size_t i = 2; i < in.size(); ++i) common = promote(common, in[i].dtype());
  for (auto& t : in)
    if (t.dtype() != common) t = cast(t, common);
}

namespace {
// expand(t, shape) for a tensor whose expand would not be recorded: the same view, made
// directly instead of through the op table (x * 2.0 broadcasts a constant on every call).
Tensor broadcast_view(const Tensor& t, const Shape& shape) {
  const size_t lead = shape.size() - t.shape().size();
  Strides strides(shape.size(), 0);
  for (size_t d = lead; d < shape.size(); ++d)
    if (t.shape()[d - lead] == shape[d]) strides[d] = t.strides()[d - lead];
  return t.alias(shape, std::move(strides), t.offset());
}
}  // namespace

void prepare_broadcast(std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  bool same = true;  // the common case: nothing to broadcast, no shape to build
  for (size_t i = 1; i < in.size() && same; ++i) same = in[i].shape() == in[0].shape();
  if (same) return;
  std::string name(op);
  Shape shape = in[0].shape();
  for (size_t i = 1; i < in.size(); ++i)
    shape = broadcast_shapes(shape, in[i].shape(), name.c_str());
  const bool recording = GradMode::is_enabled();
  for (auto& t : in) {
    if (t.shape() == shape) continue;
    t = recording && t.requires_grad() ? expand(t, shape) : broadcast_view(t, shape);
  }
}

void prepare_binary(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  prepare_common_dtype(in, a, op);
  prepare_broadcast(in, a, op);
}

void prepare_float_unary(std::vector<Tensor>& in, const Attrs&, std::string_view) {
  if (!is_floating(in[0].dtype())) in[0] = cast(in[0], default_float_dtype());
}

void prepare_float_binary(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  prepare_common_dtype(in, a, op);
  for (auto& t : in)
    if (!is_floating(t.dtype())) t = cast(t, default_float_dtype());
  prepare_broadcast(in, a, op);
}

Meta infer_same_as_first(const std::vector<Tensor>& in, const Attrs&, std::string_view) {
  return {in[0].shape(), in[0].dtype()};
}

Meta infer_bool_like_first(const std::vector<Tensor>& in, const Attrs&, std::string_view) {
  return {in[0].shape(), DType::Bool};
}

OpDef float_unary(OpKind kind, std::string_view name, std::string_view signature,
                  std::string_view summary, Grads (*grad)(const GradCtx&),
                  std::string_view grad_doc) {
  return {.kind = kind,
          .name = name,
          .arity = 1,
          .signature = signature,
          .summary = summary,
          .prepare = prepare_float_unary,
          .infer = infer_same_as_first,
          .grad = grad,
          .grad_doc = grad_doc};
}

}  // namespace vk
