"""vkml.autograd.grad_mode, as torch.autograd.grad_mode: the grad-mode context managers."""

from .._grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["enable_grad", "inference_mode", "no_grad", "set_grad_enabled"]
