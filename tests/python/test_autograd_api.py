"""Autograd from Python: grad mode (per thread, decorators), autograd.grad, retain_graph,
version counters, custom Functions, from_op, checkpoint, gradcheck, anomaly mode, hooks."""

import inspect
import threading
import time

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, check_fd, to_np


# ---------------------------------------------------------------------------------------------
# grad mode


def test_grad_mode_is_per_thread():
    ready, done = threading.Event(), threading.Event()
    seen = {}

    def other():
        ready.wait()
        seen["enabled"] = vk.is_grad_enabled()  # main thread is inside no_grad meanwhile
        x = vk.tensor([1.0], requires_grad=True)
        seen["records"] = (x * 2).requires_grad
        with vk.no_grad():
            seen["inner"] = vk.is_grad_enabled()
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with vk.no_grad():
        ready.set()
        done.wait(10)
        assert not vk.is_grad_enabled()  # the other thread's no_grad did not leak here either
    t.join()
    assert seen == {"enabled": True, "records": True, "inner": False}
    assert vk.is_grad_enabled()


def test_no_grad_as_decorator():
    x = vk.tensor([1.0], requires_grad=True)

    @vk.no_grad()
    def with_parens(v):
        return v * 2

    @vk.no_grad
    def bare(v):
        return v * 2

    @vk.enable_grad()
    def reenable(v):
        return v * 2

    assert not with_parens(x).requires_grad and not bare(x).requires_grad
    assert with_parens.__name__ == "with_parens"  # functools.wraps
    with vk.no_grad():
        assert reenable(x).requires_grad
        assert not vk.is_grad_enabled()
    assert vk.is_grad_enabled()

    @vk.no_grad()
    def gen(v):
        for _ in range(2):
            yield vk.is_grad_enabled(), (v * 2).requires_grad

    assert inspect.isgeneratorfunction(gen)
    assert list(gen(x)) == [(False, False), (False, False)]
    assert vk.is_grad_enabled()


