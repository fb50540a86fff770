// Collects the op families into one table indexed by OpKind, and runs ops (dispatch).
#include <array>
#include <string>

#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape_ops.h"

namespace vk {
namespace {

std::vector<OpDef> build_table() {
  OpList ops;
  add_creation_ops(ops);
  add_elementwise_ops(ops);
  add_reduction_ops(ops);
  add_shape_ops(ops);
  add_index_ops(ops);
  add_linalg_ops(ops);
  add_nn_ops(ops);
  add_custom_ops(ops);
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

}  // namespace

std::function<std::string()> g_anomaly_context;  // set by the Python layer: where forward ran

const OpDef& op_def(OpKind kind) { return table()[static_cast<size_t>(kind)]; }
std::span<const OpDef> all_ops() { return table(); }
std::string_view op_name(const OpDef& def) { return def.name; }

Tensor dispatch(OpKind kind, std::vector<Tensor> in, const Attrs& attrs) {
  const OpDef& def = op_def(kind);
  VK_CHECK(def.arity < 0 || static_cast<int>(in.size()) == def.arity, RuntimeError, def.name,
           ": expected ", def.arity, " tensor inputs, got ", in.size());
  for (const auto& t : in) VK_CHECK(t.defined(), RuntimeError, def.name, ": an input is undefined");
  if (def.prepare) def.prepare(in, attrs, def.name);
  Meta meta = def.infer(in, attrs, def.name);
  Tensor out = def.cpu(in, attrs, meta);
  if (GradMode::is_enabled() && is_floating(out.dtype()) && any_requires_grad(in)) {
    TensorImpl* impl = out.impl();
    if (impl->op != nullptr || impl->requires_grad) {  // a kernel returned an existing tensor
      out = out.detach();
      impl = out.impl();
    }
    impl->requires_grad = true;
    impl->op = &def;
    impl->attrs = std::make_shared<const Attrs>(attrs);
    impl->saved_versions.reserve(in.size());
    for (const auto& t : in) impl->saved_versions.push_back(t.version());
    impl->parents = std::move(in);
    if (AnomalyMode::is_enabled() && g_anomaly_context) impl->anomaly_trace = g_anomaly_context();
  }
  return out;
}

// ---- shared prepare/infer rules ----

namespace {
int category(DType t) { return t == DType::Bool ? 0 : is_integral(t) ? 1 : 2; }
}  // namespace

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
  for (auto& t : in) t = cast(t, common);
}

void prepare_broadcast(std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  std::string name(op);
  Shape shape = in[0].shape();
  for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].shape(), name.c_str());
  for (auto& t : in)
    if (t.shape() != shape) t = expand(t, shape);
}

void prepare_binary(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  prepare_common_dtype(in, a, op);
  prepare_broadcast(in, a, op);
}

void prepare_float_unary(std::vector<Tensor>& in, const Attrs&, std::string_view) {
  if (!is_floating(in[0].dtype())) in[0] = cast(in[0], DType::Float32);
}

void prepare_float_binary(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  prepare_common_dtype(in, a, op);
  for (auto& t : in)
    if (!is_floating(t.dtype())) t = cast(t, DType::Float32);
  prepare_broadcast(in, a, op);
}

Meta infer_same_as_first(const std::vector<Tensor>& in, const Attrs&, std::string_view) {
  return {in[0].shape(), in[0].dtype()};
}

Meta infer_bool_like_first(const std::vector<Tensor>& in, const Attrs&, std::string_view) {
  return {in[0].shape(), DType::Bool};
}

}  // namespace vk
