// Bindings: composite ops (ops/composite.h: PyTorch functions made of the table's ops), the
// vk.linalg functions (submodule _C._linalg, arranged by vkml/linalg.py) and the one generic
// in-place mechanism (_C._inplace, which vkml/__init__.py uses for every x.<op>_ that has no
// binding of its own). Issue #15 item 4.
#include <cmath>

#include "bind_ops.h"
#include "vkml/ops/composite.h"
#include "vkml/ops/inplace.h"

namespace vkpy {

using namespace bindings;

namespace {

// A number or tensor operand of `op` as a tensor like `like` (numbers take its kind's dtype).
Tensor tensor_arg(nb::handle h, const Tensor& like, const char* op) {
  return operand_or_raise(h, like, op);
}

std::optional<int64_t> opt_int(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return as_i64(h);
}

std::optional<DType> opt_dtype(nb::handle h) { return to_dtype_opt(h); }

// ord as torch's norms take it: a number (inf too) or a string.
struct Ord {
  std::optional<double> number;
  std::optional<std::string> name;
};
Ord ord_of(nb::handle h, const char* op) {
  Ord o;
  if (nb::isinstance<nb::str>(h))
    o.name = nb::cast<std::string>(h);
  else if (!h.is_none())
    o.number = to_scalar(h, op).to_double();
  return o;
}

Tensor vector_norm_py(const Tensor& x, nb::handle ord, nb::handle dim, bool keepdim,
                      nb::handle dtype) {
  Ord o = ord_of(ord, "linalg.vector_norm");
  VK_CHECK(!o.name, RuntimeError, "linalg.vector_norm: ord must be a number, got '", *o.name, "'");
  return vk::vector_norm(x, o.number.value_or(2.0), to_dims(dim), keepdim, opt_dtype(dtype));
}

Tensor matrix_norm_py(const Tensor& x, nb::handle ord, nb::handle dim, bool keepdim,
                      nb::handle dtype) {
  Ord o = ord_of(ord, "linalg.matrix_norm");
  std::vector<int64_t> dims = dim.is_none() ? std::vector<int64_t>{-2, -1} : to_dims(dim);
  if (o.number) return vk::matrix_norm(x, *o.number, dims, keepdim, opt_dtype(dtype));
  return vk::matrix_norm(x, o.name.value_or("fro"), dims, keepdim, opt_dtype(dtype));
}

// torch.linalg.norm: a vector norm over one dim (or all of a 1-D input, or everything when both
// ord and dim are None), a matrix norm over two.
Tensor linalg_norm_py(const Tensor& x, nb::handle ord, nb::handle dim, bool keepdim,
                      nb::handle dtype) {
  std::vector<int64_t> dims = to_dims(dim);
  if (dim.is_none()) {
    if (ord.is_none()) return vk::vector_norm(x, 2, {}, keepdim, opt_dtype(dtype));
    VK_CHECK(x.ndim() == 1 || x.ndim() == 2, RuntimeError,
             "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got ",
             x.ndim(), "D.");
    if (x.ndim() == 2) return matrix_norm_py(x, ord, nb::none(), keepdim, dtype);
    return vector_norm_py(x, ord, dim, keepdim, dtype);
  }
  if (dims.size() == 2) return matrix_norm_py(x, ord, dim, keepdim, dtype);
  return vector_norm_py(x, ord, dim, keepdim, dtype);
}

// torch.norm: p a number ('fro' = 2) over dim (None = all); 'nuc' needs an SVD.
Tensor norm_py(const Tensor& x, nb::handle p, nb::handle dim, bool keepdim, nb::handle dtype) {
  Ord o = ord_of(p, "norm");
  if (o.name) {
    if (*o.name == "nuc") return matrix_norm_py(x, p, dim, keepdim, dtype);
    VK_CHECK(*o.name == "fro", RuntimeError, "norm: p must be a number, 'fro' or 'nuc', got '",
             *o.name, "'");
  }
  return vk::vector_norm(x, o.number.value_or(2.0), to_dims(dim), keepdim, opt_dtype(dtype));
}

nb::tuple pair(const vk::TensorPair& p) { return nb::make_tuple(p.first, p.second); }

std::vector<int64_t> int_or_list(nb::handle h) {
  if (h.is_none()) return {};
  if (nb::isinstance<nb::int_>(h)) return {as_i64(h)};
  return to_dims(h);
}

void bind_elementwise_composites(nb::module_& m, nb::class_<Tensor>& c) {
  both(m, c, "logical_not", [](const Tensor& x) { return vk::logical_not(x); });
#define VKPY_LOGICAL(NAME)                                                                \
  both(                                                                                   \
      m, c, #NAME,                                                                        \
      [](const Tensor& x, nb::handle o) { return vk::NAME(x, tensor_arg(o, x, #NAME)); }, \
      "other"_a)
  VKPY_LOGICAL(logical_and);
  VKPY_LOGICAL(logical_or);
  VKPY_LOGICAL(logical_xor);
#undef VKPY_LOGICAL
  both(
      m, c, "isclose",
      [](const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
        return vk::isclose(a, b, rtol, atol, equal_nan);
      },
      "other"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, "equal_nan"_a = false,
      "|input - other| <= atol + rtol * |other|, elementwise (isclose: bool tensor) or everywhere "
      "(allclose: bool, a host read); composite: abs, sub, le, eq.");
  both(
      m, c, "allclose",
      [](const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
        return vk::allclose(a, b, rtol, atol, equal_nan);
      },
      "other"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, "equal_nan"_a = false,
      "|input - other| <= atol + rtol * |other|, elementwise (isclose: bool tensor) or everywhere "
      "(allclose: bool, a host read); composite: abs, sub, le, eq.");
  both(
      m, c, "nan_to_num",
      [](const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
         std::optional<double> neginf) {
        return vk::nan_to_num(x, nan.value_or(0.0), posinf, neginf);
      },
      "nan"_a = 0.0, "posinf"_a = nb::none(), "neginf"_a = nb::none(),
      "NaN, +inf, -inf replaced (defaults 0 and the dtype's largest/lowest finite values); "
      "composite: where.");
  for (const char* name : {"trunc", "fix"})
    both(m, c, name, [](const Tensor& x) { return vk::trunc(x); });
  both(
      m, c, "clamp_min",
      [](const Tensor& x, nb::handle min) { return clamp_any(x, min, nb::none()); }, "min"_a);
  both(
      m, c, "clamp_max",
      [](const Tensor& x, nb::handle max) { return clamp_any(x, nb::none(), max); }, "max"_a);
  both(
      m, c, "index_fill",
      [](const Tensor& x, int64_t dim, const Tensor& index, nb::handle value) {
        Tensor v = nb::isinstance<Tensor>(value)
                       ? nb::cast<const Tensor&>(value)
                       : vk::scalar_tensor(to_scalar(value, "index_fill"), x.dtype(), "index_fill");
        return vk::index_fill(x, dim, index, v);
      },
      "dim"_a, "index"_a, "value"_a);
  m.def(
      "_fill_diagonal",
      [](const Tensor& x, nb::handle value, bool wrap) {
        Tensor v =
            vk::scalar_tensor(to_scalar(value, "fill_diagonal_"), x.dtype(), "fill_diagonal_");
        return vk::fill_diagonal(x, v, wrap);
      },
      "input"_a, "fill_value"_a, "wrap"_a = false);
}

void bind_shape_composites(nb::module_& m, nb::class_<Tensor>& c) {
  both(
      m, c, "diff",
      [](const Tensor& x, int64_t n, int64_t dim, std::optional<Tensor> prepend,
         std::optional<Tensor> append) {
        return vk::diff(x, n, dim, prepend.value_or(Tensor()), append.value_or(Tensor()));
      },
      "n"_a = 1, "dim"_a = -1, "prepend"_a = nb::none(), "append"_a = nb::none(),
      "n-th forward difference along dim (composite: cat, slice, sub).");
  both(
      m, c, "roll",
      [](const Tensor& x, nb::handle shifts, nb::handle dims) {
        return vk::roll(x, int_or_list(shifts), int_or_list(dims));
      },
      "shifts"_a, "dims"_a = nb::none(),
      "Elements shifted cyclically along dims; no dims: the flattened tensor (composite: slice, "
      "cat).");
  m.def(
      "meshgrid",
      [](nb::args tensors, std::optional<std::string> indexing) {
        // meshgrid(a, b) or meshgrid([a, b])
        nb::handle seq = tensors.size() == 1 && !nb::isinstance<Tensor>(tensors[0])
                             ? nb::handle(tensors[0])
                             : nb::handle(tensors);
        return to_tuple(vk::meshgrid(tensor_list(seq), indexing.value_or("ij")));
      },
      "tensors"_a, "indexing"_a = nb::none(),
      "Coordinate grids of 0-D/1-D tensors, indexing 'ij' (default) or 'xy' (composite: reshape, "
      "expand).");
  m.def(
      "repeat_interleave",
      [](const Tensor& x, nb::handle repeats, nb::handle dim, nb::handle output_size) {
        if (repeats.is_none()) return vk::repeat_interleave(x, opt_int(output_size));
        if (nb::isinstance<Tensor>(repeats))
          return vk::repeat_interleave(x, nb::cast<const Tensor&>(repeats), opt_int(dim),
                                       opt_int(output_size));
        return vk::repeat_interleave(x, as_i64(repeats), opt_int(dim), opt_int(output_size));
      },
      "input"_a, "repeats"_a = nb::none(), "dim"_a = nb::none(), nb::kw_only(),
      "output_size"_a = nb::none());
  c.def(
      "repeat_interleave",
      [](const Tensor& x, nb::handle repeats, nb::handle dim, nb::handle output_size) {
        if (nb::isinstance<Tensor>(repeats))
          return vk::repeat_interleave(x, nb::cast<const Tensor&>(repeats), opt_int(dim),
                                       opt_int(output_size));
        return vk::repeat_interleave(x, as_i64(repeats), opt_int(dim), opt_int(output_size));
      },
      "repeats"_a, "dim"_a = nb::none(), nb::kw_only(), "output_size"_a = nb::none());
  both(
      m, c, "diagonal",
      [](const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
        return vk::diagonal(x, offset, dim1, dim2);
      },
      "offset"_a = 0, "dim1"_a = 0, "dim2"_a = 1,
      "The offset diagonal of dims (dim1, dim2), appended as the last dim (composite: permute, "
      "reshape, strided slice).");
  both(
      m, c, "diag", [](const Tensor& x, int64_t offset) { return vk::diag(x, offset); },
      "diagonal"_a = 0);
  both(
      m, c, "diag_embed",
      [](const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
        return vk::diag_embed(x, offset, dim1, dim2);
      },
      "offset"_a = 0, "dim1"_a = -2, "dim2"_a = -1);
  both(m, c, "trace", [](const Tensor& x) { return vk::trace(x); });
  both(
      m, c, "unflatten",
      [](const Tensor& x, int64_t dim, nb::handle sizes) {
        return vk::unflatten(x, dim, to_shape(sizes));
      },
      "dim"_a, "sizes"_a, "dim split into sizes (one may be -1); composite: reshape.");
}

void bind_reduction_composites(nb::module_& m, nb::class_<Tensor>& c) {
  for (bool is_std : {false, true}) {
    m.def(
        is_std ? "std_mean" : "var_mean",
        [is_std](const Tensor& x, nb::handle dim, nb::handle unbiased, bool keepdim,
                 nb::handle correction) {
          double corr = correction_of(dim, unbiased, correction);
          auto dims = to_dims(dim);
          return pair(is_std ? vk::std_mean(x, dims, corr, keepdim)
                             : vk::var_mean(x, dims, corr, keepdim));
        },
        "input"_a, "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false,
        nb::kw_only(), "correction"_a = nb::none());
  }
  both(m, c, "norm", norm_py, "p"_a = "fro", "dim"_a = nb::none(), "keepdim"_a = false,
       "dtype"_a = nb::none());
  both(
      m, c, "dist",
      [](const Tensor& a, nb::handle b, double p) {
        return vk::dist(a, tensor_arg(b, a, "dist"), p);
      },
      "other"_a, "p"_a = 2.0, "p-norm of input - other (composite: sub, linalg.vector_norm).");
  m.def(
      "cdist",
      [](const Tensor& x1, const Tensor& x2, double p, const std::string& m) {
        if (m != "use_mm_for_euclid_dist_if_necessary" && m != "use_mm_for_euclid_dist" &&
            m != "donot_use_mm_for_euclid_dist")  // a ValueError, as torch's
          throw nb::value_error((m + " is not a valid value for compute_mode").c_str());
        return vk::cdist(x1, x2, p, m);
      },
      "x1"_a, "x2"_a, "p"_a = 2.0, "compute_mode"_a = "use_mm_for_euclid_dist_if_necessary",
      "p-norm distances between the rows of x1 (.., P, M) and x2 (.., R, M) (composite: sub, "
      "vector_norm; p = 2 over more than 25 rows by a matrix product, as torch's compute_mode).");
}

void bind_product_composites(nb::module_& m, nb::class_<Tensor>& c) {
  for (const char* name : {"outer", "ger"})
    both(
        m, c, name, [](const Tensor& a, const Tensor& b) { return vk::outer(a, b); }, "vec2"_a);
#define VKPY_ADD_PRODUCT(NAME, A, B)                                                             \
  both(                                                                                          \
      m, c, #NAME,                                                                               \
      [](const Tensor& x, const Tensor& a, const Tensor& b, nb::handle beta, nb::handle alpha) { \
        return vk::NAME(x, a, b, to_scalar(beta, #NAME), to_scalar(alpha, #NAME));               \
      },                                                                                         \
      A, B, nb::kw_only(), "beta"_a = 1, "alpha"_a = 1)
  VKPY_ADD_PRODUCT(addmv, "mat"_a, "vec"_a);
  VKPY_ADD_PRODUCT(addr, "vec1"_a, "vec2"_a);
  VKPY_ADD_PRODUCT(baddbmm, "batch1"_a, "batch2"_a);
  VKPY_ADD_PRODUCT(addbmm, "batch1"_a, "batch2"_a);
#undef VKPY_ADD_PRODUCT
  both(
      m, c, "cross",
      [](const Tensor& a, const Tensor& b, nb::handle dim) {
        return vk::cross(a, b, opt_int(dim));
      },
      "other"_a, "dim"_a = nb::none(),
      "Cross product of 3-vectors along dim (None: the first dim of size 3, as torch.cross); "
      "composite: select, mul, sub, stack.");
  m.def(
      "tensordot",
      [](const Tensor& a, const Tensor& b, nb::handle dims) {
        if (nb::isinstance<nb::int_>(dims)) return vk::tensordot(a, b, as_i64(dims));
        nb::sequence pair = nb::cast<nb::sequence>(dims);
        VK_CHECK(nb::len(pair) == 2, RuntimeError,
                 "tensordot expects dims to be an int or a pair of dim lists");
        return vk::tensordot(a, b, int_or_list(pair[0]), int_or_list(pair[1]));
      },
      "a"_a, "b"_a, "dims"_a = 2,
      "Contracts the last `dims` dims of a with the first of b, or the dims listed in a pair of "
      "lists (composite: permute, reshape, matmul).");
  both(
      m, c, "kron", [](const Tensor& a, const Tensor& b) { return vk::kron(a, b); }, "other"_a);
  m.def(
      "einsum",
      [](const std::string& equation, nb::args operands) {
        nb::handle seq = operands.size() == 1 && !nb::isinstance<Tensor>(operands[0])
                             ? nb::handle(operands[0])
                             : nb::handle(operands);
        return vk::einsum(equation, tensor_list(seq));
      },
      "equation"_a, "operands"_a,
      "Einstein summation: '->' or implicit output, '...', repeated subscripts (diagonals and "
      "traces). Operands contract pairwise left to right with matmul (composite: diagonal, sum, "
      "permute, reshape, matmul).");
}

// torch.where(condition): the one-argument form, nonzero(condition, as_tuple=True) (a host read).
void bind_where_one_arg(nb::module_& m) {
  m.def(
      "where",
      [](const Tensor& condition) {
        vk::NoGradGuard no_grad;
        Tensor c = condition.ndim() == 0 ? vk::reshape(condition, {1}) : condition;
        Tensor mask =
            c.dtype() == DType::Bool ? c : vk::ne(c, vk::zeros({}, c.dtype(), c.device()));
        Tensor nz = vk::nonzero(mask);
        std::vector<Tensor> out;
        for (int64_t d = 0; d < c.ndim(); ++d) out.push_back(vk::contiguous(vk::select(nz, 1, d)));
        return to_tuple(out);
      },
      "condition"_a,
      "The indices where condition is nonzero, one 1-D int64 tensor per dim (as torch.where "
      "with one argument).");
}

void bind_linalg_namespace(nb::module_& m) {
  nb::module_ l = m.def_submodule("_linalg", "vk.linalg's functions (see vkml/linalg.py)");
  l.def("vector_norm", vector_norm_py, "x"_a, "ord"_a = 2, "dim"_a = nb::none(),
        "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  l.def("matrix_norm", matrix_norm_py, "A"_a, "ord"_a = "fro", "dim"_a = nb::make_tuple(-2, -1),
        "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  l.def("norm", linalg_norm_py, "A"_a, "ord"_a = nb::none(), "dim"_a = nb::none(),
        "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  l.def(
      "cross", [](const Tensor& a, const Tensor& b, int64_t dim) { return vk::cross(a, b, dim); },
      "input"_a, "other"_a, nb::kw_only(), "dim"_a = -1);
}

// Every tensor among a call's arguments (they must not require grad for an in-place write).
void collect_tensors(nb::handle h, std::vector<Tensor>& out) {
  if (nb::isinstance<Tensor>(h)) out.push_back(nb::cast<Tensor>(h));
}

}  // namespace

void bind_composite(nb::module_& m, nb::class_<Tensor>& c) {
  bind_elementwise_composites(m, c);
  bind_shape_composites(m, c);
  bind_reduction_composites(m, c);
  bind_product_composites(m, c);
  bind_linalg_namespace(m);
  bind_where_one_arg(m);
  // _inplace(x, "exp_", fn, args, kwargs): x.exp_() as fn(x, *args, **kwargs) written into x by
  // vk::inplace (its checks, its recording, the version counter). The GIL stays held: fn is
  // Python.
  m.def(
      "_inplace",
      [](nb::handle self, const char* op, nb::callable fn, nb::tuple args, nb::dict kwargs) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        std::vector<Tensor> others;
        for (nb::handle a : args) collect_tensors(a, others);
        for (auto [k, v] : kwargs) collect_tensors(v, others);
        return rebind(
            self, vk::inplace(x, others, op, [&] {
              nb::object r = fn(self, *args, **kwargs);
              if (!nb::isinstance<Tensor>(r))
                throw nb::type_error(
                    (std::string(op) + ": the out-of-place op returned no tensor").c_str());
              return nb::cast<Tensor>(r);
            }));
      },
      "self"_a, "op"_a, "fn"_a, "args"_a, "kwargs"_a);
}

}  // namespace vkpy
