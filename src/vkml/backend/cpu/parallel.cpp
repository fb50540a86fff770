#include "vkml/backend/cpu/parallel.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "vkml/core/error.h"

namespace vk::cpu {
namespace {

thread_local bool t_inside_pool = false;

constexpr int64_t kRangeAlign = 64;         // items: see parallel_for in parallel.h
constexpr int64_t kAlignedRangeMin = 1024;  // ranges at least this long get aligned boundaries

// How long a worker keeps polling for the next job after finishing one, and the caller for the
// workers to finish, before each sleeps on its condition variable. Waking a sleeping thread
// costs a system call on each side and a scheduler round trip (tens of microseconds), as much
// as a small kernel's whole work; training runs parallel regions back to back, so a short poll
// usually catches the next one. 200 us covers the Python between two ops of a module's forward
// (20 us did not: the CNN step at 2 threads was slower than at 1); libgomp polls about as long.
// Bounded, so an idle pool costs nothing after it; it yields the core after kSpin / 8.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls done() for up to kSpin; true when it became true. After the first few microseconds
// each poll also yields the core: where more threads are runnable than there are cores, the
// thread being waited for may need this one's.
template <class Done>
bool spin_until(Done done) {
  if (done()) return true;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      cpu_relax();
      if (done()) return true;
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited >= kSpin) return done();
    if (waited >= kSpin / 8) std::this_thread::yield();
  }
}

class ThreadPool {
 public:
  explicit ThreadPool(int n) { resize(n); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Replaces the workers with n - 1 new ones. When the system cannot create them all, the pool
  // goes back to its previous size (the threads already made are joined, none is left behind)
  // and RuntimeError says so.
  void resize(int n) {
    std::lock_guard<std::mutex> use(use_mutex_);
    const int before = size();
    stop_workers();
    try {
      start_workers(n);
    } catch (const std::exception& e) {
      stop_workers();
      try {
        start_workers(before);
      } catch (const std::exception&) {
        stop_workers();  // not even the old size: run single-threaded rather than half-made
      }
      throw RuntimeError(detail::cat("set_num_threads(", n, "): could not start ", n - 1,
                                     " worker threads (", e.what(), "); the pool keeps ", size(),
                                     " thread", size() == 1 ? "" : "s"));
    }
  }

  // Returns false (and runs nothing) when another caller holds the pool.
  bool run(int64_t n, int64_t grain, RangeFn fn) {
    std::unique_lock<std::mutex> use(use_mutex_, std::try_to_lock);
    if (!use.owns_lock()) return false;
    int64_t parts = std::min<int64_t>(size(), (n + grain - 1) / grain);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = fn;
      n_ = n;
      parts_ = parts;
      align_ = n / parts >= kAlignedRangeMin ? kRangeAlign : 1;
      pending_.store(static_cast<int>(parts) - 1, std::memory_order_relaxed);
      error_ = nullptr;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();  // no system call when every worker is still polling
    run_part(0);
    auto finished = [this] { return pending_.load(std::memory_order_acquire) == 0; };
    if (!spin_until(finished)) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, finished);
    }
    std::lock_guard<std::mutex> lock(mutex_);  // orders the workers' writes of error_
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  // Where part p starts: an even share, rounded down to a multiple of align_ (see parallel.h).
  int64_t boundary(int64_t part) const {
    if (part == parts_) return n_;
    int64_t b = n_ * part / parts_;
    return b - b % align_;
  }

  void run_part(int64_t part) {
    int64_t begin = boundary(part), end = boundary(part + 1);
    t_inside_pool = true;
    try {
      if (begin < end) fn_(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_inside_pool = false;
  }

  // `seen` starts at the generation current at creation: a new worker must not mistake the
  // last finished job for a new one.
  void work(int index, uint64_t seen) {
    for (;;) {
      spin_until([&] {
        return generation_.load(std::memory_order_acquire) != seen ||
               stopping_.load(std::memory_order_relaxed);
      });
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        if (index >= parts_) continue;
      }
      run_part(index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);  // the caller may be between its check and wait
        done_.notify_one();
      }
    }
  }

  void start_workers(int n) {
    stopping_ = false;
    workers_.reserve(static_cast<size_t>(std::max(n - 1, 0)));
    for (int i = 1; i < n; ++i)
      workers_.emplace_back([this, i, g = generation_.load()] { work(i, g); });
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  std::mutex use_mutex_;  // one parallel_for at a time; others run inline
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  RangeFn fn_;
  int64_t n_ = 0, parts_ = 0, align_ = 1;
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  std::exception_ptr error_;
};

// More threads than this is a mistake (set_num_threads(2**31 - 1)), not a request the system
// could meet: the count is capped here, before any thread is created. Torch accepts any count.
int max_threads() { return static_cast<int>(std::max(1024u, std::thread::hardware_concurrency())); }

// The CPUs this process may run on: its affinity mask (taskset, a container's cpuset, an MPI
// rank's binding), as libgomp and so torch count them, not the machine's. Two workers on one
// CPU poll and yield to each other: under `taskset -c 1` on a 2-CPU machine, a gpt_small step
// took 29.8 ms with 2 threads against 22.4 with 1.
int cpus_available() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));  // > 1024 CPUs
}

int initial_threads() {
  if (const char* env = std::getenv("VKML_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return std::min(n, max_threads());
  }
  return cpus_available();
}

// The pool, created on first use. A child of fork() has none of its workers (only the thread
// that forked is copied), so it must not wait for them: the child drops the parent's pool without
// destroying it (joining threads that do not exist would hang, and destroying unjoined
// std::threads terminates) and builds its own of the same size on first use, as OpenBLAS and
// PyTorch do.
class PoolHolder {
 public:
  static PoolHolder& instance() {
    static PoolHolder h;
    return h;
  }

  ThreadPool& get() {
    if (ThreadPool* p = current_.load(std::memory_order_acquire)) return *p;
    while (creating_.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
    if (!owned_) {
      owned_ =
          std::make_unique<ThreadPool>(size_after_fork_ ? size_after_fork_ : initial_threads());
      current_.store(owned_.get(), std::memory_order_release);
    }
    creating_.clear(std::memory_order_release);
    return *owned_;
  }

 private:
  PoolHolder() {
    pthread_atfork(nullptr, nullptr, [] { instance().forget_after_fork(); });
  }

  void forget_after_fork() {  // in the child, where this is the only thread
    creating_.clear();
    current_.store(nullptr);
    if (!owned_) return;
    size_after_fork_ = owned_->size();
    (void)owned_.release();  // the parent's workers, locks and all: unusable here, left behind
  }

  std::atomic<ThreadPool*> current_{nullptr};
  std::unique_ptr<ThreadPool> owned_;
  std::atomic_flag creating_ = ATOMIC_FLAG_INIT;
  int size_after_fork_ = 0;
};

ThreadPool& pool() { return PoolHolder::instance().get(); }

}  // namespace

int num_threads() { return pool().size(); }

void set_num_threads(int64_t n) {
  VK_CHECK(n >= 1, RuntimeError, "set_num_threads expects a positive integer, got ", n);
  pool().resize(static_cast<int>(std::min<int64_t>(n, max_threads())));
}

void parallel_run(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (n <= grain || t_inside_pool || pool().size() == 1 || !pool().run(n, grain, fn)) fn(0, n);
}

}  // namespace vk::cpu
