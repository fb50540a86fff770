// Strided loops shared by the CPU kernels.
//
// An element-wise kernel over N operands of one shape calls for_each_run(), which merges
// dimensions that are contiguous for every operand, splits the elements into ranges for the
// thread pool, and hands the body runs along the innermost dimension:
//   body(ptrs, byte_strides, n)  — n elements, operand k at ptrs[k] stepping byte_strides[k].
// A body tests whether every stride equals the element size to take a vectorisable loop.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "vkml/backend/cpu/parallel.h"
#include "vkml/core/tensor.h"

namespace vk::cpu {

template <size_t N>
struct StridedLayout {
  Shape shape;                                // coalesced, innermost last
  std::array<std::vector<int64_t>, N> bytes;  // byte stride of each operand per coalesced dim
  int64_t numel = 1;
};

template <size_t N>
StridedLayout<N> coalesce(const Shape& shape, const std::array<const Tensor*, N>& ts) {
  StridedLayout<N> L;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !L.shape.empty();
    for (size_t k = 0; k < N && merge; ++k)
      merge = L.bytes[k].back() ==
              ts[k]->strides()[d] * static_cast<int64_t>(dtype_size(ts[k]->dtype())) * shape[d];
    if (merge) {
      L.shape.back() *= shape[d];
      for (size_t k = 0; k < N; ++k)
        L.bytes[k].back() = ts[k]->strides()[d] * static_cast<int64_t>(dtype_size(ts[k]->dtype()));
    } else {
      L.shape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k)
        L.bytes[k].push_back(ts[k]->strides()[d] *
                             static_cast<int64_t>(dtype_size(ts[k]->dtype())));
    }
  }
  for (int64_t s : L.shape) L.numel *= s;
  if (L.shape.empty()) {  // a single element
    L.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) L.bytes[k].push_back(0);
  }
  return L;
}

// Runs body over elements [begin, end) of the layout, one innermost run at a time.
template <size_t N, class Body>
void run_range(const StridedLayout<N>& L, std::array<char*, N> base, int64_t begin, int64_t end,
               Body& body) {
  const int64_t nd = static_cast<int64_t>(L.shape.size());
  const int64_t inner = L.shape[nd - 1];
  std::vector<int64_t> idx(nd, 0);
  int64_t rest = begin;
  for (int64_t d = nd - 1; d >= 0; --d) {
    idx[d] = rest % L.shape[d];
    rest /= L.shape[d];
  }
  std::array<int64_t, N> inner_bytes;
  for (size_t k = 0; k < N; ++k) inner_bytes[k] = L.bytes[k][nd - 1];
  int64_t pos = begin;
  while (pos < end) {
    std::array<char*, N> ptrs = base;
    for (size_t k = 0; k < N; ++k)
      for (int64_t d = 0; d < nd; ++d) ptrs[k] += idx[d] * L.bytes[k][d];
    int64_t n = std::min(inner - idx[nd - 1], end - pos);
    body(ptrs, inner_bytes, n);
    pos += n;
    idx[nd - 1] += n;
    for (int64_t d = nd - 1; d > 0 && idx[d] == L.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// ts[0] is usually the output. All operands share `shape` (broadcasting is done by expand views).
template <size_t N, class Body>
void for_each_run(const Shape& shape, const std::array<const Tensor*, N>& ts, Body body,
                  int64_t grain = kElementwiseGrain) {
  StridedLayout<N> L = coalesce(shape, ts);
  std::array<char*, N> base;
  for (size_t k = 0; k < N; ++k) base[k] = static_cast<char*>(ts[k]->raw_data());
  parallel_for(L.numel, grain, [&](int64_t b, int64_t e) { run_range(L, base, b, e, body); });
}

// Element-wise map: out[i] = f(in[i]...) with per-dtype element types Out and In...
template <class Out, class... In, class F>
void map_elements(const Tensor& out, std::array<const Tensor*, sizeof...(In)> ins, F f) {
  constexpr size_t N = sizeof...(In) + 1;
  std::array<const Tensor*, N> ts;
  ts[0] = &out;
  for (size_t k = 0; k < sizeof...(In); ++k) ts[k + 1] = ins[k];
  for_each_run<N>(out.shape(), ts, [&](std::array<char*, N> p, std::array<int64_t, N> s, int64_t n) {
    constexpr std::array<int64_t, N> unit = {static_cast<int64_t>(sizeof(Out)),
                                             static_cast<int64_t>(sizeof(In))...};
    if (s == unit) {
      [&]<size_t... K>(std::index_sequence<K...>) {
        Out* o = reinterpret_cast<Out*>(p[0]);
        std::tuple<const In*...> in{reinterpret_cast<const In*>(p[K + 1])...};
        for (int64_t i = 0; i < n; ++i) o[i] = f(std::get<K>(in)[i]...);
      }(std::index_sequence_for<In...>{});
    } else {
      [&]<size_t... K>(std::index_sequence<K...>) {
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<Out*>(p[0] + i * s[0]) =
              f(*reinterpret_cast<const In*>(p[K + 1] + i * s[K + 1])...);
      }(std::index_sequence_for<In...>{});
    }
  });
}

}  // namespace vk::cpu
