"""vk.optim.swa_utils (torch.optim.swa_utils): averages of a model's weights along training --
stochastic weight averaging (the running mean) and exponential moving averages -- as an
AveragedModel; SWALR, the schedule that anneals to a constant SWA learning rate; update_bn, which
recomputes batch-norm statistics for averaged weights."""

import copy
import itertools
import math

from .. import _C
from .._grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm, _InstanceNorm
from .lr_scheduler import LRScheduler, _per_group

__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]


def _count(num_averaged):
    return float(num_averaged.item()) if isinstance(num_averaged, _C.Tensor) else float(num_averaged)


def get_ema_multi_avg_fn(decay=0.999):
    """In place over lists: ema <- decay ema + (1 - decay) current (a lerp for floats)."""
    @no_grad()
    def ema_update(ema_params, current_params, _num_averaged):
        for ema, current in zip(ema_params, current_params):
            if ema.is_floating_point():
                ema.lerp_(current, 1 - decay)
            else:
                ema.copy_(ema * decay + current * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """In place over lists: the running mean, avg <- avg + (current - avg) / (n + 1) (a lerp for
    floats; integers, num_batches_tracked with use_buffers, step by the truncated quotient, as
    torch's)."""
    @no_grad()
    def swa_update(averaged_params, current_params, num_averaged):
        n = _count(num_averaged)
        for avg, current in zip(averaged_params, current_params):
            if avg.is_floating_point():
                avg.lerp_(current, 1.0 / (n + 1))
            else:
                avg.add_((current - avg).div(int(n) + 1, rounding_mode="trunc"))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and buffers, with use_buffers) are averaged over the
    update_parameters(model) calls: by avg_fn(averaged, current, n) per tensor or multi_avg_fn
    over lists, the running mean by default. Calling it runs the averaged copy."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _C.tensor(0, dtype=_C.dtype.int64))
        if device is not None:
            self.n_averaged = self.n_averaged.to(device)
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged(self, model):
        if self.use_buffers:
            return (list(itertools.chain(self.module.parameters(), self.module.buffers())),
                    list(itertools.chain(model.parameters(), model.buffers())))
        return list(self.module.parameters()), list(model.parameters())

    def update_parameters(self, model):
        mine, theirs = self._averaged(model)
        mine = [p.detach() for p in mine]
        theirs = [q.detach().to(p.device) for p, q in zip(mine, theirs)]
        first = int(self.n_averaged.item()) == 0
        with no_grad():
            if first:
                for p, q in zip(mine, theirs):
                    p.copy_(q)
            elif self.avg_fn is not None:
                for p, q in zip(mine, theirs):
                    p.copy_(self.avg_fn(p, q, self.n_averaged.to(p.device)))
            else:
                update = self.multi_avg_fn or get_swa_multi_avg_fn()
                groups = {}  # the lists a multi_avg_fn takes are of one device and dtype
                for p, q in zip(mine, theirs):
                    mine_g, theirs_g = groups.setdefault((str(p.device), p.dtype), ([], []))
                    mine_g.append(p)
                    theirs_g.append(q)
                for mine_g, theirs_g in groups.values():
                    update(mine_g, theirs_g, self.n_averaged.to(mine_g[0].device))
            if not self.use_buffers:  # buffers follow the model's, not averaged
                for b, c in zip(self.module.buffers(), model.buffers()):
                    b.detach().copy_(c.detach().to(b.device))
            self.n_averaged.add_(1)


@no_grad()
def update_bn(loader, model, device=None):
    """One pass over `loader` (its items, or their first element) in training mode with every
    batch norm's momentum None, so their running statistics become the mean over the pass (its
    instance norms are left alone, as torch's)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm) and module.track_running_stats:
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate to swa_lr over anneal_epochs steps (cosine or linear),
    then holds it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}")
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the schedule started from, given the current lr = alpha swa_lr + (1 - alpha) lr0."""
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        groups = self.optimizer.param_groups
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        start = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, start)]
