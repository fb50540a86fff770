// vkml._C: the extension module. Each binding family lives in its own file.
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "common.h"

namespace vkpy {

nb::handle g_dtype_error;
nb::handle g_shape_error;
nb::handle g_size_error;
nb::handle g_device_error;
nb::handle g_linalg_error;  // solvers (#15 linalg)

void bind_dtypes_and_errors(nb::module_& m) {
  nb::enum_<DType>(m, "dtype", "The element type of a tensor.")
      .value("bool", DType::Bool)
      .value("int32", DType::Int32)
      .value("int64", DType::Int64)
      .value("float32", DType::Float32)
      .value("float64", DType::Float64)
      .value("uint8", DType::UInt8)
      .value("int8", DType::Int8)
      .value("int16", DType::Int16)
      .value("float16", DType::Float16)
      .value("bfloat16", DType::BFloat16)
      .def("__repr__", [](DType t) { return "vkml." + std::string(vk::dtype_name(t)); })
      .def("__str__", [](DType t) { return "vkml." + std::string(vk::dtype_name(t)); })
      .def_prop_ro("is_floating_point", [](DType t) { return vk::is_floating(t); })
      .def_prop_ro("itemsize", [](DType t) { return vk::dtype_size(t); })
      .def_prop_ro("is_signed", [](DType t) { return t != DType::Bool && t != DType::UInt8; })
      .def_prop_ro("is_complex", [](DType) { return false; })
      .def("to_real", [](DType t) { return t; });

  // vk::DTypeError -> vkml.DTypeError (a TypeError), vk::ShapeError -> vkml.ShapeError (a
  // ValueError); the others map onto Python's built-in exceptions. The C++ message is kept.
  g_dtype_error = PyErr_NewExceptionWithDoc(
      "vkml.DTypeError", "A dtype that an operation does not accept.", PyExc_TypeError, nullptr);
  g_shape_error = PyErr_NewExceptionWithDoc(
      "vkml.ShapeError", "Shapes that an operation does not accept.", PyExc_ValueError, nullptr);
  // vk::SizeError (a negative size, or one past int64) -> vkml.SizeError: both a vkml.ShapeError
  // and a RuntimeError, which is what torch raises for such sizes.
  nb::object size_bases = nb::make_tuple(g_shape_error, nb::handle(PyExc_RuntimeError));
  g_size_error = PyErr_NewExceptionWithDoc(
      "vkml.SizeError",
      "A size that cannot exist: a negative extent, or a count or stride past int64 "
      "(a vkml.ShapeError and a RuntimeError).",
      size_bases.ptr(), nullptr);
  // vk::DeviceError -> vkml.DeviceError, a RuntimeError (what torch raises for mixed devices).
  g_device_error = PyErr_NewExceptionWithDoc(
      "vkml.DeviceError",
      "Tensors on different devices in one op, an unknown device, or a device this build or "
      "machine does not have (a RuntimeError).",
      PyExc_RuntimeError, nullptr);
  m.attr("DeviceError") = g_device_error;
  // vk::LinAlgError (solvers, #15 linalg) -> vkml.linalg.LinAlgError, a RuntimeError (as torch's).
  g_linalg_error = PyErr_NewExceptionWithDoc(
      "vkml.linalg.LinAlgError",
      "A singular matrix where a solve or an inverse needs a regular one (a RuntimeError).",
      PyExc_RuntimeError, nullptr);
  m.attr("LinAlgError") = g_linalg_error;
  m.attr("DTypeError") = g_dtype_error;
  m.attr("ShapeError") = g_shape_error;
  m.attr("SizeError") = g_size_error;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const vk::DTypeError& e) {
      PyErr_SetString(g_dtype_error.ptr(), e.what());
    } catch (const vk::SizeError& e) {
      PyErr_SetString(g_size_error.ptr(), e.what());
    } catch (const vk::ShapeError& e) {
      PyErr_SetString(g_shape_error.ptr(), e.what());
    } catch (const vk::DeviceError& e) {
      PyErr_SetString(g_device_error.ptr(), e.what());
    } catch (const vk::LinAlgError& e) {  // solvers (#15 linalg)
      PyErr_SetString(g_linalg_error.ptr(), e.what());
    } catch (const vk::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const vk::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const vk::MemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const vk::Error& e) {  // vk::RuntimeError and any other vk error
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  // Throws the named C++ error: lets the tests check every mapping, including ones no op
  // currently raises.
  m.def(
      "_throw",
      [](const std::string& kind, const std::string& msg) {
        if (kind == "DTypeError") throw vk::DTypeError(msg);
        if (kind == "ShapeError") throw vk::ShapeError(msg);
        if (kind == "SizeError") throw vk::SizeError(msg);
        if (kind == "IndexError") throw vk::IndexError(msg);
        if (kind == "NotImplementedError") throw vk::NotImplementedError(msg);
        if (kind == "MemoryError") throw vk::MemoryError(msg);
        if (kind == "RuntimeError") throw vk::RuntimeError(msg);
        if (kind == "DeviceError") throw vk::DeviceError(msg);
        if (kind == "LinAlgError") throw vk::LinAlgError(msg);  // solvers (#15 linalg)
        if (kind == "Error") throw vk::Error(msg);
        if (kind == "bad_alloc") throw std::bad_alloc();
        throw std::runtime_error(msg);
      },
      "kind"_a, "message"_a);
}

}  // namespace vkpy

NB_MODULE(_C, m) {
  m.doc() = "vkml's C++ core: tensors, ops and autograd (use the `vkml` package)";
  // Python callables held by graph nodes (hooks, custom ops) may still be alive when the
  // interpreter exits; nanobind would report them as leaks. VKML_LEAK_WARNINGS=1 shows them.
  const char* warn = std::getenv("VKML_LEAK_WARNINGS");
  nb::set_leak_warnings(warn != nullptr && warn[0] == '1');
  vkpy::bind_dtypes_and_errors(m);
  vkpy::bind_devices(m);
  nb::class_<vkpy::Tensor> cls(m, "Tensor", nb::is_weak_referenceable());
  vkpy::bind_tensor(m, cls);
  vkpy::bind_functions(m, cls);
  vkpy::bind_autograd(m);
  vkpy::bind_nn(m);
  vkpy::bind_distributed(m);
}
