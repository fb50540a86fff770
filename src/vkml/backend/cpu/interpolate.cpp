// interpolate's linear step along one dim (ops/index.h: interpolate_dim) in one pass: each output
// slice j is x's slices lo[j] and hi[j] weighted by w_lo[j] and w_hi[j]. It was two index_selects,
// two products and a sum, five passes a dim: bilinear upsampling by two to 4 x 512 x 512 floats,
// Zen 4, one thread, 2.4-2.9 -> 0.82 ms (torch 1.46); with its backward 8.2 -> 5.6 (8.6-8.8). The
// products and the sum are each rounded, as those five ops rounded them, in every kernel copy: this
// file is compiled with -ffp-contract=off (CMakeLists.txt), so no copy fuses them into an FMA.
#include "vkml/backend/cpu/interpolate.h"

#include <algorithm>
#include <vector>

#include "vkml/backend/cpu/loops.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/rows.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// A 1-D index read into int64, every value checked against the dim's size.
std::vector<int64_t> read_index(const Tensor& index, int64_t dim, int64_t size) {
  std::vector<int64_t> v(static_cast<size_t>(index.numel()));
  const int64_t stride = index.strides()[0];
  for (int64_t j = 0; j < index.numel(); ++j) {
    v[j] = index.dtype() == DType::Int64 ? index.data<int64_t>()[j * stride]
                                         : index.data<int32_t>()[j * stride];
    VK_CHECK(v[j] >= 0 && v[j] < size, IndexError, "interpolate_dim: index ", v[j],
             " is out of range for dim ", dim, " of size ", size);
  }
  return v;
}

template <class T>
std::vector<T> read_weights(const Tensor& w) {
  std::vector<T> v(static_cast<size_t>(w.numel()));
  for (int64_t j = 0; j < w.numel(); ++j) v[j] = w.data<T>()[j * w.strides()[0]];
  return v;
}

// x laid out (outer, n, inner), out (outer, k, inner): output row r = (o, j) of `inner` elements.
template <class T>
void interpolate_rows(const T* x, T* out, int64_t outer, int64_t n, int64_t inner,
                      const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                      const std::vector<T>& wl, const std::vector<T>& wh) {
  const int64_t k = static_cast<int64_t>(lo.size());
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1));
  parallel_for(outer * k, grain, [&](int64_t b, int64_t e) {
    // by input row o: a division per output row cost more than the row (the last dim's case)
    for (int64_t r = b, o = b / k, j = b % k; r < e; j = 0, ++o) {
      const T* src = x + o * n * inner;
      const int64_t stop = std::min(e - r, k - j);
      T* dst = out + r * inner;
      if (inner == 1) {
        for (int64_t t = j; t < j + stop; ++t) dst[t - j] = src[lo[t]] * wl[t] + src[hi[t]] * wh[t];
      } else {
        for (int64_t t = j; t < j + stop; ++t, dst += inner) {
          const T *a = src + lo[t] * inner, *c = src + hi[t] * inner;
          const T u = wl[t], v = wh[t];
          for (int64_t i = 0; i < inner; ++i) dst[i] = a[i] * u + c[i] * v;
        }
      }
      r += stop;
    }
  });
}

}  // namespace

VK_KERNEL(interpolate_dim) {
  const Tensor x = contiguous_copy(in[0]);
  const int64_t dim = a.dim, n = x.size(dim);
  const std::vector<int64_t> lo = read_index(in[1], dim, n), hi = read_index(in[2], dim, n);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.ndim(); ++d) inner *= x.size(d);
  VK_DISPATCH_FLOAT(x.dtype(), "interpolate_dim",
                    interpolate_rows<T>(x.data<T>(), out.data<T>(), outer, n, inner, lo, hi,
                                        read_weights<T>(in[3]), read_weights<T>(in[4])));
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
