"""SGD, Adam, AdamW: each step calls the fused C++ update (vkml._C._optim) per parameter."""

from .. import _C, Tensor
from .._grad_mode import enable_grad, no_grad
from .optimizer import Optimizer, required

__all__ = ["SGD", "Adam", "AdamW"]

_op = _C._optim


def _closure(closure):
    if closure is None:
        return None
    with enable_grad():
        return closure()


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g in self.param_groups:
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    has_state = g["momentum"] != 0  # torch keeps no state without momentum
                    buf = self.state[p].get("momentum_buffer") if has_state else None
                    buf = _op.sgd_step_(p, p.grad, buf, float(g["lr"]), float(g["momentum"]),
                                        float(g["dampening"]), bool(g["nesterov"]), float(g["weight_decay"]),
                                        bool(g["maximize"]))
                    if has_state:
                        self.state[p]["momentum_buffer"] = buf
        return loss


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def step(self, closure=None):
        loss = _closure(closure)
        with no_grad():
            for g in self.param_groups:
                b1, b2 = g["betas"]
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    st = self.state[p]
                    if not st:  # torch's layout: "step" a 0-d float32 tensor on the CPU
                        st["step"] = _C.tensor(0.0, dtype=_C.dtype.float32)
                        st["exp_avg"] = _C.zeros_like(p)
                        st["exp_avg_sq"] = _C.zeros_like(p)
                        if g["amsgrad"]:
                            st["max_exp_avg_sq"] = _C.zeros_like(p)
                    if not isinstance(st["step"], Tensor):  # a number, from an older state_dict
                        st["step"] = _C.tensor(float(st["step"]), dtype=_C.dtype.float32)
                    st["step"].add_(1)
                    decoupled = bool(g.get("decoupled_weight_decay", self._decoupled))
                    _op.adam_step_(p, p.grad, st["exp_avg"], st["exp_avg_sq"], int(st["step"].item()),
                                   float(g["lr"]), float(b1), float(b2), float(g["eps"]), float(g["weight_decay"]),
                                   decoupled, bool(g["amsgrad"]), st.get("max_exp_avg_sq"), bool(g["maximize"]))
        return loss


class AdamW(Adam):
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
