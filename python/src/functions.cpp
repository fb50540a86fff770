// Ops as Tensor methods and module functions (PyTorch's names and signatures): the argument
// helpers the families share, and bind_functions, which calls each family's binding file
// (bind_ops.h). Each binding converts its arguments and calls the C++ API; none computes anything
// itself beyond composing public ops.
#include <cmath>
#include <limits>

#include "bind_ops.h"

namespace vkpy {
namespace bindings {

nb::object g_max_type, g_min_type, g_sort_like;

nb::object values_indices(bool is_max, const vk::ValuesIndices& r) {
  return (is_max ? g_max_type : g_min_type)(r.values, r.indices);
}

int64_t as_i64(nb::handle h) { return nb::cast<int64_t>(h); }

std::vector<Tensor> tensor_list(nb::handle seq) {
  std::vector<Tensor> out;
  for (nb::handle h : seq) out.push_back(as_tensor(h));
  return out;
}

nb::tuple to_tuple(const std::vector<Tensor>& ts) {
  nb::list l;
  for (const auto& t : ts) l.append(nb::cast(t));
  return nb::tuple(l);
}

Tensor operand_or_raise(nb::handle h, const Tensor& like, const char* op) {
  std::optional<Tensor> t = operand(h, like, op);
  if (!t)
    throw nb::type_error((std::string(op) + ": expected a tensor, a number or array data").c_str());
  return *t;
}

Tensor clamp_any(const Tensor& x, nb::handle min, nb::handle max) {
  VK_CHECK(!min.is_none() || !max.is_none(), RuntimeError,
           "clamp(): at least one of min and max must be given");
  bool tensor_bounds = nb::isinstance<Tensor>(min) || nb::isinstance<Tensor>(max);
  if (!tensor_bounds) return vk::clamp(x, opt_scalar(min, "clamp"), opt_scalar(max, "clamp"));
  Tensor r = x;
  if (!min.is_none()) r = vk::maximum(r, operand_or_raise(min, x, "clamp"));
  if (!max.is_none()) r = vk::minimum(r, operand_or_raise(max, r, "clamp"));
  return r;
}

std::vector<Tensor> split_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  int64_t d = vk::wrap_dim(dim, x.ndim(), "split");
  int64_t total = 0;  // checked before slicing: slice() would clamp a wrong size silently
  for (int64_t s : sizes) {
    VK_CHECK(s >= 0, SizeError, "split: split sizes must be non-negative, got ",
             vk::shape_str(sizes));
    total = vk::checked_add(total, s, "split");
  }
  VK_CHECK(total == x.shape()[d], ShapeError, "split: sections ", vk::shape_str(sizes), " sum to ",
           total, " but dim ", d, " has size ", x.shape()[d]);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(vk::slice(x, d, start, start + s, 1));
    start += s;
  }
  return out;
}

std::vector<Tensor> split_even(const Tensor& x, int64_t size, int64_t dim) {
  int64_t d = vk::wrap_dim(dim, x.ndim(), "split");
  VK_CHECK(size > 0, ShapeError, "split: split_size must be positive, got ", size);
  int64_t n = x.shape()[d];
  std::vector<int64_t> sizes;
  for (int64_t s = 0; s < n; s += size) sizes.push_back(std::min(size, n - s));
  if (sizes.empty()) sizes.push_back(0);
  return split_sizes(x, sizes, d);
}

Tensor squeeze_any(const Tensor& x, nb::handle dim) {
  if (dim.is_none()) return vk::squeeze(x);
  std::vector<int64_t> dims = to_shape(dim);
  for (auto& d : dims) d = vk::wrap_dim(d, std::max<int64_t>(x.ndim(), 1), "squeeze");
  std::sort(dims.rbegin(), dims.rend());
  Tensor r = x;
  for (int64_t d : dims) r = vk::squeeze(r, d);
  return r;
}

Tensor repeat(const Tensor& x, const Shape& reps) {
  VK_CHECK(reps.size() >= static_cast<size_t>(x.ndim()), ShapeError,
           "repeat: number of repeat dims (", reps.size(),
           ") can not be smaller than the number "
           "of tensor dims (",
           x.ndim(), ")");
  Shape s(reps.size() - x.ndim(), 1);
  s.insert(s.end(), x.shape().begin(), x.shape().end());
  Shape inter, expanded, out;
  for (size_t i = 0; i < s.size(); ++i) {
    inter.push_back(1);
    inter.push_back(s[i]);
    VK_CHECK(reps[i] >= 0, SizeError, "repeat: repeats must be non-negative, got ",
             vk::shape_str(reps));
    expanded.push_back(reps[i]);
    expanded.push_back(s[i]);
    out.push_back(vk::checked_mul(reps[i], s[i], "repeat"));
  }
  return vk::reshape(vk::contiguous(vk::expand(vk::reshape(x, inter), expanded)), out);
}

DType creation_dtype(nb::handle dtype, DType dflt) {
  return dtype.is_none() ? dflt : to_dtype(dtype);
}

