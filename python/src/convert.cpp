// Conversions between Python objects and vk tensors, dtypes and shapes.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>

#include "common.h"
#include "vkml/core/default_dtype.h"

namespace vkpy {

namespace {

// A value computed once by calling into Python, from whichever thread asks first. A thread that
// waits for another's computation must not hold the GIL: the computation may give it up and need
// it back (an import reading files does), and a plain function-local static then deadlocks both
// threads (pybind11's gil_safe_call_once_and_store does the same). Never destroyed: the value may
// hold Python objects still needed while the interpreter tears vkml down.
template <class T>
class GilSafeOnce {
 public:
  template <class Make>
  const T& get(Make make) {
    if (!done_.load(std::memory_order_acquire)) {
      nb::gil_scoped_release release;
      std::call_once(once_, [&] {
        nb::gil_scoped_acquire acquire;
        value_.emplace(make());
        done_.store(true, std::memory_order_release);
      });
    }
    return *value_;
  }

 private:
  std::once_flag once_;
  std::atomic<bool> done_{false};
  std::optional<T> value_;
};

// numpy, imported on first use (importing it with vkml would double vkml's import time).
struct Numpy {
  nb::object module, ndarray, generic, asarray, ascontiguousarray, dtype;
};
const Numpy& np() {
  static auto* once = new GilSafeOnce<Numpy>();  // immortal, see GilSafeOnce
  return once->get([] {
    Numpy r;
    r.module = nb::module_::import_("numpy");
    r.ndarray = r.module.attr("ndarray");
    r.generic = r.module.attr("generic");
    r.asarray = r.module.attr("asarray");
    r.ascontiguousarray = r.module.attr("ascontiguousarray");
    r.dtype = r.module.attr("dtype");
    return r;
  });
}

std::string py_repr(nb::handle h) {
  try {
    return nb::cast<std::string>(nb::repr(h));
  } catch (...) {
    return "<object>";
  }
}

constexpr const char* kDTypeList =
    "float16, bfloat16, float32, float64, uint8, int8, int16, int32, int64 and bool";

DType dtype_from_name(const std::string& name, nb::handle h) {
  if (name == "float32") return DType::Float32;
  if (name == "float64") return DType::Float64;
  if (name == "int32") return DType::Int32;
  if (name == "int64") return DType::Int64;
  if (name == "bool") return DType::Bool;
  if (name == "float16") return DType::Float16;
  if (name == "bfloat16") return DType::BFloat16;  // ml_dtypes' numpy type
  if (name == "uint8") return DType::UInt8;
  if (name == "int8") return DType::Int8;
  if (name == "int16") return DType::Int16;
  throw vk::DTypeError("unsupported dtype " + py_repr(h) + "; vkml has " + kDTypeList);
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
    throw vk::DTypeError("unsupported dtype " + py_repr(h) + "; vkml has " + kDTypeList);
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
    case DType::UInt8:
      return np().dtype("uint8");
    case DType::Int8:
      return np().dtype("int8");
    case DType::Int16:
      return np().dtype("int16");
    case DType::Float16:
      return np().dtype("float16");
    case DType::BFloat16: {
      nb::object ml = nb::steal(PyImport_ImportModule("ml_dtypes"));
      if (ml.is_valid()) return np().dtype(ml.attr("bfloat16"));
      PyErr_Clear();
      throw nb::type_error(
          "numpy has no bfloat16 (install ml_dtypes for one, or convert with .float() first)");
    }
  }
  throw vk::DTypeError("bad dtype");
}

// ---------------------------------------------------------------- tensors from data

namespace {

[[noreturn]] void raise(PyObject* type, const std::string& msg) {
  PyErr_SetString(type, msg.c_str());
  throw nb::python_error();
}

// What the leaves of nested lists/tuples are: all Python ints (or bools), which torch reads as
// int64; Python numbers with a float among them; or something else. Walks with an explicit stack
// (data may nest deeply).
enum class Leaves { Ints, Numbers, Other };
Leaves classify_leaves(nb::handle data) {
  Leaves r = Leaves::Ints;
  std::vector<PyObject*> stack{data.ptr()};
  while (!stack.empty()) {
    PyObject* o = stack.back();
    stack.pop_back();
    if (PyList_Check(o) || PyTuple_Check(o)) {
      PyObject* seq = PySequence_Fast(o, "");
      if (!seq) throw nb::python_error();
      Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
      for (Py_ssize_t i = 0; i < n; ++i) stack.push_back(PySequence_Fast_GET_ITEM(seq, i));
      Py_DECREF(seq);  // the items stay alive: `data` holds them
    } else if (PyFloat_Check(o)) {
      r = Leaves::Numbers;
    } else if (!PyLong_Check(o)) {
      return Leaves::Other;
    }
  }
  return r;
}

// As torch.tensor: a Python int outside int64 in data of ints is a ValueError.
[[noreturn]] void raise_int_overflow() {
  raise(PyExc_ValueError,
        "tensor: a Python int in the data is out of int64's range (Overflow when unpacking long "
        "long); vkml's integers are int64");
}

// The dtype numpy's array of the data has, as a vk dtype (without narrowing: float16 -> float32,
// small integers -> int64), after checking that no value is lost on the way. Python ints beyond
// int64 are a ValueError, as in torch.tensor, unless the data also holds floats or the requested
// dtype is floating: then `arr` is re-read as float64 (torch converts them to float).
DType source_dtype(nb::object& arr, nb::handle data, bool python_data, std::optional<DType> dtype) {
  nb::object dt = arr.attr("dtype");
  std::string kind = nb::cast<std::string>(dt.attr("kind"));
  int64_t itemsize = nb::cast<int64_t>(dt.attr("itemsize"));
  int64_t size = nb::cast<int64_t>(arr.attr("size"));
  // numpy reads [2**63] as uint64, [2**64] as objects and [2**63, -1] as float64
  bool big_ints = false;
  if (python_data && size > 0) {
    if (kind == "u" && itemsize == 8)
      big_ints = nb::cast<uint64_t>(arr.attr("max")()) > static_cast<uint64_t>(INT64_MAX);
    else if (kind == "f")
      big_ints = nb::cast<double>(np().module.attr("abs")(arr).attr("max")()) >= 0x1p63;
  }
  Leaves leaves = big_ints || (kind == "O" && python_data) ? classify_leaves(data) : Leaves::Other;
  if (big_ints || leaves != Leaves::Other) {
    if (!(dtype && vk::is_floating(*dtype)) && leaves == Leaves::Ints) raise_int_overflow();
    if (kind != "f") {
      arr = np().asarray(data, "dtype"_a = "float64");  // OverflowError beyond float64, as torch
      return DType::Float64;
    }
  }
  if (kind == "f")
    return itemsize == 2 ? DType::Float16 : itemsize <= 4 ? DType::Float32 : DType::Float64;
  if (kind == "i")
    return itemsize == 1   ? DType::Int8
           : itemsize == 2 ? DType::Int16
           : itemsize == 4 ? DType::Int32
                           : DType::Int64;
  if (kind == "u" && itemsize == 1) return DType::UInt8;
  if (nb::cast<std::string>(dt.attr("name")) == "bfloat16") return DType::BFloat16;  // ml_dtypes
  if (kind == "u") {
    if (itemsize == 8 && size > 0 &&
        nb::cast<uint64_t>(arr.attr("max")()) > static_cast<uint64_t>(INT64_MAX))
      raise(PyExc_RuntimeError,
            "tensor: a uint64 value does not fit int64 (vkml's integers are int64)");
    return DType::Int64;
  }
  if (kind == "b") return DType::Bool;
  throw vk::DTypeError("tensor: cannot make a tensor from " + py_repr(dt) + " data; vkml has " +
                       kDTypeList);
}

}  // namespace

Tensor tensor_from_py(nb::handle data, std::optional<DType> dtype) {
  if (nb::isinstance<Tensor>(data)) {
    const Tensor& t = nb::cast<const Tensor&>(data);
    vk::NoGradGuard no_grad;
    Tensor src = t.detach();
    return dtype && *dtype != src.dtype() ? vk::cast(src, *dtype) : vk::clone(src);
  }
  // Python's own scalars and containers follow torch.tensor's default dtype (float32 unless
  // vk.set_default_dtype changed it); numpy
  // arrays and scalars, and foreign arrays, keep the dtype they have.
  PyObject* p = data.ptr();
  // (exact checks: numpy.float64 is a subclass of float, and keeps float64)
  bool python_data = PyFloat_CheckExact(p) || PyLong_CheckExact(p) || PyBool_Check(p) ||
                     PyList_Check(p) || PyTuple_Check(p);
  nb::object arr = np().asarray(data);
  const DType source = source_dtype(arr, data, python_data, dtype);
  const DType target =
      dtype ? *dtype
            : (python_data && source == DType::Float64 ? vk::default_float_dtype() : source);
  // Into an integer dtype, values are checked (vk.tensor([2**40], dtype=vk.int32) and NaN into
  // int64 raise, as in torch); otherwise numpy converts directly.
  const bool checked = vk::is_integral(target) && target != source;
  // numpy has no bfloat16 (but ml_dtypes' arrays come as theirs), and rounds float64 to float16
  // directly where PyTorch goes through float32: both are read as float32 and cast by vkml.
  const bool via_float32 = vk::is_half(target) && target != source;
  const DType read = checked ? source : via_float32 ? DType::Float32 : target;
  nb::object c = np().asarray(arr, "dtype"_a = numpy_dtype(read), "order"_a = "C");
  auto view = nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(c);
  Shape shape = to_shape(c.attr("shape"));
  Tensor t = vk::from_data(view.data(), shape, read);
  if (via_float32) return vk::cast(t, target);
  return checked ? vk::cast_checked(t, target, "tensor") : t;
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

namespace {

// A Python int (or an object with __index__) read as PyTorch does: int64 when it fits, a big int
// in [2^63, 2^64) (torch's uint64), else OverflowError.
vk::Scalar int_scalar(PyObject* p, const char* op) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow == 0) return vk::Scalar(static_cast<int64_t>(v));
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(p);
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred()))
      return vk::Scalar::big_int(static_cast<double>(u));
    PyErr_Clear();
  }
  raise(PyExc_OverflowError, std::string(op) + ": the Python int " + py_repr(p) +
                                 " is too big to convert (out of the int64 and uint64 ranges)");
}

}  // namespace

