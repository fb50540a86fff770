#include "vkml/core/kernel.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "vkml/core/tensor.h"

namespace vk {
namespace {

// Written by registration, read on every op: relaxed atomics cost a plain load, and a kernel
// registered while another thread dispatches is seen whole or not at all.
std::array<std::array<std::atomic<Kernel>, kNumOps>, kMaxDeviceTypes> g_kernels{};
std::array<std::array<std::atomic<DTypeSet>, kNumOps>, kMaxDeviceTypes> g_kernel_dtypes{};

// Each registration publishes a new immutable table (kept for good: a reader may still hold the
// one it replaced), so that lookups take no lock.
std::mutex g_services_mutex;
std::vector<std::unique_ptr<const DeviceServices>> g_services_owned;
std::array<std::atomic<const DeviceServices*>, kMaxDeviceTypes> g_services{};
const DeviceServices kNoServices{};

size_t slot(DeviceType type) {
  const size_t i = static_cast<size_t>(type);
  VK_CHECK(i < kMaxDeviceTypes, RuntimeError, "device type ", i, " is out of range");
  return i;
}

const DeviceServices& services_of(Device d) {
  static const bool builtin = (register_builtin_backends(), true);
  (void)builtin;
  const DeviceServices* s = g_services[slot(d.type)].load(std::memory_order_acquire);
  return s ? *s : kNoServices;
}

template <class Fn>
Fn need(Fn fn, const char* service, Device d) {
  VK_CHECK(fn != nullptr, NotImplementedError, service, ": not implemented on the ", device_name(d),
           " device");
  return fn;
}

}  // namespace

void register_kernel(DeviceType type, OpKind kind, Kernel kernel, DTypeSet dtypes) {
  const size_t k = static_cast<size_t>(kind);
  VK_CHECK(k < kNumOps, RuntimeError, "register_kernel: op kind ", k, " is out of range");
  g_kernel_dtypes[slot(type)][k].store(dtypes, std::memory_order_relaxed);
  g_kernels[slot(type)][k].store(kernel, std::memory_order_relaxed);
}

DTypeSet standard_kernel_dtypes(OpKind kind) {
  switch (kind) {
    case OpKind::Cast:
    case OpKind::Reshape:
    case OpKind::Permute:
    case OpKind::Expand:
    case OpKind::Slice:
    case OpKind::SliceBackward:
    case OpKind::AsStrided:
    case OpKind::StridedScatter:
    case OpKind::Contiguous:
    case OpKind::Cat:
    case OpKind::Stack:
    case OpKind::Pad:
    case OpKind::Flip:
    case OpKind::IndexSelect:
    case OpKind::Gather:
      return kEveryDType;
    default:
      return kComputeDTypes;
  }
}

DTypeSet kernel_dtypes(DeviceType type, OpKind kind) {
  return g_kernel_dtypes[static_cast<size_t>(type)][static_cast<size_t>(kind)].load(
      std::memory_order_relaxed);
}

Kernel find_kernel(DeviceType type, OpKind kind) {
  return g_kernels[static_cast<size_t>(type)][static_cast<size_t>(kind)].load(
      std::memory_order_relaxed);
}

void register_services(DeviceType type, const DeviceServices& services) {
  std::lock_guard<std::mutex> lock(g_services_mutex);
  g_services_owned.push_back(std::make_unique<const DeviceServices>(services));
  g_services[slot(type)].store(g_services_owned.back().get(), std::memory_order_release);
}

namespace in_place {

void copy(const Tensor& dst, const Tensor& src) {
  need(services_of(dst.device()).copy_into, "copy into a tensor", dst.device())(dst, src);
}

void add(const Tensor& dst, const Tensor& a, const Tensor& b) {
  need(services_of(dst.device()).add_into, "in-place add", dst.device())(dst, a, b);
}

bool binary(const Tensor& dst, const Tensor& a, const Tensor& b, InPlaceOp op) {
  const auto fn = services_of(dst.device()).binary_into;
  if (fn == nullptr) return false;
  fn(dst, a, b, op);
  return true;
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const SgdHyper& h) {
  need(services_of(param.device()).sgd_update, "SGD step", param.device())(param, grad,
                                                                           momentum_buffer, h);
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamHyper& h) {
  need(services_of(param.device()).adam_update, "Adam step", param.device())(
      param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h);
}

void adadelta_update(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                     const Tensor& acc_delta, const AdadeltaHyper& h) {
  need(services_of(param.device()).adadelta_update, "Adadelta step", param.device())(
      param, grad, square_avg, acc_delta, h);
}

}  // namespace in_place
}  // namespace vk
