// The op table: the single place where an op is defined.
//
// One OpDef per OpKind holds the op's name and documentation, how its inputs are prepared (dtype
// promotion, broadcasting), its shape/dtype rule, and its gradient rule written with public tensor
// ops (or the reason it has none). Its kernels are not here: each backend registers them per
// device from its own folder (core/kernel.h). docs/ops.md, the gradcheck sweep and the Python
// binding list are all derived from this table.
#pragma once
#include <concepts>
#include <initializer_list>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "vkml/core/kernel.h"
#include "vkml/core/tensor.h"
#include "vkml/ops/autocast.h"

namespace vk {

using Grads = std::vector<Tensor>;  // one per input; an undefined Tensor means "no gradient"

// What a gradient rule sees: the recorded output, the gradient arriving at it, and its inputs.
struct GradCtx {
  const Tensor& out;
  const Tensor& grad;
  const std::vector<Tensor>& in;
  const Attrs& attrs;
  const std::vector<bool>& needs;  // needs[i]: input i wants a gradient
  // The op's output i (0: out itself); RuntimeError naming the op when the graph was freed.
  const Tensor& output(size_t i) const;
};

enum class Determinism { Bitwise, NotBitwise };

// What a gradient rule reads besides the incoming gradient: bit i for input i's values (inputs 62
// and later share bit 62), kReadsOutput for the output's. Backward refuses a node whose rule
// reads a value written in place after the node was recorded; a write leaves every earlier node
// over that memory holding values it did not see, and only the nodes that read them are wrong
// (x[i] = v after y = x @ w: matmul's rule for w reads x, its rule for x does not).
using ReadSet = uint64_t;
inline constexpr ReadSet kReadsOutput = ReadSet{1} << 63;
inline constexpr ReadSet kReadsAll = ~ReadSet{0};
inline bool reads_input(ReadSet r, size_t i) { return (r >> (i < 62 ? i : 62)) & 1; }
struct OpDef;
// What the rule of a node of `def` reads for the inputs `needs` wants: the op's declaration
// (ops/reads.cpp), nothing for a custom rule that checks its own reads, everything otherwise.
ReadSet rule_reads(const OpDef& def, const Attrs& attrs, const std::vector<bool>& needs);

struct OpDef {
  OpKind kind;
  std::string_view name;
  int arity;                   // number of tensor inputs; -1 = any number
  int outputs = 1;             // number of tensors its kernels return (core/kernel.h, Outputs)
  std::string_view signature;  // as the C++ API spells it
  std::string_view summary;    // what it computes
  // Casts and broadcasts the inputs in place (records cast/expand nodes); null = leave as given.
  void (*prepare)(std::vector<Tensor>& in, const Attrs& a, std::string_view op) = nullptr;
  Meta (*infer)(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) = nullptr;
  // A kernel for every device at once, for ops whose work is other ops (a custom function's
  // forward ran already); null for the rest, whose kernels the backends register.
  Kernel any_device = nullptr;
  // The op runs where attrs.device says (to_device) rather than where its inputs are. Creation
  // ops, which have no inputs, always do.
  bool device_from_attrs = false;
  Grads (*grad)(const GradCtx& c) = nullptr;  // null: no rule
  std::string_view grad_doc;                  // the rule in words, or why there is none
  Determinism determinism = Determinism::Bitwise;
  // What autocast does with its floating inputs (#19; set from the policy list in autocast.cpp).
  AutocastPolicy autocast = AutocastPolicy::Keep;
  // What its rule reads, given which inputs want gradients (set from the list in reads.cpp,
  // which the op sweep checks); null: everything, the output and other outputs included.
  ReadSet (*reads)(const std::vector<bool>& needs) = nullptr;
};

const OpDef& op_def(OpKind kind);
std::span<const OpDef> all_ops();

// An input in a braced list: dispatch(k, {a, b}) binds references instead of copying each
// tensor (a copy is an atomic reference-count update, which costs as much as the op itself does
// on a one-element tensor).
struct TensorRef {
  TensorRef(const Tensor& t) : tensor(t) {}  // NOLINT: implicit, for braced lists
  const Tensor& tensor;
};

// Runs one op: prepare, infer, kernel, and records the node when grad mode is on and an input
// requires grad (and the result is floating point). A braced list of inputs, dispatch(k, {a, b}),
// fills a per-thread input vector kept from call to call instead of allocating one; a vector of
// inputs is taken as it is. With no attrs, the op records none (its node's attrs are no_attrs()).
Tensor dispatch(OpKind kind, std::initializer_list<TensorRef> in, const Attrs& attrs = no_attrs());
Tensor dispatch_vector(OpKind kind, std::vector<Tensor> in, const Attrs& attrs);
template <class V>
concept TensorVector = std::same_as<std::remove_cvref_t<V>, std::vector<Tensor>>;
template <TensorVector V>
Tensor dispatch(OpKind kind, V&& in, const Attrs& attrs = no_attrs()) {
  return dispatch_vector(kind, std::forward<V>(in), attrs);
}
// As dispatch, returning every output of the op (max_dim's values and indices); the node records
// outputs 1.. for the gradient rule.
Outputs dispatch_outputs(OpKind kind, std::initializer_list<TensorRef> in,
                         const Attrs& attrs = no_attrs());

// While one is open on a thread, ops there accept inputs made before a recorded in-place write
// into their memory (Tensor::stale). Backward opens one around each rule: a rule reads only what
// its read set declares, which the engine checked by version, and may pass the rest for shapes.
// In anomaly mode, where the forward ran (the Python line), for a node made without dispatch.
void note_forward_site(TensorImpl& node);

// t, or when it is stale (Tensor::stale) and grad mode is on outside backward, t taken again from
// the node that stands for its memory since the recorded write (regenerated); RuntimeError naming
// `op` and input i when there is none. Dispatch does this for every input; a write recorded
// without dispatch does it for its own.
Tensor fresh(const Tensor& t, std::string_view op, size_t i);
[[noreturn, gnu::cold]] void throw_stale(const Tensor& t, std::string_view op, size_t i);
// A stale tensor (a view taken before y[0] = v, a base written through a view of it) as the view
// of the node that stands for its base's memory since the write, as torch regenerates a view's
// history (ops/inplace.cpp). Undefined when that node is gone or the region is none of its.
Tensor regenerated(const Tensor& t);

class StaleInputsAllowed {
 public:
  StaleInputsAllowed();
  ~StaleInputsAllowed();
  StaleInputsAllowed(const StaleInputsAllowed&) = delete;
  StaleInputsAllowed& operator=(const StaleInputsAllowed&) = delete;
};

// For checkpoint (autograd/function.cpp), which runs a function without recording and must still
// give gradients to every tensor the function read, including those it closes over (a layer's
// parameters). While an InputWatch is open on a thread, every op run there with grad mode off
// notes its inputs that require grad. Watches nest: what an inner one notes, the outer one sees.
class InputWatch {
 public:
  InputWatch();
  ~InputWatch();
  InputWatch(const InputWatch&) = delete;
  InputWatch& operator=(const InputWatch&) = delete;
  void note(const Tensor& t);
  const std::vector<Tensor>& seen() const { return seen_; }  // in first-use order, no repeats