std::optional<vk::Scalar> to_scalar_opt(nb::handle h, const char* op) {
  PyObject* p = h.ptr();
  if (PyBool_Check(p)) return vk::Scalar(p == Py_True);
  if (PyLong_Check(p)) return int_scalar(p, op);
  if (PyFloat_Check(p)) return vk::Scalar(PyFloat_AS_DOUBLE(p));
  if (nb::isinstance<Tensor>(h) || !nb::isinstance(h, np().generic)) return std::nullopt;
  std::string kind = nb::cast<std::string>(h.attr("dtype").attr("kind"));
  if (kind == "i" || kind == "u") {
    nb::object i = nb::steal(PyNumber_Index(p));
    if (!i.is_valid()) throw nb::python_error();
    return int_scalar(i.ptr(), op);
  }
  if (kind == "f" || kind == "b") return vk::Scalar(scalar_value(h));  // np.bool_: as torch
  return std::nullopt;
}

vk::Scalar to_scalar(nb::handle h, const char* op) {
  if (std::optional<vk::Scalar> s = to_scalar_opt(h, op)) return *s;
  throw nb::type_error((std::string(op) + ": expected a number (bool, int or float), got " +
                        py_repr(nb::handle(h.type())))
                           .c_str());
}

std::optional<vk::Scalar> opt_scalar(nb::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  return to_scalar(h, op);
}

std::optional<Tensor> pow_scalar_exponent(const Tensor& x, nb::handle e) {
  if (PyBool_Check(e.ptr())) return vk::pow(x, vk::Scalar(e.ptr() == Py_True));
  if (!is_py_scalar(e) || !vk::is_integral(x.dtype())) return std::nullopt;
  const vk::Scalar s = to_scalar(e, "pow");
  if (!s.is_integral() || s.to_double() >= 0) return std::nullopt;
  return vk::pow(x, s);  // raises, as torch
}

std::optional<Tensor> operand(nb::handle h, const Tensor& like, const char* op) {
  if (nb::isinstance<Tensor>(h)) return nb::cast<Tensor>(h);
  if (std::optional<vk::Scalar> s = to_scalar_opt(h, op)) {
    // As torch, x - True raises like x - bool_tensor (the op sees the number as x's dtype).
    if (s->is_bool() && std::string_view(op).starts_with("sub"))
      throw vk::RuntimeError(std::string(op) +
                             ": subtraction with a bool operand is not supported (as in "
                             "PyTorch); to invert a mask use ~, for the difference of two masks "
                             "use ^");
    return vk::scalar_like(*s, like, op);
  }
  PyObject* p = h.ptr();
  if (nb::isinstance(h, np().ndarray) || PyList_Check(p) || PyTuple_Check(p) ||
      nb::hasattr(h, "__array__") || nb::hasattr(h, "__dlpack__")) {
    std::optional<DType> dt;
    if (vk::is_floating(like.dtype())) dt = like.dtype();
    return vk::to_device(tensor_from_py(h, dt), like.device());  // a constant: where `like` is
  }
  return std::nullopt;
}

