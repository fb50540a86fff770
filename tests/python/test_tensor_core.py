"""The Tensor contract: the 27 tests of seed 004's section 4 (same names), and the worked
numbers of seed 003. Gradients are checked against hand-derived values, central finite
differences (conftest.check_fd) and, where useful, PyTorch."""

import threading

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, check_fd, to_np


# ---------------------------------------------------------------------------------------------
# a scalar reverse-mode oracle (micrograd's Value): the test of "a Tensor op is a batch of
# scalar ops"


class Value:
    def __init__(self, data, parents=(), local=()):
        self.data, self.grad, self._parents, self._local = float(data), 0.0, parents, local

    def __add__(self, o):
        o = o if isinstance(o, Value) else Value(o)
        return Value(self.data + o.data, (self, o), (1.0, 1.0))

    __radd__ = __add__

    def __mul__(self, o):
        o = o if isinstance(o, Value) else Value(o)
        return Value(self.data * o.data, (self, o), (o.data, self.data))

    __rmul__ = __mul__

    def __sub__(self, o):
        o = o if isinstance(o, Value) else Value(o)
        return Value(self.data - o.data, (self, o), (1.0, -1.0))

    def __truediv__(self, o):
        o = o if isinstance(o, Value) else Value(o)
        return Value(self.data / o.data, (self, o), (1.0 / o.data, -self.data / o.data ** 2))

    def __pow__(self, p):
        return Value(self.data ** p, (self,), (p * self.data ** (p - 1),))

    def backward(self):
        order, seen = [], set()
        stack = [(self, False)]
        while stack:
            v, done = stack.pop()
            if done:
                order.append(v)
                continue
            if id(v) in seen:
                continue
            seen.add(id(v))
            stack.append((v, True))
            stack.extend((p, False) for p in v._parents)
        self.grad = 1.0
        for v in reversed(order):
            for p, d in zip(v._parents, v._local):
                p.grad += d * v.grad


# ---------------------------------------------------------------------------------------------
# seed 004, section 4


def test_hand_example_broadcast_backward():
    x = vk.Tensor([[1, 2, 3], [4, 5, 6]], requires_grad=True)
    w = vk.Tensor([10, 20, 30], requires_grad=True)
    y = x * w + w
    np.testing.assert_array_equal(to_np(y), [[20, 60, 120], [50, 120, 210]])
    y.backward(vk.ones(2, 3))
    np.testing.assert_array_equal(to_np(w.grad), [7, 9, 11])
    np.testing.assert_array_equal(to_np(x.grad), [[10, 20, 30], [10, 20, 30]])
    # one entry by perturbation: raising w0 by h raises sum(y) by 7h
    h = 1e-3
    w2 = vk.Tensor([10 + h, 20, 30], dtype=vk.float64)
    x64 = vk.Tensor(to_np(x), dtype=vk.float64)
    w64 = vk.Tensor([10, 20, 30], dtype=vk.float64)
    slope = ((x64 * w2 + w2).sum().item() - (x64 * w64 + w64).sum().item()) / h
    assert slope == pytest.approx(7.0, rel=1e-9)


def test_matches_scalarized_value():
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (2, 3))
    B = rng.uniform(-1, 1, (3,))
    C = rng.uniform(0.5, 2.0, (2, 1))
    a, b, c = (vk.tensor(v, requires_grad=True) for v in (A, B, C))
    out = ((a * b + c) / (c + 2.0) - a ** 2 * 0.5).sum()
    out.backward()
    va = [[Value(A[i, j]) for j in range(3)] for i in range(2)]
    vb = [Value(B[j]) for j in range(3)]
    vc = [Value(C[i, 0]) for i in range(2)]
    total = Value(0.0)
    for i in range(2):
        for j in range(3):
            total = total + ((va[i][j] * vb[j] + vc[i]) / (vc[i] + 2.0) - va[i][j] ** 2 * 0.5)
    total.backward()
    assert out.item() == pytest.approx(total.data, rel=1e-12)
    np.testing.assert_allclose(to_np(a.grad), [[v.grad for v in row] for row in va], rtol=1e-12)
    np.testing.assert_allclose(to_np(b.grad), [v.grad for v in vb], rtol=1e-12)
    np.testing.assert_allclose(to_np(c.grad), [[v.grad] for v in vc], rtol=1e-12)


