// Reductions, softmax and norms on the Vulkan device against the CPU's kernels (float32): views,
// keepdim, several dims, empty reductions, NaN/inf, ties, and sizes across the shaders' chunks
// (4096 elements per invocation) and workgroups.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <string>

#include "op_cases.h"
#include "vulkan_fixture.h"

namespace vk {
namespace {

using test::dev;
using test::expect_close;
using test::expect_same;
using test::expect_same_ints;
using test::expect_ulps;
using test::f32;
using test::host;
using test::kVulkan;
using Vulkan = test::VulkanTest;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Rows of distinct-ish values with ties of the extremes, NaN and infinities, 5000 long (two
// chunks of the reduction shader), as float32.
Tensor tricky_rows() {
  const int64_t n = 5000;
  std::vector<double> v;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t k = 0; k < n; ++k) v.push_back(std::sin(0.37 * static_cast<double>(k + 11 * r)));
  auto at = [&](int64_t r, int64_t k) -> double& { return v[static_cast<size_t>(r * n + k)]; };
  at(0, 10) = 3.0, at(0, 4500) = 3.0;                // a tie for the max across the chunks
  at(0, 20) = -3.0, at(0, 20 + 4096) = -3.0;         // and for the min
  at(1, 4200) = kNaN, at(1, 4999) = kNaN;            // NaN in the second chunk only
  at(2, 7) = kNaN, at(2, 4097) = kNaN;               // NaN in both
  for (int64_t k = 0; k < n; ++k) at(3, k) = -kInf;  // all -inf
  at(4, 4096) = kInf, at(4, 100) = kInf;             // +inf twice
  at(4, 200) = -kInf;
  at(5, 4095) = 5.0, at(5, 4096) = 5.0;  // a tie at the chunk boundary
  return f32(v, {6, n});
}

TEST_F(Vulkan, ExtremesMatchTheCpu) {
  const Tensor x = tricky_rows();
  const Tensor d = dev(x);
  expect_same(amax(d, {1}), amax(x, {1}), "amax rows");
  expect_same(amin(d, {1}, true), amin(x, {1}, true), "amin rows keepdim");
  expect_same(amax(d, {0}), amax(x, {0}), "amax columns");
  expect_same(amin(d), amin(x), "amin all");
  expect_same(amax(transpose(d, 0, 1), {0}), amax(transpose(x, 0, 1), {0}), "amax transposed");
  const Tensor x3 = reshape(x, {6, 50, 100}), d3 = dev(x3);
  expect_same(amax(d3, {0, 2}, true), amax(x3, {0, 2}, true), "amax two dims");
  expect_same(amin(permute(d3, {2, 0, 1}), {1, 2}), amin(permute(x3, {2, 0, 1}), {1, 2}),
              "amin permuted");
  expect_same(amax(slice(d, 1, 3, 4000, 7), {1}), amax(slice(x, 1, 3, 4000, 7), {1}), "amax step");
  EXPECT_THROW(amax(dev(f32({}, {2, 0})), {1}), ShapeError);
  EXPECT_THROW(amax(dev(f32({}, {0, 3})), {0, 1}, true), ShapeError);
  expect_same(amax(dev(f32({}, {0, 3})), {1}), amax(f32({}, {0, 3}), {1}), "amax of no rows");
  expect_same(amax(dev(f32({2.5}, {})), {}), amax(f32({2.5}, {}), {}), "amax 0-d");
}

TEST_F(Vulkan, MaxMinAlongADimGiveTheFirstIndex) {
  const Tensor x = tricky_rows();
  const Tensor d = dev(x);
  for (int64_t dim : {0, 1}) {
    for (bool keep : {false, true}) {
      const std::string at = " dim " + std::to_string(dim) + (keep ? " keepdim" : "");
      const ValuesIndices got = max(d, dim, keep), want = max(x, dim, keep);
      expect_same(got.values, want.values, "max values" + at);
      expect_same(got.indices, want.indices, "max indices" + at);
      const ValuesIndices gmin = min(d, dim, keep), wmin = min(x, dim, keep);
      expect_same(gmin.values, wmin.values, "min values" + at);
      expect_same(gmin.indices, wmin.indices, "min indices" + at);
      expect_same(argmax(d, dim, keep), argmax(x, dim, keep), "argmax" + at);
      expect_same(argmin(d, dim, keep), argmin(x, dim, keep), "argmin" + at);
    }
  }
  // Ties and NaN along a transposed, strided view; whole-tensor argmax (a reshape copy).
  const Tensor t = f32({1, 4, 4, -2, kNaN, 4, -2, kNaN, 0, 0, -0.0, 0}, {3, 4});
  const Tensor dt = dev(t);
  expect_same(argmax(transpose(dt, 0, 1), 1), argmax(transpose(t, 0, 1), 1), "argmax transposed");
  expect_same(argmin(transpose(dt, 0, 1), 0), argmin(transpose(t, 0, 1), 0), "argmin transposed");
  expect_same(max(dt, 1).indices, max(t, 1).indices, "max ties and NaN");
  expect_same(min(dt, 1).indices, min(t, 1).indices, "min ties and -0");
  expect_same(argmax(dev(x)), argmax(x), "argmax of all");
  expect_same(argmin(dev(f32({3}, {})), 0), argmin(f32({3}, {}), 0), "argmin 0-d");
  expect_same(max(dev(f32({}, {0, 4})), 1).indices, max(f32({}, {0, 4}), 1).indices, "empty");
  EXPECT_THROW(argmax(dev(f32({}, {3, 0})), 1), ShapeError);
}

TEST_F(Vulkan, ProdMatchesTheCpu) {
  std::vector<double> v;
  for (int k = 0; k < 3 * 5000; ++k) v.push_back(1.0 + 0.01 * std::sin(0.1 * k));
  const Tensor x = f32(v, {3, 5000});
  expect_close(prod(dev(x), {1}), prod(x, {1}), 1e-4, "prod long rows");
  expect_close(prod(transpose(dev(x), 0, 1), {0}, true), prod(transpose(x, 0, 1), {0}, true), 1e-4,
               "prod transposed keepdim");
  const Tensor s = f32({0.5, -0.0, 2, 4, -1.5, kInf, kNaN, 3, 0, kInf, 2, 1}, {4, 3});
  expect_close(prod(dev(s), {1}), prod(s, {1}), 1e-6, "prod special values");
  expect_close(prod(dev(s), {0, 1}), prod(s, {0, 1}), 1e-6, "prod all");
  expect_close(prod(dev(f32({}, {2, 0})), {1}), prod(f32({}, {2, 0}), {1}), 0, "prod empty");
}

TEST_F(Vulkan, LogSumExpMatchesTheCpu) {
  const Tensor x = tricky_rows();
  expect_close(logsumexp(dev(x), {1}), logsumexp(x, {1}), 1e-5, "logsumexp rows");
  expect_close(logsumexp(dev(x) * 30.0, {0}, true), logsumexp(x * 30.0, {0}, true), 1e-5,
               "logsumexp columns, large values");
  const Tensor x3 = reshape(x, {6, 50, 100});
  expect_close(logsumexp(permute(dev(x3), {1, 0, 2}), {0, 2}),
               logsumexp(permute(x3, {1, 0, 2}), {0, 2}), 1e-5, "logsumexp two dims");
  expect_close(logsumexp(dev(f32({}, {3, 0})), {1}), logsumexp(f32({}, {3, 0}), {1}), 0,
               "logsumexp empty: -inf");
  expect_close(logsumexp(dev(f32({-kInf, kInf, 1, kNaN, -kInf, -kInf}, {3, 2})), {1}),
               logsumexp(f32({-kInf, kInf, 1, kNaN, -kInf, -kInf}, {3, 2}), {1}), 0,
               "logsumexp special values");
}

TEST_F(Vulkan, VarMatchesTheCpu) {
  std::vector<double> v;
  for (int k = 0; k < 4 * 5000; ++k) v.push_back(100.0 + std::sin(0.3 * k) * (1 + k % 7));
  const Tensor x = f32(v, {4, 5000});
  for (double correction : {0.0, 1.0, 2.5}) {
    const std::string c = " correction " + std::to_string(correction);
    expect_close(var(dev(x), {1}, correction), var(x, {1}, correction), 1e-4, "var rows" + c);
    expect_close(var(transpose(dev(x), 0, 1), {0, 1}, correction, true),
                 var(transpose(x, 0, 1), {0, 1}, correction, true), 1e-4, "var all" + c);
    expect_close(var(dev(x), {0}, correction), var(x, {0}, correction), 1e-4, "var columns" + c);
  }
  const Tensor one = f32({1, 2, 3}, {3, 1});
  expect_close(var(dev(one), {1}), var(one, {1}), 0, "var of one value: NaN");
  expect_close(var(dev(f32({}, {2, 0})), {1}), var(f32({}, {2, 0}), {1}), 0, "var empty: NaN");
  const Tensor s = f32({1, kInf, 2, kNaN, 3, 4}, {3, 2});
  expect_close(var(dev(s), {1}), var(s, {1}), 1e-6, "var special values");
}

// Smooth pseudo-random float32 values in [-amp, amp].
Tensor wave(const Shape& shape, double amp, double freq = 0.731) {
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  for (size_t k = 0; k < v.size(); ++k)
    v[k] = amp * std::sin(freq * static_cast<double>(k * k % 9973));
  return f32(v, shape);
}

TEST_F(Vulkan, SoftmaxMatchesTheCpu) {
  const Tensor x = wave({4, 5000}, 8.0);  // rows far longer than a workgroup's 128
  const Tensor d = dev(x);
  expect_close(softmax(d, 1), softmax(x, 1), 1e-5, "softmax long rows");
  expect_close(log_softmax(d, -1), log_softmax(x, -1), 1e-5, "log_softmax long rows");
  expect_close(softmax(d, 0), softmax(x, 0), 1e-5, "softmax along dim 0");
  // contiguous views at an offset: read in place
  expect_close(softmax(slice(d, 0, 1, 3), 1), softmax(slice(x, 0, 1, 3), 1), 1e-5, "offset rows");
  expect_close(softmax_backward(slice(d, 0, 2, 4), slice(d, 0, 1, 3), 1),
               softmax_backward(slice(x, 0, 2, 4), slice(x, 0, 1, 3), 1), 1e-5,
               "softmax_backward of views at offsets");
  expect_close(log_softmax(d, 0), log_softmax(x, 0), 1e-5, "log_softmax along dim 0");
  expect_close(softmax(transpose(d, 0, 1), 0, 0.125), softmax(transpose(x, 0, 1), 0, 0.125), 1e-5,
               "scaled softmax of a transposed view");
  const Tensor x3 = wave({3, 70, 5}, 4.0), d3 = dev(x3);
  expect_close(softmax(d3, 1, 2.5), softmax(x3, 1, 2.5), 1e-5, "scaled, middle dim");
  expect_close(log_softmax(slice(d3, 1, 1, 70, 3), 1), log_softmax(slice(x3, 1, 1, 70, 3), 1), 1e-5,
               "log_softmax of a strided view");
  // NaN, -inf and +inf rows; a row of -inf gives NaN, as on the CPU.
  const Tensor s = f32(
      {1, kNaN, 2, 3, -kInf, -kInf, -kInf, -kInf, kInf, 1, -kInf, 0, 1, 2, -kInf, kInf}, {4, 4});
  expect_close(softmax(dev(s), 1), softmax(s, 1), 1e-6, "softmax special values");
  expect_close(log_softmax(dev(s), 1), log_softmax(s, 1), 1e-6, "log_softmax special values");
  // The same in rows a workgroup shares.
  std::vector<double> long_rows(3 * 1500, 0.5);
  long_rows[700] = kNaN;
  for (size_t k = 1500; k < 3000; ++k) long_rows[k] = -kInf;
  long_rows[4499] = kInf;
  const Tensor l = f32(long_rows, {3, 1500});
  expect_close(softmax(dev(l), 1), softmax(l, 1), 1e-6, "softmax special values, long rows");
  expect_close(log_softmax(dev(l), 1), log_softmax(l, 1), 1e-6, "log_softmax, long rows");
  expect_close(softmax(dev(f32({}, {3, 0})), 1), softmax(f32({}, {3, 0}), 1), 0, "empty rows");
  expect_close(softmax(dev(f32({}, {0, 3})), 1), softmax(f32({}, {0, 3}), 1), 0, "no rows");
  expect_close(softmax(dev(f32({-2}, {})), 0), softmax(f32({-2}, {}), 0), 0, "0-d");
  EXPECT_THROW(softmax(dev(arange(0, 4)), 0), DTypeError);
}

TEST_F(Vulkan, CausalSoftmaxMatchesTheCpu) {
  for (const Shape& shape : {Shape{2, 3, 7, 300}, Shape{9, 4}, Shape{1, 200}, Shape{600, 600}}) {
    const Tensor x = wave(shape, 6.0), d = dev(x);
    const std::string at = " of shape " + shape_str(shape);
    expect_close(softmax(d, -1, 1.0, true), softmax(x, -1, 1.0, true), 1e-5, "causal" + at);
    expect_close(softmax(d, -1, 0.3, true), softmax(x, -1, 0.3, true), 1e-5, "scaled causal" + at);
  }
  // Rows of up to 1024 are one invocation's each, longer ones a workgroup's.
  const Tensor big = wave({1, 1100, 1100}, 6.0);
  expect_close(softmax(dev(big), -1, 0.3, true), softmax(big, -1, 0.3, true), 1e-5,
               "causal, rows a workgroup shares");
  const Tensor x = wave({6, 5}, 3.0);
  expect_close(softmax(transpose(dev(x), 0, 1), -1, 1.0, true),
               softmax(transpose(x, 0, 1), -1, 1.0, true), 1e-5, "causal transposed");
}

TEST_F(Vulkan, SoftmaxBackwardMatchesTheCpu) {
  const Tensor x = wave({3, 5000}, 3.0), g = wave({5000, 3}, 2.0, 0.3);
  const Tensor y = softmax(x, 1), ly = log_softmax(x, 1), gt = transpose(g, 0, 1);
  expect_close(softmax_backward(dev(gt), dev(y), 1), softmax_backward(gt, y, 1), 1e-5,
               "softmax_backward rows, transposed g");
  expect_close(log_softmax_backward(dev(gt), dev(ly), -1), log_softmax_backward(gt, ly, -1), 1e-5,
               "log_softmax_backward rows");
  const Tensor y0 = softmax(x, 0), ly0 = log_softmax(x, 0);
  expect_close(softmax_backward(dev(gt), dev(y0), 0), softmax_backward(gt, y0, 0), 1e-5,
               "softmax_backward along dim 0");
  expect_close(log_softmax_backward(dev(gt), dev(ly0), 0), log_softmax_backward(gt, ly0, 0), 1e-5,
               "log_softmax_backward along dim 0");
  // Gradients through the ops on the device.
  Tensor xd = dev(x).detach();
  xd.set_requires_grad(true);
  Tensor xc = x.detach();
  xc.set_requires_grad(true);
  autograd::backward(sum(softmax(xd, 1, 0.5) * dev(gt)));
  autograd::backward(sum(softmax(xc, 1, 0.5) * gt));
  expect_close(xd.grad(), xc.grad(), 1e-5, "softmax's gradient");
}

// The backward op with its parameter gradients from the same pass (output 1), as autograd runs it
// without create_graph.
Outputs norm_backward_op(OpKind kind, const Tensor& g, const Tensor& x, const Tensor& w,
                         const Shape& ns) {
  Attrs a;
  a.shape = ns;
  a.norm = {.eps = 1e-5, .has_weight = w.defined(), .with_param_grad = true};
  return w.defined() ? dispatch_outputs(kind, {g, x, w}, a) : dispatch_outputs(kind, {g, x}, a);
}

TEST_F(Vulkan, LayerNormMatchesTheCpu) {
  const Tensor x = wave({3, 5000}, 2.0) + 100.0;  // rows longer than a workgroup, off-centre
  const Tensor w = wave({5000}, 1.5, 0.2), b = wave({5000}, 0.5, 0.9);
  const Tensor dx = dev(x), dw = dev(w), db = dev(b);
  const Shape ns{5000};
  expect_close(layer_norm(dx, ns, dw, db, 1e-5), layer_norm(x, ns, w, b, 1e-5), 1e-4, "affine");
  expect_close(layer_norm(slice(dx, 0, 1, 3), ns, slice(dw, 0, 0, 5000), db, 1e-5),
               layer_norm(slice(x, 0, 1, 3), ns, w, b, 1e-5), 1e-4, "rows at an offset");
  expect_close(layer_norm(dx, ns, Tensor(), db, 1e-3), layer_norm(x, ns, Tensor(), b, 1e-3), 1e-4,
               "bias only");
  expect_close(layer_norm(dx, ns, dw, Tensor(), 1e-5), layer_norm(x, ns, w, Tensor(), 1e-5), 1e-4,
               "weight only");
  // Two normalized dims of a transposed view; a NaN row stays NaN; an empty batch.
  const Tensor t = wave({6, 4, 5}, 3.0), tt = transpose(t, 0, 2);
  expect_close(layer_norm(transpose(dev(t), 0, 2), {4, 6}, Tensor(), Tensor(), 1e-5),
               layer_norm(tt, {4, 6}, Tensor(), Tensor(), 1e-5), 1e-4, "transposed, two dims");
  const Tensor s = f32({1, 2, kNaN, 4, 5, 6, 7, 7}, {2, 4});
  expect_close(layer_norm(dev(s), {4}, Tensor(), Tensor(), 1e-5),
               layer_norm(s, {4}, Tensor(), Tensor(), 1e-5), 1e-5, "NaN row, constant row");
  expect_close(layer_norm(dev(f32({}, {0, 4})), {4}, Tensor(), Tensor(), 1e-5),
               layer_norm(f32({}, {0, 4}), {4}, Tensor(), Tensor(), 1e-5), 0, "empty");
}

// Off-centre rows and channels (1000 +- 1): the mean must not lose the spread to rounding (a
// plain float sum of the values did). Further off centre float32 itself, and the CPU's float32
// kernels with it, keep too little of the spread to compare at this tolerance.
TEST_F(Vulkan, NormsOfOffCentreValuesMatchTheCpu) {
  for (const Shape& shape : {Shape{4, 700}, Shape{4, 3000}}) {  // an invocation, a workgroup
    const Tensor x = wave(shape, 1.0) + 1000.0, g = wave(shape, 1.0, 0.3);
    const int64_t n = shape[1];
    const std::string at = " of shape " + shape_str(shape);
    expect_close(layer_norm(dev(x), {n}, Tensor(), Tensor(), 1e-5),
                 layer_norm(x, {n}, Tensor(), Tensor(), 1e-5), 1e-4, "layer_norm" + at);
    expect_close(layer_norm_backward(dev(g), dev(x), {n}, Tensor(), 1e-5),
                 layer_norm_backward(g, x, {n}, Tensor(), 1e-5), 1e-4, "layer_norm_backward" + at);
    const Tensor xt = transpose(x, 0, 1), gt = transpose(g, 0, 1);
    // Against float64: the CPU's float32 batch_norm (x * scale + shift, as torch's) loses the
    // spread of off-centre values, by more than 1e-4 at 1000 +- 1 in a build without FMA.
    expect_close(
        batch_norm(dev(xt), Tensor(), Tensor(), 1e-5),
        cast(batch_norm(cast(xt, DType::Float64), Tensor(), Tensor(), 1e-5), DType::Float32), 1e-4,
        "batch_norm" + at);
    expect_close(batch_norm_param_grad(dev(gt), dev(xt), 1e-5), batch_norm_param_grad(gt, xt, 1e-5),
                 1e-4, "batch_norm_param_grad" + at);
  }
}

TEST_F(Vulkan, LayerNormGradientsMatchTheCpu) {
  // 5000 rows: the weight and bias gradients sum two chunks of rows (4096 each at most).
  const Tensor x = wave({5000, 6}, 2.0) + 10.0, g = wave({6, 5000}, 1.0, 0.41);
  const Tensor w = wave({6}, 1.5, 0.2), gt = transpose(g, 0, 1);
  const Tensor dx = dev(x), dg = transpose(dev(g), 0, 1), dw = dev(w);
  const Shape ns{6};
  expect_close(layer_norm_backward(dg, dx, ns, dw, 1e-5), layer_norm_backward(gt, x, ns, w, 1e-5),
               1e-4, "dx");
  expect_close(layer_norm_backward(dg, dx, ns, Tensor(), 1e-5),
               layer_norm_backward(gt, x, ns, Tensor(), 1e-5), 1e-4, "dx without weight");
  expect_close(layer_norm_param_grad(dg, dx, ns, 1e-5), layer_norm_param_grad(gt, x, ns, 1e-5),
               1e-4, "param grad");
  const Outputs got = norm_backward_op(OpKind::LayerNormBackward, dg, dx, dw, ns);
  const Outputs want = norm_backward_op(OpKind::LayerNormBackward, gt, x, w, ns);
  expect_close(got[0], want[0], 1e-4, "dx of the one pass");
  expect_close(got[1], want[1], 1e-4, "param grad of the one pass");
  const Tensor none = f32({}, {0, 6});  // no rows: zero parameter gradients
  expect_close(layer_norm_param_grad(dev(none), dev(none), ns, 1e-5),
               layer_norm_param_grad(none, none, ns, 1e-5), 0, "param grad of no rows");
  expect_close(norm_backward_op(OpKind::LayerNormBackward, dev(none), dev(none), dw, ns)[1],
               norm_backward_op(OpKind::LayerNormBackward, none, none, w, ns)[1], 0,
               "one pass of no rows");
  const Tensor x3 = wave({2, 3, 700}, 1.0), g3 = wave({2, 3, 700}, 1.0, 0.1);
  expect_close(layer_norm_param_grad(dev(g3), dev(x3), {3, 700}, 1e-5),
               layer_norm_param_grad(g3, x3, {3, 700}, 1e-5), 1e-4, "param grad, two dims");
}

TEST_F(Vulkan, BatchNormMatchesTheCpu) {
  const Tensor x = wave({3, 4, 2000}, 2.0) - 50.0;  // channels of 6000 values in 3 segments
  const Tensor w = f32({0.5, -1, 2, 1.25}, {4}), b = f32({0, 1, -2, 0.5}, {4});
  const BatchNormResult got = batch_norm_with_stats(dev(x), dev(w), dev(b), 1e-5);
  const BatchNormResult want = batch_norm_with_stats(x, w, b, 1e-5);
  expect_close(got.y, want.y, 1e-4, "y");
  expect_close(got.stats, want.stats, 1e-4, "stats");
  expect_close(batch_norm(slice(dev(x), 0, 1, 3), Tensor(), Tensor(), 1e-5),
               batch_norm(slice(x, 0, 1, 3), Tensor(), Tensor(), 1e-5), 1e-4, "at an offset");
  const Tensor x2 = wave({5, 3}, 1.0);  // (N, C) input, transposed on the device
  expect_close(batch_norm(transpose(dev(contiguous(transpose(x2, 0, 1))), 0, 1), Tensor(),
                          dev(f32({1, 2, 3}, {3})), 1e-5),
               batch_norm(x2, Tensor(), f32({1, 2, 3}, {3}), 1e-5), 1e-4, "2-d, bias only");
  const Tensor x4 = wave({2, 3, 4, 5}, 1.0);
  expect_close(batch_norm(permute(dev(x4), {0, 1, 3, 2}), dev(slice(w, 0, 0, 3)), Tensor(), 1e-3),
               batch_norm(permute(x4, {0, 1, 3, 2}), slice(w, 0, 0, 3), Tensor(), 1e-3), 1e-4,
               "4-d permuted, weight only");
  const BatchNormResult empty =
      batch_norm_with_stats(dev(f32({}, {0, 3, 2})), Tensor(), Tensor(), 1e-5);
  expect_close(empty.stats,
               batch_norm_with_stats(f32({}, {0, 3, 2}), Tensor(), Tensor(), 1e-5).stats, 0,
               "statistics of no values: NaN");
}

TEST_F(Vulkan, BatchNormGradientsMatchTheCpu) {
  const Tensor x = wave({3, 4, 2000}, 2.0) + 5.0, g = wave({3, 4, 2000}, 1.0, 0.37);
  const Tensor w = f32({0.5, -1, 2, 1.25}, {4});
  const Tensor dx = dev(x), dg = dev(g), dw = dev(w);
  expect_close(batch_norm_backward(dg, dx, dw, 1e-5), batch_norm_backward(g, x, w, 1e-5), 1e-4,
               "dx");
  expect_close(batch_norm_backward(dg, dx, Tensor(), 1e-5),
               batch_norm_backward(g, x, Tensor(), 1e-5), 1e-4, "dx without weight");
  expect_close(batch_norm_param_grad(dg, dx, 1e-5), batch_norm_param_grad(g, x, 1e-5), 1e-4,
               "param grad");
  const Outputs got = norm_backward_op(OpKind::BatchNormBackward, dg, dx, dw, {});
  const Outputs want = norm_backward_op(OpKind::BatchNormBackward, g, x, w, {});
  expect_close(got[0], want[0], 1e-4, "dx of the one pass");
  expect_close(got[1], want[1], 1e-4, "param grad of the one pass");
  const Tensor x2 = wave({7, 3}, 1.0), g2 = wave({3, 7}, 1.0, 0.2);
  expect_close(
      batch_norm_backward(transpose(dev(g2), 0, 1), dev(x2), dev(f32({1, 2, 3}, {3})), 1e-5),
      batch_norm_backward(transpose(g2, 0, 1), x2, f32({1, 2, 3}, {3}), 1e-5), 1e-4,
      "2-d, transposed g");
}

// Rows of 5000 integers with many ties (across the 4096-element chunks), the extremes of int64,
// and sums and products that wrap around.
Tensor int_rows() {
  std::vector<double> v;
  for (int64_t k = 0; k < 3 * 5000; ++k) v.push_back(static_cast<double>((k * 7919) % 1001 - 500));
  Tensor x = test::ints(v, {3, 5000});
  int64_t* p = x.data<int64_t>();
  p[5000 + 4500] = std::numeric_limits<int64_t>::max();
  p[5000 + 4501] = std::numeric_limits<int64_t>::min();
  for (int64_t k = 0; k < 5000; ++k) p[2 * 5000 + k] = (int64_t{1} << 61) + 3 * k;  // sums wrap
  return x;
}

TEST_F(Vulkan, IntegerReductionsMatchTheCpu) {
  if (!test::device_has_int64()) GTEST_SKIP() << "the device has no shaderInt64";
  const Tensor x = int_rows(), d = dev(x);
  expect_same_ints(sum(d, {1}), sum(x, {1}), "sum int64 rows");
  expect_same_ints(sum(transpose(d, 0, 1), {0, 1}), sum(transpose(x, 0, 1), {0, 1}), "sum all");
  expect_same_ints(prod(d, {1}), prod(x, {1}), "prod int64 rows (wrapping)");
  expect_same_ints(prod(d, {0}, true), prod(x, {0}, true), "prod int64 columns");
  expect_same_ints(amax(d, {1}), amax(x, {1}), "amax int64");
  expect_same_ints(amin(d, {0, 1}), amin(x, {0, 1}), "amin int64 all");
  for (int64_t dim : {0, 1}) {
    const std::string at = " dim " + std::to_string(dim);
    expect_same_ints(max(d, dim).values, max(x, dim).values, "max values" + at);
    expect_same_ints(max(d, dim).indices, max(x, dim).indices, "max indices" + at);
    expect_same_ints(min(d, dim, true).indices, min(x, dim, true).indices, "min indices" + at);
    expect_same_ints(argmax(d, dim), argmax(x, dim), "argmax" + at);
    expect_same_ints(argmin(d, dim), argmin(x, dim), "argmin" + at);
  }
  // int32: ties and views; its sum and prod are int64's (the op casts first).
  const Tensor x32 = cast(remainder(x, test::ints({1000}, {})), DType::Int32), d32 = dev(x32);
  expect_same_ints(amax(transpose(d32, 0, 1), {0}), amax(transpose(x32, 0, 1), {0}), "amax int32");
  expect_same_ints(amin(d32, {1}, true), amin(x32, {1}, true), "amin int32");
  expect_same_ints(argmax(d32, 1), argmax(x32, 1), "argmax int32");
  expect_same_ints(min(d32, 0).indices, min(x32, 0).indices, "min int32 indices");
  expect_same_ints(prod(dev(f32({}, {2, 0})), {1}), prod(f32({}, {2, 0}), {1}), "empty prod");
  expect_same_ints(sum(dev(test::ints({}, {2, 0})), {1}), sum(test::ints({}, {2, 0}), {1}),
                   "empty sum");
}

// Bytes of 0 and 1 at unaligned offsets (8-bit storage), ties across the chunks.
TEST_F(Vulkan, BoolExtremesMatchTheCpu) {
  std::vector<double> v(4 * 5000, 0.0);
  v[4500] = v[4600] = 1;                                     // row 0: the first true past a chunk
  for (size_t k = 5000; k < 10000; ++k) v[k] = 1;            // row 1: all true
  for (size_t k = 10000; k < 15000; ++k) v[k] = k != 14097;  // row 2: one false
  for (size_t k = 15000; k < 20000; ++k) v[k] = k % 3 == 1;  // row 3: mixed
  const Tensor x = from_vector(v, {4, 5000}, DType::Bool), d = dev(x);
  for (int64_t dim : {0, 1}) {
    const std::string at = " dim " + std::to_string(dim);
    expect_same_ints(amax(d, {dim}), amax(x, {dim}), "amax" + at);
    expect_same_ints(amin(d, {dim}, true), amin(x, {dim}, true), "amin" + at);
    expect_same_ints(argmax(d, dim), argmax(x, dim), "argmax" + at);
    expect_same_ints(argmin(d, dim), argmin(x, dim), "argmin" + at);
    expect_same_ints(max(d, dim).values, max(x, dim).values, "max values" + at);
    expect_same_ints(min(d, dim).indices, min(x, dim).indices, "min indices" + at);
  }
  const Tensor s = slice(x, 1, 3, 4999, 2), ds = slice(d, 1, 3, 4999, 2);  // odd byte offsets
  expect_same_ints(argmax(ds, 1), argmax(s, 1), "argmax of an unaligned view");
  expect_same_ints(amin(transpose(ds, 0, 1), {0}), amin(transpose(s, 0, 1), {0}), "amin view");
  expect_same_ints(amax(d), amax(x), "amax all");
}

// float64 to double's rounding: sums compensated in double, mean and var divided in double.
TEST_F(Vulkan, Float64ReductionsMatchTheCpu) {
  if (!test::device_has_float64()) GTEST_SKIP() << "the device has no shaderFloat64";
  const Tensor x = cast(tricky_rows(), DType::Float64), d = dev(x);
  const Tensor w = cast(wave({3, 5000}, 1.0), DType::Float64) + 1e6, dw = dev(w);
  for (int64_t dim : {0, 1}) {
    const std::string at = " dim " + std::to_string(dim);
    expect_close(sum(dw, {dim}), sum(w, {dim}), 1e-13, "sum" + at);
    expect_close(mean(dw, {dim}, true), mean(w, {dim}, true), 1e-13, "mean" + at);
    expect_close(var(dw, {dim}), var(w, {dim}), 1e-12, "var" + at);
    expect_close(var(dw, {dim}, 0.0), var(w, {dim}, 0.0), 1e-12, "var, correction 0" + at);
    expect_close(prod(dev(w * 1e-6), {dim}), prod(w * 1e-6, {dim}), 1e-12, "prod" + at);
    expect_same(amax(d, {dim}), amax(x, {dim}), "amax" + at);
    expect_same(amin(d, {dim}), amin(x, {dim}), "amin" + at);
    expect_same(max(d, dim).indices, max(x, dim).indices, "max indices" + at);
    expect_same(min(d, dim).values, min(x, dim).values, "min values" + at);
    expect_same(argmax(d, dim), argmax(x, dim), "argmax" + at);
    expect_same(argmin(d, dim), argmin(x, dim), "argmin" + at);
  }
  expect_close(sum(transpose(dw, 0, 1), {0, 1}), sum(w, {0, 1}), 1e-13, "sum all, transposed");
  expect_close(mean(d, {1}), mean(x, {1}), 1e-13, "mean with NaN and inf");
  const Tensor none = from_vector({}, {2, 0}, DType::Float64);
  expect_close(mean(dev(none), {1}), mean(none, {1}), 0, "mean of nothing: NaN");
  expect_close(var(dev(none), {1}), var(none, {1}), 0, "var of nothing: NaN");
  const Tensor one = from_vector({1, 2}, {2, 1}, DType::Float64);
  expect_close(var(dev(one), {1}), var(one, {1}), 0, "var of one value: NaN");
}

// float64 norms in double, off centre (1e4 +- 1), rows and channels both ways (an invocation, a
// workgroup), the weight and bias gradients over two chunks of rows.
TEST_F(Vulkan, Float64NormsMatchTheCpu) {
  if (!test::device_has_float64()) GTEST_SKIP() << "the device has no shaderFloat64";
  auto f64 = [](const Tensor& t) { return cast(t, DType::Float64); };
  for (const Shape& shape : {Shape{4, 700}, Shape{4, 3000}}) {
    const Tensor x = f64(wave(shape, 1.0)) + 1e4, g = f64(wave(shape, 1.0, 0.3));
    const int64_t n = shape[1];
    const Tensor w = f64(wave({n}, 1.5, 0.2)), b = f64(wave({n}, 0.5, 0.9));
    const std::string at = " of shape " + shape_str(shape);
    expect_close(layer_norm(dev(x), {n}, dev(w), dev(b), 1e-5), layer_norm(x, {n}, w, b, 1e-5),
                 1e-10, "layer_norm" + at);
    expect_close(layer_norm_backward(dev(g), dev(x), {n}, dev(w), 1e-5),
                 layer_norm_backward(g, x, {n}, w, 1e-5), 1e-10, "layer_norm_backward" + at);
    const Tensor xc = reshape(x, {4, 1, n}), gc = reshape(g, {4, 1, n});
    const BatchNormResult got = batch_norm_with_stats(dev(xc), Tensor(), Tensor(), 1e-5);
    const BatchNormResult want = batch_norm_with_stats(xc, Tensor(), Tensor(), 1e-5);
    expect_close(got.y, want.y, 1e-10, "batch_norm" + at);
    expect_close(got.stats, want.stats, 1e-12, "batch_norm stats" + at);
    expect_close(batch_norm_backward(dev(gc), dev(xc), Tensor(), 1e-5),
                 batch_norm_backward(gc, xc, Tensor(), 1e-5), 1e-10, "batch_norm_backward" + at);
    expect_close(batch_norm_param_grad(dev(gc), dev(xc), 1e-5), batch_norm_param_grad(gc, xc, 1e-5),
                 1e-10, "batch_norm_param_grad" + at);
  }
  const Tensor x = f64(wave({5000, 6}, 2.0)), g = f64(wave({5000, 6}, 1.0, 0.41));
  expect_close(layer_norm_param_grad(dev(g), dev(x), {6}, 1e-5),
               layer_norm_param_grad(g, x, {6}, 1e-5), 1e-10, "layer_norm_param_grad");
}

// ---- vkgaps: the softmax family and logsumexp in float64 ----
// true where the device computes float64 exp and log (vmath.glsl: shaderFloat64 and shaderInt64);
// elsewhere checks that the ops are DTypeErrors naming the device.
bool float64_math_or_errors() {
  if (test::device_has_float64() && test::device_has_int64()) return true;
  const Tensor f = dev(from_vector({1, 2, 3}, {3}, DType::Float64));
  VK_EXPECT_ERROR(softmax(f, 0), DTypeError, "softmax", "vulkan", "float64");
  VK_EXPECT_ERROR(logsumexp(f, {0}), DTypeError, "logsumexp", "vulkan", "float64");
  return false;
}

Tensor as_f64(const Tensor& t) { return cast(t, DType::Float64); }

// Rows an invocation folds alone (700) and rows a workgroup shares (5000), along the last dim and
// along dim 0, scaled (0.1: a double's scale, not a float's), causal, views at offsets, and the
// backward ops. Only the order of the sums differs from the CPU's.
TEST_F(Vulkan, Float64SoftmaxFamilyMatchesTheCpu) {
  if (!float64_math_or_errors()) return;
  const double tol = 1e-13;
  for (const Shape& shape : {Shape{4, 700}, Shape{3, 5000}}) {
    const Tensor x = as_f64(wave(shape, 8.0)), d = dev(x);
    const Tensor g = as_f64(wave(shape, 2.0, 0.3)), dg = dev(g);
    const std::string at = " of shape " + shape_str(shape);
    for (int64_t dim : {0, 1}) {
      const std::string on = at + " dim " + std::to_string(dim);
      expect_close(softmax(d, dim), softmax(x, dim), tol, "softmax" + on);
      expect_close(log_softmax(d, dim), log_softmax(x, dim), tol, "log_softmax" + on);
      const Tensor y = softmax(x, dim), ly = log_softmax(x, dim);
      expect_close(softmax_backward(dg, dev(y), dim), softmax_backward(g, y, dim), tol,
                   "softmax_backward" + on);
      expect_close(log_softmax_backward(dg, dev(ly), dim), log_softmax_backward(g, ly, dim), tol,
                   "log_softmax_backward" + on);
    }
    expect_close(softmax(d, 1, 0.1), softmax(x, 1, 0.1), tol, "scaled by 0.1" + at);
    expect_close(softmax(transpose(d, 0, 1), 0, 0.1), softmax(transpose(x, 0, 1), 0, 0.1), tol,
                 "scaled softmax of a transposed view" + at);
    expect_close(softmax(slice(d, 0, 1, 3), 1), softmax(slice(x, 0, 1, 3), 1), tol,
                 "rows at an offset" + at);
  }
  for (const Shape& shape : {Shape{2, 3, 7, 300}, Shape{1, 1100, 1100}}) {
    const Tensor x = as_f64(wave(shape, 6.0));
    expect_close(softmax(dev(x), -1, 0.3, true), softmax(x, -1, 0.3, true), tol,
                 "scaled causal of shape " + shape_str(shape));
  }
  // NaN, -inf and +inf rows; a row of -inf gives NaN, as on the CPU.
  const Tensor s = as_f64(f32(
      {1, kNaN, 2, 3, -kInf, -kInf, -kInf, -kInf, kInf, 1, -kInf, 0, 1, 2, -kInf, kInf}, {4, 4}));
  expect_close(softmax(dev(s), 1), softmax(s, 1), tol, "softmax special values");
  expect_close(log_softmax(dev(s), 1), log_softmax(s, 1), tol, "log_softmax special values");
  const Tensor none = from_vector({}, {3, 0}, DType::Float64);
  expect_close(softmax(dev(none), 1), softmax(none, 1), 0, "empty rows");
}

// Where the order of the sums cannot matter, the device's exp is the CPU's (vmath.glsl's port
// of vmath.h) to a few ulp over its whole range: rows of two (exp(x - max) and 1 add the same
// either way round), and log_softmax_backward with one-hot g (the sum is 1 exactly: dx = g -
// exp(y)).
TEST_F(Vulkan, Float64SoftmaxUsesTheCpusExp) {
  if (!float64_math_or_errors()) return;
  std::vector<double> pairs, ys, onehot;
  for (int k = 0; k < 2000; ++k) {
    const double v = -745.0 + 0.37 * k;  // down to exp's subnormal results
    pairs.insert(pairs.end(), {v, 0.0});
    ys.push_back(v);
    onehot.push_back(k % 50 == 7 ? 1.0 : 0.0);
  }
  const Tensor p = from_vector(pairs, {2000, 2}, DType::Float64);
  expect_ulps(softmax(dev(p), 1), softmax(p, 1), 8, "softmax of pairs");
  const Tensor y = from_vector(ys, {40, 50}, DType::Float64);
  const Tensor g = from_vector(onehot, {40, 50}, DType::Float64);
  expect_ulps(log_softmax_backward(dev(g), dev(y), 1), log_softmax_backward(g, y, 1), 4,
              "log_softmax_backward, one-hot g");
}

// logsumexp in float64: NaN, infinities, ties across the reduction's chunks, several dims.
TEST_F(Vulkan, Float64LogSumExpMatchesTheCpu) {
  if (!float64_math_or_errors()) return;
  const Tensor x = as_f64(tricky_rows()), d = dev(x);
  expect_close(logsumexp(d, {1}), logsumexp(x, {1}), 1e-14, "logsumexp rows");
  expect_close(logsumexp(d * 30.0, {0}, true), logsumexp(x * 30.0, {0}, true), 1e-14,
               "logsumexp columns, large values");
  const Tensor x3 = reshape(x, {6, 50, 100});
  expect_close(logsumexp(permute(dev(x3), {1, 0, 2}), {0, 2}),
               logsumexp(permute(x3, {1, 0, 2}), {0, 2}), 1e-14, "logsumexp two dims");
  const Tensor w = as_f64(wave({3, 5000}, 1.0)) * 1e-3 + 700.0;  // near exp's overflow
  expect_close(logsumexp(dev(w), {1}), logsumexp(w, {1}), 1e-14, "logsumexp near 700");
  const Tensor none = from_vector({}, {3, 0}, DType::Float64);
  expect_close(logsumexp(dev(none), {1}), logsumexp(none, {1}), 0, "logsumexp empty: -inf");
}

TEST_F(Vulkan, ReductionsOfOtherDtypesAreDTypeErrors) {
  const Tensor i = dev(arange(0, 4));
  EXPECT_THROW(softmax(i, 0), DTypeError);  // as on the CPU
}
// ---- end vkgaps ----

// Fixed-order folds: the same inputs give the same bits every time.
TEST_F(Vulkan, ResultsAreBitwiseRepeatable) {
  const Tensor x = dev(wave({3, 9000}, 5.0)), g = dev(wave({3, 9000}, 1.0, 0.2));
  auto twice = [](const std::function<Tensor()>& f, const char* what) {
    const Tensor a = to_cpu(f()), b = to_cpu(f());
    EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)), 0) << what;
  };
  twice([&] { return sum(x, {1}); }, "sum");
  twice([&] { return var(x, {0, 1}); }, "var");
  twice([&] { return logsumexp(x, {1}); }, "logsumexp");
  twice([&] { return softmax(x, 1); }, "softmax");
  twice([&] { return layer_norm_backward(g, x, {9000}, Tensor(), 1e-5); }, "layer_norm_backward");
  twice([&] { return layer_norm_param_grad(transpose(g, 0, 1), transpose(x, 0, 1), {3}, 1e-5); },
        "layer_norm_param_grad");
}

