// The device seam (issue #13): a device registered from this file alone -- its memory, its
// kernels, its services -- runs ops, backward and transfers, with no change to any file outside
// tests. Its memory is the host's and its kernels are the CPU's, counted, so every result can be
// compared with the CPU's; a second device keeps its memory out of the host's reach, as a GPU's.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "op_cases.h"
#include "test_util.h"
#include "vkml/backend/cpu/elementwise.h"

namespace vk {
namespace {

using test::values;

// Memory on the host. `addressable` false makes data<T>() refuse it (a GPU's memory); copies
// still work, through DeviceMemory, as a GPU's do.
class HostMemory final : public DeviceMemory {
 public:
  explicit HostMemory(bool addressable) : addressable_(addressable) {}
  void* allocate(size_t nbytes, int) override {
    void* p = std::aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
    if (!p) throw std::bad_alloc();
    live.fetch_add(1);
    return p;
  }
  void release(void* data, size_t, int) noexcept override {
    std::free(data);
    live.fetch_sub(1);
  }
  void copy_from_host(void* dst, size_t dst_offset, const void* src, size_t n, int) override {
    std::memcpy(static_cast<char*>(dst) + dst_offset, src, n);
  }
  void copy_to_host(void* dst, const void* src, size_t src_offset, size_t n, int) override {
    std::memcpy(dst, static_cast<const char*>(src) + src_offset, n);
  }
  void copy_on_device(void* dst, size_t dst_offset, const void* src, size_t src_offset, size_t n,
                      int) override {
    std::memcpy(static_cast<char*>(dst) + dst_offset, static_cast<const char*>(src) + src_offset,
                n);
  }
  bool host_addressable() const override { return addressable_; }

  std::atomic<int> live{0};  // blocks allocated and not yet released

