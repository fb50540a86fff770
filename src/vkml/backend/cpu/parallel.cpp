#include "vkml/backend/cpu/parallel.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace vk::cpu {
namespace {

thread_local bool t_inside_pool = false;

constexpr int64_t kRangeAlign = 64;         // items: see parallel_for in parallel.h
constexpr int64_t kAlignedRangeMin = 1024;  // ranges at least this long get aligned boundaries

class ThreadPool {
 public:
  explicit ThreadPool(int n) { resize(n); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int n) {
    std::lock_guard<std::mutex> use(use_mutex_);
    stop_workers();
    stopping_ = false;
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, i, g = generation_] { work(i, g); });
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
      pending_ = static_cast<int>(parts) - 1;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    run_part(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
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
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        if (index >= parts_) continue;
      }
      run_part(index);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
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
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

int initial_threads() {
  if (const char* env = std::getenv("VKML_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& pool() {
  static ThreadPool p(initial_threads());
  return p;
}

}  // namespace

int num_threads() { return pool().size(); }

void set_num_threads(int n) { pool().resize(std::max(1, n)); }

void parallel_run(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (n <= grain || t_inside_pool || pool().size() == 1 || !pool().run(n, grain, fn)) fn(0, n);
}

}  // namespace vk::cpu
