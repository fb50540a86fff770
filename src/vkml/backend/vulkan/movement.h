// Data movement on the Vulkan device for every dtype, shared by the shape, index and creation
// kernels (shape.cpp, index.cpp, creation.cpp): strided copies and fills through
// shaders/shape_copy.comp, keyed on the element size (bool 1 byte, needing 8-bit storage; int32
// and float32 4; int64 and float64 8, moved as uint pairs), and the checks every such launch makes.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vkml/backend/vulkan/context.h"
#include "vkml/core/tensor.h"

namespace vk::vulkan {

inline constexpr int kMoveDims = 8;  // dims a walk keeps after merging (push constants: 128 bytes)

// A walk over a shape as at most kMoveDims dims: dims of size 1 dropped, and neighbours merged
// where every tensor steps through them as through one dim. strides[k] is tensor k's.
struct Walk {
  int64_t numel = 0;
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
};
// NotImplementedError naming op when more than kMoveDims dims remain; SizeError when the shape has
// more elements than 32-bit indices reach.
Walk plan_walk(const Shape& shape, const std::vector<const Strides*>& strides, std::string_view op);

// SizeError naming op unless every element t reaches from `offset` over (sizes, strides), plus
// `extra` (a further reach, such as an index times a stride), lies in [0, 2^31).
void check_reach(const Tensor& t, int64_t offset, const std::vector<int64_t>& sizes,
                 const std::vector<int64_t>& strides, int64_t extra, std::string_view op);

// The element size the shaders move t's dtype as (1, 2, 4 or 8); DTypeError naming op and the
// device for a 1- or 2-byte dtype on a device without 8- or 16-bit storage.
int element_size(DType dtype, std::string_view op);

// Runs shader `name` over `buffers` (the first `writes` written) with push constants `push`, one
// invocation per element of n (local size 256).
void launch(std::string_view name, std::span<Buffer* const> buffers, const void* push,
            uint32_t push_bytes, int64_t n, uint32_t writes = 1);

// dst = src over one shape, each by its own offset and strides (any, negative too); one dtype.
void copy_strided(const Tensor& dst, const Tensor& src, std::string_view op);
// Every element of dst = the value whose bytes are `bits` (low bytes first, as dst's dtype).
void fill_bits(const Tensor& dst, uint64_t bits, std::string_view op);

// v's bytes as fill_bits takes them.
template <class T>
uint64_t bits_of(T v) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

}  // namespace vk::vulkan
