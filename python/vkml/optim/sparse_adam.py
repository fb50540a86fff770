"""SparseAdam (issue #15): a refusal. torch's SparseAdam updates only the rows a sparse gradient touches;
vkml has no sparse tensors (Embedding(sparse=True) raises), so every gradient it produces is dense and
step() refuses it with torch's own error for a dense gradient. The class exists so that code constructing
it imports and builds; its constructor checks its arguments as torch's does."""

from .. import Tensor
from .optimizer import Optimizer
from .sgd_adam import _closure

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    def step(self, closure=None):
        loss = _closure(closure)
        for group in self.param_groups:
            if any(p.grad is not None for p in group["params"]):
                # vkml's gradients are always dense: the one case torch's SparseAdam rejects
                raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss
