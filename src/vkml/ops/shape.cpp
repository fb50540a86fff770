// Shape ops. Most return views; each rule undoes exactly what the forward did to the layout.
#include "vkml/ops/shape.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "vkml/core/geometry.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"

namespace vk {
namespace {

Meta infer_reshape(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(numel_of(a.shape, op) == in[0].numel(), ShapeError, op,
           ": cannot view a tensor of shape ", shape_str(in[0].shape()), " (", in[0].numel(),
           " elements) as shape ", shape_str(a.shape));
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
  VK_CHECK(a.shape.size() >= from.size(), ShapeError, op, ": cannot expand shape ", shape_str(from),
           " to fewer dims ", shape_str(a.shape));
  size_t lead = a.shape.size() - from.size();
  for (size_t i = 0; i < a.shape.size(); ++i)  // expand() resolved -1 in the existing dims
    VK_CHECK(a.shape[i] >= 0, SizeError, op, ": cannot expand shape ", shape_str(from), " to ",
             shape_str(a.shape), ": size ", a.shape[i], " at dim ", i,
             i < lead ? " (-1 only keeps the size of an existing dim)" : "");
  for (size_t i = 0; i < from.size(); ++i)
    VK_CHECK(from[i] == a.shape[lead + i] || from[i] == 1, ShapeError, op, ": cannot expand shape ",
             shape_str(from), " to ", shape_str(a.shape));
  return {a.shape, in[0].dtype()};
}

Meta infer_slice(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& x = in[0];
  VK_CHECK(x.ndim() > 0, IndexError, op, ": cannot slice a 0-d tensor");
  VK_CHECK(a.dim >= 0 && a.dim < x.ndim(), IndexError, op, ": dim ", a.dim,
           " is out of range for a tensor of shape ", shape_str(x.shape()));
  VK_CHECK(a.step >= 1, ShapeError, op, ": step must be positive, got ", a.step);
  Shape s = x.shape();
  s[a.dim] = slice_range(s[a.dim], a.start, a.stop, a.step).len;
  return {s, x.dtype()};
}

Meta infer_slice_backward(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& g = in[0];
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  VK_CHECK(a.dim >= 0 && a.dim < nd, IndexError, op, ": dim ", a.dim,
           " is out of range for the input shape ", shape_str(a.shape));
  VK_CHECK(a.step >= 1, ShapeError, op, ": step must be positive, got ", a.step);
  numel_of(a.shape, op);  // validates the extents
  Shape expected = a.shape;
  expected[a.dim] = slice_range(a.shape[a.dim], a.start, a.stop, a.step).len;
  VK_CHECK(g.shape() == expected, ShapeError, op, ": gradient of shape ", shape_str(g.shape()),
           " does not match the slice [", a.start, ":", a.stop, ":", a.step, "] of dim ", a.dim,
           " of shape ", shape_str(a.shape), ", which has shape ", shape_str(expected));
  return {a.shape, g.dtype()};
}

// A region (Attrs::shape, ::strided) of a row-major tensor of n elements must lie inside it and
// hold each element at most once: the rules place gradients without summing them. With its dims
// sorted by stride, each stride must pass the span of those before it (every region a basic index
// cuts from a contiguous tensor does).
void check_region(int64_t n, const Attrs& a, std::string_view op) {
  const Shape& sizes = a.shape;
  const std::vector<int64_t>& strides = a.strided.strides;
  VK_CHECK(strides.size() == sizes.size(), ShapeError, op, ": ", sizes.size(), " sizes and ",
           strides.size(), " strides");
  VK_CHECK(a.strided.offset >= 0, ShapeError, op, ": negative offset ", a.strided.offset);
  if (numel_of(sizes, op) == 0) return;
  std::vector<std::pair<int64_t, int64_t>> steps;  // (stride, size) of the dims that step
  for (size_t k = 0; k < sizes.size(); ++k) {
    VK_CHECK(strides[k] >= 0, ShapeError, op, ": negative stride ", strides[k]);
    if (sizes[k] > 1) steps.emplace_back(strides[k], sizes[k]);
  }
  std::sort(steps.begin(), steps.end());
  int64_t span = 0;  // the furthest element the dims so far reach from the offset
  for (const auto& [stride, size] : steps) {
    VK_CHECK(stride > span, ShapeError, op, ": the region of sizes ", shape_str(sizes),
             " and strides ", shape_str(strides), " holds an element more than once");
    span = checked_add(span, checked_mul(stride, size - 1, op), op);
  }
  VK_CHECK(checked_add(a.strided.offset, span, op) < n, ShapeError, op, ": the region of sizes ",
           shape_str(sizes), ", strides ", shape_str(strides), " and offset ", a.strided.offset,
           " reaches past the ", n, " elements of its tensor");
}

Meta infer_as_strided(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  check_region(in[0].numel(), a, op);
  return {a.shape, in[0].dtype()};
}

Meta infer_strided_scatter(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor &x = in[0], &value = in[1];
  check_region(x.numel(), a, op);
  VK_CHECK(value.shape() == a.shape, ShapeError, op, ": a value of shape ",
           shape_str(value.shape()), " for a region of shape ", shape_str(a.shape));
  VK_CHECK(value.dtype() == x.dtype(), DTypeError, op, ": a ", dtype_name(value.dtype()),
           " value for a ", dtype_name(x.dtype()), " tensor");
  return {x.shape(), x.dtype()};
}

// cat/stack: every input takes the common dtype of all of them (torch's promotion).
void prepare_promote_all(std::vector<Tensor>& in, const Attrs&, std::string_view) {
  DType common = in[0].dtype();
  for (const Tensor& t : in) common = promote(common, t.dtype());
  for (Tensor& t : in) t = cast(t, common);
}

Meta infer_cat(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const size_t ref = cat_reference(in);
  const Shape& rs = in[ref].shape();
  const int64_t nd = static_cast<int64_t>(rs.size());
  VK_CHECK(nd > 0, ShapeError, op, ": zero-dimensional tensor (input ", ref,
           ") cannot be concatenated");
  VK_CHECK(a.dim >= 0 && a.dim < nd, IndexError, op, ": dim ", a.dim,
           " is out of range for tensors of shape ", shape_str(rs));
  Shape out = rs;
  out[a.dim] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    if (cat_skips(t, nd)) continue;
    VK_CHECK(t.dtype() == in[ref].dtype(), DTypeError, op, ": input ", i, " has dtype ",
             dtype_name(t.dtype()), ", input ", ref, " has ", dtype_name(in[ref].dtype()));
    bool match = t.ndim() == nd;
    for (int64_t d = 0; match && d < nd; ++d) match = d == a.dim || t.shape()[d] == rs[d];
    VK_CHECK(match, ShapeError, op, ": shapes ", shape_str(rs), " (input ", ref, ") and ",
             shape_str(t.shape()), " (input ", i, ") must match except in dim ", a.dim);
    out[a.dim] = checked_add(out[a.dim], t.shape()[a.dim], op);
  }
  return {out, in[ref].dtype()};
}

Meta infer_stack(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Shape& s0 = in[0].shape();
  const int64_t nd = static_cast<int64_t>(s0.size());
  VK_CHECK(a.dim >= 0 && a.dim <= nd, IndexError, op, ": dim ", a.dim,
           " is out of range for stacking tensors of shape ", shape_str(s0));
  for (size_t i = 1; i < in.size(); ++i) {
    VK_CHECK(in[i].shape() == s0, ShapeError, op, ": expects tensors of equal shape, got ",
             shape_str(s0), " (input 0) and ", shape_str(in[i].shape()), " (input ", i, ")");
    VK_CHECK(in[i].dtype() == in[0].dtype(), DTypeError, op, ": input ", i, " has dtype ",
             dtype_name(in[i].dtype()), ", input 0 has ", dtype_name(in[0].dtype()));
  }
  Shape out = s0;
  out.insert(out.begin() + a.dim, static_cast<int64_t>(in.size()));
  return {out, in[0].dtype()};
}

Meta infer_pad(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& x = in[0];
  const int64_t nd = x.ndim();
  const std::vector<int64_t>& widths = a.pad.widths;
  VK_CHECK(widths.size() % 2 == 0, ShapeError, op, ": padding has ", widths.size(),
           " values; it must be (before, after) pairs");
  VK_CHECK(static_cast<int64_t>(widths.size()) <= 2 * nd, ShapeError, op, ": ", widths.size() / 2,
           " (before, after) pairs are too many for a tensor of shape ", shape_str(x.shape()));
  VK_CHECK(is_floating(x.dtype()) || std::isfinite(a.pad.value), DTypeError, op,
           ": cannot pad a tensor of dtype ", dtype_name(x.dtype()), " with ", a.pad.value);
  Shape s = x.shape();
  for (size_t k = 0; k * 2 < widths.size(); ++k) {
    const int64_t d = nd - 1 - static_cast<int64_t>(k);
    const int64_t n = checked_add(checked_add(s[d], widths[2 * k], op), widths[2 * k + 1], op);
    VK_CHECK(n >= 0, ShapeError, op, ": padding (", widths[2 * k], ", ", widths[2 * k + 1],
             ") of dim ", d, " of shape ", shape_str(x.shape()), " gives a negative size ", n);
    s[d] = n;
  }
  return {s, x.dtype()};
}

Meta infer_flip(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& x = in[0];
  std::vector<bool> seen(static_cast<size_t>(x.ndim()), false);
  for (int64_t d : a.dims) {
    VK_CHECK(d >= 0 && d < x.ndim() && !seen[d], IndexError, op, ": dims ", shape_str(a.dims),
             " are not distinct dims of a tensor of shape ", shape_str(x.shape()));
    seen[d] = true;
  }
  return {x.shape(), x.dtype()};
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& p) {
  std::vector<int64_t> inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<int64_t>(i);
  return inv;
}

}  // namespace

