// The one thread pool vkml owns. Work is split into contiguous ranges; which thread runs a range
// never changes a result, because kernels fix their summation order independently of the split.
#pragma once
#include <cstdint>
#include <functional>

namespace vk::cpu {

int num_threads();
void set_num_threads(int n);  // n >= 1; also called from VKML_NUM_THREADS at start-up

// Runs fn(begin, end) over [0, n) in ranges of at least `grain` items. Runs inline when the
// work is small, when only one thread is set, or when called from inside another parallel_for.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Elements per range below which element-wise work is not worth a thread hand-off.
inline constexpr int64_t kElementwiseGrain = 32768;

}  // namespace vk::cpu
