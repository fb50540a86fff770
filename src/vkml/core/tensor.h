// Tensor: a strided view over ref-counted storage, plus its autograd history.
//
// A tensor that an op produced while recording remembers the op, the op's parameters and its
// input tensors (its parents): the tensor is its own graph node, as in micrograd. Backward walks
// parents iteratively (autograd/engine.cpp); teardown of a long chain is iterative too
// (~TensorImpl), so no graph depth can overflow the stack.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vkml/core/attrs.h"
#include "vkml/core/device.h"
#include "vkml/core/dtype.h"
#include "vkml/core/error.h"
#include "vkml/core/shape.h"

namespace vk {

struct OpDef;

// A block of memory on a device. `version` counts in-place writes, so backward can tell that a
// tensor it saved was modified after it was recorded. `recorded_write` is the version after the
// last write that autograd recorded (ops/inplace.cpp): a tensor over this memory made before it
// shows the written values with a history that does not explain them.
struct Storage {
  using Deleter = std::function<void(void*)>;
  // Owned and uninitialised: from the caching allocator, 64-byte aligned; up to kInlineBytes
  // (scalars, small vectors) inside the Storage object itself, 16-byte aligned, which spares a
  // tiny tensor the allocator's lock on creation and on release. On another device: from that
  // device's DeviceMemory.
  Storage(size_t nbytes, Device device);
  Storage(void* data, size_t nbytes, Deleter deleter);  // borrowed (numpy, DLPack)
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  static constexpr size_t kInlineBytes = 32;

  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  bool host_addressable = true;  // data<T>() may read it (see DeviceMemory::host_addressable)
  std::atomic<uint32_t> version{0};
  std::atomic<uint32_t> recorded_write{0};

 private:
  Deleter deleter_;                 // borrowed memory: how to give it back
  DeviceMemory* memory_ = nullptr;  // owned memory on a device other than the CPU
  size_t capacity_ = 0;             // owned memory: the allocator's size class (0: inline)
  alignas(16) unsigned char inline_[kInlineBytes];
};

class Tensor;
using Hook = std::function<Tensor(const Tensor&)>;

// The parameters of an op called without any: shared, so that recording such an op allocates
// no Attrs (a node's attrs pointer stays null and Tensor::attrs() returns this object).
const Attrs& no_attrs();

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  // The Tensor inside the binding's object (Python's) that holds this node, set by the binding
  // and cleared by that Tensor's destructor and assignments: how a write through a view finds its
  // base's object. Next to the storage: every Tensor's destructor reads it.
  std::atomic<Tensor*> handle{nullptr};
  Shape shape;
  Strides strides;     // in elements
  int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;

  // Autograd. A leaf has op == nullptr.
  bool requires_grad = false;
  bool retains_grad = false;
  bool graph_freed = false;  // backward ran with retain_graph=false
  const OpDef* op = nullptr;
  std::vector<Tensor> parents;
  std::shared_ptr<const Attrs> attrs;
  // The parents' storage versions when recorded, then those of the other outputs.
  std::vector<uint32_t> saved_versions;
  // The storage's version when this tensor was made, or recorded (a rule may read its values).
  uint32_t own_version = 0;
  // Outputs 1, 2, ... of the op that made this node (max_pool2d's argmax), kept for its rule.
  std::vector<Tensor> other_outputs;
  std::shared_ptr<TensorImpl> grad;                   // under grad_mutex(): see Tensor::grad()
  std::vector<std::pair<uint64_t, Hook>> hooks;       // under grad_mutex(), with their ids
  std::vector<std::pair<uint64_t, Hook>> post_hooks;  // leaves: after .grad is accumulated
  std::atomic<bool> has_hooks{false};                 // either list, told without the lock
  std::string anomaly_trace;  // where the forward ran, filled only in anomaly mode
  // Views (ops/table.cpp: an op's output over an input's memory) hold the tensor they are a view
  // of -- the root of the chain, never another view -- so that a recorded write through one
  // reaches its base (ops/inplace.cpp). Null for a tensor that is no view.
  std::shared_ptr<TensorImpl> view_base;
  // A base that was written through a view: the node standing for its memory since the last such
  // write (a strided_scatter of the write into the base's history). A tensor over that memory
  // made before it is regenerated from it when used (ops/table.cpp). Weak: that node holds the
  // base among its parents; what keeps it alive is the tensor returned for the written view and
  // the base's object in a binding, which the binding rebinds to it.
  std::weak_ptr<TensorImpl> successor;
  // Scratch for a backward walk (autograd/engine.cpp): the walk's id and this node's position
  // in its order, so lookups need no hash map. 0 when no walk holds the node.
  std::atomic<uint64_t> walk_mark{0};

