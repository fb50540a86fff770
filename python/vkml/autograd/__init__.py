"""vkml.autograd: grad, backward, custom functions, gradient checks, anomaly mode, and
vkml.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp).

Everything here forwards to the C++ engine (vk::autograd); Function is a thin layer over
vk::autograd::from_op, the same seam every user-defined op uses.
"""

from .. import _C
from .._C import Tensor
from .._grad_mode import (detect_anomaly, enable_grad, is_anomaly_enabled, is_grad_enabled,
                         no_grad, set_detect_anomaly, set_grad_enabled)

__all__ = ["grad", "backward", "Function", "FunctionCtx", "once_differentiable", "gradcheck",
           "gradgradcheck", "GradcheckError", "detect_anomaly", "set_detect_anomaly",
           "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "is_anomaly_enabled",
           "Variable"]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, materialize_grads=False):
    """d(outputs)/d(inputs) weighted by grad_outputs, as a tuple (None for an unused input when
    allow_unused). Touches no .grad. With create_graph the result can be differentiated again."""
    res = _C.grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                  allow_unused or materialize_grads)
    if materialize_grads:
        ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        res = tuple(_C.zeros_like(x) if g is None else g for g, x in zip(res, ins))
    return res


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates d(tensors)/d(leaf) into the leaves' .grad (several roots at once)."""
    if inputs is not None:
        roots = [tensors] if isinstance(tensors, Tensor) else list(tensors)
        if len(roots) != 1:
            raise NotImplementedError("backward(inputs=...) supports one root")
        roots[0].backward(grad_tensors, retain_graph, create_graph, inputs)
        return
    _C.backward(tensors, grad_tensors, retain_graph, create_graph)