BROADCAST_PATTERNS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)), ((2, 1, 3), (4, 1))]


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("sa,sb", BROADCAST_PATTERNS)
def test_add_sub_mul_grads(op, sa, sb):
    rng = np.random.default_rng(1)
    fn = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}[op]
    a, b = rng.uniform(-2, 2, sa), rng.uniform(-2, 2, sb)
    check_fd(fn, [a, b])
    # the gradient of a broadcast operand has the operand's shape (summed over stretched axes)
    ta, tb = vk.tensor(a, requires_grad=True), vk.tensor(b, requires_grad=True)
    fn(ta, tb).sum().backward()
    assert ta.grad.shape == sa and tb.grad.shape == sb


def test_div_grads():
    a = vk.tensor([3.0, -2.0], dtype=vk.float64, requires_grad=True)
    b = vk.tensor([2.0, 4.0], dtype=vk.float64, requires_grad=True)
    (a / b).sum().backward()
    np.testing.assert_allclose(to_np(a.grad), [0.5, 0.25])
    np.testing.assert_allclose(to_np(b.grad), [-3.0 / 4.0, 2.0 / 16.0])  # -a / b^2
    rng = np.random.default_rng(2)
    check_fd(lambda x, y: x / y, [rng.uniform(-2, 2, (3, 2)), rng.uniform(0.5, 2, (2,))])
    check_fd(lambda x: 1.5 / x, [rng.uniform(0.5, 2, (4,))])


@pytest.mark.parametrize("p", [2, 3, 0.5, -1, -1.5, 1.0 / 3])
def test_pow_grads(p):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 2.0, (3, 2))
    t = vk.tensor(x, requires_grad=True)
    (t ** p).sum().backward()
    np.testing.assert_allclose(to_np(t.grad), p * x ** (p - 1), rtol=1e-12)
    check_fd(lambda v: v ** p, [x])


def test_matmul_grads():
    rng = np.random.default_rng(4)
    for sa, sb in [((2, 3), (3, 4)), ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)),
                   ((2, 2, 3), (3, 4)), ((2, 1, 2, 3), (3, 3, 2))]:
        A, B = rng.uniform(-1, 1, sa), rng.uniform(-1, 1, sb)
        check_fd(lambda a, b: a @ b, [A, B])
    # the closed forms: dX = G W^T, dW = X^T G (square matrices catch a missing transpose)
    X, W, G = rng.uniform(-1, 1, (3, 3)), rng.uniform(-1, 1, (3, 3)), rng.uniform(-1, 1, (3, 3))
    tx, tw = vk.tensor(X, requires_grad=True), vk.tensor(W, requires_grad=True)
    (tx @ tw).backward(vk.tensor(G))
    np.testing.assert_allclose(to_np(tx.grad), G @ W.T, rtol=1e-12)
    np.testing.assert_allclose(to_np(tw.grad), X.T @ G, rtol=1e-12)


def test_getitem_basic_grads():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (4, 5))
    for index in [1, -1, (slice(1, 3),), (slice(None), 2), (slice(None, None, 2), slice(1, None)),
                  (Ellipsis, 0), (None, 2, slice(0, 4, 3))]:
        check_fd(lambda x, i=index: x[i], [X])
    t = vk.tensor(X, requires_grad=True)
    t[1:3, 2].sum().backward()
    expected = np.zeros((4, 5))
    expected[1:3, 2] = 1.0
    np.testing.assert_array_equal(to_np(t.grad), expected)


