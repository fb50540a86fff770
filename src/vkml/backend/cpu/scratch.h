// Scratch memory for a kernel's intermediate arrays, from vkml's allocator: its big blocks are
// kept for reuse, where a fresh allocation of megabytes per call would be mapped and page-faulted
// in every time (Winograd's 4 MB of transformed tiles ran 2x slower so). Contents start
// unspecified.
#pragma once
#include <cstdint>

#include "vkml/backend/cpu/isa.h"
#include "vkml/core/tensor.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {

template <class T>
class Scratch {
 public:
  explicit Scratch(int64_t n) : t_(Tensor::empty({n}, dtype_of<T>::value)) {}
  T* get() { return t_.data<T>(); }

 private:
  Tensor t_;
};

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
