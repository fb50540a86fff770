// The recurrent cells on the Vulkan device (shaders/lstm.comp, issue #16 item 2: rnn): one
// invocation per (b, j), float32 and (with shaderFloat64) float64; inputs made contiguous first.
#include "vkml/backend/vulkan/rows.h"

namespace vk::vulkan {
namespace {

// Push constants of lstm.comp, laid out as its Params block (std430).
struct CellParams {
  uint32_t B = 0, H = 0;
  int32_t g_offset = 0, gates_offset = 0, c_offset = 0;
};
static_assert(sizeof(CellParams) == 20, "lstm.comp's push constants");

std::string suffix_of(DType t, const char* op) {
  VK_CHECK(t == DType::Float32 || t == DType::Float64, DTypeError, op,
           ": expected a floating dtype, got ", dtype_name(t));
  return rows::dtype_suffix(t, op);
}

}  // namespace

VK_KERNEL(lstm_cell) {
  (void)a;
  const char* op = "lstm_cell";
  const std::string suffix = suffix_of(m.dtype, op);
  const Tensor gates = rows::contiguous_of(in[0], op), cp = rows::contiguous_of(in[1], op);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  CellParams p;
  p.B = static_cast<uint32_t>(m.shape[1]);
  p.H = static_cast<uint32_t>(m.shape[2]);
  p.gates_offset = static_cast<int32_t>(gates.offset());
  p.c_offset = static_cast<int32_t>(cp.offset());
  rows::launch("lstm_cell_" + suffix, {&out, &gates, &cp}, p, uint64_t{p.B} * p.H, 1, op);
  return out;
}

VK_KERNEL(lstm_cell_backward) {
  (void)a;
  const char* op = "lstm_cell_backward";
  const std::string suffix = suffix_of(m.dtype, op);
  const Tensor g = rows::contiguous_of(in[0], op), gates = rows::contiguous_of(in[1], op),
               cp = rows::contiguous_of(in[2], op);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  CellParams p;
  p.B = static_cast<uint32_t>(gates.shape()[0]);
  p.H = static_cast<uint32_t>(cp.shape()[1]);
  p.g_offset = static_cast<int32_t>(g.offset());
  p.gates_offset = static_cast<int32_t>(gates.offset());
  p.c_offset = static_cast<int32_t>(cp.offset());
  rows::launch("lstm_cell_backward_" + suffix, {&out, &g, &gates, &cp}, p, uint64_t{p.B} * p.H, 1,
               op);
  return out;
}

}  // namespace vk::vulkan
