#include "vkml/core/tensor.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "vkml/core/allocator.h"
#include "vkml/core/grad_mode.h"

namespace vk {

namespace {
thread_local bool g_grad_enabled = true;
thread_local bool g_anomaly_enabled = false;

// Iterative teardown: a dying tensor hands its parents to this per-thread list instead of
// releasing them inside its own destructor, so a 100,000-deep chain unwinds in a loop.
thread_local std::vector<Tensor>* g_teardown = nullptr;

// Every op creates a TensorImpl and, unless it returns a view, a Storage, each in one block with
// its shared_ptr control block. A per-thread list of freed blocks of each size hands them out
// again: popping a list costs a fraction of malloc plus free, which on a one-element op are a
// good part of the whole cost. A list holds at most kMaxCached blocks; a block freed by another
// thread joins that thread's list; a thread's list is freed when the thread ends. Off under
// AddressSanitizer, which must see every free to catch a use after it.
template <size_t Size>
class BlockCache {
 public:
  static void* get() {
#if !defined(__SANITIZE_ADDRESS__)
    if (Node* n = t_list.head) {
      t_list.head = n->next;
      --t_list.count;
      return n;
    }
#endif
    return ::operator new(Size);
  }

  static void put(void* p) {
#if !defined(__SANITIZE_ADDRESS__)
    List& l = t_list;
    if (l.count < kMaxCached && !l.dead) {
      if (!l.drain_registered) register_drain();
      l.head = new (p) Node{l.head};
      ++l.count;
      return;
    }
#endif
    ::operator delete(p);
  }

 private:
  static constexpr int kMaxCached = 256;
  struct Node {
    Node* next;
  };
  struct List {  // trivially destructible: usable until the thread's storage goes
    Node* head = nullptr;
    int count = 0;
    bool drain_registered = false;
    bool dead = false;  // the thread is ending: free directly from now on
  };
  struct Drain {
    ~Drain() {
      while (Node* n = t_list.head) {
        t_list.head = n->next;
        ::operator delete(n);
      }
      t_list.count = 0;
      t_list.dead = true;
    }
  };
  static void register_drain() {
    thread_local Drain drain;  // constructed once per thread; its destructor frees the list
    (void)drain;
    t_list.drain_registered = true;
  }
  static thread_local List t_list;
};
template <size_t Size>
thread_local typename BlockCache<Size>::List BlockCache<Size>::t_list;

// The shape and strides vectors of dead tensors, kept with their capacity for this thread's next
// new tensors: Tensor::empty then fills its two vectors without allocating (each allocation,
// with its free, costs as much as the rest of a one-element op's bookkeeping). At most kMax
// vectors per thread, freed when the thread ends; off under AddressSanitizer, like BlockCache.
class DimsCache {
 public:
  static std::vector<int64_t> take() {  // empty, with capacity when one is cached
#if !defined(__SANITIZE_ADDRESS__)
    State& s = t_state;
    if (s.count > 0) {
      Dims* v = slot(--s.count);
      Dims out = std::move(*v);
      v->~Dims();
      return out;
    }
#endif
    return {};
  }

  static void give(std::vector<int64_t>& v) {
#if !defined(__SANITIZE_ADDRESS__)
    State& s = t_state;
    if (v.capacity() == 0 || v.capacity() > kMaxCapacity || s.count >= kMax || s.ended) return;
    if (!s.drain_registered) register_drain();
    v.clear();
    new (s.slots[s.count++]) Dims(std::move(v));
#else
    (void)v;
#endif
  }

 private:
  using Dims = std::vector<int64_t>;
  static constexpr int kMax = 64;
  static constexpr size_t kMaxCapacity = 16;
  struct State {  // trivially destructible: usable until the thread's storage goes
    alignas(Dims) unsigned char slots[kMax][sizeof(Dims)];
    int count = 0;
    bool drain_registered = false;
    bool ended = false;
  };
  struct Drain {
    ~Drain() {
      while (t_state.count > 0) slot(--t_state.count)->~Dims();
      t_state.ended = true;
    }
  };
  static Dims* slot(int i) { return std::launder(reinterpret_cast<Dims*>(t_state.slots[i])); }
  static void register_drain() {
    thread_local Drain drain;
    (void)drain;
    t_state.drain_registered = true;
  }
  static thread_local State t_state;
};
thread_local DimsCache::State DimsCache::t_state;

// The allocator that routes make_shared's single block through BlockCache.
template <class T>
struct CachedAllocator {
  using value_type = T;
  CachedAllocator() = default;
  template <class U>
  CachedAllocator(const CachedAllocator<U>&) {}
  T* allocate(size_t n) {
    return n == 1 ? static_cast<T*>(BlockCache<sizeof(T)>::get())
                  : static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n == 1)
      BlockCache<sizeof(T)>::put(p);
    else
      ::operator delete(p);
  }
  template <class U>
  bool operator==(const CachedAllocator<U>&) const {
    return true;
  }
};
}  // namespace

