// vkfix: the index ops on the Vulkan device without a host read-back (issue 14, item 3: the host
// waits only when it reads). index_select, gather and scatter_add check their index on the
// device: an index out of range raises IndexError, naming the op, the index and the size, at the
// next host read or synchronize() (Context::expect_in_range). scatter_add inverts its index on the
// device (a stable sort of bucket keys) and still adds in the CPU's order, bit for bit.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "vkml/nn/functional.h"
#include "vkml/ops/math.h"  // hostwait: fmod
#include "vulkan_fixture.h"

namespace vk {
namespace {

using test::host;
using test::ints;
using test::kVulkan;
using Vulkan = test::VulkanTest;

uint64_t host_waits() { return vulkan::stats().host_waits; }

// Regression (the index ops read their index back to check it: a host wait per
// cross-entropy or embedding step): an index out of range is raised at the next read, not at the
// call, and names the op, the index, the dim and the size.
TEST_F(Vulkan, AnIndexOutOfRangeIsRaisedAtTheNextReadNamingTheOp) {
  const Tensor x = to_device(cast(ints({1, 2, 3, 4, 5, 6}, {2, 3}), DType::Float32), kVulkan);
  vulkan::synchronize();
  const uint64_t waits = host_waits();
  Tensor picked;
  EXPECT_NO_THROW(picked = index_select(x, 1, to_device(ints({1, 7}, {2}), kVulkan)));
  EXPECT_EQ(host_waits(), waits) << "the call waited for the device";
  VK_EXPECT_ERROR(host(picked), IndexError, "index_select", "index 7", "dim 1", "size 3");
  // Raised once: the next read is a plain read.
  EXPECT_EQ(host(index_select(x, 1, to_device(ints({2, 0}, {2}), kVulkan))),
            (std::vector<double>{3, 1, 6, 4}));
  const Tensor g = gather(x, 1, to_device(ints({0, 1, 2, 2, -1, 0}, {2, 3}), kVulkan));
  VK_EXPECT_ERROR(vulkan::synchronize(), IndexError, "gather", "index -1", "size 3");
  // int64 values past 32 bits, and int32 indices.
  const Tensor far = to_device(ints({0, 4294967297.0}, {2}), kVulkan);
  VK_EXPECT_ERROR(host(index_select(x, 1, far)), IndexError, "index 4294967297");
  const Tensor i32 = to_device(cast(ints({-5, 0}, {2}), DType::Int32), kVulkan);
  VK_EXPECT_ERROR(host(index_select(x, 0, i32)), IndexError, "index_select", "index -5", "size 2");
  const Tensor s = scatter_add(x, 1, to_device(ints({0, 3, 0, 1, 1, 1}, {2, 3}), kVulkan), x);
  VK_EXPECT_ERROR(host(s), IndexError, "scatter_add", "index 3", "dim 1", "size 3");
  const Tensor s1 = scatter_add(x, 1, to_device(ints({-2}, {1, 1}), kVulkan), x);
  VK_EXPECT_ERROR(host(s1), IndexError, "scatter_add", "index -2", "dim 1", "size 3");
  // The error of a read nobody made is raised by the next read of anything.
  const Tensor unread = gather(x, 0, to_device(ints({2, 0, 0}, {1, 3}), kVulkan));
  VK_EXPECT_ERROR(host(x), IndexError, "gather", "index 2", "dim 0", "size 2");
  vulkan::synchronize();
}

// A step of an embedding and a cross-entropy, with its backward (index_select, gather and their
// gradients, scatter_add) and an SGD update, records with no host wait; the loss read is the
// first, and the values are the CPU's.
TEST_F(Vulkan, AnEmbeddingCrossEntropyStepWaitsOnlyWhenTheLossIsRead) {
  const Tensor w0 = cast(test::leaf({7, 5}), DType::Float32).detach();
  const Tensor tokens = ints({3, 1, 3, 6, 0, 3, 2, 1}, {2, 4});
  const Tensor targets = ints({4, 0, 4, 4, 1, 2, 3, 4}, {8});
  auto step = [&](Device dev, uint64_t* waits_before_read) {
    Tensor w = to_device(w0, dev).detach();
    w.set_requires_grad(true);
    const Tensor t = to_device(tokens, dev), y = to_device(targets, dev);
    if (!dev.is_cpu()) vulkan::synchronize();
    const uint64_t before = dev.is_cpu() ? 0 : host_waits();
    const Tensor e = nn::functional::embedding(t, w);  // (2, 4, 5): 5 classes
    const Tensor loss = nn::functional::cross_entropy(reshape(e, {8, 5}), y);
    autograd::backward(loss);
    const Tensor w1 = w.detach() - w.grad() * 0.5;
    if (!dev.is_cpu()) *waits_before_read = host_waits() - before;
    return std::vector<Tensor>{loss, w1};
  };
  uint64_t waits = 99;
  const std::vector<Tensor> want = step(kCPU, nullptr), got = step(kVulkan, &waits);
  EXPECT_EQ(waits, 0u) << "the step waited for the device before its loss was read";
  test::expect_values(to_cpu(got[0]), to_vector(want[0]), 1e-6);
  test::expect_values(to_cpu(got[1]), to_vector(want[1]), 1e-6);
  // A target class out of range: gather's IndexError at the read.
  const Tensor bad = to_device(ints({0, 5}, {2}), kVulkan);
  const Tensor logits = to_device(cast(test::leaf({2, 5}), DType::Float32), kVulkan);
  VK_EXPECT_ERROR(host(nn::functional::cross_entropy(logits, bad)), IndexError, "index 5",
                  "size 5");
}

// scatter_add's sums, inverted on the device, in the CPU's order: bitwise the CPU's and bitwise
// the same from run to run, with many repeats per bucket, several lines, a broadcast index, and
// more positions along dim than one pass adds (kScatterChunk = 4096).
TEST_F(Vulkan, ScatterAddInvertedOnTheDeviceIsBitwiseTheCpusEveryRun) {
  auto values = [](const Shape& s, double seed) {
    std::vector<double> v(static_cast<size_t>(numel_of(s)));
    for (size_t i = 0; i < v.size(); ++i) {
      const double r = std::sin(seed + 12.9898 * static_cast<double>(i)) * 43758.5453;
      v[i] = (r - std::floor(r) - 0.5) * std::pow(10.0, static_cast<double>(i % 7) - 3.0);
    }
    return cast(test::values(v, s, false), DType::Float32);
  };
  auto index = [](const Shape& s, int64_t size) {
    std::vector<double> v(static_cast<size_t>(numel_of(s)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7 + i / 5) % size);
    return ints(v, s);
  };
  struct Case {
    Shape base, index;
    int64_t dim;
  };
  for (const Case& c :
       {Case{{2, 6}, {9000, 6}, 0}, Case{{4, 3, 5}, {4, 40, 5}, 1}, Case{{3, 7}, {3, 7}, 1}}) {
    const Tensor base = values(c.base, 1.0), src = values(c.index, 2.0);
    const Tensor idx = index(c.index, c.base[static_cast<size_t>(c.dim)]);
    const Tensor want = scatter_add(base, c.dim, idx, src);
    const Tensor db = to_device(base, kVulkan), di = to_device(idx, kVulkan),
                 ds = to_device(src, kVulkan);
    const Tensor first = to_cpu(scatter_add(db, c.dim, di, ds));
    const Tensor second = to_cpu(scatter_add(db, c.dim, di, ds));
    const std::string what = shape_str(c.index);
    ASSERT_EQ(first.numel(), want.numel()) << what;
    EXPECT_EQ(std::memcmp(first.data<float>(), want.data<float>(), want.numel() * sizeof(float)), 0)
        << what << ": not bitwise the CPU's";
    EXPECT_EQ(std::memcmp(first.data<float>(), second.data<float>(), want.numel() * sizeof(float)),
              0)
        << what << ": two runs differ";
  }
  // An index broadcast along the other dims (index_select's gradient): one line for all.
  const Tensor base = values({6, 4}, 3.0), src = values({50, 4}, 4.0);
  const Tensor row = index({50, 1}, 6);
  const Tensor idx = expand(row, {50, 4});
  const Tensor want = scatter_add(base, 0, idx, src);
  const Tensor got =
      to_cpu(scatter_add(to_device(base, kVulkan), 0, expand(to_device(row, kVulkan), {50, 4}),
                         to_device(src, kVulkan)));
  EXPECT_EQ(std::memcmp(got.data<float>(), want.data<float>(), want.numel() * sizeof(float)), 0);
}

}  // namespace
}  // namespace vk

