"""vkml.autograd.function, as torch.autograd.function: Function (custom ops with their own
backward), FunctionCtx, once_differentiable, and InplaceFunction (a Function told whether it may
write its input in place)."""

from . import Function, FunctionCtx, once_differentiable

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]


class InplaceFunction(Function):
    """torch's base for custom functions that may work in place: `inplace` records the choice."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace
