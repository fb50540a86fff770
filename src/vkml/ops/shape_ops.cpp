// Shape ops. Most return views; each rule undoes exactly what the forward did to the layout.
#include "vkml/ops/shape_ops.h"

#include <algorithm>
#include <numeric>

#include "vkml/backend/cpu/shape.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/todo.h"

namespace vk {
namespace {

Meta infer_reshape(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(numel_of(a.shape) == in[0].numel(), ShapeError, op, ": cannot view a tensor of shape ",
           shape_str(in[0].shape()), " (", in[0].numel(), " elements) as shape ",
           shape_str(a.shape));
  return {a.shape, in[0].dtype()};
}

Meta infer_permute(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& x = in[0];
  VK_CHECK(static_cast<int64_t>(a.dims.size()) == x.ndim(), ShapeError, op, ": permutation of ",
           a.dims.size(), " dims for a tensor of shape ", shape_str(x.shape()));
  std::vector<bool> used(a.dims.size(), false);
  Shape s;
  for (int64_t d : a.dims) {
    VK_CHECK(d >= 0 && d < x.ndim() && !used[d], ShapeError, op, ": ", shape_str(a.dims),
             " is not a permutation of the dims of a tensor of shape ", shape_str(x.shape()));
    used[d] = true;
    s.push_back(x.shape()[d]);
  }
  return {s, x.dtype()};
}

Meta infer_expand(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Shape& from = in[0].shape();
  VK_CHECK(a.shape.size() >= from.size(), ShapeError, op, ": cannot expand shape ",
           shape_str(from), " to fewer dims ", shape_str(a.shape));
  size_t lead = a.shape.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    VK_CHECK(from[i] == a.shape[lead + i] || from[i] == 1, ShapeError, op, ": cannot expand shape ",
             shape_str(from), " to ", shape_str(a.shape));
  return {a.shape, in[0].dtype()};
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& p) {
  std::vector<int64_t> inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<int64_t>(i);
  return inv;
}

}  // namespace

void add_shape_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Reshape, .name = "reshape", .arity = 1,
                 .signature = "reshape(x, shape)",
                 .summary = "the same elements in row-major order with another shape (a view when "
                            "the strides allow)",
                 .infer = infer_reshape, .cpu = cpu::reshape,
                 .grad = [](const GradCtx& c) -> Grads { return {reshape(c.grad, c.in[0].shape())}; },
                 .grad_doc = "dx = reshape(g, x.shape)"});
  ops.push_back({.kind = OpKind::Permute, .name = "permute", .arity = 1,
                 .signature = "permute(x, dims)", .summary = "a view with the dims reordered",
                 .infer = infer_permute, .cpu = cpu::permute,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {permute(c.grad, inverse_permutation(c.attrs.dims))};
                 },
                 .grad_doc = "dx = permute(g, inverse permutation)"});
  ops.push_back({.kind = OpKind::Expand, .name = "expand", .arity = 1,
                 .signature = "expand(x, shape)",
                 .summary = "a view repeating size-1 dims (stride 0) and adding leading dims",
                 .infer = infer_expand, .cpu = cpu::expand,
                 .grad = [](const GradCtx& c) -> Grads { return {sum_to(c.grad, c.in[0].shape())}; },
                 .grad_doc = "dx = g summed over the stretched and added dims (sum_to)"});
  ops.push_back({.kind = OpKind::Contiguous, .name = "contiguous", .arity = 1,
                 .signature = "contiguous(x)", .summary = "a row-major copy of x",
                 .infer = infer_same_as_first, .cpu = cpu::contiguous,
                 .grad = [](const GradCtx& c) -> Grads { return {c.grad}; },
                 .grad_doc = "dx = g"});
  ops.push_back(todo_op(OpKind::Slice, "slice", 1));
  ops.push_back(todo_op(OpKind::SliceBackward, "slice_backward", 1));
  ops.push_back(todo_op(OpKind::Cat, "cat", -1));
  ops.push_back(todo_op(OpKind::Stack, "stack", -1));
  ops.push_back(todo_op(OpKind::Pad, "pad", 1));
  ops.push_back(todo_op(OpKind::Flip, "flip", 1));
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape s = shape;
  auto infer_at = std::find(s.begin(), s.end(), -1);
  if (infer_at != s.end()) {
    VK_CHECK(std::count(s.begin(), s.end(), -1) == 1, ShapeError,
             "reshape: only one dimension can be -1, got ", shape_str(shape));
    int64_t known = 1;
    for (int64_t d : s)
      if (d != -1) known *= d;
    VK_CHECK(known != 0 && x.numel() % known == 0, ShapeError, "reshape: cannot view shape ",
             shape_str(x.shape()), " as ", shape_str(shape));
    *infer_at = x.numel() / known;
  }
  if (s == x.shape()) return x;
  Attrs a;
  a.shape = s;
  return dispatch(OpKind::Reshape, {x}, a);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.ndim() == 0) return reshape(x, {1});
  int64_t s = wrap_dim(start_dim, x.ndim(), "flatten"), e = wrap_dim(end_dim, x.ndim(), "flatten");
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  int64_t n = 1;
  for (int64_t i = s; i <= e; ++i) n *= x.shape()[i];
  shape.push_back(n);
  shape.insert(shape.end(), x.shape().begin() + e + 1, x.shape().end());
  return reshape(x, shape);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  Attrs a;
  for (int64_t d : dims) a.dims.push_back(d < 0 ? d + x.ndim() : d);
  return dispatch(OpKind::Permute, {x}, a);
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  std::vector<int64_t> p(x.ndim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[wrap_dim(dim0, x.ndim(), "transpose")], p[wrap_dim(dim1, x.ndim(), "transpose")]);
  return permute(x, p);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  Shape s = shape;
  size_t lead = s.size() >= x.shape().size() ? s.size() - x.shape().size() : 0;
  for (size_t i = lead; i < s.size(); ++i)
    if (s[i] == -1) s[i] = x.shape()[i - lead];
  if (s == x.shape()) return x;
  Attrs a;
  a.shape = s;
  return dispatch(OpKind::Expand, {x}, a);
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) { return expand(x, shape); }

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  size_t lead = x.shape().size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < x.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && x.shape()[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  Tensor s = dims.empty() ? x : sum(x, dims, true);
  return reshape(s, shape);
}

