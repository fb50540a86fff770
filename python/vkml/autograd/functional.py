"""vkml.autograd.functional: torch.autograd.functional's higher-level derivatives of a function of
tensors -- vjp, jvp, jacobian, hessian, vhp and hvp -- composed of vk.autograd.grad. jvp uses the
double-backward identity (the gradient of <J^T u, v> with respect to u is J v), so it runs on
reverse mode alone; jacobian takes one vjp per output element (or one jvp per input element for
strategy="forward-mode"), with vectorize accepted and computing the same values."""

from . import grad as _grad
from .._C import Tensor, stack
from .._grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, arg, fn):
    """(tuple of tensors, whether x was a tuple)."""
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            where = f"element {i} of " if is_tuple else ""
            raise TypeError(f"The {where}{arg} given to {fn} must be a Tensor, got {type(t).__name__}")
    return items, is_tuple


def _prepare(inputs, create_graph):
    """Leaves the function is differentiated at: with create_graph, views that keep the inputs'
    own graph; else fresh leaves."""
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(True))
    return tuple(out)


def _call(func, inputs, is_tuple, fn):
    outputs = func(*inputs) if is_tuple else func(inputs[0])
    return _as_tuple(outputs, "outputs of the user-provided function", fn)


def _check_v(v, like, what, fn):
    if len(v) != len(like):
        raise RuntimeError(f"The given v should contain a single Tensor for each {what} ({len(like)}), got {len(v)}")
    for i, (a, b) in enumerate(zip(v, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {tuple(b.shape)} but got {tuple(a.shape)}.")


def _default_v(v, like, what, fn):
    if v is not None:
        vs, _ = _as_tuple(v, "v", fn)
        _check_v(vs, like, what, fn)
        return vs
    if len(like) != 1 or like[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if the {what} to the user-provided function is a "
                           "single Tensor with a single element.")
    return (like[0].new_ones(like[0].shape),)


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn, what="input"):
    """d<outputs, grad_outputs>/d inputs; an input the outputs do not depend on gets zeros (or,
    strict, an error)."""
    used = [i for i, o in enumerate(outputs) if o.requires_grad]
    if used:
        res = _grad([outputs[i] for i in used], inputs, [grad_outputs[i] for i in used],
                    retain_graph=True, create_graph=create_graph, allow_unused=True)
    else:
        res = (None,) * len(inputs)
    out = []
    for i, (g, x) in enumerate(zip(res, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of {what} {i}. "
                                   "This is not allowed in strict mode.")
            g = x.new_zeros(x.shape)
        out.append(g if create_graph else g.detach())
    return tuple(out)


def _result(items, is_tuple, create_graph):
    items = tuple(t if create_graph else t.detach() for t in items)
    return items if is_tuple else items[0]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): J is func's Jacobian at inputs; v (output-shaped) may be None for a
    single-element output."""
    fn = "vjp"
    with enable_grad():
        ins, in_tuple = _as_tuple(inputs, "inputs", fn)
        ins = _prepare(ins, create_graph)
        outs, out_tuple = _call(func, ins, in_tuple, fn)
        vs = _default_v(v, outs, "output", fn)
        res = _grads(outs, ins, vs, create_graph, strict, fn)
    return _result(outs, out_tuple, create_graph), _result(res, in_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): v (input-shaped) may be None for a single-element input."""
    fn = "jvp"
    with enable_grad():
        ins, in_tuple = _as_tuple(inputs, "inputs", fn)
        ins = _prepare(ins, create_graph)
        vs = _default_v(v, ins, "input", fn)
        outs, out_tuple = _call(func, ins, in_tuple, fn)
        # J v as the gradient of <J^T u, v> with respect to u, at any u
        us = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outs)
        jtu = _grads(outs, ins, us, True, strict, fn)
        res = _grads(jtu, us, vs, create_graph, strict, fn, what="output")
    return _result(outs, out_tuple, create_graph), _result(res, out_tuple, create_graph)


def _jacobian_rows(outs, ins, create_graph, strict, fn):
    """[output][input] blocks of shape out.shape + in.shape, one vjp per output element."""
    blocks = []
    for o in outs:
        rows = [[] for _ in ins]
        flat = o.reshape(-1)
        for k in range(flat.numel()):
            unit = flat.new_zeros(flat.shape)
            unit[k] = 1
            g = _grads((o,), ins, (unit.reshape(o.shape),), create_graph, strict, fn)
            for j, gj in enumerate(g):
                rows[j].append(gj)
        blocks.append([_block(r, o, x, 0) for r, x in zip(rows, ins)])
    return blocks


def _block(parts, o, x, dim):
    """The (output o, input x) block of shape o.shape + x.shape from its per-element parts: rows
    (x-shaped, one per element of o) stacked along dim 0, or columns (o-shaped) along dim -1."""
    if not parts:
        return o.new_zeros(tuple(o.shape) + tuple(x.shape))
    return stack(parts, dim).reshape(tuple(o.shape) + tuple(x.shape))