def test_getitem_repeated_indices_accumulate():
    x = vk.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    y = x[[0, 2, 0]]
    np.testing.assert_array_equal(to_np(y), [[1, 2], [5, 6], [1, 2]])
    y.backward(vk.tensor([[1.0, 10.0], [100.0, 1000.0], [2.0, 20.0]]))
    np.testing.assert_array_equal(to_np(x.grad), [[3, 30], [0, 0], [100, 1000]])


def test_shared_input_accumulates():
    a = vk.tensor(3.0, requires_grad=True)
    (a * a + a).backward()
    assert a.grad.item() == 7.0


def test_diamond_graph():
    a = vk.tensor(2.0, requires_grad=True)
    b = 2 * a
    c = a ** 2
    d = b * c
    d.backward()
    assert d.item() == 16.0
    assert a.grad.item() == 24.0


def test_grad_accumulates_across_backward_calls():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [3, 3])
    (x * x).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [5, 7])
    x.grad = None
    (x * 2).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [2, 2])


def test_backward_on_constant_raises():
    x = vk.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * 2).sum().backward()
    with pytest.raises(vk.DTypeError):  # an integer root cannot be differentiated
        vk.tensor([1, 2]).sum().backward()


def test_backward_needs_grad_for_non_scalar():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="one-element"):
        y.backward()
    y.backward(vk.tensor([1.0, 1.0]))  # an explicit gradient is fine
    np.testing.assert_array_equal(to_np(x.grad), [2, 2])


def test_vjp_shape_mismatch_raises():
    x = vk.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = vk.from_op((x * 2).detach(), [x], lambda g: [g.sum()], op="myop")
    with pytest.raises(RuntimeError, match="myop"):
        y.sum().backward()


def test_from_op_custom_op():
    x = vk.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = vk.tensor([4.0, 5.0, 6.0])  # a constant parent: gets no gradient
    y = vk.from_op((x * c).detach(), [x, c], lambda g: [g * c, None], op="scale")
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    (y * y).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), 2 * np.array([4, 10, 18.0]) * [4, 5, 6])
    assert c.grad is None
    # with grad mode off, or no parent requiring grad, the result is a plain constant
    with vk.no_grad():
        z = vk.from_op((x * c).detach(), [x, c], lambda g: [g * c, None])
    assert not z.requires_grad and z.grad_fn is None
    w = vk.from_op(c * 2, [c], lambda g: [g * 2])
    assert not w.requires_grad


@pytest.mark.parametrize("dtype", [vk.float32, vk.float64])
def test_grad_dtype_matches_data(dtype):
    x = vk.tensor([1.0, 2.0], dtype=dtype, requires_grad=True)
    (x * np.array([2.0, 3.0]) + 1.5).sum().backward()
    assert x.grad.dtype == dtype
    w = vk.tensor([[1.0]], dtype=dtype, requires_grad=True)
    (vk.tensor([[2.0]], dtype=vk.float64 if dtype == vk.float32 else vk.float32) * w).sum().backward()
    assert w.grad.dtype == dtype


def test_constants_mix_in():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    arr = np.array([3.0, 4.0])
    flagless = vk.tensor([5.0, 6.0])
    y = (x * 2.0 + arr) * flagless - 1
    np.testing.assert_allclose(to_np(y), [(2 + 3) * 5 - 1, (4 + 4) * 6 - 1])
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), [10.0, 12.0])
    assert flagless.grad is None and not flagless.requires_grad


def test_float32_stays_float32():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    assert x.dtype == vk.float32
    for y in (x * 0.5, 0.5 * x, x + np.float64(2.0), x * np.array([1.0, 2.0]), x / 3, x ** 2.0,
              np.array([1.0, 2.0]) - x, x * 1, x + True):  # (x - True raises, as in torch)
        assert y.dtype == vk.float32, y
    (x * 0.1).sum().backward()
    assert x.grad.dtype == vk.float32


