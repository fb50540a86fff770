// The op sweep again on the Vulkan device: every case of op_cases() runs in float32 on the CPU and
// on the device, and the outputs, the gradients (of every input requiring one, for a fixed
// weighting of the output) and, for the cases marked second_order, the gradients of those
// gradients agree to float32 rounding. The CPU side is the reference the float64
// sweep checked against finite differences and the Python tests against torch.
//
// Every op has a Vulkan kernel: an op without one (NotImplementedError) fails its cases.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "op_cases.h"
#include "vulkan_fixture.h"

namespace vk::test {
namespace {

// The case's inputs in float32 on `device`: floating leaves keep requiring grad, index and mask
// tensors keep their dtype.
std::vector<Tensor> inputs_on(const std::vector<Tensor>& in, Device device) {
  std::vector<Tensor> out;
  for (const Tensor& x : in) {
    const bool grad = x.requires_grad();
    Tensor y = is_floating(x.dtype()) ? cast(x.detach(), DType::Float32) : x.detach();
    y = to_device(y, device).detach();
    if (grad) y.set_requires_grad(true);
    out.push_back(y);
  }
  return out;
}

struct Outcome {
  Tensor y;
  std::vector<Tensor> grads;   // of the inputs requiring grad, in order; undefined where none
  std::vector<Tensor> grads2;  // second order: of sum_i(grads[i] * weight_i), same inputs
};

// A fixed weight per element of t (distinct values, so that every element is exercised).
Tensor weight_like(const Tensor& t, double scale) {
  return cast(reshape(arange(0, t.numel()), t.shape()) * scale - 1.0, t.dtype());
}

// fn over the inputs, then (given a weight) the gradients of sum(y * weight), and, when the case
// asks for second order, the gradients of those gradients (weighted again).
Outcome run_case(const OpCase& c, const std::vector<Tensor>& in, const Tensor& weight) {
  Outcome r;
  r.y = c.fn(in);
  std::vector<Tensor> wrt;
  for (const Tensor& x : in)
    if (x.requires_grad()) wrt.push_back(x);
  if (!weight.defined() || wrt.empty() || !r.y.requires_grad() || !is_floating(r.y.dtype()) ||
      !op_def(c.kind).grad)  // an op without a rule: OpSweep checks that backward refuses
    return r;
  const Device d = r.y.device();
  r.grads = autograd::grad({r.y}, wrt, {to_device(weight, d)}, true, c.second_order, true);
  if (!c.second_order) return r;
  std::vector<Tensor> outs, weights;
  for (const Tensor& g : r.grads)
    if (g.defined() && g.requires_grad()) {
      outs.push_back(g);
      weights.push_back(to_device(weight_like(g, 0.125), d));
    }
  if (!outs.empty()) r.grads2 = autograd::grad(outs, wrt, weights, false, false, true);
  return r;
}

// Where got and want differ by more than float32 rounding of a computation (relative 1e-4 of the
// value, absolute 1e-5 of the largest magnitude), the first such element; "" when they agree.
std::string compare(const Tensor& got, const Tensor& want, const std::string& what) {
  if (!got.defined() || !want.defined())
    return got.defined() == want.defined() ? "" : what + ": defined on one device only";
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return what + ": " + got.describe() + " on the device, " + want.describe() + " on the cpu";
  const std::vector<double> g = to_vector(to_cpu(got)), w = to_vector(want);
  double scale = 1.0;
  for (double v : w)
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < w.size(); ++i) {
    const bool same_special = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i];
    if (same_special) continue;
    if (std::abs(g[i] - w[i]) <= 1e-4 * std::abs(w[i]) + 1e-5 * scale) continue;
    std::ostringstream s;
    s << what << "[" << i << "]: " << g[i] << " on the device, " << w[i] << " on the cpu";
    return s.str();
  }
  return "";
}

class VulkanSweep : public VulkanTest, public ::testing::WithParamInterface<size_t> {};

TEST_P(VulkanSweep, MatchesTheCpuInFloat32) {
  const OpCase& c = op_cases()[GetParam()];
  manual_seed(1234);
  const std::vector<Tensor> base = c.inputs();
  // Creation cases have no inputs to move: they make CPU tensors (test_vulkan.cpp creates on the
  // device).
  if (base.empty()) return;
  const std::vector<Tensor> on_cpu = inputs_on(base, kCPU);
  Outcome want = run_case(c, on_cpu, Tensor{});
  // One weight per output element, fixed and distinct, so every gradient element is exercised.
  const Tensor weight =
      want.y.defined() && is_floating(want.y.dtype()) ? weight_like(want.y, 0.25) : Tensor{};
  if (weight.defined()) want = run_case(c, on_cpu, weight);
  const Outcome got = run_case(c, inputs_on(base, kVulkan), weight);
  ASSERT_TRUE(got.y.defined()) << c.name;
  if (c.kind != OpKind::ToDevice) {
    EXPECT_EQ(got.y.device(), kVulkan) << c.name;
  }
  EXPECT_EQ(compare(got.y, want.y, c.name + " output"), "");
  ASSERT_EQ(got.grads.size(), want.grads.size()) << c.name;
  for (size_t i = 0; i < want.grads.size(); ++i) {
    if (got.grads[i].defined()) {
      EXPECT_EQ(got.grads[i].device(), kVulkan) << c.name;
    }
    EXPECT_EQ(compare(got.grads[i], want.grads[i], c.name + " grad " + std::to_string(i)), "");
  }
  ASSERT_EQ(got.grads2.size(), want.grads2.size()) << c.name;
  for (size_t i = 0; i < want.grads2.size(); ++i)
    EXPECT_EQ(compare(got.grads2[i], want.grads2[i], c.name + " grad2 " + std::to_string(i)), "");
}

std::string case_label(const ::testing::TestParamInfo<size_t>& info) {
  std::string s = op_cases()[info.param].name;
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

std::vector<size_t> all_cases() {
  std::vector<size_t> idx(op_cases().size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  return idx;
}

INSTANTIATE_TEST_SUITE_P(AllOps, VulkanSweep, ::testing::ValuesIn(all_cases()), case_label);

}  // namespace
}  // namespace vk::test
