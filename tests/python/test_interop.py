"""The Python surface: dtype inference, numpy zero-copy, DLPack with torch, repr in PyTorch's
format, exception mapping, indexing against numpy, conversions, pickling, per-op overhead."""

import copy
import math
import pickle
import timeit

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, to_np


# ---------------------------------------------------------------------------------------------
# dtypes and construction


def test_tensor_infers_dtype_like_torch():
    cases = [3.5, 2, True, [1.0, 2.0], [1, 2], [True, False], [[1, 2.5]], [], np.float64(1.0),
             np.arange(3), np.arange(3, dtype=np.int32), np.ones(2, dtype=np.float32),
             np.ones(2, dtype=np.float64), np.array([True]), np.ones(2, dtype=np.float16),
             np.ones(2, dtype=np.uint8), np.ones(2, dtype=np.int16)]
    for data in cases:
        v, t = vk.tensor(data), torch.tensor(data)
        expected = str(t.dtype).replace("torch.", "")
        assert v.dtype.name == expected, (data, v.dtype, t.dtype)
        assert v.shape == tuple(t.shape)
        np.testing.assert_array_equal(to_np(v), t.numpy().astype(to_np(v).dtype))
    assert vk.tensor([1, 2], dtype=vk.float64).dtype == vk.float64
    assert vk.tensor([1.7, -2.2], dtype=np.int32).tolist() == [1, -2]
    assert vk.zeros(2, dtype=np.float64).dtype == vk.float64
    assert vk.zeros(2, dtype=float).dtype == vk.float64
    assert vk.zeros(2, dtype="int32").dtype == vk.int32
    with pytest.raises(vk.DTypeError):
        vk.tensor([1 + 2j])
    with pytest.raises(vk.DTypeError):
        vk.zeros(2, dtype=np.complex64)


def test_dtype_objects():
    assert repr(vk.float32) == "vkml.float32" and str(vk.int64) == "vkml.int64"
    assert vk.bool_ is vk.dtype.bool and getattr(vk, "bool") is vk.bool_
    assert vk.float is vk.float32 and vk.double is vk.float64 and vk.long is vk.int64
    assert vk.float32.is_floating_point and not vk.int32.is_floating_point
    assert vk.float64.itemsize == 8


def test_factories():
    assert vk.zeros(2, 3).shape == (2, 3) and vk.zeros((2, 3)).shape == (2, 3)
    assert vk.ones([4]).tolist() == [1.0] * 4
    assert vk.full((2,), 7).dtype == vk.int64 and vk.full((2,), 7.0).dtype == vk.float32
    assert vk.full((1,), True).dtype == vk.bool_
    assert vk.arange(5).tolist() == [0, 1, 2, 3, 4] and vk.arange(5).dtype == vk.int64
    assert vk.arange(1.0, 2.0, 0.5).tolist() == [1.0, 1.5]
    assert_close(vk.linspace(0, 1, 5), torch.linspace(0, 1, 5), "float32")
    assert_close(vk.eye(3), torch.eye(3), "float32")
    assert_close(vk.eye(2, 3), torch.eye(2, 3), "float32")
    x = vk.tensor([[1.0, 2.0]], dtype=vk.float64)
    assert vk.zeros_like(x).dtype == vk.float64 and vk.ones_like(x).tolist() == [[1.0, 1.0]]
    assert vk.full_like(x, 3.0).tolist() == [[3.0, 3.0]]
    r = vk.randint(0, 3, (1000,))
    assert set(r.tolist()) == {0, 1, 2}
    vk.manual_seed(7)
    a = vk.randn(5)
    vk.manual_seed(7)
    assert vk.randn(5).tolist() == a.tolist()
    state = vk.get_rng_state()
    b = vk.rand(3).tolist()
    vk.set_rng_state(state)
    assert vk.rand(3).tolist() == b
    assert vk.rand(2, 2, requires_grad=True).requires_grad


# ---------------------------------------------------------------------------------------------
# numpy and DLPack


