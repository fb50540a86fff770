// The sort family: `sort` is the one op of the table (a stable sort along a dim giving values and
// int64 indices); argsort, msort, topk, kthvalue and median are slices and gathers of its result,
// so their gradients follow from sort's (the incoming gradient scattered back by the indices)
// and from slice's and gather's. searchsorted is an op of its own (a binary search per value);
// unique, bincount and argwhere are compositions with integer or data-dependent results.
#include "vkml/ops/sort.h"

#include <algorithm>
#include <limits>
#include <string>

#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/index.h"
#include "vkml/ops/indexing.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/scan.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

Meta infer_sort(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  std::string name(op);
  Shape shape = in[0].shape();
  if (in[0].ndim() > 0) {
    const int64_t d = wrap_dim(a.dim, in[0].ndim(), name.c_str());
    if (a.sort.keep >= 0) {
      VK_CHECK(a.sort.keep <= shape[d], RuntimeError, op, ": keep (", a.sort.keep,
               ") is larger than dim ", d, " of size ", shape[d]);
      shape[d] = a.sort.keep;
    }
  }
  return {shape, in[0].dtype()};
}

// Each output element came from exactly one input element (indices is a permutation along dim):
// the gradient goes back there.
Grads sort_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  if (x.ndim() == 0) return {c.grad};
  return {scatter_add(zeros_like(x), c.attrs.dim, c.output(1), c.grad)};
}

// The dim of an op on x (none for a 0-d tensor, where every dim argument must be 0 or -1).
int64_t op_dim(const Tensor& x, int64_t dim, const char* op) {
  return wrap_dim(dim, std::max<int64_t>(x.ndim(), 1), op);
}

int64_t dim_size(const Tensor& x, int64_t dim) { return x.ndim() == 0 ? 1 : x.shape()[dim]; }

// Element `pos` (a tensor of positions with dim kept as 1) of sorted rows, dim kept or dropped.
ValuesIndices pick(const ValuesIndices& s, int64_t dim, const Tensor& pos, bool keepdim) {
  if (s.values.ndim() == 0) return s;
  ValuesIndices r{gather(s.values, dim, pos), gather(s.indices, dim, pos)};
  if (!keepdim) r = {squeeze(r.values, dim), squeeze(r.indices, dim)};
  return r;
}

Shape kept_shape(const Tensor& x, int64_t dim) {
  Shape s = x.shape();
  if (!s.empty()) s[static_cast<size_t>(dim)] = 1;
  return s;
}

// boundaries (M) or (..., M), values of any shape or (..., N) with the same leading dims.
Meta infer_searchsorted(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor &b = in[0], &v = in[1];
  const Shape &bs = b.shape(), &vs = v.shape();
  const bool leading_match =
      bs.size() >= 2 && vs.size() == bs.size() && std::equal(bs.begin(), bs.end() - 1, vs.begin());
  VK_CHECK(bs.size() == 1 || leading_match, RuntimeError, op,
           ": boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
           "tensor and input value tensor must match, but we got boundaries tensor ",
           shape_str(bs), " and input value tensor ", shape_str(vs));
  VK_CHECK(b.dtype() != DType::Bool, DTypeError, op, ": not defined for bool tensors");
  return {vs, a.dtype};
}

}  // namespace

void add_sort_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::Sort,
       .name = "sort",
       .arity = 1,
       .outputs = 2,
       .signature = "sort(x, dim, descending, stable, keep = all) -> (values, indices)",
       .summary = "the elements along dim in ascending (or descending) order and the int64 index "
                  "each came from (output 1); always stable (equal elements keep their order); "
                  "NaN is the largest value, as PyTorch. keep: only the first keep of each row "
                  "(topk), selected without sorting the rest",
       .infer = infer_sort,
       .grad = sort_grad,
       .grad_doc = "dx = scatter_add(zeros_like(x), dim, indices, g): each element's gradient "
                   "back to where it came from"});
  ops.push_back({.kind = OpKind::SearchSorted,
                 .name = "searchsorted",
                 .arity = 2,
                 .signature = "searchsorted(boundaries, values, right, out_int32)",
                 .summary =
                     "for each value, the number of boundaries (along the last dim, sorted) < it "
                     "(right: <= it): where it would be inserted to keep them sorted; int64 or "
                     "int32 (out_int32). A NaN value counts every boundary, as PyTorch",
                 .prepare = prepare_common_dtype,
                 .infer = infer_searchsorted,
                 .grad_doc = "integer result: not differentiable"});
}

