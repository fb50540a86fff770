#include "vkml/core/shape.h"

#include <algorithm>

#include "vkml/core/error.h"

namespace vk {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

namespace {
std::string prefix(std::string_view op) {
  return op.empty() ? std::string() : std::string(op) + ": ";
}
}  // namespace

int64_t numel_of(const Shape& s, std::string_view op) {
  int64_t n = 1, span = 1;  // span: the product with each 0 counted as 1; n <= span
  for (int64_t d : s) {
    VK_CHECK(d >= 0, SizeError, prefix(op), "negative dimension ", d, " in shape ", shape_str(s));
    VK_CHECK(!__builtin_mul_overflow(span, std::max<int64_t>(d, 1), &span), SizeError, prefix(op),
             "shape ", shape_str(s), " has more elements than int64 can count");
    n *= d;
  }
  return n;
}

int64_t checked_mul(int64_t a, int64_t b, std::string_view op) {
  int64_t r;
  VK_CHECK(!__builtin_mul_overflow(a, b, &r), SizeError, prefix(op), "size computation ", a, " * ",
           b, " overflows int64");
  return r;
}

int64_t checked_add(int64_t a, int64_t b, std::string_view op) {
  int64_t r;
  VK_CHECK(!__builtin_add_overflow(a, b, &r), SizeError, prefix(op), "size computation ", a, " + ",
           b, " overflows int64");
  return r;
}

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    VK_CHECK(i == 0 || !__builtin_mul_overflow(acc, std::max<int64_t>(s[i], 1), &acc), SizeError,
             "the strides of shape ", shape_str(s), " overflow int64");
  }
  return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    VK_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": shapes ", shape_str(a), " and ",
             shape_str(b), " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  numel_of(out, op);  // [2^32, 1] and [1, 2^32] are countable, their broadcast is not
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  VK_CHECK(dim >= lo && dim <= hi, IndexError, op, ": dim ", dim,
           " is out of range for a tensor with ", ndim, " dims (expected ", lo, " to ", hi, ")");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

std::vector<int64_t> wrap_dims(const std::vector<int64_t>& dims, int64_t ndim, const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) out.push_back(ndim == 0 ? (wrap_dim(d, 0, op), 0) : wrap_dim(d, ndim, op));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (ndim == 0) out.clear();
  return out;
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    bool reduced = std::binary_search(dims.begin(), dims.end(), i);
    if (!reduced)
      out.push_back(s[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

}  // namespace vk