def test_numpy_zero_copy():
    t = vk.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = t.numpy()
    assert np.shares_memory(a, t.numpy())
    a[0, 1] = 20.0
    assert t.tolist() == [[1.0, 20.0], [3.0, 4.0]]
    t.add_(1.0)
    assert a[1, 1] == 5.0
    tt = t.T.numpy()  # a strided view, still no copy
    assert np.shares_memory(tt, a) and tt.tolist() == [[2.0, 4.0], [21.0, 5.0]]
    assert np.asarray(t).dtype == np.float32
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    b = np.arange(4.0)
    s = vk.from_numpy(b)
    b[0] = -1.0
    assert s.tolist()[0] == -1.0 and s.dtype == vk.float64
    with pytest.raises(RuntimeError, match="requires grad"):
        vk.tensor([1.0], requires_grad=True).numpy()
    for dt in (vk.int32, vk.int64, vk.bool_, vk.float64):
        z = vk.zeros(3, dtype=dt)
        assert z.numpy().dtype == np.dtype(dt.name) and z.numpy().shape == (3,)
    # the array keeps the memory alive after the tensor is gone
    arr = vk.arange(6).reshape(2, 3).numpy()
    np.testing.assert_array_equal(arr, np.arange(6).reshape(2, 3))


def test_dlpack_round_trip_with_torch():
    for dt, tdt in ((vk.float32, torch.float32), (vk.float64, torch.float64), (vk.int64, torch.int64),
                    (vk.int32, torch.int32), (vk.bool_, torch.bool)):
        v = vk.tensor([[1, 0, 1], [0, 1, 1]], dtype=dt)
        t = torch.from_dlpack(v)
        assert t.dtype == tdt and tuple(t.shape) == v.shape
        np.testing.assert_array_equal(t.numpy(), to_np(v))
        back = vk.from_dlpack(t)
        assert back.dtype == dt and back.tolist() == v.tolist()
    v = vk.zeros(2, 3)
    t = torch.from_dlpack(v)
    t[0, 0] = 5.0  # shared memory both ways
    assert v.tolist()[0][0] == 5.0
    src = torch.arange(12.0).reshape(3, 4).t()  # non-contiguous
    w = vk.from_dlpack(src)
    assert w.shape == (4, 3) and w.stride() == (1, 4)
    np.testing.assert_array_equal(to_np(w), src.numpy())
    src[0, 0] = 100.0
    assert w.tolist()[0][0] == 100.0
    assert v.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(v)  # numpy as the consumer
    a[1, 2] = 7.0
    assert v.tolist()[1][2] == 7.0
    ro = np.arange(3.0)
    ro.setflags(write=False)
    c = vk.from_numpy(ro)  # read-only memory is copied (vkml may write into its tensors)
    c.add_(1.0)
    assert ro.tolist() == [0.0, 1.0, 2.0] and c.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError):
        vk.from_dlpack(5)
    with pytest.raises(RuntimeError):
        vk.tensor([1.0], requires_grad=True).__dlpack__()
    # a tensor built on foreign memory takes part in autograd like any other
    x = vk.from_dlpack(torch.tensor([1.0, 2.0])).requires_grad_()
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_conversions():
    t = vk.tensor([[1, 2], [3, 4]])
    assert t.tolist() == [[1, 2], [3, 4]] and isinstance(t.tolist()[0][0], int)
    assert vk.tensor(2.5).item() == 2.5 and isinstance(vk.tensor(2.5).item(), float)
    assert vk.tensor(7).item() == 7 and isinstance(vk.tensor(7).item(), int)
    assert vk.tensor(True).item() is True
    assert float(vk.tensor([1.5])) == 1.5 and int(vk.tensor(3)) == 3
    assert [10, 20, 30][vk.tensor(1)] == 20  # __index__
    assert bool(vk.tensor([1.0])) and not bool(vk.tensor(0))
    with pytest.raises(RuntimeError):
        bool(vk.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError):
        vk.tensor([1.0, 2.0]).item()
    assert [r.tolist() for r in vk.tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]
    assert 3 in vk.tensor([[1, 2], [3, 4]]) and 5 not in vk.tensor([1, 2])
    x = vk.tensor([1.5, -2.5])
    assert x.to(vk.int64).tolist() == [1, -2] and x.double().dtype == vk.float64
    assert x.to(vk.float32) is x and x.float() is x and x.to("cpu") is x
    assert x.to(dtype=vk.float64).dtype == vk.float64
    assert x.to(vk.tensor([1])).dtype == vk.int64
    assert x.long().dtype == vk.int64 and x.int().dtype == vk.int32 and x.bool().dtype == vk.bool_
    assert f"{vk.tensor(3.14159):.2f}" == "3.14"
    assert str(vk.tensor([1.0]).cpu().device) == "cpu"


