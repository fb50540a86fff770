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



# nn.utils.rnn (issue #16 item 2: rnn): this module stands in for torch's nn.utils package, so the
# submodule is registered by name: `import vkml.nn.utils.rnn` and `from vkml.nn.utils.rnn import
# pad_sequence` find it in sys.modules.
import sys as _sys  # noqa: E402

from . import _rnn_utils as rnn  # noqa: E402

_sys.modules[__name__ + ".rnn"] = rnn
