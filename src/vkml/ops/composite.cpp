// Composite ops, element-wise and shape families: PyTorch functions written with the op table's
// ops (composite.h). No kernel and no gradient rule here: both come from the ops used.
#include "vkml/ops/composite.h"

#include <cmath>
#include <limits>

#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/index.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

Tensor zero_of(const Tensor& x) { return zeros({}, x.dtype(), x.device()); }
Tensor nonzero_mask(const Tensor& x) { return x.dtype() == DType::Bool ? x : ne(x, zero_of(x)); }

}  // namespace

// ---- element-wise ----

Tensor logical_not(const Tensor& x) { return eq(nonzero_mask(x), zeros({}, DType::Bool)); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return bitwise_and(nonzero_mask(a), nonzero_mask(b));
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return bitwise_or(nonzero_mask(a), nonzero_mask(b));
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return bitwise_xor(nonzero_mask(a), nonzero_mask(b));
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  VK_CHECK(a.dtype() == b.dtype(), RuntimeError, "isclose: ", dtype_name(a.dtype()),
           " did not match ", dtype_name(b.dtype()));
  VK_CHECK(rtol >= 0, RuntimeError, "isclose: rtol must be greater than or equal to zero, but got ",
           rtol);
  VK_CHECK(atol >= 0, RuntimeError, "isclose: atol must be greater than or equal to zero, but got ",
           atol);
  NoGradGuard no_grad;  // a bool result: no graph
  Tensor close = eq(a, b);
  if (a.dtype() == DType::Bool || (rtol == 0 && atol == 0)) return close;
  if (equal_nan && is_floating(a.dtype()))
    close = bitwise_or(close, bitwise_and(ne(a, a), ne(b, b)));
  // Integers compare in the default float dtype, as torch (|a - b| <= atol + rtol * |b|).
  Tensor fa = is_floating(a.dtype()) ? a : cast(a, DType::Float32);
  Tensor fb = is_floating(b.dtype()) ? b : cast(b, DType::Float32);
  Tensor err = abs(fa - fb);
  Tensor allowed = abs(fb * rtol) + atol;
  // err - err is NaN exactly when err is inf or NaN: a finite error only (inf vs -inf is far).
  Tensor finite = eq(err - err, zero_of(err));
  return bitwise_or(close, bitwise_and(finite, le(err, allowed)));
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  Tensor c = isclose(a, b, rtol, atol, equal_nan);
  NoGradGuard no_grad;
  return sum(cast(logical_not(c), DType::Int64)).item() == 0;
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  NoGradGuard no_grad;
  return sum(cast(ne(a, b), DType::Int64)).item() == 0;
}

Tensor nan_to_num(const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  if (!is_floating(x.dtype())) return clone(x);
  const bool f32 = x.dtype() == DType::Float32;
  const double big = f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  const Device d = x.device();
  Tensor inf = full({}, std::numeric_limits<double>::infinity(), x.dtype(), d);
  Tensor y = where(ne(x, x), full({}, nan.value_or(0.0), x.dtype(), d), x);
  // A replacement beyond float32's range rounds to inf there, as torch's conversion does.
  y = where(eq(x, inf), full({}, posinf.value_or(big), x.dtype(), d), y);
  return where(eq(x, -inf), full({}, neginf.value_or(-big), x.dtype(), d), y);
}

Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& value) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.ndim(), 1), "index_fill");
  VK_CHECK(index.ndim() <= 1 && is_integral(index.dtype()), IndexError,
           "index_fill: index must be a 0-D or 1-D int64 tensor, got ", dtype_name(index.dtype()),
           " of shape ", shape_str(index.shape()));
  VK_CHECK(value.ndim() == 0, RuntimeError,
           "index_fill: only supports a 0-dimensional value tensor, but got tensor with ",
           value.ndim(), " dimension(s)");
  const int64_t n = x.ndim() == 0 ? 1 : x.size(d);
  if (index.numel() > 0) {
    NoGradGuard no_grad;
    Tensor idx = cast(index, DType::Int64);
    Tensor bad = bitwise_or(lt(idx, full({}, -n, DType::Int64, idx.device())),
                            ge(idx, full({}, n, DType::Int64, idx.device())));
    VK_CHECK(sum(cast(bad, DType::Int64)).item() == 0, IndexError,
             "index_fill: index out of "
             "range for dim ",
             dim, " of size ", n);
  }
  // hit[i]: some index names position i (negative indices wrap).
  Tensor pos = arange(0, n, 1, DType::Int64, x.device());
  Tensor idx =
      reshape(remainder(cast(index, DType::Int64), full({}, n, DType::Int64, x.device())), {1, -1});
  Tensor hit = gt(sum(cast(eq(unsqueeze(pos, 1), idx), DType::Int64), {1}),
                  zeros({}, DType::Int64, x.device()));
  Shape s(std::max<int64_t>(x.ndim(), 1), 1);
  s[d] = n;
  Tensor mask = x.ndim() == 0 ? reshape(hit, {}) : reshape(hit, s);
  return where(mask, cast(value, x.dtype()), x);
}