std::optional<std::pair<Tensor, Tensor>> compare_operands(const Tensor& a, nb::handle b,
                                                          const char* op) {
  std::optional<vk::Scalar> s;
  if (!nb::isinstance<Tensor>(b)) s = to_scalar_opt(b, op);
  if (s && a.dtype() == DType::Int32 && s->is_integral() && !s->fits<int32_t>()) {
    Tensor wide = vk::cast(a, DType::Int64);
    return std::pair{wide, vk::scalar_like(*s, wide, op)};
  }
  std::optional<Tensor> o = s ? vk::scalar_like(*s, a, op) : operand(b, a, op);
  if (!o) return std::nullopt;
  return std::pair{a, *o};
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
    case DType::UInt8:
      return nb::dtype<uint8_t>();
    case DType::Int8:
      return nb::dtype<int8_t>();
    case DType::Int16:
      return nb::dtype<int16_t>();
    case DType::Float16:
      return {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::BFloat16:
      return {static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
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
  static auto* once = new GilSafeOnce<int64_t>();  // immortal, see GilSafeOnce
  return once->get([] {
    for (const char* mod : {"numpy._core.multiarray", "numpy.core.multiarray"}) {
      nb::object m = nb::steal(PyImport_ImportModule(mod));
      if (!m.is_valid()) {
        PyErr_Clear();
        continue;
      }
      if (nb::hasattr(m, "MAXDIMS")) return nb::cast<int64_t>(m.attr("MAXDIMS"));
    }
    return int64_t{32};
  });
}

}  // namespace

nb::object to_numpy(const Tensor& t, bool force) {
  VK_CHECK(t.device().is_cpu(), DeviceError, "numpy(): the tensor is on ",
           vk::device_name(t.device()), " and numpy arrays live in host memory; call .cpu() first");
  VK_CHECK(force || !t.requires_grad(), RuntimeError,
           "Can't call numpy() on a tensor that requires grad. Use tensor.detach().numpy() "
           "instead.");
  // Past the limit numpy would wrap the array in a 0-d object array instead of failing.
  VK_CHECK(t.ndim() <= 32 || t.ndim() <= numpy_max_dims(), ShapeError, "numpy(): a tensor with ",
           t.ndim(), " dims cannot be converted: numpy arrays have at most ", numpy_max_dims(),
           " dims (shape ", vk::shape_str(t.shape()), ")");
  if (t.dtype() == DType::BFloat16) {  // numpy's bfloat16 is ml_dtypes': the bits, viewed as it
    nb::object bf16 = numpy_dtype(DType::BFloat16);
    Tensor bits =
        Tensor::from_storage(t.storage(), t.shape(), t.strides(), t.offset(), DType::Int16);
    return export_array<nb::numpy>(bits).attr("view")(bf16);
  }
  return export_array<nb::numpy>(t);
}

nb::object dlpack_ndarray(const Tensor& t) {
  VK_CHECK(t.device().is_cpu(), DeviceError, "__dlpack__: the tensor is on ",
           vk::device_name(t.device()), "; vkml exports host memory only: call .cpu() first");
  return export_array<nb::array_api>(t);
}

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
  else if (dt.code == (uint8_t)Code::Float && dt.bits == 16)
    t = DType::Float16;
  else if (dt.code == (uint8_t)Code::Bfloat && dt.bits == 16)
    t = DType::BFloat16;
  else if (dt.code == (uint8_t)Code::UInt && dt.bits == 8)
    t = DType::UInt8;
  else if (dt.code == (uint8_t)Code::Int && dt.bits == 8)
    t = DType::Int8;
  else if (dt.code == (uint8_t)Code::Int && dt.bits == 16)
    t = DType::Int16;
  else
    throw vk::DTypeError("from_dlpack: unsupported dtype (code " + std::to_string(dt.code) + ", " +
                         std::to_string(dt.bits) + " bits); vkml has " + kDTypeList);
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
  else if constexpr (vk::is_half_type<T>)
    return nb::float_(static_cast<double>(static_cast<float>(v)));
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
  Tensor c = vk::to_cpu(vk::contiguous(t.detach()));  // a host read: the one copy back
  nb::object r;
  VK_DISPATCH_STORAGE(c.dtype(), "tolist", r = nested<T>(c.data<T>(), c.shape()));
  return r;
}

nb::object item(const Tensor& t) {
  VK_CHECK(t.numel() == 1, RuntimeError, "a Tensor with ", t.numel(),
           " elements cannot be converted to a Python scalar (item() needs exactly one element)");
  const Tensor c = vk::to_cpu(t.detach());  // a host read: the one copy back
  nb::object r;
  VK_DISPATCH_STORAGE(c.dtype(), "item", r = py_value<T>(*c.data<T>()));
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
