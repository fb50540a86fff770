#include "vkml/core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#include "vkml/core/allocator.h"
#include "vkml/core/grad_mode.h"

namespace vk {

namespace {
thread_local bool g_grad_enabled = true;
thread_local bool g_anomaly_enabled = false;

// Iterative teardown: a dying tensor hands its parents to this per-thread list instead of
// releasing them inside its own destructor, so a 100,000-deep chain unwinds in a loop.
thread_local std::vector<Tensor>* g_teardown = nullptr;
}  // namespace

bool GradMode::is_enabled() { return g_grad_enabled; }
void GradMode::set_enabled(bool enabled) { g_grad_enabled = enabled; }
bool AnomalyMode::is_enabled() { return g_anomaly_enabled; }
void AnomalyMode::set_enabled(bool enabled) { g_anomaly_enabled = enabled; }

Storage::Storage(size_t nbytes_, Device device_) : nbytes(nbytes_), device(device_) {
  CpuBlock block = cpu_allocate(nbytes);
  data = block.data;
  capacity_ = block.capacity;
}

Storage::Storage(void* data_, size_t nbytes_, Deleter deleter)
    : data(data_), nbytes(nbytes_), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (deleter_) deleter_(data);
  else cpu_release({data, capacity_});
}

TensorImpl::~TensorImpl() {
  if (parents.empty()) return;
  if (g_teardown) {  // an outer destructor is already draining: hand over and return
    for (auto& p : parents) g_teardown->push_back(std::move(p));
    return;
  }
  std::vector<Tensor> pending = std::move(parents);
  g_teardown = &pending;
  while (!pending.empty()) {
    Tensor t = std::move(pending.back());
    pending.pop_back();
    // t dies here; if it was the last owner, its parents are appended to `pending`.
  }
  g_teardown = nullptr;
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  int64_t n = numel_of(shape);
  constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max() / 2;
  VK_CHECK(n <= kMaxBytes / static_cast<int64_t>(dtype_size(dtype)), MemoryError,
           "cannot allocate a tensor of shape ", shape_str(shape), " and dtype ", dtype_name(dtype));
  auto storage = std::make_shared<Storage>(static_cast<size_t>(n) * dtype_size(dtype), Device::CPU);
  return from_storage(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, Shape shape, Strides strides,
                            int64_t offset, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : impl_->shape) n *= d;
  return n;
}

int64_t Tensor::size(int64_t dim) const {
  return impl_->shape[wrap_dim(dim, ndim(), "size")];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = impl_->shape.size(); i-- > 0;) {
    if (impl_->shape[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->shape[i];
  }
  return true;
}

double Tensor::item() const {
  VK_CHECK(numel() == 1, ShapeError, "item(): expected a tensor with one element, got shape ",
           shape_str(shape()));
  double v = 0;
  VK_DISPATCH_ALL(dtype(), "item", v = static_cast<double>(*data<T>()));
  return v;
}

Tensor Tensor::alias(Shape shape, Strides strides, int64_t offset) const {
  return from_storage(impl_->storage, std::move(shape), std::move(strides), offset, dtype());
}

Tensor Tensor::detach() const { return alias(shape(), strides(), offset()); }

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  VK_CHECK(!requires_grad || is_floating(dtype()), DTypeError,
           "only floating-point tensors can require grad, got dtype ", dtype_name(dtype()));
  VK_CHECK(is_leaf() || requires_grad, RuntimeError,
           "requires_grad can only be turned off on a leaf; use detach() for a non-leaf");
  impl_->requires_grad = requires_grad;
  return *this;
}

const Attrs& Tensor::attrs() const {
  static const Attrs kEmpty;
  return impl_->attrs ? *impl_->attrs : kEmpty;
}

void Tensor::retain_grad() {
  VK_CHECK(requires_grad(), RuntimeError, "retain_grad() on a tensor that does not require grad");
  impl_->retains_grad = true;
}

void Tensor::register_hook(Hook hook) {
  VK_CHECK(requires_grad(), RuntimeError,
           "register_hook() on a tensor that does not require grad");
  impl_->hooks.push_back(std::move(hook));
}

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype())) + shape_str(shape());
}

}  // namespace vk
