// Index ops. Index tensors (int64 or int32) are constants: no rule differentiates through them.
// index_select and gather are adjoint to scatter_add, whose own rule is a gather, so every order
// of derivative stays inside these three ops (interpolate_dim's rule is made of them, products and
// a sum).
#include "vkml/ops/index.h"

#include <algorithm>
#include <string>

#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

void check_index_dtype(const Tensor& index, std::string_view op) {
  VK_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, DTypeError, op,
           ": index must be an int64 or int32 tensor, got ", dtype_name(index.dtype()));
}

void check_dim(int64_t dim, const Tensor& x, std::string_view op) {
  VK_CHECK(dim >= 0 && dim < std::max<int64_t>(x.ndim(), 1), IndexError, op, ": dim ", dim,
           " is out of range for a tensor of shape ", shape_str(x.shape()));
}

Meta infer_index_select(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor &x = in[0], &index = in[1];
  check_index_dtype(index, op);
  check_dim(a.dim, x, op);
  VK_CHECK(index.ndim() <= 1, ShapeError, op, ": index must be 1-D, got shape ",
           shape_str(index.shape()));
  if (x.ndim() == 0) {
    VK_CHECK(index.numel() == 1, ShapeError, op, ": a 0-d input takes one index, got shape ",
             shape_str(index.shape()));
    return {{}, x.dtype()};
  }
  Shape s = x.shape();
  s[a.dim] = index.numel();
  return {s, x.dtype()};
}

// gather and scatter_add: index has the input's ndim and fits inside it in every other dim.
void check_index_fits(const Tensor& index, const Tensor& x, int64_t dim, const char* what,
                      bool including_dim, std::string_view op) {
  bool fits = index.ndim() == x.ndim();
  for (int64_t d = 0; fits && d < x.ndim(); ++d)
    fits = (d == dim && !including_dim) || index.shape()[d] <= x.shape()[d];
  VK_CHECK(fits, ShapeError, op, ": index of shape ", shape_str(index.shape()), " does not fit ",
           what, " of shape ", shape_str(x.shape()), " (same number of dims, ",
           "no larger in any dim", including_dim ? "" : " but dim ",
           including_dim ? std::string() : std::to_string(dim), ")");
}

Meta infer_gather(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor &x = in[0], &index = in[1];
  check_index_dtype(index, op);
  check_dim(a.dim, x, op);
  check_index_fits(index, x, a.dim, "the input", false, op);
  return {index.shape(), x.dtype()};
}

// base and src take their common dtype.
void prepare_scatter(std::vector<Tensor>& in, const Attrs&, std::string_view) {
  DType common = promote(in[0].dtype(), in[2].dtype());
  in[0] = cast(in[0], common);
  in[2] = cast(in[2], common);
}

Meta infer_scatter_add(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor &base = in[0], &index = in[1], &src = in[2];
  check_index_dtype(index, op);
  check_dim(a.dim, base, op);
  check_index_fits(index, base, a.dim, "self", false, op);
  check_index_fits(index, src, a.dim, "src", true, op);
  VK_CHECK(base.dtype() != DType::Bool, DTypeError, op, ": bool tensors cannot be added");
  return {base.shape(), base.dtype()};
}

// `index` (1-D) shaped to broadcast along `dim` of a tensor with `ndim` dims, then expanded to
// `shape`: a free view that gives index[j] at every position whose coordinate along dim is j.
Tensor index_along(const Tensor& index, int64_t dim, int64_t ndim, const Shape& shape) {
  Shape s(static_cast<size_t>(ndim), 1);
  if (ndim > 0) s[dim] = index.numel();
  return expand(reshape(index, s), shape);
}

// The zeros a gradient is scattered into: one zero broadcast to x's shape (a stride-0 view), so
// scatter_add's copy of its base reads one element instead of a freshly zeroed buffer.
Tensor zero_base(const Tensor& x) { return expand(zeros({}, x.dtype(), x.device()), x.shape()); }

// interpolate_dim(x, lo, hi, w_lo, w_hi): indices and weights 1-D of one length k, the weights in
// x's floating dtype; the output is x with k positions along dim.
Meta infer_interpolate_dim(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& x = in[0];
  VK_CHECK(is_floating(x.dtype()) && x.ndim() > 0, DTypeError, op,
           ": expected a floating tensor of at least 1 dim, got ", x.describe());
  check_dim(a.dim, x, op);
  const int64_t k = in[1].numel();
  for (size_t i = 1; i < in.size(); ++i) {
    if (i <= 2) check_index_dtype(in[i], op);
    VK_CHECK(i <= 2 || in[i].dtype() == x.dtype(), DTypeError, op, ": weights ", in[i].describe(),
             " must have the input's dtype ", dtype_name(x.dtype()));
    VK_CHECK(in[i].ndim() == 1 && in[i].numel() == k, ShapeError, op, ": input ", i, " of shape ",
             shape_str(in[i].shape()), " must be 1-D of the index's length ", k);
  }
  Shape s = x.shape();
  s[a.dim] = k;
  return {s, x.dtype()};
}

// dx: g times each weight, scattered back to its index; dw: the sum of g times the slices each
// weight multiplied (the indices are constants).
Grads interpolate_dim_grad(const GradCtx& c) {
  const Tensor &x = c.in[0], &g = c.grad;
  const int64_t d = c.attrs.dim;
  Shape along(static_cast<size_t>(x.ndim()), 1);
  along[static_cast<size_t>(d)] = g.size(d);
  std::vector<int64_t> others;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != d) others.push_back(i);
  Grads out(5);
  if (c.needs[0]) {
    out[0] = scatter_add(zero_base(x), d, index_along(c.in[1], d, x.ndim(), g.shape()),
                         g * reshape(c.in[3], along));
    out[0] = scatter_add(out[0], d, index_along(c.in[2], d, x.ndim(), g.shape()),
                         g * reshape(c.in[4], along));
  }
  for (size_t w = 3; w <= 4; ++w)
    if (c.needs[w]) out[w] = reshape(sum(g * index_select(x, d, c.in[w - 2]), others), {g.size(d)});
  return out;
}

}  // namespace