void add_shape_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::Reshape,
       .name = "reshape",
       .arity = 1,
       .signature = "reshape(x, shape)",
       .summary = "the same elements in row-major order with another shape (a view when "
                  "the strides allow)",
       .infer = infer_reshape,
       .grad = [](const GradCtx& c) -> Grads { return {reshape(c.grad, c.in[0].shape())}; },
       .grad_doc = "dx = reshape(g, x.shape)"});
  ops.push_back({.kind = OpKind::Permute,
                 .name = "permute",
                 .arity = 1,
                 .signature = "permute(x, dims)",
                 .summary = "a view with the dims reordered",
                 .infer = infer_permute,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {permute(c.grad, inverse_permutation(c.attrs.dims))};
                 },
                 .grad_doc = "dx = permute(g, inverse permutation)"});
  ops.push_back(
      {.kind = OpKind::Expand,
       .name = "expand",
       .arity = 1,
       .signature = "expand(x, shape)",
       .summary = "a view repeating size-1 dims (stride 0) and adding leading dims",
       .infer = infer_expand,
       .grad = [](const GradCtx& c) -> Grads { return {sum_to(c.grad, c.in[0].shape())}; },
       .grad_doc = "dx = g summed over the stretched and added dims (sum_to)"});
  ops.push_back({.kind = OpKind::Contiguous,
                 .name = "contiguous",
                 .arity = 1,
                 .signature = "contiguous(x)",
                 .summary = "a row-major copy of x",
                 .infer = infer_same_as_first,
                 .grad = [](const GradCtx& c) -> Grads { return {c.grad}; },
                 .grad_doc = "dx = g"});
  ops.push_back({.kind = OpKind::Slice,
                 .name = "slice",
                 .arity = 1,
                 .signature = "slice(x, dim, start, stop, step)",
                 .summary = "a view of x[start:stop:step] along dim (Python slice semantics: "
                            "negative bounds count from the end, bounds are clamped, step >= 1)",
                 .infer = infer_slice,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Attrs& a = c.attrs;
                   auto r = slice_range(c.in[0].shape()[a.dim], a.start, a.stop, a.step);
                   return {slice_backward(c.grad, c.in[0].shape(), a.dim, r.start, r.stop, r.step)};
                 },
                 .grad_doc = "dx = slice_backward(g, x.shape, dim, start, stop, step)"});
  ops.push_back({.kind = OpKind::SliceBackward,
                 .name = "slice_backward",
                 .arity = 1,
                 .signature = "slice_backward(g, input_shape, dim, start, stop, step)",
                 .summary = "zeros of input_shape with g written at the positions "
                            "slice(dim, start, stop, step) selects (the adjoint of slice)",
                 .infer = infer_slice_backward,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Attrs& a = c.attrs;
                   return {slice(c.grad, a.dim, a.start, a.stop, a.step)};
                 },
                 .grad_doc = "dg = slice(g_out, dim, start, stop, step)"});
  ops.push_back({.kind = OpKind::Cat,
                 .name = "cat",
                 .arity = -1,
                 .signature = "cat(xs, dim)",
                 .summary = "the inputs joined along dim (shapes equal elsewhere; dtypes promoted; "
                            "1-D empty tensors are skipped, as torch)",
                 .prepare = prepare_promote_all,
                 .infer = infer_cat,
                 .grad = [](const GradCtx& c) -> Grads {
                   const int64_t dim = c.attrs.dim;
                   const int64_t nd = c.in[cat_reference(c.in)].ndim();
                   Grads gs(c.in.size());
                   int64_t at = 0;
                   for (size_t i = 0; i < c.in.size(); ++i) {
                     if (cat_skips(c.in[i], nd)) continue;
                     const int64_t size = c.in[i].shape()[dim];
                     if (c.needs[i]) gs[i] = slice(c.grad, dim, at, at + size, 1);
                     at += size;
                   }
                   return gs;
                 },
                 .grad_doc = "dx_i = slice(g, dim, offset_i, offset_i + x_i.shape[dim])"});
  ops.push_back(
      {.kind = OpKind::Stack,
       .name = "stack",
       .arity = -1,
       .signature = "stack(xs, dim)",
       .summary = "the inputs (all of one shape) joined along a new dim (dtypes promoted)",
       .prepare = prepare_promote_all,
       .infer = infer_stack,
       .grad = [](const GradCtx& c) -> Grads {
         Grads gs(c.in.size());
         for (size_t i = 0; i < c.in.size(); ++i)
           if (c.needs[i]) gs[i] = select(c.grad, c.attrs.dim, static_cast<int64_t>(i));
         return gs;
       },
       .grad_doc = "dx_i = select(g, dim, i)"});
  ops.push_back({.kind = OpKind::Pad,
                 .name = "pad",
                 .arity = 1,
                 .signature = "pad(x, widths, value)",
                 .summary = "constant padding; widths are (before, after) pairs from the last dim, "
                            "as torch.nn.functional.pad; negative widths crop",
                 .infer = infer_pad,
                 .grad = [](const GradCtx& c) -> Grads {
                   std::vector<int64_t> crop(c.attrs.pad.widths.size());
                   for (size_t i = 0; i < crop.size(); ++i) crop[i] = -c.attrs.pad.widths[i];
                   return {pad(c.grad, crop, 0.0)};
                 },
                 .grad_doc = "dx = pad(g, -widths, 0): the padded border cut off (and a cropped "
                             "border given zero gradient)"});
  ops.push_back({.kind = OpKind::Flip,
                 .name = "flip",
                 .arity = 1,
                 .signature = "flip(x, dims)",
                 .summary = "a copy of x with the order of elements reversed along dims",
                 .infer = infer_flip,
                 .grad = [](const GradCtx& c) -> Grads { return {flip(c.grad, c.attrs.dims)}; },
                 .grad_doc = "dx = flip(g, dims)"});
  ops.push_back(
      {.kind = OpKind::AsStrided,
       .name = "as_strided",
       .arity = 1,
       .signature = "as_strided(x, shape, strides, offset)",
       .summary = "a view of a region of x's elements in row-major order: element i is "
                  "element offset + sum(i_k strides_k); the region holds each at most once",
       .infer = infer_as_strided,
       .grad = [](const GradCtx& c) -> Grads {
         const Attrs& a = c.attrs;
         Tensor zero = zeros(c.in[0].shape(), c.grad.dtype(), c.grad.device());
         return {strided_scatter(zero, c.grad, a.shape, a.strided.strides, a.strided.offset)};
       },
       .grad_doc = "dx = strided_scatter(zeros(x.shape), g, shape, strides, offset)"});
  ops.push_back({.kind = OpKind::StridedScatter,
                 .name = "strided_scatter",
                 .arity = 2,
                 .signature = "strided_scatter(x, value, shape, strides, offset)",
                 .summary =
                     "a row-major copy of x with as_strided(x, shape, strides, offset)'s region "
                     "holding value (torch's as_strided_scatter; the recorded y[:, t] = h)",
                 .infer = infer_strided_scatter,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Attrs& a = c.attrs;
                   const auto& [strides, offset] = a.strided;
                   Grads d(2);
                   if (c.needs[0])
                     d[0] = strided_scatter(c.grad, zeros(a.shape, c.grad.dtype(), c.grad.device()),
                                            a.shape, strides, offset);
                   if (c.needs[1]) d[1] = as_strided(c.grad, a.shape, strides, offset);
                   return d;
                 },
                 .grad_doc = "dx = strided_scatter(g, zeros(shape), shape, strides, offset); "
                             "dvalue = as_strided(g, shape, strides, offset)"});
}

