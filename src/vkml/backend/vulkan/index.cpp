// Index kernels on the Vulkan device. index_select and gather move elements of any dtype
// (shaders/index_gather.comp); scatter_add adds without atomics (shaders/index_scatter.comp), so
// its sums are the CPU's, in the CPU's order: the host reads the index once, checks it as the
// CPU does, and inverts it into buckets the shader walks.
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
  uint32_t unused = 0;
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
  p.x_offset = static_cast<int32_t>(x.offset());
  p.i_offset = static_cast<int32_t>(index.offset());
  p.x_dim_stride = static_cast<int32_t>(dim_stride);
  for (size_t d = 0; d < w.sizes.size(); ++d) {
    p.shape[d] = static_cast<uint32_t>(w.sizes[d]);
    p.x_stride[d] = static_cast<int32_t>(w.strides[1][d]);
    p.i_stride[d] = static_cast<int32_t>(w.strides[2][d]);
  }
  Buffer* buffers[] = {&bound_buffer(out, op), &bound_buffer(x, op), &bound_buffer(index, op)};
  const std::string name =
      "index_gather_" + std::to_string(es) + (index.dtype() == DType::Int64 ? "_i64" : "_i32");
  launch(name, buffers, &p, sizeof(p), w.numel);
}

// The index values in index's row-major order, read from the device in one copy of the span its
// view covers.
std::vector<int64_t> read_index(const Tensor& index) {
  const int64_t es = static_cast<int64_t>(dtype_size(index.dtype()));
  int64_t lo = index.offset(), hi = index.offset();
  for (int64_t d = 0; d < index.ndim(); ++d) {
    const int64_t reach = (index.shape()[d] - 1) * index.strides()[d];
    (reach > 0 ? hi : lo) += reach;
  }
  std::vector<unsigned char> bytes(static_cast<size_t>((hi - lo + 1) * es));
  copy_bytes(kCPU, bytes.data(), 0, index.device(), index.storage_data(),
             static_cast<size_t>(lo * es), bytes.size());
  std::vector<int64_t> values(static_cast<size_t>(index.numel()));
  std::vector<int64_t> c(static_cast<size_t>(index.ndim()), 0);  // odometer over index's shape
  int64_t at = index.offset() - lo;
  for (int64_t& v : values) {
    if (es == 8) {
      std::memcpy(&v, bytes.data() + at * es, 8);
    } else {
      int32_t v32;
      std::memcpy(&v32, bytes.data() + at * es, 4);
      v = v32;
    }
    for (int64_t d = index.ndim() - 1; d >= 0; --d) {
      at += index.strides()[d];
      if (++c[d] < index.shape()[d]) break;
      at -= c[d] * index.strides()[d];
      c[d] = 0;
    }
  }
  return values;
}

// The index inverted: for bucket (line, v), the positions j along dim whose index value is v,
// ascending (a stable counting sort of index's row-major order). A line is a position in index's
// other dims (row-major); `one_line` when index is broadcast along all of them, so that line 0
// stands for every line (index_select's and index_add's gradients).
struct Buckets {
  std::vector<uint32_t> offsets, order;
  uint32_t largest = 0;
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
  const std::vector<int64_t> values = read_index(view);
  int64_t inner = 1;  // positions after dim, per step along it
  for (int64_t d = vdim + 1; d < view.ndim(); ++d) inner *= view.shape()[d];
  const int64_t lines = static_cast<int64_t>(values.size()) / len;
  b.offsets.assign(static_cast<size_t>(lines * size + 1), 0);
  std::vector<uint32_t> bucket(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    const int64_t v = values[k];
    VK_CHECK(v >= 0 && v < size, IndexError, op, ": index ", v, " is out of range for dim ", dim,
             " of size ", size);
    const int64_t pos = static_cast<int64_t>(k);
    const int64_t line = (pos / (len * inner)) * inner + pos % inner;
    bucket[k] = static_cast<uint32_t>(line * size + v);
    ++b.offsets[bucket[k] + 1];
  }
  for (size_t i = 1; i < b.offsets.size(); ++i) {
    b.largest = std::max(b.largest, b.offsets[i]);
    b.offsets[i] += b.offsets[i - 1];
  }
  std::vector<uint32_t> next(b.offsets.begin(), b.offsets.end() - 1);
  b.order.resize(values.size());
  for (size_t k = 0; k < values.size(); ++k)  // row-major: j ascends within each bucket
    b.order[next[bucket[k]]++] = static_cast<uint32_t>((static_cast<int64_t>(k) / inner) % len);
  return b;
}

// IndexError as the CPU's unless every value of index is in [0, size). The values are read back
// (a wait for the work that wrote them): an index out of range must never give a silent value.
// A check on the device, raised at the next host read, is the faster follow-up.
void check_in_range(const Tensor& index, int64_t dim, int64_t size, std::string_view op) {
  for (const int64_t v : read_index(index))
    VK_CHECK(v >= 0 && v < size, IndexError, op, ": index ", v, " is out of range for dim ", dim,
             " of size ", size);
}

// v as an int32 tensor on `device`.
Tensor upload_u32(const std::vector<uint32_t>& v, Device device) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::Int32, device);
  copy_bytes(device, t.storage_data(), 0, kCPU, v.data(), 0, v.size() * sizeof(uint32_t));
  return t;
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
  check_in_range(index, dim, x.shape()[dim], op);
  // A gather whose index is broadcast along every other dim.
  Shape oshape = x.shape();
  oshape[dim] = index.numel();
  Strides ist(oshape.size(), 0);
  ist[dim] = index.ndim() == 1 ? index.strides()[0] : 0;
  gather_into(out.alias(oshape, contiguous_strides(oshape), 0), x, dim,
              index.alias(oshape, ist, index.offset()), op);
  return out;
}

VK_KERNEL(gather) {
  const int64_t dim = in[0].ndim() == 0 ? 0 : a.dim;
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  const Tensor x = as_1d(in[0]);
  check_in_range(in[1], dim, x.shape()[dim], "gather");
  gather_into(as_1d(out), x, dim, as_1d(in[1]), "gather");
  return out;
}

// Cost: one read of the index to the host (a wait for the device) and a counting sort there,
// O(index); on the device O(out + src) per pass, and one pass per kScatterChunk repeats of the
// most repeated (line, value).
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
  const Tensor offsets = upload_u32(b.offsets, m.device), order = upload_u32(b.order, m.device);
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
  Buffer* buffers[] = {&bound_buffer(out, op), &bound_buffer(src, op), &bound_buffer(offsets, op),
                       &bound_buffer(order, op)};
  for (uint32_t first = 0; first < b.largest; first += kScatterChunk) {
    p.first = first;
    launch(shader, buffers, &p, sizeof(p), o1.numel());
  }
  return out;
}

}  // namespace vk::vulkan
