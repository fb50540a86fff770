// Sweeps derived from the op table: every op has a test case; every op with a rule passes
// gradcheck and gradgradcheck in float64; every op a rule uses has a rule of its own.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
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

// Every case with its float64 inputs rounded to a 16-bit format (#19): the op's result against
// the float64 result on the same (representable) values. A table op computes in float32 and
// rounds once; a case that composes ops rounds after each, so the bound is 16 ulps of the largest
// value (docs/precision.md). An op that refuses 16-bit inputs (the solvers, as PyTorch's CPU) must
// say so with a DTypeError naming the dtype.
void check_in_16_bits(const OpCase& c, DType narrow) {
  manual_seed(1234);
  std::vector<Tensor> in = c.inputs(), exact_in;
  for (Tensor& x : in) {
    if (!is_floating(x.dtype())) {
      exact_in.push_back(x);
      continue;
    }
    NoGradGuard no_grad;
    Tensor n = cast(x.detach(), narrow);
    exact_in.push_back(cast(n, DType::Float64));
    x = n;
  }
  Tensor got, exact;
  try {
    manual_seed(7);  // the same draws for both runs of a case that samples
    got = c.fn(in);
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find(dtype_name(narrow)), std::string::npos) << e.what();
    return;
  }
  manual_seed(7);
  exact = c.fn(exact_in);
  ASSERT_EQ(got.shape(), exact.shape()) << c.name;
  if (!is_floating(exact.dtype())) {
    EXPECT_EQ(to_vector(got), to_vector(exact)) << c.name;
    return;
  }
  const double eps = narrow == DType::Float16 ? 0x1p-10 : 0x1p-7;
  const std::vector<double> g = to_vector(got), e = to_vector(exact);
  double scale = 1.0;
  for (double v : e)
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < e.size(); ++i) {
    if (!std::isfinite(e[i])) continue;
    EXPECT_LE(std::fabs(g[i] - e[i]), 16 * eps * scale)
        << c.name << " in " << dtype_name(narrow) << ", element " << i << ": " << g[i] << " vs "
        << e[i];
  }
}

TEST_P(OpSweep, SixteenBitResultsAreTheFloat64OnesRounded) {
  const OpCase& c = op_cases()[GetParam()];
  check_in_16_bits(c, DType::BFloat16);
  check_in_16_bits(c, DType::Float16);
}

std::vector<size_t> all_case_indices() {
  std::vector<size_t> idx(op_cases().size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  return idx;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpSweep, ::testing::ValuesIn(all_case_indices()), case_label);

}  // namespace
}  // namespace vk::test
