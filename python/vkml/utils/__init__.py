"""vkml.utils: gradient checkpointing."""

from .. import _C
from .._C import Tensor

__all__ = ["checkpoint"]


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    """Runs function(*args, **kwargs) without keeping its graph, and recomputes it during
    backward (with the random-number state it first saw, so dropout masks repeat). Works with
    backward, autograd.grad and create_graph. The tensor arguments are the inputs that receive
    gradients; other arguments are passed through unchanged."""
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]

    def run(*tensors):
        full = list(args)
        for i, t in zip(positions, tensors):
            full[i] = t
        return function(*full, **kwargs)

    return _C.checkpoint(run, [args[i] for i in positions])


# `vk.utils.checkpoint.checkpoint(...)` works too (torch.utils.checkpoint.checkpoint spelling).
checkpoint.checkpoint = checkpoint
