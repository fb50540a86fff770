"""vkml.utils.checkpoint: gradient checkpointing, as torch.utils.checkpoint (`checkpoint`,
`checkpoint_sequential`). The module itself is callable too: `vk.utils.checkpoint(fn, x)`."""

import sys
import types

from .. import _C
from .._C import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    """Runs function(*args, **kwargs) without keeping its graph, and recomputes it during
    backward, with the random-number state (so dropout masks repeat) and the autocast state it
    first saw. Works with backward, autograd.grad and create_graph. The tensor arguments are the
    inputs that receive gradients; other arguments are passed through unchanged."""
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]

    def run(*tensors):
        full = list(args)
        for i, t in zip(positions, tensors):
            full[i] = t
        return function(*full, **kwargs)

    return _C.checkpoint(run, [args[i] for i in positions])


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """torch.utils.checkpoint.checkpoint_sequential: `functions` (a Sequential or a list of
    modules) run in `segments` consecutive groups; every group but the last is checkpointed (the
    last one's graph is kept, as torch's, since backward starts there at once)."""
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if not 1 <= segments <= len(functions):
        raise ValueError(f"checkpoint_sequential: segments must be in [1, {len(functions)}] "
                         f"(the number of functions), got {segments}")
    size = len(functions) // segments

    def run_segment(start, end):
        def forward(x):
            for f in functions[start:end]:
                x = f(x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run_segment(start, end + 1), input, **kwargs)
    return run_segment(end + 1, len(functions))(input)


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return checkpoint(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
