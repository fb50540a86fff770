// Ops as Tensor methods and module functions (PyTorch's names and signatures), creation
// functions, and the op table's names. Each binding converts its arguments and calls the C++
// API; none computes anything itself beyond composing public ops.
#include <cmath>
#include <limits>

#include "common.h"

namespace vkpy {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The same callable as module function f(input, ...) and method input.f(...).
template <class F, class... Extra>
void both(nb::module_& m, nb::class_<Tensor>& c, const char* name, F f, const Extra&... extra) {
  m.def(name, f, nb::arg("input"), extra...);
  c.def(name, f, extra...);
}

nb::object g_max_type, g_min_type, g_sort_like;  // namedtuples (values, indices)

nb::object values_indices(bool is_max, const vk::ValuesIndices& r) {
  return (is_max ? g_max_type : g_min_type)(r.values, r.indices);
}

int64_t as_i64(nb::handle h) { return nb::cast<int64_t>(h); }

std::pair<int64_t, int64_t> pair_of(nb::handle h, const char* what) {
  if (PyLong_Check(h.ptr())) {
    int64_t v = as_i64(h);
    return {v, v};
  }
  std::vector<int64_t> v = to_shape(h);
  VK_CHECK(v.size() == 2 || v.size() == 1, ShapeError, what, ": expected an int or a pair, got ",
           v.size(), " values");
  return v.size() == 1 ? std::pair{v[0], v[0]} : std::pair{v[0], v[1]};
}

vk::Window2d window(nb::handle kernel, nb::handle stride, nb::handle padding, nb::handle dilation) {
  vk::Window2d w;
  std::tie(w.kh, w.kw) = pair_of(kernel, "kernel_size");
  if (stride.is_none() || (!PyLong_Check(stride.ptr()) && nb::len(stride) == 0)) {
    w.sh = w.kh;
    w.sw = w.kw;
  } else {
    std::tie(w.sh, w.sw) = pair_of(stride, "stride");
  }
  std::tie(w.ph, w.pw) = pair_of(padding, "padding");
  std::tie(w.dh, w.dw) = pair_of(dilation, "dilation");
  return w;
}

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
  Tensor q = vk::div(x, y);
  return vk::where(vk::lt(q, vk::zeros({}, q.dtype())), vk::ceil(q), vk::floor(q));
}

}  // namespace

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
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  g_max_type =
      namedtuple("max", nb::make_tuple("values", "indices"), "module"_a = "vkml.return_types");
  g_min_type =
      namedtuple("min", nb::make_tuple("values", "indices"), "module"_a = "vkml.return_types");
  m.attr("_max_type") = g_max_type;
  m.attr("_min_type") = g_min_type;

  // ---- unary ----
#define VKPY_UNARY(NAME, EXPR) \
  both(m, c, NAME, [](const Tensor& x) { return without_gil(heavy(x), [&] { return EXPR; }); })
  VKPY_UNARY("neg", vk::neg(x));
  VKPY_UNARY("negative", vk::neg(x));
  VKPY_UNARY("exp", vk::exp(x));
  VKPY_UNARY("log", vk::log(x));
  VKPY_UNARY("log1p", vk::log1p(x));
  VKPY_UNARY("expm1", vk::expm1(x));
  VKPY_UNARY("sqrt", vk::sqrt(x));
  VKPY_UNARY("rsqrt", vk::rsqrt(x));
  VKPY_UNARY("reciprocal", vk::reciprocal(x));
  VKPY_UNARY("abs", vk::abs(x));
  VKPY_UNARY("sign", vk::sign(x));
  VKPY_UNARY("sin", vk::sin(x));
  VKPY_UNARY("cos", vk::cos(x));
  VKPY_UNARY("tanh", vk::tanh(x));
  VKPY_UNARY("sigmoid", vk::sigmoid(x));
  VKPY_UNARY("relu", vk::relu(x));
  VKPY_UNARY("erf", vk::erf(x));
  VKPY_UNARY("erfc", vk::erfc(x));
  VKPY_UNARY("floor", vk::floor(x));
  VKPY_UNARY("ceil", vk::ceil(x));
  VKPY_UNARY("round", vk::round(x));
  VKPY_UNARY("square", vk::mul(x, x));
#undef VKPY_UNARY
  both(
      m, c, "gelu",
      [](const Tensor& x, const std::string& approximate) {
        VK_CHECK(approximate == "none" || approximate == "tanh", RuntimeError,
                 "gelu(): approximate must be 'none' or 'tanh', got '", approximate, "'");
        return without_gil(heavy(x), [&] { return vk::gelu(x, approximate == "tanh"); });
      },
      "approximate"_a = "none");

  // ---- binary ----
  auto other_of = [](const Tensor& x, nb::handle o, const char* op) {
    return operand_or_raise(o, x, op);
  };
