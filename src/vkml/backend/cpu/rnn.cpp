// The recurrent cells on the CPU: each output element (b, j) depends only on the inputs at (b, j)
// (the four gates of unit j, c_prev, the gradient), so a row of H units is a plain loop that the
// compiler vectorises (vmath's sigmoid and tanh, the element-wise ops' own), rows are split over
// the thread pool, and results are bitwise identical at any thread count.
#include "vkml/backend/cpu/rnn.h"

#include <algorithm>

#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/parallel.h"
#include "vkml/backend/cpu/vmath.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

Tensor contiguous_of(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor c = Tensor::empty(x.shape(), x.dtype());
  copy_into(c, x);
  return c;
}

// Rows per parallel range: about kElementwiseGrain / 8 elements (each costs two to three
// transcendental functions, like the libm-bound element-wise ops).
int64_t row_grain(int64_t h) { return std::max<int64_t>(1, kElementwiseGrain / 8 / (5 * h + 1)); }

// One row of h units: a plain loop over separate restrict pointers (one per gate), so that GCC
// vectorises it with vmath's functions inlined (indexing one gates pointer at j + k * h is an
// access pattern it gives up on: the loop then ran scalar, 20 times slower).
template <class T>
void cell_row(const T* __restrict ai, const T* __restrict af, const T* __restrict ag,
              const T* __restrict ao, const T* __restrict c0, T* __restrict ho, T* __restrict co,
              int64_t h) {
  for (int64_t j = 0; j < h; ++j) {
    const T i = vmath::sigmoid(ai[j]), f = vmath::sigmoid(af[j]);
    const T g = vmath::tanh(ag[j]), o = vmath::sigmoid(ao[j]);
    const T c = f * c0[j] + i * g;
    co[j] = c;
    ho[j] = o * vmath::tanh(c);
  }
}

template <class T>
void cell_rows(const T* gates, const T* cp, T* hs, T* cs, int64_t h, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* a = gates + r * 4 * h;
    cell_row<T>(a, a + h, a + 2 * h, a + 3 * h, cp + r * h, hs + r * h, cs + r * h, h);
  }
}

// The gradients of one row; the gradient rows ghr, gcr and the outputs as in cell_row.
template <class T>
void cell_backward_row(const T* __restrict ai, const T* __restrict af, const T* __restrict ag,
                       const T* __restrict ao, const T* __restrict c0, const T* __restrict ghr,
                       const T* __restrict gcr, T* __restrict di, T* __restrict df,
                       T* __restrict dg, T* __restrict dout, T* __restrict dc, int64_t h) {
  for (int64_t j = 0; j < h; ++j) {
    const T i = vmath::sigmoid(ai[j]), f = vmath::sigmoid(af[j]);
    const T g = vmath::tanh(ag[j]), o = vmath::sigmoid(ao[j]);
    const T tc = vmath::tanh(f * c0[j] + i * g);
    const T e = gcr[j] + ghr[j] * o * (T(1) - tc * tc);
    di[j] = e * g * (i * (T(1) - i));
    df[j] = e * c0[j] * (f * (T(1) - f));
    dg[j] = e * i * (T(1) - g * g);
    dout[j] = ghr[j] * tc * (o * (T(1) - o));
    dc[j] = e * f;
  }
}

template <class T>
void cell_backward_rows(const T* gh, const T* gc, const T* gates, const T* cp, T* dgates, T* dcp,
                        int64_t h, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* a = gates + r * 4 * h;
    T* d = dgates + r * 4 * h;
    cell_backward_row<T>(a, a + h, a + 2 * h, a + 3 * h, cp + r * h, gh + r * h, gc + r * h, d,
                         d + h, d + 2 * h, d + 3 * h, dcp + r * h, h);
  }
}

}  // namespace

VK_KERNEL(lstm_cell) {
  (void)a;
  const Tensor gates = contiguous_of(in[0]), cp = contiguous_of(in[1]);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const int64_t b = m.shape[1], h = m.shape[2];
  if (out.numel() == 0) return out;
  VK_DISPATCH_FLOAT(m.dtype, "lstm_cell", {
    const T* gp = gates.data<T>();
    const T* cpp = cp.data<T>();
    T* hs = out.data<T>();
    T* cs = hs + b * h;
    parallel_for(b, row_grain(h),
                 [&](int64_t r0, int64_t r1) { cell_rows<T>(gp, cpp, hs, cs, h, r0, r1); });
  });
  return out;
}

VK_KERNEL(lstm_cell_backward) {
  (void)a;
  const Tensor g = contiguous_of(in[0]), gates = contiguous_of(in[1]), cp = contiguous_of(in[2]);
  Tensor out = Tensor::empty(m.shape, m.dtype);
  const int64_t b = gates.shape()[0], h = cp.shape()[1];
  if (out.numel() == 0) return out;
  VK_DISPATCH_FLOAT(m.dtype, "lstm_cell_backward", {
    const T* gh = g.data<T>();
    const T* gp = gates.data<T>();
    const T* cpp = cp.data<T>();
    T* dg = out.data<T>();
    parallel_for(b, row_grain(h), [&](int64_t r0, int64_t r1) {
      cell_backward_rows<T>(gh, gh + b * h, gp, cpp, dg, dg + b * 4 * h, h, r0, r1);
    });
  });
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
