// Composite ops, reduction and linear-algebra families: statistics pairs, norms, distances,
// products with beta/alpha, cross, tensordot, kron and einsum, written with the op table's ops
// (composite.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "vkml/core/geometry.h"
#include "vkml/core/shape.h"
#include "vkml/ops/composite.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/linalg.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"
#include "vkml/ops/solve.h"

namespace vk {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_value(const Scalar& s, double v) { return !s.is_bool() && s.to_double() == v; }

// x ** e, except that where x == 0 the result is 0 with gradient 0 (torch's subgradient of the
// p-norm at zero): the double-where keeps an infinite derivative out of the graph.
Tensor pow_zero_safe(const Tensor& x, double e) {
  Tensor zero = zeros({}, x.dtype(), x.device());
  Tensor is_zero = eq(x, zero);
  Tensor safe = where(is_zero, ones({}, x.dtype(), x.device()), x);
  return where(is_zero, zero, pow(safe, e));
}

std::vector<int64_t> all_dims_if_empty(const std::vector<int64_t>& dims, int64_t ndim,
                                       const char* op) {
  if (!dims.empty()) return wrap_dims(dims, ndim, op);
  std::vector<int64_t> all(ndim);
  for (int64_t i = 0; i < ndim; ++i) all[i] = i;
  return all;
}

// beta * input + alpha * prod, where input must broadcast to prod's shape (torch's add*mm family).
Tensor beta_alpha(const Tensor& input, Tensor prod, Scalar beta, Scalar alpha, const char* op) {
  VK_CHECK(broadcast_shapes(input.shape(), prod.shape(), op) == prod.shape(), RuntimeError, op,
           ": input of shape ", shape_str(input.shape()),
           " does not broadcast to the product's shape ", shape_str(prod.shape()));
  if (!is_value(alpha, 1)) prod = prod * alpha;
  if (is_value(beta, 0)) return prod;  // input's values ignored (NaN too), as torch
  return (is_value(beta, 1) ? input : input * beta) + prod;
}

}  // namespace

// ---- statistics and norms ----

TensorPair var_mean(const Tensor& x, const std::vector<int64_t>& dims, double correction,
                    bool keepdim) {
  return {var(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}

TensorPair std_mean(const Tensor& x, const std::vector<int64_t>& dims, double correction,
                    bool keepdim) {
  return {sqrt(var(x, dims, correction, keepdim)), mean(x, dims, keepdim)};
}

Tensor vector_norm(const Tensor& x, double ord, const std::vector<int64_t>& dims, bool keepdim,
                   std::optional<DType> dtype) {
  VK_CHECK(is_floating(x.dtype()), RuntimeError,
           "linalg.vector_norm: Expected a floating point tensor as input. Got ",
           dtype_name(x.dtype()));
  VK_CHECK(!dtype || is_floating(*dtype), RuntimeError,
           "linalg.vector_norm: dtype should be floating point, but got ", dtype_name(*dtype));
  VK_CHECK(!std::isnan(ord), RuntimeError, "linalg.vector_norm: ord must not be NaN");
  const Tensor xx = dtype ? cast(x, *dtype) : x;
  const std::vector<int64_t> red = all_dims_if_empty(dims, x.ndim(), "linalg.vector_norm");
  bool empty = false;
  for (int64_t d : red) empty = empty || x.size(d) == 0;
  VK_CHECK(!(empty && (ord < 0 || std::isinf(ord))), RuntimeError,
           "linalg.vector_norm cannot "
           "compute the ",
           ord,
           " norm on an empty tensor because the operation does not have an "
           "identity");
  const std::vector<int64_t>& d = dims;  // empty = all, as sum/amax take it
  // the 2-norm (the default, and clip_grad_norm_'s) in one pass over x: neither |x| nor x * x is
  // made
  if (ord == 2) return pow_zero_safe(sum_squares(xx, d, keepdim), 0.5);
  Tensor a = abs(xx);
  if (ord == kInf) return amax(a, d, keepdim);
  if (ord == -kInf) return amin(a, d, keepdim);
  if (ord == 1) return sum(a, d, keepdim);
  if (ord == 0) {
    // The count of nonzeros, with a zero gradient (as torch) from a where that never picks x.
    Tensor zero = zeros({}, xx.dtype(), xx.device());
    Tensor never = ne(zero, zero);
    return sum(cast(ne(xx, zero), xx.dtype()), d, keepdim) +
           sum(where(never, xx, zero), d, keepdim);
  }
  Tensor powered = ord < 1 ? pow_zero_safe(a, ord) : pow(a, ord);
  return pow_zero_safe(sum(powered, d, keepdim), 1.0 / ord);
}

namespace {

// An SVD-based norm of x's matrices over dims (d0, d1): the singular values (the matrices moved
// last) reduced by `reduce`, the two dims kept as size 1 when keepdim.
template <class Reduce>
Tensor singular_value_norm(const Tensor& x, int64_t d0, int64_t d1, bool keepdim,
                           std::optional<DType> dtype, Reduce reduce) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != d0 && d != d1) perm.push_back(d);
  perm.push_back(d0);
  perm.push_back(d1);
  const Tensor r = reduce(svd(permute(dtype ? cast(x, *dtype) : x, perm)).S);
  if (!keepdim) return r;
  return unsqueeze(unsqueeze(r, std::min(d0, d1)), std::max(d0, d1));
}

}  // namespace

