"""Adafactor (issue #15): torch.optim.Adafactor's algorithm (torch 2.13) composed from vkml tensor ops, as
adaptive.py's optimizers.

The second moment of a parameter of 2 or more dims is kept factored: a row factor (the mean square of the
gradient over the last dim) and a column factor (over the second-to-last), whose outer product, divided by the
rows' mean, estimates it; a vector keeps the full second moment. The step size is relative to the parameter's
RMS, and the update is clipped to RMS d. State as torch's: "step" a 0-d float32 tensor, "row_var" and
"col_var" (or "variance") like the parameter."""

from .. import _C, Tensor
from .._porting import finfo
from .adaptive import _check, _Elementwise, _lerp, _scalar_tensor

__all__ = ["Adafactor"]


class Adafactor(_Elementwise):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}")
        _check(eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}")
        _check(0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}")
        _check(1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}")
        _check(0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    def _init_state(self, p, group, st):
        st["step"] = _scalar_tensor(0.0)
        if p.ndim > 1:
            shape = list(p.shape)
            st["row_var"] = _C.zeros(shape[:-1] + [1], dtype=p.dtype, device=p.device)
            st["col_var"] = _C.zeros(shape[:-2] + [1, shape[-1]], dtype=p.dtype, device=p.device)
        else:
            st["variance"] = _C.zeros_like(p)

    def _update(self, p, grad, st, group):
        lr, eps1, eps2 = float(group["lr"]), group["eps"][0], group["eps"][1]
        if eps1 is None:
            eps1 = finfo(p.dtype).eps
        step = self._next_step(st)
        beta = step ** group["beta2_decay"]  # 1 - beta2_t, the weight of the new gradient
        rho = min(lr, 1 / step ** 0.5)
        alpha = max(eps2, _rms(p)) * rho  # read before weight decay, as torch
        if group["weight_decay"] != 0:
            p.mul_(1 - lr * group["weight_decay"])
        if grad.ndim > 1:
            variance = self._factored(grad, st, beta, eps1)
        else:
            st["variance"].copy_(_lerp(st["variance"], grad * grad, beta))
            variance = st["variance"]
        update = variance.clamp(min=eps1 * eps1).rsqrt() * grad
        denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))
        p.add_(update, alpha=-alpha / denom)

    @staticmethod
    def _factored(grad, st, beta, eps1):
        """The second moment estimate from the updated row and column factors."""
        row, col = st["row_var"], st["col_var"]
        row.copy_(_lerp(row, grad.norm(2, -1, True).square() / grad.shape[-1], beta))
        col.copy_(_lerp(col, grad.norm(2, -2, True).square() / grad.shape[-2], beta))
        return (row @ col) / row.mean(-2, keepdim=True).clamp(min=eps1)


def _rms(t):
    """The root mean square of t's elements, read on the host (torch's norm / sqrt(numel))."""
    return t.norm(2).item() / (t.numel() ** 0.5)
