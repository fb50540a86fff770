"""Module hooks (init/utils/hooks (#16)): torch.utils.hooks.RemovableHandle and the call path of
nn.Module with forward pre-hooks, forward hooks and full backward (pre-)hooks, as torch's
Module._call_impl and torch.utils.hooks.BackwardHook.

Full backward hooks need the gradients of all of a module's inputs (and of all its outputs) at
once. vkml's custom nodes have one output each, so the tensors are joined: their values are
flattened into one tensor, a custom node whose rule calls the hooks, and the module sees slices
of it reshaped back. The engine completes a node's gradient before running its rule, so the
rule sees the whole gradient of every input (or output) together, as torch's hook does. This
costs one copy of the inputs and outputs, only for modules that have backward hooks."""

import itertools
import warnings
import weakref
from collections import OrderedDict

from ... import _C, Tensor
from ..._grad_mode import no_grad


class RemovableHandle:
    """A handle that removes its hook from the dicts it was added to (torch.utils.hooks)."""

    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        extra = [] if extra_dict is None else extra_dict if isinstance(extra_dict, list) else [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks, hook, prepend, extra=()):
    """Registers hook in the OrderedDict hooks; each dict of extra (with_kwargs, always_call)
    marks it too. Returns its handle."""
    handle = RemovableHandle(hooks, extra_dict=[d for d, _ in extra])
    hooks[handle.id] = hook
    for d, flag in extra:
        if flag:
            d[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _join(tensors, on_grads, name):
    """tensors (a list; entries may be non-tensors or not require grad) passed through one custom
    node: returns the list with each tensor that requires grad replaced by its slice of the node's
    output. on_grads(grads) gets the gradient of each entry (zeros for tensors that do not require
    grad, None for entries that are not tensors) and returns the gradients to pass on (None: unchanged)."""
    pos = [i for i, t in enumerate(tensors) if isinstance(t, Tensor) and t.requires_grad]
    parents = [tensors[i] for i in pos]
    if len({(str(p.dtype), str(p.device)) for p in parents}) > 1:
        raise NotImplementedError(f"{name}: full backward hooks on a module whose tensors requiring grad have "
                                  "different dtypes or devices are not supported by vkml "
                                  f"({', '.join(f'{p.dtype} on {p.device}' for p in parents)})")
    sizes = [p.numel() for p in parents]
    with no_grad():
        data = _C.cat([p.detach().reshape(-1) for p in parents]) if len(parents) > 1 else \
            parents[0].detach().reshape(-1).clone()

    def vjp(g):
        pieces, off = [], 0
        for p, n in zip(parents, sizes):
            pieces.append(g[off:off + n].reshape(p.shape))
            off += n
        # as torch's: zeros for the tensors that do not require grad, None for the other entries
        grads = [_C.zeros_like(t) if isinstance(t, Tensor) else None for t in tensors]
        for i, piece in zip(pos, pieces):
            grads[i] = piece
        new = on_grads(grads)
        out = []
        for i, p, piece in zip(pos, parents, pieces):
            gi = new[i] if new is not None else piece
            out.append(_C.zeros_like(p) if gi is None else gi)
        return out

    joined = _C.from_op(data, parents, vjp, name)
    res, off = list(tensors), 0
    for i, p, n in zip(pos, parents, sizes):
        res[i] = joined[off:off + n].reshape(p.shape)
        off += n
    return res


class BackwardHook:
    """Wraps a module call's inputs and outputs so that the full backward pre-hooks see the
    gradients of the outputs and the full backward hooks those of the inputs (and outputs)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_index = None  # positions of the tensors among the inputs; None: none requires grad

    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        if not (_C.is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args)):
            return args
        self.input_index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        return tuple(_join(list(args), self._on_input_grads, "BackwardHookFunctionBackward"))

    def _on_input_grads(self, grads):
        if self.grad_outputs is None:  # the gradient reached the inputs without passing the outputs
            return None
        res = tuple(grads)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(out)}, "
                                   f"but expected {len(res)}")
            res = tuple(out)
        self.grad_outputs = None
        return res

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        outs = [result] if single else list(result) if isinstance(result, tuple) else None
        if outs is None or not _C.is_grad_enabled() or \
                not any(isinstance(o, Tensor) and o.requires_grad for o in outs):
            return result
        joined = _join(outs, self._on_output_grads, "BackwardHookFunctionBackward")
        return joined[0] if single else tuple(joined)

    def _on_output_grads(self, grads):
        self.grad_outputs = tuple(grads)
        for hook in self.user_pre_hooks:
            new = hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(new)}, "
                                   f"but expected {len(self.grad_outputs)}")
            self.grad_outputs = tuple(new)
        local = self.grad_outputs
        if self.input_index is None:  # no input requires grad: the hooks run here, as torch's
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module outputs "
                          "since no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/"
                          "torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more details.",
                          stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return local


def _run_forward_hooks(module, args, kwargs, result, called):
    for hook_id, hook in list(module._forward_hooks.items()):
        if hook_id in module._forward_hooks_always_called:
            called.add(hook_id)
        if hook_id in module._forward_hooks_with_kwargs:
            r = hook(module, args, kwargs, result)
        else:
            r = hook(module, args, result)
        if r is not None:
            result = r
    return result


def call_with_hooks(module, args, kwargs):
    """torch's Module._call_impl for a module that has hooks."""
    result = None
    called = set()
    try:
        for hook_id, hook in list(module._forward_pre_hooks.items()):
            if hook_id in module._forward_pre_hooks_with_kwargs:
                r = hook(module, args, kwargs)
                if r is not None:
                    if isinstance(r, tuple) and len(r) == 2:
                        args, kwargs = r
                    else:
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {r}.")
            else:
                r = hook(module, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = None
        if module._backward_hooks or module._backward_pre_hooks:
            bw = BackwardHook(module, list(module._backward_hooks.values()),
                              list(module._backward_pre_hooks.values()))
            args = bw.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        result = _run_forward_hooks(module, args, kwargs, result, called=called)
        if bw is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(result)}", stacklevel=3)
            result = bw.setup_output_hook(result)
        return result
    except Exception:
        # the always_call forward hooks that have not run yet run now, their own errors silenced
        for hook_id, hook in list(module._forward_hooks.items()):
            if hook_id not in module._forward_hooks_always_called or hook_id in called:
                continue
            try:
                r = hook(module, args, kwargs, result) if hook_id in module._forward_hooks_with_kwargs \
                    else hook(module, args, result)
                if r is not None:
                    result = r
            except Exception as e:
                warnings.warn("forward hook with ``always_call=True`` raised an exception that was silenced as "
                              f"another error was raised in forward: {e}", stacklevel=3)
        raise


def new_hook_dicts():
    return {name: OrderedDict() for name in (
        "_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
        "_forward_pre_hooks_with_kwargs", "_backward_hooks", "_backward_pre_hooks")}
