"""vk.nn: Parameter and Module: torch.nn.Module's bookkeeping (registration, traversal, state_dict, moves)."""

from collections import OrderedDict, namedtuple

from ... import _C, Tensor
from ..._grad_mode import no_grad
from . import _hooks  # init/utils/hooks (#16)


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter; requires grad by default (torch.nn.Parameter)."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        return Tensor._make_subclass(cls, data.detach(), requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with no_grad():
            new = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol):
        from ... import _rebuild  # vkml._rebuild (".." was vkml.nn, which has none)
        return (_rebuild, (Parameter, self.detach().numpy().copy(), self.requires_grad, None))


class Buffer(Tensor):
    """A Tensor that a Module registers as a buffer when assigned as an attribute (torch.nn.Buffer,
    torch >= 2.5): `self.mask = Buffer(t, persistent=False)` is register_buffer("mask", t,
    persistent=False). Keeps data's requires_grad, as torch's."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.empty(0)
        buf = Tensor._make_subclass(cls, data.detach(), data.requires_grad)
        buf.persistent = persistent
        return buf

    def __init__(self, data=None, *, persistent=True):
        pass


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """load_state_dict's result, printed as torch's (init/utils/hooks (#16))."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _walk(root, prefix):
    """(key prefix, module, entering) for root and everything below it in the order a recursive
    walk would give: each module entered (True) before its children and left (False) after them
    (shared modules once per path, as torch's state_dict). An explicit stack, not recursion."""
    stack = [(prefix, root, True)]
    while stack:
        p, m, entering = stack.pop()
        yield p, m, entering
        if entering:
            stack.append((p, m, False))
            stack.extend(reversed([(p + k + ".", c, True) for k, c in m._modules.items() if c is not None]))


def _tree(root, prefix):
    """(key prefix, module) for root and everything below it, parents first."""
    return ((p, m) for p, m, entering in _walk(root, prefix) if entering)


def _run_hooks(module, store, *args):
    """Calls the hooks in module's `store` (state-dict hooks: they return None, as torch requires)."""
    for hook in module.__dict__.get(store, {}).values():
        result = hook(module, *args)
        if result is not None:
            raise RuntimeError(f"{type(module).__name__}: a state-dict hook ({store.strip('_')}) must return "
                               f"None, got {type(result).__name__}")


class Module:
    """Base class of layers: registers Parameters, buffers and submodules assigned as attributes."""

    training: bool

    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        for name, d in _hooks.new_hook_dicts().items():  # init/utils/hooks (#16)
            object.__setattr__(self, name, d)

    # ---- registration ----
    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(vkml.nn.Parameter or None expected)")
            params[name] = None
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}'")
            modules[name] = None
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer):  # (after the parameter and module names, as torch)
            self.register_buffer(name, value, value.persistent)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}'")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _remove_from(self, name):
        for d in (self.__dict__, self._parameters, self._buffers, self._modules):
            if name in d:
                del d[name]
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str) or "." in name or name == "":
            raise KeyError(f"parameter name must be a non-empty string without '.', got {name!r}")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(vkml.nn.Parameter or None required)")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str) or "." in name or name == "":
            raise KeyError(f"buffer name must be a non-empty string without '.', got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(vkml.Tensor or None required)")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str) or "." in name or name == "":
            raise KeyError(f"module name must be a non-empty string without '.', got {name!r}")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    # ---- iteration ----
    # The walks over the module tree (named_modules, state_dict, load_state_dict, apply) keep a
    # stack instead of recursing: a model may nest deeper than Python's recursion limit.
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        stack = [(prefix, self)]
        while stack:
            name, m = stack.pop()
            if remove_duplicate:
                if m in memo:
                    continue
                memo.add(m)
            yield name, m
            stack.extend(reversed([(name + ("." if name else "") + k, c)
                                   for k, c in m._modules.items() if c is not None]))

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, get, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for k, v in get(m).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield mprefix + ("." if mprefix else "") + k, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters, prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers, prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state ----
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                with no_grad():
                    p.grad.zero_()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:  # torch's legacy positional (destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
        for module_prefix, m, entering in _walk(self, prefix):
            if entering:
                _run_hooks(m, "_state_dict_pre_hooks", module_prefix, keep_vars)
                m._save_to_state_dict(destination, module_prefix, keep_vars)
            else:  # after its children, as torch's
                _run_hooks(m, "_state_dict_hooks", destination, module_prefix, {})
        return destination

    def _load_from_state_dict(self, state_dict, prefix, strict, missing, unexpected, errors, assign=False):
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update({k: v for k, v in self._buffers.items()
                      if v is not None and k not in self._non_persistent_buffers_set})
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                try:
                    value = _C.tensor(value, dtype=param.dtype)
                except Exception:
                    errors.append(f'While copying the parameter named "{key}", expected a tensor, '
                                  f"got {type(value).__name__}")
                    continue
            if tuple(value.shape) != tuple(param.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from "
                              f"checkpoint, the shape in current model is {tuple(param.shape)}.")
                continue
            if assign:
                self._take_loaded(name, param, value)
                continue
            with no_grad():
                param.copy_(value.to(param.dtype))
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    rest = key[len(prefix):]
                    head = rest.split(".", 1)[0]
                    if head not in self._modules and head not in local:
                        unexpected.append(key)

    def _take_loaded(self, name, current, value):
        """load_state_dict(assign=True): the module holds the checkpoint's tensor itself (its memory
        and dtype, as torch's), a parameter as a Parameter with the current one's requires_grad."""
        if name in self._parameters:
            if isinstance(value, Parameter):
                value.requires_grad_(current.requires_grad)
            else:
                value = Parameter(value, requires_grad=current.requires_grad)
            self._parameters[name] = value
        else:
            self._buffers[name] = value

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []

        keys = _IncompatibleKeys(missing, unexpected)  # the lists post-hooks may edit
        # Each module sees its own copy of the entries under its prefix, as torch's: what its
        # pre-hooks change there (renamed keys) is what it and its children load.
        local = [OrderedDict(state_dict)]
        for prefix, module, entering in _walk(self, ""):
            if not entering:
                local.pop()
                _run_hooks(module, "_load_state_dict_post_hooks", keys)
                continue
            mine = local[-1] if len(local) == 1 and prefix == "" else \
                OrderedDict((k, v) for k, v in local[-1].items() if k.startswith(prefix))
            local.append(mine)
            # strict=True here whatever the call's, as torch's (the call's strict applies at the end)
            _run_hooks(module, "_load_state_dict_pre_hooks", mine, prefix, {}, True, missing, unexpected, errors)
            module._load_from_state_dict(mine, prefix, True, missing, unexpected, errors, assign)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing if not strict else [], unexpected if not strict else [])

    def _apply_tensors(self, fn):
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None:
                    with no_grad():
                        p.data = fn(p.detach())
                        if p.grad is not None:
                            p.grad = fn(p.grad)
            for name, b in m._buffers.items():
                if b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """Moves and/or casts every parameter and buffer in place, as torch's Module.to: the
        Parameter objects stay the same (an optimizer built before keeps working), their data and
        their .grad change. Casts apply to floating-point tensors only."""
        dtype, device = kwargs.get("dtype"), kwargs.get("device")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, _C.Tensor):
                dtype, device = a.dtype, a.device
            elif a is not None:
                device = a
        if device is not None:
            device = _C.device(device)

        def convert(t):
            if device is not None:
                t = t.to(device)
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
            return t
        if dtype is None and device is None:
            return self
        return self._apply_tensors(convert)

    def _place_on(self, device):
        """The layers' device= argument: parameters are made on the CPU, then moved."""
        if device is not None:
            self.to(device)

    def float(self):
        return self.to(_C.dtype.float32)

    def double(self):
        return self.to(_C.dtype.float64)

    def half(self):
        return self.to(_C.dtype.float16)

    def bfloat16(self):
        return self.to(_C.dtype.bfloat16)

    def cpu(self):
        return self.to("cpu")

    def apply(self, fn):
        # children before their parent, as torch's recursive apply
        order, stack = [], [self]
        while stack:
            m = stack.pop()
            order.append(m)
            stack.extend(m.children())
        for m in reversed(order):
            fn(m)
        return self

    # ---- calling ----
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        d = self.__dict__  # init/utils/hooks (#16): the hooks' path only when there are hooks
        if d.get("_forward_pre_hooks") or d.get("_forward_hooks") or d.get("_backward_hooks") or \
                d.get("_backward_pre_hooks"):
            return _hooks.call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- init/utils/hooks (#16): hooks, lookups by name ----
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) (or hook(module, args, kwargs) with with_kwargs) runs before forward;
        what it returns (not None) replaces the arguments."""
        return _hooks.add_hook(self._forward_pre_hooks, hook, prepend,
                               [(self._forward_pre_hooks_with_kwargs, with_kwargs)])

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) (or hook(module, args, kwargs, output)) runs after forward;
        what it returns (not None) replaces the output. always_call: it runs even when forward raises."""
        return _hooks.add_hook(self._forward_hooks, hook, prepend,
                               [(self._forward_hooks_with_kwargs, with_kwargs),
                                (self._forward_hooks_always_called, always_call)])

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) runs when the gradients of the module's outputs are known; what it
        returns (not None, a tuple as long as grad_output) replaces them."""
        return _hooks.add_hook(self._backward_pre_hooks, hook, prepend)

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) runs before state_dict saves this module's tensors."""
        return _hooks.add_hook(self.__dict__.setdefault("_state_dict_pre_hooks", OrderedDict()), hook, False)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) runs after state_dict saved this module
        and its children; it may edit state_dict in place and returns None."""
        return _hooks.add_hook(self.__dict__.setdefault("_state_dict_hooks", OrderedDict()), hook, False)

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) runs before load_state_dict loads this module's tensors (it may edit
        state_dict: renamed keys of an old checkpoint)."""
        return _hooks.add_hook(self.__dict__.setdefault("_load_state_dict_pre_hooks", OrderedDict()), hook, False)

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) runs after load_state_dict loaded this module and its
        children; it may edit incompatible_keys' lists in place (strict then sees the edit)."""
        return _hooks.add_hook(self.__dict__.setdefault("_load_state_dict_post_hooks", OrderedDict()), hook, False)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) runs when the gradients of the module's inputs are
        known; what it returns (not None) replaces grad_input."""
        return _hooks.add_hook(self._backward_hooks, hook, prepend)

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{type(mod).__name__} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{type(mod).__name__} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    # ---- repr ----
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for key, m in self._modules.items():
            lines.append("(" + key + "): " + _addindent(repr(m), 2))
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
