"""vk.jit: torch.jit's names, for programs that script, trace or annotate their models. vkml has no
TorchScript: script and trace return their argument (the same results, run eagerly; a UserWarning
says so once), the decorators return what they decorate, is_scripting() and is_tracing() are False
(so the eager branch of `if not torch.jit.is_scripting():` runs, as in torch without scripting),
fork runs its function at once, and save / load raise NotImplementedError naming vk.save of a
state_dict."""
import contextlib
import typing
import warnings

__all__ = ["script", "trace", "trace_module", "is_scripting", "is_tracing", "ignore", "unused",
           "export", "interface", "annotate", "Attribute", "Final", "freeze", "optimize_for_inference",
           "fork", "wait", "Future", "save", "load", "ScriptModule", "ScriptFunction",
           "RecursiveScriptModule", "TracedModule", "TopLevelTracedModule", "Error",
           "enable_onednn_fusion", "onednn_fusion_enabled", "optimized_execution", "strict_fusion",
           "script_if_tracing", "script_method", "set_fusion_strategy", "TracerWarning", "ScriptWarning"]

Final = typing.Final
_warned = False


def _eager(what):
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"vkml.jit.{what} returns its argument unchanged: vkml has no TorchScript (the "
                      "results are the same, run eagerly)", UserWarning, stacklevel=3)


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    _eager("script")
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    _eager("trace")
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
                 _compilation_unit=None, example_inputs_is_kwarg=False, _store_inputs=True):
    _eager("trace_module")
    return mod


def is_scripting():
    return False


def is_tracing():
    return False


def ignore(drop=False, **kwargs):
    """@ignore and @ignore(drop=True): the function itself."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def interface(obj):
    return obj


def script_method(fn):
    return fn


def script_if_tracing(fn):
    return fn


def annotate(the_type, the_value):
    return the_value


class Attribute(typing.NamedTuple):
    """A module attribute with its TorchScript type: the pair itself in eager mode, as torch's."""
    value: typing.Any
    type: typing.Any


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    return mod


def optimize_for_inference(mod, other_methods=None):
    return mod


_onednn_fusion = False


def enable_onednn_fusion(enabled):
    global _onednn_fusion
    _onednn_fusion = bool(enabled)


def onednn_fusion_enabled():
    return _onednn_fusion


def set_fusion_strategy(strategy):
    return []


def optimized_execution(should_optimize):
    return contextlib.nullcontext()


class strict_fusion(contextlib.nullcontext):
    pass


class Future:
    """What fork returns: the function already ran; wait() gives its result."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    return Future(func(*args, **kwargs))


def wait(future):
    return future.wait()


def save(m, f, _extra_files=None):
    raise NotImplementedError("torch.jit.save: vkml has no TorchScript modules to save; save the "
                              "weights with vk.save(model.state_dict(), f) and load them into the model")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    raise NotImplementedError("torch.jit.load: vkml cannot run TorchScript archives; load a state_dict "
                              "(torch.save or safetensors) into the model's Python class with vk.load")


# Classes that programs test with isinstance: vkml makes none of them.
class ScriptModule:
    pass


class RecursiveScriptModule(ScriptModule):
    pass


class ScriptFunction:
    pass


class TracedModule(ScriptModule):
    pass


class TopLevelTracedModule(TracedModule):
    pass


class Error(RuntimeError):
    pass


class TracerWarning(Warning):
    pass


class ScriptWarning(Warning):
    pass
