// The scan family: cumulative ops along one dim (cumsum, cumprod, cummax, cummin), each one op of
// the table with its own kernels, and tril/triu, which are a mask (a comparison of two aranges)
// and a where: no kernel of their own, and where's gradient is theirs (tril(g), triu(g)).
#include "vkml/ops/scan.h"

#include <algorithm>
#include <string>

#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/index.h"
#include "vkml/ops/op.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

Meta infer_scan(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  std::string name(op);
  if (in[0].ndim() > 0) wrap_dim(a.dim, in[0].ndim(), name.c_str());
  return {in[0].shape(), in[0].dtype()};
}

// cumsum/cumprod: the caller has cast bool and int32 to int64 (as PyTorch's result dtype).
Meta infer_scan_numeric(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(in[0].dtype() != DType::Bool, DTypeError, op, ": not defined for bool tensors");
  return infer_scan(in, a, op);
}

// The sum of g over positions j >= i along dim: cumsum's adjoint.
Tensor reverse_cumsum(const Tensor& g, int64_t dim) {
  if (g.ndim() == 0) return g;
  return flip(cumsum(flip(g, {dim}), dim), {dim});
}

// d out_j / d x_i = prod of x_k over k <= j, k != i (j >= i). Without zeros that is out_j / x_i,
// so dx = reverse_cumsum(g * out) / x. With zeros, the products themselves, from an n x n
// matrix per row (row i: x with x_i replaced by 1, cumprod along it), so that the rule stays
// right at zeros and its own derivative (cumprod again) does too.
Grads cumprod_grad(const GradCtx& c) {
  const Tensor &x = c.in[0], &g = c.grad;
  if (x.ndim() == 0) return {g};
  const int64_t d = c.attrs.dim;
  // The test for zeros is a host read, taken only where it costs no wait.
  bool has_zeros = true;
  if (values_on_host(x)) {
    NoGradGuard no_grad;  // only for the test: the rule itself must record (second order)
    has_zeros = sum(cast(eq(x.detach(), zeros_like(x)), DType::Int64)).item() != 0;
  }
  if (!has_zeros) return {reverse_cumsum(g * c.out, d) / x};
  const Tensor xt = transpose(x, d, -1), g_t = transpose(g, d, -1);
  const int64_t n = xt.shape().back();
  Shape square = xt.shape();
  square.insert(square.end() - 1, n);  // (..., i, k)
  const Tensor rows = reshape(arange(0, n, 1, DType::Int64, x.device()), {n, 1});
  const Tensor cols = reshape(arange(0, n, 1, DType::Int64, x.device()), {1, n});
  const Tensor others = where(eq(rows, cols), scalar_like(1.0, x), unsqueeze(xt, -2));
  const Tensor p = cumprod(expand(others, square), -1);  // [i, j]: prod over k <= j, k != i
  const Tensor upper = cast(ge(cols, rows), x.dtype());  // j >= i
  const Tensor dx = sum(unsqueeze(g_t, -2) * p * upper, {-1});
  return {transpose(dx, d, -1)};
}

// cummax/cummin: each output came from the input at its index; several outputs may share one.
Grads scan_extreme_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  if (x.ndim() == 0) return {c.grad};
  return {scatter_add(zeros_like(x), c.attrs.dim, c.output(1), c.grad)};
}

Attrs dim_attrs(const Tensor& x, int64_t dim, const char* op) {
  Attrs a;
  a.dim = wrap_dim(dim, std::max<int64_t>(x.ndim(), 1), op);
  return a;
}

Tensor as_accumulated(const Tensor& x) {
  return !is_floating(x.dtype()) && x.dtype() != DType::Int64 ? cast(x, DType::Int64) : x;
}

ValuesIndices scan_extreme(OpKind kind, const Tensor& x, int64_t dim, const char* op) {
  const Outputs o = dispatch_outputs(kind, {x}, dim_attrs(x, dim, op));
  return {o[0], o[1]};
}

