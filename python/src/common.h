// Shared declarations of the vkml._C extension: conversions between Python objects and vk
// types, the GIL policy, and the per-file binding entry points. The bindings are thin: every
// computation is a call into the C++ library; this layer only converts arguments.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "vkml/vkml.h"

namespace nb = nanobind;

namespace nanobind::detail {
// A Tensor argument (self included) notes the object that holds its node
// (vk::TensorImpl::handle): a recorded write through a view of that node rebinds that object to
// the node standing for its memory since (vkpy::rebind).
template <>
struct type_caster<vk::Tensor> : type_caster_base<vk::Tensor> {
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept {
    if (!type_caster_base<vk::Tensor>::from_python(src, flags, cleanup)) return false;
    vk::Tensor* held = *this;
    if (held && held->defined()) {
      std::atomic<vk::Tensor*>& h = held->impl()->handle;
      if (h.load(std::memory_order_relaxed) == nullptr) h.store(held, std::memory_order_relaxed);
    }
    return true;
  }
};
}  // namespace nanobind::detail

namespace vkpy {

using namespace nb::literals;
using vk::DType;
using vk::Shape;
using vk::Tensor;

// ---- dtypes ----
// A vk dtype from: a vkml dtype, a numpy dtype or scalar type, a Python type (float -> float64,
// int -> int64, bool -> bool, as numpy), or a name ("float32"). Anything else: DTypeError.
DType to_dtype(nb::handle h);
std::optional<DType> to_dtype_opt(nb::handle h);  // None -> nullopt
nb::object numpy_dtype(DType t);                  // numpy.dtype for a vk dtype

// ---- tensors from Python data ----
// A new tensor holding a copy of `data` (nested sequences, numpy arrays and scalars, vkml
// tensors, anything numpy.asarray accepts). Without `dtype`, the dtype is inferred as
// torch.tensor does: Python floats -> float32, ints -> int64, bools -> bool; numpy arrays keep
// theirs (float16 -> float32, other integer widths -> int64).
Tensor tensor_from_py(nb::handle data, std::optional<DType> dtype);
// `h` itself when it is a Tensor, else tensor_from_py(h, dtype).
Tensor as_tensor(nb::handle h, std::optional<DType> dtype = std::nullopt);
// A Python or numpy number as a vk::Scalar of its kind, as PyTorch reads it: bool -> bool; int
// -> int, exactly (one in [2^63, 2^64) as a big int, which only floating dtypes can hold; beyond
// that OverflowError naming `op`); float -> float; numpy integers -> int, numpy floats -> float,
// and numpy bool -> float (torch 2.13 reads np.bool_ as a float). nullopt for anything else.
std::optional<vk::Scalar> to_scalar_opt(nb::handle h, const char* op);
vk::Scalar to_scalar(nb::handle h, const char* op);  // TypeError naming `op` when not a number
std::optional<vk::Scalar> opt_scalar(nb::handle h, const char* op);  // None -> nullopt
// The other operand of a binary op with tensor `like`: a Tensor as is; a Python or numpy number
// as a 0-d tensor of the op's result dtype (vk::scalar_like: promotion by the number's kind, an
// int exact); an array or sequence as a constant tensor (of like's dtype when like is floating,
// on like's device).
// nullopt when `h` is nothing of the sort (the operator then returns NotImplemented).
std::optional<Tensor> operand(nb::handle h, const Tensor& like, const char* op);
// The operands of a comparison `a <op> b`, as operand(); comparisons are exact: an int32 tensor
// against an int that int32 cannot hold compares in int64 (PyTorch wraps the int into int32).
std::optional<std::pair<Tensor, Tensor>> compare_operands(const Tensor& a, nb::handle b,
                                                          const char* op);
bool is_py_scalar(nb::handle h);  // Python or numpy bool/int/float (not an array)
// x ** e for a Python (or numpy) number e goes through vk::pow(Tensor, Scalar): torch's rules of a
// scalar exponent (bool ** True, an integer tensor to a negative int raises). nullopt for other e.
std::optional<Tensor> pow_scalar_exponent(const Tensor& x, nb::handle e);
double scalar_value(nb::handle h);
// other * alpha for add/sub(other, alpha=...), in the dtype that x + other has, with PyTorch's
// checks: a float alpha needs a floating result, a bool alpha a bool result. `other` itself when
// alpha is 1.
Tensor scaled_by_alpha(const Tensor& x, const Tensor& other, const vk::Scalar& alpha,
                       const char* op);

// ---- shapes and dims ----
Shape to_shape(nb::handle h);                 // int or sequence of ints
Shape shape_from_args(const nb::args& args);  // f(2, 3) or f((2, 3)) or f([2, 3])
std::vector<int64_t> to_dims(nb::handle h);   // None -> {} (all), int -> {d}, sequence -> list
nb::tuple shape_tuple(const Shape& s);

// ---- numpy / DLPack export and import ----
nb::object to_numpy(const Tensor& t,
                    bool force);             // zero-copy view; RuntimeError with grad unless force
nb::object dlpack_ndarray(const Tensor& t);  // a nanobind nb_ndarray over t (zero-copy)
Tensor from_dlpack(nb::handle obj);          // zero-copy import
nb::object tolist(const Tensor& t);
nb::object item(const Tensor& t);

// ---- Python callables held by C++ closures ----
// A strong reference that may be dropped on any thread, with or without the GIL.
struct PyRef {
  std::shared_ptr<PyObject> obj;
  PyRef() = default;
  explicit PyRef(nb::handle h);
  nb::handle get() const { return nb::handle(obj.get()); }
};
// Converts what a Python gradient function returned into one Tensor per expected input
// (None -> undefined). A single tensor is accepted when one gradient is expected.
std::vector<Tensor> grads_from_py(nb::handle r, const std::vector<DType>& dtypes, const char* who);

// ---- GIL policy ----
// An op on a big tensor runs without the GIL, so that Python threads compute at once; a small one
// keeps it (releasing costs more than the op). `without_gil` is the one way to release it: it
// runs a C++ callable and hands back the callable's C++ result, which the binding converts to a
// Python object after the GIL is back. Inside, nothing touches a Python object (a hook or a
// custom function that calls Python takes the GIL itself).
//
// Sections without the GIL are counted, so that the few calls that rewrite a tensor's metadata
// in place (`.data = v`, `detach_()`, `requires_grad_()`, `retain_grad()`) can wait until no
// other thread is inside one that may be reading that very tensor (`exclusive`). While such a
// call waits, new sections keep the GIL, so the waiting call cannot starve.
inline constexpr int64_t kReleaseGilElements = 1 << 15;
inline bool heavy(const Tensor& a) { return a.numel() >= kReleaseGilElements; }
inline bool heavy(const Tensor& a, const Tensor& b) {
  return a.numel() + b.numel() >= kReleaseGilElements;
}

class GilFreeSection {  // use without_gil
 public:
  explicit GilFreeSection(bool release);
  ~GilFreeSection();
  GilFreeSection(const GilFreeSection&) = delete;
  GilFreeSection& operator=(const GilFreeSection&) = delete;