 private:
  bool addressable_;
};

HostMemory* g_counting_memory = nullptr;
std::atomic<int> g_calls[kNumOps];

// The CPU's kernel for K, counted; a result the CPU kernel made in CPU memory is moved onto the
// device (views of an input are on the device already).
template <OpKind K>
VK_KERNEL(counted) {
  g_calls[static_cast<size_t>(K)].fetch_add(1);
  Meta on_cpu = m;
  on_cpu.device = kCPU;
  Outputs r = find_kernel(DeviceType::CPU, K)(in, a, on_cpu);
  for (size_t i = 0; i < r.size(); ++i) {
    if (!r[i].defined() || r[i].device() == m.device) continue;  // a view of an input
    Tensor moved = Tensor::empty(r[i].shape(), r[i].dtype(), m.device);
    cpu::copy_into(moved, r[i]);
    r[i] = moved;
  }
  return r;
}

// A broken backend: a kernel for a one-output op that returns two.
VK_KERNEL(two_outputs) {
  (void)a;
  (void)m;
  return {in[0], in[0]};
}

const DeviceType kCounting = [] {
  auto memory = std::make_unique<HostMemory>(true);
  g_counting_memory = memory.get();
  const DeviceType type = register_device_type("counting", std::move(memory));
  register_kernel(type, OpKind::Full, counted<OpKind::Full>);
  register_kernel(type, OpKind::Add, counted<OpKind::Add>);
  register_kernel(type, OpKind::Mul, counted<OpKind::Mul>);
  register_kernel(type, OpKind::Sum, counted<OpKind::Sum>);
  register_kernel(type, OpKind::Expand, counted<OpKind::Expand>);
  register_kernel(type, OpKind::Reshape, counted<OpKind::Reshape>);
  register_kernel(type, OpKind::Contiguous, counted<OpKind::Contiguous>);
  register_kernel(type, OpKind::MaxDim, counted<OpKind::MaxDim>);
  register_kernel(type, OpKind::ScatterAdd, counted<OpKind::ScatterAdd>);
  register_kernel(type, OpKind::Sub, two_outputs);
  register_services(type, {.copy_into = cpu::copy_into, .add_into = cpu::add_into});
  return type;
}();
const Device kCountingDevice{kCounting, 0};

const DeviceType kOpaque = register_device_type("opaque", std::make_unique<HostMemory>(false));

int calls(OpKind k) { return g_calls[static_cast<size_t>(k)].load(); }

// to_device's case for the op sweep (gradcheck and gradgradcheck): there and back again.
const test::RegisterOpCases kToDeviceCases({
    {OpKind::ToDevice, "to_device/round_trip",
     [] {
       return std::vector<Tensor>{test::leaf({2, 3})};
     },
     [](const std::vector<Tensor>& x) { return to_cpu(to_device(x[0], kCountingDevice) * 2.0); }},
});

TEST(DeviceSeam, OpsRunOnTheRegisteredDeviceWithItsKernels) {
  const Tensor a = values({1, 2, 3, 4}, {2, 2}, false), b = values({5, 6, 7, 8}, {2, 2}, false);
  const Tensor da = to_device(a, kCountingDevice), db = to_device(b, kCountingDevice);
  EXPECT_EQ(da.device(), kCountingDevice);
  const int adds = calls(OpKind::Add), muls = calls(OpKind::Mul);
  const Tensor r = da * db + da;
  EXPECT_EQ(r.device(), kCountingDevice);
  EXPECT_EQ(calls(OpKind::Add), adds + 1);
  EXPECT_EQ(calls(OpKind::Mul), muls + 1);
  test::expect_values(to_cpu(r), to_vector(a * b + a), 0.0);
}

TEST(DeviceSeam, AnOpWithoutAKernelThereIsNotImplementedNamingOpAndDevice) {
  const Tensor x = to_device(values({1, 2}, {2}, false), kCountingDevice);
  VK_EXPECT_ERROR(exp(x), NotImplementedError, "exp", "counting:0");
}

// Defect: to_device read the device of an undefined tensor (a crash) before dispatch could say so.
TEST(DeviceSeam, MovingAnUndefinedTensorIsARuntimeErrorNotACrash) {
  VK_EXPECT_ERROR(to_device(Tensor{}, kCPU), RuntimeError, "to", "undefined");
}

TEST(DeviceSeam, MixedDevicesAreADeviceErrorNamingBoth) {
  const Tensor x = to_device(values({1, 2}, {2}, false), kCountingDevice);
  const Tensor y = values({3, 4}, {2}, false);
  VK_EXPECT_ERROR(x + y, DeviceError, "add", "counting:0", "cpu");
  VK_EXPECT_ERROR(y * x, DeviceError, "mul", "counting:0", "cpu");
}

TEST(DeviceSeam, AZeroDimCpuTensorJoinsTheOtherDevice) {
  const Tensor x = to_device(values({1, 2}, {2}, false), kCountingDevice);
  const Tensor r = x * 3.0;  // the number becomes a 0-d CPU tensor, then joins x's device
  EXPECT_EQ(r.device(), kCountingDevice);
  test::expect_values(to_cpu(r), {3, 6}, 0.0);
  const Tensor s = x * scalar_tensor(2.0, DType::Float64);
  test::expect_values(to_cpu(s), {2, 4}, 0.0);
}

TEST(DeviceSeam, BackwardRunsOnTheDeviceAndGradientsReturnToTheirSource) {
  const Tensor a = values({1, 2, 3}, {3}), b = values({4, 5, 6}, {3});
  const Tensor c = values({2}, {});  // 0-d, on the CPU, joins the device
  const Tensor da = to_device(a, kCountingDevice), db = to_device(b, kCountingDevice);
  autograd::backward(sum(da * db * c));
  // Gradients arrive on the CPU leaves, through to_device's rule, with the CPU's values.
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(a.grad().device().is_cpu());
  test::expect_values(a.grad(), {8, 10, 12}, 0.0);
  test::expect_values(b.grad(), {2, 4, 6}, 0.0);
  test::expect_values(c.grad(), {32}, 0.0);
}

// Issue #13, item 4: an op's outputs come back from its kernel, not through a side channel; the
// rule reads them by position from the node.
TEST(DeviceSeam, AMultiOutputOpReturnsEveryOutputOnTheDeviceAndItsRuleReadsThem) {
  const Tensor x = values({3, 1, 2, 5, 4, 0}, {2, 3});
  const int max_dims = calls(OpKind::MaxDim);
  const auto [v, i] = max(to_device(x, kCountingDevice), 1);
  EXPECT_EQ(calls(OpKind::MaxDim), max_dims + 1);  // one kernel call gives both
  EXPECT_EQ(v.device(), kCountingDevice);
  EXPECT_EQ(i.device(), kCountingDevice);
  EXPECT_EQ(i.dtype(), DType::Int64);
  test::expect_values(to_cpu(v), {3, 5}, 0.0);
  EXPECT_EQ(to_cpu(i).data<int64_t>()[0], 0);
  EXPECT_EQ(to_cpu(i).data<int64_t>()[1], 0);
  autograd::backward(sum(v));  // max_dim's rule scatters into output 1's positions
  test::expect_values(x.grad(), {1, 0, 0, 1, 0, 0}, 0.0);
}

TEST(DeviceSeam, AKernelReturningAnotherNumberOfOutputsIsARuntimeError) {
  const Tensor x = to_device(values({1, 2}, {2}, false), kCountingDevice);
  VK_EXPECT_ERROR(x - x, RuntimeError, "sub", "counting:0", "returned 2 outputs", "the op has 1");
}

TEST(DeviceSeam, LeavesOnTheDeviceAccumulateThereThroughItsServices) {
  Tensor w = to_device(values({1, 2}, {2}, false), kCountingDevice);
  w.set_requires_grad(true);
  for (int i = 0; i < 3; ++i) autograd::backward(sum(w * w));
  EXPECT_EQ(w.grad().device(), kCountingDevice);
  test::expect_values(to_cpu(w.grad()), {6, 12}, 0.0);
}

TEST(DeviceSeam, AServiceTheDeviceLacksIsNotImplementedNamingIt) {
  // The counting device registers copy and add but no fused optimizer steps.
  const Tensor w = to_device(values({1, 2}, {2}, false), kCountingDevice);
  const Tensor g = ones_like(w);
  VK_EXPECT_ERROR(optim::sgd_step_(w, g, Tensor(), 0.1), NotImplementedError, "SGD step",
                  "counting:0");
  VK_EXPECT_ERROR(optim::sgd_step_(w, values({1, 1}, {2}, false), Tensor(), 0.1), DeviceError,
                  "grad is on cpu", "counting:0");
}

TEST(DeviceSeam, CreationOnTheDevice) {
  const Tensor z = zeros({2, 3}, DType::Float32, kCountingDevice);
  EXPECT_EQ(z.device(), kCountingDevice);
  test::expect_values(to_cpu(z), std::vector<double>(6, 0.0), 0.0);
  EXPECT_EQ(ones_like(z).device(), kCountingDevice);
  VK_EXPECT_ERROR(rand({2}, DType::Float32, kCountingDevice), NotImplementedError, "rand",
                  "counting:0");
}

TEST(DeviceSeam, MemoryTheHostCannotReadRefusesDataButCopies) {
  const Tensor x = values({1, 2, 3}, {3}, false);
  const Tensor on = to_device(x, Device{kOpaque, 0});
  VK_EXPECT_ERROR(on.data<double>(), DeviceError, "opaque:0", ".cpu()");
  VK_EXPECT_ERROR(on.raw_data(), DeviceError, "opaque:0");
  test::expect_values(to_cpu(on), {1, 2, 3}, 0.0);
  // Between two devices the bytes go through the host.
  test::expect_values(to_cpu(to_device(on, kCountingDevice)), {1, 2, 3}, 0.0);
}

// Issue #13, item 6: ops and nn read values on the host only through host_read, a copy, never
// through a pointer into the device's memory.
TEST(DeviceSeam, HostReadsInOpsCopyFromMemoryTheHostCannotReach) {
  const Tensor x = values({1, -2, 3}, {3});
  const Tensor on = to_device(x, Device{kOpaque, 0});
  EXPECT_EQ(to_vector(on), (std::vector<double>{1, -2, 3}));
  const Tensor r = host_read(on);
  EXPECT_TRUE(r.device().is_cpu());
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_FALSE(r.requires_grad());  // a read records nothing
  EXPECT_TRUE(r.is_leaf());
}

TEST(DeviceSeam, CopyIntoATensorFromAnotherDeviceMovesTheSourceFirst) {
  const Tensor on = to_device(values({1, 2, 3}, {3}, false), Device{kOpaque, 0});
  const Tensor dst = zeros({3}, DType::Float32);
  copy_(dst, on);  // float64 on a device the host cannot read -> float32 on the CPU
  test::expect_values(dst, {1, 2, 3}, 0.0);
  const Tensor back = to_device(zeros({3}, DType::Float32), kCountingDevice);
  copy_(back, dst);
  test::expect_values(to_cpu(back), {1, 2, 3}, 0.0);
}

TEST(DeviceSeam, StorageIsReleasedToTheDevicesMemory) {
  const int before = g_counting_memory->live.load();
  {
    const Tensor t = zeros({1000}, DType::Float32, kCountingDevice);
    EXPECT_EQ(g_counting_memory->live.load(), before + 1);
  }
  EXPECT_EQ(g_counting_memory->live.load(), before);
}

TEST(DeviceSeam, NonContiguousInputsMoveAsTheirElementsInOrder) {
  const Tensor x = values({1, 2, 3, 4, 5, 6}, {2, 3}, false);
  const Tensor t = permute(x, {1, 0});
  test::expect_values(to_cpu(to_device(t, kCountingDevice)), to_vector(contiguous(t)), 0.0);
}

TEST(DeviceSeam, DeviceNames) {
  EXPECT_EQ(parse_device("cpu"), kCPU);
  EXPECT_EQ(parse_device("cpu:0"), kCPU);
  EXPECT_EQ(parse_device("vulkan:1"), (Device{DeviceType::Vulkan, 1}));
  EXPECT_EQ(parse_device("counting"), kCountingDevice);
  EXPECT_EQ(device_name(Device{DeviceType::Vulkan, 1}), "vulkan:1");
  EXPECT_EQ(device_name(kCPU), "cpu");
  VK_EXPECT_ERROR(parse_device("cuda"), DeviceError, "unknown device 'cuda'");
  VK_EXPECT_ERROR(parse_device("vulkan:x"), DeviceError, "index");
  VK_EXPECT_ERROR(parse_device("vulkan:-1"), DeviceError, "index");
  VK_EXPECT_ERROR(parse_device("cpu:1"), DeviceError, "cpu:0");
  VK_EXPECT_ERROR(register_device_type("counting", std::make_unique<HostMemory>(true)),
                  RuntimeError, "registered already");
  VK_EXPECT_ERROR(register_device_type("cpu", std::make_unique<HostMemory>(true)), RuntimeError,
                  "built in");
}

// With the backend and a device, "vulkan" is a device like the others (tests/cpp/test_vulkan.cpp);
// without either, asking for it is a DeviceError that says so.
TEST(DeviceSeam, VulkanIsThereOrSaysWhyNot) {
  const Tensor x = values({1}, {1}, false);
  if (device_available(DeviceType::Vulkan)) {
    EXPECT_EQ(to_device(x, parse_device("vulkan")).device(), (Device{DeviceType::Vulkan, 0}));
    return;
  }
  VK_EXPECT_ERROR(to_device(x, parse_device("vulkan")), DeviceError, "vulkan", "not available");
  VK_EXPECT_ERROR(zeros({2}, DType::Float32, parse_device("vulkan")), DeviceError, "vulkan");
}

}  // namespace
}  // namespace vk
