// Element-wise float32 maps with a fast path that is right only for some arguments (exp's normal
// range, sin's reduction up to 2^20, atan2 away from zeros and infinities): each block of 256 runs
// the fast function, vectorised, while it checks its arguments; a block where any argument is out
// of the fast path's domain is computed again element by element by the whole function, which
// must give the fast path's bits where both are right. So no result depends on its neighbours,
// on the block boundaries or on the thread split.
#pragma once
#include <algorithm>
#include <cstdint>

#include "vkml/backend/cpu/isa.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// y[i] = fast(x[i]...) for i < n, or whole(x[i]...) in a block where in_domain(x[i]...) fails for
// some i (a bool: NaN arguments must fail it where fast is wrong for them).
template <class InDomain, class Fast, class Whole, class... In>
void map_checked_blocks(float* y, int64_t n, InDomain in_domain, Fast fast, Whole whole,
                        const In*... x) {
  constexpr int64_t kBlock = 256;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t k = std::min(kBlock, n - i0);
    float* ys = y + i0;
    int all_in = 1;
    for (int64_t i = 0; i < k; ++i) {
      all_in &= static_cast<int>(in_domain(x[i0 + i]...));
      ys[i] = fast(x[i0 + i]...);
    }
    if (!all_in)
      for (int64_t i = 0; i < k; ++i) ys[i] = whole(x[i0 + i]...);
  }
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
