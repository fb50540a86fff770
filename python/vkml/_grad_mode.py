"""Grad mode and anomaly mode as context managers and decorators.

The flags themselves live in C++ and are per thread (thread_local); these classes only save the
flag on entry and restore it on exit, in every exit path, so blocks nest and an exception cannot
leave a thread with the wrong mode. A context object may be reused and shared between threads:
each thread keeps its own stack of saved values.
"""

import functools
import inspect
import threading

from . import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]

is_grad_enabled = _C.is_grad_enabled
is_anomaly_enabled = _C.is_anomaly_enabled


class _ModeContext:
    """Sets a per-thread flag to `_mode` on entry and restores the saved value on exit."""

    _get = staticmethod(_C.is_grad_enabled)
    _set = staticmethod(_C._set_grad_enabled)

    def __init__(self, mode):
        self._mode = bool(mode)
        self._local = threading.local()

    def _stack(self):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def __enter__(self):
        self._stack().append(self._get())
        self._set(self._mode)
        return self

    def __exit__(self, exc_type, exc, tb):
        self._set(self._stack().pop())
        return False

    def clone(self):
        return type(self)._plain(self._mode)

    def __call__(self, func):
        """Decorator: func runs with the mode set (generators: every resumption)."""
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                ctx = self.clone()
                try:
                    with ctx:
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with ctx:
                                gen.close()
                            raise
                        except BaseException as e:
                            with ctx:
                                response = gen.throw(e)
                        else:
                            with ctx:
                                response = gen.send(request)
                except StopIteration as e:
                    return e.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper


class _GradMode(_ModeContext):
    pass


_GradMode._plain = _GradMode


class no_grad(_GradMode):
    """Ops inside record no graph (outputs are constants). Also a decorator, with or without ()."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        super().__init__(False)


class enable_grad(_GradMode):
    """Ops inside record graph again (inside no_grad). Also a decorator, with or without ()."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        super().__init__(True)


class inference_mode(_GradMode):
    """vkml has no separate inference mode: the same as no_grad (mode=True) or enable_grad."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        super().__init__(not mode)


class set_grad_enabled(_GradMode):
    """Sets grad mode now (as a function call); as a context manager it restores the previous
    mode on exit; as a decorator the mode applies to each call of the function."""

    def __init__(self, mode):
        super().__init__(mode)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._mode)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, func):
        _C._set_grad_enabled(self._prev)
        return super().__call__(func)

    def clone(self):
        return _GradMode(self._mode)


class _AnomalyMode(_ModeContext):
    _get = staticmethod(_C.is_anomaly_enabled)
    _set = staticmethod(_C._set_anomaly_enabled)


_AnomalyMode._plain = _AnomalyMode


class detect_anomaly(_AnomalyMode):
    """Backward checks every gradient for NaN/Inf and raises RuntimeError naming the op, its
    inputs and the Python line where its forward ran."""

    def __init__(self, check_nan=True):
        super().__init__(check_nan)


class set_detect_anomaly(_AnomalyMode):
    """Sets anomaly mode now; as a context manager it restores the previous mode on exit."""

    def __init__(self, mode, check_nan=True):
        super().__init__(mode)
        self._prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(self._mode)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        _C._set_anomaly_enabled(self._prev)
        return False

    def __call__(self, func):
        _C._set_anomaly_enabled(self._prev)
        return super().__call__(func)

    def clone(self):
        return _AnomalyMode(self._mode)
