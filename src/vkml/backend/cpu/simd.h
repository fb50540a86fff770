// Explicit SIMD for the CPU kernels (GCC/Clang vector extensions), shared by the reductions and
// the softmax family.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "vkml/backend/cpu/isa.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

// Explicit SIMD (GCC/Clang vector extensions) where the auto-vectoriser gives up: selects with
// NaN handling (max/min, first index of a value). One machine vector of T.
// The width follows the instruction set the file is compiled for, and vectors never cross a
// function boundary by value (their ABI would depend on it). Results do not depend on the width.
#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif
template <class T, int N>
struct SimdOf {
  typedef T type __attribute__((vector_size(N * sizeof(T))));
};
template <class T, int N = kVecBytes / static_cast<int>(sizeof(T))>
using Simd = typename SimdOf<T, N>::type;

template <class V, class T>
inline void load_simd(V& v, const T* p) {
  std::memcpy(&v, p, sizeof v);
}
template <class V, class T>
inline void store_simd(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

// Accumulates f(p[k]) into 16 double lanes, lane (k mod 16) for element k, keeping the lanes in
// registers. f transforms, in place, a vector of doubles (or one double, for the tail) into what
// is added. The lane of every element is the same at any vector width.
template <class T, class F>
inline void add_lanes16(double* lane, const T* p, int64_t n, F f) {
  constexpr int DW = kVecBytes / 8;  // doubles per vector
  constexpr int NV = 16 / DW;
  using D = Simd<double, DW>;
  D acc[NV];
  for (int v = 0; v < NV; ++v) load_simd(acc[v], lane + v * DW);
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int v = 0; v < NV; ++v) {
      D x;
      if constexpr (std::is_same_v<T, float>) {
        Simd<float, DW> h;
        load_simd(h, p + k + v * DW);
        x = __builtin_convertvector(h, D);
      } else {
        load_simd(x, p + k + v * DW);
      }
      f(x);
      acc[v] += x;
    }
  for (int v = 0; v < NV; ++v) store_simd(lane + v * DW, acc[v]);
  for (int j = 0; k < n; ++k, ++j) {
    double x = static_cast<double>(p[k]);
    f(x);
    lane[j] += x;
  }
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
