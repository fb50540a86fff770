"""vk.optim.lr_scheduler: torch.optim.lr_scheduler's schedulers on Python floats.

Each scheduler keeps torch's chainable (recursive) form in get_lr() and, where torch has one, its
closed form for the deprecated step(epoch); state_dict() holds the same keys as torch's, so the
lr (and momentum/beta1) sequences, get_last_lr() and resuming from a state_dict all agree."""

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from functools import wraps
from weakref import ref

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "PolynomialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR"]

_EPOCH_WARNING = ("The epoch parameter in `scheduler.step()` is deprecated (as in torch): call `scheduler.step()` "
                  "without it. With an epoch, the closed form is used where the scheduler has one.")


def _per_group(name, optimizer, value):
    """value repeated per param group, or a list/tuple checked to have one entry per group."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has {n}.")
        return list(value)
    return [value] * n


def _group_values(optimizer, key):
    return [g[key] for g in optimizer.param_groups]


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _set_momentum(group, use_beta1, value):
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _track_optimizer_step(optimizer):
    """Wrap optimizer.step (once) so that a scheduler can warn when it is stepped before the optimizer."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = ref(optimizer)
    func = optimizer.step.__func__

    @wraps(func)
    def wrapper(*args, **kwargs):
        opt = opt_ref()
        opt._opt_called = True
        return func.__get__(opt, opt.__class__)(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


class LRScheduler:
    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        else:
            for i, g in enumerate(optimizer.param_groups):
                if "initial_lr" not in g:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0 (load the optimizer's state first)")
        self.base_lrs = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_optimizer_step(optimizer)
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError

    def step(self, epoch=None):
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`.", UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. Call them in the "
                              "opposite order: `optimizer.step()` before `lr_scheduler.step()`, or the first value "
                              "of the learning rate schedule is skipped.", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        groups = self.optimizer.param_groups
        if len(values) != len(groups):
            raise ValueError(f"{type(self).__name__}.get_lr() returned {len(values)} values for "
                             f"{len(groups)} param groups")
        for g, lr in zip(groups, values):
            g["lr"] = lr
        self._last_lr = _group_values(self.optimizer, "lr")

    def _warn_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)

    def _current(self):
        return _group_values(self.optimizer, "lr")


_LRScheduler = LRScheduler


class _LambdaScheduler(LRScheduler):
    """LambdaLR/MultiplicativeLR: lambdas are not saved, but a callable object's __dict__ is (as torch does)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self.lr_lambdas = _per_group("lr_lambda", optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        saved = state_dict.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state_dict)
        for fn, d in zip(self.lr_lambdas, saved):
            if d is not None:
                fn.__dict__.update(d)


class LambdaLR(_LambdaScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        if isinstance(lr_lambda, (list, tuple)) and len(lr_lambda) != len(optimizer.param_groups):
            raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        return [b * fn(self.last_epoch) for fn, b in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        if isinstance(lr_lambda, (list, tuple)) and len(lr_lambda) != len(optimizer.param_groups):
            raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
        for fn in (lr_lambda if isinstance(lr_lambda, (list, tuple)) else [lr_lambda]):
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return self._current()
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [lr * self.gamma for lr in self._current()]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch not in self.milestones:
            return self._current()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._current()]

    def _get_closed_form_lr(self):
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(ms, self.last_epoch) for b in self.base_lrs]


class ConstantLR(LRScheduler):
    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError(f"ConstantLR: the constant multiplicative factor expected to be between 0 and 1, "
                             f"got factor={factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current()]
        if self.last_epoch != self.total_iters:
            return self._current()
        return [lr * (1.0 / self.factor) for lr in self._current()]

    def _get_closed_form_lr(self):
        return [b * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for b in self.base_lrs]


class LinearLR(LRScheduler):
    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1, "
                             f"got start_factor={start_factor}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"Ending multiplicative factor expected to be between 0 and 1, got end_factor={end_factor}")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        diff = self.end_factor - self.start_factor
        ratio = 1.0 + diff / (self.total_iters * self.start_factor + (self.last_epoch - 1) * diff)
        return [lr * ratio for lr in self._current()]

    def _get_closed_form_lr(self):
        return [b * (self.start_factor + (self.end_factor - self.start_factor)
                     * min(self.total_iters, self.last_epoch) / self.total_iters) for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return self._current()
        return [lr * self.gamma for lr in self._current()]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        e, n = self.last_epoch, self.total_iters
        factor = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [lr * factor for lr in self._current()]

    def _get_closed_form_lr(self):
        return [b * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if self._is_initial:
            return self._current()
        if self._step_count == 1 and e > 0:
            return [lo + (b - lo) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (b - lo) * (1 - math.cos(math.pi / T)) / 2 for b, g in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (g["lr"] - lo) + lo
                for g in groups]

    def _get_closed_form_lr(self):
        lo = self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2 for b in self.base_lrs]


def _check_children(owner, optimizer, schedulers):
    name = type(owner).__name__
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             f"kwargs to be specified when calling `step`, but got one at index {i} in the given "
                             "schedulers sequence.")
        if optimizer is not s.optimizer:
            raise ValueError(f"{name} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(s).__name__} at index {i} has {s.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")


class _Composite(LRScheduler):
    """SequentialLR/ChainedScheduler: the children's state_dicts nest under "_schedulers"."""

    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        children = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, children):
            s.load_state_dict(sd)


class SequentialLR(_Composite):
    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        _check_children(self, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # The children stepped once each when built: restart from the initial lr with the first one.
        for g in optimizer.param_groups:
            g["lr"] = g["initial_lr"]
        self._undo_children_steps(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo_children_steps(self, sched):
        if hasattr(sched, "_schedulers"):
            for s in sched._schedulers:
                self._undo_children_steps(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def recursive_undo(self, sched=None):
        self._undo_children_steps(self if sched is None else sched)

    def step(self):
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            s._update_lr(0)  # a child starts at its epoch 0 (its closed form)
        else:
            s.step()
        self._last_lr = s.get_last_lr()


class ChainedScheduler(_Composite):
    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_children(self, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(schedulers[-1].optimizer, "lr")

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")


class ReduceLROnPlateau(LRScheduler):
    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor should be < 1.0, got {factor}")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = self._current()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None):
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current()

    def _reduce_lr(self, epoch):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the `optimizer` ({len(groups)}) differs from when "
                                   f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new "
                                   "param group being added to the optimizer. Please modify the `min_lrs` field to "
                                   "match the length of the `optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for g, lo in zip(groups, self.min_lrs):
            old = float(g["lr"])
            new = max(old * self.factor, lo)
            if old - new > self.eps:
                g["lr"] = new

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def is_better(self, a, best):
        if self.mode == "min":
            return a < best * (1.0 - self.threshold) if self.threshold_mode == "rel" else a < best - self.threshold
        return a > best * (self.threshold + 1.0) if self.threshold_mode == "rel" else a > best + self.threshold

    _is_better = is_better

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError("mode " + str(mode) + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + str(threshold_mode) + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


def _momentum_setup(sched, optimizer, base_momentum, max_momentum, last_epoch):
    """CyclicLR/OneCycleLR's cycle_momentum: the group's momentum (or beta1) starts at max_momentum."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    sched.use_beta1 = "betas" in optimizer.defaults
    maxs = _per_group("max_momentum", optimizer, max_momentum)
    bases = _per_group("base_momentum", optimizer, base_momentum)
    if last_epoch == -1:
        for hi, lo, g in zip(maxs, bases, optimizer.param_groups):
            _set_momentum(g, sched.use_beta1, hi)
            g["max_momentum"], g["base_momentum"] = hi, lo
    return bases, maxs


class CyclicLR(LRScheduler):
    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, g in zip(base_lrs, optimizer.param_groups):
                g["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode {mode!r} is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = _momentum_setup(self, optimizer, base_momentum, max_momentum,
                                                                      last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        if self._scale_fn_custom is None:  # the built-in modes fix their scale mode
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x):
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self):
        self._warn_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        s = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [lo + (hi - lo) * scale * s for lo, hi in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for g, lo, hi in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(g, self.use_beta1, hi - (hi - lo) * scale * s)
        return lrs

    def state_dict(self):
        sd = super().state_dict()
        fn = sd.pop("_scale_fn_custom")
        sd["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            sd["_scale_fn_custom"] = fn.__dict__.copy()
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom", None)
        state_dict.pop("_scale_fn_ref", None)
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        lo = self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 for b in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            lrs = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for g, lr in zip(self.optimizer.param_groups, lrs):
            g["lr"] = lr
        self._last_lr = self._current()


class OneCycleLR(LRScheduler):
    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95, div_factor=25.0,
                 final_div_factor=1e4, three_phase=False, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")

        def phase(end, lr0, lr1, m0, m1):
            return {"end_step": end, "start_lr": lr0, "end_lr": lr1, "start_momentum": m0, "end_momentum": m1}

        up_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                phase(up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                      "max_momentum"),
                phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._schedule_phases = [
                phase(up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for g, hi in zip(optimizer.param_groups, max_lrs):
                g["initial_lr"] = hi / div_factor
                g["max_lr"] = hi
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _momentum_setup(self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _annealing_cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _annealing_linear(start, end, pct):
        return (end - start) * pct + start

    def _anneal_func(self, start, end, pct):
        f = self._annealing_cos if self._anneal_func_type == "cos" else self._annealing_linear
        return f(start, end, pct)

    def get_lr(self):
        self._warn_outside_step()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(self._schedule_phases):
                end = ph["end_step"]
                if step <= end or i == last:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal_func(g[ph["start_lr"]], g[ph["end_lr"]], pct))
                    if self.cycle_momentum:
                        m = self._anneal_func(g[ph["start_momentum"]], g[ph["end_momentum"]], pct)
                        _set_momentum(g, self.use_beta1, m)
                    break
                start = end
        return lrs