def test_pickle_deepcopy_and_subclass():
    x = vk.tensor([[1.0, 2.0]], requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist() and y.requires_grad and y.dtype == x.dtype
    z = copy.deepcopy(x)
    z.data.add_(1.0) if False else None
    with vk.no_grad():
        z.add_(1.0)
    assert x.tolist() == [[1.0, 2.0]] and z.tolist() == [[2.0, 3.0]] and z.requires_grad

    class Param(vk.Tensor):
        pass

    p = vk.Tensor._make_subclass(Param, vk.tensor([1.0, 2.0]), True)
    assert isinstance(p, Param) and p.requires_grad and p.is_leaf
    (p * 2).sum().backward()
    assert p.grad.tolist() == [2.0, 2.0]
    q = copy.deepcopy(p)
    assert type(q) is Param and q.grad.tolist() == [2.0, 2.0]

    class Param2(vk.Tensor):
        def __init__(self, data, requires_grad=True):
            super().__init__(data, requires_grad=requires_grad)

    assert Param2([1.0]).requires_grad and isinstance(Param2([1.0]) * 2, vk.Tensor)
    # .data swaps memory under the same tensor
    w = vk.tensor([1.0, 2.0], requires_grad=True)
    w.data = vk.tensor([5.0, 6.0])
    assert w.tolist() == [5.0, 6.0] and w.requires_grad


# ---------------------------------------------------------------------------------------------
# repr


REPR_CASES = [
    lambda m: m.tensor([[1.0, 2.0]]),
    lambda m: m.tensor([1.5, -2.25, 3.0]),
    lambda m: m.tensor(3.0),
    lambda m: m.tensor(2),
    lambda m: m.tensor([True, False]),
    lambda m: m.tensor([1, -20, 300]),
    lambda m: m.tensor([1e-5, 1.0]),
    lambda m: m.tensor([1e10, 1.0]),
    lambda m: m.tensor([[1e-8, 2.0], [3.0, 4e9]], dtype=m.float64),
    lambda m: m.tensor([float("nan"), float("inf"), -1.0]),
    lambda m: m.tensor([0.0, 0.0]),
    lambda m: m.zeros(0),
    lambda m: m.zeros(2, 0),
    lambda m: m.zeros(0, dtype=m.int64),
    lambda m: m.tensor([1, 2], dtype=m.int32),
    lambda m: m.arange(2000).reshape(40, 50),
    lambda m: m.arange(24.0).reshape(2, 3, 4) / 7,
    lambda m: m.arange(100.0) * 1.5,
    lambda m: m.tensor([1.0, 2.0], requires_grad=True),
    lambda m: m.tensor([[0.1234567, 100.5]], dtype=m.float64, requires_grad=True),
]


@pytest.mark.parametrize("k", range(len(REPR_CASES)))
def test_repr_matches_torch(k):
    v, t = REPR_CASES[k](vk), REPR_CASES[k](torch)
    assert repr(v) == repr(t).replace("torch.", "vkml."), f"\nvkml:  {v!r}\ntorch: {t!r}"
    assert str(v) == repr(v)


def test_repr_grad_fn():
    x = vk.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward>)"
    assert repr((x * 2).sum()) == "tensor(6., grad_fn=<SumBackward>)"
    assert repr(x[None] @ x[:, None]) == "tensor([[5.]], grad_fn=<MatmulBackward>)"


# ---------------------------------------------------------------------------------------------
# exceptions