def _jacobian_columns(func, ins, in_tuple, create_graph, strict, fn):
    """Whether func returns a tuple, and the same blocks from one jvp per input element
    (forward-mode strategy)."""
    with enable_grad():
        outs, out_tuple = _call(func, ins, in_tuple, fn)
    cols = [[[] for _ in ins] for _ in outs]
    for j, x in enumerate(ins):
        for k in range(x.numel()):
            vs = [t.new_zeros(t.shape) for t in ins]
            flat = vs[j].reshape(-1)
            flat[k] = 1
            vs[j] = flat.reshape(x.shape)
            _, jv = jvp(func, tuple(ins) if in_tuple else ins[0], tuple(vs) if in_tuple else vs[0],
                        create_graph=create_graph, strict=strict)
            jv = jv if isinstance(jv, tuple) else (jv,)
            for i, t in enumerate(jv):
                cols[i][j].append(t)
    blocks = [[_block(cols[i][j], o, x, -1) for j, x in enumerate(ins)] for i, o in enumerate(outs)]
    return out_tuple, blocks


def _shape_result(blocks, in_tuple, out_tuple):
    if out_tuple:
        return tuple(tuple(r) if in_tuple else r[0] for r in blocks)
    return tuple(blocks[0]) if in_tuple else blocks[0][0]


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """func's Jacobian at inputs: for each (output, input) pair a tensor of shape output.shape +
    input.shape, nested as torch's (a tensor, a tuple, or a tuple of tuples)."""
    fn = "jacobian"
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                         'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-mode\"` is only "
                                  "implemented with `vectorize=True`")
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` and "
                                  "`strategy=\"forward-mode\"` are not supported together (yet).")
    with enable_grad():
        ins, in_tuple = _as_tuple(inputs, "inputs", fn)
        ins = _prepare(ins, create_graph)
        if strategy == "forward-mode":
            out_tuple, blocks = _jacobian_columns(func, ins, in_tuple, create_graph, strict, fn)
        else:
            outs, out_tuple = _call(func, ins, in_tuple, fn)
            blocks = _jacobian_rows(outs, ins, create_graph, strict, fn)
    if not create_graph:
        blocks = [[b.detach() for b in row] for row in blocks]
    return _shape_result(blocks, in_tuple, out_tuple)


def _scalar_func(func, fn):
    def checked(*args):
        out = func(*args)
        outs, out_tuple = _as_tuple(out, "outputs of the user-provided function", fn)
        if out_tuple or outs[0].numel() != 1:
            raise RuntimeError(f"The function given to {fn} should return a single Tensor with a single "
                               f"element, got {'a tuple' if out_tuple else tuple(outs[0].shape)}")
        return outs[0]
    return checked


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar func at inputs: the Jacobian of its gradient (a tensor of shape
    input.shape * 2, or a tuple of tuples of blocks)."""
    fn = "hessian"
    scalar = _scalar_func(func, fn)
    ins, in_tuple = _as_tuple(inputs, "inputs", fn)

    def gradient(*args):
        with enable_grad():
            xs = args
            out = scalar(*xs)
            return _grads((out,), xs, (out.new_ones(out.shape),), True, strict, fn)

    def jac_func(*args):
        g = gradient(*args)
        return g if in_tuple else g[0]

    return jacobian(jac_func, ins if in_tuple else ins[0], create_graph=create_graph, strict=strict,
                    vectorize=vectorize, strategy=outer_jacobian_strategy)


def _gradient_at(func, inputs, v, create_graph, strict, fn):
    """A scalar func's value and gradient at inputs, recorded (vhp and hvp differentiate it again),
    with the leaves, whether inputs was a tuple, and v checked against them."""
    scalar = _scalar_func(func, fn)
    ins, in_tuple = _as_tuple(inputs, "inputs", fn)
    ins = _prepare(ins, create_graph)
    vs = _default_v(v, ins, "input", fn)
    out = scalar(*ins)
    g = _grads((out,), ins, (out.new_ones(out.shape),), True, strict, fn)
    return out, ins, in_tuple, vs, g


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar func."""
    with enable_grad():
        out, ins, in_tuple, vs, g = _gradient_at(func, inputs, v, create_graph, strict, "vhp")
        res = _grads(g, ins, vs, create_graph, strict, "vhp")
    return (out if create_graph else out.detach()), _result(res, in_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar func, by double backward: with u a free vector, H^T u is
    the gradient of <g(x), u> and H v the gradient of <H^T u, v> in u (the same values as vhp's,
    H being symmetric)."""
    with enable_grad():
        out, ins, in_tuple, vs, g = _gradient_at(func, inputs, v, create_graph, strict, "hvp")
        us = tuple(x.new_zeros(x.shape).requires_grad_(True) for x in ins)
        hu = _grads(g, ins, us, True, strict, "hvp")
        res = _grads(hu, us, vs, create_graph, strict, "hvp")
    return (out if create_graph else out.detach()), _result(res, in_tuple, create_graph)
