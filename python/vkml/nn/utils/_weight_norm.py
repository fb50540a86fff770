"""Weight normalisation (init/utils/hooks (#16)): w = g * v / |v|, the norm taken over every dimension
but `dim` (over all of them when dim is -1 or None, as torch's norm_except_dim). The old-style
nn.utils.weight_norm (parameters name_g and name_v, a forward pre-hook) lives here; the
parametrization (nn.utils.parametrizations.weight_norm) uses the same helpers."""

import warnings

from ... import Tensor
from ..._grad_mode import no_grad
from ..modules.module import Parameter


def norm_except_dim(v, pow=2, dim=0):
    """|v| over every dimension but dim, kept as size-1 dimensions (torch.norm_except_dim)."""
    from ... import linalg
    if dim == -1:
        return linalg.vector_norm(v, pow)
    if not 0 <= dim < v.ndim:
        raise IndexError(f"norm_except_dim: dim {dim} is out of range for a tensor of {v.ndim} dimensions "
                         "(-1 means the whole tensor)")
    others = tuple(d for d in range(v.ndim) if d != dim)
    return linalg.vector_norm(v, pow, dim=others, keepdim=True) if others else v.abs()


def _weight_norm(v, g, dim=0):
    """torch._weight_norm: v * (g / norm_except_dim(v, 2, dim))."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook of the old-style weight_norm: recomputes module.<name> from _g and _v."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if not isinstance(weight, Tensor):
            raise ValueError(f"Module '{type(module).__name__}' has no parameter or buffer with name '{name}'")
        del module._parameters[name]
        with no_grad():
            module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
            module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """The old-style weight normalisation (torch.nn.utils.weight_norm, deprecated there in favour of
    nn.utils.parametrizations.weight_norm): parameters name_g and name_v replace name."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.",
                  FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