def test_no_grad_decorator_is_thread_safe():
    @vk.no_grad()
    def slow(flags):
        flags.append(vk.is_grad_enabled())
        time.sleep(0.01)
        flags.append(vk.is_grad_enabled())

    flags = []
    threads = [threading.Thread(target=slow, args=(flags,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert flags == [False] * 8
    assert vk.is_grad_enabled()


def test_set_grad_enabled_forms():
    vk.set_grad_enabled(False)
    assert not vk.is_grad_enabled()
    vk.set_grad_enabled(True)
    assert vk.is_grad_enabled()
    with vk.set_grad_enabled(False):
        assert not vk.is_grad_enabled()
        with vk.set_grad_enabled(True):
            assert vk.is_grad_enabled()
        assert not vk.is_grad_enabled()
    assert vk.is_grad_enabled()

    @vk.set_grad_enabled(False)
    def f():
        return vk.is_grad_enabled()

    assert vk.is_grad_enabled()  # decorating does not change the mode
    assert f() is False and vk.is_grad_enabled()
    with pytest.raises(ZeroDivisionError):
        with vk.set_grad_enabled(False):
            1 / 0
    assert vk.is_grad_enabled()
    with vk.inference_mode():
        assert not vk.is_grad_enabled()


def test_threads_compute_at_once():
    """Heavy ops and backward release the GIL: another Python thread keeps running."""
    a = vk.rand(700, 700, dtype=vk.float64, requires_grad=True)
    b = vk.rand(700, 700, dtype=vk.float64)
    result = {}

    def work():
        y = a
        for _ in range(6):
            y = (y @ b) * 0.01
        y.sum().backward()
        result["done"] = True

    t = threading.Thread(target=work)
    ticks = 0
    t.start()
    while t.is_alive():
        ticks += 1
        time.sleep(0.0005)
    t.join()
    assert result.get("done")
    assert ticks >= 10, f"the main thread ran only {ticks} times while vkml computed"


# ---------------------------------------------------------------------------------------------
# grad / backward


def test_autograd_grad_options():
    x = vk.tensor([1.0, 2.0], dtype=vk.float64, requires_grad=True)
    z = vk.tensor([3.0], dtype=vk.float64, requires_grad=True)
    y = (x ** 3).sum()
    (g,) = vk.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(to_np(g), [3, 12])
    assert x.grad is None  # grad() touches no .grad
    (gg,) = vk.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(to_np(gg), [6, 12])
    with pytest.raises(RuntimeError, match="allow_unused"):
        vk.autograd.grad((x * 2).sum(), [x, z])
    gx, gz = vk.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gz is None and to_np(gx).tolist() == [2, 2]
    gx, gz = vk.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
    assert to_np(gz).tolist() == [0]
    # several outputs with weights
    a, b = x * 2, x * x
    (g,) = vk.autograd.grad([a, b], [x], [vk.tensor([1.0, 1.0], dtype=vk.float64),
                                          vk.tensor([0.5, 2.0], dtype=vk.float64)])
    np.testing.assert_allclose(to_np(g), [2 + 1.0, 2 + 8.0])
    # vs torch: a Hessian-vector product
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad((tx.sin() * tx).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad((tg * torch.tensor([0.3, -0.7], dtype=torch.float64)).sum(), tx)
    (vg,) = vk.autograd.grad((x.sin() * x).sum(), x, create_graph=True)
    (vgg,) = vk.autograd.grad((vg * vk.tensor([0.3, -0.7], dtype=vk.float64)).sum(), x)
    assert_close(vgg, tgg)


def test_multiple_roots_backward():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    vk.autograd.backward([(x * 2).sum(), (x * x).sum()])
    np.testing.assert_array_equal(to_np(x.grad), [4, 6])
    x.grad = None
    y = x * 3
    y.backward(gradient=[1.0, 2.0])
    np.testing.assert_array_equal(to_np(x.grad), [3, 6])
    x.grad = None
    w = vk.tensor([1.0], requires_grad=True)
    (x.sum() * w).backward(inputs=[w])
    assert x.grad is None and w.grad.item() == 3.0


def test_retain_graph():
    x = vk.tensor([2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 8.0
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_inplace_on_saved_tensor_raises():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    a = vk.tensor([3.0, 4.0])
    z = (a * x).sum()  # mul saved `a`
    a.mul_(2.0)
    assert a._version == 1
    with pytest.raises(RuntimeError, match="mul"):
        z.backward()


def test_inplace_write_into_returned_indices_raises_regression():
    """Defect: writing into the indices max / sort / max_pool2d returned, before backward, was
    not noticed and the gradient went where the new indices pointed; now a RuntimeError, as
    torch's (whose message says the same)."""
    import torch
    F = {vk: vk.nn.functional, torch: torch.nn.functional}
    cases = [
        lambda L, x: L.max(x, 0),
        lambda L, x: x.sort(1),
        lambda L, x: x.topk(2, 1),
        lambda L, x: F[L].max_pool2d(x.reshape(1, 1, 2, 3), (2, 2), stride=1, return_indices=True),
    ]
    for i, op in enumerate(cases):
        for L in (vk, torch):
            x = L.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]], requires_grad=True)
            values, indices = op(L, x)
            indices.zero_()
            with pytest.raises(RuntimeError, match="modified by an inplace operation|modified by an in-place"):
                values.sum().backward()
        x = vk.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]], requires_grad=True)
        values, _ = op(vk, x)
        values.sum().backward()  # untouched indices: backward runs
        assert x.grad is not None, i


