"""Bad input (GitHub issue 6): every row is one named test that feeds vkml something wrong and
expects a typed error (vk.ShapeError, vk.DTypeError, IndexError, RuntimeError, MemoryError,
NotImplementedError) whose message names the op and the offending shapes or values. The process
must survive each one: the next test running is the proof. Rows that expose a defect in the core
are marked xfail(strict=True) with what is wrong; they are written as the library should behave.

The second half runs NaN and Inf through every op of vk._C.op_names() (forward and, for float
results, backward): the result may be NaN, but nothing may crash or raise an untyped error.
"""


import numpy as np
import pytest
import torch

import vkml as vk

F = vk.nn.functional
NAN, INF = float("nan"), float("inf")
TYPED = (vk.ShapeError, vk.DTypeError, IndexError, RuntimeError, MemoryError, NotImplementedError)


def _a():
    return vk.ones(2, 3)


def _b():
    return vk.ones(4, 5)


def _x():
    return vk.arange(6.0).reshape(2, 3)


def _w():
    return vk.randn(5, 3)


def _backward_twice():
    y = (vk.ones(3, requires_grad=True) * 2).sum()
    y.backward()
    y.backward()


def _inplace_on_saved_nonleaf():
    p = vk.ones(3, requires_grad=True)
    q = p.exp()
    z = q.exp().sum()  # exp saves its input q
    with vk.no_grad():
        q.add_(1)
    z.backward()


def _inplace_on_saved_leaf():
    p = vk.ones(3, requires_grad=True)
    z = (p * p).sum()
    with vk.no_grad():
        p.add_(1)
    z.backward()


def _inplace_on_grad_leaf():
    vk.ones(3, requires_grad=True).add_(1)


def _inplace_on_exp_output():
    q = vk.ones(3, requires_grad=True).exp()
    q.add_(1)  # recorded; exp's rule reads its output, which the write replaced
    q.sum().backward()


