"""vk.amp: torch.amp's autocast and GradScaler (#19).

autocast(device_type, dtype) enters an autocast region of the device type ("cpu" or "vulkan") on
this thread: the core's dispatch casts the inputs of each op as its policy says (matmul, addmm,
conv2d and lstm_cell in the region's dtype; softmax, log_softmax, norms, sums and exp/log/pow in
float32; the rest in their inputs' dtypes; ops/autocast.cpp holds the list, docs/ops.md shows it
per op). The casts are recorded, so gradients flow back to float32 leaves in float32; backward
itself runs outside any region (each rule in its forward's dtypes). One policy on every device:
PyTorch's CUDA one. PyTorch's CPU policy keeps softmax and layer_norm in bfloat16; vkml computes
them in float32 (safer, and what the CUDA policy does). "cuda" is not a vkml device: as torch
without CUDA, autocast("cuda") and GradScaler("cuda") warn and disable themselves.

GradScaler scales the loss, unscales the gradients before the step (skipping the step when one
is inf or NaN), and grows or backs off the scale as torch's does."""

import functools
import warnings
from collections import abc

from .. import _C
from .._C import Tensor, dtype
from .._grad_mode import no_grad

__all__ = ["GradScaler", "autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_DEVICE_TYPES = ("cpu", "vulkan")
_NO_CUDA = ("User provided device_type of 'cuda', but CUDA is not available (vkml's GPU device is "
            "'vulkan'). Disabling")


def is_autocast_available(device_type):
    """Whether autocast can run on the device type: "cpu" and "vulkan"."""
    return device_type in _DEVICE_TYPES


def get_autocast_dtype(device_type):
    """The dtype an autocast region of the device type casts matrix products to (bfloat16 on the
    CPU and float16 on the Vulkan device unless a region said otherwise, as torch's defaults)."""
    if device_type not in _DEVICE_TYPES:
        return dtype.float16
    return _C._autocast_state(device_type)[1]


def is_autocast_enabled(device_type=None):
    """Whether this thread is in an autocast region of the device type (without one: "cuda",
    as torch's, which is never enabled here)."""
    if device_type is None or device_type not in _DEVICE_TYPES:
        return False
    return _C._autocast_state(device_type)[0]


def set_autocast_enabled(device_type, enabled=None):
    """torch.set_autocast_enabled(device_type, enabled) (or the older (enabled) for "cuda")."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    if device_type in _DEVICE_TYPES:
        _C._set_autocast_state(device_type, bool(enabled), get_autocast_dtype(device_type))


def set_autocast_dtype(device_type, dtype_):
    if device_type in _DEVICE_TYPES:
        _C._set_autocast_state(device_type, is_autocast_enabled(device_type), dtype_)


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context
    manager and decorator; regions nest (an inner enabled=False region runs in full precision)
    and are per thread. Within the outermost region a weight (a float32 leaf requiring grad) is
    cast to the low precision once and the cast reused (cache_enabled=False casts it at every
    use; None keeps vk.is_autocast_cache_enabled()); leaving that region clears the cache."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else get_autocast_dtype(device_type)
        self._enabled = bool(enabled)
        self._cache_enabled = cache_enabled
        if device_type == "cuda":
            if self._enabled:
                warnings.warn(_NO_CUDA, UserWarning, stacklevel=2)
            self._enabled = False
        elif device_type not in _DEVICE_TYPES:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'"
                               f" (vkml has {', '.join(_DEVICE_TYPES)})")
        elif self.fast_dtype not in (_C.dtype.float16, _C.dtype.bfloat16):
            if self._enabled:
                warnings.warn(f"In {device_type} autocast, but the target dtype {self.fast_dtype} is "
                              "not supported (float16 and bfloat16 are). Disabling autocast.",
                              UserWarning, stacklevel=2)
            self._enabled = False
        self._saved = []

    def __enter__(self):
        if self.device in _DEVICE_TYPES:
            self._saved.append((_C._autocast_state(self.device), _C._autocast_cache_enabled()))
            fast = self.fast_dtype if self.fast_dtype in (_C.dtype.float16, _C.dtype.bfloat16) \
                else self._saved[-1][0][1]
            _C._set_autocast_state(self.device, self._enabled, fast)
            if self._cache_enabled is not None:
                _C._set_autocast_cache_enabled(bool(self._cache_enabled))
            _C._autocast_enter_region()
        return self

    def __exit__(self, *exc):
        if self.device in _DEVICE_TYPES:
            state, cache_enabled = self._saved.pop()
            _C._autocast_exit_region()  # the outermost region's end clears the cache
            _C._set_autocast_state(self.device, *state)
            _C._set_autocast_cache_enabled(cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapped


def custom_fwd(fwd=None, *, device_type="cpu", cast_inputs=None):
    """torch.amp.custom_fwd: runs a custom Function's forward with its floating inputs cast to
    cast_inputs and autocast off (or, without cast_inputs, as called)."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def wrapped(*args, **kwargs):
        if cast_inputs is None or not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        cast = [a.to(cast_inputs) if isinstance(a, Tensor) and a.is_floating_point() else a
                for a in args]
        with autocast(device_type, enabled=False):
            return fwd(*cast, **kwargs)
    return wrapped


def custom_bwd(bwd=None, *, device_type="cpu"):
    """torch.amp.custom_bwd: backward runs outside autocast in vkml already."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd


# ---- GradScaler ----

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """torch.amp.GradScaler(device, init_scale, growth_factor, backoff_factor, growth_interval,
    enabled). scale(outputs) multiplies by the scale; unscale_(optimizer) divides the gradients
    by it and records whether any is inf or NaN; step(optimizer) unscales if needed and steps
    only when none was; update() halves the scale (backoff_factor) after such a step and doubles
    it (growth_factor) after growth_interval steps without one. The scale is a float32 tensor
    (as torch's); the inf checks read one value per step on the host."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = bool(enabled)
        if device == "cuda" and self._enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available "
                          "(vkml's GPU device is 'vulkan').  Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._scale = None  # made on first use, on the device of the first scaled output
        self._growth_tracker = 0
        self._states = {}

    def is_enabled(self):
        return self._enabled

    def _state(self, optimizer):
        return self._states.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def scale(self, outputs):
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._scale = _C.full((), self._init_scale, dtype=_C.dtype.float32,
                                      device=outputs.device)
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, abc.Iterable):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _require_scale(self, fn):
        if self._scale is None:
            raise AssertionError(f"Attempted {fn} but _scale is None.  This may indicate your "
                                 "script did not use scaler.scale(loss or outputs) earlier in the "
                                 "iteration.")

    def unscale_(self, optimizer):
        if not self._enabled:
            return
        self._require_scale("unscale_")
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = _C.zeros((), dtype=_C.dtype.float32, device=self._scale.device)
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype == _C.dtype.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    found_inf = found_inf + (~g.isfinite()).any().to(found_inf.device).float()
                    g.mul_(inv_scale.to(g.device))
        state["found_inf"] = found_inf
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._require_scale("step")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        retval = None
        if not state["found_inf"].item():
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return retval

    def update(self, new_scale=None):
        if not self._enabled:
            return
        self._require_scale("update")
        with no_grad():
            if new_scale is not None:
                value = new_scale.item() if isinstance(new_scale, Tensor) else float(new_scale)
                self._scale = _C.full((), value, dtype=_C.dtype.float32, device=self._scale.device)
            else:
                found = [s["found_inf"] for s in self._states.values() if s["found_inf"] is not None]
                if not found:
                    raise AssertionError("No inf checks were recorded prior to update.")
                if any(f.item() for f in found):
                    self._scale = self._scale * self._backoff_factor
                    self._growth_tracker = 0
                else:
                    self._growth_tracker += 1
                    if self._growth_tracker == self._growth_interval:
                        grown = self._scale * self._growth_factor
                        if grown.isfinite().item():
                            self._scale = grown
                        self._growth_tracker = 0
        self._states = {}

    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = _C.full((), self._init_scale, dtype=_C.dtype.float32,
                                  device=self._scale.device)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