namespace {

// `shape` with its -1 (at most one) replaced by the size that keeps x's element count.
Shape infer_size(const Tensor& x, const Shape& shape, const char* op) {
  Shape s = shape;
  int64_t known = 1;
  auto infer_at = s.end();
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (*it == -1) {
      VK_CHECK(infer_at == s.end(), ShapeError, op, ": only one dimension can be -1, got ",
               shape_str(shape));
      infer_at = it;
      continue;
    }
    VK_CHECK(*it >= 0, SizeError, op, ": invalid size ", *it, " in shape ", shape_str(shape));
    VK_CHECK(!__builtin_mul_overflow(known, *it, &known), SizeError, op, ": cannot view shape ",
             shape_str(x.shape()), " (", x.numel(), " elements) as ", shape_str(shape),
             ": the sizes multiply past int64");
  }
  if (infer_at != s.end()) {
    VK_CHECK(known != 0 && x.numel() % known == 0, ShapeError, op, ": cannot view shape ",
             shape_str(x.shape()), " (", x.numel(), " elements) as ", shape_str(shape),
             known == 0 ? " (the -1 is ambiguous next to a 0)" : "");
    *infer_at = x.numel() / known;
  }
  return s;
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape s = infer_size(x, shape, "reshape");
  if (s == x.shape()) return x;
  Attrs a;
  a.shape = std::move(s);
  return dispatch(OpKind::Reshape, {x}, a);
}

