"""vk.nn.utils: clip_grad_norm_ (fused in C++), the other clipping and vector helpers, weight and
spectral norms, parametrize, prune, fusion."""

from ... import _C, Tensor
from ..._grad_mode import no_grad

__all__ = ["clip_grad_norm_"]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients in place so that their joint norm is at most max_norm; returns the norm."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if error_if_nonfinite and grads:  # init/utils/hooks (#16): raise before any gradient is scaled
        _nonfinite_check(grads, norm_type)
    with no_grad():
        total = _C._optim.clip_grad_norm_(grads, float(max_norm), float(norm_type))
    if error_if_nonfinite and not bool(total.isfinite().item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite")
    return total


# ---- init/utils/hooks (#16): the rest of torch.nn.utils ----------------------------------------
from . import parametrizations, parametrize  # noqa: E402
from . import fusion, prune  # noqa: E402  (torch needs `import torch.nn.utils.prune`; here it is loaded already)
from . import rnn  # noqa: E402  (recurrent layers (issue #16): PackedSequence, pad/pack)
from . import stateless  # noqa: E402  (torch.nn.utils.stateless.functional_call)
from ._spectral_norm import remove_spectral_norm, spectral_norm  # noqa: E402
from ._weight_norm import remove_weight_norm, weight_norm  # noqa: E402


def _nonfinite_check(grads, norm_type):
    get_total_norm(grads, norm_type, error_if_nonfinite=True)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of clip_grad_norm_ (as torch's)."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the tensors' norms (the norm of all their entries together), as torch's."""
    from ... import linalg
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if not tensors:
        return _C.tensor(0.0)
    with no_grad():
        norms = _C.stack([linalg.vector_norm(t, float(norm_type)).to(tensors[0].dtype) for t in tensors])
        total = linalg.vector_norm(norms, float(norm_type))
    if error_if_nonfinite and not bool(total.isfinite().item()):
        raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales the gradients by min(1, max_norm / (total_norm + 1e-6)) in place, as torch's."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype).to(g.device))


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient to [-clip_value, clip_value] in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    with no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)


def _check_param_device(param, old):
    if old is not None and str(param.device) != old:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return str(param.device)


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one vector (a graph to them is kept)."""
    device, vec = None, []
    for param in parameters:
        device = _check_param_device(param, device)
        vec.append(param.reshape(-1))
    return _C.cat(vec)


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of vec into the parameters' data."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__module__}.{type(vec).__name__}")
    device, pointer = None, 0
    for param in parameters:
        device = _check_param_device(param, device)
        n = param.numel()
        if pointer + n > vec.numel():
            raise RuntimeError(f"vector_to_parameters: the vector has {vec.numel()} elements, fewer than the "
                             f"parameters need ({pointer + n} so far)")
        param.data = vec[pointer:pointer + n].reshape(param.shape).detach()
        pointer += n


__all__ += ["clip_grad_norm", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "parametrize",
            "parametrizations", "weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm",
            "get_total_norm", "clip_grads_with_norm_"]
