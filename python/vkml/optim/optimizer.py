"""vk.optim.Optimizer: torch.optim.Optimizer's bookkeeping (param_groups, state, state_dict)."""

import copy
import functools
from collections import OrderedDict, defaultdict

from .. import Tensor
from .._grad_mode import no_grad
from ..profiler import record_function

__all__ = ["Optimizer"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class _Handle:
    """What the register_*_hook methods return: remove() unregisters the hook."""
    _next_id = 0

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = _Handle._next_id
        _Handle._next_id += 1

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _wrap_step(step):
    """Run the optimizer's step pre/post hooks around a subclass's step (as torch does), the step
    timed as a range when a profile is on."""
    if getattr(step, "_vk_hooked", False):
        return step

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in list(getattr(self, "_step_pre_hooks", {}).values()):
            out = hook(self, args, kwargs)
            if out is not None:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(f"optimizer step pre hook must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {out}.")
                args, kwargs = out
        # a range in a profile, named as torch's (the fused steps are not ops: nothing else shows)
        with record_function(f"Optimizer.step#{type(self).__name__}.step"):
            result = step(self, *args, **kwargs)
        for hook in list(getattr(self, "_step_post_hooks", {}).values()):
            hook(self, args, kwargs)
        return result

    wrapper._vk_hooked = True
    return wrapper


class Optimizer:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _wrap_step(cls.__dict__["step"])

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        for name in ("_step_pre_hooks", "_step_post_hooks", "_state_dict_pre_hooks", "_state_dict_post_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            setattr(self, name, OrderedDict())
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        params = param_group["params"]
        param_group = dict(param_group)
        param_group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for k, v in self.defaults.items():
            if v is required and k not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {k}")
            param_group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def _register(self, hooks, hook, prepend=False):
        handle = _Handle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before every step()."""
        return self._register(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None, after every step()."""
        return self._register(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer) -> None, before state_dict() builds the dict."""
        return self._register(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> state_dict or None, on state_dict()'s result."""
        return self._register(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> state_dict or None, before load_state_dict() loads it."""
        return self._register(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer) -> None, after load_state_dict()."""
        return self._register(self._load_state_dict_post_hooks, hook, prepend)

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    with no_grad():
                        p.grad.zero_()

    def state_dict(self):
        """torch's format: {'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}."""
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self)
        index = {}
        groups = []
        start = 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for i, p in enumerate(g["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in g["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        sd = {"state": state, "param_groups": groups}
        for hook in list(self._state_dict_post_hooks.values()):
            out = hook(self, sd)
            sd = sd if out is None else out
        return sd

    @staticmethod
    def _cast(p, value, key):
        """torch's policy for loaded state: "step" stays as it is, floating tensors take the parameter's
        dtype and device, other tensors its device; lists and dicts are cast entry by entry."""
        if isinstance(value, Tensor):
            if key == "step":
                return value.detach().clone()
            with no_grad():
                value = value.detach()
                if p.is_floating_point() and value.is_floating_point():
                    value = value.to(p.dtype)
                return value.to(p.device).clone()
        if isinstance(value, dict):
            return {k: Optimizer._cast(p, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast(p, v, key) for v in value)
        return value

    def load_state_dict(self, state_dict):
        for hook in list(self._load_state_dict_pre_hooks.values()):
            out = hook(self, state_dict)
            state_dict = state_dict if out is None else out
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, sg in zip(self.param_groups, groups):
            if len(g["params"]) != len(sg["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        id_map = {}
        for g, sg in zip(self.param_groups, groups):
            for p, i in zip(g["params"], sg["params"]):
                id_map[i] = p
        new_state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            k = int(k)  # JSON round trips turn the indices into strings
            if k not in id_map:
                continue
            p = id_map[k]
            new_state[p] = {name: self._cast(p, value, name) for name, value in v.items()}
        self.state = new_state
        for g, sg in zip(self.param_groups, groups):
            for k, v in sg.items():
                if k != "params":
                    g[k] = copy.deepcopy(v)
        for hook in list(self._load_state_dict_post_hooks.values()):
            hook(self)

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for k in sorted(g):
                if k != "params":
                    s += f"\n    {k}: {g[k]}"
        return s + "\n)"

    def step(self, closure=None):
        raise NotImplementedError