// The op sweep's cases of these ops, forward only: the sweep (test_vulkan_sweep.cpp) also takes
// gradients, and some of theirs (eq, scatter_add) may have no Vulkan kernel yet, which keeps the
// whole case off the device there.
TEST_F(Vulkan, SweepCasesRunForwardOnTheDevice) {
  const std::set<OpKind> ours = {OpKind::Amax,
                                 OpKind::Amin,
                                 OpKind::MaxDim,
                                 OpKind::MinDim,
                                 OpKind::Prod,
                                 OpKind::ArgMax,
                                 OpKind::ArgMin,
                                 OpKind::LogSumExp,
                                 OpKind::Var,
                                 OpKind::Softmax,
                                 OpKind::LogSoftmax,
                                 OpKind::SoftmaxBackward,
                                 OpKind::LogSoftmaxBackward,
                                 OpKind::LayerNorm,
                                 OpKind::LayerNormBackward,
                                 OpKind::LayerNormParamGrad,
                                 OpKind::BatchNorm,
                                 OpKind::BatchNormBackward,
                                 OpKind::BatchNormParamGrad,
                                 OpKind::Sum,
                                 OpKind::Mean};
  int ran = 0;
  NoGradGuard no_grad;
  for (const test::OpCase& c : test::op_cases()) {
    if (!ours.count(c.kind)) continue;
    manual_seed(1234);
    std::vector<Tensor> cpu, gpu;
    for (const Tensor& x : c.inputs()) {
      cpu.push_back(is_floating(x.dtype()) ? cast(x.detach(), DType::Float32) : x.detach());
      gpu.push_back(dev(cpu.back()));
    }
    const Tensor want = c.fn(cpu), got = c.fn(gpu);
    if (is_floating(want.dtype()))
      expect_close(got, want, 1e-5, c.name);
    else
      expect_same(got, want, c.name);
    ++ran;
  }
  EXPECT_GT(ran, 60);
}

