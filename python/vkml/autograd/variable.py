"""vkml.autograd.variable, as torch.autograd.variable: Variable (see vkml.autograd.Variable)."""

from . import Variable

__all__ = ["Variable"]