Tensor fill_diagonal(const Tensor& x, const Tensor& value, bool wrap) {
  VK_CHECK(x.ndim() >= 2, RuntimeError, "fill_diagonal_: dimensions must larger than 1");
  for (int64_t i = 1; i < x.ndim() && x.ndim() > 2; ++i)
    VK_CHECK(x.size(i) == x.size(0), RuntimeError,
             "fill_diagonal_: all dimensions of input must be of equal length");
  // The diagonal of the row-major flattening: every (sum of strides)-th element, as torch's.
  int64_t step = 0, stride = 1;
  for (int64_t i = x.ndim(); i-- > 0;) {
    step += stride;
    stride *= x.size(i);
  }
  const int64_t numel = x.numel();
  int64_t end = numel;
  if (x.ndim() == 2 && !wrap) end = std::min(numel, x.size(1) * x.size(1));
  Tensor pos = arange(0, numel, 1, DType::Int64, x.device());
  Tensor on = bitwise_and(eq(remainder(pos, full({}, step, DType::Int64, x.device())),
                             zeros({}, DType::Int64, x.device())),
                          lt(pos, full({}, end, DType::Int64, x.device())));
  return where(reshape(on, x.shape()), cast(value, x.dtype()), x);
}

Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max) {
  VK_CHECK(min.defined() || max.defined(), RuntimeError,
           "clamp: at least one of 'min' or 'max' must not be None");
  Tensor y = x;
  if (min.defined()) y = maximum(y, min);
  if (max.defined()) y = minimum(y, max);
  return y;
}

// ---- shape ----

Tensor diff(const Tensor& x, int64_t n, int64_t dim, const Tensor& prepend, const Tensor& append) {
  VK_CHECK(x.ndim() >= 1, RuntimeError, "diff expects input to be at least one-dimensional");
  VK_CHECK(n >= 0, RuntimeError, "diff: order must be non-negative but got ", n);
  const int64_t d = wrap_dim(dim, x.ndim(), "diff");
  std::vector<Tensor> parts;
  for (const Tensor* p : {&prepend, &x, &append}) {
    if (!p->defined()) continue;
    VK_CHECK(p->ndim() == x.ndim(), RuntimeError,
             "diff expects prepend or append to be the same "
             "dimension as input (",
             x.ndim(), "), got ", p->ndim());
    parts.push_back(*p);
  }
  Tensor y = parts.size() == 1 ? x : cat(parts, d);
  for (int64_t i = 0; i < n && y.size(d) > 0; ++i) {
    const int64_t len = y.size(d);
    Tensor hi = slice(y, d, 1, len), lo = slice(y, d, 0, len - 1);
    y = y.dtype() == DType::Bool ? ne(hi, lo) : hi - lo;
  }
  return y;
}

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  VK_CHECK(!shifts.empty(), RuntimeError, "roll: `shifts` required");
  if (dims.empty()) {
    VK_CHECK(shifts.size() == 1, RuntimeError,
             "roll: shifts and dimensions must align. shifts: ", shifts.size(), ", dims:0");
    return reshape(roll(flatten(x), shifts, {0}), x.shape());
  }
  VK_CHECK(shifts.size() == dims.size(), RuntimeError,
           "roll: shifts and dimensions must align. shifts: ", shifts.size(),
           ", dims:", dims.size());
  Tensor y = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], std::max<int64_t>(x.ndim(), 1), "roll");
    if (x.ndim() == 0) continue;  // a 0-d tensor rolls onto itself
    const int64_t n = y.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    y = cat({slice(y, d, n - s, n), slice(y, d, 0, n - s)}, d);
  }
  return y.same(x) ? clone(x) : y;
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing) {
  VK_CHECK(indexing == "ij" || indexing == "xy", RuntimeError,
           "meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  VK_CHECK(!xs.empty(), RuntimeError, "meshgrid expects a non-empty TensorList");
  Shape out;
  for (const Tensor& t : xs) {
    VK_CHECK(t.ndim() <= 1, RuntimeError,
             "meshgrid: expected 0-D or 1-D tensors, got one of shape ", shape_str(t.shape()));
    VK_CHECK(t.dtype() == xs[0].dtype(), RuntimeError,
             "meshgrid expects all tensors to have the same dtype");
    VK_CHECK(t.device() == xs[0].device(), RuntimeError,
             "meshgrid expects all tensors to have the same device");
    out.push_back(t.numel());
  }
  // "xy" is "ij" with the first two inputs' roles swapped (Cartesian x along columns).
  const bool swap = indexing == "xy" && xs.size() >= 2;
  if (swap) std::swap(out[0], out[1]);
  std::vector<Tensor> grids;
  for (size_t i = 0; i < xs.size(); ++i) {
    size_t pos = swap && i < 2 ? 1 - i : i;
    Shape view_shape(out.size(), 1);
    view_shape[pos] = -1;
    grids.push_back(expand(reshape(xs[i], view_shape), out));
  }
  return grids;
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  VK_CHECK(repeats >= 0, RuntimeError, "repeat_interleave: repeats must be non-negative, got ",
           repeats);
  Tensor src = dim ? x : flatten(x);
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.ndim(), 1), "repeat_interleave") : 0;
  if (src.ndim() == 0) src = reshape(src, {1});
  const int64_t total = src.size(d) * repeats;
  VK_CHECK(!output_size || *output_size == total, RuntimeError,
           "repeat_interleave: invalid output_size, expected ", total, " but got ", *output_size);
  Shape expanded = src.shape();
  expanded.insert(expanded.begin() + d + 1, repeats);
  Shape merged = src.shape();
  merged[d] = total;
  return reshape(expand(unsqueeze(src, d + 1), expanded), merged);
}

Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  VK_CHECK(repeats.ndim() <= 1, RuntimeError,
           "repeat_interleave: repeats must be 0-dim or 1-dim, "
           "got shape ",
           shape_str(repeats.shape()));
  VK_CHECK(is_integral(repeats.dtype()), RuntimeError,
           "repeat_interleave: repeats must be an integer tensor, got ",
           dtype_name(repeats.dtype()));
  std::vector<double> r = to_vector(repeats);
  std::vector<double> index;
  for (size_t i = 0; i < r.size(); ++i) {
    VK_CHECK(r[i] >= 0, RuntimeError, "repeat_interleave: repeats can not be negative");
    index.insert(index.end(), static_cast<size_t>(r[i]), static_cast<double>(i));
  }
  VK_CHECK(!output_size || *output_size == static_cast<int64_t>(index.size()), RuntimeError,
           "repeat_interleave: invalid output_size, expected ", index.size(), " but got ",
           *output_size);
  return to_device(from_vector(index, {static_cast<int64_t>(index.size())}, repeats.dtype()),
                   repeats.device());
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  if (repeats.ndim() == 0 || (repeats.numel() == 1 && !dim)) {
    VK_CHECK(is_integral(repeats.dtype()), RuntimeError,
             "repeat_interleave: repeats must be an integer tensor");
    return repeat_interleave(x, static_cast<int64_t>(repeats.item()), dim, output_size);
  }
  Tensor src = dim ? x : flatten(x);
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.ndim(), 1), "repeat_interleave") : 0;
  VK_CHECK(repeats.ndim() == 1 && repeats.size(0) == src.size(d), RuntimeError,
           "repeat_interleave: repeats must have the same size as input along dim, but got "
           "repeats.size(0) = ",
           repeats.numel(), " and input.size(", d, ") = ", src.size(d));
  Tensor index = repeat_interleave(to_device(repeats, src.device()), output_size);
  return index_select(src, d, index);
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t d1 = wrap_dim(dim1, x.ndim(), "diagonal");
  const int64_t d2 = wrap_dim(dim2, x.ndim(), "diagonal");
  VK_CHECK(d1 != d2, RuntimeError, "diagonal: dimensions cannot be identical ", dim1, ", ", dim2);
  // Move the two dims last, flatten them: the diagonal is every (cols + 1)-th element.
  std::vector<int64_t> order;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != d1 && i != d2) order.push_back(i);
  order.push_back(d1);
  order.push_back(d2);
  Tensor p = permute(x, order);
  const int64_t rows = x.size(d1), cols = x.size(d2);
  const int64_t len = std::max<int64_t>(
      0, offset >= 0 ? std::min(rows, cols - offset) : std::min(rows + offset, cols));
  Shape flat(p.shape().begin(), p.shape().end() - 2);
  flat.push_back(rows * cols);
  Tensor f = reshape(p, flat);
  if (len == 0) return slice(f, -1, 0, 0);
  const int64_t start = offset >= 0 ? offset : -offset * cols;
  return slice(f, f.ndim() - 1, start, start + (len - 1) * (cols + 1) + 1, cols + 1);
}

Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  VK_CHECK(x.ndim() >= 1, RuntimeError, "diag_embed: expected a tensor of at least 1 dim");
  const int64_t n = x.size(-1);
  const int64_t nd = x.ndim() + 1;
  const int64_t d1 = wrap_dim(dim1, nd, "diag_embed"), d2 = wrap_dim(dim2, nd, "diag_embed");
  VK_CHECK(d1 != d2, RuntimeError, "diag_embed: diagonal dimensions cannot be identical ", dim1,
           ", ", dim2);
  // Each x_i followed by n zeros, read n at a time: x_i lands at i * (n + 1), the diagonal of an
  // n x n matrix (views and one pad: no n x n mask, and a product with eye would spread NaN). Then
  // padded to n + |offset| on the offset's sides.
  const Shape batch(x.shape().begin(), x.shape().end() - 1);
  Shape spaced_shape = batch, square = batch;
  spaced_shape.push_back(n * (n + 1));
  square.insert(square.end(), {n, n});
  Tensor spaced = reshape(pad(unsqueeze(x, -1), {0, n}), spaced_shape);
  Tensor sq = reshape(slice(spaced, -1, 0, n * n), square);
  const int64_t k = std::abs(offset);
  Tensor full_sq = offset >= 0 ? pad(sq, {k, 0, 0, k}) : pad(sq, {0, k, k, 0});
  // full_sq's last two dims are (row, col); move them to (d1, d2).
  std::vector<int64_t> order(nd, -1);
  order[d1] = nd - 2;
  order[d2] = nd - 1;
  int64_t next = 0;
  for (int64_t i = 0; i < nd; ++i)
    if (order[i] < 0) order[i] = next++;
  return permute(full_sq, order);
}

Tensor diag(const Tensor& x, int64_t offset) {
  VK_CHECK(x.ndim() == 1 || x.ndim() == 2, RuntimeError,
           "diag: matrix or a vector expected, got "
           "shape ",
           shape_str(x.shape()));
  if (x.ndim() == 1) return diag_embed(x, offset, 0, 1);
  return clone(diagonal(x, offset, 0, 1));
}

Tensor trace(const Tensor& x) {
  VK_CHECK(x.ndim() == 2, RuntimeError, "trace: expected a matrix, but got tensor with dim ",
           x.ndim());
  return sum(diagonal(x));
}

Tensor unflatten(const Tensor& x, int64_t dim, const std::vector<int64_t>& sizes) {
  const int64_t d = wrap_dim(dim, x.ndim(), "unflatten");
  VK_CHECK(!sizes.empty(), RuntimeError, "unflatten: sizes must be non-empty");
  int64_t known = 1, unknown = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      VK_CHECK(unknown < 0, RuntimeError, "unflatten: only one dimension can be inferred");
      unknown = static_cast<int64_t>(i);
    } else {  // checked: sizes whose product overflows must be an error, not a wrapped count
      VK_CHECK(sizes[i] >= 0, RuntimeError, "unflatten: invalid size ", sizes[i], " at index ", i,
               " of sizes");
      known = checked_mul(known, sizes[i], "unflatten");
    }
  }
  VK_CHECK(unknown >= 0 ? (known != 0 && x.size(d) % known == 0) : known == x.size(d), RuntimeError,
           "unflatten: provided sizes don't multiply up to the size of dim ", dim, " (", x.size(d),
           ") in the input tensor");
  Shape s(x.shape().begin(), x.shape().begin() + d);
  s.insert(s.end(), sizes.begin(), sizes.end());
  s.insert(s.end(), x.shape().begin() + d + 1, x.shape().end());
  return reshape(x, s);
}

}  // namespace vk