def test_exceptions_map_to_python_types():
    assert issubclass(vk.ShapeError, ValueError) and issubclass(vk.DTypeError, TypeError)
    with pytest.raises(vk.ShapeError, match=r"\[2, 3\].*\[4\]|\[4\].*\[2, 3\]"):
        vk.ones(2, 3) + vk.ones(4)
    with pytest.raises(ValueError):
        vk.ones(2, 3) @ vk.ones(2, 3)
    with pytest.raises(vk.DTypeError):
        -vk.tensor([True])  # (bool * bool is `and`, as in torch)
    with pytest.raises(IndexError):
        vk.ones(3)[5]
    with pytest.raises(IndexError):
        vk.ones(3).sum(4)
    with pytest.raises(MemoryError):
        vk.zeros(2 ** 62)
    x = vk.tensor([1.5], requires_grad=True)
    with pytest.raises(RuntimeError):
        x.add_(1.0)
    # every C++ error type, with its message
    for kind, py in [("DTypeError", vk.DTypeError), ("ShapeError", vk.ShapeError), ("IndexError", IndexError),
                     ("NotImplementedError", NotImplementedError), ("MemoryError", MemoryError),
                     ("RuntimeError", RuntimeError), ("Error", RuntimeError), ("bad_alloc", MemoryError)]:
        with pytest.raises(py, match=None if kind == "bad_alloc" else "the message"):
            vk._C._throw(kind, "the message")
    with pytest.raises(TypeError):
        vk.ones(2) + "a"
    with pytest.raises(TypeError):
        vk.ones(2).reshape("a")


# ---------------------------------------------------------------------------------------------
# indexing against numpy


INDEXES = [0, -1, (1, 2), slice(1, 3), (slice(None), 1), (Ellipsis, 2), (None, 0), (0, None, slice(1, 4, 2)),
           [0, 2, 2], (slice(None), [3, 0]), np.array([1, 0]), ([0, 2], [1, 3]),
           np.array([True, False, True]), (slice(None), np.array([True, False, True, False, True])),
           (1, Ellipsis), (Ellipsis, None), (slice(-2, None), slice(None, -1)), (slice(5, 10),),
           (np.int64(1), slice(0, 2)), np.array([[0, 1], [2, 2]])]


@pytest.mark.parametrize("k", range(len(INDEXES)))
def test_getitem_matches_numpy(k):
    a = np.arange(15.0).reshape(3, 5)
    index = INDEXES[k]
    np.testing.assert_array_equal(to_np(vk.tensor(a)[index]), a[index])
    t = torch.tensor(a, requires_grad=True)
    v = vk.tensor(a, requires_grad=True)
    tindex = tuple(torch.tensor(i) if isinstance(i, np.ndarray) else i for i in index) \
        if isinstance(index, tuple) else (torch.tensor(index) if isinstance(index, np.ndarray) else index)
    g = np.random.default_rng(k).uniform(-1, 1, a[index].shape)
    t[tindex].backward(torch.tensor(g))
    v[index].backward(vk.tensor(g))
    assert_close(v.grad, t.grad)


def test_getitem_with_tensors_and_masks():
    a = np.arange(12.0).reshape(3, 4)
    v = vk.tensor(a)
    np.testing.assert_array_equal(to_np(v[vk.tensor([2, 0])]), a[[2, 0]])
    np.testing.assert_array_equal(to_np(v[v > 5.0]), a[a > 5.0])
    np.testing.assert_array_equal(to_np(v[:, vk.tensor([True, False, False, True])]), a[:, [True, False, False, True]])
    np.testing.assert_array_equal(to_np(v[vk.tensor(1)]), a[1])
    with pytest.raises(ValueError):
        v[::-1]
    with pytest.raises(IndexError):
        v[vk.tensor([0.5])]


def test_setitem_matches_numpy():
    for index, value in [(0, 1.0), ((1, 2), -5.0), (slice(0, 2), np.array([9.0, 8.0, 7.0, 6.0])),
                         ((slice(None), 1), vk.tensor([1.0, 2.0, 3.0])), ([0, 2], 0.5),
                         (np.array([[True, False, True, False]] * 3), 3.0), ((Ellipsis, -1), 4.0)]:
        a = np.arange(12.0).reshape(3, 4)
        v = vk.tensor(a)
        a[index] = to_np(value) if isinstance(value, vk.Tensor) else value
        v[index] = value
        np.testing.assert_array_equal(to_np(v), a)


# ---------------------------------------------------------------------------------------------
# method surface against torch


