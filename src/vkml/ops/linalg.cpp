// Linear algebra. The matmul op itself is the 2-D/batched core: (B..., M, K) @ (B..., K, N).
// The public matmul() gives it torch.matmul semantics by recording view ops around it (1-D
// operands are unsqueezed, then the added dim squeezed away; a batched operand times a matrix is
// folded into one 2-D product), and prepare broadcasts the batch dims with expand views, so the
// rule only ever sees operands with equal batch dims and expand's rule sums the reuse back.
#include "vkml/ops/linalg.h"

#include <algorithm>

#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

void check_inner(const Tensor& a, const Tensor& b, std::string_view op) {
  VK_CHECK(a.ndim() >= 2 && b.ndim() >= 2, ShapeError, op,
           ": the matmul op takes operands with at least 2 dims, got shapes ", shape_str(a.shape()),
           " and ", shape_str(b.shape()));
  int64_t ka = a.shape()[a.ndim() - 1], kb = b.shape()[b.ndim() - 2];
  VK_CHECK(ka == kb, ShapeError, op, ": shapes ", shape_str(a.shape()), " and ",
           shape_str(b.shape()), " cannot be multiplied (", ka, " != ", kb, ")");
}

// Common dtype, then the batch dims broadcast by recorded expand views.
void prepare_matmul(std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  prepare_common_dtype(in, a, op);
  if (in[0].ndim() < 2 || in[1].ndim() < 2) return;  // infer reports it
  Shape ba = batch_of(in[0]), bb = batch_of(in[1]);
  if (ba == bb) return;
  size_t n = std::max(ba.size(), bb.size());
  Shape batch(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i + ba.size() >= n ? ba[i + ba.size() - n] : 1;
    int64_t db = i + bb.size() >= n ? bb[i + bb.size() - n] : 1;
    VK_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": the batch dims of shapes ",
             shape_str(in[0].shape()), " and ", shape_str(in[1].shape()), " do not broadcast");
    batch[i] = da == 1 ? db : da;
  }
  for (auto& t : in) {
    Shape s = batch;
    s.push_back(t.shape()[t.ndim() - 2]);
    s.push_back(t.shape()[t.ndim() - 1]);
    if (s != t.shape()) t = expand(t, s);
  }
}

Meta infer_matmul(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  const Tensor &a = in[0], &b = in[1];
  check_inner(a, b, op);
  VK_CHECK(batch_of(a) == batch_of(b), ShapeError, op, ": the batch dims of shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()), " differ");
  VK_CHECK(a.dtype() == b.dtype(), DTypeError, op, ": dtypes ", dtype_name(a.dtype()), " and ",
           dtype_name(b.dtype()), " differ");
  VK_CHECK(a.dtype() != DType::Bool, DTypeError, op, ": not defined for bool tensors");
  Shape s = batch_of(a);
  s.push_back(a.shape()[a.ndim() - 2]);
  s.push_back(b.shape()[b.ndim() - 1]);
  return {s, a.dtype()};
}

Tensor mT(const Tensor& t) { return transpose(t, -1, -2); }

// True when t's last two dims are stored column-major: t is the transposed view of a row-major
// matrix, as W^T in a linear layer's x @ W^T.
bool column_major(const Tensor& t) {
  const int64_t n = t.ndim();
  if (n < 2 || t.shape()[n - 2] < 2 || t.shape()[n - 1] < 2) return false;
  return t.strides()[n - 2] == 1 && t.strides()[n - 1] == t.shape()[n - 2];
}

// db = a^T @ g. For a column-major b it is computed as (g^T @ a)^T, the transposed view of a
// row-major product: the gradient has b's layout, so the transpose back to W is a contiguous
// tensor and accumulates into W.grad without a strided copy.
Tensor grad_of_b(const Tensor& a, const Tensor& b, const Tensor& g) {
  return column_major(b) ? mT(matmul(mT(g), a)) : matmul(mT(a), g);
}

Meta infer_addmm(const std::vector<Tensor>& in, const Attrs&, std::string_view op) {
  const Tensor &bias = in[0], &a = in[1], &b = in[2];
  VK_CHECK(a.ndim() == 2 && b.ndim() == 2 && (bias.ndim() == 1 || bias.ndim() == 2), ShapeError, op,
           ": expects a 1-D or 2-D bias and 2-D matrices, got shapes ", shape_str(bias.shape()),
           ", ", shape_str(a.shape()), " and ", shape_str(b.shape()));
  check_inner(a, b, op);
  const Shape want = bias.ndim() == 1 ? Shape{b.shape()[1]} : Shape{a.shape()[0], b.shape()[1]};
  VK_CHECK(bias.shape() == want, ShapeError, op, ": bias of shape ", shape_str(bias.shape()),
           " does not match ", shape_str(a.shape()), " @ ", shape_str(b.shape()), " (expected ",
           shape_str(want), ")");
  VK_CHECK(is_floating(a.dtype()), DTypeError, op, ": expects floating tensors, got ",
           dtype_name(a.dtype()));
  return {{a.shape()[0], b.shape()[1]}, a.dtype()};
}

}  // namespace

