"""vk.amp: torch.amp's GradScaler and autocast, for programs written for mixed precision.

vkml has no half precision yet (float16 / bfloat16 arrive with a later issue), so both run the
program in full precision, as torch does on a machine without the device asked for: enabled=False
is a pass-through, and enabled=True warns once and then behaves as enabled=False."""

import functools
import warnings

__all__ = ["GradScaler", "autocast", "is_autocast_available"]

_NO_HALF = "vkml has no half precision yet; {what} is disabled and the program runs in float32"


class GradScaler:
    """torch.amp.GradScaler, disabled: scale(loss) is loss, step(optimizer) is
    optimizer.step(), update() and unscale_() do nothing, get_scale() is 1.0."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if enabled:
            warnings.warn(_NO_HALF.format(what="GradScaler"), UserWarning, stacklevel=2)
        self._device = device
        self._enabled = False

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        pass

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        pass

    def get_scale(self):
        return 1.0

    def get_growth_factor(self):
        return 2.0

    def get_backoff_factor(self):
        return 0.5

    def get_growth_interval(self):
        return 2000

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        pass


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context
    manager and decorator that leaves every op in its own dtype (vkml has no half precision
    yet; enabled=True warns)."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = enabled

    def __enter__(self):
        if self._enabled:
            warnings.warn(_NO_HALF.format(what="autocast"), UserWarning, stacklevel=2)
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapped


def is_autocast_available(device_type):
    """False: vkml has no autocast (no half precision yet)."""
    return False