def test_methods_match_torch():
    rng = np.random.default_rng(0)
    a = rng.uniform(-2, 2, (2, 3, 4))
    v, t = vk.tensor(a), torch.tensor(a)
    pairs = [
        lambda m, x: x.sum((0, 2)), lambda m, x: x.mean(-1, keepdim=True), lambda m, x: x.std(1),
        lambda m, x: x.var(1, unbiased=False), lambda m, x: x.flatten(), lambda m, x: x.squeeze(),
        lambda m, x: x.unsqueeze(0).squeeze(0), lambda m, x: x.permute(2, 0, 1).contiguous(),
        lambda m, x: x.transpose(1, 2), lambda m, x: x.reshape(4, -1), lambda m, x: x.view(6, 4),
        lambda m, x: x.expand(2, 2, 3, 4), lambda m, x: x[0].t(), lambda m, x: x.narrow(2, 1, 2),
        lambda m, x: m.cat(x.split(2, dim=2), 2), lambda m, x: m.stack(x.unbind(1), 0),
        lambda m, x: m.cat(x.chunk(3, 1), 0), lambda m, x: x.abs().sqrt(), lambda m, x: x.clamp(min=0),
        lambda m, x: x.clip(-1, 1), lambda m, x: m.where(x > 0, x, 0.0), lambda m, x: x.masked_fill(x < 0, 1.5),
        lambda m, x: x.softmax(-1), lambda m, x: x.log_softmax(1), lambda m, x: x.max(2).values,
        lambda m, x: x.min(1).indices, lambda m, x: x.argmax(-1), lambda m, x: x.prod(0),
        lambda m, x: x.logsumexp(1), lambda m, x: x.repeat(1, 2, 1), lambda m, x: x.flip(0, 2),
        lambda m, x: x.pow(2), lambda m, x: m.pow(2.0, x), lambda m, x: x.square(),
        lambda m, x: x.div(3.0, rounding_mode="floor"), lambda m, x: x.div(1.5, rounding_mode="trunc"),
        lambda m, x: x // 0.7, lambda m, x: x.add(x, alpha=2), lambda m, x: x.sub(1), lambda m, x: x.mul(x),
        lambda m, x: x @ x.transpose(1, 2), lambda m, x: x.matmul(x[0, 0]), lambda m, x: m.maximum(x, x * 0.5),
        lambda m, x: x.gather(2, m.tensor([[[0, 3]] * 3] * 2)), lambda m, x: x.index_select(1, m.tensor([2, 2])),
        lambda m, x: x.eq(x) & (x > 0), lambda m, x: (x > 0) | (x < -1), lambda m, x: ~(x > 0),
        lambda m, x: x.ge(0.5), lambda m, x: x.ne(0.5), lambda m, x: x.nonzero(),
        lambda m, x: x.amax((1, 2)), lambda m, x: x.amin(0), lambda m, x: m.broadcast_to(x[0, 0], (3, 4)),
        lambda m, x: x.type_as(m.tensor([1])), lambda m, x: m.exp(x) + m.log1p(x.abs()) - m.tanh(x),
        lambda m, x: x.sigmoid() * x.relu(), lambda m, x: x.expand_as(m.zeros(5, 2, 3, 4)),
        lambda m, x: x.select(1, 2), lambda m, x: m.eye(3, dtype=m.float64) @ x[0, :, :3],
        lambda m, x: (x > 0).any(), lambda m, x: (x > -1.5).all(1), lambda m, x: x.any(2, keepdim=True),
        lambda m, x: m.all(x > 0), lambda m, x: m.isnan(m.log(x)), lambda m, x: m.isinf(1 / (x * 0)),
        lambda m, x: m.isfinite(m.log(x)),
    ]
    for k, f in enumerate(pairs):
        assert_close(f(vk, v), f(torch, t), "float64", what=f"pair {k}")


def test_module_functions_exist():
    for name in ["exp", "log", "sqrt", "abs", "relu", "sigmoid", "tanh", "cat", "stack", "where",
                 "matmul", "maximum", "minimum", "sum", "mean", "amax", "softmax", "log_softmax",
                 "reshape", "transpose", "permute", "gather", "index_select", "clamp", "zeros", "ones",
                 "full", "arange", "linspace", "eye", "rand", "randn", "randint", "zeros_like",
                 "ones_like", "manual_seed", "no_grad", "enable_grad", "set_grad_enabled",
                 "is_grad_enabled", "from_op", "from_dlpack", "from_numpy", "tensor", "Tensor",
                 "DTypeError", "ShapeError", "conv2d", "max_pool2d", "avg_pool2d", "im2col", "col2im"]:
        assert hasattr(vk, name), name
    assert callable(vk.utils.checkpoint) and callable(vk.autograd.grad)
    assert not hasattr(vk, "grad")  # autograd.grad lives under vk.autograd, as in torch


# ---------------------------------------------------------------------------------------------
# per-op overhead
