// Conversions between Python objects and vk tensors, dtypes and shapes.
#include <cstring>

#include "common.h"

namespace vkpy {

namespace {

// numpy is imported once and kept for the life of the process (never released: it may be
// needed while the interpreter tears vkml down).
struct Numpy {
  nb::object module, ndarray, generic, asarray, ascontiguousarray, dtype;
};
const Numpy& np() {
  static Numpy* n = [] {
    auto* r = new Numpy;
    r->module = nb::module_::import_("numpy");
    r->ndarray = r->module.attr("ndarray");
    r->generic = r->module.attr("generic");
    r->asarray = r->module.attr("asarray");
    r->ascontiguousarray = r->module.attr("ascontiguousarray");
    r->dtype = r->module.attr("dtype");
    return r;
  }();
  return *n;
}

std::string py_repr(nb::handle h) {
  try {
    return nb::cast<std::string>(nb::repr(h));
  } catch (...) {
    return "<object>";
  }
}

DType dtype_from_name(const std::string& name, nb::handle h) {
  if (name == "float32") return DType::Float32;
  if (name == "float64") return DType::Float64;
  if (name == "int32") return DType::Int32;
  if (name == "int64") return DType::Int64;
  if (name == "bool") return DType::Bool;
  throw vk::DTypeError("unsupported dtype " + py_repr(h) +
                       "; vkml has float32, float64, int32, int64 and bool");
}

int64_t as_int(nb::handle h) {
  PyObject* idx = PyNumber_Index(h.ptr());
  if (!idx) throw nb::python_error();
  long long v = PyLong_AsLongLong(idx);
  Py_DECREF(idx);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

bool is_index_like(nb::handle h) {
  if (PyLong_Check(h.ptr())) return true;
  if (nb::isinstance<Tensor>(h)) return false;
  return nb::isinstance(h, np().generic) && PyIndex_Check(h.ptr());
}

}  // namespace

// ---------------------------------------------------------------- dtypes

DType to_dtype(nb::handle h) {
  if (nb::isinstance<DType>(h)) return nb::cast<DType>(h);
  if (h.ptr() == (PyObject*)&PyFloat_Type) return DType::Float64;
  if (h.ptr() == (PyObject*)&PyLong_Type) return DType::Int64;
  if (h.ptr() == (PyObject*)&PyBool_Type) return DType::Bool;
  nb::object dt;
  try {
    dt = np().dtype(h);
  } catch (nb::python_error&) {
    throw vk::DTypeError("unsupported dtype " + py_repr(h) +
                         "; vkml has float32, float64, int32, int64 and bool");
  }
  return dtype_from_name(nb::cast<std::string>(dt.attr("name")), h);
}

std::optional<DType> to_dtype_opt(nb::handle h) {
  if (!h.is_valid() || h.is_none()) return std::nullopt;
  return to_dtype(h);
}

nb::object numpy_dtype(DType t) {
  switch (t) {
    case DType::Bool:
      return np().dtype("bool");
    case DType::Int32:
      return np().dtype("int32");
    case DType::Int64:
      return np().dtype("int64");
    case DType::Float32:
      return np().dtype("float32");
    case DType::Float64:
      return np().dtype("float64");
  }
  throw vk::DTypeError("bad dtype");
}

// ---------------------------------------------------------------- tensors from data

Tensor tensor_from_py(nb::handle data, std::optional<DType> dtype) {
  if (nb::isinstance<Tensor>(data)) {
    const Tensor& t = nb::cast<const Tensor&>(data);
    vk::NoGradGuard no_grad;
    Tensor src = t.detach();
    return dtype && *dtype != src.dtype() ? vk::cast(src, *dtype) : vk::clone(src);
  }
  // Python's own scalars and containers follow torch.tensor's default dtype (float32); numpy
  // arrays and scalars, and foreign arrays, keep the dtype they have.
  PyObject* p = data.ptr();
  // (exact checks: numpy.float64 is a subclass of float, and keeps float64)
  bool python_data = PyFloat_CheckExact(p) || PyLong_CheckExact(p) || PyBool_Check(p) ||
                     PyList_Check(p) || PyTuple_Check(p);
  nb::object arr = np().asarray(data);
  DType target;
  if (dtype) {
    target = *dtype;
  } else {
    nb::object dt = arr.attr("dtype");
    std::string kind = nb::cast<std::string>(dt.attr("kind"));
    int64_t itemsize = nb::cast<int64_t>(dt.attr("itemsize"));
    if (kind == "f")
      target = (python_data || itemsize <= 4) ? DType::Float32 : DType::Float64;
    else if (kind == "i" || kind == "u")
      target = (kind == "i" && itemsize == 4) ? DType::Int32 : DType::Int64;
    else if (kind == "b")
      target = DType::Bool;
    else
      throw vk::DTypeError("tensor: cannot make a tensor from " + py_repr(dt) +
                           " data; vkml has float32, float64, int32, int64 and bool");
  }
  nb::object c = np().asarray(arr, "dtype"_a = numpy_dtype(target), "order"_a = "C");
  auto view = nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(c);
  Shape shape = to_shape(c.attr("shape"));
  return vk::from_data(view.data(), shape, target);
}

Tensor as_tensor(nb::handle h, std::optional<DType> dtype) {
  if (nb::isinstance<Tensor>(h)) {
    const Tensor& t = nb::cast<const Tensor&>(h);
    return dtype && *dtype != t.dtype() ? vk::cast(t, *dtype) : t;
  }
  return tensor_from_py(h, dtype);
}

bool is_py_scalar(nb::handle h) {
  PyObject* p = h.ptr();
  if (PyFloat_Check(p) || PyLong_Check(p)) return true;
  if (nb::isinstance(h, np().generic)) {
    std::string kind = nb::cast<std::string>(h.attr("dtype").attr("kind"));
    return kind == "f" || kind == "i" || kind == "u" || kind == "b";
  }
  return false;
}

double scalar_value(nb::handle h) {
  double v = PyFloat_AsDouble(h.ptr());
  if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

std::optional<Tensor> operand(nb::handle h, const Tensor& like) {
  if (nb::isinstance<Tensor>(h)) return nb::cast<Tensor>(h);
  if (is_py_scalar(h)) return vk::scalar_like(scalar_value(h), like);
  PyObject* p = h.ptr();
  if (nb::isinstance(h, np().ndarray) || PyList_Check(p) || PyTuple_Check(p) ||
      nb::hasattr(h, "__array__") || nb::hasattr(h, "__dlpack__")) {
    std::optional<DType> dt;
    if (vk::is_floating(like.dtype())) dt = like.dtype();
    return tensor_from_py(h, dt);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- shapes and dims

Shape to_shape(nb::handle h) {
  if (is_index_like(h)) return {as_int(h)};
  Shape s;
  for (nb::handle item : h) s.push_back(as_int(item));
  return s;
}

Shape shape_from_args(const nb::args& args) {
  if (args.size() == 1 && !is_index_like(args[0])) return to_shape(args[0]);
  Shape s;
  for (nb::handle item : args) s.push_back(as_int(item));
  return s;
}

std::vector<int64_t> to_dims(nb::handle h) {
  if (!h.is_valid() || h.is_none()) return {};
  return to_shape(h);
}

nb::tuple shape_tuple(const Shape& s) {
  PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(s.size()));
  if (!t) throw nb::python_error();
  for (size_t i = 0; i < s.size(); ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(s[i]));
  return nb::steal<nb::tuple>(t);
}

// ---------------------------------------------------------------- numpy / DLPack

namespace {

nb::dlpack::dtype dl_dtype(DType t) {
  switch (t) {
    case DType::Bool:
      return nb::dtype<bool>();
    case DType::Int32:
      return nb::dtype<int32_t>();
    case DType::Int64:
      return nb::dtype<int64_t>();
    case DType::Float32:
      return nb::dtype<float>();
    case DType::Float64:
      return nb::dtype<double>();
  }
  throw vk::DTypeError("bad dtype");
}

template <class Framework>
nb::object export_array(const Tensor& t) {
  // The capsule owns a handle to the tensor's storage: the array keeps the memory alive.
  auto* keep = new Tensor(t.detach());
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::ndarray<Framework> arr(t.raw_data(), shape.size(), shape.data(), owner, t.strides().data(),
                             dl_dtype(t.dtype()), nb::device::cpu::value);
  return arr.cast();
}

// numpy's limit on an array's dims: 64 since numpy 2.0, 32 before (its MAXDIMS).
int64_t numpy_max_dims() {
  static const int64_t n = [] {
    for (const char* mod : {"numpy._core.multiarray", "numpy.core.multiarray"}) {
      nb::object m = nb::steal(PyImport_ImportModule(mod));
      if (!m.is_valid()) {
        PyErr_Clear();
        continue;
      }
      if (nb::hasattr(m, "MAXDIMS")) return nb::cast<int64_t>(m.attr("MAXDIMS"));
    }
    return int64_t{32};
  }();
  return n;
}

}  // namespace

nb::object to_numpy(const Tensor& t, bool force) {
  VK_CHECK(force || !t.requires_grad(), RuntimeError,
           "Can't call numpy() on a tensor that requires grad. Use tensor.detach().numpy() "
           "instead.");
  // Past the limit numpy would wrap the array in a 0-d object array instead of failing.
  VK_CHECK(t.ndim() <= 32 || t.ndim() <= numpy_max_dims(), ShapeError, "numpy(): a tensor with ",
           t.ndim(), " dims cannot be converted: numpy arrays have at most ", numpy_max_dims(),
           " dims (shape ", vk::shape_str(t.shape()), ")");
  return export_array<nb::numpy>(t);
}

nb::object dlpack_ndarray(const Tensor& t) { return export_array<nb::array_api>(t); }

Tensor from_dlpack(nb::handle obj) {
  if (nb::isinstance<Tensor>(obj)) return nb::cast<Tensor>(obj).detach();
  using Arr = nb::ndarray<nb::device::cpu>;
  Arr imported;
  if (!nb::try_cast<Arr>(obj, imported)) {
    // Read-only memory (a non-writeable numpy array) is copied: vkml may write into its tensors.
    using RoArr = nb::ndarray<nb::ro, nb::device::cpu>;
    RoArr ro;
    if (nb::try_cast<RoArr>(obj, ro)) return tensor_from_py(obj, std::nullopt);
    throw nb::type_error(
        ("from_dlpack: expected a CPU array with __dlpack__ or the buffer protocol, "
         "got " +
         py_repr(nb::handle(obj.type())))
            .c_str());
  }
  auto holder = std::make_shared<Arr>(std::move(imported));
  const Arr& a = *holder;
  auto dt = a.dtype();
  DType t;
  using Code = nb::dlpack::dtype_code;
  if (dt.lanes != 1) throw vk::DTypeError("from_dlpack: vector dtypes are not supported");
  if (dt.code == (uint8_t)Code::Float && dt.bits == 32)
    t = DType::Float32;
  else if (dt.code == (uint8_t)Code::Float && dt.bits == 64)
    t = DType::Float64;
  else if (dt.code == (uint8_t)Code::Int && dt.bits == 32)
    t = DType::Int32;
  else if (dt.code == (uint8_t)Code::Int && dt.bits == 64)
    t = DType::Int64;
  else if (dt.code == (uint8_t)Code::Bool && dt.bits == 8)
    t = DType::Bool;
  else
    throw vk::DTypeError("from_dlpack: unsupported dtype (code " + std::to_string(dt.code) + ", " +
                         std::to_string(dt.bits) +
                         " bits); vkml has float32, float64, "
                         "int32, int64 and bool");
  Shape shape(a.ndim());
  vk::Strides strides(a.ndim());
  int64_t span = 1;
  bool empty = false;
  for (size_t i = 0; i < a.ndim(); ++i) {
    shape[i] = static_cast<int64_t>(a.shape(i));
    strides[i] = a.stride(i);
    if (shape[i] == 0) empty = true;
    if (strides[i] < 0)  // vkml views never step backwards: take a copy instead
      return tensor_from_py(obj, t);
    span += (shape[i] - 1) * strides[i];
  }
  size_t nbytes = empty ? 0 : static_cast<size_t>(span) * vk::dtype_size(t);
  auto storage =
      std::make_shared<vk::Storage>(a.data(), nbytes, [holder](void*) mutable { holder.reset(); });
  return Tensor::from_storage(std::move(storage), shape, strides, 0, t);
}

namespace {

template <class T>
nb::object py_value(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return nb::bool_(v);
  else if constexpr (std::is_floating_point_v<T>)
    return nb::float_(static_cast<double>(v));
  else
    return nb::int_(static_cast<int64_t>(v));
}

// Contiguous data of `shape` as nested lists. Built with a stack of the lists being filled, one
// per open dim, rather than by recursion: a tensor may have a hundred thousand dims.
template <class T>
nb::object nested(const T* data, const Shape& shape) {
  if (shape.empty()) return py_value<T>(data[0]);
  const size_t inner = shape.size() - 1;
  std::vector<nb::list> open(1);
  int64_t pos = 0;
  for (;;) {
    const size_t d = open.size() - 1;
    if (static_cast<int64_t>(PyList_GET_SIZE(open.back().ptr())) < shape[d]) {
      if (d < inner) {
        open.emplace_back();
        continue;
      }
      for (int64_t i = 0; i < shape[d]; ++i) open.back().append(py_value<T>(data[pos++]));
    }
    if (d == 0) return std::move(open[0]);
    nb::list full = std::move(open.back());
    open.pop_back();
    open.back().append(full);
  }
}

}  // namespace

nb::object tolist(const Tensor& t) {
  Tensor c = vk::contiguous(t.detach());
  nb::object r;
  VK_DISPATCH_ALL(c.dtype(), "tolist", r = nested<T>(c.data<T>(), c.shape()));
  return r;
}

nb::object item(const Tensor& t) {
  VK_CHECK(t.numel() == 1, RuntimeError, "a Tensor with ", t.numel(),
           " elements cannot be converted to a Python scalar (item() needs exactly one element)");
  nb::object r;
  VK_DISPATCH_ALL(t.dtype(), "item", r = py_value<T>(*t.data<T>()));
  return r;
}

// ---------------------------------------------------------------- callables

PyRef::PyRef(nb::handle h)
    : obj(h.inc_ref().ptr(), [](PyObject* o) {
        if (nb::detail::cleanup_guard guard{}) Py_DECREF(o);
      }) {}

std::vector<Tensor> grads_from_py(nb::handle r, const std::vector<DType>& dtypes, const char* who) {
  std::vector<Tensor> out;
  auto one = [&](nb::handle g, size_t i) {
    if (g.is_none()) return Tensor();
    if (nb::isinstance<Tensor>(g)) return nb::cast<Tensor>(g);
    return tensor_from_py(g, i < dtypes.size() ? std::optional<DType>(dtypes[i]) : std::nullopt);
  };
  if (r.is_none() || nb::isinstance<Tensor>(r) || nb::isinstance(r, np().ndarray)) {
    out.push_back(one(r, 0));
    return out;
  }
  if (!PyList_Check(r.ptr()) && !PyTuple_Check(r.ptr()))
    throw vk::RuntimeError(std::string(who) +
                           ": the gradient function must return a tensor or a "
                           "sequence of tensors (or None), got " +
                           py_repr(r));
  size_t i = 0;
  for (nb::handle g : r) out.push_back(one(g, i++));
  return out;
}

}  // namespace vkpy