def test_inplace_rules():
    w = vk.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        w.add_(1.0)  # a leaf that requires grad, while recording
    with pytest.raises(RuntimeError):
        w += 1.0
    with vk.no_grad():  # an optimizer step
        ref = w
        w -= 0.5 * vk.tensor([1.0, 1.0])
        w.mul_(2.0)
    assert ref is w
    np.testing.assert_array_equal(to_np(w), [1, 3])
    # an intermediate result: `h += x` rebinds to h + x (same values and gradients)
    h = w * 2
    h += w
    h.sum().backward()
    np.testing.assert_array_equal(to_np(w.grad), [3, 3])
    # in-place methods return the tensor itself and bump its version
    t = vk.zeros(3)
    v0 = t._version
    assert t.add_(1.0) is t and t.sub_(0.5) is t and t.mul_(4.0) is t and t.div_(2.0) is t
    np.testing.assert_array_equal(to_np(t), [1, 1, 1])
    assert t.fill_(3.0) is t and t.clamp_(max=2.0) is t
    np.testing.assert_array_equal(to_np(t), [2, 2, 2])
    assert t.copy_(vk.tensor([1.0, 2.0, 3.0])) is t and t.zero_() is t
    np.testing.assert_array_equal(to_np(t), [0, 0, 0])
    assert t._version > v0
    t[1] = 5.0
    t[vk.tensor([True, False, True])] = 7.0
    np.testing.assert_array_equal(to_np(t), [7, 5, 7])


# ---------------------------------------------------------------------------------------------
# custom ops


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


class ScaledMul(vk.autograd.Function):
    """Non-tensor argument, two tensor inputs, needs_input_grad."""

    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        ctx.seen_needs = ctx.needs_input_grad
        return a * b * scale

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b * ctx.scale, g * a * ctx.scale, None


def test_function_forward_backward():
    x = vk.tensor([0.5, -1.0], dtype=vk.float64, requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name == "ExpBackward"
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), np.exp([0.5, -1.0]))
    assert vk.autograd.gradcheck(lambda v: Exp.apply(v), (vk.tensor([0.3, 0.1], dtype=vk.float64,
                                                                     requires_grad=True),))
    # second order through the Function's backward (written with vkml ops)
    x2 = vk.tensor([0.2, 0.4], dtype=vk.float64, requires_grad=True)
    assert vk.autograd.gradgradcheck(lambda v: Exp.apply(v * v), (x2,))


def test_function_non_tensor_args_and_needs_input_grad():
    a = vk.tensor([1.0, 2.0], requires_grad=True)
    b = vk.tensor([3.0, 4.0])
    y = ScaledMul.apply(a, b, 0.5)
    y.sum().backward()
    np.testing.assert_allclose(to_np(a.grad), [1.5, 2.0])
    assert b.grad is None