Tensor view(const Tensor& x, const Shape& shape) {
  Shape s = infer_size(x, shape, "view");
  if (s == x.shape()) return x;
  VK_CHECK(numel_of(s, "view") == x.numel(), ShapeError, "view: cannot view shape ",
           shape_str(x.shape()), " (", x.numel(), " elements) as ", shape_str(shape));
  VK_CHECK(view_strides(x, s).has_value(), RuntimeError,
           "view: view size is not compatible with input tensor's size and stride (at least one "
           "dimension spans across two contiguous subspaces): cannot view ",
           shape_str(x.shape()), " with strides ", shape_str(x.strides()), " as ", shape_str(s),
           ". Use .reshape(...) instead.");
  Attrs a;
  a.shape = std::move(s);
  return dispatch(OpKind::Reshape, {x}, a);  // a view: the kernel copies only what it cannot view
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.ndim() == 0) return reshape(x, {1});
  int64_t s = wrap_dim(start_dim, x.ndim(), "flatten"), e = wrap_dim(end_dim, x.ndim(), "flatten");
  VK_CHECK(s <= e, RuntimeError,
           "flatten() has invalid args: start_dim cannot come after end_dim (", start_dim,
           " is dim ", s, ", ", end_dim, " is dim ", e, " of shape ", shape_str(x.shape()), ")");
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  int64_t n = 1;
  for (int64_t i = s; i <= e; ++i) n *= x.shape()[i];  // a part of a valid shape: no overflow
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
  VK_CHECK(
      shape.size() <= x.shape().size() && broadcast_shapes(x.shape(), shape, "sum_to") == x.shape(),
      ShapeError, "sum_to: shape ", shape_str(x.shape()), " cannot be summed to ", shape_str(shape),
      " (it is not a broadcast of it)");
  size_t lead = x.shape().size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < x.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && x.shape()[i] != 1))
      dims.push_back(static_cast<int64_t>(i));
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
  a.dim = wrap_dim(dim, static_cast<int64_t>(input_shape.size()), "slice_backward");
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

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  VK_CHECK(x.ndim() > 0, RuntimeError, "narrow() cannot be applied to a 0-dim tensor");
  const int64_t d = wrap_dim(dim, x.ndim(), "narrow");
  const int64_t n = x.shape()[d];
  VK_CHECK(start >= -n && start <= n, IndexError,
           "narrow: start out of range (expected to be in range of [", -n, ", ", n, "], but got ",
           start, ") for dim ", d, " of shape ", shape_str(x.shape()));
  if (start < 0) start += n;
  VK_CHECK(length >= 0, RuntimeError, "narrow: length must be non-negative, got ", length);
  VK_CHECK(length <= n - start, RuntimeError, "narrow: start (", start, ") + length (", length,
           ") exceeds dimension size (", n, ") of dim ", d, " of shape ", shape_str(x.shape()));
  return slice(x, d, start, start + length, 1);
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  VK_CHECK(!xs.empty(), ShapeError, "cat: expected a non-empty list of tensors");
  Attrs a;
  a.dim = wrap_dim(dim, xs[cat_reference(xs)].ndim(), "cat");
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
  a.pad = {.widths = widths, .value = value};
  return dispatch(OpKind::Pad, {x}, a);
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  Attrs a;  // an empty list flips nothing (as torch); a repeated dim is an error (infer_flip)
  for (int64_t d : dims) a.dims.push_back(wrap_dim(d, x.ndim(), "flip"));
  if (x.ndim() == 0) a.dims.clear();
  return dispatch(OpKind::Flip, {x}, a);
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : clone(x); }
Tensor clone(const Tensor& x) { return dispatch(OpKind::Contiguous, {x}); }

Tensor as_strided(const Tensor& x, const Shape& shape, const std::vector<int64_t>& strides,
                  int64_t offset) {
  Attrs a;
  a.shape = shape;
  a.strided = {strides, offset};
  return dispatch(OpKind::AsStrided, {x}, a);
}

Tensor strided_scatter(const Tensor& x, const Tensor& value, const Shape& shape,
                       const std::vector<int64_t>& strides, int64_t offset) {
  Attrs a;
  a.shape = shape;
  a.strided = {strides, offset};
  return dispatch(OpKind::StridedScatter, {x, value}, a);
}

}  // namespace vk
