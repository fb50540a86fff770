// Every op's declared read set (OpDef::reads, ops/reads.cpp) against its rule: what a rule
// claims not to read is overwritten with NaN (an index with zeros, a mask negated) after the
// forward, and backward must give the same gradients. A claim too small would let backward run
// through a node whose memory an in-place write changed, and give a wrong gradient silently.
#include <cmath>
#include <limits>
#include <unordered_set>

#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

// The first node of `def` in the graph of `root` (the op a case is about; a case may compose it).
Tensor node_of(const Tensor& root, const OpDef& def) {
  std::unordered_set<const TensorImpl*> seen;
  std::vector<Tensor> stack{root};
  while (!stack.empty()) {
    Tensor t = stack.back();
    stack.pop_back();
    if (!t.defined() || !seen.insert(t.impl()).second) continue;
    if (t.op() == &def) return t;
    for (const auto& p : t.parents()) stack.push_back(p);
  }
  return Tensor();
}

// Replaces t's values with ones a rule reading them could not pass off as the originals.
void overwrite(const Tensor& t) {
  NoGradGuard no_grad;
  const Tensor view = t.detach();
  if (is_floating(view.dtype()))
    fill_(view, std::numeric_limits<double>::quiet_NaN());
  else if (view.dtype() == DType::Bool)
    copy_(view, logical_not(view));
  else
    fill_(view, sum(abs(cast(view, DType::Float64))).item() == 0 ? 1 : 0);
}

struct Pass {
  Tensor node;
  std::vector<Tensor> grads;  // of the parents in `wrt`
};

// The case's forward, then the gradients of its op's node with respect to the parents `wanted`
// picks, after overwriting what `reads` leaves out (nothing when reads is kReadsAll).
Pass backward_of(const OpCase& c, const OpDef& def, const std::vector<bool>& wanted,
                 ReadSet reads) {
  manual_seed(1234);
  std::vector<Tensor> in = c.inputs();
  Tensor y = c.fn(in);
  Pass r{node_of(y, def), {}};
  if (!r.node.defined()) return r;
  const auto& parents = r.node.parents();
  std::vector<Tensor> wrt, kept;
  for (size_t i = 0; i < parents.size(); ++i) {
    if (wanted[i]) wrt.push_back(parents[i]);
    if (reads_input(reads, i)) kept.push_back(parents[i]);
  }
  if (reads & kReadsOutput) kept.push_back(r.node);
  for (const Tensor& o : r.node.impl()->other_outputs) kept.push_back(o);
  auto shares_kept = [&](const Tensor& t) {
    for (const Tensor& k : kept)
      if (k.defined() && k.storage() == t.storage()) return true;
    return false;
  };
  for (size_t i = 0; i < parents.size(); ++i)
    if (!reads_input(reads, i) && !shares_kept(parents[i])) overwrite(parents[i]);
  if (!(reads & kReadsOutput) && !shares_kept(r.node)) overwrite(r.node);
  manual_seed(77);
  Tensor seed = randn(r.node.shape(), r.node.dtype());
  r.grads = autograd::grad({r.node}, wrt, {seed}, true, false, true);
  return r;
}

class ReadSets : public ::testing::TestWithParam<size_t> {};

TEST_P(ReadSets, RulesReadOnlyWhatTheyDeclare) {
  const OpCase& c = op_cases()[GetParam()];
  const OpDef& def = op_def(c.kind);
  if (!def.grad || !def.reads) return;
  manual_seed(1234);
  std::vector<Tensor> in = c.inputs();
  const Tensor node = node_of(c.fn(in), def);
  if (!node.defined()) return;  // the case's inputs do not require grad: nothing recorded
  const size_t n = node.parents().size();
  // Every input that requires grad wanted, then each alone: a rule may read more for one.
  std::vector<std::vector<bool>> subsets{std::vector<bool>(n)};
  for (size_t i = 0; i < n; ++i)
    if (node.parents()[i].requires_grad()) {
      subsets[0][i] = true;
      subsets.emplace_back(n, false).at(i) = true;
    }
  for (const auto& wanted : subsets) {
    const ReadSet reads = def.reads(wanted);
    const Pass expected = backward_of(c, def, wanted, kReadsAll);
    const Pass got = backward_of(c, def, wanted, reads);
    ASSERT_EQ(got.grads.size(), expected.grads.size()) << c.name;
    for (size_t k = 0; k < got.grads.size(); ++k) {
      ASSERT_EQ(got.grads[k].defined(), expected.grads[k].defined()) << c.name;
      if (!got.grads[k].defined()) continue;
      const std::vector<double> g = to_vector(got.grads[k]), e = to_vector(expected.grads[k]);
      for (size_t j = 0; j < e.size(); ++j)
        EXPECT_TRUE(g[j] == e[j] || (std::isnan(g[j]) && std::isnan(e[j])))
            << c.name << ": gradient " << k << " element " << j << " is " << g[j]
            << " with what the rule declares unread overwritten, " << e[j] << " without";
    }
  }
}

std::vector<size_t> all_cases() {
  std::vector<size_t> idx(op_cases().size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  return idx;
}

std::string label(const ::testing::TestParamInfo<size_t>& info) {
  std::string s = op_cases()[info.param].name;
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllOps, ReadSets, ::testing::ValuesIn(all_cases()), label);

// The table's declarations are the ones the list gives, and the ops listed have rules.
TEST(ReadSetsTable, DeclaredOnlyForOpsWithRules) {
  for (const OpDef& def : all_ops())
    if (def.reads) {
      EXPECT_TRUE(def.grad != nullptr) << def.name;
    }
}

}  // namespace
}  // namespace vk::test