class _TwoGrads(vk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g, g  # one too many


class _WrongShapeGrad(vk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return vk.ones(5)  # input is [3]


def _fn_wrong_count():
    _TwoGrads.apply(vk.ones(3, requires_grad=True)).sum().backward()


def _fn_wrong_shape():
    _WrongShapeGrad.apply(vk.ones(3, requires_grad=True)).sum().backward()


def _from_op(vjp):
    x = vk.ones(3, requires_grad=True)
    vk.from_op((x * 2).detach(), [x], vjp, op="dbl").sum().backward()


def _xf(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


def row(id_, fn, exc, *parts, marks=()):
    return pytest.param(fn, exc, parts, id=id_, marks=marks)


SHAPES23_45 = ("[2, 3]", "[4, 5]")

ROWS = [
    # ---- mismatched shapes in every binary op ----
    *[row(f"{op}-shapes", (lambda op=op: getattr(vk, op)(_a(), _b())), vk.ShapeError, op, *SHAPES23_45)
      for op in ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "eq", "ne", "lt",
                 "le", "gt", "ge")],
    row("add-operator-shapes", lambda: _a() + _b(), vk.ShapeError, "add", *SHAPES23_45),
    row("where-shapes", lambda: vk.where(vk.ones(2, 3) > 0, _a(), _b()), vk.ShapeError, "where", *SHAPES23_45),
    row("matmul-shapes", lambda: vk.matmul(_a(), _b()), vk.ShapeError, "matmul", *SHAPES23_45, "3 != 4"),
    row("matmul-operator-shapes", lambda: _a() @ _b(), vk.ShapeError, "matmul", *SHAPES23_45),
    row("bmm-batch-shapes", lambda: vk.bmm(vk.ones(2, 3, 4), vk.ones(3, 4, 5)), vk.ShapeError,
        "matmul", "[2, 3, 4]", "[3, 4, 5]"),
    row("conv2d-channels", lambda: vk.conv2d(vk.ones(1, 3, 5, 5), vk.ones(2, 4, 3, 3)), vk.ShapeError,
        "conv2d", "[1, 3, 5, 5]", "[2, 4, 3, 3]"),
    row("cat-shapes", lambda: vk.cat([vk.ones(2, 3), vk.ones(2, 4)]), vk.ShapeError, "cat", "[2, 3]", "[2, 4]"),
    row("stack-shapes", lambda: vk.stack([vk.ones(2, 3), vk.ones(2, 4)]), vk.ShapeError, "stack", "[2, 3]", "[2, 4]"),
    row("expand-shapes", lambda: vk.ones(3, 2).expand(4, 4), vk.ShapeError, "expand", "[3, 2]", "[4, 4]"),
    row("permute-not-a-permutation", lambda: vk.ones(3, 2).permute(0, 0), vk.ShapeError, "permute", "[0, 0]"),
    row("sum_to-shapes", lambda: vk.sum_to(vk.ones(2, 3), (4,)), vk.ShapeError, "sum_to", "[2, 3]", "[4]"),

    # ---- conv / pool with a kernel larger than the input ----
    row("conv2d-kernel-too-large", lambda: vk.conv2d(vk.ones(1, 3, 2, 2), vk.ones(2, 3, 3, 3)), vk.ShapeError,
        "conv2d", "kernel (3, 3)", "[1, 3, 2, 2]"),
    row("conv2d_backward_input-grad-shape", lambda: vk.conv2d_backward_input(vk.ones(1, 2, 3, 3), vk.ones(2, 3, 3, 3),
                                                                           (1, 3, 4, 4)), vk.ShapeError,
        "conv2d_backward_input", "[1, 2, 3, 3]", "[1, 2, 2, 2]"),
    row("conv2d_backward_weight-channels", lambda: vk.conv2d_backward_weight(vk.ones(1, 2, 2, 2), vk.ones(1, 3, 4, 4),
                                                                           (2, 4, 3, 3)), vk.ShapeError,
        "conv2d_backward_weight", "[1, 3, 4, 4]", "[2, 4, 3, 3]"),
    row("max_pool2d-kernel-too-large", lambda: vk.max_pool2d(vk.ones(1, 1, 2, 2), 3), vk.ShapeError,
        "max_pool2d", "kernel (3, 3)", "[1, 1, 2, 2]"),
    row("avg_pool2d-kernel-too-large", lambda: vk.avg_pool2d(vk.ones(1, 1, 2, 2), 3), vk.ShapeError,
        "avg_pool2d", "kernel (3, 3)", "[1, 1, 2, 2]"),
    row("im2col-kernel-too-large", lambda: vk.im2col(vk.ones(1, 2, 1, 1), 2), vk.ShapeError,
        "im2col", "kernel (2, 2)", "[1, 2, 1, 1]"),
    row("col2im-window-count", lambda: vk.col2im(vk.ones(1, 8, 5), (3, 4), 2), vk.ShapeError,
        "col2im", "[1, 8, 5]", "[3, 4]"),

    # ---- index out of range (positive and negative) ----
    row("getitem-index", lambda: _x()[5], IndexError, "index 5", "size 2"),
    row("getitem-negative-index", lambda: _x()[-3], IndexError, "index -3", "size 2"),
    row("getitem-tensor-index", lambda: _x()[vk.tensor([0, 7])], IndexError, "index", "size 2"),
    row("index_select-index", lambda: vk.index_select(_x(), 0, vk.tensor([0, 2])), IndexError,
        "index_select", "index 2", "size 2"),
    row("index_select-negative-index", lambda: vk.index_select(_x(), 0, vk.tensor([-3])), IndexError,
        "index_select", "index -3", "size 2"),
    row("gather-index", lambda: vk.gather(_x(), 1, vk.tensor([[0, 3], [0, 1]])), IndexError,
        "gather", "index 3", "size 3"),
    row("gather-negative-index", lambda: vk.gather(_x(), 1, vk.tensor([[0, -4], [0, 1]])), IndexError,
        "gather", "index -4", "size 3"),
    row("scatter_add-index", lambda: vk.scatter_add(_x(), 1, vk.tensor([[0, 3], [0, 1]]), vk.ones(2, 2)),
        IndexError, "scatter_add", "index 3", "size 3"),
    row("scatter_add-negative-index", lambda: vk.scatter_add(_x(), 1, vk.tensor([[0, -4], [0, 1]]), vk.ones(2, 2)),
        IndexError, "scatter_add", "index -4", "size 3"),
    row("F.embedding-index", lambda: F.embedding(vk.tensor([0, 5]), _w()), IndexError,
        "embedding", "index 5", "[5, 3]"),
    row("F.embedding-negative-index", lambda: F.embedding(vk.tensor([0, -6]), _w()), IndexError,
        "embedding", "index -6", "[5, 3]"),
    row("nn.Embedding-index", lambda: vk.nn.Embedding(5, 3)(vk.tensor([0, 5])), IndexError,
        "embedding", "index 5", "[5, 3]"),
    row("nn.Embedding-negative-index", lambda: vk.nn.Embedding(5, 3)(vk.tensor([-6])), IndexError,
        "embedding", "index -6", "[5, 3]"),
    row("max_pool2d_backward-index", lambda: vk.max_pool2d_backward(vk.ones(1, 1, 1, 1), vk.tensor([[[[99]]]]),
                                                                    (1, 1, 2, 2)),
        IndexError, "max_pool2d_backward", "index 99"),

    # ---- wrong index dtype ----
    row("index_select-float-index", lambda: vk.index_select(_x(), 0, vk.tensor([0.0, 1.0])), vk.DTypeError,
        "index_select", "float32"),
    row("index_select-bool-index", lambda: vk.index_select(_x(), 0, vk.tensor([True, False])), vk.DTypeError,
        "index_select", "bool"),
    row("gather-float-index", lambda: vk.gather(_x(), 1, vk.tensor([[0.0, 1.0], [0.0, 1.0]])), vk.DTypeError,
        "gather", "float32"),
    row("scatter_add-float-index", lambda: vk.scatter_add(_x(), 1, vk.tensor([[0.0, 1.0], [0.0, 1.0]]),
                                                           vk.ones(2, 2)),
        vk.DTypeError, "scatter_add", "float32"),
    row("F.embedding-float-index", lambda: F.embedding(vk.tensor([0.0, 1.0]), _w()), vk.DTypeError,
        "embedding", "float32"),
    row("max_pool2d_backward-float-index", lambda: vk.max_pool2d_backward(vk.ones(1, 1, 1, 1),
                                                                          vk.tensor([[[[0.0]]]]), (1, 1, 2, 2)),
        vk.DTypeError, "max_pool2d_backward", "float32"),
    row("where-float-condition", lambda: vk.where(vk.ones(2), vk.ones(2), vk.ones(2)), vk.DTypeError,
        "where", "bool", "float32"),
    row("masked_fill-float-mask", lambda: vk.ones(2).masked_fill(vk.ones(2), 0.0), vk.DTypeError,
        "bool", "float32"),

    # ---- integer / bool tensors with requires_grad ----
    row("int64-requires_grad", lambda: vk.tensor([1, 2], requires_grad=True), vk.DTypeError, "int64", "grad"),
    row("bool-requires_grad", lambda: vk.tensor([True], requires_grad=True), vk.DTypeError, "bool", "grad"),
    row("int64-requires_grad_", lambda: vk.tensor([1, 2]).requires_grad_(), vk.DTypeError, "int64", "grad"),
    row("zeros-int64-requires_grad", lambda: vk.zeros(2, dtype=vk.int64, requires_grad=True), vk.DTypeError,
        "int64", "grad"),

    # ---- reductions over a dim that does not exist ----
    *[row(f"{op}-dim{d}", (lambda op=op, d=d: getattr(vk, op)(_x(), dim=d)), IndexError,
          {"std": "var"}.get(op, op), f"dim {d}", "2 dims")
      for op in ("sum", "mean", "amax", "amin", "argmax", "argmin", "max", "min", "softmax", "log_softmax",
                 "var", "std", "prod", "logsumexp")
      for d in (2, -3)],

    # ---- reshape to an incompatible size ----
    row("reshape-size", lambda: _x().reshape(4, 2), vk.ShapeError, "reshape", "[2, 3]", "[4, 2]"),
    row("reshape-minus-one", lambda: _x().reshape(-1, 4), vk.ShapeError, "reshape", "[2, 3]", "[-1, 4]"),
    row("view-size", lambda: _x().view(7), vk.ShapeError, "[2, 3]", "[7]"),

    # ---- absurd sizes ----
    row("zeros-int64-overflow", lambda: vk.zeros(2**40, 2**40), vk.ShapeError,
        "[1099511627776, 1099511627776]", "int64"),
    row("empty-int64-overflow", lambda: vk.empty(2**40, 2**40), vk.ShapeError,
        "[1099511627776, 1099511627776]", "int64"),
    row("reshape-int64-overflow", lambda: _x().reshape(2**40, 2**40), vk.ShapeError,
        "[1099511627776, 1099511627776]", "int64"),
    row("zeros-negative-dim", lambda: vk.zeros(-1), vk.ShapeError, "negative", "-1"),
    row("zeros-1e15", lambda: vk.zeros(10**15), MemoryError, "4000000000000000 bytes"),
    row("empty-1e15", lambda: vk.empty(10**15), MemoryError, "4000000000000000 bytes"),
    row("ones-1e15", lambda: vk.ones(10**15), MemoryError, "4000000000000000 bytes"),
    row("full-1e15", lambda: vk.full((10**15,), 1.0), MemoryError, "4000000000000000 bytes"),
    row("randn-1e15", lambda: vk.randn(10**15), MemoryError, "4000000000000000 bytes"),
    row("zeros-int64-1e15", lambda: vk.zeros(10**15, dtype=vk.int64), MemoryError, "8000000000000000 bytes"),
    row("empty-float64-2^62", lambda: vk.empty(2**62, dtype=vk.float64), MemoryError,
        "[4611686018427387904]", "float64"),
    row("expand-1e15-contiguous", lambda: vk.ones(1).expand(10**15).contiguous(), MemoryError,
        "4000000000000000 bytes"),
    row("pad-1e15", lambda: vk.pad(vk.ones(2), [10**15, 0]), MemoryError, "bytes"),
    row("arange-step-zero", lambda: vk.arange(0, 1, 0), vk.ShapeError, "arange", "step"),
    row("randint-empty-range", lambda: vk.randint(5, 2, (3,)), vk.ShapeError, "randint", "[5, 2)"),
    row("arange-to-inf", lambda: vk.arange(0, INF), (vk.ShapeError, RuntimeError, ValueError), "arange", "inf"),
    row("arange-from-minus-inf", lambda: vk.arange(-INF, 0), (vk.ShapeError, RuntimeError, ValueError),
        "arange", "inf"),
    row("arange-to-nan", lambda: vk.arange(0, NAN), (vk.ShapeError, RuntimeError, ValueError), "arange", "nan"),
    row("int-floordiv-by-zero", lambda: vk.tensor([2]) // vk.tensor([0]), RuntimeError, "floor_divide",
        "division by zero"),
    row("int-pow-negative-exponent", lambda: vk.tensor([2, 3]) ** -1, RuntimeError, "pow",
        "negative integer powers"),
    row("int-mod-by-zero", lambda: vk.tensor([[2, 3]]) % vk.tensor([1, 0]), RuntimeError, "remainder",
        "division by zero"),

    # ---- autograd misuse ----
    row("backward-twice", _backward_twice, RuntimeError, "sum", "second time", "retain_graph"),
    row("inplace-on-saved-nonleaf", _inplace_on_saved_nonleaf, RuntimeError, "in-place", "exp",
        "version 1", "float32[3]"),
    row("inplace-on-saved-leaf", _inplace_on_saved_leaf, RuntimeError, "in-place", "mul", "version 1"),
    row("inplace-on-grad-leaf-grad-mode", _inplace_on_grad_leaf, RuntimeError, "add_", "leaf",
        "in-place", "float32[3]"),
    row("inplace-on-read-output", _inplace_on_exp_output, RuntimeError, "in-place", "exp",
        "version 1", "float32[3]"),
    row("Function-backward-wrong-count", _fn_wrong_count, RuntimeError, "_TwoGradsBackward", "2 gradients",
        "1 forward"),
    row("Function-backward-wrong-shape", _fn_wrong_shape, RuntimeError, "_WrongShapeGradBackward", "[5]", "[3]"),
    row("from_op-vjp-wrong-count", lambda: _from_op(lambda g: [g, g]), RuntimeError, "dbl", "2 gradients",
        "1 inputs"),
    row("from_op-vjp-wrong-shape", lambda: _from_op(lambda g: [vk.ones(2, 2)]), RuntimeError, "dbl",
        "[2, 2]", "[3]"),
    row("from_op-vjp-not-a-tensor", lambda: _from_op(lambda g: 5), RuntimeError, "dbl", "got 5"),
]


@pytest.mark.parametrize("fn, exc, parts", ROWS)
def test_bad_input(fn, exc, parts):
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    for p in parts:
        assert p in msg, f"{p!r} not in the message: {msg!r}"


# ------------------------------------------------------------------------------------------
# dtype promotion and integer exactness (issue #12, items 12, 13 and randint of 17): a number
# that does not fit the dtype it must become raises as torch does, never wraps; a float result
# cannot be written into an int tensor in place; bool arithmetic raises where torch does.
# ------------------------------------------------------------------------------------------

def _setitem(t, i, v):
    t[i] = v


def _iadd(t, v):
    t += v


_I32 = vk.int32
DTYPE_ROWS = [
    row("int32-add-int-beyond-int32", lambda: vk.tensor([1], dtype=_I32) + 2**40, RuntimeError, "add",
        "1099511627776", "int32"),
    row("int32-radd-int-beyond-int32", lambda: 2**31 + vk.tensor([1], dtype=_I32), RuntimeError, "add",
        "2147483648", "int32"),
    row("int64-add-2**63", lambda: vk.tensor([1]) + 2**63, RuntimeError, "add", "9223372036854775808", "int64"),
    row("add-int-beyond-uint64", lambda: vk.tensor([1.0]) + 2**64, OverflowError, "add", "18446744073709551616"),
    row("add-int-below-int64", lambda: vk.tensor([1]) + (-2**63 - 1), OverflowError, "add",
        "-9223372036854775809"),
    row("lt-int64-2**63", lambda: vk.tensor([1]) < 2**63, RuntimeError, "lt", "int64"),
    row("tensor-int-2**63", lambda: vk.tensor([2**63]), ValueError, "tensor", "Overflow"),
    row("tensor-int-below-int64", lambda: vk.tensor([-2**63 - 1]), ValueError, "tensor", "Overflow"),
    row("tensor-ints-2**63-and-negative", lambda: vk.tensor([2**63, -1]), ValueError, "tensor", "Overflow"),
    row("tensor-int-2**64-nested", lambda: vk.tensor([[1], [2**64]]), ValueError, "tensor", "Overflow"),
    row("tensor-int32-dtype-overflow", lambda: vk.tensor([2**40], dtype=_I32), RuntimeError, "tensor",
        "1099511627776", "int32"),
    row("tensor-numpy-int64-into-int32-overflow", lambda: vk.tensor(np.array([2**40]), dtype=_I32), RuntimeError,
        "tensor", "int32"),
    row("tensor-nan-into-int64", lambda: vk.tensor([NAN], dtype=vk.int64), RuntimeError, "tensor", "nan", "int64"),
    row("tensor-inf-into-int32", lambda: vk.tensor(np.array([INF]), dtype=_I32), RuntimeError, "tensor", "inf"),
    row("tensor-uint64-array-beyond-int64", lambda: vk.tensor(np.array([2**63], dtype=np.uint64)), RuntimeError,
        "tensor", "uint64", "int64"),
    row("full-1e300-int64", lambda: vk.full((1,), 1e300, dtype=vk.int64), RuntimeError, "full", "int64"),
    row("full-nan-int64", lambda: vk.full((1,), NAN, dtype=vk.int64), RuntimeError, "full", "nan", "int64"),
    row("full-inf-int32", lambda: vk.full((1,), INF, dtype=_I32), RuntimeError, "full", "inf", "int32"),
    row("full-2**63", lambda: vk.full((1,), 2**63), RuntimeError, "full", "9223372036854775808", "int64"),
    row("full-2**40-int32", lambda: vk.full((1,), 2**40, dtype=_I32), RuntimeError, "full", "int32"),
    row("full-1e300-float32", lambda: vk.full((1,), 1e300), RuntimeError, "full", "float32"),
    row("full-not-a-number", lambda: vk.full((1,), "x"), TypeError, "full"),
    row("full_like-2**40-int32", lambda: vk.full_like(vk.tensor([1], dtype=_I32), 2**40), RuntimeError,
        "full", "int32"),
    row("masked_fill-int32-2**40", lambda: vk.tensor([1, 2], dtype=_I32).masked_fill(vk.tensor([True, False]), 2**40),
        RuntimeError, "masked_fill", "1099511627776", "int32"),
    row("masked_fill-float32-1e300", lambda: vk.ones(2).masked_fill(vk.tensor([True, False]), 1e300), RuntimeError,
        "masked_fill", "float32"),
    row("masked_fill-nan-int64", lambda: vk.tensor([1, 2]).masked_fill(vk.tensor([True, False]), NAN), RuntimeError,
        "masked_fill", "nan"),
    row("masked_fill-not-a-number", lambda: vk.ones(2).masked_fill(vk.tensor([True, False]), "x"), TypeError,
        "masked_fill"),
    row("fill_-int32-2**40", lambda: vk.zeros(2, dtype=_I32).fill_(2**40), RuntimeError, "fill_", "int32"),
    row("fill_-nan-int64", lambda: vk.zeros(2, dtype=vk.int64).fill_(NAN), RuntimeError, "fill_", "nan", "int64"),
    row("fill_-1e300-float32", lambda: vk.zeros(2).fill_(1e300), RuntimeError, "fill_", "float32"),
    row("setitem-int32-2**40", lambda: _setitem(vk.zeros(2, dtype=_I32), 0, 2**40), RuntimeError,
        "index assignment", "int32"),
    row("clamp-int32-bound-2**40", lambda: vk.clamp(vk.tensor([1], dtype=_I32), min=2**40), RuntimeError, "clamp",
        "int32"),
    row("clamp-float32-bound-1e300", lambda: vk.clamp(vk.ones(2), max=1e300), RuntimeError, "clamp", "float32"),
    row("clamp-bool", lambda: vk.clamp(vk.tensor([True]), min=False), NotImplementedError, "clamp", "bool"),
    row("clamp_-float-bound-into-int", lambda: vk.tensor([1, 2]).clamp_(min=1.5), RuntimeError, "clamp_",
        "float32", "int64"),
    row("where-int32-2**40", lambda: vk.where(vk.tensor([True]), vk.tensor([1], dtype=_I32), 2**40), RuntimeError,
        "where", "int32"),
    row("where-not-a-number", lambda: vk.where(vk.tensor([True]), vk.ones(1), "x"), TypeError, "where"),
    row("Tensor.where-not-a-number", lambda: vk.ones(2).where(vk.tensor([True, False]), "x"), TypeError, "where"),
    row("arange-int32-overflow", lambda: vk.arange(0, 2**40, 2**39, dtype=_I32), RuntimeError, "arange", "int32"),
    row("arange-2**63", lambda: vk.arange(2**63), RuntimeError, "arange", "int64"),
    row("randint-high-2**64", lambda: vk.randint(0, 2**64, (2,)), ValueError, "randint", "high",
        "18446744073709551616"),
    row("randint-high-2**63", lambda: vk.randint(2**63, (2,)), ValueError, "randint", "high"),
    row("randint-float-bounds", lambda: vk.randint(0.5, 3.7, (2,)), TypeError, "randint", "low", "float"),
    row("randint-float-high", lambda: vk.randint(3.7, (2,)), TypeError, "randint", "high", "float"),
    row("randint-int32-out-of-range", lambda: vk.randint(0, 2**40, (2,), dtype=_I32), RuntimeError, "randint",
        "int32"),
    row("iadd-float-into-int64", lambda: _iadd(vk.tensor([1, 2]), 1.5), RuntimeError, "add_", "float32", "int64"),
    row("add_-int-into-bool", lambda: vk.tensor([True]).add_(1), RuntimeError, "add_", "int64", "bool"),
    row("mul_-float-into-int64", lambda: vk.tensor([1, 2]).mul_(1.5), RuntimeError, "mul_", "float32", "int64"),
    row("div_-true-division-into-int64", lambda: vk.tensor([1, 2]).div_(2), RuntimeError, "div_", "float32",
        "int64"),
    row("add-float-alpha-int-inputs", lambda: vk.add(vk.tensor([1]), vk.tensor([2]), alpha=1.0), RuntimeError,
        "add", "alpha"),
    row("add-bool-alpha-int-result", lambda: vk.add(vk.tensor([1]), vk.tensor([True]), alpha=True), RuntimeError,
        "add", "alpha", "int64"),
    row("add-alpha-2**40-int32", lambda: vk.add(vk.tensor([1], dtype=_I32), 1, alpha=2**40), RuntimeError, "add",
        "int32"),
    row("bool-sub-bool", lambda: vk.tensor([True]) - vk.tensor([False]), RuntimeError, "sub", "bool"),
    row("int-sub-bool", lambda: vk.tensor([1]) - vk.tensor([True]), RuntimeError, "sub", "bool"),
    row("float-sub-python-bool", lambda: vk.ones(2) - True, RuntimeError, "sub", "bool"),
    row("bool-floordiv-bool", lambda: vk.tensor([True]) // vk.tensor([True]), NotImplementedError, "floor_divide",
        "bool"),
    row("bool-mod-bool", lambda: vk.tensor([True]) % vk.tensor([True]), NotImplementedError, "remainder", "bool"),
    row("bool-pow-bool", lambda: vk.tensor([True]) ** vk.tensor([True]), NotImplementedError, "pow", "bool"),
    row("float-and-int", lambda: vk.ones(2) & 1, NotImplementedError, "bitwise_and", "float32"),
    row("int-or-python-float", lambda: vk.tensor([1, 2]) | 1.5, NotImplementedError, "bitwise_or", "float32"),
    row("float-xor-float", lambda: vk.bitwise_xor(vk.ones(2), vk.ones(2)), NotImplementedError, "bitwise_xor",
        "float32"),
]


@pytest.mark.parametrize("fn, exc, parts", DTYPE_ROWS)
def test_bad_input_dtype(fn, exc, parts):
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    for p in parts:
        assert p in msg, f"{p!r} not in the message: {msg!r}"


def test_process_alive_after_bad_input():
    """Runs after the rows (file order): the interpreter and the library still work."""
    x = vk.arange(6.0, requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]


# ------------------------------------------------------------------------------------------
# vk.save / vk.load (GitHub issue 12, items 6-10, 17): saved data and paths. One test per case;
# the focused tests are in test_save_load.py.
# ------------------------------------------------------------------------------------------

def _io_crafted(path, doc):
    """A valid safetensors file whose vkml structure (header metadata) is `doc`."""
    vk._C._io.save_safetensors(str(path), [("t", vk.ones(2))], {"vkml": doc})
    return path


def test_save_nul_byte_in_path_raises(tmp_path):
    with pytest.raises(ValueError, match="vk.save: embedded null byte"):
        vk.save({"w": vk.ones(1)}, str(tmp_path / "a\x00b.st"))
    assert list(tmp_path.iterdir()) == []


def test_load_nul_byte_in_path_raises(tmp_path):
    vk.save({"w": vk.ones(1)}, tmp_path / "a")
    with pytest.raises(ValueError, match="vk.load: embedded null byte"):
        vk.load(str(tmp_path / "a") + "\x00x")


def test_load_fifo_raises(tmp_path):
    import os
    import threading
    os.mkfifo(tmp_path / "f")
    got = []
    th = threading.Thread(target=lambda: got.append(pytest.raises(RuntimeError, vk.load, tmp_path / "f")),
                          daemon=True)
    th.start()
    th.join(10)
    if th.is_alive():  # blocked in open(): let it through so that the run goes on, and fail
        os.close(os.open(tmp_path / "f", os.O_WRONLY | os.O_NONBLOCK))
        th.join(10)
        pytest.fail("vk.load blocked on a FIFO")
    assert got and "a FIFO, not a regular file" in str(got[0].value)


def test_load_directory_raises(tmp_path):
    with pytest.raises(RuntimeError, match="a directory, not a regular file"):
        vk.load(tmp_path)


def test_save_over_fifo_raises(tmp_path):
    import os
    os.mkfifo(tmp_path / "f")
    with pytest.raises(RuntimeError, match="a FIFO, not a regular file"):
        vk.save({"w": vk.ones(1)}, tmp_path / "f")


def test_save_metadata_reserved_key_raises(tmp_path):
    with pytest.raises(ValueError, match="vk.save: metadata key 'vkml' is reserved"):
        vk.save({"w": vk.ones(1)}, tmp_path / "m", metadata={"vkml": "{}"})


def test_save_metadata_not_str_raises(tmp_path):
    with pytest.raises(TypeError, match="vk.save: metadata must map str to str"):
        vk.save({"w": vk.ones(1)}, tmp_path / "m", metadata={"epoch": 3})


def test_save_metadata_surrogate_raises(tmp_path):
    with pytest.raises(ValueError, match="not valid UTF-8"):
        vk.save({"w": vk.ones(1)}, tmp_path / "m", metadata={"k": "\udc80"})


def test_save_lowlevel_surrogate_tensor_name_raises(tmp_path):
    with pytest.raises(ValueError, match=r"save_safetensors: a tensor name '\\udc80' is not valid UTF-8"):
        vk._C._io.save_safetensors(str(tmp_path / "m"), [("\udc80", vk.ones(1))])


def test_save_unsupported_dict_key_raises(tmp_path):
    with pytest.raises(TypeError, match="vk.save: unsupported dict key type frozenset"):
        vk.save({frozenset(): 1}, tmp_path / "m")


def test_save_deeply_nested_list_raises(tmp_path):
    deep = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="vk.save: containers nested deeper than 100"):
        vk.save(deep, tmp_path / "m")


def test_load_crafted_dtype_name_raises(tmp_path):
    p = _io_crafted(tmp_path / "c", '{"format":"vkml.tree/1","tree":{"__dtype__":"__class__"}}')
    with pytest.raises(ValueError, match="an unknown dtype"):
        vk.load(p)


def test_load_crafted_missing_tensor_raises(tmp_path):
    p = _io_crafted(tmp_path / "c", '{"format":"vkml.tree/1","tree":{"__tensor__":"nope"}}')
    with pytest.raises(ValueError, match="a tensor that is not in the file"):
        vk.load(p)


def test_load_crafted_deep_nesting_raises(tmp_path):
    p = _io_crafted(tmp_path / "c", '{"format":"vkml.tree/1","tree":' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ValueError, match="nested too deeply"):
        vk.load(p)


def test_load_crafted_metadata_not_json_raises(tmp_path):
    p = _io_crafted(tmp_path / "c", "{")
    with pytest.raises(ValueError, match="not valid JSON"):
        vk.load(p)


# ------------------------------------------------------------------------------------------
# Issue 12, items 14, 16, 17 (part) -- shapes: size arithmetic, view, x[True], numpy() dims,
# eye/normal_/uniform_ ranges, setitem, set_num_threads, zero-sized layers, autograd.Function
# ------------------------------------------------------------------------------------------


class _NoBackward(vk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2


class _NoForward(vk.autograd.Function):
    @staticmethod
    def backward(ctx, g):
        return g


def _setitem(x, index, value):
    x[index] = value


SHAPES_ROWS = [
    row("expand-uncountable", lambda: vk.ones(1, 1).expand(2**32, 2**32), (vk.SizeError, RuntimeError), "expand",
        "[4294967296, 4294967296]", "int64"),
    row("expand-negative-size", lambda: vk.ones(1).expand(-2), vk.SizeError, "expand", "-2"),
    row("expand-minus-one-new-dim", lambda: vk.ones(1).expand(-1, 1), vk.SizeError, "expand", "-1"),
    row("broadcast-uncountable", lambda: vk.ones(1, 1).expand(2**32, 1) + vk.ones(1, 1).expand(1, 2**32),
        vk.SizeError, "add", "int64"),
    row("pad-huge-widths", lambda: vk.pad(vk.ones(2), [2**62, 2**62]), vk.SizeError, "pad", "overflows int64"),
    row("pad-int64-max", lambda: vk.pad(vk.ones(2), [2**63 - 1, 1]), vk.SizeError, "pad"),
    row("cat-size-overflow", lambda: vk.cat([vk.ones(1).expand(2**62)] * 2), vk.SizeError, "cat"),
    row("im2col-huge-padding", lambda: vk.im2col(vk.ones(1, 1, 2, 2), 1, padding=2**62), vk.SizeError, "im2col"),
    row("reshape-negative-size", lambda: _x().reshape(-2, 3), vk.SizeError, "reshape", "-2"),
    row("reshape-minus-one-overflow", lambda: _x().reshape(2**62, 2**62, -1), vk.ShapeError, "reshape", "[2, 3]"),
    row("linspace-negative-steps", lambda: vk.linspace(0, 1, -1), (vk.SizeError, RuntimeError), "linspace", "-1"),
    row("narrow-start-past-end", lambda: _x().narrow(0, 5, 1), IndexError, "narrow", "[-2, 2]", "5"),
    row("narrow-start-before-begin", lambda: _x().narrow(0, -3, 1), IndexError, "narrow", "-3"),
    row("narrow-length-past-end", lambda: _x().narrow(1, 2, 2), RuntimeError, "narrow", "exceeds", "(3)"),
    row("narrow-huge-length", lambda: _x().narrow(0, 1, 2**63 - 1), RuntimeError, "narrow", "exceeds"),
    row("narrow-negative-length", lambda: _x().narrow(0, 1, -1), RuntimeError, "narrow", "non-negative"),
    row("split-negative-last", lambda: vk.ones(10).split([5, -1]), (vk.SizeError, RuntimeError), "split",
        "[5, -1]"),
    row("split-negative-first", lambda: vk.ones(10).split([-1, 5]), vk.SizeError, "split", "[-1, 5]"),
    row("repeat-negative", lambda: vk.ones(2).repeat(-1), vk.SizeError, "repeat", "[-1]"),
    row("flatten-start-after-end", lambda: _x().flatten(1, 0), RuntimeError, "flatten",
        "start_dim cannot come after end_dim"),
    row("view-not-viewable", lambda: _x().t().view(6), RuntimeError, "view", "[3, 2]", "[6]", "reshape"),
    row("view_as-not-viewable", lambda: _x().t().view_as(vk.ones(6)), RuntimeError, "view", "reshape"),
    row("numpy-65-dims", lambda: vk.zeros(*[1] * 65).numpy(), ValueError, "numpy", "65 dims", "64"),
    row("eye-negative", lambda: vk.eye(-1), RuntimeError, "eye", "-1"),
    row("eye-negative-m", lambda: vk.eye(2, -1), RuntimeError, "eye", "-1"),
    row("normal_-negative-std", lambda: vk.ones(3).normal_(0, -1), RuntimeError, "normal", "std -1"),
    row("uniform_-from-above-to", lambda: vk.ones(3).uniform_(5, 1), RuntimeError, "uniform_", "from=5", "to=1"),
    row("uniform_-infinite-bound", lambda: vk.ones(3).uniform_(0, INF), RuntimeError, "uniform_", "inf"),
    row("setitem-value-shape", lambda: _setitem(vk.zeros(3, 4), 0, vk.ones(5)), vk.ShapeError, "index_put_",
        "[5]", "[4]"),
    row("setitem-tensor-index-out-of-range", lambda: _setitem(vk.zeros(3), vk.tensor([0, 3]), 1.0), IndexError,
        "index", "size 3"),
    row("set_num_threads-zero", lambda: vk.set_num_threads(0), RuntimeError, "set_num_threads", "positive"),
    row("set_num_threads-negative", lambda: vk.set_num_threads(-1), RuntimeError, "set_num_threads", "-1"),
    row("Function-without-backward", lambda: _NoBackward.apply(vk.ones(3, requires_grad=True)).sum().backward(),
        NotImplementedError, "_NoBackward.backward is not implemented"),
    row("Function-without-forward", lambda: _NoForward.apply(vk.ones(3, requires_grad=True)), NotImplementedError,
        "_NoForward.forward is not implemented"),
]


@pytest.mark.parametrize("fn, exc, parts", SHAPES_ROWS)
def test_bad_input_shapes(fn, exc, parts):
    test_bad_input(fn, exc, parts)


def test_shapes_getitem_true_adds_a_dim():
    x = vk.arange(6.0).reshape(2, 3)
    assert x[True].shape == (1, 2, 3) and x[False].shape == (0, 2, 3) and x[None, True].shape == (1, 1, 2, 3)
    np.testing.assert_array_equal(x[True].numpy()[0], x.numpy())


def test_shapes_expand_large_numel_is_exact():
    assert vk.ones(1, 1).expand(2**31, 2**31).numel() == 2**62


def test_shapes_zero_sized_layers_build():
    with pytest.warns(UserWarning, match="zero-element"):
        lin = vk.nn.Linear(0, 3)
    assert lin(vk.ones(2, 0)).shape == (2, 3)
    with pytest.warns(UserWarning, match="zero-element"):
        assert vk.nn.Linear(3, 0)(vk.ones(2, 3)).shape == (2, 0)
    with pytest.warns(UserWarning, match="zero-element"):
        vk.nn.Conv2d(0, 3, 3)


# ------------------------------------------------------------------------------------------
# Issue 12, items 1-5, 11, 15 -- memory, threads, recursion, checkpoint: the in-process form of
# each case (the focused tests, several in subprocesses, are in test_threads_and_memory_defects.py)
# ------------------------------------------------------------------------------------------

def test_large_transposed_contiguous_lives():
    assert vk.randn(128, 256).t().contiguous().shape == (256, 128)


def test_hook_registering_a_hook_during_backward_lives():
    x = vk.ones(2, requires_grad=True)
    y = x * 1.0
    y.register_hook(lambda g: [y.register_hook(lambda g2: None) for _ in range(32)] and None)
    (y * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_detach_inplace_and_data_assignment_of_a_large_tensor_live():
    x = vk.randn(256, 256, requires_grad=True)
    x.data = vk.zeros(256, 256)
    assert float(x.sum()) == 0.0
    x.detach_()
    assert not x.requires_grad


def test_tolist_of_a_100000_dim_tensor_lives():
    out = vk.ones([1] * 100000).tolist()
    assert isinstance(out, list)


def test_freeing_a_chain_through_grad_lives():
    prev = None
    for _ in range(100000):
        t = vk.zeros(1, requires_grad=True)
        if prev is not None:
            t.grad = prev
        prev = t
    del t, prev


def test_checkpoint_gives_closed_over_parameter_a_gradient():
    lin = vk.nn.Linear(3, 2)
    vk.utils.checkpoint(lin, vk.ones(4, 3)).sum().backward()
    assert lin.weight.grad is not None and lin.weight.grad.tolist() == [[4.0] * 3] * 2


def test_two_threads_backpropagating_into_one_parameter_lose_nothing():
    import threading
    w = vk.zeros(8, requires_grad=True)
    ts = [threading.Thread(target=lambda: [(w * 1.0).sum().backward() for _ in range(100)])
          for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert w.grad.tolist() == [200.0] * 8


# ------------------------------------------------------------------------------------------
# NaN / Inf through every op of the table
# ------------------------------------------------------------------------------------------

VALS = [NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5, 1e38, -1e-45, NAN, INF, 3.0]


def _f(*shape, grad=True, dtype=vk.float32):
    n = int(np.prod(shape)) if shape else 1
    data = np.array([VALS[i % len(VALS)] for i in range(n)], dtype=np.float64).reshape(shape)
    return vk.tensor(data, dtype=dtype, requires_grad=grad)


NANINF = {
    "to_device": lambda: _f(3, 4).to(vk._C._host_test_device()).exp().to("cpu"),
    "full": lambda: vk.full((2, 3), NAN) + vk.full((2, 3), INF),
    "arange": lambda: vk.arange(0.0, 3.0) * _f(3),
    "rand": lambda: vk.rand(2, 3) * _f(2, 3),
    "randn": lambda: vk.randn(2, 3) * _f(2, 3),
    "randint": lambda: vk.randint(0, 3, (2, 3)) * _f(2, 3),
    # random sampling (issue 15 item 3): NaN / Inf weights, probabilities, stds and rates raise
    "randperm": lambda: vk.randperm(6) * _f(6),
    "multinomial": lambda: vk.multinomial(_f(3, 4), 2),
    "bernoulli": lambda: vk.bernoulli(_f(3, 4)),
    "normal": lambda: vk.normal(_f(3, 4), _f(3, 4)),
    "poisson": lambda: vk.poisson(_f(3, 4)),
    "standard_gamma": lambda: vk._standard_gamma(_f(3, 4)),
    **{u: (lambda u=u: getattr(_f(3, 4), u)())
       for u in ("neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "abs", "sign", "sin",
                 "cos", "tanh", "sigmoid", "relu", "erf", "erfc", "floor", "ceil", "round", "trunc")},
    "gelu": lambda: F.gelu(_f(3, 4)),
    "gelu_backward": lambda: vk.gelu_backward(_f(3, 4), vk.flip(_f(3, 4), [1])),
    "relu_backward": lambda: vk.relu_backward(_f(3, 4), vk.flip(_f(3, 4), [1])),
    "tanh_backward": lambda: vk.tanh_backward(_f(3, 4), vk.flip(_f(3, 4), [1])),
    "sigmoid_backward": lambda: vk.sigmoid_backward(_f(3, 4), vk.flip(_f(3, 4), [1])),
    **{b: (lambda b=b: getattr(vk, b)(_f(3, 4), _f(4)[[3, 2, 1, 0]]))
       for b in ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "eq", "ne", "lt",
                 "le", "gt", "ge")},
    "where": lambda: vk.where(_f(3, 4, grad=False) > 0, _f(3, 4), vk.flip(_f(3, 4), [0])),
    **{b: (lambda b=b: getattr(vk, b)(_f(3, 4, grad=False) > 0, vk.isnan(_f(4, grad=False))))
       for b in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    "clamp": lambda: _f(3, 4).clamp(-1.0, 1.0),
    "cast": lambda: (_f(3, 4).to(vk.float64), _f(3, 4).to(vk.int64), _f(3, 4).to(vk.bool)),
    **{r: (lambda r=r: (getattr(vk, r)(_f(3, 4)), getattr(vk, r)(_f(3, 4), 1)))
       for r in ("sum", "mean", "amax", "amin", "prod", "argmax", "argmin", "logsumexp", "var")},
    "max_dim": lambda: tuple(_f(3, 4).max(1)),
    "min_dim": lambda: tuple(_f(3, 4).min(0)),
    "softmax": lambda: vk.softmax(_f(3, 4), dim=1),
    "log_softmax": lambda: vk.log_softmax(_f(3, 4), dim=1),
    "softmax_backward": lambda: vk.softmax_backward(_f(3, 4), vk.flip(_f(3, 4), [0]), 1),
    "log_softmax_backward": lambda: vk.log_softmax_backward(_f(3, 4), vk.flip(_f(3, 4), [0]), 0),
    "layer_norm": lambda: F.layer_norm(_f(3, 4), (4,), _f(4), vk.flip(_f(4), [0])),
    "layer_norm_backward": lambda: vk.layer_norm_backward(_f(3, 4), vk.flip(_f(3, 4), [1]), (4,), _f(4)),
    "layer_norm_param_grad": lambda: vk.layer_norm_param_grad(_f(3, 4), vk.flip(_f(3, 4), [1]), (4,)),
    "batch_norm": lambda: F.batch_norm(_f(4, 3), None, None, _f(3), vk.flip(_f(3), [0]), training=True),
    "batch_norm_backward": lambda: vk.batch_norm_backward(_f(4, 3), vk.flip(_f(4, 3), [1]), _f(3)),
    "batch_norm_param_grad": lambda: vk.batch_norm_param_grad(_f(2, 3, 2), vk.flip(_f(2, 3, 2), [1])),
    "reshape": lambda: _f(3, 4).reshape(2, 6),
    "permute": lambda: _f(2, 3, 2).permute(2, 0, 1),
    "expand": lambda: _f(1, 4).expand(3, 4),
    "contiguous": lambda: _f(3, 4).transpose(0, 1).contiguous(),
    "slice": lambda: _f(3, 4)[1:, ::2],
    "slice_backward": lambda: vk.slice_backward(_f(3, 2), (3, 4), 1, 0, 4, 2),
    "as_strided": lambda: vk._C._as_strided_region(_f(3, 4), (2, 2), (4, 2), 1),
    "strided_scatter": lambda: vk._C._strided_scatter(_f(3, 4), _f(2, 2), (2, 2), (4, 2), 1),
    "cat": lambda: vk.cat([_f(2, 3), _f(1, 3)]),
    "stack": lambda: vk.stack([_f(2, 3), _f(2, 3)]),
    "pad": lambda: vk.pad(_f(2, 3), [1, 2], value=NAN),
    "flip": lambda: vk.flip(_f(3, 4), [0]),
    "index_select": lambda: vk.index_select(_f(3, 4), 0, vk.tensor([2, 0, 2])),
    "gather": lambda: vk.gather(_f(3, 4), 1, vk.tensor([[0, 3], [1, 1], [2, 0]])),
    "scatter_add": lambda: vk.scatter_add(_f(3, 4), 1, vk.tensor([[0, 3], [1, 1], [2, 0]]), _f(3, 2)),
    "matmul": lambda: _f(3, 4) @ _f(4, 5),
    "addmm": lambda: vk.addmm(_f(5), _f(3, 4), _f(4, 5)),
    "im2col": lambda: vk.im2col(_f(1, 2, 3, 4), 2),
    "col2im": lambda: vk.col2im(_f(1, 8, 6), (3, 4), 2),
    "conv2d": lambda: vk.conv2d(_f(2, 3, 5, 4), _f(4, 3, 3, 2), _f(4)),
    "conv2d_backward_input": lambda: vk.conv2d_backward_input(_f(2, 4, 3, 2), _f(4, 3, 3, 2), (2, 3, 5, 3)),
    "conv2d_backward_weight": lambda: vk.conv2d_backward_weight(_f(2, 4, 3, 2), _f(2, 3, 5, 3), (4, 3, 3, 2)),
    "max_pool2d": lambda: vk.max_pool2d(_f(1, 2, 4, 4), 2),
    "max_pool2d_backward": lambda: vk.max_pool2d_backward(
        *[(g, i) for g, i in [(_f(1, 2, 2, 2), vk.max_pool2d(_f(1, 2, 4, 4, grad=False), 2,
                                                              return_indices=True)[1])]][0], (1, 2, 4, 4)),
    "avg_pool2d": lambda: vk.avg_pool2d(_f(1, 2, 4, 4), 2),
    "custom": lambda: (lambda x: vk.from_op((x * x).detach(), [x], lambda g: [2.0 * x * g], op="square"))(_f(3, 2)),
}
# sort and scan families (sortscan)
NANINF.update({
    "sort": lambda: tuple(_f(3, 4).sort(1)) + tuple(_f(3, 4).sort(0, descending=True)) + tuple(_f(3, 4).topk(2)),
    "searchsorted": lambda: vk.searchsorted(vk.tensor([NAN, 0.0, INF]), _f(3, 4, grad=False)),
    "cumsum": lambda: _f(3, 4).cumsum(1),
    "cumprod": lambda: _f(3, 4).cumprod(0),
    "cummax": lambda: tuple(_f(3, 4).cummax(1)),
    "cummin": lambda: tuple(_f(3, 4).cummin(0)),
})
# recurrent cells (issue #16 item 2: rnn)
NANINF.update({
    "lstm_cell": lambda: tuple(vk._C._lstm_cell(_f(3, 8), _f(3, 2))),
    "lstm_cell_backward": lambda: vk._C._lstm_cell_backward(_f(2, 3, 2), _f(3, 8), _f(3, 2)),
})
# math ops (#15)
NANINF.update({
    **{u: (lambda u=u: getattr(_f(3, 4), u)())
       for u in ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "lgamma",
                 "digamma", "erfinv", "log2", "log10", "exp2", "frac")},
    "lerp": lambda: (_f(3, 4).lerp(_f(3, 4), _f(4)), _f(3, 4).lerp(_f(3, 4), 0.75)),
    **{p: (lambda p=p: getattr(vk, p)(_f(3, 4), _f(4), _f(3, 1), value=0.5)) for p in ("addcmul", "addcdiv")},
    "polygamma": lambda: (_f(3, 4).polygamma(1), vk.polygamma(3, _f(3, 4))),
    **{b: (lambda b=b: getattr(vk, b)(_f(3, 4), _f(4)[[3, 2, 1, 0]])) for b in ("atan2", "fmod")},
})
# integer bits and steps (#15): the extreme integers (no NaN in them), NaN and inf for nextafter
_EXTREMES = [-2 ** 63, -1, 0, 2 ** 63 - 1]
NANINF.update({
    **{s: (lambda s=s: getattr(vk, s)(vk.tensor(_EXTREMES), vk.tensor([0, 1, 63, 64])))
       for s in ("bitwise_left_shift", "bitwise_right_shift")},
    **{g: (lambda g=g: getattr(vk, g)(vk.tensor(_EXTREMES), vk.tensor(_EXTREMES[::-1])))
       for g in ("gcd", "lcm")},
    "nextafter": lambda: vk.nextafter(_f(3, 4, grad=False), _f(4, grad=False)[[3, 2, 1, 0]]),
})
# special functions (#15): a without grad for igamma/igammac (it has no derivative, as torch)
NANINF.update({
    "i0": lambda: _f(3, 4).i0(),
    **{u: (lambda u=u: getattr(vk._bessel, "special_" + u)(_f(3, 4)))
       for u in ("i0e", "i1", "i1e")},
    **{g: (lambda g=g: getattr(vk, g)(_f(3, 4, grad=False), _f(4)[[3, 2, 1, 0]]))
       for g in ("igamma", "igammac")},
    "standard_gamma_grad": lambda: vk._standard_gamma_grad(_f(3, 4, grad=False), _f(4)[[3, 2, 1, 0]]),
})
# the activations with parameters and their fused gradients (#18)
NANINF.update({
    "leaky_relu": lambda: F.leaky_relu(_f(3, 4), 0.2),
    "hardtanh": lambda: (F.hardtanh(_f(3, 4), -1.0, 2.0), F.relu6(_f(3, 4))),
    "hardsigmoid": lambda: F.hardsigmoid(_f(3, 4)),
    "hardswish": lambda: F.hardswish(_f(3, 4)),
    "hardsigmoid_backward": lambda: vk.hardsigmoid_backward(_f(3, 4), vk.flip(_f(3, 4), [1])),
    "hardswish_backward": lambda: vk.hardswish_backward(_f(3, 4), vk.flip(_f(3, 4), [1])),
    "elu": lambda: (F.elu(_f(3, 4)), F.selu(_f(3, 4)), F.celu(_f(3, 4), 0.5)),
    "softplus": lambda: (F.softplus(_f(3, 4)), F.softplus(_f(3, 4), 2.0, 1.0), F.logsigmoid(_f(3, 4)),
                         F.binary_cross_entropy_with_logits(_f(3, 4), vk.full((3, 4), 0.5))),
    "leaky_relu_backward": lambda: vk.leaky_relu_backward(_f(3, 4), vk.flip(_f(3, 4), [1]), 0.2),
    "hardtanh_backward": lambda: vk.hardtanh_backward(_f(3, 4), vk.flip(_f(3, 4), [1]), -1.0, 2.0),
    "elu_backward": lambda: vk.elu_backward(_f(3, 4), vk.flip(_f(3, 4), [1]), 0.5, 2.0),
    "softplus_backward": lambda: vk.softplus_backward(_f(3, 4), vk.flip(_f(3, 4), [1]), 2.0, 1.0),
})


def _first_grad(y, x):
    """d sum(y) / dx as a differentiable tensor: its op is y's fused *_backward op."""
    return vk.autograd.grad(y.sum(), [x], create_graph=True)[0]


# silu and the smooth L1 / Huber pieces, one op each way (#18)
NANINF.update({
    "silu": lambda: F.silu(_f(3, 4)),
    "silu_backward": lambda: vk.silu_backward(_f(3, 4), vk.flip(_f(3, 4), [1])),
    "smooth_l1": lambda: (F.smooth_l1_loss(_f(3, 4), vk.flip(_f(3, 4), [1]), reduction="none", beta=0.5),
                          F.smooth_l1_loss(_f(3, 4), _f(4))),
    "squared_difference": lambda: (F.mse_loss(_f(3, 4), vk.flip(_f(3, 4), [1]), reduction="none"),
                                   F.mse_loss(_f(3, 4), _f(3, 4), reduction="sum")),
    "sum_squares": lambda: (vk.linalg.vector_norm(_f(3, 4)), vk.linalg.vector_norm(_f(3, 4), dim=1, keepdim=True)),
    "interpolate_dim": lambda: (F.interpolate(_f(1, 2, 3, 4), scale_factor=2, mode="bilinear"),
                                F.interpolate(_f(1, 2, 5), size=3, mode="linear", align_corners=True)),
    "huber": lambda: (F.huber_loss(_f(3, 4), vk.flip(_f(3, 4), [1]), reduction="none", delta=0.5),
                      F.huber_loss(_f(3, 4), _f(4), reduction="sum")),
    **{name + "_backward": (lambda name=name: (lambda x: _first_grad(
        getattr(F, name + "_loss")(x, vk.flip(_f(3, 4), [1]), reduction="none"), x))(_f(3, 4)))
       for name in ("smooth_l1", "huber")},
})
# scaled dot-product attention, fused (#18): NaN and Inf in queries, keys and values alike
NANINF.update({
    "attention": lambda: (vk._C._attention(_f(2, 3, 4), vk.flip(_f(2, 3, 4), [1]), _f(2, 3, 2), 0.5, True),
                          vk._C._attention(_f(3, 4), _f(5, 4), _f(5, 2), 1.0)),
    "attention_backward": lambda: vk._C._attention_backward(_f(2, 3, 2), _f(2, 3, 4), vk.flip(_f(2, 3, 4), [1]),
                                                            _f(2, 3, 2), 0.5, True),
})
# solvers (#15 linalg)
NANINF.update({
    "lu_factor": lambda: tuple(vk.linalg.lu_factor_ex(_f(3, 3))) + (vk.linalg.det(_f(2, 2)),),
    "triangular_solve": lambda: vk.linalg.solve_triangular(_f(3, 3), _f(3, 2), upper=True),
    "cholesky": lambda: tuple(vk.linalg.cholesky_ex(_f(3, 3))),
    "eigh": lambda: tuple(vk.linalg.eigh(_f(3, 3))),
    "svd": lambda: tuple(vk.linalg.svd(_f(3, 4), full_matrices=False)) + (vk.linalg.svdvals(_f(4, 3)),),
    "qr": lambda: tuple(vk.linalg.qr(_f(4, 3))) + tuple(vk.linalg.qr(_f(3, 4))),
    "geqrf": lambda: tuple(vk.geqrf(_f(4, 3))),
})


def test_naninf_table_covers_every_op():
    missing = sorted(set(vk._C.op_names()) - set(NANINF))
    assert not missing, f"no NaN/Inf row for {missing}"


def _outputs(r):
    return r if isinstance(r, tuple) else (r,)


@pytest.mark.parametrize("op", sorted(NANINF))
def test_naninf_flows_through(op):
    try:
        outs = _outputs(NANINF[op]())
        leaves = [o for o in outs if o.requires_grad]
        for o in outs:
            np.asarray(o.detach().numpy())  # materialize; values may be NaN/Inf
        if leaves:
            vk.autograd.backward([o.sum() for o in leaves])
    except TYPED as e:  # a typed refusal is acceptable; a crash or an untyped error is not
        print(f"{op}: typed refusal {type(e).__name__}: {e}")
    # and the library still works afterwards
    assert (vk.ones(2) * 2).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("dtype", [vk.float32, vk.float64])
def test_naninf_under_anomaly_mode_raises_typed(dtype):
    """Under detect_anomaly a NaN in backward is a RuntimeError naming the op, never a crash."""
    x = vk.tensor([NAN, 1.0], dtype=dtype, requires_grad=True)
    with vk.autograd.detect_anomaly():
        y = x.exp().sum()
        with pytest.raises(RuntimeError, match="exp"):
            y.backward()


# ------------------------------------------------------------------------------------------
# Issue 12, the differential fuzzer's new kinds (fix-fuzz): defects it found in in-place writes
# (expanded views, the version counter of a node's output) and in pooling windows far larger
# than the plane. The focused tests are at the end of test_diff_fuzz.py.
# ------------------------------------------------------------------------------------------


def test_fuzz_add_into_expanded_view_raises():
    e = vk.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="add_.*single memory location"):
        e.add_(vk.tensor([[1.0], [2.0]]))


def test_fuzz_copy_into_expanded_view_raises():
    e = vk.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="copy_.*single memory location"):
        e.copy_(vk.ones(2, 3))


def test_fuzz_setitem_into_expanded_column_raises():
    e = vk.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="index_put_.*single memory location"):
        e[:, 0] = 5.0