ValuesIndices sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  Attrs a;
  a.dim = op_dim(x, dim, "sort");
  a.sort = {.descending = descending, .stable = stable};
  const Outputs o = dispatch_outputs(OpKind::Sort, {x}, a);
  return {o[0], o[1]};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  return sort(x, dim, descending, stable).indices;
}

Tensor msort(const Tensor& x) { return sort(x, 0).values; }

// The first k of the stable sort (sort's keep): the same values and indices, ties included,
// without sorting the rest of each row (topk(5) of 4096 rows of 256 took 41 ms through the whole
// sort, 4.4x torch's time).
ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  const int64_t d = op_dim(x, dim, "topk");
  const int64_t n = dim_size(x, d);
  VK_CHECK(k >= 0 && k <= n, RuntimeError, "topk: selected index k out of range (k = ", k, ", dim ",
           dim, " of size ", n, ")");
  if (x.ndim() == 0 || k == n) return sort(x, d, largest, true);
  Attrs a;
  a.dim = d;
  a.sort = {.descending = largest, .stable = true, .keep = k};
  const Outputs o = dispatch_outputs(OpKind::Sort, {x}, a);
  return {o[0], o[1]};
}

ValuesIndices kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  const int64_t d = op_dim(x, dim, "kthvalue");
  const int64_t n = dim_size(x, d);
  VK_CHECK(k >= 1 && k <= n, RuntimeError, "kthvalue: selected number k out of range (k = ", k,
           ", dim ", dim, " of size ", n, ")");
  const ValuesIndices s = sort(x, d, false, true);
  if (x.ndim() == 0) return s;
  return pick(s, d, full(kept_shape(x, d), k - 1, DType::Int64, x.device()), keepdim);
}

ValuesIndices median(const Tensor& x, int64_t dim, bool keepdim) {
  const int64_t d = op_dim(x, dim, "median");
  const int64_t n = dim_size(x, d);
  VK_CHECK(n > 0, IndexError, "median: expected a non-empty dim ", dim, ", got shape ",
           shape_str(x.shape()));
  const ValuesIndices s = sort(x, d, false, true);
  if (x.ndim() == 0) return s;
  // The lower middle; with NaNs (sorted last) the first NaN, so that the median is NaN.
  Tensor pos = full(kept_shape(x, d), (n - 1) / 2, DType::Int64, x.device());
  if (is_floating(x.dtype())) {
    Tensor nans = sum(cast(ne(x.detach(), x.detach()), DType::Int64), {d}, true);
    Tensor zero = zeros_like(nans);
    pos = where(gt(nans, zero), scalar_like(n, nans) - nans, pos);
  }
  return pick(s, d, pos, keepdim);
}

Tensor searchsorted(const Tensor& boundaries, const Tensor& values, bool right, bool out_int32) {
  Attrs a;
  a.sort.right = right;
  a.dtype = out_int32 ? DType::Int32 : DType::Int64;
  return dispatch(OpKind::SearchSorted, {boundaries, values}, a);
}

Tensor bucketize(const Tensor& values, const Tensor& boundaries, bool right, bool out_int32) {
  VK_CHECK(boundaries.ndim() == 1, RuntimeError,
           "bucketize: boundaries tensor must be 1 dimension, but got dim(", boundaries.ndim(),
           ")");
  return searchsorted(boundaries, values, right, out_int32);
}

ValuesIndices mode(const Tensor& x, int64_t dim, bool keepdim) {
  const int64_t d = op_dim(x, dim, "mode");
  const int64_t n = dim_size(x, d);
  VK_CHECK(n > 0, IndexError, "mode: expected a non-empty dim ", dim, ", got shape ",
           shape_str(x.shape()));
  const ValuesIndices s = sort(x, d, false, true);
  if (x.ndim() == 0) return s;
  // Runs of equal values in the sorted rows: each element's distance from the start of its run
  // (the running maximum of the positions where a run starts). The first longest run is the
  // smallest most frequent value; its last element, the last occurrence (the sort is stable).
  const Tensor sv = s.values.detach();
  Shape along(static_cast<size_t>(x.ndim()), 1);
  along[static_cast<size_t>(d)] = n;
  const Tensor pos = expand(reshape(arange(0, n, 1, DType::Int64, x.device()), along), x.shape());
  const Tensor first = full(kept_shape(x, d), true, DType::Bool, x.device());
  const Tensor is_new = cat({first, ne(slice(sv, d, 1, n), slice(sv, d, 0, n - 1))}, d);
  const Tensor start = cummax(where(is_new, pos, zeros_like(pos)), d).values;
  return pick(s, d, max(pos - start, d, true).indices, keepdim);
}