def test_reflected_operators():
    x = vk.tensor([1.0, 2.0, 4.0], requires_grad=True)
    np.testing.assert_allclose(to_np(2 - x), [1, 0, -2])
    np.testing.assert_allclose(to_np(3 / x), [3, 1.5, 0.75])
    np.testing.assert_allclose(to_np(2 ** x), [2, 4, 16])
    A = np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    y = A @ x
    assert isinstance(y, vk.Tensor)
    np.testing.assert_allclose(to_np(y), [5, 4])
    (3 / x).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), [-3, -0.75, -3 / 16])
    x.grad = None
    y = A @ x
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), A.sum(0))


def test_ndarray_on_the_left():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    mask = np.array([0.0, 1.0])
    for y in (mask + x, mask * x, mask - x, mask / (x + 1), mask @ x):
        assert isinstance(y, vk.Tensor), type(y)
        assert y.requires_grad and y.grad_fn is not None
    (mask * x).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [0, 1])


def test_constructor_copies_and_checks_dtype():
    data = np.array([1.0, 2.0, 3.0])
    t = vk.Tensor(data, requires_grad=True)
    data[0] = 100.0
    assert to_np(t)[0] == 1.0
    assert t.dtype == vk.float32 and t.is_leaf and t.requires_grad
    src = vk.tensor([1.0, 2.0])
    copy = vk.Tensor(src)
    src.add_(1.0)
    np.testing.assert_array_equal(to_np(copy), [1, 2])
    for bad in (vk.int64, vk.int32, vk.bool_, np.int64, "int32"):
        with pytest.raises(vk.DTypeError):
            vk.Tensor([1, 2], dtype=bad)
    assert issubclass(vk.DTypeError, TypeError)
    assert vk.Tensor([1, 2], dtype=vk.float64).dtype == vk.float64
    assert vk.Tensor([1, 2], dtype=np.float64).dtype == vk.float64


def test_detach_stops_gradient():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    d.numpy()[0] = 5.0  # shares memory with x
    assert x.detach().numpy()[0] == 5.0
    y = (x * d).sum()
    y.backward()
    np.testing.assert_array_equal(to_np(x.grad), to_np(d))  # d is a constant factor
    assert d.grad is None


def test_no_grad_builds_no_graph():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    with vk.no_grad():
        assert not vk.is_grad_enabled()
        y = (x * 2).exp().sum()
    assert vk.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    with pytest.raises(RuntimeError):
        y.backward()


def test_no_grad_restores_after_exception():
    assert vk.is_grad_enabled()
    with pytest.raises(ValueError):
        with vk.no_grad():
            raise ValueError("boom")
    assert vk.is_grad_enabled()

    @vk.no_grad()
    def failing():
        raise KeyError("boom")

    with pytest.raises(KeyError):
        failing()
    assert vk.is_grad_enabled()
    # an error raised by vkml itself inside the block
    with pytest.raises(vk.ShapeError):
        with vk.no_grad():
            vk.ones(2, 3) + vk.ones(4)
    assert vk.is_grad_enabled()


def test_no_grad_nests():
    with vk.no_grad():
        with vk.no_grad():
            assert not vk.is_grad_enabled()
        assert not vk.is_grad_enabled()  # the inner block restores the outer "off"
        with vk.enable_grad():
            assert vk.is_grad_enabled()
            x = vk.tensor([1.0], requires_grad=True)
            assert (x * 2).requires_grad
        assert not vk.is_grad_enabled()
    assert vk.is_grad_enabled()


def test_deep_chain_no_recursion():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + 1.0
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [1, 1])
    np.testing.assert_array_equal(to_np(y), [5001, 5002])


def test_shape_and_len():
    t = vk.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
    assert t.dtype == vk.float32 and t.ndim == 3 and len(t) == 2 and t.numel() == 24
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4 and t.dim() == 3
    s = vk.tensor(3.0)
    assert s.shape == () and s.ndim == 0
    with pytest.raises(TypeError):
        len(s)
    assert vk.tensor([[1, 2]]).dtype == vk.int64


# ---------------------------------------------------------------------------------------------
# seed 003's worked numbers


