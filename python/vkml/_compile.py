"""vk.compile: torch.compile's signature, for programs that compile their model (nanoGPT's
train.py does by default). vkml has no graph compiler, so the function or module is returned as it
is: the same results, at eager speed, said once by a UserWarning."""

import warnings

_warned = False


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None,
            name=None, disable=False, **unused):
    """model itself (or, without a model, a decorator returning its argument)."""
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, name=name, disable=disable)
        return decorate
    if not callable(model):  # torch asserts; a typed error here, as for every bad argument
        raise TypeError(f"compile: a callable function is expected, but {type(model)} is provided.")
    global _warned
    if not disable and not _warned:
        _warned = True
        warnings.warn("vkml.compile returns its argument unchanged: vkml has no graph compiler "
                      "(the results are the same, the speed eager)", UserWarning, stacklevel=2)
    return model