Tensor matrix_norm(const Tensor& x, const std::string& ord, std::vector<int64_t> dims, bool keepdim,
                   std::optional<DType> dtype) {
  VK_CHECK(x.ndim() >= 2, RuntimeError,
           "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  VK_CHECK(ord == "fro" || ord == "nuc", RuntimeError, "linalg.matrix_norm: Order ", ord,
           " not supported.");
  VK_CHECK(dims.size() == 2, RuntimeError, "linalg.matrix_norm: dim must be a 2-tuple. Got ",
           dims.size(), " dims");
  const int64_t d0 = wrap_dim(dims[0], x.ndim(), "linalg.matrix_norm");
  const int64_t d1 = wrap_dim(dims[1], x.ndim(), "linalg.matrix_norm");
  VK_CHECK(d0 != d1, RuntimeError, "linalg.matrix_norm: dims must be different. Got (", dims[0],
           ", ", dims[1], ")");
  if (ord == "nuc")  // the sum of the singular values
    return singular_value_norm(x, d0, d1, keepdim, dtype,
                               [](const Tensor& s) { return sum(s, {-1}); });
  return vector_norm(x, 2, dims, keepdim, dtype);
}

Tensor matrix_norm(const Tensor& x, double ord, std::vector<int64_t> dims, bool keepdim,
                   std::optional<DType> dtype) {
  VK_CHECK(x.ndim() >= 2, RuntimeError,
           "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  VK_CHECK(std::abs(ord) == 1 || std::abs(ord) == 2 || std::isinf(ord), RuntimeError,
           "linalg.matrix_norm: Order ", ord, " not supported.");
  VK_CHECK(is_floating(x.dtype()), RuntimeError,
           "linalg.matrix_norm: Expected a floating point tensor as input. Got ",
           dtype_name(x.dtype()));
  VK_CHECK(dims.size() == 2, RuntimeError, "linalg.matrix_norm: dim must be a 2-tuple. Got ",
           dims.size(), " dims");
  const int64_t d0 = wrap_dim(dims[0], x.ndim(), "linalg.matrix_norm");
  const int64_t d1 = wrap_dim(dims[1], x.ndim(), "linalg.matrix_norm");
  VK_CHECK(d0 != d1, RuntimeError, "linalg.matrix_norm: dims must be different. Got (", dims[0],
           ", ", dims[1], ")");
  if (std::abs(ord) == 2)  // the largest (smallest) singular value
    return singular_value_norm(x, d0, d1, keepdim, dtype, [ord](const Tensor& s) {
      return ord > 0 ? amax(s, {-1}) : amin(s, {-1});
    });
  Tensor a = abs(dtype ? cast(x, *dtype) : x);
  // ord 1: the largest column sum (sum over rows d0, then max over d1); inf: the transpose.
  const bool columns = std::abs(ord) == 1;
  Tensor sums = sum(a, {columns ? d0 : d1}, true);
  Tensor r =
      ord > 0 ? amax(sums, {columns ? d1 : d0}, true) : amin(sums, {columns ? d1 : d0}, true);
  if (keepdim) return r;
  return squeeze(squeeze(r, std::max(d0, d1)), std::min(d0, d1));
}

Tensor dist(const Tensor& a, const Tensor& b, double p) { return vector_norm(a - b, p); }