def test_seed003_two_routes_into_w():
    x = vk.tensor(5.0, requires_grad=True)
    y = vk.tensor(2.0, requires_grad=True)
    w = x * y + x
    w.backward()
    assert w.item() == 15.0
    assert x.grad.item() == 3.0  # y + 1
    assert y.grad.item() == 5.0  # x


def test_seed003_matmul_example():
    X = vk.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    M = vk.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    Y = X @ M
    np.testing.assert_array_equal(to_np(Y), [[22, 28], [49, 64]])
    Y.backward(vk.ones(2, 2))
    np.testing.assert_array_equal(to_np(X.grad), [[3, 7, 11], [3, 7, 11]])
    np.testing.assert_array_equal(to_np(M.grad), [[5, 5], [7, 7], [9, 9]])


def test_seed003_sub_div_pow_log():
    a = vk.tensor(8.0, dtype=vk.float64, requires_grad=True)
    b = vk.tensor(5.0, dtype=vk.float64, requires_grad=True)
    ga, gb = vk.autograd.grad(a - b, [a, b])
    assert (ga.item(), gb.item()) == (1.0, -1.0)
    ga, gb = vk.autograd.grad(a / b, [a, b])
    assert ga.item() == pytest.approx(0.2) and gb.item() == pytest.approx(-0.32)
    a2 = vk.tensor(2.0, dtype=vk.float64, requires_grad=True)
    b3 = vk.tensor(3.0, dtype=vk.float64, requires_grad=True)
    ga, gb = vk.autograd.grad(a2 ** b3, [a2, b3])
    assert ga.item() == pytest.approx(12.0) and gb.item() == pytest.approx(8 * np.log(2))
    (g,) = vk.autograd.grad(a2.log(), [a2])
    assert g.item() == pytest.approx(0.5)
    x = vk.tensor(1.0, dtype=vk.float64, requires_grad=True)
    (g,) = vk.autograd.grad(x.exp(), [x])
    assert g.item() == pytest.approx(np.e)


def test_seed003_activations_at_zero():
    x = vk.tensor([0.0], requires_grad=True)
    (g,) = vk.autograd.grad(x.relu().sum(), [x])
    assert g.item() == 0.0  # relu'(0) = 0, as PyTorch
    s = x.sigmoid()
    assert s.item() == 0.5
    (g,) = vk.autograd.grad(s.sum(), [x])
    assert g.item() == 0.25
    t = x.tanh()
    assert t.item() == 0.0
    (g,) = vk.autograd.grad(t.sum(), [x])
    assert g.item() == 1.0


def test_seed003_max_tie():
    x = vk.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()  # max() over everything splits a tie evenly
    np.testing.assert_array_equal(to_np(x.grad), [0, 0.5, 0.5, 0])
    x.grad = None
    values, indices = x.max(0)  # max(dim) routes it to the returned index (the first)
    assert indices.item() == 1
    values.backward()
    np.testing.assert_array_equal(to_np(x.grad), [0, 1, 0, 0])
    a = vk.tensor([2.0, 1.0], requires_grad=True)
    b = vk.tensor([2.0, 0.0], requires_grad=True)
    vk.maximum(a, b).sum().backward()  # element-wise ties split half and half
    np.testing.assert_array_equal(to_np(a.grad), [0.5, 1])
    np.testing.assert_array_equal(to_np(b.grad), [0.5, 0])
    # the same as PyTorch
    tx = torch.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    tx.max().backward()
    np.testing.assert_array_equal(tx.grad.numpy(), [0, 0.5, 0.5, 0])


def test_deep_chain_create_graph_100k():
    """DESIGN: a chain of 100,000 ops built from Python, differentiated with create_graph, works
    and is freed (nothing walks the graph by recursion)."""
    x = vk.tensor([0.5], dtype=vk.float64, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    (g,) = vk.autograd.grad((y * y).sum(), [x], create_graph=True)
    assert g.item() == 1.0 and g.requires_grad  # 2x, through 100k muls
    (gg,) = vk.autograd.grad(g.sum(), [x])
    assert gg.item() == 2.0
    del y, g, gg  # teardown of the 200k-node graph is iterative too