// Elements with col - row <= diagonal (lower) or >= diagonal (upper) kept.
Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  VK_CHECK(x.ndim() >= 2, RuntimeError, op,
           ": input tensor must have at least 2 dimensions, got shape ", shape_str(x.shape()));
  const int64_t n = x.shape()[x.ndim() - 2], m = x.shape()[x.ndim() - 1];
  // col - row <= diagonal as col <= row + diagonal: the (n, m) mask is the only full-size
  // temporary (an int64 matrix of col - row and a zero tensor of x's size were two more passes)
  const Tensor rows = reshape(arange(0, n, 1, DType::Int64, x.device()), {n, 1});
  const Tensor cols = reshape(arange(0, m, 1, DType::Int64, x.device()), {1, m});
  // diagonals past [-n, m] keep all or nothing, as the edges do: clamped, row + diagonal cannot
  // overflow
  const int64_t d = std::clamp(diagonal, -n, m);
  const Tensor shifted = rows + scalar_like(d, rows);
  const Tensor keep = lower ? le(cols, shifted) : ge(cols, shifted);
  return where(keep, x, zeros({}, x.dtype(), x.device()));
}

}  // namespace

void add_scan_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::CumSum,
       .name = "cumsum",
       .arity = 1,
       .signature = "cumsum(x, dim)",
       .summary = "running sum along dim, in order (bool and int32 give int64)",
       .infer = infer_scan_numeric,
       .grad = [](const GradCtx& c) -> Grads { return {reverse_cumsum(c.grad, c.attrs.dim)}; },
       .grad_doc = "dx = flip(cumsum(flip(g, dim), dim), dim): the sum of g over the "
                   "positions at and after each element"});
  ops.push_back({.kind = OpKind::CumProd,
                 .name = "cumprod",
                 .arity = 1,
                 .signature = "cumprod(x, dim)",
                 .summary = "running product along dim, in order (bool and int32 give int64)",
                 .infer = infer_scan_numeric,
                 .grad = cumprod_grad,
                 .grad_doc =
                     "without zeros dx = reverse_cumsum(g * out) / x; with zeros dx_i = sum over j "
                     ">= i of g_j * (product of x_k, k <= j, k != i), from cumprod of an n x n "
                     "matrix per row (x with x_i set to 1 in row i), right at zeros to any order"});
  ops.push_back({.kind = OpKind::CumMax,
                 .name = "cummax",
                 .arity = 1,
                 .outputs = 2,
                 .signature = "cummax(x, dim) -> (values, indices)",
                 .summary = "running maximum along dim and the int64 index it came from (output "
                            "1; ties: the latest; a NaN propagates with its own index)",
                 .infer = infer_scan,
                 .grad = scan_extreme_grad,
                 .grad_doc = "dx = scatter_add(zeros_like(x), dim, indices, g)"});
  ops.push_back({.kind = OpKind::CumMin,
                 .name = "cummin",
                 .arity = 1,
                 .outputs = 2,
                 .signature = "cummin(x, dim) -> (values, indices)",
                 .summary = "running minimum along dim and the int64 index it came from (output "
                            "1; ties: the latest; a NaN propagates with its own index)",
                 .infer = infer_scan,
                 .grad = scan_extreme_grad,
                 .grad_doc = "dx = scatter_add(zeros_like(x), dim, indices, g)"});
}

Tensor cumsum(const Tensor& x, int64_t dim) {
  Attrs a = dim_attrs(x, dim, "cumsum");
  return dispatch(OpKind::CumSum, {as_accumulated(x)}, a);
}
Tensor cumprod(const Tensor& x, int64_t dim) {
  Attrs a = dim_attrs(x, dim, "cumprod");
  return dispatch(OpKind::CumProd, {as_accumulated(x)}, a);
}
ValuesIndices cummax(const Tensor& x, int64_t dim) {
  return scan_extreme(OpKind::CumMax, x, dim, "cummax");
}
ValuesIndices cummin(const Tensor& x, int64_t dim) {
  return scan_extreme(OpKind::CumMin, x, dim, "cummin");
}
Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

}  // namespace vk