def test_function_multiple_outputs():
    class Two(vk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2, x * x

        @staticmethod
        def backward(ctx, g1, g2):
            (x,) = ctx.saved_tensors
            return g1 * 2 + g2 * 2 * x

    x = vk.tensor([1.0, 3.0], requires_grad=True)
    p, q = Two.apply(x)
    (p.sum() + (q * 10).sum()).backward()
    np.testing.assert_allclose(to_np(x.grad), [2 + 20 * 1, 2 + 20 * 3])


def test_function_wrong_gradient_count_raises():
    class Bad(vk.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    x = vk.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="BadBackward"):
        Bad.apply(x, x).sum().backward()


def test_gradcheck_detects_a_wrong_rule():
    class WrongSin(vk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.sin()  # should be cos

    x = vk.tensor([0.3, 1.2], dtype=vk.float64, requires_grad=True)
    assert vk.autograd.gradcheck(lambda v: WrongSin.apply(v), (x,), raise_exception=False) is False
    with pytest.raises(vk.autograd.GradcheckError):
        vk.autograd.gradcheck(lambda v: WrongSin.apply(v), (x,))
    assert vk.autograd.gradcheck(lambda v: v.sin() * v, (x,))


def test_from_op_second_order_and_errors():
    x = vk.tensor([0.5, 1.5], dtype=vk.float64, requires_grad=True)
    y = vk.from_op((x ** 3).detach(), [x], lambda g: [3 * x * x * g], op="cube")
    (g,) = vk.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = vk.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(to_np(gg), 6 * np.array([0.5, 1.5]))

    def boom(g):
        raise ValueError("vjp failed")

    z = vk.from_op((x * 2).detach(), [x], boom, op="boom")
    with pytest.raises(ValueError, match="vjp failed"):
        z.sum().backward()
    # a vjp may return numpy arrays; they take the parent's dtype
    w = vk.from_op((x * 2).detach(), [x], lambda g: [np.full(2, 2.0)], op="np")
    (gw,) = vk.autograd.grad(w.sum(), x)
    assert gw.dtype == vk.float64 and to_np(gw).tolist() == [2.0, 2.0]
    assert w.grad_fn.name == "NpBackward"


def test_checkpoint_matches_and_repeats_randomness():
    def block(x, w):
        mask = (vk.rand(*x.shape, dtype=x.dtype) > 0.5).to(x.dtype)  # a dropout mask
        return ((x @ w).tanh() * mask).sum(1)

    x0 = np.random.default_rng(0).uniform(-1, 1, (4, 3))
    w0 = np.random.default_rng(1).uniform(-1, 1, (3, 3))

    def grads(use_checkpoint, create_graph=False):
        x = vk.tensor(x0, requires_grad=True)
        w = vk.tensor(w0, requires_grad=True)
        vk.manual_seed(42)
        y = vk.utils.checkpoint(block, x, w) if use_checkpoint else block(x, w)
        vk.rand(10)  # the stream moves on before backward: recomputation must not see this
        gx, gw = vk.autograd.grad((y * y).sum(), [x, w], create_graph=create_graph)
        if create_graph:
            (h,) = vk.autograd.grad(gw.sum(), [x])
            return to_np(gx), to_np(gw), to_np(h)
        return to_np(gx), to_np(gw)

    for a, b in zip(grads(False), grads(True)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for a, b in zip(grads(False, True), grads(True, True)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    # backward() through a checkpoint
    x = vk.tensor(x0, requires_grad=True)
    w = vk.tensor(w0, requires_grad=True)
    vk.utils.checkpoint(lambda a, b, k: (a @ b * k).sum(), x, w, 2.0).backward()
    np.testing.assert_allclose(to_np(w.grad), 2 * x0.sum(0)[:, None].repeat(3, 1), rtol=1e-12)


def test_detect_anomaly_names_op_and_site():
    x = vk.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt().sum()
    y.backward()  # without anomaly mode: an inf gradient, no error
    assert np.isinf(to_np(x.grad)[0])
    x.grad = None
    with vk.autograd.detect_anomaly():
        assert vk.autograd.is_anomaly_enabled()
        y = x.sqrt().sum()  # the line named in the error
        line = inspect.currentframe().f_lineno - 1
        with pytest.raises(RuntimeError) as info:
            y.backward()
    assert not vk.autograd.is_anomaly_enabled()
    msg = str(info.value)
    assert "sqrt" in msg and "test_autograd_api.py:" + str(line) in msg, msg


def test_hooks_and_retain_grad():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    seen = []
    handle = h.register_hook(lambda g: seen.append(to_np(g)) or g * 2)
    (h * h).sum().backward()
    np.testing.assert_array_equal(seen[0], [6, 12])
    np.testing.assert_array_equal(to_np(x.grad), [36, 72])  # the hook doubled the gradient
    handle.remove()
    x.grad = None
    h2 = x * 3
    (h2 * 1).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [3, 3])
    assert len(seen) == 1
    with pytest.raises(RuntimeError):
        vk.tensor([1.0]).register_hook(lambda g: g)


def test_grad_fn_and_leaf_properties():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sum()
    assert x.is_leaf and x.grad_fn is None
    assert not y.is_leaf and y.grad_fn.name == "SumBackward"
    assert repr(y.grad_fn) == "<SumBackward>"
    ((fn, _),) = y.grad_fn.next_functions
    assert fn.name == "MulBackward"
    names = [f.name if f is not None else None for f, _ in fn.next_functions]
    assert "AccumulateGrad" in names or "ExpandBackward" in names
    c = vk.tensor([1.0]) * 2
    assert c.is_leaf and c.grad_fn is None
    with pytest.raises(vk.DTypeError):
        vk.tensor([1, 2]).requires_grad_()
    with pytest.raises(vk.DTypeError):
        vk.tensor([1, 2], requires_grad=True)
    assert x.requires_grad_(False) is x and not x.requires_grad


def test_checkpoint_sequential_and_the_checkpoint_module_as_torchs():
    from vkml.utils.checkpoint import checkpoint, checkpoint_sequential
    assert vk.utils.checkpoint.checkpoint is checkpoint and callable(vk.utils.checkpoint)
    rng = np.random.default_rng(4)
    ws = [rng.standard_normal((5, 5)) for _ in range(5)]
    x0 = rng.standard_normal((3, 5))
    grads = {}
    for m in (vk, torch):
        layers = []
        for w in ws:
            lin = m.nn.Linear(5, 5, bias=False).double()
            with m.no_grad():
                lin.weight.copy_(m.tensor(w))
            layers += [lin, m.nn.Tanh()]
        seq = m.nn.Sequential(*layers)
        x = m.tensor(x0, requires_grad=True)
        if m is vk:
            y = checkpoint_sequential(seq, 3, x)
        else:
            y = torch.utils.checkpoint.checkpoint_sequential(seq, 3, x, use_reentrant=False)
        y.pow(2).sum().backward()
        grads[m.__name__] = [x.grad.numpy()] + [l.weight.grad.numpy() for l in seq[::2]]
    for a, b in zip(grads["vkml"], grads["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(vk.nn.Sequential(vk.nn.Tanh()), 2, vk.ones(2))


def test_variable_and_autograd_modules_as_torch():
    """Old programs' `from torch.autograd import Variable` and custom-op code's
    `from torch.autograd.function import once_differentiable`."""
    import warnings

    import torch
    from vkml.autograd.function import Function, FunctionCtx, InplaceFunction, once_differentiable  # noqa: F401
    from vkml.autograd.grad_mode import no_grad as grad_mode_no_grad
    from vkml.autograd.variable import Variable

    for lib, V in ((vk, Variable), (torch, torch.autograd.Variable)):
        t = lib.ones(2)
        v = V(t)
        assert v is not t and not v.requires_grad and isinstance(t, V)
        v2 = V(t, requires_grad=True)
        assert v2.requires_grad and not t.requires_grad
        v2.sum().backward()
        assert v2.grad.tolist() == [1.0, 1.0]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            V(t, volatile=True)
        assert any("volatile" in str(w.message) for w in caught)
        with pytest.raises(TypeError, match="Variable data has to be a tensor"):
            V([1, 2])
    assert Variable(vk.tensor([1, 2])).dtype == vk.int64

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = vk.tensor([1.0, 3.0], requires_grad=True)
    Square.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 6.0]
    assert InplaceFunction(inplace=True).inplace
    with grad_mode_no_grad():
        assert not (x * 2).requires_grad


def test_custom_function_saved_tensor_written_in_place_raises_regression():
    """Defect: a tensor a custom Function saved (not one of its inputs) and then written in place
    before backward gave a gradient from its new values, silently (torch raises)."""
    import torch
    for lib in (vk, torch):
        w = lib.tensor([2.0, 3.0])

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(w)
                return x * w

            @staticmethod
            def backward(ctx, g):
                (saved,) = ctx.saved_tensors
                return g * saved

        x = lib.tensor([1.0, 1.0], requires_grad=True)
        y = Scale.apply(x)
        w.mul_(10)
        with pytest.raises(RuntimeError, match="modified by an in-?place"):
            y.sum().backward()
        w2 = lib.tensor([2.0, 3.0])  # untouched: backward runs

        class Scale2(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(w2, None)
                return x * w2

            @staticmethod
            def backward(ctx, g):
                saved, _ = ctx.saved_tensors
                return g * saved

        x = lib.tensor([1.0, 1.0], requires_grad=True)
        Scale2.apply(x).sum().backward()
        assert x.grad.tolist() == [2.0, 3.0]
