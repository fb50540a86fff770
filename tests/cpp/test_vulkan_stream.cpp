// The Vulkan backend's execution model and memory (context.h, allocator.h): the sub-allocator's
// bookkeeping without a device, then on the device: ops recorded and submitted in batches, the
// host waiting only when it reads, memory reused only after the GPU is done with it, the
// optimizer steps on the device.
#include <vector>

#include "vulkan_fixture.h"
#if defined(VKML_HAS_VULKAN)
#include "vkml/backend/vulkan/allocator.h"
#include "vkml/backend/vulkan/context.h"
#endif

namespace vk::test {
namespace {

#if defined(VKML_HAS_VULKAN)
using vulkan::Allocator;
using vulkan::Block;
using vulkan::Buffer;

// Blocks of host memory standing in for device memory; counts what it hands out.
class FakeSource : public vulkan::BlockSource {
 public:
  std::unique_ptr<Block> create_block(VkDeviceSize size, bool host) override {
    if (size > limit) throw MemoryError("fake: no room");
    auto b = std::make_unique<Block>();
    b->size = size;
    b->host = host;
    ++live;
    return b;
  }
  void destroy_block(Block&) noexcept override { --live; }
  int live = 0;
  VkDeviceSize limit = VkDeviceSize{1} << 40;
};

TEST(VulkanAllocator, SmallTensorsShareABlockInAlignedRangesThatNeverOverlap) {
  FakeSource source;
  Allocator a(source, 256);
  std::vector<std::unique_ptr<Buffer>> bufs;
  for (size_t n : {1, 3, 4, 100, 256, 257, 4096, 1000}) bufs.push_back(a.allocate(n));
  EXPECT_EQ(source.live, 1);
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_EQ(bufs[i]->offset % 256, 0u);
    EXPECT_EQ(bufs[i]->size % 4, 0u);
    EXPECT_GE(bufs[i]->size, 4u);  // Vulkan binds no empty range
    for (size_t j = 0; j < i; ++j) {
      const bool apart = bufs[i]->offset + bufs[i]->span <= bufs[j]->offset ||
                         bufs[j]->offset + bufs[j]->span <= bufs[i]->offset;
      EXPECT_TRUE(apart) << i << " overlaps " << j;
    }
  }
  EXPECT_EQ(a.allocated(), 4u + 4 + 4 + 100 + 256 + 260 + 4096 + 1000);
  EXPECT_EQ(a.reserved(), Allocator::kBlockSize);
}

TEST(VulkanAllocator, MemoryInUseByTheGpuReturnsOnlyOnceItsSubmissionCompleted) {
  FakeSource source;
  Allocator a(source, 256);
  std::unique_ptr<Buffer> x = a.allocate(1024);
  const VkDeviceSize x_offset = x->offset;
  x->last_use = 7;  // recorded in submission 7
  a.release(std::move(x), /*completed=*/6);
  EXPECT_EQ(a.allocated(), 0u);
  EXPECT_NE(a.allocate(1024)->offset, x_offset);  // still in flight: not handed out again
  a.collect(6);
  std::unique_ptr<Buffer> y = a.allocate(1024);
  EXPECT_NE(y->offset, x_offset);
  a.collect(7);
  std::unique_ptr<Buffer> z = a.allocate(1024);
  EXPECT_EQ(z->offset, x_offset);  // now it is
}

TEST(VulkanAllocator, FreedRangesCoalesceAndEmptyBlocksGoBackToTheDriver) {
  FakeSource source;
  Allocator a(source, 256);
  {
    std::vector<std::unique_ptr<Buffer>> bufs;
    for (int i = 0; i < 10; ++i) bufs.push_back(a.allocate(1000));
    for (int i : {1, 3, 0, 2, 9, 5, 4, 6, 8, 7}) a.release(std::move(bufs[i]), 0);
  }
  // Coalesced: one range as large as the block fits again.
  std::unique_ptr<Buffer> big = a.allocate(Allocator::kLarge - 256);
  EXPECT_EQ(big->offset, 0u);
  EXPECT_EQ(source.live, 1);
  a.release(std::move(big), 0);
  a.empty_cache();
  EXPECT_EQ(source.live, 0);
  EXPECT_EQ(a.reserved(), 0u);
}

TEST(VulkanAllocator, LargeTensorsGetTheirOwnBlockCachedForTheNextOfTheirSize) {
  FakeSource source;
  Allocator a(source, 256);
  const size_t mib = size_t{1} << 20;
  std::unique_ptr<Buffer> x = a.allocate(20 * mib);
  EXPECT_EQ(x->offset, 0u);
  EXPECT_EQ(source.live, 1);
  a.release(std::move(x), 0);
  std::unique_ptr<Buffer> y = a.allocate(19 * mib + 5);  // fits the cached block closely
  EXPECT_EQ(source.live, 1);
  std::unique_ptr<Buffer> z = a.allocate(20 * mib);  // the cached one is taken: a new block
  EXPECT_EQ(source.live, 2);
  a.release(std::move(z), 0);
  std::unique_ptr<Buffer> w = a.allocate(17 * mib);  // too small for a 20 MiB block: a new one
  EXPECT_EQ(source.live, 3);
}

TEST(VulkanAllocator, AnAllocationTheSourceCannotHoldIsAMemoryError) {
  FakeSource source;
  source.limit = Allocator::kBlockSize;
  Allocator a(source, 256);
  EXPECT_THROW(a.allocate(size_t{1} << 30), MemoryError);
  EXPECT_EQ(a.allocated(), 0u);
}

vulkan::Stats stats() { return vulkan::stats(); }

TEST_F(VulkanTest, OpsAreRecordedAndTheHostWaitsOnlyWhenItReads) {
  const Tensor x = to_device(f32({1, 2, 3, 4}, {4}), kVulkan);
  vulkan::synchronize();
  const vulkan::Stats before = stats();
  Tensor y = x;
  // 60 dispatches, each product needing the sum before: the scalar 0.5 is written by the device
  // (a fill), not copied from the host.
  for (int i = 0; i < 20; ++i) y = y * 0.5 + x;
  const vulkan::Stats recorded = stats();
  EXPECT_EQ(recorded.submissions, before.submissions) << "nothing is submitted before a read";
  EXPECT_EQ(recorded.dispatches - before.dispatches, 60u);
  EXPECT_EQ(recorded.device_to_host, before.device_to_host);
  EXPECT_EQ(recorded.host_to_device, before.host_to_device);
  std::vector<double> want = {1, 2, 3, 4};
  for (int i = 0; i < 20; ++i)
    for (size_t k = 0; k < 4; ++k) want[k] = want[k] * 0.5 + (k + 1.0);
  expect_values(to_cpu(y), want, 1e-4);
  const vulkan::Stats read = stats();
  EXPECT_EQ(read.submissions - before.submissions, 1u);
  EXPECT_EQ(read.device_to_host - before.device_to_host, 1u);
}

TEST_F(VulkanTest, BarriersOnlyWhereOneCommandNeedsAnothersResult) {
  const Tensor a = to_device(f32({1, 2}, {2}), kVulkan), b = to_device(f32({3, 4}, {2}), kVulkan);
  vulkan::synchronize();
  const uint64_t before = stats().barriers;
  const Tensor a1 = a + a, b1 = b * b;  // independent: no barrier between them
  EXPECT_EQ(stats().barriers, before);
  const Tensor c = a1 * b1;  // reads both: one barrier
  EXPECT_EQ(stats().barriers, before + 1);
  EXPECT_EQ(host(c), (std::vector<double>{2 * 9, 4 * 16}));
}

TEST_F(VulkanTest, LongChainsAreSubmittedInBatchesAndStayRight) {
  const Tensor x = to_device(f32({0.5}, {1}), kVulkan);
  vulkan::synchronize();
  const vulkan::Stats before = stats();
  Tensor y = x;
  for (int i = 0; i < 300; ++i) y = y + 1.0;
  EXPECT_EQ(host(y)[0], 300.5);
  const vulkan::Stats after = stats();
  EXPECT_GE(after.submissions - before.submissions, 300u / vulkan::Context::kBatch);
}

// Without host-visible device memory (a discrete GPU; lavapipe under VKML_VULKAN_STAGING=1, as
// ctest's vulkan_tests_staged runs every Vulkan test) each host copy goes through a staging range,
// recorded in stream order: work recorded before an upload into a tensor still reads the old
// values, and a read sees every write recorded before it.
TEST_F(VulkanTest, HostCopiesThroughStagingKeepStreamOrder) {
  const bool staged_only = vulkan::Context::get()->staged_only();
  const vulkan::Stats before = stats();
  const Tensor x = to_device(f32({1, 2, 3, 4}, {4}), kVulkan);
  const Tensor doubled = x * 2.0;         // recorded, reads x
  copy_(x, f32({10, 20, 30, 40}, {4}));   // the host writes x while that work is pending
  const Tensor part = slice(x, 0, 1, 3);  // an upload at an offset into x's memory
  copy_(part, f32({-5, -6}, {2}));
  const Tensor sum_now = x + doubled;
  EXPECT_EQ(host(doubled), (std::vector<double>{2, 4, 6, 8}));
  EXPECT_EQ(host(x), (std::vector<double>{10, -5, -6, 40}));
  EXPECT_EQ(host(sum_now), (std::vector<double>{12, -1, 0, 48}));
  const vulkan::Stats after = stats();
  const uint64_t copies = (after.host_to_device - before.host_to_device) +
                          (after.device_to_host - before.device_to_host);
  EXPECT_GE(copies, 6u);
  if (staged_only) {
    EXPECT_EQ(after.staged - before.staged, copies) << "every copy is staged";
  }
}

// Defect guard: a tensor freed while work that reads it is still recorded must keep its memory
// until that work has run, or a new tensor's upload would overwrite what the work reads.
TEST_F(VulkanTest, MemoryIsReusedOnlyAfterTheGpuIsDoneWithIt) {
  std::vector<Tensor> results;
  for (int round = 0; round < 8; ++round) {
    Tensor x = to_device(f32({1, 2, 3, 4}, {4}), kVulkan);
    results.push_back(x * 2.0);  // recorded, not run
    x = Tensor{};                // x's memory is released while the product is pending
    const Tensor junk = to_device(f32({-9, -9, -9, -9}, {4}), kVulkan);  // same size, uploaded
  }
  for (const Tensor& r : results) EXPECT_EQ(host(r), (std::vector<double>{2, 4, 6, 8}));
}

TEST_F(VulkanTest, DeviceMemoryStaysFlatOverManySteps) {
  Tensor w = to_device(f32({0.1, -0.2, 0.3}, {3}), kVulkan);
  const Tensor x = to_device(f32({1, 2, 3}, {3}), kVulkan);
  auto step = [&] {
    Tensor loss = sum((w * x - 1.0) * (w * x - 1.0));
    Tensor g = 2.0 * (w * x - 1.0) * x;
    w = (w - 0.01 * g).detach();
    return loss;
  };
  for (int i = 0; i < 20; ++i) step();
  vulkan::synchronize();
  const vulkan::Stats warm = stats();
  for (int i = 0; i < 200; ++i) step();
  vulkan::synchronize();
  const vulkan::Stats after = stats();
  EXPECT_EQ(after.allocated, warm.allocated);
  EXPECT_EQ(after.reserved, warm.reserved);
}

TEST_F(VulkanTest, OptimizerStepsRunOnTheDeviceAsOnTheCpu) {
  for (bool adam : {false, true}) {
    Tensor pc = f32({0.5, -1.0, 2.0, 0.25}, {4});
    Tensor pd = to_device(pc, kVulkan);
    const Tensor gc = f32({0.1, -0.3, 0.7, -2.0}, {4});
    const Tensor gd = to_device(gc, kVulkan);
    Tensor bufc, bufd;
    const Tensor mc = zeros({4}, DType::Float32), vc = zeros({4}, DType::Float32),
                 xc = zeros({4}, DType::Float32);
    const Tensor md = to_device(mc, kVulkan), vd = to_device(vc, kVulkan),
                 xd = to_device(xc, kVulkan);
    vulkan::synchronize();
    const vulkan::Stats before = stats();
    for (int64_t step = 1; step <= 3; ++step) {
      if (adam) {
        optim::adam_step_(pc, gc, mc, vc, step, 0.01, 0.9, 0.999, 1e-8, 0.1, true, true, xc);
        optim::adam_step_(pd, gd, md, vd, step, 0.01, 0.9, 0.999, 1e-8, 0.1, true, true, xd);
      } else {
        bufc = optim::sgd_step_(pc, gc, bufc, 0.1, 0.9, 0.0, true, 0.01);
        bufd = optim::sgd_step_(pd, gd, bufd, 0.1, 0.9, 0.0, true, 0.01);
      }
    }
    EXPECT_EQ(stats().device_to_host, before.device_to_host) << "the steps stay on the device";
    expect_values(to_cpu(pd), to_vector(pc), 1e-6);
    if (adam) {
      expect_values(to_cpu(vd), to_vector(vc), 1e-9);
      expect_values(to_cpu(xd), to_vector(xc), 1e-9);
    } else {
      expect_values(to_cpu(bufd), to_vector(bufc), 1e-6);
    }
  }
  // float64 where the device has it (lavapipe does), as the CPU's.
  Tensor p64 = values({0.5, -1.5}, {2}, false), g64 = values({0.25, 3.0}, {2}, false);
  Tensor d64 = to_device(p64, kVulkan);
  optim::sgd_step_(p64, g64, Tensor(), 0.1);
  optim::sgd_step_(d64, to_device(g64, kVulkan), Tensor(), 0.1);
  EXPECT_EQ(host(d64), to_vector(p64));
}
#endif

}  // namespace
}  // namespace vk::test
