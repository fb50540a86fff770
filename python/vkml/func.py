"""vk.func: torch.func's function transforms that reverse- and forward-mode autograd can give
directly -- functional_call (a module run with the parameters and buffers it is handed: MAML and
hypernetworks), grad / grad_and_value, vjp, jvp, jacrev, jacfwd and hessian. They differentiate
through vkml's autograd, so they nest (grad(grad(f))) and compose with functional_call; vmap,
which needs batching rules for every op, is not here (docs/compat.md)."""

import contextlib

import vkml as _vk
from .autograd import functional as _functional

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize",
           "stack_module_state", "vjp"]


def _owner(module, dotted):
    """The submodule holding `dotted`'s last name, and that name."""
    *path, leaf = dotted.split(".")
    for part in path:
        module = getattr(module, part)
    return module, leaf


@contextlib.contextmanager
def _swapped(module, tensors, tie_weights, strict):
    """module's parameters and buffers named in `tensors` replaced by those tensors (in the
    modules' stores, so forward reads them as it reads its own), restored on exit."""
    own = dict(module.named_parameters(remove_duplicate=False))
    own.update(module.named_buffers(remove_duplicate=False))
    if strict:
        missing, unexpected = sorted(set(own) - set(tensors)), sorted(set(tensors) - set(own))
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}: missing keys "
                               f"{missing}, unexpected keys {unexpected}")
    if tie_weights:  # a tensor given for one name of a tied parameter stands for every name of it
        tensors = dict(tensors)
        for name, value in own.items():
            if name in tensors:
                continue
            twins = [other for other, v in own.items() if v is value and other in tensors]
            if twins:
                tensors[name] = tensors[twins[0]]
    saved = []
    try:
        for name, value in tensors.items():
            owner, leaf = _owner(module, name)
            store = owner._parameters if leaf in owner._parameters else owner._buffers \
                if leaf in owner._buffers else None
            if store is None:
                raise AttributeError(f"functional_call: {type(module).__name__} has no parameter or buffer '{name}'")
            saved.append((store, leaf, store[leaf]))
            store[leaf] = value
        yield
    finally:
        for store, leaf, value in reversed(saved):
            store[leaf] = value


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the given tensors in place of its parameters and buffers
    (one dict, or a sequence of dicts without repeated keys)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    else:
        tensors = {}
        for d in parameter_and_buffer_dicts:
            repeated = set(tensors) & set(d)
            if repeated:
                raise ValueError(f"{sorted(repeated)} appeared in multiple dictionaries; behavior of "
                                 "functional call is ambiguous")
            tensors.update(d)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, tensors, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def _as_inputs(args, argnums):
    """args with those at argnums made differentiable leaves (a tensor that already requires grad,
    as inside another transform, is used as it is so the outer one sees through); and whether a
    graph must be kept for an outer transform."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    args = list(args)
    nested = False
    for i in nums:
        x = args[i]
        if not isinstance(x, _vk.Tensor):
            raise TypeError(f"grad: argument {i} must be a Tensor, got {type(x).__name__}")
        if x.requires_grad:
            nested = True
        else:
            args[i] = x.detach().requires_grad_()
    return args, nums, nested


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (d func / d args[argnums], func(*args)) for a func with one-element
    output (and (output, aux) with has_aux)."""
    def wrapper(*args, **kwargs):
        with _vk.enable_grad():
            inputs, nums, nested = _as_inputs(args, argnums)
            out = func(*inputs, **kwargs)
            value, aux = out if has_aux else (out, None)
            if not isinstance(value, _vk.Tensor) or value.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                                   f"got {type(value).__name__}" + (
                                       f" of shape {tuple(value.shape)}" if isinstance(value, _vk.Tensor) else ""))
            grads = _vk.autograd.grad(value, [inputs[i] for i in nums], create_graph=nested, allow_unused=True)
            grads = tuple(g if g is not None else _vk.zeros_like(inputs[i]) for g, i in zip(grads, nums))
        result = grads[0] if isinstance(argnums, int) else grads
        value = value if nested else value.detach()
        return (result, (value, aux)) if has_aux else (result, value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning d func / d args[argnums] (with func's aux output when has_aux)."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) with vjp_fn(cotangent) the cotangent pulled back to each primal."""
    with _vk.enable_grad():
        inputs, nums, nested = _as_inputs(primals, tuple(range(len(primals))))
        out = func(*inputs)
    value, aux = out if has_aux else (out, None)
    outputs = value if isinstance(value, tuple) else (value,)

    def vjp_fn(*cotangents):
        cot = cotangents[0] if len(cotangents) == 1 and isinstance(cotangents[0], tuple) else cotangents
        grads = _vk.autograd.grad(outputs, inputs, grad_outputs=cot, retain_graph=True, create_graph=nested,
                                  allow_unused=True)
        return tuple(g if g is not None else _vk.zeros_like(x) for g, x in zip(grads, inputs))

    shown = value if nested else (tuple(o.detach() for o in outputs) if isinstance(value, tuple) else value.detach())
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


def jvp(func, primals, tangents, *, has_aux=False):
    """(func(*primals), the directional derivative along tangents)."""
    if has_aux:
        raise NotImplementedError("vk.func.jvp: has_aux is not supported")
    primals, tangents = tuple(primals), tuple(tangents)
    value, out = _functional.jvp(func, primals, tangents, create_graph=any(p.requires_grad for p in primals))
    return value, out


def _jacobian(func, argnums, has_aux, vectorize_mode):
    def wrapper(*args):
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        aux_box = []

        def of_selected(*selected):
            full = list(args)
            for i, s in zip(nums, selected):
                full[i] = s
            out = func(*full)
            if has_aux:
                out, aux = out
                aux_box.append(aux)
            return out

        nested = any(isinstance(args[i], _vk.Tensor) and args[i].requires_grad for i in nums)
        # one tensor for an int argnums, a tuple for a tuple: the nesting torch.func gives
        inputs = args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in nums)
        jac = _functional.jacobian(of_selected, inputs, create_graph=nested, vectorize=vectorize_mode == "forward-mode",
                                   strategy=vectorize_mode)
        return (jac, aux_box[0]) if has_aux else jac
    return wrapper


def jacrev(func, argnums=0, *, has_aux=False):
    """The Jacobian of func with respect to args[argnums], by reverse mode (a vjp per output)."""
    return _jacobian(func, argnums, has_aux, "reverse-mode")


def jacfwd(func, argnums=0, has_aux=False):
    """The Jacobian of func with respect to args[argnums], by forward mode (a jvp per input)."""
    return _jacobian(func, argnums, has_aux, "forward-mode")


def hessian(func, argnums=0):
    """The Hessian of a scalar func with respect to args[argnums]: jacfwd(jacrev(func))."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """(func(*primals), jvp_fn) with jvp_fn(*tangents) the derivative of func at primals along
    tangents (each call recomputes func's graph; torch traces it once)."""
    with _vk.no_grad():
        out = func(*primals)
    return out, lambda *tangents: jvp(func, primals, tangents)[1]


def stack_module_state(models):
    """The parameters and buffers of same-shaped models stacked along a new first dim: the
    parameters as new leaves requiring grad (where every model's does), the buffers as they are."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        tensors = [dict(named(m)) for m in models]
        out = {}
        for k in tensors[0]:
            parts = [t[k] for t in tensors]
            s = _vk.stack([p.detach() for p in parts])
            out[k] = s.requires_grad_() if all(p.requires_grad for p in parts) else s
        return out

    return stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers())
