"""torch's process-wide names that programs call beside the ops (issue #15, porting): layouts and
memory formats, the determinism switches, interop threads, warn-always, flush-denormal, the
build-info flags, newaxis, OutOfMemoryError. install() puts them in the vkml namespace and wraps
the creation functions and Tensor methods that take layout=, memory_format= or pin_memory=.

vkml tensors are strided and their fresh results row-major: layout= must be vk.strided (anything
else is NotImplementedError); every memory format gives the row-major result (values, shapes and
gradients are torch's, strides are not: `is_contiguous(memory_format=vk.channels_last)` reads the
actual strides); pin_memory= is accepted and does nothing (there is no CUDA host memory to pin).
vkml's kernels are deterministic whatever the switches say (fixed reduction orders, no float
atomics), so use_deterministic_algorithms only records the mode for its getters."""

import functools

from . import _C

Tensor = _C.Tensor


class layout:
    """torch.layout: vkml has one, vk.strided."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"vkml.{self._name}"

    def __reduce__(self):  # pickles as the module-level name, as torch's
        return self._name


class memory_format:
    """torch.memory_format: accepted everywhere torch takes one; results are row-major."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"vkml.{self._name}"

    def __reduce__(self):
        return self._name


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
newaxis = None
OutOfMemoryError = MemoryError  # what vkml raises when an allocation fails

# What this build has (torch.has_*): no LAPACK, MKL, OpenMP or FFT library behind vkml.
has_lapack = has_mkl = has_openmp = has_spectral = False


def _check(op, layout_=None, memory_format_=None):
    if layout_ is not None and layout_ is not strided:
        raise NotImplementedError(f"{op}: layout={layout_!r}: vkml tensors are strided only")
    if memory_format_ is not None and not isinstance(memory_format_, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be a vkml.memory_format, not "
                        f"{type(memory_format_).__name__}")


def _accepting(fn, op, names):
    """fn taking torch's keyword arguments `names` (of layout, memory_format, pin_memory) too;
    any other keyword still goes to fn (which refuses what torch's function would not take)."""
    @functools.wraps(fn)
    def made(*args, **kwargs):
        taken = {name: kwargs.pop(name) for name in names if name in kwargs}
        _check(op, taken.get("layout"), taken.get("memory_format"))
        return fn(*args, **kwargs)
    return made


def _with_memory_format(method, op):
    """Tensor.contiguous / clone taking memory_format= (the row-major result whatever it is)."""
    @functools.wraps(method)
    def made(self, *args, memory_format=None, **kwargs):
        if memory_format is not None:
            _check(op, None, memory_format)
        return method(self, *args, **kwargs)
    return made


def _channels_last_strides(shape):
    """The strides of a channels-last (N, C, spatial...) tensor of this shape."""
    n, c, spatial = shape[0], shape[1], shape[2:]
    strides, step = [0] * len(shape), c
    strides[1] = 1
    for d in range(len(shape) - 1, 1, -1):
        strides[d] = step
        step *= shape[d]
    strides[0] = step
    return strides


def _is_contiguous(is_contiguous):
    @functools.wraps(is_contiguous)
    def made(self, memory_format=None):
        if memory_format in (None, contiguous_format, preserve_format):
            return is_contiguous(self)
        _check("is_contiguous", None, memory_format)
        rank = 4 if memory_format is channels_last else 5
        if self.ndim != rank:
            return False
        want, have = _channels_last_strides(tuple(self.shape)), self.stride()
        # dims of size 1 may have any stride
        return all(s == 1 or w == h for s, w, h in zip(self.shape, want, have))
    return made


# ---- the determinism switches (vkml is deterministic in every mode) ----
_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Records the mode (torch.use_deterministic_algorithms). vkml's kernels are deterministic in
    either mode: bitwise the same results from run to run on one device, at any thread count."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    _deterministic["mode"], _deterministic["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """torch's 0/'default', 1/'warn', 2/'error' (as use_deterministic_algorithms)."""
    names = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in names:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = names[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


# ---- threads, warnings, denormals ----
_interop_threads = {"n": 1}
_warn_always = {"on": False}


def get_num_interop_threads():
    """vkml runs no inter-op pool (ops run in order on the calling thread): the value last set."""
    return _interop_threads["n"]


def set_num_interop_threads(n):
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise RuntimeError("Expected positive number of threads")
    _interop_threads["n"] = n


def init_num_threads():
    """torch.init_num_threads: vkml's pool starts on first use; nothing to do."""


def set_warn_always(b):
    _warn_always["on"] = bool(b)


def is_warn_always_enabled():
    return _warn_always["on"]


def set_flush_denormal(mode):
    """False: vkml does not switch the CPU's denormal handling (torch returns False where it
    cannot either)."""
    return False


def is_vulkan_available():
    from . import vulkan  # imported by vkml/__init__ before any call
    return vulkan.is_available()


# The functions that take layout= (and pin_memory=, memory_format=) in torch, by what they take.
_CREATION = ("zeros", "ones", "full", "arange", "rand", "randn", "randint", "eye", "linspace", "logspace")
_LIKE = ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like")
_NAMES = ("layout", "memory_format", "strided", "contiguous_format", "preserve_format", "channels_last",
          "channels_last_3d", "newaxis", "OutOfMemoryError", "has_lapack", "has_mkl", "has_openmp",
          "has_spectral", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
          "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
          "get_deterministic_debug_mode", "get_num_interop_threads", "set_num_interop_threads",
          "init_num_threads", "set_warn_always", "is_warn_always_enabled", "set_flush_denormal",
          "is_vulkan_available")


def install(namespace):
    """Puts the names into `namespace` (the vkml module's globals) and wraps the functions that
    take layout=, memory_format= or pin_memory= in torch."""
    for name in _NAMES:
        namespace[name] = globals()[name]
    for name in _CREATION:
        namespace[name] = _accepting(namespace[name], name, ("layout", "pin_memory"))
    namespace["empty"] = _accepting(namespace["empty"], "empty", ("layout", "pin_memory", "memory_format"))
    namespace["tensor"] = _accepting(namespace["tensor"], "tensor", ("pin_memory",))
    for name in _LIKE:
        namespace[name] = _accepting(namespace[name], name, ("layout", "pin_memory", "memory_format"))
    namespace["clone"] = _with_memory_format(namespace["clone"], "clone")
    Tensor.clone = _with_memory_format(Tensor.clone, "clone")
    Tensor.contiguous = _with_memory_format(Tensor.contiguous, "contiguous")
    Tensor.is_contiguous = _is_contiguous(Tensor.is_contiguous)
    Tensor.layout = property(lambda self: strided, doc="vk.strided: every vkml tensor is strided")
    namespace["cuda"].OutOfMemoryError = MemoryError
