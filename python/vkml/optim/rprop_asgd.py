"""Rprop and ASGD (issue #15): torch.optim's algorithms composed from vkml tensor ops, as adaptive.py's.

Both keep torch's single-tensor arithmetic (so float64 runs agree with torch's to rounding) and its
state layout: "step" (and ASGD's "eta" and "mu") as 0-d float32 tensors, the buffers like the
parameter. ASGD's eta and mu are float32 in torch too: their values round to float32 at every step,
and the update reads them back, so they are kept as tensors here and read with item() as torch does."""

import numpy as np

from .. import _C
from .adaptive import _check, _check_common, _Elementwise, _scalar_tensor

__all__ = ["Rprop", "ASGD"]


class Rprop(_Elementwise):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_common(lr)
        _check(0.0 < etas[0] < 1.0 < etas[1], f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _init_state(self, p, group, st):
        st["step"] = _scalar_tensor(0.0)
        st["prev"] = _C.zeros_like(p)
        st["step_size"] = _C.full_like(p, float(group["lr"]))

    def _update(self, p, grad, st, group):
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        self._next_step(st)
        prev, step_size = st["prev"], st["step_size"]
        sign = (grad * prev).sign()
        # torch's factor: etaplus where the gradient kept its sign, etaminus where it flipped, 1 where
        # either is 0 (NaN stays NaN, as torch's masked writes leave it)
        factor = _C.where(sign > 0, _C.full_like(sign, etaplus),
                          _C.where(sign < 0, _C.full_like(sign, etaminus),
                                   _C.where(sign == 0, _C.ones_like(sign), sign)))
        step_size.copy_((step_size * factor).clamp(lo, hi))
        # after a sign flip the step is skipped and the gradient forgotten (torch's "dfdx = 0")
        grad = _C.where(sign < 0, _C.zeros_like(grad), grad)
        p.copy_(p - grad.sign() * step_size)
        prev.copy_(grad)


class ASGD(_Elementwise):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_common(lr, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _init_state(self, p, group, st):
        st["step"] = _scalar_tensor(0.0)
        st["eta"] = _scalar_tensor(float(group["lr"]))
        st["mu"] = _scalar_tensor(1.0)
        st["ax"] = _C.zeros_like(p)

    @staticmethod
    def _scalar_state(st, key):
        """A 0-d state tensor (a number from an old state_dict becomes one, as torch's __setstate__)."""
        if not isinstance(st[key], _C.Tensor):
            st[key] = _scalar_tensor(st[key])
        return st[key]

    def _update(self, p, grad, st, group):
        lambd, lr, alpha, t0 = group["lambd"], float(group["lr"]), group["alpha"], group["t0"]
        step = self._next_step(st)
        grad = self._weight_decay(p, grad, group)
        eta, mu, ax = self._scalar_state(st, "eta"), self._scalar_state(st, "mu"), st["ax"]
        eta_value = eta.item()
        p.mul_(1 - lambd * eta_value)
        p.add_(grad, alpha=-eta_value)
        mu_value = mu.item()
        if mu_value != 1:
            ax.add_((p - ax) * mu_value)
        else:
            ax.copy_(p)
        # torch writes a float32 tensor of the new value into eta and mu: float32 rounding even where a
        # loaded state_dict made them float64
        eta.fill_(float(np.float32(lr / ((1 + lambd * lr * step) ** alpha))))
        mu.fill_(float(np.float32(1 / max(1, step - t0))))
