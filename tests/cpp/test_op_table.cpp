// Sweeps derived from the op table: every op has a test case; every op with a rule passes
// gradcheck and gradgradcheck in float64; every op a rule uses has a rule of its own.
#include <set>
#include <unordered_set>

#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

std::vector<const OpCase*> cases_for(OpKind kind) {
  std::vector<const OpCase*> out;
  for (const auto& c : op_cases())
    if (c.kind == kind) out.push_back(&c);
  return out;
}

TEST(OpTable, EveryOpHasATestCase) {
  for (const OpDef& def : all_ops())
    EXPECT_FALSE(cases_for(def.kind).empty()) << "op '" << def.name << "' has no test case";
}

TEST(OpTable, NamesAreUnique) {
  std::set<std::string_view> names;
  for (const OpDef& def : all_ops()) EXPECT_TRUE(names.insert(def.name).second) << def.name;
}

TEST(OpTable, EveryOpHasKernelAndDocs) {
  for (const OpDef& def : all_ops()) {
    EXPECT_TRUE(def.any_device || find_kernel(DeviceType::CPU, def.kind)) << def.name;
    EXPECT_NE(def.infer, nullptr) << def.name;
    EXPECT_FALSE(def.summary.empty()) << def.name;
    EXPECT_FALSE(def.grad_doc.empty()) << def.name << ": state the rule or why there is none";
  }
}

class OpSweep : public ::testing::TestWithParam<size_t> {};

std::string case_label(const ::testing::TestParamInfo<size_t>& info) {
  std::string s = op_cases()[info.param].name;
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// Collects the op kinds of every node in the graph hanging off `roots`.
std::set<const OpDef*> ops_in_graph(const std::vector<Tensor>& roots) {
  std::set<const OpDef*> ops;
  std::unordered_set<const TensorImpl*> seen;
  std::vector<Tensor> stack;
  for (const auto& r : roots)
    if (r.defined()) stack.push_back(r);
  while (!stack.empty()) {
    Tensor t = stack.back();
    stack.pop_back();
    if (!seen.insert(t.impl()).second) continue;
    if (t.op()) ops.insert(t.op());
    for (const auto& p : t.parents()) stack.push_back(p);
  }
  return ops;
}

TEST_P(OpSweep, GradientsMatchFiniteDifferences) {
  const OpCase& c = op_cases()[GetParam()];
  const OpDef& def = op_def(c.kind);
  manual_seed(1234);
  std::vector<Tensor> in = c.inputs();
  if (!def.grad) {
    // No rule: the output must not carry a graph, or backward must say so naming the op.
    Tensor y = c.fn(in);
    if (y.requires_grad() && y.op() == &def) {
      VK_EXPECT_ERROR(autograd::backward(sum(y)), NotImplementedError, std::string(def.name));
    }
    return;
  }
  EXPECT_EQ(autograd::gradcheck(c.fn, in), "") << c.name;
  if (c.second_order) {
    EXPECT_EQ(autograd::gradgradcheck(c.fn, in), "") << c.name;
  }
}

TEST_P(OpSweep, RulesUseOnlyOpsWithRules) {
  const OpCase& c = op_cases()[GetParam()];
  if (!op_def(c.kind).grad) return;
  manual_seed(99);
  std::vector<Tensor> in = c.inputs();
  std::vector<Tensor> wrt;
  for (const auto& x : in)
    if (x.requires_grad()) wrt.push_back(x);
  Tensor y = c.fn(in);
  Tensor v = ones_like(y);
  std::vector<Tensor> g = autograd::grad({y}, wrt, {v}, true, true, true);
  for (const OpDef* used : ops_in_graph(g)) {
    EXPECT_TRUE(used->grad != nullptr)
        << "the rule of " << op_def(c.kind).name << " uses " << used->name
        << ", which has no gradient rule: higher order would break";
    for (const auto& t : g)
      if (t.defined()) {
        EXPECT_TRUE(is_floating(t.dtype()));
      }
  }
}

std::vector<size_t> all_case_indices() {
  std::vector<size_t> idx(op_cases().size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  return idx;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpSweep, ::testing::ValuesIn(all_case_indices()), case_label);

}  // namespace
}  // namespace vk::test