#define VKPY_BINARY(NAME, EXPR)                                \
  both(                                                        \
      m, c, NAME,                                              \
      [](const Tensor& x, nb::handle other) {                  \
        Tensor y = operand_or_raise(other, x, NAME);           \
        return without_gil(heavy(x, y), [&] { return EXPR; }); \
      },                                                       \
      "other"_a)
  VKPY_BINARY("mul", vk::mul(x, y));
  VKPY_BINARY("multiply", vk::mul(x, y));
  VKPY_BINARY("maximum", vk::maximum(x, y));
  VKPY_BINARY("minimum", vk::minimum(x, y));
  VKPY_BINARY("matmul", vk::matmul(x, y));
  VKPY_BINARY("mm", vk::matmul(x, y));
  VKPY_BINARY("bmm", vk::matmul(x, y));
  VKPY_BINARY("mv", vk::matmul(x, y));
  VKPY_BINARY("dot", vk::matmul(x, y));
  VKPY_BINARY("bitwise_and", vk::bitwise_and(x, y));
  VKPY_BINARY("bitwise_or", vk::bitwise_or(x, y));
  VKPY_BINARY("bitwise_xor", vk::bitwise_xor(x, y));
#undef VKPY_BINARY
  // Comparisons: exact for any int operand (compare_operands).
#define VKPY_COMPARE(NAME, FN)                                                             \
  both(                                                                                    \
      m, c, NAME,                                                                          \
      [](const Tensor& x, nb::handle other) {                                              \
        auto xy = compare_operands(x, other, NAME);                                        \
        if (!xy) throw nb::type_error(NAME ": expected a tensor, a number or array data"); \
        const auto& [a, b] = *xy;                                                          \
        return without_gil(heavy(a, b), [&] { return FN(a, b); });                         \
      },                                                                                   \
      "other"_a)
  VKPY_COMPARE("eq", vk::eq);
  VKPY_COMPARE("ne", vk::ne);
  VKPY_COMPARE("lt", vk::lt);
  VKPY_COMPARE("le", vk::le);
  VKPY_COMPARE("gt", vk::gt);
  VKPY_COMPARE("ge", vk::ge);
  VKPY_COMPARE("greater", vk::gt);
  VKPY_COMPARE("less", vk::lt);
