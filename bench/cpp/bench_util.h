// Timing helpers shared by the C++ benchmarks: run a body several times, report the median.
// The machines these run on are shared and noisy; a median of repeats is the honest figure.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace vk::bench {

// Median wall time of one call of fn, in seconds, over `reps` calls after one warm-up call.
template <class F>
double median_seconds(F&& fn, int reps = 11) {
  fn();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Fastest of `reps` calls after one warm-up call: for short loops on a shared machine, the
// run that nothing preempted is the one that measures the code.
template <class F>
double min_seconds(F&& fn, int reps = 15) {
  fn();
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

// Keeps a value alive so the optimiser cannot drop the work that made it.
template <class T>
inline void keep(const T& v) {
  asm volatile("" : : "r,m"(v) : "memory");
}

}  // namespace vk::bench
