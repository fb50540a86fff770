"""vk.nn.utils.prune (torch.nn.utils.prune): pruning a module's tensor by a mask. Pruning `name`
moves the parameter to `name + "_orig"`, adds the buffer `name + "_mask"` and makes `name` a plain
attribute, orig * mask, recomputed by a forward pre-hook before every call; pruning again combines
the new mask with the old one over the entries still there (a PruningContainer); remove() makes
the pruned tensor the parameter again. The masks are computed with vkml's ops (topk, norms)."""

import numbers
from abc import ABC, abstractmethod

import vkml as _vk

__all__ = ["BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured", "PruningContainer",
           "RandomStructured", "RandomUnstructured", "custom_from_mask", "global_unstructured", "identity",
           "is_pruned", "l1_unstructured", "ln_structured", "random_structured", "random_unstructured", "remove"]


def _check_amount(amount):
    """An amount is a number of entries (an int >= 0) or a fraction of them (a float in [0, 1])."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count_to_prune(amount, size):
    """How many of `size` entries `amount` names (a fraction rounds to the nearest count)."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    return round(amount * size)


def _check_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")


def _norm_over_others(t, n, dim):
    """The n-norm of each slice of t along `dim` (over every other dim)."""
    dims = [d for d in range(t.dim()) if d != (dim % t.dim())]
    return _vk.linalg.vector_norm(t, ord=n, dim=dims)


def _slice_at(t, dim, index):
    """An indexing tuple selecting `index` along `dim` of t."""
    return (slice(None),) * (dim % t.dim()) + (index,)


class BasePruningMethod(ABC):
    """A pruning method: compute_mask(t, default_mask) says which entries of t stay (1) or go (0);
    apply(module, name, ...) sets it up on module's tensor `name`."""
    _tensor_name: str
    PRUNING_TYPE = "unstructured"

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        ...

    def apply_mask(self, module):
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        previous, hook_key = None, None
        for key, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                if previous is not None:
                    raise RuntimeError(f"Cannot find a unique pruning method for tensor {name} of module {module}")
                previous, hook_key = hook, key
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if previous is not None:
            del module._forward_pre_hooks[hook_key]
            if isinstance(previous, PruningContainer):
                previous.add_pruning_method(method)
                method = previous
            else:
                container = PruningContainer(previous)
                container.add_pruning_method(method)
                method = container
        orig = getattr(module, name)
        scores = importance_scores if importance_scores is not None else orig
        if tuple(scores.shape) != tuple(orig.shape):
            raise ValueError(f"importance_scores should have the same shape as parameter {name} of {module}")
        if previous is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _vk.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        with _vk.no_grad():
            mask = method.compute_mask(scores, default_mask=default_mask)
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        scores = importance_scores if importance_scores is not None else t
        default_mask = default_mask if default_mask is not None else _vk.ones_like(t)
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module):
        """The pruned tensor becomes parameter `name` again (its values orig * mask); the mask,
        orig and the hook go."""
        name = self._tensor_name
        weight = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        with _vk.no_grad():
            orig.copy_(weight.detach())
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        module.register_parameter(name, orig)


class PruningContainer(BasePruningMethod):
    """Successive pruning of one tensor: each new method prunes among the entries the ones before
    left (its own kind decides what 'among' means: entries, slices along its dim, or all)."""

    def __init__(self, *methods):
        self._pruning_methods = ()
        if len(methods) == 1 and not isinstance(methods[0], BasePruningMethod):
            methods = tuple(methods[0])
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._pruning_methods and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        if method is not None:
            self._tensor_name = method._tensor_name
            self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        new_mask = default_mask.clone()
        if method.PRUNING_TYPE in ("unstructured", "global"):
            kept = default_mask == 1
            partial = method.compute_mask(t[kept], default_mask=default_mask[kept])
            new_mask[kept] = partial.to(dtype=new_mask.dtype)
            return new_mask
        if method.PRUNING_TYPE != "structured":
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        if not hasattr(method, "dim"):
            raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` "
                                 "defined.")
        dim = method.dim % t.dim()
        others = [d for d in range(t.dim()) if d != dim]
        alive = (default_mask != 0).any(dim=others) if others else default_mask != 0
        channels = alive.nonzero().flatten()
        at = _slice_at(t, dim, channels)
        partial = method.compute_mask(t[at], default_mask=default_mask[at])
        new_mask[at] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes `amount` entries: those of the lowest scores (_scores)."""

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            mask.view(-1)[_vk.topk(self._scores(t).reshape(-1), k, largest=False).indices] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes `amount` entries chosen at random."""

    def _scores(self, t):
        return _vk.rand(t.numel()).to(t.device)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the `amount` entries of smallest absolute value."""

    def _scores(self, t):
        return t.abs()

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Prunes `amount` slices along `dim` (whole channels): those of the lowest scores (_scores)."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _check_dim(t, self.dim)
        size = t.shape[self.dim]
        keep = size - _count_to_prune(self.amount, size)
        mask = _vk.zeros_like(t)
        if keep:
            mask[_slice_at(t, self.dim, _vk.topk(self._scores(t), keep).indices)] = 1
        return mask * default_mask


class RandomStructured(_Structured):
    """Prunes `amount` slices along `dim` chosen at random."""

    def _scores(self, t):
        return _vk.rand(t.shape[self.dim]).to(t.device)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes the `amount` slices along `dim` of smallest n-norm."""

    def __init__(self, amount, n, dim=-1):
        super().__init__(amount, dim)
        self.n = n

    def _scores(self, t):
        return _norm_over_others(t, self.n, self.dim)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ValueError(f"custom_from_mask: mask of shape {tuple(self.mask.shape)} for a tensor of shape "
                             f"{tuple(default_mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prunes the (module, name) pairs of `parameters` together: pruning_method decides over all
    their entries at once (L1Unstructured: the smallest magnitudes across every tensor)."""
    parameters = list(parameters)
    importance_scores = importance_scores or {}
    scores = [importance_scores.get((m, n), getattr(m, n)) for m, n in parameters]
    relevant = _vk.cat([s.reshape(-1) for s in scores])
    default = _vk.cat([getattr(m, n + "_mask", _vk.ones_like(getattr(m, n))).reshape(-1) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    with _vk.no_grad():
        final = container.compute_mask(relevant, default)
    at = 0
    for (module, name), score in zip(parameters, scores):
        n = score.numel()
        custom_from_mask(module, name, final[at:at + n].view(tuple(score.shape)))
        at += n


def remove(module, name):
    """Makes the pruning of `name` permanent: the parameter holds orig * mask again."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    return any(isinstance(hook, BasePruningMethod) for m in module.modules()
               for hook in m._forward_pre_hooks.values())