  TensorImpl() = default;
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&& o) noexcept : impl_(std::move(o.impl_)) { forget_handle(o); }
  // The Tensor a binding's object holds lets go of its node (TensorImpl::handle) when it dies or
  // takes another node.
  Tensor& operator=(const Tensor& o) {
    if (impl_ != o.impl_) release_handle();
    impl_ = o.impl_;
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    if (impl_ != o.impl_) release_handle();
    impl_ = std::move(o.impl_);
    forget_handle(o);
    return *this;
  }
  ~Tensor() { release_handle(); }

  // A fresh contiguous tensor; contents are uninitialised.
  static Tensor empty(const Shape& shape, DType dtype, Device device = kCPU);
  // A tensor over existing storage (no copy).
  static Tensor from_storage(std::shared_ptr<Storage> storage, Shape shape, Strides strides,
                             int64_t offset, DType dtype);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

  const Shape& shape() const { return impl_->shape; }
  const Strides& strides() const { return impl_->strides; }
  int64_t offset() const { return impl_->offset; }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device; }
  int64_t ndim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t numel() const {  // unchecked: every shape is validated (numel_of) when it is created
    int64_t n = 1;
    for (int64_t d : impl_->shape) n *= d;
    return n;
  }
  int64_t size(int64_t dim) const;
  bool is_contiguous() const {  // inline: every kernel asks, several times per op
    int64_t expected = 1;
    bool contiguous = true;
    for (size_t i = impl_->shape.size(); i-- > 0;) {
      const int64_t n = impl_->shape[i];
      if (n == 0) return true;  // no element to be out of place
      if (n == 1) continue;
      contiguous = contiguous && impl_->strides[i] == expected;
      expected *= n;
    }
    return contiguous;
  }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }

  // Pointer to the first element, for code that runs on the host (CPU kernels, conversions).
  // T must match dtype(); DeviceError when the memory is on a device the host cannot read.
  template <class T>
  [[gnu::always_inline]] T* data() const {
    VK_CHECK(dtype_of<T>::value == dtype(), DTypeError, "data<", dtype_name(dtype_of<T>::value),
             ">() on a tensor of dtype ", dtype_name(dtype()));
    if (!impl_->storage->host_addressable) [[unlikely]]
      throw_not_on_host("data()");
    return static_cast<T*>(impl_->storage->data) + impl_->offset;
  }
  [[gnu::always_inline]] void* raw_data() const {
    if (!impl_->storage->host_addressable) [[unlikely]]
      throw_not_on_host("raw_data()");
    return static_cast<char*>(impl_->storage->data) + impl_->offset * dtype_size(dtype());
  }
  // The device address of the first element's memory block and the offset into it, for a
  // backend's kernels (any device).
  void* storage_data() const { return impl_->storage->data; }
  double item() const;  // the one element, converted to double

  // A view of the same storage with other geometry; no autograd history.
  Tensor alias(Shape shape, Strides strides, int64_t offset) const;
  // Same data, no history, requires_grad false.
  Tensor detach() const;

  // Autograd state.
  bool requires_grad() const { return impl_->requires_grad; }
  Tensor& set_requires_grad(bool requires_grad);  // DTypeError for non-floating dtypes
  bool is_leaf() const { return impl_->op == nullptr; }
  const OpDef* op() const { return impl_->op; }
  const std::vector<Tensor>& parents() const { return impl_->parents; }
  const Attrs& attrs() const;
  // .grad and the hooks are read and written by backward walks and by user threads at once (two
  // threads backpropagating into shared parameters, a hook registered while a walk runs): every
  // access holds grad_mutex(), one of a fixed set of locks picked by the tensor's address.
  std::mutex& grad_mutex() const;
  Tensor grad() const;
  void set_grad(const Tensor& g);
  void retain_grad();
  bool retains_grad() const { return impl_->retains_grad; }
  // A hook sees the gradient arriving at this tensor in backward and may return a replacement.
  // Returns an id for remove_hook (a walk already running may still call a removed hook once).
  uint64_t register_hook(Hook hook);
  void remove_hook(uint64_t id);
  // The hooks registered so far, copied: a hook may register another while the copy runs.
  std::vector<Hook> hooks() const;
  // A leaf's hook called with the leaf after backward() has accumulated its .grad (torch's
  // register_post_accumulate_grad_hook; autograd::grad does not call it); its result is ignored.
  // remove_hook takes it off too.
  uint64_t register_post_accumulate_hook(Hook hook);
  std::vector<Hook> post_accumulate_hooks() const;

  uint32_t version() const { return impl_->storage->version.load(std::memory_order_relaxed); }
  // Made before a recorded in-place write into its memory (a view taken before x[i] = v): its
  // values may have changed under a history that does not know it. A leaf that requires grad has
  // no history to contradict: p.data.copy_(f(w)) sets a parameter, as torch's does.
  // The tensor this is a view of (TensorImpl::view_base); undefined when it is no view.
  Tensor view_base() const { return Tensor(impl_->view_base); }
  bool stale() const {
    return impl_->own_version < impl_->storage->recorded_write.load(std::memory_order_relaxed) &&
           !(impl_->op == nullptr && impl_->requires_grad);
  }
  void bump_version() const { impl_->storage->version.fetch_add(1, std::memory_order_relaxed); }

  std::string describe() const;  // "float32[2, 3]"

 private:
  [[noreturn, gnu::cold, gnu::noinline]] void throw_not_on_host(const char* what) const;
  void release_handle() noexcept { forget_handle(*this); }
  void forget_handle(const Tensor& holder) noexcept {  // holder held impl_ until now
    if (impl_ && impl_->handle.load(std::memory_order_relaxed) == &holder) [[unlikely]]
      impl_->handle.store(nullptr, std::memory_order_relaxed);
  }
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace vk