 private:
  std::vector<Tensor> seen_;
  InputWatch* outer_;
};

// While an InputSubstitution is open on a thread, every op run there reads `to` wherever it is
// given `from`: checkpoint's recompute puts stand-ins in place of the tensors it differentiates
// for, so that its own walk ends at them. A substitution is a list of layers applied in turn (a
// stand-in may itself be replaced by a later layer's); substitutions nest, the outer one first.
class InputSubstitution {
 public:
  using Layer = std::vector<std::pair<Tensor, Tensor>>;  // (from, to)
  explicit InputSubstitution(std::vector<Layer> layers);
  ~InputSubstitution();
  InputSubstitution(const InputSubstitution&) = delete;
  InputSubstitution& operator=(const InputSubstitution&) = delete;
  void apply(std::vector<Tensor>& in) const;
  // Every layer open on this thread, outermost first: a checkpoint run inside a recompute keeps
  // them, so that its own recompute reads the same stand-ins.
  static std::vector<Layer> open_layers();

 private:
  std::vector<Layer> layers_;
  InputSubstitution* outer_;
};

// The families, each in ops/<family>.cpp; table.cpp collects them.
using OpList = std::vector<OpDef>;
void add_creation_ops(OpList& ops);
void add_random_ops(OpList& ops);  // issue 15 item 3
void add_elementwise_ops(OpList& ops);
void add_reduction_ops(OpList& ops);
void add_shape_ops(OpList& ops);
void add_index_ops(OpList& ops);
void add_linalg_ops(OpList& ops);
void add_softmax_ops(OpList& ops);
void add_conv_ops(OpList& ops);
void add_norm_ops(OpList& ops);
void add_device_ops(OpList& ops);
void add_custom_ops(OpList& ops);
// sort and scan families (issue #15 item 4: sortscan)
void add_sort_ops(OpList& ops);
void add_scan_ops(OpList& ops);
// recurrent cells (issue #16 item 2: rnn)
void add_rnn_ops(OpList& ops);
void add_math_ops(OpList& ops);  // math ops (#15)
// solvers (#15 linalg)
void add_solve_ops(OpList& ops);
void add_qr_ops(OpList& ops);
void add_special_ops(OpList& ops);     // special functions (#15): Bessel, incomplete gamma
void add_activation_ops(OpList& ops);  // nn.functional's activations with parameters (#18)
void add_pointwise_ops(OpList& ops);   // lerp, addcmul, addcdiv fused (#18)
void add_attention_ops(OpList& ops);   // scaled dot-product attention, fused (#18)

// Autocast (ops/autocast.cpp): the policy list applied to the table, and the inputs of an op
// cast as its policy says inside a region of `type` (recorded casts: gradients flow back).
void set_autocast_policies(std::vector<OpDef>& table);
void set_read_sets(std::vector<OpDef>& table);  // ops/reads.cpp
void autocast_inputs(const OpDef& def, std::vector<Tensor>& in, DeviceType type);

// Shared building blocks for entries.
std::string_view op_name(const OpDef& def);
DType result_type(const Tensor& a, const Tensor& b);
void prepare_common_dtype(std::vector<Tensor>& in, const Attrs& a, std::string_view op);
void prepare_broadcast(std::vector<Tensor>& in, const Attrs& a, std::string_view op);
// prepare_binary: a common dtype, then broadcasting. prepare_float_unary: an integer input
// computes in float32. prepare_float_binary: prepare_binary, integer inputs in float32.
void prepare_binary(std::vector<Tensor>& in, const Attrs& a, std::string_view op);
void prepare_float_unary(std::vector<Tensor>& in, const Attrs& a, std::string_view op);
void prepare_float_binary(std::vector<Tensor>& in, const Attrs& a, std::string_view op);
Meta infer_same_as_first(const std::vector<Tensor>& in, const Attrs& a, std::string_view op);
Meta infer_bool_like_first(const std::vector<Tensor>& in, const Attrs& a, std::string_view op);
// An entry for float-only math: integer and bool inputs compute in the default float dtype, as
// PyTorch.
OpDef float_unary(OpKind kind, std::string_view name, std::string_view signature,
                  std::string_view summary, Grads (*grad)(const GradCtx&),
                  std::string_view grad_doc);

}  // namespace vk