// Euclidean distances through one product, as torch's compute modes that use it:
// |a - b|^2 = |a|^2 + |b|^2 - 2 a.b, then the root of what is positive (a row against itself can
// round below 0; such a pair has distance 0 and gradient 0, as torch's backward masks it; NaN
// passes). (P x R x M) differences were 28x slower than torch at 256 x 256 x 64.
Tensor euclidean_by_product(const Tensor& x1, const Tensor& x2) {
  Tensor n1 = sum_squares(x1, {-1}, true), n2 = sum_squares(x2, {-1}, true);
  Tensor d2 = matmul(x1 * -2.0, transpose(x2, -1, -2)) + n1 + transpose(n2, -1, -2);
  Tensor zero = zeros({}, d2.dtype(), d2.device());
  Tensor none = le(d2, zero);
  return where(none, zero, sqrt(where(none, ones({}, d2.dtype(), d2.device()), d2)));
}

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::string_view compute_mode) {
  VK_CHECK(x1.ndim() >= 2 && x2.ndim() >= 2, RuntimeError,
           "cdist only supports at least 2D tensors, X1 got: ", x1.ndim(), "D, X2 got: ", x2.ndim(),
           "D");
  VK_CHECK(x1.size(-1) == x2.size(-1), RuntimeError,
           "cdist: X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
           " X2: ", x2.size(-1));
  VK_CHECK(p >= 0, RuntimeError, "cdist only supports non-negative p values, got ", p);
  VK_CHECK(is_floating(x1.dtype()) && is_floating(x2.dtype()), RuntimeError,
           "cdist only supports floating-point dtypes, X1 got: ", dtype_name(x1.dtype()),
           ", X2 got: ", dtype_name(x2.dtype()));
  const bool always = compute_mode == "use_mm_for_euclid_dist";
  VK_CHECK(always || compute_mode == "use_mm_for_euclid_dist_if_necessary" ||
               compute_mode == "donot_use_mm_for_euclid_dist",
           RuntimeError, compute_mode, " is not a valid value for compute_mode");
  const bool if_necessary = compute_mode == "use_mm_for_euclid_dist_if_necessary";
  if (p == 2 && (always || (if_necessary && (x1.size(-2) > 25 || x2.size(-2) > 25))))
    return euclidean_by_product(x1, x2);
  return vector_norm(unsqueeze(x1, -2) - unsqueeze(x2, -3), p, {-1});
}

// ---- products ----

Tensor outer(const Tensor& a, const Tensor& b) {
  VK_CHECK(a.ndim() == 1, RuntimeError, "outer: Expected 1-D argument self, but got ", a.ndim(),
           "-D");
  VK_CHECK(b.ndim() == 1, RuntimeError, "outer: Expected 1-D argument vec2, but got ", b.ndim(),
           "-D");
  return unsqueeze(a, 1) * b;
}

Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta, Scalar alpha) {
  VK_CHECK(mat.ndim() == 2 && vec.ndim() == 1, RuntimeError,
           "addmv: vector + matrix @ vector expected, got mat of shape ", shape_str(mat.shape()),
           " and vec of shape ", shape_str(vec.shape()));
  return beta_alpha(input, matmul(mat, vec), beta, alpha, "addmv");
}

Tensor addr(const Tensor& input, const Tensor& v1, const Tensor& v2, Scalar beta, Scalar alpha) {
  return beta_alpha(input, outer(v1, v2), beta, alpha, "addr");
}

Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha) {
  VK_CHECK(b1.ndim() == 3 && b2.ndim() == 3, RuntimeError,
           "baddbmm: batch1 and batch2 must be 3-D tensors, got shapes ", shape_str(b1.shape()),
           " and ", shape_str(b2.shape()));
  return beta_alpha(input, matmul(b1, b2), beta, alpha, "baddbmm");
}