bool GradMode::is_enabled() { return g_grad_enabled; }
void GradMode::set_enabled(bool enabled) { g_grad_enabled = enabled; }
bool AnomalyMode::is_enabled() { return g_anomaly_enabled; }
void AnomalyMode::set_enabled(bool enabled) { g_anomaly_enabled = enabled; }

Storage::Storage(size_t nbytes_, Device device_) : nbytes(nbytes_), device(device_) {
  if (!device.is_cpu()) {
    memory_ = &require_device(device);
    host_addressable = memory_->host_addressable();
    data = memory_->allocate(nbytes, device.index);
    return;
  }
  if (nbytes <= kInlineBytes) {
    data = inline_;
    return;
  }
  CpuBlock block = cpu_allocate(nbytes);
  data = block.data;
  capacity_ = block.capacity;
}

Storage::Storage(void* data_, size_t nbytes_, Deleter deleter)
    : data(data_), nbytes(nbytes_), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (deleter_)
    deleter_(data);
  else if (memory_)
    memory_->release(data, nbytes, device.index);
  else if (data != inline_)
    cpu_release({data, capacity_});
}

const Attrs& no_attrs() {
  static const Attrs* none = new Attrs();  // never destroyed: tensors may outlive static teardown
  return *none;
}

TensorImpl::~TensorImpl() {
  DimsCache::give(shape);
  DimsCache::give(strides);
  // Everything a tensor owns that may own tensors in turn -- its graph inputs, tensors saved for
  // its rule, its .grad -- is released by one loop, so that a chain of any length through any of
  // them (a 100,000-op graph; `t.grad = previous` repeated) never nests destructors.
  if (parents.empty() && other_outputs.empty() && !grad) return;
  std::vector<Tensor> owned = std::move(parents);
  for (auto& o : other_outputs) owned.push_back(std::move(o));
  if (grad) owned.emplace_back(std::move(grad));
  if (g_teardown) {  // an outer destructor is already draining: hand over and return
    for (auto& t : owned) g_teardown->push_back(std::move(t));
    return;
  }
  g_teardown = &owned;
  while (!owned.empty()) {
    Tensor t = std::move(owned.back());
    owned.pop_back();
    // t dies here; if it was the last owner, what it owned is appended to `owned`.
  }
  g_teardown = nullptr;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  int64_t n = numel_of(shape);
  constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max() / 2;
  VK_CHECK(n <= kMaxBytes / static_cast<int64_t>(dtype_size(dtype)), MemoryError,
           "cannot allocate a tensor of shape ", shape_str(shape), " and dtype ",
           dtype_name(dtype));
  auto impl = std::allocate_shared<TensorImpl>(CachedAllocator<TensorImpl>());
  impl->storage = std::allocate_shared<Storage>(CachedAllocator<Storage>(),
                                                static_cast<size_t>(n) * dtype_size(dtype), device);
  impl->shape = DimsCache::take();
  impl->shape.assign(shape.begin(), shape.end());
  impl->strides = DimsCache::take();
  impl->strides.resize(shape.size());
  int64_t step = 1;  // contiguous_strides, written into the reused vector; numel_of above
                     // checked that the product of max(extent, 1) fits, so no step overflows
  for (size_t d = shape.size(); d-- > 0;) {
    impl->strides[d] = step;
    step *= std::max<int64_t>(shape[d], 1);
  }
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, Shape shape, Strides strides,
                            int64_t offset, DType dtype) {
  auto impl = std::allocate_shared<TensorImpl>(CachedAllocator<TensorImpl>());
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  impl->own_version = impl->storage->version.load(std::memory_order_relaxed);
  return Tensor(std::move(impl));
}

void Tensor::throw_not_on_host(const char* what) const {
  throw DeviceError(detail::cat(what, ": this tensor is on ", device_name(device()),
                                ", whose memory the host cannot read; call .cpu() first"));
}

