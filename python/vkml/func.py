"""vk.func: torch.func's function transforms -- functional_call (a module run with the parameters
and buffers it is handed: MAML, hypernetworks, ensembles), grad / grad_and_value, vjp, jvp, jacrev,
jacfwd, hessian and vmap. Arguments and results may be trees of tensors (vkml.utils._pytree: a dict
of parameters in, a dict of gradients out). They differentiate through vkml's autograd, so they nest
(grad(grad(f)), vmap(grad(f))) and compose with functional_call; vmap runs the function once per
slice (vkml has no batching rules)."""

import contextlib

import vkml as _vk
from ._vmap import vmap
from .autograd import functional as _functional
from .nn.modules.normalization import _BatchNorm, _InstanceNorm
from .utils import _pytree

__all__ = ["debug_unwrap", "functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]


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


def _tensor_leaves(tree):
    """tree's leaves, each a Tensor, and its spec."""
    leaves, spec = _pytree.tree_flatten(tree)
    for leaf in leaves:
        if not isinstance(leaf, _vk.Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")
    return leaves, spec


def _argnums(argnums, args, fn):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums or not all(isinstance(i, int) for i in nums):
        raise RuntimeError(f"{fn}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    for i in nums:
        if not -len(args) <= i < len(args):
            raise RuntimeError(f"Got argnums={argnums}, but only {len(args)} positional inputs")
    return tuple(i % len(args) for i in nums)


class _Inputs:
    """The arguments at argnums with every tensor in them made a differentiable leaf (one that
    already requires grad, as inside another transform, is used as it is so the outer transform
    sees through): `args` to call with, `leaves` to differentiate by, `nested` whether a graph must
    be kept for an outer transform; `regroup` puts per-leaf results back into the arguments'
    shapes."""

    def __init__(self, args, argnums, fn):
        self.args, self.leaves, self._specs, self.nested = list(args), [], [], False
        self.single = isinstance(argnums, int)
        for i in _argnums(argnums, args, fn):
            leaves, spec = _tensor_leaves(self.args[i])
            self.nested |= any(x.requires_grad for x in leaves)
            leaves = [x if x.requires_grad else x.detach().requires_grad_() for x in leaves]
            self.args[i] = spec.unflatten(leaves)
            self.leaves += leaves
            self._specs.append(spec)

    def regroup(self, per_leaf):
        """per_leaf (one item per leaf) as the selected arguments' trees: one tree for an int argnums,
        a tuple of trees for a tuple."""
        trees, at = [], 0
        for spec in self._specs:
            trees.append(spec.unflatten(per_leaf[at:at + spec.num_leaves]))
            at += spec.num_leaves
        return trees[0] if self.single else tuple(trees)


def _detached(tree):
    return _pytree.tree_map(lambda x: x.detach() if isinstance(x, _vk.Tensor) else x, tree)


def _grads_or_zeros(outputs, inputs, grad_outputs, create_graph):
    grads = _vk.autograd.grad(outputs, inputs, grad_outputs=grad_outputs, retain_graph=True,
                              create_graph=create_graph, allow_unused=True)
    return [g if g is not None else _vk.zeros_like(x) for g, x in zip(grads, inputs)]


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (d func / d args[argnums], func(*args)) for a func with one-element
    output (and (output, aux) with has_aux). Each argument differentiated may be a tree of tensors
    (a dict of parameters): its gradient has the same shape."""
    def wrapper(*args, **kwargs):
        with _vk.enable_grad():
            inputs = _Inputs(args, argnums, "grad")
            out = func(*inputs.args, **kwargs)
            if has_aux and not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")
            value, aux = out if has_aux else (out, None)
            if not isinstance(value, _vk.Tensor) or value.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                                   f"got {type(value).__name__}" + (
                                       f" of shape {tuple(value.shape)}" if isinstance(value, _vk.Tensor) else ""))
            grads = _grads_or_zeros([value], inputs.leaves, None, inputs.nested)
        if not inputs.nested:
            value, aux = value.detach(), _detached(aux)
        result = inputs.regroup(grads)
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
    """(func(*primals), vjp_fn) with vjp_fn(cotangents) -- a tree shaped as func's output -- pulled
    back to each primal (a tuple of trees shaped as the primals)."""
    with _vk.enable_grad():
        inputs = _Inputs(primals, tuple(range(len(primals))), "vjp")
        out = func(*inputs.args)
    value, aux = out if has_aux else (out, None)
    outputs, out_spec = _tensor_leaves(value)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        cots, spec = _tensor_leaves(cotangents)
        if spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {spec}, primal output: {out_spec}")
        keep = inputs.nested if create_graph is None else create_graph
        return inputs.regroup(_grads_or_zeros(outputs, inputs.leaves, cots, keep))

    if not inputs.nested:
        value, aux = _detached(value), _detached(aux)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


class _FlatFunction:
    """func as a function of its arguments' tensor leaves returning a tuple of its output's tensor
    leaves (what vk.autograd.functional takes); `out_spec` holds the output's shape once called."""

    def __init__(self, func, args, argnums, fn):
        self.func, self.args, self.out_spec, self.aux = func, list(args), None, None
        self.nums = _argnums(argnums, args, fn)
        self.specs, self.leaves = [], []
        for i in self.nums:
            leaves, spec = _tensor_leaves(self.args[i])
            self.specs.append(spec)
            self.leaves += leaves

    def __call__(self, *leaves, has_aux=False):
        args, at = list(self.args), 0
        for i, spec in zip(self.nums, self.specs):
            args[i] = spec.unflatten(list(leaves[at:at + spec.num_leaves]))
            at += spec.num_leaves
        out = self.func(*args)
        if has_aux:
            out, self.aux = out
        outputs, self.out_spec = _tensor_leaves(out)
        return tuple(outputs)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), the directional derivative along tangents[, func's aux output]); primals
    and tangents are tuples of trees of the same shapes."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    flat = _FlatFunction(func, primals, tuple(range(len(primals))), "jvp")
    tans, spec = _tensor_leaves(tuple(tangents))
    if spec != _pytree.tree_structure(tuple(primals)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure")
    nested = any(p.requires_grad for p in flat.leaves)
    value, out = _functional.jvp(lambda *xs: flat(*xs, has_aux=has_aux), tuple(flat.leaves), tuple(tans),
                                 create_graph=nested)
    value, out = flat.out_spec.unflatten(list(value)), flat.out_spec.unflatten(list(out))
    return (value, out, flat.aux if nested else _detached(flat.aux)) if has_aux else (value, out)


def _jacobian(func, argnums, has_aux, vectorize_mode):
    def wrapper(*args):
        flat = _FlatFunction(func, args, argnums, "jacrev" if vectorize_mode == "reverse-mode" else "jacfwd")
        nested = any(x.requires_grad for x in flat.leaves)
        blocks = _functional.jacobian(lambda *xs: flat(*xs, has_aux=has_aux), tuple(flat.leaves),
                                      create_graph=nested, vectorize=vectorize_mode == "forward-mode",
                                      strategy=vectorize_mode)
        # blocks[i][j]: output leaf i by input leaf j; each output leaf holds the inputs' trees
        per_output = []
        for row in blocks:
            trees, at = [], 0
            for spec in flat.specs:
                trees.append(spec.unflatten(list(row[at:at + spec.num_leaves])))
                at += spec.num_leaves
            per_output.append(trees[0] if isinstance(argnums, int) else tuple(trees))
        jac = flat.out_spec.unflatten(per_output)
        return (jac, flat.aux) if has_aux else jac
    return wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of func with respect to args[argnums], by reverse mode (a vjp per output;
    chunk_size, torch's memory knob for its batched vjps, changes nothing here)."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, "reverse-mode")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func with respect to args[argnums], by forward mode (a jvp per input;
    randomness is vmap's, accepted: the jvps here are not batched)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
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


def replace_all_batch_norm_modules_(root):
    """Every batch norm in root stops tracking running statistics (they are dropped), so each call
    normalises by its own batch's -- what vmap over a model with batch norm needs; returns root."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm) and module.track_running_stats:
            module.running_mean = module.running_var = module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse=True):
    """The plain tensor under a transform's wrapper: vkml's transforms wrap nothing, so tensor."""
    return tensor