// Rows of 2^20: a workgroup's invocations make 3 * 8192 loop iterations in all, well under the
// 65535 after which lavapipe silently stops a shader; one more element is an error naming the op.
TEST_F(Vulkan, RowsAtTheLoopBoundMatchTheCpu) {
  const int64_t n = int64_t{1} << 20;
  const Tensor x = wave({1, n}, 3.0), dx = dev(x);
  expect_close(softmax(dx, 1), softmax(x, 1), 1e-5, "softmax");
  expect_close(log_softmax_backward(dx, dx, 1), log_softmax_backward(x, x, 1), 1e-5,
               "log_softmax_backward");
  expect_close(layer_norm(dx, {n}, Tensor(), Tensor(), 1e-5),
               layer_norm(x, {n}, Tensor(), Tensor(), 1e-5), 1e-4, "layer_norm");
  const Tensor xc = reshape(x, {1024, 1, 1024});  // one channel of 2^20 values in 1024 segments
  expect_close(batch_norm(dev(xc), Tensor(), Tensor(), 1e-5),
               batch_norm(xc, Tensor(), Tensor(), 1e-5), 1e-4, "batch_norm");
  // Six reduced dims that do not merge: 4096 * 7 iterations a chunk.
  const Tensor y = wave({2, 3, 4, 5, 6, 7}, 2.0);
  const Tensor yt = permute(y, {5, 4, 3, 2, 1, 0}), dyt = permute(dev(y), {5, 4, 3, 2, 1, 0});
  expect_close(sum(dyt, {0, 1, 2, 3, 4, 5}), sum(yt, {0, 1, 2, 3, 4, 5}), 1e-5, "sum of 6 dims");
  expect_same(argmin(reshape(dyt, {-1}), 0), argmin(reshape(yt, {-1}), 0), "argmin of 6 dims");
  expect_same(amax(dyt, {0, 1, 2, 3, 4, 5}), amax(yt, {0, 1, 2, 3, 4, 5}), "amax of 6 dims");
}