def test_fuzz_backward_after_exp_output_modified_in_place_raises():
    x = vk.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    with vk.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="of exp is at version"):
        y.sum().backward()


def test_fuzz_max_pool2d_kernel_of_2_32_returns():
    x = vk.arange(16, dtype=vk.float32).reshape(1, 1, 4, 4)
    assert vk.nn.functional.max_pool2d(x, 2**32, stride=2, padding=2**31 - 1).tolist() == [[[[15.0] * 2] * 2]]


def test_fuzz_avg_pool2d_backward_kernel_of_2_16_returns():
    x = vk.arange(16, dtype=vk.float32).reshape(1, 1, 4, 4).requires_grad_()
    vk.nn.functional.avg_pool2d(x, 2**16, stride=2, padding=2**15 - 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((1, 1, 4, 4), 4 / 2**32), rtol=1e-6)


def test_fuzz_avg_pool2d_kernel_of_2_32_returns():
    x = vk.arange(16, dtype=vk.float32).reshape(1, 1, 4, 4)
    y = vk.nn.functional.avg_pool2d(x, 2**32, stride=2, padding=2**31 - 1)
    np.testing.assert_allclose(y.numpy(), np.full((1, 1, 2, 2), 120 / 2**64), rtol=1e-6)


def test_fuzz_seed64_chunk_with_huge_count_does_not_overflow():
    """chunk computed ceil(n / chunks) as (n + chunks - 1) / chunks: signed overflow (UB, found by
    the sizes fuzzer under UBSan) for chunks near 2^63. torch overflows there too and raises
    "split_size=-1"; vkml gives the well-defined answer: one element per chunk."""
    assert [t.shape for t in vk.ones(3).chunk(2 ** 63 - 1)] == [(1,)] * 3
    with pytest.raises(vk.SizeError, match="chunk"):  # torch: "split_size=-1"
        vk.ones(0).chunk(2 ** 63 - 1)
    for n, k in [(7, 3), (6, 3), (1, 5), (0, 1), (0, 2), (0, 5)]:
        assert ([tuple(t.shape) for t in vk.ones(n).chunk(k)]
                == [tuple(t.shape) for t in torch.ones(n).chunk(k)]), (n, k)