Tensor squeeze(const Tensor& x) {
  Shape s;
  for (int64_t d : x.shape())
    if (d != 1) s.push_back(d);
  return reshape(x, s);
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  if (x.ndim() == 0) return x;
  int64_t d = wrap_dim(dim, x.ndim(), "squeeze");
  if (x.shape()[d] != 1) return x;
  Shape s = x.shape();
  s.erase(s.begin() + d);
  return reshape(x, s);
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  int64_t d = wrap_dim(dim, x.ndim() + 1, "unsqueeze");
  Shape s = x.shape();
  s.insert(s.begin() + d, 1);
  return reshape(x, s);
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t stop, int64_t step) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "slice");
  a.start = start;
  a.stop = stop;
  a.step = step;
  return dispatch(OpKind::Slice, {x}, a);
}

Tensor slice_backward(const Tensor& g, const Shape& input_shape, int64_t dim, int64_t start,
                      int64_t stop, int64_t step) {
  Attrs a;
  a.shape = input_shape;
  a.dim = dim;
  a.start = start;
  a.stop = stop;
  a.step = step;
  return dispatch(OpKind::SliceBackward, {g}, a);
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  int64_t d = wrap_dim(dim, x.ndim(), "select");
  int64_t n = x.shape()[d];
  VK_CHECK(index >= -n && index < n, IndexError, "select: index ", index,
           " is out of range for dim ", d, " of size ", n);
  int64_t i = index < 0 ? index + n : index;
  return squeeze(slice(x, d, i, i + 1, 1), d);
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  VK_CHECK(!xs.empty(), ShapeError, "cat: expected a non-empty list of tensors");
  Attrs a;
  a.dim = wrap_dim(dim, xs[0].ndim(), "cat");
  return dispatch(OpKind::Cat, xs, a);
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  VK_CHECK(!xs.empty(), ShapeError, "stack: expected a non-empty list of tensors");
  Attrs a;
  a.dim = wrap_dim(dim, xs[0].ndim() + 1, "stack");
  return dispatch(OpKind::Stack, xs, a);
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& widths, double value) {
  Attrs a;
  a.ints = widths;
  a.scalar = value;
  return dispatch(OpKind::Pad, {x}, a);
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  Attrs a;
  a.dims = wrap_dims(dims, x.ndim(), "flip");
  return dispatch(OpKind::Flip, {x}, a);
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : clone(x); }
Tensor clone(const Tensor& x) { return dispatch(OpKind::Contiguous, {x}); }

}  // namespace vk
