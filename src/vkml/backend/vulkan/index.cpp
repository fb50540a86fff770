// Index kernels on the Vulkan device. index_select and gather move elements of any dtype
// (shaders/index_gather.comp); scatter_add adds without atomics (shaders/index_scatter.comp), so
// its sums are the CPU's, in the CPU's order: the index is inverted into buckets the shader walks,
// on the device (index_invert.comp and the sort). None reads the index back: an index out of
// range raises a deferred IndexError at the next host read (Context::expect_in_range).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/memory.h"
#include "vkml/backend/vulkan/movement.h"
#include "vkml/core/error.h"

namespace vk::vulkan {
namespace {

// Push constants of index_gather.comp (std430).
struct GatherParams {
  uint32_t n = 0, ndim = 0;
  int32_t size = 0, x_offset = 0, i_offset = 0, x_dim_stride = 0;
  uint32_t slot = 0;  // the deferred IndexError (Context::expect_in_range)
  uint32_t shape[kMoveDims] = {};
  int32_t x_stride[kMoveDims] = {};
  int32_t i_stride[kMoveDims] = {};
};
static_assert(sizeof(GatherParams) == 124, "index_gather.comp's push constants");

// Push constants of index_scatter.comp (std430).
struct ScatterParams {
  uint32_t n = 0, ndim = 0, dim = 0, size = 0;
  int32_t src_offset = 0;
  uint32_t first = 0, one_line = 0;
  uint32_t shape[kMoveDims] = {};
  uint32_t extent[kMoveDims] = {};
  int32_t src_stride[kMoveDims] = {};
};
static_assert(sizeof(ScatterParams) == 124, "index_scatter.comp's push constants");
constexpr uint32_t kScatterChunk = 4096;  // CHUNK of index_scatter.comp

// A 0-d tensor as a 1-element 1-D view, so kernels always have a dim to index.
Tensor as_1d(const Tensor& t) { return t.ndim() == 0 ? t.alias({1}, {1}, t.offset()) : t; }

void check_index_dtype(const Tensor& index, std::string_view op) {
  VK_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, DTypeError, op,
           ": index must be an int64 or int32 tensor, got ", dtype_name(index.dtype()));
}

// The deferred IndexError of an index out of [0, size) along dim (Context::expect_in_range):
// the shader raises it, the host at its next read.
uint32_t expect_in_range(std::string_view op, int64_t dim, int64_t size) {
  return context().expect_in_range(
      std::string(op), detail::cat(" is out of range for dim ", dim, " of size ", size));
}

// out (fresh, contiguous, index's shape) [p] = x[p with p[dim] = index[p]].
void gather_into(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index,
                 std::string_view op) {
  check_index_dtype(index, op);
  const int es = element_size(x.dtype(), op);
  Strides xs = x.strides();
  xs[dim] = 0;  // the index value steps along dim
  const Strides os = contiguous_strides(index.shape());
  const Walk w = plan_walk(index.shape(), {&os, &xs, &index.strides()}, op);
  if (w.numel == 0) return;
  const int64_t size = x.shape()[dim];
  const int64_t dim_stride = size > 1 ? x.strides()[dim] : 0;
  check_reach(x, x.offset(), w.sizes, w.strides[1], (size - 1) * dim_stride, op);
  check_reach(index, index.offset(), w.sizes, w.strides[2], 0, op);
  GatherParams p;
  p.n = static_cast<uint32_t>(w.numel);
  p.ndim = static_cast<uint32_t>(w.sizes.size());
  p.size = static_cast<int32_t>(std::min<int64_t>(size, std::numeric_limits<int32_t>::max()));
  p.slot = expect_in_range(op, dim, size);
  p.x_offset = static_cast<int32_t>(x.offset());
  p.i_offset = static_cast<int32_t>(index.offset());
  p.x_dim_stride = static_cast<int32_t>(dim_stride);
  for (size_t d = 0; d < w.sizes.size(); ++d) {
    p.shape[d] = static_cast<uint32_t>(w.sizes[d]);
    p.x_stride[d] = static_cast<int32_t>(w.strides[1][d]);
    p.i_stride[d] = static_cast<int32_t>(w.strides[2][d]);
  }
  Buffer* buffers[] = {&bound_buffer(out, op), &context().error_word(), &bound_buffer(x, op),
                       &bound_buffer(index, op)};
  const std::string name =
      "index_gather_" + std::to_string(es) + (index.dtype() == DType::Int64 ? "_i64" : "_i32");
  launch(name, buffers, &p, sizeof(p), w.numel, 2);
}

// Push constants of index_invert.comp (std430).
struct InvertParams {
  uint32_t n = 0, mode = 0, ndim = 0, size = 0, len = 0, inner = 1, slot = 0, idx64 = 0;
  int32_t i_offset = 0;
  uint32_t keys = 0;
  uint32_t shape[kMoveDims] = {};
  int32_t i_stride[kMoveDims] = {};
};
static_assert(sizeof(InvertParams) == 104, "index_invert.comp's push constants");
enum : uint32_t { kKeys = 0, kOffsets = 1, kOrder = 2 };

void invert_pass(const Tensor& out, const Tensor& in, const InvertParams& p, std::string_view op) {
  Buffer* buffers[] = {&bound_buffer(out, op), &context().error_word(), &bound_buffer(in, op)};
  launch("index_invert", buffers, &p, sizeof(p), p.n, 2);
}

// The index inverted on the device: for bucket (line, v), the positions j along dim whose index
// value is v, ascending. A line is a position in index's other dims (row-major); `one_line` when
// index is broadcast along all of them, so that line 0 stands for every line (index_select's and
// index_add's gradients). Bucket keys sorted stably (sort.cpp's merge sort) keep index's
// row-major order within a bucket, so j ascends there: the CPU's order of the sums.
struct Buckets {
  Tensor offsets, order;  // int32: lines * size + 1 offsets into order; order: the j's
  bool one_line = false;
};

Buckets invert(const Tensor& index, int64_t dim, int64_t size, std::string_view op) {
  Buckets b;
  const int64_t len = index.shape()[dim];
  b.one_line = true;
  for (int64_t d = 0; d < index.ndim(); ++d)
    b.one_line = b.one_line && (d == dim || index.shape()[d] == 1 || index.strides()[d] == 0);
  // One line: only the values along dim matter (the index viewed as 1-D).
  const Tensor view =
      b.one_line ? index.alias({len}, {index.strides()[dim]}, index.offset()) : index;
  const int64_t vdim = b.one_line ? 0 : dim;
  InvertParams p;
  p.n = static_cast<uint32_t>(view.numel());
  p.ndim = static_cast<uint32_t>(view.ndim());
  p.size = static_cast<uint32_t>(size);
  p.len = static_cast<uint32_t>(len);
  for (int64_t d = vdim + 1; d < view.ndim(); ++d)
    p.inner *= static_cast<uint32_t>(view.shape()[d]);
  p.idx64 = index.dtype() == DType::Int64 ? 1 : 0;
  p.i_offset = static_cast<int32_t>(view.offset());
  for (int64_t d = 0; d < view.ndim(); ++d) {
    p.shape[d] = static_cast<uint32_t>(view.shape()[d]);
    p.i_stride[d] = static_cast<int32_t>(view.strides()[d]);
  }
  check_reach(view, view.offset(), view.shape(), view.strides(), 0, op);
  const Device device = index.device();
  const Tensor keys = Tensor::empty({view.numel()}, DType::Int32, device);
  p.slot = expect_in_range(op, dim, size);
  invert_pass(keys, view, p, op);
  Attrs sa;
  sa.dim = 0;
  Outputs sorted = sort({keys}, sa, Meta{keys.shape(), DType::Int32, device});
  const int64_t lines = view.numel() / len;
  b.offsets = Tensor::empty({lines * size + 1}, DType::Int32, device);
  p.mode = kOffsets;
  p.keys = p.n;
  p.n = static_cast<uint32_t>(lines * size + 1);
  invert_pass(b.offsets, sorted[0], p, op);
  b.order = Tensor::empty({view.numel()}, DType::Int32, device);
  p.mode = kOrder;
  p.n = p.keys;
  invert_pass(b.order, sorted[1], p, op);
  return b;
}

std::string scatter_variant(DType dtype, std::string_view op) {
  switch (dtype) {
    case DType::Float32:
      return "index_scatter_f32";
    case DType::Int32:
      return "index_scatter_i32";
    case DType::Int64:
      return "index_scatter_i64";
    case DType::Float64:
      VK_CHECK(context().has_float64(), DTypeError, op, ": the vulkan device ",
               context().device_name(), " has no float64 arithmetic (shaderFloat64)");
      return "index_scatter_f64";
    default:
      throw DTypeError(detail::cat(op, ": the vulkan device adds int32, int64, float32 and ",
                                   "float64 tensors, got ", dtype_name(dtype)));
  }
}

}  // namespace

