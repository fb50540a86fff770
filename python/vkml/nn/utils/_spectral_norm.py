"""The old-style nn.utils.spectral_norm (init/utils/hooks (#16)): parameter name_orig, buffers name_u
and name_v, and a forward pre-hook that sets module.<name> = name_orig / sigma (one power-iteration
step per training forward), with torch's state_dict keys. torch keeps it beside the parametrization
(nn.utils.parametrizations.spectral_norm), which it recommends."""

from ..._grad_mode import no_grad
from .. import functional as F
from ..modules.module import Parameter


class SpectralNorm:
    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                w = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    v = F.normalize(w.t().mv(u), dim=0, eps=self.eps)
                    u = F.normalize(w.mv(v), dim=0, eps=self.eps)
                setattr(module, self.name + "_u", u)
                setattr(module, self.name + "_v", v)
        sigma = (u * weight_mat.mv(v)).sum()
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"Module '{type(module).__name__}' has no parameter with name '{name}'")
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            u = F.normalize(weight.new_empty((h,)).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty((w,)).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Old-style spectral normalisation of module.<name> (torch.nn.utils.spectral_norm)."""
    if dim is None:
        dim = 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