#undef VKPY_COMPARE
  // torch.addmm: beta * input + alpha * (mat1 @ mat2); a 1-D input (a bias) with beta = alpha = 1
  // is the fused addmm op, anything else the composed ops.
  m.def(
      "addmm",
      [](const Tensor& input, const Tensor& mat1, const Tensor& mat2, double beta, double alpha) {
        const bool fused = beta == 1.0 && alpha == 1.0 && input.ndim() == 1 && mat1.ndim() == 2 &&
                           mat2.ndim() == 2 && is_floating(mat1.dtype());
        return without_gil(heavy(mat1, mat2), [&] {
          if (fused) return vk::addmm(input, mat1, mat2);
          Tensor out = vk::matmul(mat1, mat2);
          if (alpha != 1.0) out = out * alpha;
          return (beta == 1.0 ? input : input * beta) + out;
        });
      },
      "input"_a, "mat1"_a, "mat2"_a, nb::kw_only(), "beta"_a = 1.0, "alpha"_a = 1.0);
  both(
      m, c, "add",
      [other_of](const Tensor& x, nb::handle other, nb::handle alpha) {
        Tensor y = scaled_by_alpha(x, other_of(x, other, "add"), to_scalar(alpha, "add"), "add");
        return without_gil(heavy(x, y), [&] { return vk::add(x, y); });
      },
      "other"_a, nb::kw_only(), "alpha"_a = 1);
  both(
      m, c, "sub",
      [other_of](const Tensor& x, nb::handle other, nb::handle alpha) {
        Tensor y = scaled_by_alpha(x, other_of(x, other, "sub"), to_scalar(alpha, "sub"), "sub");
        return without_gil(heavy(x, y), [&] { return vk::sub(x, y); });
      },
      "other"_a, nb::kw_only(), "alpha"_a = 1);
  both(
      m, c, "subtract",
      [other_of](const Tensor& x, nb::handle other) {
        return vk::sub(x, other_of(x, other, "subtract"));
      },
      "other"_a);
  auto divide = [other_of](const Tensor& x, nb::handle other, std::optional<std::string> mode) {
    Tensor y = other_of(x, other, "div");
    return without_gil(heavy(x, y), [&] { return divide_rounded(x, y, mode); });
  };
  both(
      m, c, "floor_divide",
      [other_of](const Tensor& x, nb::handle other) {
        return vk::floor_divide(x, other_of(x, other, "floor_divide"));
      },
      "other"_a);
  both(
      m, c, "remainder",
      [other_of](const Tensor& x, nb::handle other) {
        return vk::remainder(x, other_of(x, other, "remainder"));
      },
      "other"_a);
  both(m, c, "div", divide, "other"_a, nb::kw_only(), "rounding_mode"_a = nb::none());
  both(m, c, "divide", divide, "other"_a, nb::kw_only(), "rounding_mode"_a = nb::none());
  both(
      m, c, "true_divide",
      [other_of](const Tensor& x, nb::handle other) {
        return vk::div(x, other_of(x, other, "true_divide"));
      },
      "other"_a);
  c.def(
      "pow",
      [other_of](const Tensor& x, nb::handle exponent) {
        if (PyBool_Check(exponent.ptr())) return vk::pow(x, vk::Scalar(exponent.ptr() == Py_True));
        Tensor y = other_of(x, exponent, "pow");
        return without_gil(heavy(x, y), [&] { return vk::pow(x, y); });
      },
      "exponent"_a);
  m.def(
      "pow",
      [other_of](nb::handle base, nb::handle exponent) {
        if (nb::isinstance<Tensor>(base)) {
          const Tensor& x = nb::cast<const Tensor&>(base);
          if (PyBool_Check(exponent.ptr()))
            return vk::pow(x, vk::Scalar(exponent.ptr() == Py_True));
          return vk::pow(x, other_of(x, exponent, "pow"));
        }
        if (!nb::isinstance<Tensor>(exponent))
          throw nb::type_error("pow: expected a tensor as input or exponent");
        const Tensor& e = nb::cast<const Tensor&>(exponent);
        return vk::pow(other_of(e, base, "pow"), e);
      },
      "input"_a, "exponent"_a);
  m.def(
      "equal",
      [](const Tensor& a, const Tensor& b) {
        if (a.shape() != b.shape()) return false;
        for (double v : vk::to_vector(vk::eq(a, b)))
          if (v == 0.0) return false;
        return true;
      },
      "input"_a, "other"_a, "True when both tensors have the same shape and elements.");

  // ---- where / clamp / masked_fill ----
  m.def(
      "where",
      [](const Tensor& cond, nb::handle x, nb::handle y) {
        Tensor a, b;
        std::optional<vk::Scalar> sx, sy;
        if (nb::isinstance<Tensor>(x)) {
          a = nb::cast<Tensor>(x);
          b = operand_or_raise(y, a, "where");
        } else if (nb::isinstance<Tensor>(y)) {
          b = nb::cast<Tensor>(y);
          a = operand_or_raise(x, b, "where");
        } else if ((sx = to_scalar_opt(x, "where")) && (sy = to_scalar_opt(y, "where"))) {
          // two numbers: the higher kind's default dtype (where(c, 1, 2.5) is float32)
          DType dt = vk::result_type(*sx, *sy);
          a = vk::scalar_tensor(*sx, dt, "where");
          b = vk::scalar_tensor(*sy, dt, "where");
        } else {
          a = as_tensor(x, DType::Float32);
          b = as_tensor(y, DType::Float32);
        }
        return without_gil(heavy(a, b), [&] { return vk::where(cond, a, b); });
      },
      "condition"_a, "input"_a, "other"_a);
  c.def(
      "where",
      [](const Tensor& x, const Tensor& cond, nb::handle y) {
        return vk::where(cond, x, operand_or_raise(y, x, "where"));
      },
      "condition"_a, "other"_a);
  both(
      m, c, "masked_fill",
      [](const Tensor& x, const Tensor& mask, nb::handle value) {
        // The result keeps x's dtype; a number converts as fill_ does (2**40 into int32 raises).
        Tensor v =
            nb::isinstance<Tensor>(value)
                ? vk::cast(nb::cast<const Tensor&>(value), x.dtype())
                : vk::scalar_tensor(to_scalar(value, "masked_fill"), x.dtype(), "masked_fill");
        return without_gil(heavy(x), [&] { return vk::where(mask, v, x); });
      },
      "mask"_a, "value"_a);
  both(m, c, "clamp", clamp_any, "min"_a = nb::none(), "max"_a = nb::none());
  both(m, c, "clip", clamp_any, "min"_a = nb::none(), "max"_a = nb::none());

  // ---- reductions ----
  auto maybe_cast = [](const Tensor& x, nb::handle dtype) {
    return dtype.is_none() ? x : vk::cast(x, to_dtype(dtype));
  };
  both(
      m, c, "sum",
      [maybe_cast](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::sum(in, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "mean",
      [maybe_cast](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::mean(in, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "prod",
      [maybe_cast](const Tensor& x, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::prod(in, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  both(
      m, c, "amax",
      [](const Tensor& x, nb::handle dim, bool keepdim) {
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::amax(x, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false);
  both(
      m, c, "amin",
      [](const Tensor& x, nb::handle dim, bool keepdim) {
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::amin(x, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false);
  for (bool is_max : {true, false}) {
    auto f = [is_max](const Tensor& x, nb::handle dim, bool keepdim) -> nb::object {
      if (dim.is_none()) return nb::cast(is_max ? vk::amax(x) : vk::amin(x));
      if (nb::isinstance<Tensor>(dim)) {
        const Tensor& o = nb::cast<const Tensor&>(dim);
        return nb::cast(is_max ? vk::maximum(x, o) : vk::minimum(x, o));
      }
      int64_t d = as_i64(dim);
      return values_indices(is_max, is_max ? vk::max(x, d, keepdim) : vk::min(x, d, keepdim));
    };
    both(m, c, is_max ? "max" : "min", f, "dim"_a = nb::none(), "keepdim"_a = false);
  }
  for (bool is_max : {true, false}) {
    auto f = [is_max](const Tensor& x, nb::handle dim, bool keepdim) {
      if (dim.is_none()) return is_max ? vk::argmax(x) : vk::argmin(x);
      int64_t d = as_i64(dim);
      return is_max ? vk::argmax(x, d, keepdim) : vk::argmin(x, d, keepdim);
    };
    both(m, c, is_max ? "argmax" : "argmin", f, "dim"_a = nb::none(), "keepdim"_a = false);
  }
  both(
      m, c, "logsumexp",
      [](const Tensor& x, nb::handle dim, bool keepdim) {
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::logsumexp(x, dims, keepdim); });
      },
      "dim"_a = nb::none(), "keepdim"_a = false);
  both(
      m, c, "var",
      [](const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim,
         nb::handle correction) {
        double corr = correction_of(dim, unbiased, correction);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::var(x, dims, corr, keepdim); });
      },
      "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "correction"_a = nb::none());
  both(
      m, c, "std",
      [](const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim,
         nb::handle correction) {
        double corr = correction_of(dim, unbiased, correction);
        auto dims = to_dims(dim);
        return without_gil(heavy(x), [&] { return vk::sqrt(vk::var(x, dims, corr, keepdim)); });
      },
      "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "correction"_a = nb::none());
  both(
      m, c, "softmax",
      [maybe_cast](const Tensor& x, int64_t dim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        return without_gil(heavy(x), [&] { return vk::softmax(in, dim); });
      },
      "dim"_a, "dtype"_a = nb::none());
  both(
      m, c, "log_softmax",
      [maybe_cast](const Tensor& x, int64_t dim, nb::handle dtype) {
        Tensor in = maybe_cast(x, dtype);
        return without_gil(heavy(x), [&] { return vk::log_softmax(in, dim); });
      },
      "dim"_a, "dtype"_a = nb::none());
  m.def(
      "softmax_backward",
      [](const Tensor& g, const Tensor& out, int64_t dim) {
        return without_gil(heavy(g), [&] { return vk::softmax_backward(g, out, dim); });
      },
      "grad"_a, "output"_a, "dim"_a);
  m.def(
      "log_softmax_backward",
      [](const Tensor& g, const Tensor& out, int64_t dim) {
        return without_gil(heavy(g), [&] { return vk::log_softmax_backward(g, out, dim); });
      },
      "grad"_a, "output"_a, "dim"_a);
  m.def(
      "layer_norm_backward",
      [](const Tensor& g, const Tensor& x, nb::handle normalized_shape,
         std::optional<Tensor> weight, double eps) {
        Shape s = to_shape(normalized_shape);
        return without_gil(heavy(g), [&] {
          return vk::layer_norm_backward(g, x, s, weight ? *weight : Tensor(), eps);
        });
      },
      "grad"_a, "input"_a, "normalized_shape"_a, "weight"_a = nb::none(), "eps"_a = 1e-5);
  m.def(
      "layer_norm_param_grad",
      [](const Tensor& g, const Tensor& x, nb::handle normalized_shape, double eps) {
        Shape s = to_shape(normalized_shape);
        return without_gil(heavy(g), [&] { return vk::layer_norm_param_grad(g, x, s, eps); });
      },
      "grad"_a, "input"_a, "normalized_shape"_a, "eps"_a = 1e-5);
  m.def(
      "batch_norm_backward",
      [](const Tensor& g, const Tensor& x, std::optional<Tensor> weight, double eps) {
        return without_gil(heavy(g), [&] {
          return vk::batch_norm_backward(g, x, weight ? *weight : Tensor(), eps);
        });
      },
      "grad"_a, "input"_a, "weight"_a = nb::none(), "eps"_a = 1e-5);
  m.def(
      "batch_norm_param_grad",
      [](const Tensor& g, const Tensor& x, double eps) {
        return without_gil(heavy(g), [&] { return vk::batch_norm_param_grad(g, x, eps); });
      },
      "grad"_a, "input"_a, "eps"_a = 1e-5);
  m.def(
      "gelu_backward",
      [](const Tensor& g, const Tensor& x) {
        return without_gil(heavy(g), [&] { return vk::gelu_backward(g, x); });
      },
      "grad"_a, "input"_a);

  // ---- shape ----
  c.def("reshape",
        [](const Tensor& x, nb::args shape) { return vk::reshape(x, shape_from_args(shape)); });
  c.def("view",
        [](const Tensor& x, nb::args shape) { return vk::view(x, shape_from_args(shape)); });
  m.def(
      "reshape", [](const Tensor& x, nb::handle shape) { return vk::reshape(x, to_shape(shape)); },
      "input"_a, "shape"_a);
  c.def(
      "view_as", [](const Tensor& x, const Tensor& o) { return vk::view(x, o.shape()); },
      "other"_a);
  c.def(
      "reshape_as", [](const Tensor& x, const Tensor& o) { return vk::reshape(x, o.shape()); },
      "other"_a);
  c.def("permute",
        [](const Tensor& x, nb::args dims) { return vk::permute(x, shape_from_args(dims)); });
  m.def(
      "permute", [](const Tensor& x, nb::handle dims) { return vk::permute(x, to_shape(dims)); },
      "input"_a, "dims"_a);
  c.def("expand",
        [](const Tensor& x, nb::args sizes) { return vk::expand(x, shape_from_args(sizes)); });
  c.def(
      "expand_as", [](const Tensor& x, const Tensor& o) { return vk::expand(x, o.shape()); },
      "other"_a);
  both(
      m, c, "broadcast_to",
      [](const Tensor& x, nb::handle shape) { return vk::broadcast_to(x, to_shape(shape)); },
      "size"_a);
  c.def("repeat",
        [](const Tensor& x, nb::args sizes) { return repeat(x, shape_from_args(sizes)); });
  both(
      m, c, "transpose",
      [](const Tensor& x, int64_t d0, int64_t d1) { return vk::transpose(x, d0, d1); }, "dim0"_a,
      "dim1"_a);
  both(
      m, c, "swapaxes",
      [](const Tensor& x, int64_t d0, int64_t d1) { return vk::transpose(x, d0, d1); }, "axis0"_a,
      "axis1"_a);
  both(m, c, "t", [](const Tensor& x) {
    VK_CHECK(x.ndim() <= 2, ShapeError, "t() expects a tensor with <= 2 dims, got shape ",
             vk::shape_str(x.shape()));
    return x.ndim() < 2 ? x : vk::transpose(x, 0, 1);
  });
  c.def_prop_ro("T", [](const Tensor& x) {
    std::vector<int64_t> p;
    for (int64_t i = x.ndim() - 1; i >= 0; --i) p.push_back(i);
    return x.ndim() < 2 ? x : vk::permute(x, p);
  });
  c.def_prop_ro("mT", [](const Tensor& x) {
    VK_CHECK(x.ndim() >= 2, ShapeError, "mT: expected a tensor with >= 2 dims, got shape ",
             vk::shape_str(x.shape()));
    return vk::transpose(x, -2, -1);
  });
  both(
      m, c, "flatten", [](const Tensor& x, int64_t s, int64_t e) { return vk::flatten(x, s, e); },
      "start_dim"_a = 0, "end_dim"_a = -1);
  both(m, c, "squeeze", squeeze_any, "dim"_a = nb::none());
  both(
      m, c, "unsqueeze", [](const Tensor& x, int64_t d) { return vk::unsqueeze(x, d); }, "dim"_a);
  c.def("contiguous", [](nb::handle self) -> nb::object {
    const Tensor& x = nb::cast<const Tensor&>(self);
    if (x.is_contiguous()) return nb::borrow(self);
    return nb::cast(without_gil(heavy(x), [&] { return vk::contiguous(x); }));
  });
  both(m, c, "clone",
       [](const Tensor& x) { return without_gil(heavy(x), [&] { return vk::clone(x); }); });
  c.def("flip", [](const Tensor& x, nb::args dims) { return vk::flip(x, shape_from_args(dims)); });
  m.def(
      "flip", [](const Tensor& x, nb::handle dims) { return vk::flip(x, to_shape(dims)); },
      "input"_a, "dims"_a);
  both(
      m, c, "narrow",
      [](const Tensor& x, int64_t dim, int64_t start, int64_t length) {
        return vk::narrow(x, dim, start, length);
      },
      "dim"_a, "start"_a, "length"_a);
  both(
      m, c, "select",
      [](const Tensor& x, int64_t dim, int64_t index) { return vk::select(x, dim, index); },
      "dim"_a, "index"_a);
  both(
      m, c, "split",
      [](const Tensor& x, nb::handle size, int64_t dim) {
        if (PyLong_Check(size.ptr())) return to_tuple(split_even(x, as_i64(size), dim));
        return to_tuple(split_sizes(x, to_shape(size), dim));
      },
      "split_size_or_sections"_a, "dim"_a = 0);
  both(
      m, c, "chunk",
      [](const Tensor& x, int64_t chunks, int64_t dim) {
        VK_CHECK(chunks > 0, ShapeError, "chunk: chunks must be positive, got ", chunks);
        int64_t n = x.shape()[vk::wrap_dim(dim, x.ndim(), "chunk")];
        return to_tuple(split_even(x, std::max<int64_t>((n + chunks - 1) / chunks, 1), dim));
      },
      "chunks"_a, "dim"_a = 0);
  both(
      m, c, "unbind",
      [](const Tensor& x, int64_t dim) {
        int64_t d = vk::wrap_dim(dim, x.ndim(), "unbind");
        std::vector<Tensor> out;
        for (int64_t i = 0; i < x.shape()[d]; ++i) out.push_back(vk::select(x, d, i));
        return to_tuple(out);
      },
      "dim"_a = 0);
  for (const char* name : {"cat", "concat", "concatenate"})
    m.def(
        name,
        [](nb::handle tensors, int64_t dim) {
          std::vector<Tensor> ts = tensor_list(tensors);
          return without_gil(true, [&] { return vk::cat(ts, dim); });
        },
        "tensors"_a, "dim"_a = 0);
  m.def(
      "stack",
      [](nb::handle tensors, int64_t dim) {
        std::vector<Tensor> ts = tensor_list(tensors);
        return without_gil(true, [&] { return vk::stack(ts, dim); });
      },
      "tensors"_a, "dim"_a = 0);
  m.def(
      "pad",
      [](const Tensor& x, nb::handle pad, const std::string& mode, nb::handle value) {
        VK_CHECK(mode == "constant", NotImplementedError,
                 "pad: only mode='constant' is implemented, got '", mode, "'");
        return vk::pad(x, to_shape(pad), value.is_none() ? 0.0 : scalar_value(value));
      },
      "input"_a, "pad"_a, "mode"_a = "constant", "value"_a = nb::none());
  m.def(
      "sum_to", [](const Tensor& x, nb::handle shape) { return vk::sum_to(x, to_shape(shape)); },
      "input"_a, "shape"_a, "x summed down to `shape` (the adjoint of broadcasting).");
  m.def(
      "slice",
      [](const Tensor& x, int64_t dim, int64_t start, int64_t stop, int64_t step) {
        return vk::slice(x, dim, start, stop, step);
      },
      "input"_a, "dim"_a, "start"_a, "stop"_a, "step"_a = 1);
  m.def(
      "slice_backward",
      [](const Tensor& g, nb::handle input_shape, int64_t dim, int64_t start, int64_t stop,
         int64_t step) {
        return vk::slice_backward(g, to_shape(input_shape), dim, start, stop, step);
      },
      "grad"_a, "input_shape"_a, "dim"_a, "start"_a, "stop"_a, "step"_a = 1);

  // ---- index ops ----
  both(
      m, c, "gather",
      [](const Tensor& x, int64_t dim, const Tensor& index) {
        return without_gil(heavy(x, index), [&] { return vk::gather(x, dim, index); });
      },
      "dim"_a, "index"_a);
  both(
      m, c, "index_select",
      [](const Tensor& x, int64_t dim, const Tensor& index) {
        return without_gil(heavy(x, index), [&] { return vk::index_select(x, dim, index); });
      },
      "dim"_a, "index"_a);
  both(
      m, c, "scatter_add",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
        return without_gil(heavy(x, src), [&] { return vk::scatter_add(x, dim, index, src); });
      },
      "dim"_a, "index"_a, "src"_a);
  both(
      m, c, "index_add",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
        return without_gil(heavy(x, source), [&] {
          return vk::index_add(x, dim, index, alpha == 1.0 ? source : source * alpha);
        });
      },
      "dim"_a, "index"_a, "source"_a, nb::kw_only(), "alpha"_a = 1.0);
  both(
      m, c, "nonzero",
      [](const Tensor& x, bool as_tuple) -> nb::object {
        Tensor mask = x.dtype() == DType::Bool ? x : vk::ne(x, vk::zeros({}, x.dtype()));
        Tensor nz = vk::nonzero(mask);
        if (!as_tuple) return nb::cast(nz);
        std::vector<Tensor> cols;
        for (int64_t d = 0; d < nz.shape()[1]; ++d) cols.push_back(vk::select(nz, 1, d));
        return to_tuple(cols);
      },
      nb::kw_only(), "as_tuple"_a = false);

  // ---- logical reductions and float classification (bool results: no graph) ----
  auto any_of = [](const Tensor& x, nb::handle dim, bool keepdim) {
    vk::NoGradGuard ng;
    Tensor nz =
        vk::cast(x.dtype() == DType::Bool ? x : vk::ne(x, vk::zeros({}, x.dtype())), DType::Int64);
    return vk::ne(vk::sum(nz, to_dims(dim), keepdim), vk::zeros({}, DType::Int64));
  };
  both(m, c, "any", any_of, "dim"_a = nb::none(), "keepdim"_a = false);
  both(
      m, c, "all",
      [](const Tensor& x, nb::handle dim, bool keepdim) {
        vk::NoGradGuard ng;
        Tensor zero = vk::cast(x.dtype() == DType::Bool ? vk::eq(x, vk::zeros({}, DType::Bool))
                                                        : vk::eq(x, vk::zeros({}, x.dtype())),
                               DType::Int64);
        return vk::eq(vk::sum(zero, to_dims(dim), keepdim), vk::zeros({}, DType::Int64));
      },
      "dim"_a = nb::none(), "keepdim"_a = false);
  both(m, c, "isnan", [](const Tensor& x) {
    vk::NoGradGuard ng;
    return vk::ne(x, x);
  });
  both(m, c, "isinf", [](const Tensor& x) {
    vk::NoGradGuard ng;
    if (!vk::is_floating(x.dtype())) return vk::ne(x, x);
    return vk::eq(vk::abs(x), vk::full({}, kInf, x.dtype()));
  });
  both(m, c, "isfinite", [](const Tensor& x) {
    vk::NoGradGuard ng;
    if (!vk::is_floating(x.dtype())) return vk::eq(x, x);
    return vk::eq(vk::sub(x, x), vk::zeros({}, x.dtype()));  // x - x is NaN for inf and NaN
  });
  c.def("__contains__", [](const Tensor& x, nb::handle element) {
    auto xe = compare_operands(x, element, "in");
    if (!xe) throw nb::type_error("'in' expects a tensor or a number");
    vk::NoGradGuard ng;
    return vk::sum(vk::cast(vk::eq(xe->first, xe->second), DType::Int64)).item() > 0;
  });

  // ---- convolution and pooling (torch.nn.functional's signatures) ----
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> bias, nb::handle stride,
         nb::handle padding, nb::handle dilation, int64_t groups) {
        auto [sh, sw] = pair_of(stride, "stride");
        std::pair<int64_t, int64_t> pd{0, 0};
        if (nb::isinstance<nb::str>(padding)) {
          VK_CHECK(nb::cast<std::string>(padding) == "valid", NotImplementedError,
                   "conv2d: padding must be an int, a pair or 'valid'");
        } else {
          pd = pair_of(padding, "padding");
        }
        auto [dh, dw] = pair_of(dilation, "dilation");
        return without_gil(true, [&] {
          return vk::conv2d(x, w, bias ? *bias : Tensor(), sh, sw, pd.first, pd.second, dh, dw,
                            groups);
        });
      },
      "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0,
      "dilation"_a = 1, "groups"_a = 1);
  m.def(
      "max_pool2d",
      [](const Tensor& x, nb::handle kernel_size, nb::handle stride, nb::handle padding,
         nb::handle dilation, bool ceil_mode, bool return_indices) -> nb::object {
        VK_CHECK(!ceil_mode, NotImplementedError, "max_pool2d: ceil_mode=True is not implemented");
        vk::Window2d w = window(kernel_size, stride, padding, dilation);
        vk::PoolResult p = without_gil(true, [&] { return vk::max_pool2d(x, w); });
        if (return_indices) return nb::make_tuple(p.values, p.indices);
        return nb::cast(p.values);
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1,
      "ceil_mode"_a = false, "return_indices"_a = false);
  m.def(
      "max_pool2d_backward",
      [](const Tensor& g, const Tensor& indices, nb::handle input_shape) {
        return vk::max_pool2d_backward(g, indices, to_shape(input_shape));
      },
      "grad"_a, "indices"_a, "input_shape"_a);
  m.def(
      "avg_pool2d",
      [](const Tensor& x, nb::handle kernel_size, nb::handle stride, nb::handle padding,
         bool ceil_mode, bool count_include_pad) {
        VK_CHECK(!ceil_mode, NotImplementedError, "avg_pool2d: ceil_mode=True is not implemented");
        VK_CHECK(
            count_include_pad, NotImplementedError,
            "avg_pool2d: count_include_pad=False is not implemented (padding counts as zeros)");
        vk::Window2d w = window(kernel_size, stride, padding, nb::int_(1));
        return without_gil(true, [&] { return vk::avg_pool2d(x, w); });
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
      "count_include_pad"_a = true);
  m.def(
      "im2col",
      [](const Tensor& x, nb::handle kernel_size, nb::handle dilation, nb::handle padding,
         nb::handle stride) {
        vk::Window2d w = window(kernel_size, stride, padding, dilation);
        return without_gil(true, [&] { return vk::im2col(x, w); });
      },
      "input"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1,
      "torch.nn.functional.unfold: (N, C, H, W) -> (N, C*kh*kw, L)");
  m.def(
      "col2im",
      [](const Tensor& cols, nb::handle output_size, nb::handle kernel_size, nb::handle dilation,
         nb::handle padding, nb::handle stride) {
        auto [h, wd] = pair_of(output_size, "output_size");
        vk::Window2d w = window(kernel_size, stride, padding, dilation);
        return without_gil(true, [&] { return vk::col2im(cols, h, wd, w); });
      },
      "input"_a, "output_size"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0,
      "stride"_a = 1, "torch.nn.functional.fold: (N, C*kh*kw, L) -> (N, C, H, W), overlaps summed");

  // ---- creation ----
  // device=: where the result is made (None: the CPU; the *_like functions: the input's device).
  for (const char* name : {"zeros", "empty"})
    m.def(
        name,
        [](nb::args size, nb::handle dtype, nb::handle device, bool requires_grad) {
          return with_grad(vk::zeros(shape_from_args(size), creation_dtype(dtype, DType::Float32),
                                     to_device_arg(device, vk::kCPU)),
                           requires_grad);
        },
        "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "ones",
      [](nb::args size, nb::handle dtype, nb::handle device, bool requires_grad) {
        return with_grad(vk::ones(shape_from_args(size), creation_dtype(dtype, DType::Float32),
                                  to_device_arg(device, vk::kCPU)),
                         requires_grad);
      },
      "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "full",
      [](nb::handle size, nb::handle value, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        vk::Scalar v = number_arg(value, "full");
        DType dt = creation_dtype(dtype, v.promotion_dtype());  // bool, int64 or float32
        return with_grad(vk::full(to_shape(size), v, dt, to_device_arg(device, vk::kCPU)),
                         requires_grad);
      },
      "size"_a, "fill_value"_a, "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "arange",
      [](nb::handle start, nb::handle end, nb::handle step, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        if (end.is_none()) {
          end = start;
          start = nb::int_(0);
        }
        vk::Scalar a = number_arg(start, "arange"), b = number_arg(end, "arange"),
                   s = number_arg(step, "arange");
        bool ints = !a.is_floating() && !b.is_floating() && !s.is_floating();
        DType dt = creation_dtype(dtype, ints ? DType::Int64 : DType::Float32);
        return with_grad(vk::arange(a, b, s, dt, to_device_arg(device, vk::kCPU)), requires_grad);
      },
      "start"_a, "end"_a = nb::none(), "step"_a = 1, "dtype"_a = nb::none(),
      "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "linspace",
      [](double start, double end, int64_t steps, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        Tensor t = vk::linspace(start, end, steps, creation_dtype(dtype, DType::Float32));
        return with_grad(on_device(t, to_device_opt(device)), requires_grad);
      },
      "start"_a, "end"_a, "steps"_a, "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "eye",
      [](int64_t n, std::optional<int64_t> mcols, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        DType dt = creation_dtype(dtype, DType::Float32);
        Tensor t = vk::eye(n, mcols ? *mcols : n, dt);
        return with_grad(on_device(t, to_device_opt(device)), requires_grad);
      },
      "n"_a, "m"_a = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "rand",
      [](nb::args size, nb::handle dtype, nb::handle device, bool requires_grad) {
        return with_grad(vk::rand(shape_from_args(size), creation_dtype(dtype, DType::Float32),
                                  to_device_arg(device, vk::kCPU)),
                         requires_grad);
      },
      "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "randn",
      [](nb::args size, nb::handle dtype, nb::handle device, bool requires_grad) {
        return with_grad(vk::randn(shape_from_args(size), creation_dtype(dtype, DType::Float32),
                                   to_device_arg(device, vk::kCPU)),
                         requires_grad);
      },
      "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "randint",
      [](nb::args args, nb::handle size, nb::handle dtype, nb::handle device) {
        int64_t low = 0, high;
        nb::handle sz = size;
        size_t n = args.size();
        if (sz.is_none()) {
          VK_CHECK(n == 2 || n == 3, RuntimeError, "randint(low=0, high, size): got ", n,
                   " positional arguments");
          sz = args[n - 1];
          n -= 1;
        }
        VK_CHECK(n == 1 || n == 2, RuntimeError, "randint(low=0, high, size): bad arguments");
        if (n == 2) low = randint_bound(args[0], "low");
        high = randint_bound(args[n - 1], "high");
        return vk::randint(low, high, to_shape(sz), creation_dtype(dtype, DType::Int64),
                           to_device_arg(device, vk::kCPU));
      },
      "args"_a, "size"_a = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none());
  auto like_dtype = [](const Tensor& t, nb::handle dtype) {
    return creation_dtype(dtype, t.dtype());
  };
  for (const char* name : {"zeros_like", "empty_like"})
    m.def(
        name,
        [like_dtype](const Tensor& t, nb::handle dtype, nb::handle device, bool requires_grad) {
          return with_grad(
              vk::zeros(t.shape(), like_dtype(t, dtype), to_device_arg(device, t.device())),
              requires_grad);
        },
        "input"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "ones_like",
      [like_dtype](const Tensor& t, nb::handle dtype, nb::handle device, bool requires_grad) {
        return with_grad(
            vk::ones(t.shape(), like_dtype(t, dtype), to_device_arg(device, t.device())),
            requires_grad);
      },
      "input"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "full_like",
      [like_dtype](const Tensor& t, nb::handle value, nb::handle dtype, nb::handle device,
                   bool requires_grad) {
        return with_grad(vk::full(t.shape(), number_arg(value, "full_like"), like_dtype(t, dtype),
                                  to_device_arg(device, t.device())),
                         requires_grad);
      },
      "input"_a, "fill_value"_a, "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "rand_like",
      [like_dtype](const Tensor& t, nb::handle dtype, nb::handle device, bool requires_grad) {
        return with_grad(
            vk::rand(t.shape(), like_dtype(t, dtype), to_device_arg(device, t.device())),
            requires_grad);
      },
      "input"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "randn_like",
      [like_dtype](const Tensor& t, nb::handle dtype, nb::handle device, bool requires_grad) {
        return with_grad(
            vk::randn(t.shape(), like_dtype(t, dtype), to_device_arg(device, t.device())),
            requires_grad);
      },
      "input"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "tensor",
      [](nb::handle data, nb::handle dtype, nb::handle device, bool requires_grad) {
        Tensor t = tensor_from_py(data, to_dtype_opt(dtype));
        return with_grad(on_device(t, to_device_opt(device)), requires_grad);
      },
      "data"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "A new tensor holding a copy of `data`; the dtype is inferred as torch.tensor does.");
  m.def(
      "as_tensor",
      [](nb::handle data, nb::handle dtype, nb::handle device) {
        return on_device(as_tensor(data, to_dtype_opt(dtype)), to_device_opt(device));
      },
      "data"_a, "dtype"_a = nb::none(), "device"_a = nb::none(),
      "`data` itself when it is a tensor of that dtype, else a copy.");
  m.def(
      "from_numpy", [](nb::handle arr) { return from_dlpack(arr); }, "ndarray"_a,
      "A tensor sharing the numpy array's memory (no copy).");
  m.def(
      "from_dlpack", [](nb::handle obj) { return from_dlpack(obj); }, "ext_tensor"_a,
      "A tensor sharing the memory of any DLPack or buffer-protocol array (no copy).");
  m.def(
      "manual_seed", [](uint64_t seed) { vk::manual_seed(seed); }, "seed"_a);
  m.def("get_rng_state", []() {
    vk::RngState s = vk::get_rng_state();
    return nb::make_tuple(s.seed, s.offset);
  });
  m.def(
      "set_rng_state",
      [](std::pair<uint64_t, uint64_t> s) {
        vk::set_rng_state({s.first, s.second});
      },
      "state"_a);
  m.def("get_num_threads", []() { return vk::cpu::num_threads(); });
  m.def(
      "set_num_threads", [](int64_t n) { vk::cpu::set_num_threads(n); }, "n"_a);
}

}  // namespace vkpy
