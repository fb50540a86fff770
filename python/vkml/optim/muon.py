"""Muon (issue #15): torch.optim.Muon's algorithm (torch 2.13) composed from vkml tensor ops.

Each 2-D parameter keeps a momentum buffer; the (Nesterov) momentum update is orthogonalised by a few quintic
Newton-Schulz iterations (X <- aX + (bG + cG^2)X with G = XX^T, two vkml addmm per iteration) and applied with
decoupled weight decay and a shape-dependent learning rate. State as torch's: only "momentum_buffer", like the
gradient (no step counter).

Known difference: torch runs the Newton-Schulz iterations in bfloat16; vkml has no bfloat16 tensors yet (the
half-precision issue #19), so they run in the gradient's own dtype. The iteration is the same, only its
rounding is finer: updates agree with torch's to bfloat16 precision (five bfloat16 iterations: within a few
percent of the largest update element)."""

import math

from .. import _C, Tensor
from .._grad_mode import no_grad
from .adaptive import _lerp
from .optimizer import Optimizer
from .sgd_adam import _closure

__all__ = ["Muon"]

# Keller Jordan's coefficients and iteration count, torch's defaults
_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
_NS_STEPS = 5
_EPS = 1e-7
_ADJUST_LR_FNS = ("original", "match_rms_adamw")


def _orthogonalise(update, ns_coefficients, ns_steps, eps):
    """The Newton-Schulz approximation of U V^T for update = U S V^T, iterated on the wide orientation
    (so the Gram matrix is the smaller square)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if update.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = update.shape[0] > update.shape[1]
    x = update.T if tall else update
    x = x / x.norm().clamp(min=eps)  # Frobenius norm >= spectral norm: singular values now in [0, 1]
    for _ in range(ns_steps):
        gram = x @ x.T
        poly = _C.addmm(gram, gram, gram, beta=b, alpha=c)
        x = _C.addmm(x, poly, x, beta=a)
    return x.T if tall else x


def _adjusted_lr(lr, adjust_lr_fn, shape):
    """Scale lr so that orthogonalised updates of rectangular matrices have comparable RMS."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=_NS_COEFFICIENTS, eps=_EPS, ns_steps=_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in _ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                                      ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                                      adjust_lr_fn=adjust_lr_fn))
        # as torch, only the constructor's groups are checked (add_param_group is not)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, self._buffer(p), group)
        return loss

    def _buffer(self, p):
        if getattr(p.grad, "is_sparse", False):
            raise RuntimeError("Muon does not support sparse gradients")
        st = self.state[p]
        if "momentum_buffer" not in st:
            st["momentum_buffer"] = _C.zeros_like(p.grad)
        return st["momentum_buffer"]

    @staticmethod
    def _update(p, buf, group):
        grad, momentum, lr = p.grad, group["momentum"], float(group["lr"])
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        buf.copy_(_lerp(buf, grad, 1 - momentum))  # buf <- momentum buf + (1 - momentum) grad
        update = _lerp(grad, buf, momentum) if group["nesterov"] else buf
        update = _orthogonalise(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
        p.mul_(1 - lr * group["weight_decay"])
        p.add_(update, alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
