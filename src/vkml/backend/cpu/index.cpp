#include "vkml/backend/cpu/index.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/loops.h"
#include "vkml/backend/cpu/parallel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

[[noreturn]] void index_error(const char* op, int64_t value, int64_t dim, int64_t size) {
  throw IndexError(
      detail::cat(op, ": index ", value, " is out of range for dim ", dim, " of size ", size));
}

inline void check_index(const char* op, int64_t value, int64_t dim, int64_t size) {
  if (value < 0 || value >= size) [[unlikely]]
    index_error(op, value, dim, size);
}

// Calls f(I{}) with I the C++ type of an index dtype (int64 or int32).
template <class F>
void with_index_type(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Int64:
      f(int64_t{});
      break;
    case DType::Int32:
      f(int32_t{});
      break;
    default:
      throw DTypeError(
          detail::cat(op, ": index must be an int64 or int32 tensor, got ", dtype_name(t)));
  }
}

// A 0-d tensor as a 1-element 1-D view, so kernels always have a dim to index.
Tensor as_1d(const Tensor& t) { return t.ndim() == 0 ? t.alias({1}, {1}, t.offset()) : t; }

// out[p] = x[p with p[dim] replaced by index[p]], for every position p of index's shape (out has
// that shape too). x is viewed with index's shape and a zero stride along dim, so the strided
// loop hands the body x's element at index 0 of dim; the index value then steps along dim.
void gather_into(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index,
                 const char* op, int64_t report_dim) {
  const int64_t es = static_cast<int64_t>(dtype_size(x.dtype()));
  const int64_t size = x.shape()[dim];
  const int64_t dim_bytes = x.strides()[dim] * es;
  Strides xs = x.strides();
  xs[dim] = 0;
  Tensor xv = x.alias(index.shape(), xs, x.offset());
  VK_DISPATCH_STORAGE(x.dtype(), op, {
    with_index_type(index.dtype(), op, [&](auto tag) {
      using I = decltype(tag);
      for_each_run<3>(index.shape(), {&out, &index, &xv},
                      [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          const int64_t v = *reinterpret_cast<const I*>(p[1] + i * s[1]);
                          check_index(op, v, report_dim, size);
                          *reinterpret_cast<T*>(p[0] + i * s[0]) =
                              *reinterpret_cast<const T*>(p[2] + i * s[2] + v * dim_bytes);
                        }
                      });
    });
  });
}

// index_select of single elements (inner extent 1) as W-sized words: dst[(o, j)] = src[(o,
// idx[j])].
template <class W>
void copy_rows_typed(char* dst, const char* src, int64_t rows, int64_t k, int64_t n,
                     const std::vector<int64_t>& idx, int64_t grain) {
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    W* d = reinterpret_cast<W*>(dst);
    const W* s = reinterpret_cast<const W*>(src);
    const int64_t* ix = idx.data();
    // by output row (o, .): a division per element cost 2 ns (a gather along the last dim)
    for (int64_t r = b, o = b / k, j = b % k; r < e; j = 0, ++o) {
      const W* row = s + o * n;
      const int64_t stop = std::min(e - r, k - j);
      for (int64_t t = 0; t < stop; ++t) d[r + t] = row[ix[j + t]];
      r += stop;
    }
  });
}

}  // namespace

VK_KERNEL(index_select) {
  const char* op = "index_select";
  const Tensor x = as_1d(in[0]);
  const Tensor& index = in[1];
  const int64_t dim = in[0].ndim() == 0 ? 0 : a.dim;
  const int64_t k = index.numel(), n = x.shape()[dim];
  // Read and check every index first: the copy below then runs without checks.
  std::vector<int64_t> idx(static_cast<size_t>(k));
  const int64_t istride = index.ndim() == 1 ? index.strides()[0] : 0;
  with_index_type(index.dtype(), op, [&](auto tag) {
    using I = decltype(tag);
    const I* p = static_cast<const I*>(index.raw_data());
    for (int64_t j = 0; j < k; ++j) {
      idx[j] = static_cast<int64_t>(p[j * istride]);
      check_index(op, idx[j], dim, n);
    }
  });
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  Shape oshape = x.shape();
  oshape[dim] = k;
  Tensor xc = x;
  if (!x.is_contiguous()) {
    if (k <= n) {
      // Strided input, output no larger: a gather with the index broadcast along the other dims.
      Strides ist(oshape.size(), 0);
      ist[dim] = istride;
      gather_into(out.alias(oshape, contiguous_strides(oshape), 0), x, dim,
                  index.alias(oshape, ist, index.offset()), op, dim);
      return out;
    }
    // The output is larger than x: one strided pass to lay x out, then whole-row copies.
    xc = Tensor::empty(x.shape(), x.dtype());
    copy_into(xc, x);
  }
  // Contiguous input: row r = (o, j) of the output is row (o, idx[j]) of x, `inner` elements.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape()[d];
  for (int64_t d = dim + 1; d < x.ndim(); ++d) inner *= x.shape()[d];
  const int64_t es = static_cast<int64_t>(dtype_size(x.dtype()));
  const int64_t row_bytes = inner * es, rows = outer * k;
  char* dst = static_cast<char*>(out.raw_data());
  const char* src = static_cast<const char*>(xc.raw_data());
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / inner);
  if (inner == 1 && es == 8) {
    copy_rows_typed<uint64_t>(dst, src, rows, k, n, idx, grain);
  } else if (inner == 1 && es == 4) {
    copy_rows_typed<uint32_t>(dst, src, rows, k, n, idx, grain);
  } else if (inner == 1 && es == 2) {
    copy_rows_typed<uint16_t>(dst, src, rows, k, n, idx, grain);
  } else if (inner == 1 && es == 1) {
    copy_rows_typed<uint8_t>(dst, src, rows, k, n, idx, grain);
  } else {
    parallel_for(rows, grain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        std::memcpy(dst + r * row_bytes, src + ((r / k) * n + idx[r % k]) * row_bytes,
                    static_cast<size_t>(row_bytes));
    });
  }
  return out;
}