void add_index_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::InterpolateDim,
                 .name = "interpolate_dim",
                 .arity = 5,
                 .signature = "interpolate_dim(x, dim, lo, hi, w_lo, w_hi)",
                 .summary = "x[lo[j]] * w_lo[j] + x[hi[j]] * w_hi[j] at position j along dim, "
                            "the products and the sum each rounded (interpolate's linear step)",
                 .infer = infer_interpolate_dim,
                 .grad = interpolate_dim_grad,
                 .grad_doc = "dx = scatter_add(scatter_add(zeros_like(x), dim, lo, g w_lo), dim, "
                             "hi, g w_hi) (indices broadcast along dim); dw_lo = sum of g * "
                             "index_select(x, dim, lo) over the other dims, dw_hi alike; lo, hi: "
                             "none"});
  ops.push_back({.kind = OpKind::IndexSelect,
                 .name = "index_select",
                 .arity = 2,
                 .signature = "index_select(x, dim, index)",
                 .summary = "the slices of x at the positions index (1-D, int64/int32, each in "
                            "[0, size)) along dim, in index order; repeats allowed",
                 .infer = infer_index_select,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Tensor& x = c.in[0];
                   const int64_t dim = x.ndim() == 0 ? 0 : c.attrs.dim;
                   Tensor idx = index_along(c.in[1], dim, x.ndim(), c.grad.shape());
                   return {scatter_add(zero_base(x), dim, idx, c.grad), Tensor()};
                 },
                 .grad_doc = "dx = scatter_add(zeros_like(x), dim, index broadcast along dim, g): "
                             "repeated indices add up; index: none (a constant)"});
  ops.push_back({.kind = OpKind::Gather,
                 .name = "gather",
                 .arity = 2,
                 .signature = "gather(x, dim, index)",
                 .summary = "out[p] = x[p with p[dim] = index[p]] (torch.gather); out has "
                            "index's shape",
                 .infer = infer_gather,
                 .grad = [](const GradCtx& c) -> Grads {
                   const int64_t dim = c.in[0].ndim() == 0 ? 0 : c.attrs.dim;
                   return {scatter_add(zero_base(c.in[0]), dim, c.in[1], c.grad), Tensor()};
                 },
                 .grad_doc = "dx = scatter_add(zeros_like(x), dim, index, g); index: none"});
  ops.push_back({.kind = OpKind::ScatterAdd,
                 .name = "scatter_add",
                 .arity = 3,
                 .signature = "scatter_add(base, dim, index, src)",
                 .summary = "base with src[p] added at p with p[dim] = index[p] "
                            "(torch.Tensor.scatter_add); repeated indices add up",
                 .prepare = prepare_scatter,
                 .infer = infer_scatter_add,
                 .grad = [](const GradCtx& c) -> Grads {
                   const Tensor &index = c.in[1], &src = c.in[2];
                   const int64_t dim = c.in[0].ndim() == 0 ? 0 : c.attrs.dim;
                   Tensor dsrc;
                   if (c.needs[2]) {
                     dsrc = gather(c.grad, dim, index);
                     if (index.shape() != src.shape()) {  // src positions index never reads
                       std::vector<int64_t> widths;
                       for (int64_t d = src.ndim() - 1; d >= 0; --d) {
                         widths.push_back(0);
                         widths.push_back(src.shape()[d] - index.shape()[d]);
                       }
                       dsrc = pad(dsrc, widths, 0.0);
                     }
                   }
                   return {c.needs[0] ? c.grad : Tensor(), Tensor(), dsrc};
                 },
                 .grad_doc = "dbase = g; dsrc = gather(g, dim, index) (zero-padded where src is "
                             "larger than index); index: none"});
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "index_select");
  return dispatch(OpKind::IndexSelect, {x, index}, a);
}
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "gather");
  return dispatch(OpKind::Gather, {x, index}, a);
}
Tensor scatter_add(const Tensor& base, int64_t dim, const Tensor& index, const Tensor& src) {
  Attrs a;
  a.dim = wrap_dim(dim, base.ndim(), "scatter_add");
  return dispatch(OpKind::ScatterAdd, {base, index, src}, a);
}

Tensor index_add(const Tensor& base, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = wrap_dim(dim, base.ndim(), "index_add");
  check_index_dtype(index, "index_add");
  VK_CHECK(index.ndim() <= 1, ShapeError, "index_add: index must be 1-D, got shape ",
           shape_str(index.shape()));
  Shape expected = base.shape();
  if (base.ndim() > 0) expected[d] = index.numel();
  VK_CHECK(src.shape() == expected, ShapeError, "index_add: source of shape ",
           shape_str(src.shape()), " does not match self of shape ", shape_str(base.shape()),
           " with ", index.numel(), " indices along dim ", d, " (expected ", shape_str(expected),
           ")");
  return scatter_add(base, d, index_along(index, d, base.ndim(), src.shape()), src);
}

Tensor interpolate_dim(const Tensor& x, int64_t dim, const Tensor& lo, const Tensor& hi,
                       const Tensor& w_lo, const Tensor& w_hi) {
  Attrs a;
  a.dim = wrap_dim(dim, x.ndim(), "interpolate_dim");
  return dispatch(OpKind::InterpolateDim, {x, lo, hi, w_lo, w_hi}, a);
}
}  // namespace vk