int64_t Tensor::size(int64_t dim) const { return impl_->shape[wrap_dim(dim, ndim(), "size")]; }

double Tensor::item() const {
  VK_CHECK(numel() == 1, ShapeError, "item(): expected a tensor with one element, got shape ",
           shape_str(shape()));
  double v = 0;
  if (!impl_->storage->host_addressable) {  // a host read: copy the one element back
    alignas(8) unsigned char bytes[8];
    const size_t size = dtype_size(dtype());
    copy_bytes(kCPU, bytes, 0, device(), impl_->storage->data, static_cast<size_t>(offset()) * size,
               size);
    VK_DISPATCH_STORAGE(dtype(), "item", v = static_cast<double>(*reinterpret_cast<T*>(bytes)));
    return v;
  }
  VK_DISPATCH_STORAGE(dtype(), "item", v = static_cast<double>(*data<T>()));
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

const Attrs& Tensor::attrs() const { return impl_->attrs ? *impl_->attrs : no_attrs(); }

void Tensor::retain_grad() {
  VK_CHECK(requires_grad(), RuntimeError, "retain_grad() on a tensor that does not require grad");
  impl_->retains_grad = true;
}

std::mutex& Tensor::grad_mutex() const {
  static std::array<std::mutex, 64> locks;
  return locks[(reinterpret_cast<uintptr_t>(impl_.get()) / alignof(TensorImpl)) % locks.size()];
}

Tensor Tensor::grad() const {
  std::lock_guard<std::mutex> lock(grad_mutex());
  return Tensor(impl_->grad);
}

void Tensor::set_grad(const Tensor& g) {
  std::shared_ptr<TensorImpl> old;  // released after the lock: its teardown may be long
  std::lock_guard<std::mutex> lock(grad_mutex());
  old = std::exchange(impl_->grad, g.impl_);
}

namespace {

uint64_t next_hook_id() {
  static std::atomic<uint64_t> next_id{1};
  return next_id.fetch_add(1, std::memory_order_relaxed);
}

std::vector<Hook> copy_hooks(const std::vector<std::pair<uint64_t, Hook>>& hooks) {
  std::vector<Hook> copy;
  copy.reserve(hooks.size());
  for (const auto& h : hooks) copy.push_back(h.second);
  return copy;
}

}  // namespace

uint64_t Tensor::register_hook(Hook hook) {
  VK_CHECK(requires_grad(), RuntimeError, "register_hook() on a tensor that does not require grad");
  const uint64_t id = next_hook_id();
  std::lock_guard<std::mutex> lock(grad_mutex());
  impl_->hooks.emplace_back(id, std::move(hook));
  impl_->has_hooks.store(true, std::memory_order_release);
  return id;
}

uint64_t Tensor::register_post_accumulate_hook(Hook hook) {
  VK_CHECK(requires_grad(), RuntimeError,
           "register_post_accumulate_grad_hook() on a tensor that does not require grad");
  VK_CHECK(is_leaf(), RuntimeError,
           "register_post_accumulate_grad_hook(): post accumulate grad hooks cannot be registered "
           "on non-leaf tensors");
  const uint64_t id = next_hook_id();
  std::lock_guard<std::mutex> lock(grad_mutex());
  impl_->post_hooks.emplace_back(id, std::move(hook));
  impl_->has_hooks.store(true, std::memory_order_release);
  return id;
}

void Tensor::remove_hook(uint64_t id) {
  std::vector<std::pair<uint64_t, Hook>> removed;  // destroyed after the lock: a hook may own
  std::lock_guard<std::mutex> lock(grad_mutex());  // Python objects, or tensors
  for (auto* hooks : {&impl_->hooks, &impl_->post_hooks}) {
    auto it =
        std::find_if(hooks->begin(), hooks->end(), [&](const auto& h) { return h.first == id; });
    if (it == hooks->end()) continue;
    removed.push_back(std::move(*it));
    hooks->erase(it);
  }
  impl_->has_hooks.store(!impl_->hooks.empty() || !impl_->post_hooks.empty(),
                         std::memory_order_release);
}

std::vector<Hook> Tensor::hooks() const {
  if (!impl_->has_hooks.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(grad_mutex());
  return copy_hooks(impl_->hooks);
}

std::vector<Hook> Tensor::post_accumulate_hooks() const {
  if (!impl_->has_hooks.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(grad_mutex());
  return copy_hooks(impl_->post_hooks);
}

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype())) + shape_str(shape());
}

}  // namespace vk