void add_linalg_ops(OpList& ops) {
  ops.push_back(
      {.kind = OpKind::Matmul,
       .name = "matmul",
       .arity = 2,
       .signature = "matmul(a, b)",
       .summary = "matrix product with torch.matmul semantics: 1-D operands are vectors, batch "
                  "dims broadcast; the op itself is (B..., M, K) @ (B..., K, N) (BLAS for "
                  "float32/float64, a loop for integers; dtypes are promoted)",
       .prepare = prepare_matmul,
       .infer = infer_matmul,
       .grad = [](const GradCtx& c) -> Grads {
         return {c.needs[0] ? matmul(c.grad, mT(c.in[1])) : Tensor(),
                 c.needs[1] ? grad_of_b(c.in[0], c.in[1], c.grad) : Tensor()};
       },
       .grad_doc = "da = g @ b^T, db = a^T @ g (batch broadcasting is summed back by expand's "
                   "rule; 1-D operands by the view ops around the core)"});
  ops.push_back(
      {.kind = OpKind::Addmm,
       .name = "addmm",
       .arity = 3,
       .signature = "addmm(bias, a, b)",
       .summary = "a @ b + bias for 2-D a (M, K), b (K, N) and a bias (N) on every row (linear "
                  "layers) or (M, N) (a recurrent step's input term): the bias is written "
                  "first and BLAS adds the product onto it",
       .prepare = prepare_common_dtype,
       .infer = infer_addmm,
       .grad = [](const GradCtx& c) -> Grads {
         const Tensor &a = c.in[1], &b = c.in[2];
         const bool rows = c.in[0].ndim() == 1;  // a bias on every row
         return {c.needs[0] ? (rows ? sum(c.grad, {0}) : c.grad) : Tensor(),
                 c.needs[1] ? matmul(c.grad, mT(b)) : Tensor(),
                 c.needs[2] ? grad_of_b(a, b, c.grad) : Tensor()};
       },
       .grad_doc = "dbias = g (summed over rows for a 1-D bias), da = g @ b^T, db = a^T @ "
                   "g"});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  VK_CHECK(a.ndim() >= 1 && b.ndim() >= 1, ShapeError,
           "matmul: both operands need at least 1 dim, got shapes ", shape_str(a.shape()), " and ",
           shape_str(b.shape()));
  const int64_t ka = a.shape().back();
  const int64_t kb = b.ndim() == 1 ? b.shape()[0] : b.shape()[b.ndim() - 2];
  VK_CHECK(ka == kb, ShapeError, "matmul: shapes ", shape_str(a.shape()), " and ",
           shape_str(b.shape()), " cannot be multiplied (", ka, " != ", kb, ")");
  if (a.ndim() == 1 && b.ndim() == 1)
    return reshape(matmul(reshape(a, {1, ka}), reshape(b, {kb, 1})), {});
  if (a.ndim() == 1) return squeeze(matmul(unsqueeze(a, 0), b), -2);
  if (b.ndim() == 1) return squeeze(matmul(a, unsqueeze(b, 1)), -1);
  if (a.ndim() >= 3 && b.ndim() == 2) {
    // (B..., M, K) @ (K, N): one 2-D product over all the rows (a view when a's rows allow).
    Shape s = a.shape();
    s.back() = b.shape()[1];
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < a.ndim(); ++d) rows *= a.shape()[d];
    return reshape(matmul(reshape(a, {rows, ka}), b), s);
  }
  return dispatch(OpKind::Matmul, {a, b});
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b) {
  return dispatch(OpKind::Addmm, {bias, a, b});
}

}  // namespace vk
