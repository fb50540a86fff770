// Typed errors. Every failure a user can cause is one of these, with a message that names the op
// and the shapes or values involved; the Python layer maps each to its Python exception.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace vk {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct DTypeError : Error {  // Python: vk.DTypeError (a TypeError)
  using Error::Error;
};
struct ShapeError : Error {  // Python: vk.ShapeError (a ValueError)
  using Error::Error;
};
// A size that cannot exist: a negative extent, or a count, stride or offset past int64. Python:
// vk.SizeError, a subclass of both vk.ShapeError (vkml's own contract for bad shapes) and
// RuntimeError (what torch raises for these, so code ported from torch catches it too).
struct SizeError : ShapeError {
  using ShapeError::ShapeError;
};
struct IndexError : Error {  // Python: IndexError
  using Error::Error;
};
struct NotImplementedError : Error {  // Python: NotImplementedError
  using Error::Error;
};
struct RuntimeError : Error {  // Python: RuntimeError
  using Error::Error;
};
// Tensors on different devices in one op, an unknown device name, host memory read on a GPU
// tensor, a device whose backend is missing. Python: vk.DeviceError, a RuntimeError (as torch's).
struct DeviceError : RuntimeError {
  using RuntimeError::RuntimeError;
};
// A singular matrix where an inverse or a solve needs a regular one (#15 linalg). Python:
// vk.linalg.LinAlgError, a RuntimeError (as torch.linalg.LinAlgError).
struct LinAlgError : RuntimeError {
  using RuntimeError::RuntimeError;
};
struct MemoryError : Error {  // Python: MemoryError
  using Error::Error;
};

namespace detail {
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// VK_CHECK(cond, ErrorType, parts...) throws ErrorType(parts streamed together) when cond fails.
#define VK_CHECK(cond, Type, ...)                                  \
  do {                                                             \
    if (!(cond)) throw ::vk::Type(::vk::detail::cat(__VA_ARGS__)); \
  } while (0)

}  // namespace vk
