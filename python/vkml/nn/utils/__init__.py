"""vk.nn.utils: clip_grad_norm_ (fused in C++)."""

from .. import _C, Tensor
from .._grad_mode import no_grad

__all__ = ["clip_grad_norm_"]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients in place so that their joint norm is at most max_norm; returns the norm."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    with no_grad():
        total = _C._optim.clip_grad_norm_(grads, float(max_norm), float(norm_type))
    if error_if_nonfinite and not bool(total.isfinite().item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite")
    return total