 private:
  std::optional<nb::gil_scoped_release> released_;
};

// fn() with the GIL released when `release` (and no metadata write is waiting); returns fn's
// result, which must be a C++ value: Python objects are made after the GIL is back.
template <class Fn>
auto without_gil(bool release, Fn&& fn) -> decltype(fn()) {
  using Result = std::decay_t<decltype(fn())>;
  static_assert(!std::is_base_of_v<nb::handle, Result>,
                "without_gil: return a C++ value and convert it once the GIL is back");
  GilFreeSection section(release);
  return fn();
}

// Runs `write` (holding the GIL) once no other thread is inside a section without the GIL.
void exclusive(const std::function<void()>& write);

// An in-place op's result is the tensor that now stands for the one written (a recorded write
// gives a new node over its memory, ops/inplace.h): the object the user holds takes it, so every
// name bound to that object sees the write and its history. After a write through a view
// (y[0].mul_(2)), the base's object takes the node that stands for the base's memory since.
// Returns the object.
nb::object rebind(nb::handle self, const Tensor& now);
// The tensor `self` holds, taken again first when a recorded write into its memory made it stale
// (a view taken before the write: vk::regenerated), so that its autograd attributes describe its
// values. Ops do this for their inputs themselves.
Tensor& refreshed(nb::handle self);

// ---- devices ----
// A vk::Device from a vkml.device or a string ("cpu", "vulkan:0"); None -> if_none. Anything
// else, or an unknown name: DeviceError.
vk::Device to_device_arg(nb::handle h, vk::Device if_none);
std::optional<vk::Device> to_device_opt(nb::handle h);  // None -> nullopt
bool is_device_like(nb::handle h);  // a vkml.device or a string that names a device
// Where creation functions put a tensor when no device= is given (vkml.set_default_device, as
// torch.set_default_device); the CPU unless set. Read and written with the GIL held.
vk::Device default_device();
// t moved to `device` (t itself when it is there already, or when device is nullopt).
Tensor on_device(Tensor t, std::optional<vk::Device> device);

// ---- random generators (issue 15 item 3; bind_random.cpp) ----
// The vk.Generator `h` holds; nullptr (the default generator) for None; TypeError naming op else.
vk::Generator* generator_arg(nb::handle h, const char* op);

// ---- op naming ----
std::string op_label(const Tensor& t);       // "mul", or a custom op's own name
std::string backward_name(const Tensor& t);  // "MulBackward"

// ---- binding entry points, one per file ----
void bind_dtypes_and_errors(nb::module_& m);
void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls);
void bind_functions(nb::module_& m, nb::class_<Tensor>& cls);
void bind_autograd(nb::module_& m);
void bind_nn(nb::module_& m);  // _nn, _optim, _io submodules
void bind_devices(nb::module_& m);
void bind_distributed(nb::module_& m);  // _distributed submodule (#17)

extern nb::handle g_dtype_error;  // vkml.DTypeError
extern nb::handle g_shape_error;  // vkml.ShapeError
extern nb::handle g_size_error;   // vkml.SizeError

}  // namespace vkpy
