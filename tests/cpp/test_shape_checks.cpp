// Size arithmetic (issue 12, item 14): the checked helpers of core/shape.h, and the ops whose
// sizes used to wrap around (expand, pad, cat, reshape, flatten, narrow, eye, conv windows);
// view's viewability rule; set_num_threads' validation.
#include <limits>

#include "test_util.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/core/geometry.h"

namespace vk::test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2_32 = int64_t{1} << 32;
constexpr int64_t k2_40 = int64_t{1} << 40;

// The message of the error `f` throws as E (fails the test when it throws nothing).
template <class E, class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

// ---- the helpers ----

TEST(SizeChecks, CheckedMulDetectsOverflow) {
  EXPECT_EQ(checked_mul(k2_32, k2_32 / 4, "op"), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(-3, 4, "op"), -12);
  std::string msg = message_of<SizeError>([] { checked_mul(k2_32, k2_32, "expand"); });
  EXPECT_NE(msg.find("expand"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4294967296 * 4294967296"), std::string::npos) << msg;
  EXPECT_THROW(checked_mul(kMax, 2, "op"), SizeError);
}

TEST(SizeChecks, CheckedAddDetectsOverflow) {
  EXPECT_EQ(checked_add(kMax - 1, 1, "op"), kMax);
  EXPECT_EQ(checked_add(5, -7, "op"), -2);
  std::string msg = message_of<SizeError>([] { checked_add(kMax, 1, "pad"); });
  EXPECT_NE(msg.find("pad"), std::string::npos) << msg;
}

TEST(SizeChecks, SizeErrorIsAShapeError) {
  EXPECT_THROW(checked_add(kMax, kMax, "op"), ShapeError);  // vkml's contract for bad shapes
}

TEST(SizeChecks, NumelOfRejectsNegativeAndOverflowingShapes) {
  EXPECT_EQ(numel_of({2, 3, 4}), 24);
  EXPECT_EQ(numel_of({}), 1);
  EXPECT_EQ(numel_of({0, 5}), 0);
  std::string msg = message_of<SizeError>([] { numel_of({2, -1}, "zeros"); });
  EXPECT_NE(msg.find("zeros: negative dimension -1"), std::string::npos) << msg;
  msg = message_of<SizeError>([] { numel_of({k2_32, k2_32}, "expand"); });
  EXPECT_NE(msg.find("expand"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4294967296, 4294967296]"), std::string::npos) << msg;
  // No element, but its row-major strides overflow: torch rejects it too.
  EXPECT_THROW(numel_of({0, k2_40, k2_40}), SizeError);
  EXPECT_THROW(numel_of({k2_40, 0, k2_40}), SizeError);
}

TEST(SizeChecks, ContiguousStridesRejectOverflow) {
  EXPECT_EQ(contiguous_strides({2, 0, 3}), (Strides{3, 3, 1}));
  EXPECT_EQ(contiguous_strides({k2_40, k2_40 / 2}), (Strides{k2_40 / 2, 1}));  // outermost unused
  EXPECT_THROW(contiguous_strides({2, k2_40, k2_40}), SizeError);
}

TEST(SizeChecks, BroadcastShapesRejectsUncountableResult) {
  EXPECT_EQ(broadcast_shapes({k2_32, 1}, {1, 3}, "add"), (Shape{k2_32, 3}));
  std::string msg = message_of<SizeError>([] { broadcast_shapes({k2_32, 1}, {1, k2_32}, "add"); });
  EXPECT_NE(msg.find("add"), std::string::npos) << msg;
}

TEST(SizeChecks, WindowOutChecksPaddingAndDilation) {
  EXPECT_EQ(window_out(5, 3, 1, 1, 1), 5);
  EXPECT_EQ(window_out(5, 3, 2, 0, 2), 1);
  EXPECT_EQ(window_out(2, 3, 1, 0, 1), 0);  // kernel larger than the input
  EXPECT_THROW(window_out(5, 3, 1, kMax / 2 + 1, 1, "conv2d"), SizeError);
  EXPECT_THROW(window_out(5, kMax, 1, 0, 2, "conv2d"), SizeError);
}

// ---- ops ----

TEST(SizeChecks, ExpandToUncountableShapeRaises) {
  Tensor x = ones({1, 1});
  std::string msg = message_of<SizeError>([&] { expand(x, {k2_32, k2_32}); });
  EXPECT_NE(msg.find("expand"), std::string::npos) << msg;
  EXPECT_EQ(expand(x, {k2_32, 2}).numel(), k2_32 * 2);  // large but countable: a free view
  EXPECT_THROW(expand(ones({1}), {-2}), SizeError);
  EXPECT_THROW(expand(ones({1}), {-1, 1}), SizeError);  // -1 in a new leading dim
}

TEST(SizeChecks, BinaryOpBroadcastOverflowRaises) {
  Tensor a = expand(ones({1, 1}), {k2_32, 1}), b = expand(ones({1, 1}), {1, k2_32});
  EXPECT_THROW(add(a, b), SizeError);
}

TEST(SizeChecks, PadOverflowRaises) {
  std::string msg = message_of<SizeError>([] { pad(ones({2}), {kMax, kMax}); });
  EXPECT_NE(msg.find("pad"), std::string::npos) << msg;
  EXPECT_THROW(pad(ones({2}), {kMax - 1, 1}), SizeError);
  EXPECT_THROW(pad(ones({2}), {-3, 0}), ShapeError);  // negative result
}

TEST(SizeChecks, CatSizeOverflowRaises) {
  Tensor big = expand(ones({1}), {kMax / 2 + 1});  // a view: no memory
  EXPECT_THROW(cat({big, big}, 0), SizeError);
}

TEST(SizeChecks, ReshapeInfersOnlyCountableSizes) {
  Tensor x = ones({2, 3});
  EXPECT_THROW(reshape(x, {k2_40, k2_40, -1}), ShapeError);
  EXPECT_THROW(reshape(x, {-2, 3}), SizeError);
  EXPECT_THROW(reshape(x, {-1, -1}), ShapeError);
  EXPECT_THROW(reshape(ones({0}), {-1, 0}), ShapeError);  // ambiguous
  EXPECT_EQ(reshape(x, {3, -1}).shape(), (Shape{3, 2}));
}

TEST(SizeChecks, SliceWithHugeStepKeepsStride) {
  Tensor x = ones({3, 4});
  Tensor y = slice(x, 0, 0, 3, kMax);  // one row: its stride is never used, must not overflow
  EXPECT_EQ(y.shape(), (Shape{1, 4}));
  EXPECT_EQ(y.strides(), (Strides{4, 1}));
}

TEST(SizeChecks, FlattenStartAfterEndRaises) {
  Tensor x = ones({2, 3});
  std::string msg = message_of<RuntimeError>([&] { flatten(x, 1, 0); });
  EXPECT_NE(msg.find("start_dim cannot come after end_dim"), std::string::npos) << msg;
  EXPECT_THROW(flatten(x, -1, 0), RuntimeError);
  EXPECT_EQ(flatten(x, 1, 1).shape(), (Shape{2, 3}));
}

TEST(SizeChecks, NarrowMatchesTorch) {
  Tensor x = ones({3, 4});
  EXPECT_EQ(narrow(x, 0, 3, 0).shape(), (Shape{0, 4}));
  EXPECT_EQ(narrow(x, 0, -3, 3).shape(), (Shape{3, 4}));
  EXPECT_THROW(narrow(x, 0, 5, 1), IndexError);  // start outside [-3, 3]
  EXPECT_THROW(narrow(x, 0, -4, 1), IndexError);
  EXPECT_THROW(narrow(x, 0, 2, 2), RuntimeError);  // runs past the end
  EXPECT_THROW(narrow(x, 0, 1, kMax), RuntimeError);
  EXPECT_THROW(narrow(x, 0, 1, -1), RuntimeError);
  EXPECT_THROW(narrow(ones({}), 0, 0, 1), RuntimeError);
}

TEST(SizeChecks, EyeRejectsNegativeSizes) {
  EXPECT_THROW(eye(-1), SizeError);
  EXPECT_THROW(eye(2, -1), SizeError);
  EXPECT_EQ(eye(0).shape(), (Shape{0, 0}));
  expect_values(eye(2, 3), {1, 0, 0, 0, 1, 0});
}

TEST(SizeChecks, Im2ColWithHugePaddingRaises) {
  Tensor x = ones({1, 1, 2, 2});
  Window2d w{1, 1, 1, 1, kMax / 2, 0, 1, 1};
  EXPECT_THROW(im2col(x, w), SizeError);
}

// ---- view ----

TEST(View, ContiguousAndSplittableStridesGiveViews) {
  Tensor x = ones({2, 3, 4});
  Tensor v = view(x, {6, 4});
  EXPECT_EQ(v.storage().get(), x.storage().get());
  // Transposing the last two dims keeps dim 0 separable: [2, 4, 3] -> [2, 12] is not viewable,
  // but [2, 4, 3] -> [2, 4, 3, 1] and splitting dim 0 are.
  Tensor t = transpose(x, 1, 2);
  EXPECT_EQ(view(t, {2, 4, 3, 1}).storage().get(), x.storage().get());
  EXPECT_EQ(view(t, {1, 2, 4, 3}).strides(), (Strides{24, 12, 1, 4}));  // as torch
  EXPECT_EQ(view(ones({1}), {}).shape(), Shape{});
}

TEST(View, NonViewableRaisesInsteadOfCopying) {
  Tensor t = transpose(ones({2, 3}), 0, 1);
  std::string msg = message_of<RuntimeError>([&] { view(t, {6}); });
  EXPECT_NE(msg.find("view size is not compatible with input tensor's size and stride"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("Use .reshape(...) instead"), std::string::npos) << msg;
  EXPECT_THROW(view(transpose(ones({2, 3, 4}), 1, 2), {2, 12}), RuntimeError);
  EXPECT_EQ(reshape(t, {6}).shape(), (Shape{6}));  // reshape still copies
  EXPECT_THROW(view(ones({2, 3}), {7}), ShapeError);
}

// ---- threads ----

TEST(Threads, SetNumThreadsValidates) {
  const int saved = cpu::num_threads();
  EXPECT_THROW(cpu::set_num_threads(0), RuntimeError);
  EXPECT_THROW(cpu::set_num_threads(-1), RuntimeError);
  EXPECT_EQ(cpu::num_threads(), saved);
  cpu::set_num_threads(int64_t{1} << 40);  // capped before any thread is made
  EXPECT_GE(cpu::num_threads(), 1024);
  EXPECT_LT(cpu::num_threads(), 1 << 20);
  cpu::set_num_threads(saved);
  EXPECT_EQ(cpu::num_threads(), saved);
}

}  // namespace
}  // namespace vk::test