Tensor with_grad(Tensor t, bool requires_grad) {
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

// randint's low/high, read as torch does: an int (an int that int64 cannot hold is a
// ValueError, a float a TypeError), never a silent conversion.
int64_t randint_bound(nb::handle h, const char* what) {
  PyObject* p = h.ptr();
  if (PyFloat_Check(p) || nb::isinstance<Tensor>(h) || !PyIndex_Check(p))
    throw nb::type_error((std::string("randint(): ") + what + " must be an int, got " +
                          nb::cast<std::string>(nb::str(nb::handle(h.type()).attr("__name__"))))
                             .c_str());
  nb::object i = nb::steal(PyNumber_Index(p));
  if (!i.is_valid()) throw nb::python_error();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow != 0)
    throw nb::value_error((std::string("randint(): ") + what + " = " +
                           nb::cast<std::string>(nb::str(i)) +
                           " is out of int64's range (Overflow when unpacking long long)")
                              .c_str());
  return v;
}

// A creation function's number argument: a Python or numpy number, or a one-element tensor.
vk::Scalar number_arg(nb::handle v, const char* op) {
  if (nb::isinstance<Tensor>(v)) return vk::item_scalar(nb::cast<const Tensor&>(v));
  return to_scalar(v, op);
}

// var/std: torch's (dim, unbiased, keepdim, *, correction); a bool first argument is `unbiased`.
double correction_of(nb::handle& dim, nb::handle unbiased, nb::handle correction) {
  if (PyBool_Check(dim.ptr())) {
    unbiased = dim;
    dim = nb::none();
  }
  if (!correction.is_none()) return scalar_value(correction);
  if (!unbiased.is_none()) return nb::cast<bool>(unbiased) ? 1.0 : 0.0;
  return 1.0;
}

// torch.div with rounding_mode: None (true division), 'floor' or 'trunc'.
Tensor divide_rounded(const Tensor& x, const Tensor& y, const std::optional<std::string>& mode) {
  if (!mode) return vk::div(x, y);
  if (*mode == "floor") return vk::floor_divide(x, y);
  VK_CHECK(*mode == "trunc", RuntimeError,
           "div(): rounding_mode must be None, 'trunc' or "
           "'floor', got '",
           *mode, "'");
  if (!is_floating(x.dtype()) && !is_floating(y.dtype())) {
    // Integers stay integer: an inexact negative floor quotient rounds up by one to truncate.
    Tensor q = vk::floor_divide(x, y);
    Tensor zero = vk::zeros({}, q.dtype());
    Tensor negative = vk::cast(vk::lt(q, zero), q.dtype());
    Tensor inexact = vk::cast(vk::ne(vk::remainder(x, y), zero), q.dtype());
    return vk::add(q, vk::mul(negative, inexact));
  }
  return vk::trunc(vk::div(x, y));
}

}  // namespace bindings

Tensor scaled_by_alpha(const Tensor& x, const Tensor& other, const vk::Scalar& alpha,
                       const char* op) {
  const DType common = vk::result_type(x, other);
  VK_CHECK(is_floating(common) || !alpha.is_floating(), RuntimeError, op,
           ": for integral input tensors, argument alpha must not be a floating point number, got ",
           alpha);
  VK_CHECK(common == DType::Bool || !alpha.is_bool(), RuntimeError, op,
           ": boolean alpha is only supported for boolean results, got a ", vk::dtype_name(common),
           " result");
  if (!alpha.is_big() && alpha.to_double() == 1.0) return other;
  return vk::mul(vk::cast(other, common), vk::scalar_tensor(alpha, common, op));
}

void bind_functions(nb::module_& m, nb::class_<Tensor>& c) {
  using namespace bindings;
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  g_max_type =
      namedtuple("max", nb::make_tuple("values", "indices"), "module"_a = "vkml.return_types");
  g_min_type =
      namedtuple("min", nb::make_tuple("values", "indices"), "module"_a = "vkml.return_types");
  m.attr("_max_type") = g_max_type;
  m.attr("_min_type") = g_min_type;

  bind_elementwise(m, c);
  bind_reduction(m, c);
  bind_softmax(m, c);
  bind_shape(m, c);
  bind_index(m, c);
  bind_linalg(m, c);
  bind_conv(m);
  bind_norm(m);
  bind_creation(m);
  bind_composite(m, c);  // issue #15 item 4: composite ops, vk.linalg, in-place variants
  bind_sort(m, c);       // sort and scan families (sortscan)
  bind_scan(m, c);
  bind_rnn(m);      // recurrent cells (issue #16 item 2: rnn)
  bind_math(m, c);  // math ops (#15)
  // solvers (#15 linalg): after bind_composite, which makes _C._linalg
  bind_solve(m, c);
  bind_qr(m);          // QR (#15 linalg)
  bind_special(m, c);  // special functions (#15)
  bind_activation(m);
  bind_pointwise(m, c);
  bind_attention(m);
}

}  // namespace vkpy