Tensor median(const Tensor& x) {
  if (x.numel() == 0) {  // NaN, as torch; an integer tensor has no NaN to give
    VK_CHECK(is_floating(x.dtype()), RuntimeError, "median: the median of an empty ",
             dtype_name(x.dtype()), " tensor is undefined");
    return full({}, std::numeric_limits<double>::quiet_NaN(), x.dtype(), x.device());
  }
  const Tensor picked = median(reshape(x, {-1}), 0).values;
  if (!is_floating(x.dtype()) || !GradMode::is_enabled() || !x.requires_grad()) return picked;
  // torch's rule for the median of all elements: the gradient is split evenly among the elements
  // equal to it, as amax's (sort's rule would give it all to one of them). amax over the ties
  // (the rest -inf) gives that rule and the same value, but for a median of -inf, where amin
  // over the ties (the rest +inf) does; a NaN median keeps sort's pick.
  const Tensor v = picked.detach();
  const Tensor ties = eq(x.detach(), v);
  const Tensor inf = full({}, std::numeric_limits<double>::infinity(), x.dtype(), x.device());
  const Tensor from_below = amax(where(ties, x, neg(inf)));
  const Tensor from_above = amin(where(ties, x, inf));
  return where(ne(v, v), picked, where(eq(v, neg(inf)), from_above, from_below));
}

}  // namespace vk

namespace vk {

Unique unique(const Tensor& x, bool with_inverse) {
  const Tensor flat = reshape(x.detach(), {-1});
  const int64_t n = flat.numel();
  if (n == 0)
    return {flat, zeros(x.shape(), DType::Int64, x.device()), zeros({0}, DType::Int64, x.device())};
  const ValuesIndices s = sort(flat, 0, false, true);
  // A value starts a run where it differs from the one before (NaN != NaN: each NaN its own).
  const Tensor differs = ne(slice(s.values, 0, 1, n), slice(s.values, 0, 0, n - 1));
  const Tensor is_new = cat({full({1}, true, DType::Bool, x.device()), differs}, 0);
  const Tensor starts = reshape(nonzero(is_new), {-1});
  const int64_t u = starts.numel();
  Unique r;
  r.values = index_select(s.values, 0, starts);
  if (with_inverse) {
    const Tensor run = cumsum(is_new, 0) - 1;  // the run of each sorted element
    r.inverse =
        reshape(scatter_add(zeros({n}, DType::Int64, x.device()), 0, s.indices, run), x.shape());
  }
  const Tensor ends = cat({slice(starts, 0, 1, u), full({1}, n, DType::Int64, x.device())}, 0);
  r.counts = ends - starts;
  return r;
}

Tensor bincount(const Tensor& x, const Tensor& weights, int64_t minlength) {
  VK_CHECK(x.ndim() == 1 && is_integral(x.dtype()), RuntimeError,
           "bincount only supports 1-d non-negative integral inputs (got ", x.describe(), ")");
  VK_CHECK(minlength >= 0, RuntimeError, "bincount: minlength should be >= 0, got ", minlength);
  VK_CHECK(!weights.defined() || weights.shape() == x.shape(), RuntimeError,
           "bincount: weights should be 1-d and have the same length as input (got ",
           weights.defined() ? shape_str(weights.shape()) : "", " and ", shape_str(x.shape()), ")");
  int64_t bins = minlength;
  if (x.numel() > 0) {
    const Tensor idx = cast(x, DType::Int64);
    VK_CHECK(amin(idx).item() >= 0, RuntimeError,
             "bincount only supports 1-d non-negative integral inputs (a value is negative)");
    bins = std::max<int64_t>(bins, static_cast<int64_t>(amax(idx).item()) + 1);
  }
  const DType dtype = !weights.defined()             ? DType::Int64
                      : is_floating(weights.dtype()) ? weights.dtype()
                                                     : DType::Float64;
  const Tensor base = zeros({bins}, dtype, x.device());
  if (x.numel() == 0) return base;
  const Tensor src =
      weights.defined() ? cast(weights.detach(), dtype) : full(x.shape(), 1, dtype, x.device());
  return scatter_add(base, 0, cast(x, DType::Int64), src);
}

Tensor argwhere(const Tensor& x) {
  return nonzero(x.dtype() == DType::Bool ? x : ne(x, zeros({}, x.dtype(), x.device())));
}

}  // namespace vk
