"""vk.vmap / vk.func.vmap: torch.func.vmap's semantics by running the function once per slice of
the mapped dimension and stacking the results -- what torch itself does for an op without a
batching rule. Any function of tensors runs (and composes with grad, jacrev and functional_call:
per-sample gradients, model ensembles); its cost is one call per slice, not one batched call."""

import functools

import vkml as _vk
from .utils import _pytree

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over a dimension of its inputs: in_dims says which dimension of each argument
    (an int for all, or a tuple as the arguments with an int or None per argument, or trees of
    them for trees of tensors; None passes an argument whole), out_dims where that dimension goes
    in each output. randomness: "error" raises if func draws random numbers from the default
    generator, "different" lets each slice draw its own, "same" gives every slice the same draws."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def mapped(*args, **kwargs):
        leaves, spec = _pytree.tree_flatten(args)
        dims = _in_dims(in_dims, args, leaves, spec, name)
        size = _batch_size(leaves, dims)
        start = _rng_state()
        outputs = []
        for b in range(max(size, 1)):  # a batch of 0 runs func once on zeros to learn its outputs' shapes
            if randomness == "same":
                _vk.set_rng_state(start)
            before = _rng_state() if randomness == "error" else None
            sliced = [_slice(x, d, b, size) for x, d in zip(leaves, dims)]
            outputs.append(func(*spec.unflatten(sliced), **kwargs))
            if before is not None and before != _rng_state():
                raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use "
                                   "the 'same' or 'different' randomness flags on vmap or perform the randomness "
                                   "operation out of vmap")
        return _stacked(outputs, out_dims, size, name)
    return mapped


def _rng_state():
    return _vk.get_rng_state().tolist()


def _in_dims(in_dims, args, leaves, spec, name):
    """The mapped dimension of each leaf of args (None: passed whole), checked as torch checks."""
    where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): "
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f"{where}expected `in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise ValueError(f"{where}in_dims is not compatible with the structure of `inputs`. in_dims has structure "
                         f"{_pytree.tree_structure(in_dims)} but inputs has structure {spec}.")
    dims = _pytree._broadcast_to_and_flatten(in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args), spec)
    if dims is None:
        raise ValueError(f"{where}in_dims is not compatible with the structure of `inputs`. in_dims has structure "
                         f"{_pytree.tree_structure(in_dims)} but inputs has structure {spec}.")
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f"{where}Got in_dim={d} for an input but in_dim must be either an integer dimension or "
                             "None.")
        if not isinstance(x, _vk.Tensor):
            raise ValueError(f"{where}Got in_dim={d} for an input but the input is of type {type(x)}. We cannot vmap "
                             "over non-Tensor arguments, please use None as the respective in_dim")
        if not -x.dim() <= d < x.dim():
            raise ValueError(f"{where}Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{x.dim()} so expected in_dim to satisfy -{x.dim()} <= in_dim < {x.dim()}.")
    return dims


def _batch_size(leaves, dims):
    sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _slice(x, dim, b, size):
    if dim is None:
        return x
    if size == 0:
        shape = list(x.shape)
        del shape[dim]
        return x.new_zeros(shape)
    return x.select(dim, b)


def _stacked(outputs, out_dims, size, name):
    """The per-slice outputs (trees of one shape) as one tree, each tensor leaf stacked along its
    out_dim; a leaf with out_dim None must be the same in every slice and is returned once."""
    if not _valid_out_dims(out_dims):
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                         "collection of ints representing where in the outputs the vmapped dimension should appear.")
    flat = [_pytree.tree_flatten(o) for o in outputs]
    spec = flat[0][1]
    if any(s != spec for _, s in flat):
        raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different structures for different "
                         "slices of the batch")
    dims = _pytree._broadcast_to_and_flatten(out_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): out_dims is not compatible with the structure "
                         f"of `outputs`. out_dims has structure {_pytree.tree_structure(out_dims)} but outputs has "
                         f"structure {spec}.")
    result = []
    for i, dim in enumerate(dims):
        parts = [leaves[i] for leaves, _ in flat]
        result.append(_unbatched(parts, name) if dim is None else _stack(parts, dim, size, name))
    return spec.unflatten(result)


def _valid_out_dims(out_dims):
    leaves = _pytree.tree_leaves(out_dims)
    return all(d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in leaves) and (
        out_dims is None or isinstance(out_dims, (int, tuple, list)))


def _stack(parts, dim, size, name):
    if not all(isinstance(p, _vk.Tensor) for p in parts):
        bad = next(p for p in parts if not isinstance(p, _vk.Tensor))
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(bad)}. Did you mean "
                         "to set out_dims= to None for output?")
    out = _vk.stack(parts, dim)
    return out.narrow(dim, 0, 0) if size == 0 else out


def _unbatched(parts, name):
    """An output declared unbatched (out_dim None): the same in every slice, returned once."""
    first = parts[0]
    for p in parts[1:]:
        same = p is first or (isinstance(p, _vk.Tensor) and isinstance(first, _vk.Tensor) and p.shape == first.shape
                              and p.dtype == first.dtype and bool(_vk.equal(p, first))) or (
            not isinstance(p, _vk.Tensor) and not isinstance(first, _vk.Tensor) and p == first)
        if not same:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
    return first