Tensor addbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha) {
  VK_CHECK(b1.ndim() == 3 && b2.ndim() == 3, RuntimeError,
           "addbmm: batch1 and batch2 must be 3-D tensors, got shapes ", shape_str(b1.shape()),
           " and ", shape_str(b2.shape()));
  return beta_alpha(input, sum(matmul(b1, b2), {0}), beta, alpha, "addbmm");
}

Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim) {
  VK_CHECK(a.ndim() == b.ndim(), RuntimeError,
           "linalg.cross: inputs must have the same number of dimensions, got shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()));
  const Shape s = broadcast_shapes(a.shape(), b.shape(), "cross");
  int64_t d = -1;
  if (dim) {
    d = wrap_dim(*dim, static_cast<int64_t>(s.size()), "cross");
    VK_CHECK(s[d] == 3 && a.size(d) == 3 && b.size(d) == 3, RuntimeError,
             "linalg.cross: inputs dimension ", *dim, " must have length 3. Got ", a.size(d),
             " and ", b.size(d));
  } else {
    for (size_t i = 0; i < s.size() && d < 0; ++i)
      if (s[i] == 3) d = static_cast<int64_t>(i);
    VK_CHECK(d >= 0, RuntimeError, "cross: no dimension of size 3 in input");
  }
  Tensor x = expand(a, s), y = expand(b, s);
  std::array<Tensor, 3> u, v;
  for (int64_t i = 0; i < 3; ++i) {
    u[i] = select(x, d, i);
    v[i] = select(y, d, i);
  }
  return stack({u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]},
               d);
}

Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int64_t>& dims_a,
                 const std::vector<int64_t>& dims_b) {
  VK_CHECK(dims_a.size() == dims_b.size(), RuntimeError,
           "tensordot: both dimension lists should have same length, got ", dims_a.size(), " and ",
           dims_b.size());
  // (wrap_dims reads an empty list as "all dims": an outer product contracts none)
  std::vector<int64_t> ca, cb;
  for (int64_t d : dims_a) ca.push_back(wrap_dim(d, a.ndim(), "tensordot"));
  for (int64_t d : dims_b) cb.push_back(wrap_dim(d, b.ndim(), "tensordot"));
  int64_t k = 1;
  for (size_t i = 0; i < ca.size(); ++i) {
    VK_CHECK(a.size(ca[i]) == b.size(cb[i]), RuntimeError,
             "tensordot: contracted dimensions need to match, but first has size ", a.size(ca[i]),
             " in dim ", ca[i], " and second has size ", b.size(cb[i]), " in dim ", cb[i]);
    k *= a.size(ca[i]);
  }
  std::vector<int64_t> pa, pb;
  Shape out;
  int64_t m = 1, n = 1;
  for (int64_t i = 0; i < a.ndim(); ++i)
    if (std::find(ca.begin(), ca.end(), i) == ca.end()) {
      pa.push_back(i);
      out.push_back(a.size(i));
      m *= a.size(i);
    }
  pa.insert(pa.end(), ca.begin(), ca.end());
  pb = cb;
  for (int64_t i = 0; i < b.ndim(); ++i)
    if (std::find(cb.begin(), cb.end(), i) == cb.end()) {
      pb.push_back(i);
      out.push_back(b.size(i));
      n *= b.size(i);
    }
  Tensor r = matmul(reshape(permute(a, pa), {m, k}), reshape(permute(b, pb), {k, n}));
  return reshape(r, out);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  VK_CHECK(dims >= 0, RuntimeError, "tensordot expects dims >= 0, but got dims=", dims);
  VK_CHECK(dims <= a.ndim() && dims <= b.ndim(), RuntimeError,
           "tensordot expects dims < ndim_a "
           "or ndim_b, but got dims=",
           dims);
  std::vector<int64_t> da, db;
  for (int64_t i = 0; i < dims; ++i) {
    da.push_back(a.ndim() - dims + i);
    db.push_back(i);
  }
  return tensordot(a, b, da, db);
}

Tensor kron(const Tensor& a, const Tensor& b) {
  const int64_t nd = std::max(a.ndim(), b.ndim());
  Shape sa(nd - a.ndim(), 1), sb(nd - b.ndim(), 1);
  sa.insert(sa.end(), a.shape().begin(), a.shape().end());
  sb.insert(sb.end(), b.shape().begin(), b.shape().end());
  // a as (a0, 1, a1, 1, ..) times b as (1, b0, 1, b1, ..): element (i, j) pairs, then merged.
  Shape ia, ib, out;
  for (int64_t i = 0; i < nd; ++i) {
    ia.insert(ia.end(), {sa[i], 1});
    ib.insert(ib.end(), {1, sb[i]});
    out.push_back(sa[i] * sb[i]);
  }
  return reshape(reshape(a, ia) * reshape(b, ib), out);
}

}  // namespace vk