VK_KERNEL(index_select) {
  const char* op = "index_select";
  const Tensor x = as_1d(in[0]);
  const Tensor& index = in[1];
  const int64_t dim = in[0].ndim() == 0 ? 0 : a.dim;
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  // A gather whose index is broadcast along every other dim.
  Shape oshape = x.shape();
  oshape[dim] = index.numel();
  Strides ist(oshape.size(), 0);
  ist[dim] = index.ndim() == 1 ? index.strides()[0] : 0;
  gather_into(out.alias(oshape, contiguous_strides(oshape), 0), x, dim,
              index.alias(oshape, ist, index.offset()), op);
  return out;
}

// interpolate_dim: the two gathers, then lo * w_lo + hi * w_hi by the element-wise kernels (each
// product and the sum rounded, as on the CPU), the weights broadcast along dim.
VK_KERNEL(interpolate_dim) {
  Attrs along_dim;
  along_dim.dim = a.dim;
  const Meta sliced{m.shape, m.dtype, m.device};
  auto weighted = [&](const Tensor& index, const Tensor& w) {
    Strides spread(m.shape.size(), 0);
    spread[static_cast<size_t>(a.dim)] = w.strides()[0];
    const Tensor slices = index_select({in[0], index}, along_dim, sliced)[0];
    return mul({slices, w.alias(m.shape, spread, w.offset())}, no_attrs(), sliced)[0];
  };
  return add({weighted(in[1], in[3]), weighted(in[2], in[4])}, no_attrs(), sliced);
}

