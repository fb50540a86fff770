#include "vkml/backend/cpu/reduce.h"

#include <algorithm>

#include "vkml/backend/cpu/parallel.h"
#include "vkml/ops/op.h"

namespace vk::cpu {
namespace {

// Splits x's dims into kept (outer) and reduced (inner) index spaces.
struct ReducePlan {
  Shape outer_shape, inner_shape;
  Strides outer_strides, inner_strides;
  int64_t outer = 1, inner = 1;
};

ReducePlan plan_reduce(const Tensor& x, const std::vector<int64_t>& dims) {
  ReducePlan p;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    bool reduced = std::binary_search(dims.begin(), dims.end(), d);
    (reduced ? p.inner_shape : p.outer_shape).push_back(x.shape()[d]);
    (reduced ? p.inner_strides : p.outer_strides).push_back(x.strides()[d]);
    (reduced ? p.inner : p.outer) *= x.shape()[d];
  }
  return p;
}

int64_t offset_of(int64_t linear, const Shape& shape, const Strides& strides) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    off += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return off;
}

// out[o] = finish(fold(init, x[o, i] for i in row-major order over the reduced dims)).
// Each output element is reduced by one thread in a fixed order: results never depend on the
// thread count.
template <class T, class Acc, class Fold, class Finish>
void reduce_into(const Tensor& x, const std::vector<int64_t>& dims, T* out, Acc init, Fold fold,
                 Finish finish) {
  ReducePlan p = plan_reduce(x, dims);
  const T* base = x.data<T>();
  parallel_for(p.outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(p.inner, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t o = b; o < e; ++o) {
                   const T* xo = base + offset_of(o, p.outer_shape, p.outer_strides);
                   Acc acc = init;
                   for (int64_t i = 0; i < p.inner; ++i)
                     acc = fold(acc, xo[offset_of(i, p.inner_shape, p.inner_strides)]);
                   out[o] = finish(acc, p.inner);
                 }
               });
}

}  // namespace

VK_KERNEL(sum) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  VK_DISPATCH_NUMERIC(in[0].dtype(), "sum", {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    reduce_into<T>(in[0], a.dims, out.data<T>(), Acc{0}, [](Acc s, T v) { return s + v; },
                   [](Acc s, int64_t) { return static_cast<T>(s); });
  });
  return out;
}

}  // namespace vk::cpu