// vkfix: these were SizeErrors; they run in passes now (against the CPU in
// test_vulkan_limits.cpp), here on constant rows whose results are known exactly.
TEST_F(Vulkan, RowsPastTheLoopBoundRunInPasses) {
  const int64_t n = (int64_t{1} << 20) + 1;
  const Tensor x = full({2, n}, 0.5, DType::Float32, kVulkan);
  const std::vector<double> causal = host(softmax(x, 1, 1.0, true));
  EXPECT_EQ(causal[0], 1.0);
  EXPECT_EQ(causal[1], 0.0);
  EXPECT_EQ(causal[n], 0.5);
  EXPECT_EQ(causal[n + 1], 0.5);
  EXPECT_EQ(causal[n + 2], 0.0);
  EXPECT_EQ(host(amax(layer_norm(x, {n}, Tensor(), Tensor(), 1e-5), {0, 1}))[0], 0.0);
  EXPECT_EQ(host(amax(batch_norm(reshape(x, {2 * n, 1}), Tensor(), Tensor(), 1e-5), {0, 1}))[0],
            0.0);
  EXPECT_EQ(host(sum(x, {1}))[0], 0.5 * static_cast<double>(n));  // reductions chunk
}

// ---- vkgaps: the softmax family over rows past the one-pass bound, in passes ----
// Rows of 2^20 + 1 (one past the bound): plain, with a NaN, and all -inf but one 0; along the last
// dim and along dim 0 (rows `inner` apart), scaled, the backward ops, and float64.
TEST_F(Vulkan, SoftmaxRowsPastTheLoopBoundGoInPasses) {
  const int64_t n = (int64_t{1} << 20) + 1;
  Tensor x = contiguous(wave({3, n}, 3.0));
  float* p = x.data<float>();
  p[n + 12345] = std::nanf("");
  std::fill(p + 2 * n, p + 3 * n, -std::numeric_limits<float>::infinity());
  p[2 * n + n / 2] = 0.0f;
  const Tensor d = dev(x);
  expect_close(softmax(d, 1), softmax(x, 1), 1e-5, "softmax");
  expect_close(log_softmax(d, 1), log_softmax(x, 1), 1e-5, "log_softmax");
  expect_close(softmax(d, 1, 0.3), softmax(x, 1, 0.3), 1e-5, "scaled softmax");
  const Tensor xt = transpose(slice(x, 0, 0, 2), 0, 1);  // (n, 2): rows along dim 0, 2 apart
  expect_close(log_softmax(transpose(slice(d, 0, 0, 2), 0, 1), 0), log_softmax(xt, 0), 1e-5,
               "log_softmax along dim 0");
  const Tensor w = contiguous(wave({2, n}, 3.0)), g = contiguous(wave({2, n}, 1.0, 0.3));
  const Tensor y = softmax(w, 1), ly = log_softmax(w, 1);
  expect_close(softmax_backward(dev(g), dev(y), 1), softmax_backward(g, y, 1), 1e-5,
               "softmax_backward");
  expect_close(log_softmax_backward(dev(g), dev(ly), 1), log_softmax_backward(g, ly, 1), 1e-5,
               "log_softmax_backward");
  if (!float64_math_or_errors()) return;
  const Tensor w64 = as_f64(w), g64 = as_f64(g), y64 = softmax(w64, 1);
  expect_close(softmax(dev(w64), 1, 0.1), softmax(w64, 1, 0.1), 1e-12, "float64 scaled softmax");
  expect_close(softmax_backward(dev(g64), dev(y64), 1), softmax_backward(g64, y64, 1), 1e-12,
               "float64 softmax_backward");
}
// ---- end vkgaps ----

}  // namespace
}  // namespace vk
