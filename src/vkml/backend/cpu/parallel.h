// The one thread pool vkml owns. Work is split into contiguous ranges; which thread runs a range
// never changes a result, because kernels fix their summation order independently of the split.
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

namespace vk::cpu {

int num_threads();
// n >= 1 (else RuntimeError, as torch); counts above max(1024, hardware threads) are capped.
// If the system cannot create the threads, RuntimeError and the pool keeps its previous size.
void set_num_threads(int64_t n);

// A borrowed callable fn(begin, end): a pointer and a trampoline, so handing a lambda to the
// pool allocates nothing (std::function would for any lambda capturing more than two words).
class RangeFn {
 public:
  RangeFn() = default;  // calls nothing; only a placeholder to assign to
  template <class F>
  RangeFn(F& f)  // NOLINT: implicit, like std::function_ref
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, int64_t b, int64_t e) { (*static_cast<F*>(o))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

 private:
  void* obj_ = nullptr;
  void (*call_)(void*, int64_t, int64_t) = nullptr;
};

// parallel_for's out-of-line part: splits [0, n) among the pool when that pays (more than one
// thread, not already inside a parallel region, the pool free); otherwise runs fn(0, n) here.
void parallel_run(int64_t n, int64_t grain, RangeFn fn);

// Runs fn(begin, end) over [0, n) in ranges of at least `grain` items. Runs inline when the
// work is small, when only one thread is set, or when called from inside another parallel_for.
// Range boundaries other than 0 and n are multiples of 64 items when each range has at least
// 1024: every element of a vectorised loop then takes the same code path (main body or tail)
// at any thread count, and neighbouring threads never write the same cache line.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  if (n <= grain) {  // the common small case: no indirection at all
    fn(int64_t{0}, n);
    return;
  }
  std::remove_reference_t<F>& f = fn;
  parallel_run(n, grain, RangeFn(f));
}

// Elements per range below which element-wise work is not worth a thread hand-off: a simple
// op on 64K cached floats takes about 10-20 us, a wake-up of a sleeping worker up to tens.
inline constexpr int64_t kElementwiseGrain = 65536;

}  // namespace vk::cpu