// ---- hostwait (issue #14) ----
namespace vk {
namespace {

using test::host;
using test::ints;
using test::kVulkan;
using Vulkan = test::VulkanTest;

// Regression (integer //, %, ** and fmod read a flag back to check for a zero divisor or a
// negative exponent: a host wait per call): the checks raise through the error word, with
// torch's error text, at the next host read; good inputs give the CPU's values.
TEST_F(Vulkan, IntegerDivisionAndPowerDoNotWaitAndRaiseAtTheNextRead) {
  for (DType t : {DType::Int32, DType::Int64}) {
    const Tensor a = to_device(cast(ints({7, -7, 5, -9}, {4}), t), kVulkan);
    const Tensor b = to_device(cast(ints({2, 3, -4, 0}, {4}), t), kVulkan);
    const Tensor e = to_device(cast(ints({2, -1, 3, 0}, {4}), t), kVulkan);
    vulkan::synchronize();
    const uint64_t waits = vulkan::stats().host_waits;
    // One error per read: the first raised is reported and the word cleared (context.h).
    const Tensor q = floor_divide(a, b);
    EXPECT_EQ(vulkan::stats().host_waits, waits) << "floor_divide waited for the device";
    VK_EXPECT_ERROR(host(q), RuntimeError, "floor_divide: ZeroDivisionError");
    vulkan::synchronize();
    const uint64_t waits2 = vulkan::stats().host_waits;
    const Tensor r = remainder(a, b);
    EXPECT_EQ(vulkan::stats().host_waits, waits2) << "remainder waited for the device";
    VK_EXPECT_ERROR(host(r), RuntimeError, "remainder: ZeroDivisionError");
    VK_EXPECT_ERROR(host(fmod(a, b)), RuntimeError, "fmod: ZeroDivisionError");
    EXPECT_EQ(host(pow(a, e)), host(pow(to_cpu(a), to_cpu(e))));  // negative exponents: values
    const Tensor ok = to_device(cast(ints({2, 3, -4, 5}, {4}), t), kVulkan);
    EXPECT_EQ(host(floor_divide(a, ok)), host(floor_divide(to_cpu(a), to_cpu(ok))));
  }
}

// one_hot with num_classes checks its classes on the device (RuntimeError, torch's text).
TEST_F(Vulkan, OneHotWithNumClassesDoesNotWait) {
  const Tensor idx = to_device(ints({0, 3, 1}, {3}), kVulkan);
  vulkan::synchronize();
  const uint64_t waits = vulkan::stats().host_waits;
  const Tensor good = nn::functional::one_hot(idx, 4);
  EXPECT_EQ(vulkan::stats().host_waits, waits) << "one_hot waited for the device";
  EXPECT_EQ(host(good), host(nn::functional::one_hot(to_cpu(idx), 4)));
  vulkan::synchronize();
  const uint64_t waits2 = vulkan::stats().host_waits;
  const Tensor bad = nn::functional::one_hot(idx, 3);
  EXPECT_EQ(vulkan::stats().host_waits, waits2) << "one_hot waited for the device";
  VK_EXPECT_ERROR(host(bad), RuntimeError,
                  "one_hot: Class values must be smaller than num_classes");
}

}  // namespace
}  // namespace vk