class FunctionCtx:
    """What forward and backward of a Function share."""

    def __init__(self, fn_name="Function"):
        self._fn_name = fn_name  # the Function subclass, named in errors
        self._saved = self._saved_versions = ()
        self._recorded = None  # (forward's output, the recorded output) while backward runs
        self.needs_input_grad = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"{self._fn_name}: save_for_backward can only save tensors (or None), "
                                f"but argument {i} is of type {type(t).__name__}")
        self._saved = tensors
        self._saved_versions = tuple(None if t is None else t._version for t in tensors)

    @property
    def saved_tensors(self):
        """The saved tensors. An output of forward saved here is, during backward, the recorded
        output itself, so a backward that uses it can be differentiated again (as in PyTorch). A
        saved tensor written in place since it was saved is refused, as torch refuses it: the
        gradient would use its new values."""
        for i, (t, version) in enumerate(zip(self._saved, self._saved_versions)):
            if t is not None and t._version != version:
                raise RuntimeError(f"{self._fn_name}: one of the tensors needed for gradient computation has been "
                                   f"modified by an in-place operation: saved tensor {i} ({t.dtype} of shape "
                                   f"{tuple(t.shape)}) is at version {t._version}; expected version {version}")
        if self._recorded is None:
            return self._saved
        fwd, rec = self._recorded
        return tuple(rec if t is fwd else t for t in self._saved)

    def mark_non_differentiable(self, *tensors):
        pass

    def mark_dirty(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        self.materialize_grads = value


class Function:
    """A differentiable op written in Python, as torch.autograd.Function:

        class Exp(vk.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y
            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y
        y = Exp.apply(x)

    forward runs without recording; backward returns one gradient per forward argument (None
    for non-tensors or inputs without gradient). Built with vkml ops, backward is itself
    differentiable (create_graph). forward may return a tuple of tensors.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("Function subclasses must implement forward")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("Function subclasses must implement backward")

    @classmethod
    def apply(cls, *args, **kwargs):
        # The defaults above cannot name the subclass (static methods do not see it): check here.
        if cls.forward is Function.forward:
            raise NotImplementedError(f"{cls.__name__}.forward is not implemented: a "
                                      "vk.autograd.Function subclass must define forward(ctx, *args)")
        ctx = FunctionCtx(cls.__name__)
        recording = _C.is_grad_enabled()
        ctx.needs_input_grad = tuple(recording and isinstance(a, Tensor) and a.requires_grad
                                     for a in args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        parents = [args[i] for i in positions]
        name = cls.__name__ + "Backward"

        def pick(grads):
            if not isinstance(grads, (tuple, list)):
                grads = (grads,)
            grads = tuple(grads)
            # trailing Nones beyond the inputs are allowed, as in PyTorch
            while len(grads) > len(args) and grads[-1] is None:
                grads = grads[:-1]
            if len(grads) != len(args):
                raise RuntimeError(f"{name}: backward returned {len(grads)} gradients for "
                                   f"{len(args)} forward arguments")
            return [grads[i] for i in positions]

        def call_backward(fwd_out, recorded, grads):
            if cls.backward is Function.backward:  # raised when backward runs, as in torch
                raise NotImplementedError(f"{cls.__name__}.backward is not implemented: a "
                                          "vk.autograd.Function subclass must define "
                                          "backward(ctx, *grads) to be differentiated")
            ctx._recorded = (fwd_out, recorded)
            try:
                return pick(cls.backward(ctx, *grads))
            finally:
                ctx._recorded = None

        if not isinstance(out, (tuple, list)):
            return _C.from_op(out, parents, lambda g, rec: call_backward(out, rec, (g,)), name, True)

        # Several outputs: one node per output; by linearity the gradient of each input is the
        # sum of backward's results with the other outputs' gradients set to zero.
        outs = list(out)
        tensor_outs = [o for o in outs if isinstance(o, Tensor)]

        def make_vjp(k):
            def vjp(g, rec):
                grads = [g if j == k else _C.zeros_like(o) for j, o in enumerate(tensor_outs)]
                return call_backward(tensor_outs[k], rec, grads)
            return vjp

        results, k = [], 0
        for o in outs:
            if isinstance(o, Tensor):
                results.append(_C.from_op(o, parents, make_vjp(k), name, True))
                k += 1
            else:
                results.append(o)
        return type(out)(results) if isinstance(out, tuple) else results


def once_differentiable(backward):
    """Marks a backward that is not itself differentiable: it runs without recording."""
    def wrapper(ctx, *grads):
        with no_grad():
            return backward(ctx, *grads)
    wrapper.__name__ = getattr(backward, "__name__", "backward")
    return wrapper


class GradcheckError(RuntimeError):
    """An analytic gradient disagreed with finite differences."""


def _as_tuple(inputs):
    return (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **unused):
    """Checks every analytic Jacobian entry of func at inputs (float64 tensors that require
    grad) against central differences. True when they agree; otherwise raises GradcheckError
    (or returns False with raise_exception=False)."""
    err = _C.gradcheck(func, _as_tuple(inputs), eps, atol, rtol)
    if err:
        if raise_exception:
            raise GradcheckError("gradcheck failed:\n" + err)
        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **unused):
    """gradcheck of the first derivative: checks second derivatives against finite
    differences of the (analytic) first derivative."""
    err = _C.gradgradcheck(func, _as_tuple(inputs), eps, atol, rtol)
    if err:
        if raise_exception:
            raise GradcheckError("gradgradcheck failed:\n" + err)
        return False
    return True

from . import functional  # noqa: E402  (torch.autograd.functional: built on grad above)
from . import profiler  # noqa: E402  (torch.autograd.profiler: vk.profiler's older names)


class _VariableMeta(type):
    def __instancecheck__(cls, other):  # every tensor is a Variable, as in torch
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch.autograd.Variable, kept by torch for old programs: Variable(t) is t's data as a new
    tensor (t.detach()) that requires grad when asked; volatile only warns, as torch's."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            import warnings
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          stacklevel=2)
        out = data.detach()
        return out.requires_grad_() if requires_grad else out
