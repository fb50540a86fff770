// vkml.Tensor: construction, properties, conversions, operators, indexing, in-place updates and
// the autograd methods. Op methods shared with module functions (exp, sum, reshape, ...) are in
// functions.cpp.
#include <cmath>
#include <limits>

#include "common.h"
#include "vkml/core/default_dtype.h"
#include "vkml/ops/math.h"

namespace vkpy {

namespace {

// ---------------------------------------------------------------- grad_fn objects

// What t.grad_fn returns: a view of the node that produced t (the tensor is its own node).
struct GradFn {
  Tensor t;
};

std::string camel(std::string_view s) {
  std::string out;
  bool up = true;
  for (char c : s) {
    if (c == '_' || c == ' ' || c == '-' || c == '.') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

nb::object grad_fn_of(const Tensor& t) {
  if (!t.op()) return nb::none();
  return nb::cast(GradFn{t});
}

nb::object not_implemented() { return nb::borrow(Py_NotImplemented); }

// ---------------------------------------------------------------- indexing

vk::IndexItem parse_item(nb::handle h) {
  using vk::IndexItem;
  PyObject* p = h.ptr();
  if (p == Py_None) return IndexItem::none();
  if (p == Py_Ellipsis) return IndexItem::ellipsis();
  if (PyBool_Check(p)) return IndexItem::of(vk::full({}, p == Py_True ? 1.0 : 0.0, DType::Bool));
  if (PyLong_Check(p)) {
    long long v = PyLong_AsLongLong(p);
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
    return IndexItem::integer(v);
  }
  if (PySlice_Check(p)) {
    auto* s = reinterpret_cast<PySliceObject*>(p);
    auto part = [](PyObject* o) -> std::optional<int64_t> {
      if (o == Py_None) return std::nullopt;
      PyObject* idx = PyNumber_Index(o);
      if (!idx) throw nb::python_error();
      long long v = PyLong_AsLongLong(idx);
      Py_DECREF(idx);
      if (v == -1 && PyErr_Occurred()) throw nb::python_error();
      return v;
    };
    std::optional<int64_t> step = part(s->step);
    if (step && *step <= 0)
      throw vk::ShapeError("index: slice step must be positive (as in PyTorch), got " +
                           std::to_string(*step) + "; use flip() to reverse");
    return IndexItem::slice(part(s->start), part(s->stop), step);
  }
  Tensor t;
  if (nb::isinstance<Tensor>(h)) {
    t = nb::cast<Tensor>(h);
  } else if (is_py_scalar(h)) {
    if (PyIndex_Check(p)) {  // numpy integer scalar
      PyObject* idx = PyNumber_Index(p);
      if (!idx) throw nb::python_error();
      long long v = PyLong_AsLongLong(idx);
      Py_DECREF(idx);
      return IndexItem::integer(v);
    }
    t = tensor_from_py(h, std::nullopt);
  } else if (PyList_Check(p) && PyList_GET_SIZE(p) == 0) {
    t = vk::zeros({0}, DType::Int64);
  } else {
    t = tensor_from_py(h, std::nullopt);
  }
  VK_CHECK(!vk::is_floating(t.dtype()), IndexError,
           "tensors used as indices must be integer (int64/int32) or bool, got ",
           vk::dtype_name(t.dtype()));
  return IndexItem::of(t);
}

std::vector<vk::IndexItem> parse_index(nb::handle idx) {
  std::vector<vk::IndexItem> items;
  if (PyTuple_Check(idx.ptr())) {
    for (nb::handle h : idx) items.push_back(parse_item(h));
  } else {
    items.push_back(parse_item(idx));
  }
  return items;
}

// ---------------------------------------------------------------- operators

using BinFn = Tensor (*)(const Tensor&, const Tensor&);

Tensor f_add(const Tensor& a, const Tensor& b) { return vk::add(a, b); }
Tensor f_sub(const Tensor& a, const Tensor& b) { return vk::sub(a, b); }
Tensor f_mul(const Tensor& a, const Tensor& b) { return vk::mul(a, b); }
Tensor f_div(const Tensor& a, const Tensor& b) { return vk::div(a, b); }
Tensor f_pow(const Tensor& a, const Tensor& b) { return vk::pow(a, b); }
Tensor f_floordiv(const Tensor& a, const Tensor& b) { return vk::floor_divide(a, b); }
Tensor f_mod(const Tensor& a, const Tensor& b) { return vk::remainder(a, b); }
Tensor f_matmul(const Tensor& a, const Tensor& b) { return vk::matmul(a, b); }
Tensor f_eq(const Tensor& a, const Tensor& b) { return vk::eq(a, b); }
Tensor f_ne(const Tensor& a, const Tensor& b) { return vk::ne(a, b); }
Tensor f_lt(const Tensor& a, const Tensor& b) { return vk::lt(a, b); }
Tensor f_le(const Tensor& a, const Tensor& b) { return vk::le(a, b); }
Tensor f_gt(const Tensor& a, const Tensor& b) { return vk::gt(a, b); }
Tensor f_ge(const Tensor& a, const Tensor& b) { return vk::ge(a, b); }

Tensor f_and(const Tensor& a, const Tensor& b) { return vk::bitwise_and(a, b); }
Tensor f_or(const Tensor& a, const Tensor& b) { return vk::bitwise_or(a, b); }
Tensor f_xor(const Tensor& a, const Tensor& b) { return vk::bitwise_xor(a, b); }
Tensor f_lshift(const Tensor& a, const Tensor& b) { return vk::bitwise_left_shift(a, b); }
Tensor f_rshift(const Tensor& a, const Tensor& b) { return vk::bitwise_right_shift(a, b); }

// ---------------------------------------------------------------- vk.Size (porting, issue #15)

// The type of Tensor.shape and Tensor.size(): vk.Size (python/vkml/_porting.py, a tuple
// subclass), registered by vkml/__init__.py through _set_size_type; a plain tuple before that.
// Held as a new reference that is never released (it outlives the interpreter's teardown).
PyObject* g_size_type = nullptr;

nb::object size_object(const Shape& s) {
  nb::tuple t = shape_tuple(s);
  if (!g_size_type) return t;
  PyObject* r = PyObject_CallOneArg(g_size_type, t.ptr());
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

// a <op> b and b <op> a (reflected), with b a Tensor, a Python/numpy scalar, or array data. A
// number promotes by its kind, never its value (vk::scalar_like); `op` names the op in errors.
// Compare: comparisons, whose number operand may widen an int32 tensor (compare_operands).
// Pow: a number exponent follows torch's scalar rules (pow_scalar_exponent).
enum class Binary { Plain, Compare, Pow };
template <BinFn F, Binary Kind = Binary::Plain>
void def_binary(nb::class_<Tensor>& c, const char* name, const char* rname, const char* op) {
  c.def(
      name,
      [](const Tensor& a, const Tensor& b) {
        return without_gil(heavy(a, b), [&] { return F(a, b); });
      },
      nb::is_operator());
  c.def(
      name, [op](const Tensor& a, double b) { return F(a, vk::scalar_like(b, a, op)); },
      nb::is_operator());
  c.def(
      name,
      [op](const Tensor& a, nb::handle b) -> nb::object {
        if constexpr (Kind == Binary::Compare) {
          auto ab = compare_operands(a, b, op);
          if (!ab) return not_implemented();
          return nb::cast(F(ab->first, ab->second));
        } else {
          if (Kind == Binary::Pow)
            if (std::optional<Tensor> r = pow_scalar_exponent(a, b)) return nb::cast(*r);
          std::optional<Tensor> t = operand(b, a, op);
          if (!t) return not_implemented();
          return nb::cast(F(a, *t));
        }
      },
      nb::is_operator());
  if (!rname) return;
  c.def(
      rname, [op](const Tensor& a, double b) { return F(vk::scalar_like(b, a, op), a); },
      nb::is_operator());
  c.def(
      rname,
      [op](const Tensor& a, nb::handle b) -> nb::object {
        std::optional<Tensor> t = operand(b, a, op);
        if (!t) return not_implemented();
        return nb::cast(F(*t, a));
      },
      nb::is_operator());
}

// In-place operators (x += y) write into x, as the methods (x.add_(y)) and PyTorch do: views of x
// see the new values, and a write into a view reaches its base (ops/inplace.h). y[i] += v runs as
// t = y[i]; t += v; y[i] = t: the write into t already reached y, and the assignment writes the
// same values again, as in PyTorch.
template <Tensor (*Inplace)(const Tensor&, const Tensor&)>
void def_inplace_operator(nb::class_<Tensor>& c, const char* name, const char* op) {
  c.def(
      name,
      [op](nb::handle self, nb::handle other) -> nb::object {
        const Tensor& x = nb::cast<const Tensor&>(self);
        std::optional<Tensor> o = operand(other, x, op);
        if (!o) return not_implemented();
        return rebind(self, without_gil(heavy(x, *o), [&] { return Inplace(x, *o); }));
      },
      nb::is_operator());
}

Tensor add_1(const Tensor& x, const Tensor& o) { return vk::add_(x, o); }
Tensor sub_1(const Tensor& x, const Tensor& o) { return vk::sub_(x, o); }
Tensor mul_1(const Tensor& x, const Tensor& o) { return vk::mul_(x, o); }
Tensor div_1(const Tensor& x, const Tensor& o) { return vk::div_(x, o); }

// x.op_(other) returns x itself (the same Python object), as in PyTorch.
template <Tensor (*Inplace)(const Tensor&, const Tensor&)>
void def_inplace_method(nb::class_<Tensor>& c, const char* name) {
  c.def(
      name,
      [name](nb::handle self, nb::handle other) -> nb::object {
        const Tensor& x = nb::cast<const Tensor&>(self);
        std::optional<Tensor> o = operand(other, x, name);
        if (!o) throw nb::type_error("expected a tensor, a number or array data");
        return rebind(self, without_gil(heavy(x, *o), [&] { return Inplace(x, *o); }));
      },
      "other"_a);
}

// torch.utils.hooks.RemovableHandle: remove() takes the hook off its tensor (and is a no-op
// once the tensor is gone or the hook removed).
struct HookHandle {
  std::weak_ptr<vk::TensorImpl> tensor;
  uint64_t id;
  void remove() {
    if (auto impl = tensor.lock()) Tensor(std::move(impl)).remove_hook(id);
  }
};

}  // namespace

std::string op_label(const Tensor& t) {
  if (!t.op()) return "leaf";
  if (t.attrs().custom) return t.attrs().custom->name;
  return std::string(t.op()->name);
}

std::string backward_name(const Tensor& t) {
  if (!t.op()) return "AccumulateGrad";
  std::string name = camel(op_label(t));
  return ends_with(name, "Backward") && t.attrs().custom ? name : name + "Backward";
}

void bind_tensor(nb::module_& m, nb::class_<Tensor>& c) {
  // ---- vk.Size (porting, issue #15) ----
  m.def(
      "_set_size_type",
      [](nb::handle type) {
        if (!PyType_Check(type.ptr()) ||
            !PyType_IsSubtype((PyTypeObject*)type.ptr(), &PyTuple_Type))
          throw nb::type_error("_set_size_type: expected a subclass of tuple");
        Py_XDECREF(g_size_type);
        g_size_type = type.inc_ref().ptr();
      },
      "type"_a, "Makes Tensor.shape and Tensor.size() return `type` (vk.Size), a tuple subclass.");

  // ---- grad_fn ----
  nb::class_<GradFn>(m, "Node", "The op that produced a tensor (tensor.grad_fn).")
      .def_prop_ro("name", [](const GradFn& f) { return backward_name(f.t); })
      .def_prop_ro(
          "op", [](const GradFn& f) { return op_label(f.t); },
          "the op's name in the op table (a custom op's own name)")
      .def_prop_ro("next_functions",
                   [](const GradFn& f) {
                     nb::list out;
                     for (const Tensor& p : f.t.parents()) {
                       nb::object fn = nb::none();
                       if (p.op())
                         fn = nb::cast(GradFn{p});
                       else if (p.requires_grad())
                         fn = nb::cast(GradFn{p});
                       out.append(nb::make_tuple(fn, 0));
                     }
                     return nb::tuple(out);
                   })
      .def_prop_ro("variable",
                   [](const GradFn& f) -> nb::object {
                     if (f.t.op()) return nb::none();
                     return nb::cast(f.t);
                   })
      .def("__repr__",
           [](const GradFn& f) {
             std::string r =
                 backward_name(f.t);  // (not "<" + ... + ">": GCC 12 -Wrestrict false positive)
             r.insert(r.begin(), '<');
             r.push_back('>');
             return r;
           })
      .def("__eq__", [](const GradFn& a, const GradFn& b) { return a.t.same(b.t); })
      .def("__hash__", [](const GradFn& f) { return (intptr_t)f.t.impl() >> 4; });

  nb::class_<HookHandle>(m, "RemovableHandle").def("remove", &HookHandle::remove);

  // ---- construction ----
  c.def(
      "__init__",
      [](Tensor* self, nb::handle data, bool requires_grad, nb::handle dtype) {
        DType dt = dtype.is_none() ? vk::default_float_dtype() : to_dtype(dtype);
        VK_CHECK(vk::is_floating(dt), DTypeError,
                 "Tensor(): dtype must be float32 or float64, got ", vk::dtype_name(dt),
                 "; use vkml.tensor() for integer or bool data");
        Tensor t = tensor_from_py(data, dt);
        if (requires_grad) t.set_requires_grad(true);
        new (self) Tensor(std::move(t));
      },
      "data"_a, "requires_grad"_a = false, "dtype"_a = nb::none(),
      "A leaf tensor holding a copy of `data` (float32 unless dtype=float64).");
  c.def_static(
      "_make_subclass",
      [](nb::handle type, const Tensor& data, bool requires_grad) {
        VK_CHECK(
            PyType_Check(type.ptr()) && PyType_IsSubtype((PyTypeObject*)type.ptr(),
                                                         (PyTypeObject*)nb::type<Tensor>().ptr()),
            RuntimeError, "_make_subclass: expected a subclass of Tensor");
        nb::object inst = nb::inst_alloc(type);
        Tensor* p = nb::inst_ptr<Tensor>(inst);
        new (p) Tensor(data.detach());
        nb::inst_mark_ready(inst);
        if (requires_grad) p->set_requires_grad(true);
        return inst;
      },
      "cls"_a, "data"_a, "requires_grad"_a = false,
      "An instance of `cls` (a Tensor subclass) sharing data's memory, as a new leaf.");

  // ---- properties ----
  c.def_prop_ro("shape", [](const Tensor& t) { return size_object(t.shape()); });
  c.def_prop_ro("dtype", [](const Tensor& t) { return t.dtype(); });
  c.def_prop_ro("ndim", [](const Tensor& t) { return t.ndim(); });
  c.def_prop_ro("device", [](const Tensor& t) { return t.device(); });
  c.def_prop_ro("is_cpu", [](const Tensor& t) { return t.device().is_cpu(); });
  c.def_prop_ro("is_cuda", [](const Tensor&) { return false; });
  c.def_prop_ro("itemsize", [](const Tensor& t) { return vk::dtype_size(t.dtype()); });
  c.def_prop_ro("nbytes", [](const Tensor& t) {
    // In Python ints: an expanded view can count more bytes than int64 holds.
    return nb::int_(t.numel()) * nb::int_(vk::dtype_size(t.dtype()));
  });
  c.def_prop_rw(
      "requires_grad", [](nb::handle self) { return refreshed(self).requires_grad(); },
      [](Tensor& t, bool v) { exclusive([&] { t.set_requires_grad(v); }); });
  c.def_prop_rw(
      "grad",
      [](const Tensor& t) -> nb::object {
        Tensor g = t.grad();
        if (!g.defined()) return nb::none();
        return nb::cast(g);
      },
      [](Tensor& t, nb::handle g) {
        if (g.is_none()) {
          t.set_grad(Tensor());
          return;
        }
        Tensor v = as_tensor(g);
        VK_CHECK(v.shape() == t.shape(), ShapeError, "assigned grad has shape ",
                 vk::shape_str(v.shape()), " but the tensor has shape ", vk::shape_str(t.shape()));
        VK_CHECK(v.dtype() == t.dtype(), DTypeError, "assigned grad has dtype ",
                 vk::dtype_name(v.dtype()), " but the tensor has dtype ",
                 vk::dtype_name(t.dtype()));
        t.set_grad(v);
      },
      nb::arg("value").none());
  c.def_prop_ro("is_leaf", [](nb::handle self) { return refreshed(self).is_leaf(); });
  c.def_prop_ro("grad_fn", [](nb::handle self) { return grad_fn_of(refreshed(self)); });
  c.def_prop_ro("retains_grad", [](const Tensor& t) { return t.retains_grad(); });
  c.def_prop_ro("_version", [](const Tensor& t) { return t.version(); });
  c.def_prop_rw(
      "data", [](const Tensor& t) { return t.detach(); },
      [](Tensor& t, const Tensor& v) {
        // Swaps the memory and geometry under t, keeping its identity and autograd
        // flags (PyTorch's `p.data = ...`).
        exclusive([&] {
          vk::TensorImpl* impl = t.impl();
          impl->storage = v.storage();
          impl->shape = v.shape();
          impl->strides = v.strides();
          impl->offset = v.offset();
          impl->dtype = v.dtype();
          impl->own_version = v.impl()->own_version;  // v's memory as v saw it
        });
      });

  // ---- sizes ----
  c.def("dim", [](const Tensor& t) { return t.ndim(); });
  c.def("numel", [](const Tensor& t) { return t.numel(); });
  c.def("nelement", [](const Tensor& t) { return t.numel(); });
  c.def(
      "size",
      [](const Tensor& t, nb::handle dim) -> nb::object {
        if (dim.is_none()) return size_object(t.shape());
        return nb::int_(t.size(nb::cast<int64_t>(dim)));
      },
      "dim"_a = nb::none());
  c.def(
      "stride",
      [](const Tensor& t, nb::handle dim) -> nb::object {
        if (dim.is_none()) return shape_tuple(t.strides());
        return nb::int_(t.strides()[vk::wrap_dim(nb::cast<int64_t>(dim), t.ndim(), "stride")]);
      },
      "dim"_a = nb::none());
  c.def("storage_offset", [](const Tensor& t) { return t.offset(); });
  c.def("is_contiguous", [](const Tensor& t) { return t.is_contiguous(); });
  c.def("is_floating_point", [](const Tensor& t) { return vk::is_floating(t.dtype()); });
  c.def("element_size", [](const Tensor& t) { return vk::dtype_size(t.dtype()); });
  c.def("data_ptr", [](const Tensor& t) { return (uintptr_t)t.raw_data(); });
  // The identity of the C++ tensor behind this Python object (torch's name): a graph walk
  // (grad_fn.next_functions[i][0].variable) returns new Python objects for the same leaves.
  c.def_prop_ro("_cdata", [](const Tensor& t) { return (uintptr_t)t.impl(); });
  c.def("__len__", [](const Tensor& t) {
    if (t.ndim() == 0) throw nb::type_error("len() of a 0-d tensor");
    return t.shape()[0];
  });

  // ---- conversions ----
  c.def("item", [](const Tensor& t) { return item(t); });
  c.def("tolist", [](const Tensor& t) { return tolist(t); });
  c.def(
      "numpy", [](const Tensor& t, bool force) { return to_numpy(t, force); }, "force"_a = false,
      "A numpy array sharing this tensor's memory (no copy).");
  c.def(
      "__array__",
      [](const Tensor& t, nb::handle dtype, nb::handle copy) {
        nb::object arr = to_numpy(t, false);
        if (!dtype.is_none()) arr = arr.attr("astype")(dtype, "copy"_a = false);
        if (!copy.is_none() && nb::cast<bool>(copy)) arr = arr.attr("copy")();
        return arr;
      },
      "dtype"_a = nb::none(), "copy"_a = nb::none());
  c.def("__dlpack__", [](const Tensor& t, nb::kwargs kwargs) {
    VK_CHECK(!t.requires_grad(), RuntimeError,
             "Can't export tensors that require gradient, use tensor.detach()");
    return dlpack_ndarray(t).attr("__dlpack__")(**kwargs);
  });
  c.def("__dlpack_device__", [](const Tensor& t) {
    const vk::Device d = t.device();
    if (d.is_cpu()) return nb::make_tuple(1, 0);                              // kDLCPU
    if (d.type == vk::DeviceType::Vulkan) return nb::make_tuple(7, d.index);  // kDLVulkan
    throw vk::DeviceError("__dlpack_device__: the " + vk::device_name(d) +
                          " device has no DLPack device type");
  });
  c.def("__bool__", [](const Tensor& t) {
    VK_CHECK(t.numel() == 1, RuntimeError, "Boolean value of Tensor with ", t.numel(),
             " values is ambiguous");
    return nb::cast<bool>(nb::bool_(item(t)));
  });
  c.def("__float__", [](const Tensor& t) { return nb::cast<double>(nb::float_(item(t))); });
  c.def("__int__", [](const Tensor& t) { return nb::int_(item(t)); });
  c.def("__index__", [](const Tensor& t) {
    if (vk::is_floating(t.dtype()) || t.numel() != 1)
      throw nb::type_error("only integer tensors of a single element can be converted to an index");
    return nb::int_(item(t));
  });
  c.def("__hash__", [](nb::handle self) { return (intptr_t)self.ptr() >> 4; });
  c.def("__iter__", [](const Tensor& t) {
    if (t.ndim() == 0) throw nb::type_error("iteration over a 0-d tensor");
    nb::list out;
    for (int64_t i = 0; i < t.shape()[0]; ++i) out.append(nb::cast(vk::select(t, 0, i)));
    return nb::iter(out);
  });

  // ---- dtype and device conversion ----
  // to(dtype), to(device), to(device, dtype), to(tensor) (its dtype and device), with keywords as
  // torch's; self when nothing changes and copy is false.
  c.def("to", [](nb::handle self, nb::args args, nb::kwargs kwargs) -> nb::object {
    const Tensor& t = nb::cast<const Tensor&>(self);
    std::optional<DType> dt;
    std::optional<vk::Device> device;
    bool copy = false;
    auto take = [&](nb::handle a, bool is_device) {
      if (a.is_none()) return;
      if (nb::isinstance<Tensor>(a)) {
        dt = nb::cast<const Tensor&>(a).dtype();
        device = nb::cast<const Tensor&>(a).device();
      } else if (is_device || is_device_like(a)) {
        device = to_device_arg(a, vk::kCPU);
      } else if (nb::isinstance<nb::str>(a) &&
                 nb::cast<std::string>(a).find(':') != std::string::npos) {
        device = to_device_arg(a, vk::kCPU);  // "cuda:0": DeviceError naming it
      } else if (nb::isinstance<nb::str>(a)) {
        const std::string s = nb::cast<std::string>(a);
        if (s == "cuda" || s == "mps" || s == "xpu" || s == "meta")
          device = to_device_arg(a, vk::kCPU);  // DeviceError: vkml has no such device
        else
          dt = to_dtype(a);
      } else {
        dt = to_dtype(a);
      }
    };
    for (nb::handle a : args) take(a, false);
    for (auto [k, v] : kwargs) {
      std::string key = nb::cast<std::string>(k);
      if (key == "dtype" || key == "device")
        take(v, key == "device");
      else if (key == "copy")
        copy = nb::cast<bool>(v);
      else if (key != "non_blocking" && key != "memory_format")
        throw nb::type_error(("to(): unexpected keyword argument '" + key + "'").c_str());
    }
    const bool new_dtype = dt && *dt != t.dtype();
    const bool new_device = device && *device != t.device();
    if (!new_dtype && !new_device && !copy) return nb::borrow(self);
    Tensor r = without_gil(heavy(t), [&] {
      Tensor moved = new_device ? vk::to_device(t, *device) : t;
      if (new_dtype) return vk::cast(moved, *dt);
      return new_device ? moved : vk::clone(moved);
    });
    return nb::cast(r);
  });
  auto def_cast = [&](const char* name, DType dt) {
    c.def(name, [dt](nb::handle self) -> nb::object {
      const Tensor& t = nb::cast<const Tensor&>(self);
      if (t.dtype() == dt) return nb::borrow(self);
      return nb::cast(vk::cast(t, dt));
    });
  };
  def_cast("float", DType::Float32);
  def_cast("double", DType::Float64);
  def_cast("long", DType::Int64);
  def_cast("int", DType::Int32);
  def_cast("bool", DType::Bool);
  def_cast("half", DType::Float16);
  def_cast("bfloat16", DType::BFloat16);
  def_cast("byte", DType::UInt8);
  def_cast("char", DType::Int8);
  def_cast("short", DType::Int16);
  c.def(
      "type_as",
      [](nb::handle self, const Tensor& other) -> nb::object {
        const Tensor& t = nb::cast<const Tensor&>(self);
        if (t.dtype() == other.dtype()) return nb::borrow(self);
        return nb::cast(vk::cast(t, other.dtype()));
      },
      "other"_a);
  c.def("cpu", [](nb::handle self) -> nb::object {
    const Tensor& t = nb::cast<const Tensor&>(self);
    if (t.device().is_cpu()) return nb::borrow(self);
    return nb::cast(on_device(t, vk::kCPU));
  });
  c.def("cuda", [](const Tensor&, nb::args, nb::kwargs) {
    throw vk::RuntimeError("vkml has no CUDA backend; tensors live on the CPU");
  });

  // ---- autograd ----
  c.def(
      "backward",
      [](nb::handle self, nb::handle gradient, std::optional<bool> retain_graph, bool create_graph,
         nb::handle inputs) {
        const Tensor& t = refreshed(self);
        Tensor g;
        if (!gradient.is_none()) {
          std::optional<Tensor> o = operand(gradient, t, "backward");
          if (!o)
            throw nb::type_error("backward(): gradient must be a tensor, a number or array data");
          g = *o;
        }
        if (inputs.is_none()) {
          without_gil(true, [&] { vk::autograd::backward(t, g, retain_graph, create_graph); });
          return;
        }
        std::vector<Tensor> ins;
        if (nb::isinstance<Tensor>(inputs))
          ins.push_back(nb::cast<Tensor>(inputs));
        else
          for (nb::handle h : inputs) ins.push_back(nb::cast<Tensor>(h));
        without_gil(true, [&] {
          std::vector<Tensor> gs = vk::autograd::grad(
              {t}, ins, g.defined() ? std::vector<Tensor>{g} : std::vector<Tensor>{}, retain_graph,
              create_graph, true);
          for (size_t i = 0; i < ins.size(); ++i)
            if (gs[i].defined()) vk::autograd::accumulate_grad(ins[i], gs[i], create_graph);
        });
      },
      "gradient"_a = nb::none(), "retain_graph"_a = nb::none(), "create_graph"_a = false,
      "inputs"_a = nb::none(),
      "Accumulates d(self)/d(leaf) into every leaf's .grad (self must have one element unless "
      "`gradient` is given).");
  c.def("detach", [](const Tensor& t) { return t.detach(); });
  c.def("detach_", [](nb::handle self) {
    // Cuts this tensor out of its graph, in place.
    Tensor& t = nb::cast<Tensor&>(self);
    exclusive([&] { t = t.detach(); });
    return nb::borrow(self);
  });
  c.def(
      "requires_grad_",
      [](nb::handle self, bool requires_grad) {
        Tensor& t = nb::cast<Tensor&>(self);
        exclusive([&] { t.set_requires_grad(requires_grad); });
        return nb::borrow(self);
      },
      "requires_grad"_a = true);
  c.def("retain_grad", [](nb::handle self) {
    Tensor& t = refreshed(self);
    exclusive([&] { t.retain_grad(); });
  });
  c.def(
      "register_hook",
      [](nb::handle self, nb::handle fn) {
        Tensor& t = refreshed(self);
        PyRef f(fn);
        DType dt = t.dtype();
        uint64_t id = t.register_hook([f, dt](const Tensor& g) -> Tensor {
          nb::gil_scoped_acquire gil;
          nb::object r = f.get()(g);
          if (r.is_none()) return Tensor();
          return as_tensor(r, dt);
        });
        return HookHandle{t.impl_ptr(), id};
      },
      "hook"_a,
      "hook(grad) runs when the gradient reaches this tensor in backward; it may return a "
      "replacement gradient. Returns a handle whose remove() disables the hook.");
  // vkml/_porting_last.py's Tensor.register_post_accumulate_grad_hook passes the tensor's own
  // Python object to the user's hook (torch's: parameters are dict keys by identity)
  c.def(
      "_register_post_accumulate_grad_hook",
      [](Tensor& t, nb::handle fn) {
        if (!PyCallable_Check(fn.ptr()))
          throw nb::type_error("register_post_accumulate_grad_hook(): hook must be callable");
        PyRef f(fn);
        uint64_t id = t.register_post_accumulate_hook([f](const Tensor& leaf) -> Tensor {
          nb::gil_scoped_acquire gil;
          f.get()(leaf);
          return Tensor();
        });
        return HookHandle{t.impl_ptr(), id};
      },
      "hook"_a);

  // ---- arithmetic operators ----
  def_binary<f_add>(c, "__add__", "__radd__", "add");
  def_binary<f_sub>(c, "__sub__", "__rsub__", "sub");
  def_binary<f_mul>(c, "__mul__", "__rmul__", "mul");
  def_binary<f_div>(c, "__truediv__", "__rtruediv__", "div");
  def_binary<f_pow, Binary::Pow>(c, "__pow__", "__rpow__", "pow");
  def_binary<f_matmul>(c, "__matmul__", "__rmatmul__", "matmul");
  def_binary<f_eq, Binary::Compare>(c, "__eq__", nullptr, "eq");
  def_binary<f_ne, Binary::Compare>(c, "__ne__", nullptr, "ne");
  def_binary<f_lt, Binary::Compare>(c, "__lt__", nullptr, "lt");
  def_binary<f_le, Binary::Compare>(c, "__le__", nullptr, "le");
  def_binary<f_gt, Binary::Compare>(c, "__gt__", nullptr, "gt");
  def_binary<f_ge, Binary::Compare>(c, "__ge__", nullptr, "ge");
  def_binary<f_and>(c, "__and__", "__rand__", "bitwise_and");
  def_binary<f_or>(c, "__or__", "__ror__", "bitwise_or");
  def_binary<f_xor>(c, "__xor__", "__rxor__", "bitwise_xor");
  def_binary<f_lshift>(c, "__lshift__", "__rlshift__", "bitwise_left_shift");
  def_binary<f_rshift>(c, "__rshift__", "__rrshift__", "bitwise_right_shift");
  def_binary<f_floordiv>(c, "__floordiv__", "__rfloordiv__", "floor_divide");
  def_binary<f_mod>(c, "__mod__", "__rmod__", "remainder");
  c.def("__neg__", [](const Tensor& a) { return vk::neg(a); });
  c.def("__pos__", [](nb::handle self) { return nb::borrow(self); });
  c.def("__abs__", [](const Tensor& a) { return vk::abs(a); });
  c.def("__invert__", [](const Tensor& a) {
    VK_CHECK(a.dtype() == DType::Bool, DTypeError, "~ (logical not) expects a bool tensor, got ",
             vk::dtype_name(a.dtype()));
    return vk::eq(a, vk::zeros({}, DType::Bool));
  });
  def_inplace_operator<add_1>(c, "__iadd__", "add_");
  def_inplace_operator<sub_1>(c, "__isub__", "sub_");
  def_inplace_operator<mul_1>(c, "__imul__", "mul_");
  def_inplace_operator<div_1>(c, "__itruediv__", "div_");

  // ---- in-place methods ----
  c.def(
      "add_",
      [](nb::handle self, nb::handle other, nb::handle alpha) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        std::optional<Tensor> o = operand(other, x, "add_");
        if (!o) throw nb::type_error("add_(): expected a tensor, a number or array data");
        Tensor y = scaled_by_alpha(x, *o, to_scalar(alpha, "add_"), "add_");
        return rebind(self, without_gil(heavy(x, y), [&] { return vk::add_(x, y); }));
      },
      "other"_a, "alpha"_a = 1);
  def_inplace_method<sub_1>(c, "sub_");
  def_inplace_method<mul_1>(c, "mul_");
  def_inplace_method<div_1>(c, "div_");
  c.def("zero_",
        [](nb::handle self) { return rebind(self, vk::zero_(nb::cast<const Tensor&>(self))); });
  c.def(
      "fill_",
      [](nb::handle self, nb::handle value) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        if (nb::isinstance<Tensor>(value))
          return rebind(self, vk::copy_(x, nb::cast<const Tensor&>(value)));
        return rebind(self, vk::fill_(x, to_scalar(value, "fill_")));
      },
      "value"_a);
  c.def(
      "copy_",
      [](nb::handle self, nb::handle src) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        Tensor s = as_tensor(src);
        return rebind(self, without_gil(heavy(x, s), [&] { return vk::copy_(x, s); }));
      },
      "src"_a);
  c.def(
      "clamp_",
      [](nb::handle self, nb::handle min, nb::handle max) {
        VK_CHECK(!min.is_none() || !max.is_none(), RuntimeError,
                 "clamp_(): at least one of min and max must be given");
        return rebind(self, vk::clamp_(nb::cast<const Tensor&>(self), opt_scalar(min, "clamp_"),
                                       opt_scalar(max, "clamp_")));
      },
      "min"_a = nb::none(), "max"_a = nb::none());
  c.def(
      "uniform_",
      [](nb::handle self, double from, double to, nb::handle generator) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        // As torch: the bounds and the width must be finite in x's dtype, and from <= to.
        const double max = x.dtype() == DType::Float32 ? std::numeric_limits<float>::max()
                                                       : std::numeric_limits<double>::max();
        VK_CHECK(std::abs(from) <= max && std::abs(to) <= max && std::abs(to - from) <= max,
                 RuntimeError, "uniform_: the range [", from, ", ", to,
                 ") is out of bounds for dtype ", vk::dtype_name(x.dtype()));
        VK_CHECK(from <= to, RuntimeError,
                 "uniform_ expects to return a [from, to) range, but found from=", from,
                 " > to=", to);
        vk::Generator* gen = generator_arg(generator, "uniform_");
        // On x's device, from `generator` (issue 15 item 3); refused for a tensor that requires
        // grad while grad mode is on, as every in-place write.
        return rebind(self, vk::inplace(x, {}, "uniform_", [&] {
                        return vk::rand(x.shape(), x.dtype(), x.device(), gen) * (to - from) + from;
                      }));
      },
      "from"_a = 0.0, "to"_a = 1.0, nb::kw_only(), "generator"_a = nb::none(),
      "Fills with samples of U[from, to) (no graph).");
  c.def(
      "normal_",
      [](nb::handle self, double mean, double std, nb::handle generator) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        VK_CHECK(std >= 0.0, RuntimeError, "normal_ expects std >= 0.0, but found std ", std);
        vk::Generator* gen = generator_arg(generator, "normal_");
        return rebind(self, vk::inplace(x, {}, "normal_", [&] {
                        return vk::randn(x.shape(), x.dtype(), x.device(), gen) * std + mean;
                      }));
      },
      "mean"_a = 0.0, "std"_a = 1.0, nb::kw_only(), "generator"_a = nb::none(),
      "Fills with samples of N(mean, std^2) (no graph).");

  // ---- indexing ----
  c.def(
      "__getitem__",
      [](const Tensor& t, nb::handle idx) {
        if (PyLong_CheckExact(idx.ptr())) {  // fast path: t[i]
          long long i = PyLong_AsLongLong(idx.ptr());
          if (i == -1 && PyErr_Occurred()) throw nb::python_error();
          return vk::index(t, {vk::IndexItem::integer(i)});
        }
        std::vector<vk::IndexItem> items = parse_index(idx);
        return without_gil(heavy(t), [&] { return vk::index(t, items); });
      },
      nb::arg("index").none());
  c.def(
      "__setitem__",
      [](nb::handle self, nb::handle idx, nb::handle value) {
        const Tensor& t = nb::cast<const Tensor&>(self);
        std::vector<vk::IndexItem> items = parse_index(idx);
        // A number converts to t's dtype as fill_ does (2**40 into int32 raises, as in torch).
        std::optional<vk::Scalar> s = to_scalar_opt(value, "index assignment");
        std::optional<Tensor> v =
            s ? vk::scalar_tensor(*s, t.dtype(), "index assignment") : operand(value, t, "index");
        if (!v) throw nb::type_error("index assignment: expected a tensor, a number or array data");
        rebind(self, without_gil(heavy(t), [&] { return vk::index_put_(t, items, *v); }));
      },
      nb::arg("index").none(), nb::arg("value"));
}

}  // namespace vkpy
