"""swap_in_optimizer_params_and_state (issue #15): torch.optim's context manager that lets an optimizer step
other tensors (torch uses it to trace a step on fake tensors) and then puts the live ones back.

Inside the context the optimizer's groups hold the given parameters and the hyperparameters of the given
state_dict-shaped dict, and its state is that dict's per-parameter state re-keyed by those parameters. The
per-parameter dicts are shallow copies: in-place tensor updates reach the caller's dict, new entries do not.
On exit the groups' contents and the state object are restored."""

import contextlib
from collections import defaultdict

from .. import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _fail(msg):
    raise RuntimeError(f"{_NAME} requires {msg}")


def _checked_state(state):
    if not isinstance(state, dict):
        _fail("swapin_optim_state['state'] to be a dict mapping packed parameter ids to per-param state "
              f"dicts, got {type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        _fail("optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        _fail("per-parameter optimizer state entries to be dictionaries.")
    return state


def _checked_groups(optimizer, groups):
    if not isinstance(groups, list):
        _fail(f"swapin_optim_state['param_groups'] to be a list of param-group dicts, got {type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    return groups


def _group_ids(idx, live, group):
    """The packed ids of one swap-in group, after checking it mirrors the live group."""
    if not isinstance(group, dict):
        _fail("each optimizer param group to be a dictionary.")
    ids = group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        _fail("optimizer.state_dict()-style param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(ids) != len(live["params"]):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of params than the live "
                           "optimizer param group.")
    only_new = [k for k in group if k not in live]
    only_live = [k for k in live if k not in group]
    if only_new or only_live:
        _fail(f"optimizer.state_dict()-style param group keys to exactly match the live optimizer group keys for "
              f"group {idx}. Keys only in swap-in: {only_new}. Keys only in live: {only_live}.")
    return ids


def _plan(optimizer, parameters, optim_state):
    """[(live group, swap-in group, its parameters)] and the packed state, after validating everything."""
    if not optimizer.state:
        _fail("initialized optimizer state.")
    if not isinstance(optim_state, dict):
        _fail("a DCP-style optimizer state_dict.")
    state = _checked_state(optim_state.get("state"))
    groups = _checked_groups(optimizer, optim_state.get("param_groups"))
    flat = list(parameters.values())  # in param_groups order, as model.named_parameters() usually is
    plan, seen, start = [], set(), 0
    for idx, (live, group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _group_ids(idx, live, group)
        seen.update(ids)
        if start + len(ids) > len(flat):
            _fail("the explicit parameter state to match optimizer.param_groups ordering.")
        plan.append((live, group, flat[start:start + len(ids)]))
        start += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        _fail("swapin_optim_state['state'] to be keyed only by packed parameter ids from "
              f"param_groups[*]['params']; got extra keys {extra!r}.")
    return plan, state


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Within the context, optimizer steps swapin_parameters (a dict, in param_groups order) with the
    hyperparameters and state of swapin_optim_state (an optimizer.state_dict()-shaped dict)."""
    plan, packed = _plan(optimizer, swapin_parameters, swapin_optim_state)
    live_state = optimizer.state
    saved = [dict(g) for g in optimizer.param_groups]  # shallow: the params lists keep their identity
    try:
        state = defaultdict(dict)
        for live, group, params in plan:
            live.update({k: v for k, v in group.items() if k != "params"})
            live["params"] = params
            for p, i in zip(params, group["params"]):
                state[p] = dict(packed.get(i, {}))
        optimizer.state = state
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, saved):
            group.clear()
            group.update(snapshot)
        optimizer.state = live_state
