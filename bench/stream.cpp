// STREAM triad (a[i] = b[i] + s * c[i], double) with std::thread, first-touch placement, huge
// pages, best of N.
// Bandwidth counts 3 x 8 bytes per element (no write-allocate), as McCalpin's STREAM does.
// Usage: stream [threads] [n_elements] [reps]. Prints one JSON line. Used by bench/compare.py.
#include <sys/mman.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, atoi(argv[1])) : 1;
  const long n = argc > 2 ? atol(argv[2]) : (1L << 25);  // 3 x 256 MiB: far beyond any LLC
  const int reps = argc > 3 ? std::max(2, atoi(argv[3])) : 10;
  // 2 MiB-aligned and in transparent huge pages where the kernel has them, as vkml's allocator
  // asks for its big blocks: with 4 KiB pages the triad measured TLB misses too (in a VM each
  // walks two page tables), and vkml's own a + b ran at 114-141% of that "peak".
  auto array = [n] {
    void* p = nullptr;
    if (posix_memalign(&p, size_t{2} << 20, n * sizeof(double)) != 0) std::abort();
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n * sizeof(double), MADV_HUGEPAGE);
#endif
    return std::unique_ptr<double[], decltype(&std::free)>(static_cast<double*>(p), &std::free);
  };
  auto a = array(), b = array(), c = array();  // uninitialised
  const double s = 3.0;
  std::vector<double> times(reps);
  std::barrier sync(threads + 1);
  auto worker = [&](int t) {
    long lo = n * t / threads, hi = n * (t + 1) / threads;
    for (long i = lo; i < hi; ++i) a[i] = 1.0, b[i] = 2.0, c[i] = 0.5;  // first touch by the owner
    sync.arrive_and_wait();
    for (int r = 0; r < reps; ++r) {
      sync.arrive_and_wait();  // start
      double* __restrict pa = a.get();
      const double* __restrict pb = b.get();
      const double* __restrict pc = c.get();
      for (long i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
      sync.arrive_and_wait();  // stop
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  sync.arrive_and_wait();
  for (int r = 0; r < reps; ++r) {
    sync.arrive_and_wait();
    auto t0 = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    times[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  for (auto& th : pool) th.join();
  double best = *std::min_element(times.begin() + 1, times.end());  // first rep is a warm-up
  double check = a[0] + a[n / 2] + a[n - 1];
  printf("{\"threads\": %d, \"gbs\": %.2f, \"n\": %ld, \"checksum\": %g}\n", threads,
         3.0 * 8.0 * n / best * 1e-9, n, check);
  return 0;
}