VK_KERNEL(gather) {
  const int64_t dim = in[0].ndim() == 0 ? 0 : a.dim;
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  const Tensor x = as_1d(in[0]);
  gather_into(as_1d(out), x, dim, as_1d(in[1]), "gather");
  return out;
}

// Cost, all on the device: the inversion (a sort of the index's bucket keys, O(index log index)),
// then O(out + src) per pass, one pass per kScatterChunk positions along dim (the most a bucket
// can hold: the host does not know the largest bucket without reading it back).
VK_KERNEL(scatter_add) {
  const char* op = "scatter_add";
  const std::string shader = scatter_variant(m.dtype, op);
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  copy_strided(out, in[0], op);
  const int64_t dim = in[0].ndim() == 0 ? 0 : a.dim;
  const Tensor o1 = as_1d(out), index = as_1d(in[1]), src = as_1d(in[2]);
  check_index_dtype(index, op);
  if (index.numel() == 0) return out;
  VK_CHECK(o1.ndim() <= kMoveDims, NotImplementedError, op, ": the vulkan backend scatters into ",
           "at most ", kMoveDims, " dims, got ", o1.describe());
  VK_CHECK(o1.numel() <= std::numeric_limits<int32_t>::max() &&
               index.numel() <= std::numeric_limits<int32_t>::max(),
           SizeError, op, ": more elements than the vulkan backend indexes (2^31 - 1)");
  check_reach(src, src.offset(), index.shape(), src.strides(), 0, op);
  const int64_t size = o1.shape()[dim];
  const Buckets b = invert(index, dim, size, op);
  ScatterParams p;
  p.n = static_cast<uint32_t>(o1.numel());
  p.ndim = static_cast<uint32_t>(o1.ndim());
  p.dim = static_cast<uint32_t>(dim);
  p.size = static_cast<uint32_t>(size);
  p.src_offset = static_cast<int32_t>(src.offset());
  p.one_line = b.one_line ? 1 : 0;
  for (int64_t d = 0; d < o1.ndim(); ++d) {
    p.shape[d] = static_cast<uint32_t>(o1.shape()[d]);
    p.extent[d] = static_cast<uint32_t>(index.shape()[d]);
    p.src_stride[d] = static_cast<int32_t>(index.shape()[d] > 1 ? src.strides()[d] : 0);
  }
  Buffer* buffers[] = {&bound_buffer(out, op), &bound_buffer(src, op), &bound_buffer(b.offsets, op),
                       &bound_buffer(b.order, op)};
  const int64_t largest = index.shape()[dim];
  for (int64_t first = 0; first < largest; first += kScatterChunk) {
    p.first = static_cast<uint32_t>(first);
    launch(shader, buffers, &p, sizeof(p), o1.numel());
  }
  return out;
}

}  // namespace vk::vulkan
