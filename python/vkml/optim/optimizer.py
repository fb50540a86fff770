"""vk.optim.Optimizer: torch.optim.Optimizer's bookkeeping (param_groups, state, state_dict)."""

import copy
from collections import defaultdict

from .. import Tensor
from .._grad_mode import no_grad

__all__ = ["Optimizer"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
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
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
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
            entry = {}
            for name, value in v.items():
                if isinstance(value, Tensor):
                    if value.is_floating_point() and name != "step":
                        value = value.to(p.dtype)
                    with no_grad():
                        value = value.detach().clone()
                entry[name] = value
            new_state[p] = entry
        self.state = new_state
        for g, sg in zip(self.param_groups, groups):
            for k, v in sg.items():
                if k != "params":
                    g[k] = copy.deepcopy(v)

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
