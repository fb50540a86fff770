// Writes docs/ops.md from the op table (the only source of truth about ops).
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "vkml/vkml.h"

namespace {

// What the rule reads when every input wants a gradient (OpDef::reads, ops/reads.cpp): after an
// in-place write into those values, backward refuses the node.
std::string reads_doc(const vk::OpDef& def) {
  if (!def.grad) return "";
  if (!def.reads) return "- its rule reads: its inputs and its output (none declared)\n";
  const size_t n = def.arity < 0 ? 1 : static_cast<size_t>(def.arity);
  const vk::ReadSet r = def.reads(std::vector<bool>(n, true));
  std::string parts;
  for (size_t i = 0; i < n; ++i)
    if (vk::reads_input(r, i)) parts += (parts.empty() ? "input " : ", input ") + std::to_string(i);
  if (r & vk::kReadsOutput) parts += parts.empty() ? "the output" : ", the output";
  if (def.arity < 0 && !parts.empty()) parts = "its inputs";
  return "- its rule reads: " + (parts.empty() ? "nothing but the gradient" : parts) +
         " (with every input wanting a gradient)\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vk;
  std::ostream* out = &std::cout;
  std::ofstream file;
  if (argc > 1) {
    file.open(argv[1]);
    out = &file;
  }
  size_t with_rule = 0;
  for (const OpDef& def : all_ops()) with_rule += def.grad != nullptr;
  *out << "# vkml ops\n\n"
       << "Generated from the op table (`src/vkml/ops/*.cpp`) by `tools/gen_ops_doc.cpp`; do not "
          "edit by hand (`make docs` rewrites it, and a test fails when it is stale).\n\n"
       << all_ops().size() << " ops, " << with_rule << " with gradient rules.\n\n";
  // Which devices run each op: a kernel registered by that device's backend (core/kernel.h), or
  // one that runs on every device (`all`: the op's work is other ops or a memory copy).
  const DeviceType devices[] = {DeviceType::CPU, DeviceType::Vulkan};
  *out << "## Kernels per device\n\n| op |";
  for (DeviceType d : devices) *out << " " << device_type_name(d) << " |";
  *out << "\n|---|";
  for (size_t i = 0; i < std::size(devices); ++i) *out << "---|";
  *out << "\n";
  for (const OpDef& def : all_ops()) {
    *out << "| " << def.name << " |";
    for (DeviceType d : devices)
      *out << (def.any_device ? " all |" : find_kernel(d, def.kind) ? " yes |" : " — |");
    *out << "\n";
  }
  *out << "\n";
  for (const OpDef& def : all_ops()) {
    *out << "## " << def.name << "\n\n"
         << "- signature: `" << def.signature << "`\n"
         << "- computes: " << def.summary << "\n"
         << "- gradient: " << (def.grad ? "" : "none — ") << def.grad_doc << "\n"
         << reads_doc(def)
         << "- inputs: " << (def.arity < 0 ? std::string("any number") : std::to_string(def.arity))
         << " tensors\n"
         << (def.outputs > 1 ? "- outputs: " + std::to_string(def.outputs) +
                                   " (output 0 is the "
                                   "result; the rule reads the others by position)\n"
                             : std::string())
         << "- determinism: "
         << (def.determinism == Determinism::Bitwise ? "bitwise identical at any thread count"
                                                     : "not bitwise reproducible")
         << "\n"
         << (def.autocast != AutocastPolicy::Keep ? std::string("- under autocast: runs in ") +
                                                        autocast_policy_name(def.autocast) + "\n"
                                                  : std::string())
         << "\n";
  }
  return 0;
}