VK_KERNEL(gather) {
  const int64_t dim = in[0].ndim() == 0 ? 0 : a.dim;
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  const Tensor index = as_1d(in[1]);
  gather_into(as_1d(out), as_1d(in[0]), dim, index, "gather", dim);
  return out;
}

namespace {

// dst[t] += src[t] over a run of n elements, strides in bytes; contiguous runs vectorise (dst and
// src are distinct tensors: the kernel's fresh output and its src).
template <class T>
void add_run(char* dst, int64_t ds, const char* src, int64_t ss, int64_t n) {
  if (ds == sizeof(T) && ss == sizeof(T)) {
    T* __restrict d = reinterpret_cast<T*>(dst);
    const T* __restrict x = reinterpret_cast<const T*>(src);
    for (int64_t t = 0; t < n; ++t) d[t] += x[t];
    return;
  }
  for (int64_t t = 0; t < n; ++t)
    *reinterpret_cast<T*>(dst + t * ds) += *reinterpret_cast<const T*>(src + t * ss);
}

}  // namespace

// out = base, then out[q with dim = index[p]] += src[p] for every position p of index's shape
// (q: p's other coordinates). The work is split over those other coordinates ("lines" along dim):
// a destination is only reached from its own line, and each line adds its contributions in
// index order, serially, so the sum is the same at any thread count.
VK_KERNEL(scatter_add) {
  const char* op = "scatter_add";
  Tensor out = Tensor::empty(m.shape, m.dtype);
  copy_into(out, in[0]);
  const int64_t dim = in[0].ndim() == 0 ? 0 : a.dim;
  const Tensor o1 = as_1d(out), index = as_1d(in[1]), src = as_1d(in[2]);
  const int64_t lines_len = index.shape()[dim], size = o1.shape()[dim];
  Shape outer = index.shape();
  outer.erase(outer.begin() + dim);
  if (lines_len == 0 || numel_of(outer) == 0) return out;
  auto drop_dim = [&](const Tensor& t) {
    Strides st = t.strides();
    st.erase(st.begin() + dim);
    return t.alias(outer, st, t.offset());
  };
  const Tensor ov = drop_dim(o1), iv = drop_dim(index), sv = drop_dim(src);
  const int64_t es = static_cast<int64_t>(dtype_size(m.dtype));
  const int64_t ob = o1.strides()[dim] * es, sb = src.strides()[dim] * es;
  const int64_t ib = index.strides()[dim] * static_cast<int64_t>(dtype_size(index.dtype()));
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / lines_len);
  VK_DISPATCH_NUMERIC(m.dtype, op, {
    with_index_type(index.dtype(), op, [&](auto tag) {
      using I = decltype(tag);
      for_each_run<3>(
          outer, {&ov, &iv, &sv},
          [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
            if (s[1] == 0) {  // one index for the whole run: index_select's and embedding's rule
              for (int64_t j = 0; j < lines_len; ++j) {
                const int64_t v = *reinterpret_cast<const I*>(p[1] + j * ib);
                check_index(op, v, dim, size);
                add_run<T>(p[0] + v * ob, s[0], p[2] + j * sb, s[2], n);
              }
              return;
            }
            // n neighbouring lines. Each output element takes its lines in the order of j either
            // way; the inner loop runs along memory: along the lines where they are the closer
            // in memory (dim innermost: scatter_add(1, ...) of rows of 1024, 6x faster), else
            // across them.
            if (std::llabs(ib) < std::llabs(s[1])) {
              for (int64_t t = 0; t < n; ++t)
                for (int64_t j = 0; j < lines_len; ++j) {
                  const int64_t v = *reinterpret_cast<const I*>(p[1] + t * s[1] + j * ib);
                  check_index(op, v, dim, size);
                  *reinterpret_cast<T*>(p[0] + t * s[0] + v * ob) +=
                      *reinterpret_cast<const T*>(p[2] + t * s[2] + j * sb);
                }
              return;
            }
            for (int64_t j = 0; j < lines_len; ++j) {
              const char* ij = p[1] + j * ib;
              const char* sj = p[2] + j * sb;
              for (int64_t t = 0; t < n; ++t) {
                const int64_t v = *reinterpret_cast<const I*>(ij + t * s[1]);
                check_index(op, v, dim, size);
                *reinterpret_cast<T*>(p[0] + t * s[0] + v * ob) +=
                    *reinterpret_cast<const T*>(sj + t * s[2]);
              }
            }
          },
          grain);
    });
  });
  return out;
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
