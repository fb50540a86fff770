"""Issue 12, items 14, 16 and part of 17: size arithmetic that overflowed or accepted bad sizes,
view() that silently copied, x[True], numpy() of > 64 dims, range checks of eye/normal_/uniform_,
setitem writing in place at the cost of what it writes, set_num_threads, zero-sized layers and
autograd.Function errors. PyTorch is the oracle for values, shapes and exception types."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import to_np


def _raises_like_torch(vk_fn, torch_fn, *parts):
    """vk_fn raises an exception of the type torch_fn raises (vkml's may be a subclass), and its
    message names every part."""
    with pytest.raises(Exception) as t_info:
        torch_fn()
    with pytest.raises(type(t_info.value)) as v_info:
        vk_fn()
    for p in parts:
        assert p in str(v_info.value), f"{p!r} not in {str(v_info.value)!r}"
    return v_info.value


# ------------------------------------------------------------------------------------------
# size arithmetic


def test_expand_uncountable_shape_raises():
    e = _raises_like_torch(lambda: vk.ones(1, 1).expand(2**32, 2**32),
                           lambda: torch.ones(1, 1).expand(2**32, 2**32), "expand", "[4294967296, 4294967296]")
    assert isinstance(e, vk.SizeError) and isinstance(e, vk.ShapeError)


def test_expand_large_countable_shape_has_right_numel():
    assert vk.ones(1, 1).expand(2**31, 2**31).numel() == torch.ones(1, 1).expand(2**31, 2**31).numel() == 2**62


def test_expand_negative_size_raises():
    _raises_like_torch(lambda: vk.ones(1).expand(-2), lambda: torch.ones(1).expand(-2), "expand", "-2")
    _raises_like_torch(lambda: vk.ones(1).expand(-1, 1), lambda: torch.ones(1).expand(-1, 1), "expand")


def test_nbytes_of_large_view_does_not_overflow():
    """numel * itemsize of a valid shape can pass int64 (torch wraps it to 0 here)."""
    assert vk.ones(1).expand(2**62).nbytes == 2**64
    assert vk.ones(2, 3, dtype=vk.float64).nbytes == 48


def test_broadcast_of_uncountable_shapes_raises():
    a = vk.ones(1, 1).expand(2**32, 1)
    b = vk.ones(1, 1).expand(1, 2**32)
    with pytest.raises(vk.SizeError, match="add"):
        a + b


def test_pad_huge_sizes_raises():
    for widths in [(2**62, 2**62), (2**63 - 1, 1)]:
        _raises_like_torch(lambda: vk.pad(vk.ones(2), widths), lambda: torch.nn.functional.pad(torch.ones(2), widths),
                           "pad")


def test_cat_size_overflow_raises():
    big = vk.ones(1).expand(2**62)
    with pytest.raises(vk.SizeError, match="cat"):
        vk.cat([big, big])


def test_narrow_out_of_range_raises_index_error():
    x, t = vk.ones(3, 4), torch.ones(3, 4)
    for start, length in [(5, 1), (-4, 1)]:
        _raises_like_torch(lambda: x.narrow(0, start, length), lambda: t.narrow(0, start, length), "narrow", "start")
    for start, length in [(2, 2), (1, -1), (1, 2**63 - 1)]:
        _raises_like_torch(lambda: x.narrow(0, start, length), lambda: t.narrow(0, start, length), "narrow")
    _raises_like_torch(lambda: vk.tensor(1.0).narrow(0, 0, 1), lambda: torch.tensor(1.0).narrow(0, 0, 1), "0-dim")
    for start, length in [(3, 0), (-3, 3), (1, 2)]:
        assert x.narrow(0, start, length).shape == tuple(t.narrow(0, start, length).shape)
        assert vk.narrow(x, 1, start, length).shape == tuple(torch.narrow(t, 1, start, length).shape)


@pytest.mark.parametrize("sizes", [[5, -1], [-1, 5], [11, -1]])
def test_split_negative_sizes_raise(sizes):
    _raises_like_torch(lambda: vk.ones(10).split(sizes), lambda: torch.ones(10).split(sizes), "split", str(sizes))


def test_split_sizes_sum_checked_before_slicing():
    with pytest.raises(vk.ShapeError, match="split"):
        vk.ones(10).split([5, 6])
    assert [p.shape for p in vk.ones(10).split([0, 10, 0])] == [(0,), (10,), (0,)]


def test_repeat_negative_and_overflowing_raise():
    _raises_like_torch(lambda: vk.ones(2).repeat(-1), lambda: torch.ones(2).repeat(-1), "repeat")
    with pytest.raises(vk.SizeError, match="repeat"):
        vk.ones(1).expand(2**62).repeat(4)


@pytest.mark.parametrize("start, end", [(1, 0), (-1, 0), (2, 1)])
def test_flatten_start_after_end_raises(start, end):
    _raises_like_torch(lambda: vk.ones(2, 3, 4).flatten(start, end), lambda: torch.ones(2, 3, 4).flatten(start, end),
                       "start_dim cannot come after end_dim")


def test_reshape_with_overflowing_known_sizes_raises():
    _raises_like_torch(lambda: vk.ones(2, 3).reshape(2**62, 2**62, -1),
                       lambda: torch.ones(2, 3).reshape(2**62, 2**62, -1), "reshape")
    _raises_like_torch(lambda: vk.ones(2, 3).reshape(-2, 3), lambda: torch.ones(2, 3).reshape(-2, 3), "reshape")


def test_eye_negative_sizes_raise():
    _raises_like_torch(lambda: vk.eye(-1), lambda: torch.eye(-1), "eye", "-1")
    _raises_like_torch(lambda: vk.eye(2, -1), lambda: torch.eye(2, -1), "eye", "-1")
    np.testing.assert_array_equal(to_np(vk.eye(2, 3)), to_np(torch.eye(2, 3)))
    assert vk.eye(0).shape == (0, 0)


def test_linspace_negative_steps_raises():
    _raises_like_torch(lambda: vk.linspace(0, 1, -1), lambda: torch.linspace(0, 1, -1), "linspace", "-1")
    assert vk.linspace(0, 1, 0).shape == (0,)


def test_normal_negative_std_raises():
    _raises_like_torch(lambda: vk.ones(3).normal_(0, -1), lambda: torch.ones(3).normal_(0, -1), "normal", "std")
    _raises_like_torch(lambda: vk.ones(3).normal_(0, float("nan")), lambda: torch.ones(3).normal_(0, float("nan")),
                       "normal")
    assert vk.ones(3).normal_(2.0, 0.0).tolist() == [2.0, 2.0, 2.0]


def test_uniform_empty_range_raises():
    _raises_like_torch(lambda: vk.ones(3).uniform_(5, 1), lambda: torch.ones(3).uniform_(5, 1), "uniform_", "5", "1")
    for a, b in [(0, float("inf")), (float("nan"), 1), (-1e308, 1e308)]:
        _raises_like_torch(lambda: vk.ones(3).uniform_(a, b), lambda: torch.ones(3).uniform_(a, b), "uniform_")
    assert vk.ones(3).uniform_(1, 1).tolist() == [1.0, 1.0, 1.0]


def test_numpy_of_more_than_64_dims_raises():
    _raises_like_torch(lambda: vk.zeros(*[1] * 65).numpy(), lambda: torch.zeros([1] * 65).numpy(), "65 dims", "64")
    with pytest.raises(ValueError):
        np.asarray(vk.zeros(*[1] * 65))
    a = vk.zeros(*[1] * 64).numpy()
    assert isinstance(a, np.ndarray) and a.ndim == 64 and a.dtype == np.float32


# ------------------------------------------------------------------------------------------
# view


def test_view_of_non_viewable_tensor_raises():
    x = vk.ones(2, 3).t()
    _raises_like_torch(lambda: x.view(6), lambda: torch.ones(2, 3).t().view(6),
                       "view size is not compatible with input tensor's size and stride", "reshape")
    _raises_like_torch(lambda: vk.ones(2, 3, 4).transpose(1, 2).view(2, 12),
                       lambda: torch.ones(2, 3, 4).transpose(1, 2).view(2, 12), "view")
    _raises_like_torch(lambda: x.view_as(vk.ones(6)), lambda: torch.ones(2, 3).t().view_as(torch.ones(6)), "view")
    assert x.reshape(6).shape == (6,)  # reshape still copies


def test_view_writes_reach_the_base():
    x = vk.zeros(2, 3, 4)
    v = x.transpose(1, 2).view(2, 4, 3, 1)  # viewable despite the transpose
    with vk.no_grad():
        v[1, 2, 0, 0] = 7.0
    t = torch.zeros(2, 3, 4)
    t.transpose(1, 2).view(2, 4, 3, 1)[1, 2, 0, 0] = 7.0
    np.testing.assert_array_equal(to_np(x), to_np(t))


@pytest.mark.parametrize("shape, perm, new", [((2, 3, 4), (0, 2, 1), (2, 12)), ((2, 3, 4), (0, 2, 1), (1, 2, 4, 3)),
                                              ((4, 6), (1, 0), (3, 2, 4)), ((4, 6), (1, 0), (6, 4, 1)),
                                              ((2, 1, 3), (1, 0, 2), (2, 3)), ((2, 1, 3), (2, 1, 0), (3, 2)),
                                              ((0, 3), (1, 0), (3, 0, 1)), ((1,), (0,), ())])
def test_view_viewability_matches_torch(shape, perm, new):
    n = int(np.prod(shape))
    x = vk.arange(float(n)).reshape(*shape).permute(*perm)
    t = torch.arange(float(n)).reshape(*shape).permute(*perm)
    try:
        expected = t.view(new)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="view"):
            x.view(new)
        return
    got = x.view(new)
    assert got.shape == tuple(expected.shape) and got.stride() == expected.stride()
    np.testing.assert_array_equal(to_np(got), to_np(expected))


def test_view_gradient():
    x = vk.arange(6.0, dtype=vk.float64).requires_grad_()
    (x.view(2, 3) * vk.tensor([1.0, 2.0, 3.0], dtype=vk.float64)).sum().backward()
    assert x.grad.tolist() == [1, 2, 3, 1, 2, 3]


# ------------------------------------------------------------------------------------------
# bool scalars as indices

BOOL_INDICES = [True, False, (None, True), (True, None), (True, 0), (0, True), (Ellipsis, True), (True, True),
                (True, False), (slice(None), True, 1), (True, Ellipsis, None), ([1, 0], True), (True, [1, 0]),
                (True, slice(1, None), [2, 0])]


@pytest.mark.parametrize("index", BOOL_INDICES, ids=repr)
def test_getitem_bool_scalar_matches_torch(index):
    a = np.arange(6.0).reshape(2, 3)
    expected = torch.tensor(a)[index]
    got = vk.tensor(a)[index]
    assert got.shape == tuple(expected.shape)
    np.testing.assert_array_equal(to_np(got), to_np(expected))


def test_getitem_bool_scalar_tensor_and_0d():
    a = np.arange(6.0).reshape(2, 3)
    for idx in [True, False]:
        assert vk.tensor(a)[vk.tensor(idx)].shape == tuple(torch.tensor(a)[torch.tensor(idx)].shape)
        assert vk.tensor(5.0)[idx].shape == tuple(torch.tensor(5.0)[idx].shape)


def test_getitem_bool_scalar_gradient():
    x = vk.tensor([1.0, 2.0, 3.0], dtype=vk.float64, requires_grad=True)
    (x[True] * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("index", BOOL_INDICES, ids=repr)
def test_setitem_bool_scalar_matches_torch(index):
    a = np.arange(6.0).reshape(2, 3)
    v, t = vk.tensor(a), torch.tensor(a)
    t[index] = -1.0
    v[index] = -1.0
    np.testing.assert_array_equal(to_np(v), to_np(t))


# ------------------------------------------------------------------------------------------
# setitem: in place, proportional to what it writes

SETITEM_CASES = [
    (5, 1.0), (-1, 2.0), ((1, 2), 3.0), (slice(2, 5), 4.0), (slice(None, None, 3), 5.0), (Ellipsis, 6.0),
    ((None, 1), 7.0), ((slice(None), 2), np.arange(6.0)), ((Ellipsis, -1), np.arange(6.0)),
    ([0, 5, 5], 8.0), (([1, 2], [3, 4]), np.array([9.0, 10.0])), ((slice(None), [0, 2]), np.arange(12.0).reshape(6, 2)),
    (([[0], [5]], [1, 3]), np.arange(4.0).reshape(2, 2)), ((1, [0, 1]), 11.0),
    ((slice(1, 3), [0, 2]), np.arange(2.0)), ((Ellipsis, [6, 0]), np.arange(12.0).reshape(6, 2)),
    ("mask", 12.0), ("mask_rows", None), ((slice(None), [True, False, True, False, True, False, True]), 13.0),
    (0, np.ones((1, 1, 7))), (slice(0, 2), np.ones((1, 2, 7))), ([4, 1], np.ones((1, 1, 7))),
    ((slice(None), -2), np.ones((6, 1))[:, 0]),
]


def _setitem_args(index, value, a):
    if isinstance(index, str) and index == "mask":
        index = a > 20.0
    elif isinstance(index, str):
        index = np.array([True, False, True, True, False, False])
    if value is None:
        value = np.arange(7.0)
    return index, value


@pytest.mark.parametrize("k", range(len(SETITEM_CASES)), ids=lambda k: repr(SETITEM_CASES[k][0]))
def test_setitem_writes_in_place_like_torch(k):
    a = np.arange(42.0).reshape(6, 7)
    index, value = _setitem_args(*SETITEM_CASES[k], a)
    t = torch.tensor(a)
    v = vk.tensor(a)
    ptr, version = v.data_ptr(), v._version
    t_index = tuple(torch.tensor(i) if isinstance(i, (list, np.ndarray)) else i for i in index) \
        if isinstance(index, tuple) else (torch.tensor(index) if isinstance(index, (list, np.ndarray)) else index)
    v_index = tuple(vk.tensor(i) if isinstance(i, (list, np.ndarray)) else i for i in index) \
        if isinstance(index, tuple) else (vk.tensor(index) if isinstance(index, (list, np.ndarray)) else index)
    t[t_index] = torch.tensor(value) if isinstance(value, np.ndarray) else value
    v[v_index] = vk.tensor(value) if isinstance(value, np.ndarray) else value
    np.testing.assert_array_equal(to_np(v), to_np(t))
    assert v.data_ptr() == ptr and v._version > version


@pytest.mark.parametrize("index", [([0, 1], slice(None), [2, 3]), (slice(None), [0, 1], [2, 3]),
                                   (1, slice(None), [[0], [2]]), ([[0, 2]], slice(1, 3), 0),
                                   (slice(None), 2, [1, 0, 1])], ids=repr)
def test_setitem_advanced_index_placement_matches_torch(index):
    a = np.arange(60.0).reshape(3, 4, 5)
    t, v = torch.tensor(a), vk.tensor(a)
    t_index = tuple(torch.tensor(i) if isinstance(i, list) else i for i in index)
    v_index = tuple(vk.tensor(i) if isinstance(i, list) else i for i in index)
    assert v[v_index].shape == tuple(t[t_index].shape)
    value = -np.arange(float(t[t_index].numel())).reshape(tuple(t[t_index].shape))
    t[t_index] = torch.tensor(value)
    v[v_index] = vk.tensor(value)
    np.testing.assert_array_equal(to_np(v), to_np(t))


def test_setitem_into_strided_view_writes_the_base():
    base = vk.zeros(4, 6)
    t = torch.zeros(4, 6)
    view, tview = base[1:, ::2].t(), t[1:, ::2].t()  # a non-contiguous view with an offset
    view[vk.tensor([0, 2]), 1] = vk.tensor([5.0, 6.0])
    tview[torch.tensor([0, 2]), 1] = torch.tensor([5.0, 6.0])
    view[1] = 9.0
    tview[1] = 9.0
    np.testing.assert_array_equal(to_np(base), to_np(t))


def test_setitem_overlapping_value_reads_before_writing():
    x, t = vk.arange(6.0), torch.arange(6.0)
    x[1:] = x[:-1]
    t[1:] = t[:-1].clone()
    np.testing.assert_array_equal(to_np(x), to_np(t))
    x[vk.tensor([0, 1])] = x[4:]
    t[torch.tensor([0, 1])] = t[4:].clone()
    np.testing.assert_array_equal(to_np(x), to_np(t))


def test_setitem_converts_dtype_and_broadcasts():
    x = vk.zeros(2, 3, dtype=vk.int64)
    x[0] = 2.7  # truncates, as torch
    x[1, vk.tensor([0, 2])] = vk.tensor([7, 8])
    x[:, 1] = vk.tensor(True)
    t = torch.zeros(2, 3, dtype=torch.int64)
    t[0] = 2.7
    t[1, torch.tensor([0, 2])] = torch.tensor([7, 8])
    t[:, 1] = torch.tensor(True)
    np.testing.assert_array_equal(to_np(x), to_np(t))


def test_setitem_bad_value_shape_raises():
    x = vk.zeros(3, 4)
    with pytest.raises(vk.ShapeError, match=r"index_put_.*\[5\].*\[4\]"):
        x[0] = vk.ones(5)
    with pytest.raises(vk.ShapeError, match="index_put_"):
        x[vk.tensor([0, 1])] = vk.ones(3, 4)
    with pytest.raises(IndexError):
        x[vk.tensor([0, 3])] = 1.0
    assert x.sum().item() == 0.0  # nothing written by the failed assignments


def test_setitem_autograd_rules():
    # a leaf that requires grad is refused, as torch; writes into an intermediate or of a value
    # that requires grad are recorded (tests/python/test_inplace_autograd.py)
    leaf = vk.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="index_put_: a leaf"):
        leaf[0] = 1.0
    mid = vk.zeros(3, requires_grad=True) * 2
    mid[0] = 1.0
    assert mid.requires_grad and mid.tolist() == [1.0, 0.0, 0.0]
    buf = vk.zeros(3)
    buf[0] = vk.ones((), requires_grad=True)
    assert buf.requires_grad and buf.tolist() == [1.0, 0.0, 0.0]
    with vk.no_grad():
        leaf[0] = 1.0
    assert leaf.tolist() == [1.0, 0.0, 0.0]
    # a graph that saved the tensor sees the write (version counter)
    p = vk.ones(3, requires_grad=True)
    q = p.exp()
    z = q.exp().sum()
    with vk.no_grad():
        q[1] = 5.0
    with pytest.raises(RuntimeError, match="exp"):
        z.backward()


def _run(code):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_setitem_large_tensor_allocates_no_full_size_temporary():
    """y[5] = 1.0 on 8M elements once built 8M int64 offsets (64 MiB) and more: now the peak
    resident memory grows by less than 16 MiB for every kind of index."""
    out = _run("""
        import resource
        import vkml as vk
        y = vk.zeros(8 * 2**20)
        y2 = vk.zeros(4096, 2048)
        mask = vk.zeros(8 * 2**20, dtype=vk.bool_)
        mask.numpy()[[3, 2**20]] = True  # through numpy (shared memory): no setitem before the measure
        idx = vk.tensor([1, 7, 4000])
        cols = vk.tensor([1, 7, 2000])
        (vk.ones(4) * 2).sum()  # the library is loaded and warm; no setitem has run yet
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        y[5] = 1.0
        y[-3:] = 2.0
        y[..., 7] = 3.0
        y[None, 9] = 4.0
        y[idx] = 5.0
        y[mask] = 6.0
        y[True, 11] = 7.0
        y2[3] = 8.0
        y2[:, 5] = 9.0
        y2[idx] = vk.ones(2048)
        y2[idx, 2] = 10.0
        y2[1:3, cols] = 11.0
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert y[5].item() == 1.0 and y[-1].item() == 2.0 and y[2**20].item() == 6.0
        assert y2[4000, 7].item() == 1.0 and y2[2, 2000].item() == 11.0
        print((after - before) // 1024)
    """)
    assert int(out) < 16, f"peak RSS grew by {out.strip()} MiB"


# ------------------------------------------------------------------------------------------
# set_num_threads


def test_set_num_threads_zero_raises():
    n = vk.get_num_threads()
    for bad in (0, -1):
        _raises_like_torch(lambda: vk.set_num_threads(bad), lambda: torch.set_num_threads(bad),
                           "set_num_threads", "positive")
    assert vk.get_num_threads() == n


def test_set_num_threads_huge_is_capped():
    out = _run("""
        import vkml as vk
        def threads():
            return int([l for l in open("/proc/self/status") if l.startswith("Threads:")][0].split()[1])
        vk.set_num_threads(2**31 - 1)
        n = vk.get_num_threads()
        assert 1024 <= n < 2**20, n
        assert threads() >= n
        vk.set_num_threads(2)
        assert vk.get_num_threads() == 2
        print(threads())
    """)
    assert int(out) < 16  # the capped workers were all joined


def test_set_num_threads_failure_leaves_pool_as_it_was():
    """Threads that cannot be created (address space limited here): RuntimeError, and the pool
    keeps its previous workers, with none of the new ones left running."""
    out = _run("""
        import resource
        import vkml as vk
        def status(key):
            return int([l for l in open("/proc/self/status") if l.startswith(key)][0].split()[1])
        vk.set_num_threads(2)
        (vk.ones(2**20) * 2).sum()  # the pool has run
        before = status("Threads:")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (status("VmSize:") * 1024 + 48 * 2**20, hard))
        try:
            vk.set_num_threads(1000)
            print("no error")
        except RuntimeError as e:
            assert "set_num_threads" in str(e) and "2 threads" in str(e), str(e)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        assert vk.get_num_threads() == 2, vk.get_num_threads()
        assert status("Threads:") == before, (status("Threads:"), before)
        assert (vk.ones(2**20) * 2).sum().item() == 2 * 2**20
        print("ok")
    """)
    assert out.strip() == "ok", out


# ------------------------------------------------------------------------------------------
# zero-sized layers


@pytest.mark.parametrize("make, shape", [
    (lambda m: m.nn.Linear(0, 3), (2, 0)), (lambda m: m.nn.Linear(3, 0), (2, 3)), (lambda m: m.nn.Linear(0, 0), (2, 0)),
    (lambda m: m.nn.Linear(0, 3, bias=False), (2, 0)), (lambda m: m.nn.Conv2d(0, 3, 3), (1, 0, 4, 4)),
    (lambda m: m.nn.Conv2d(3, 0, 3), (1, 3, 4, 4)),
])
def test_zero_sized_layers_match_torch(make, shape):
    with warnings.catch_warnings(record=True) as t_warn:
        warnings.simplefilter("always")
        t_layer = make(torch)
    with warnings.catch_warnings(record=True) as v_warn:
        warnings.simplefilter("always")
        v_layer = make(vk)
    assert [str(w.message) for w in v_warn] == [str(w.message) for w in t_warn]
    for (name, vp), (_, tp) in zip(v_layer.named_parameters(), t_layer.named_parameters()):
        assert vp.shape == tuple(tp.shape), name
    if isinstance(v_layer, vk.nn.Linear):  # torch's conv2d refuses zero channels
        out = v_layer(vk.ones(*shape))
        assert out.shape == tuple(t_layer(torch.ones(shape)).shape)
        if 0 not in out.shape:
            bias = [p for n, p in v_layer.named_parameters() if n == "bias"]
            np.testing.assert_allclose(to_np(out), to_np(bias[0].detach().expand(*out.shape))
                                       if bias else np.zeros(out.shape))


@pytest.mark.parametrize("fn", ["kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_",
                                "uniform_", "normal_", "zeros_", "ones_"])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3, 3)])
def test_init_on_zero_element_tensors_matches_torch(fn, shape):
    with warnings.catch_warnings(record=True) as t_warn:
        warnings.simplefilter("always")
        getattr(torch.nn.init, fn)(torch.empty(shape))
    with warnings.catch_warnings(record=True) as v_warn:
        warnings.simplefilter("always")
        r = getattr(vk.nn.init, fn)(vk.empty(*shape))
    assert r.shape == shape
    assert [str(w.message) for w in v_warn] == [str(w.message) for w in t_warn]


@pytest.mark.parametrize("fn", ["xavier_uniform_", "xavier_normal_"])
def test_xavier_on_zero_fans_is_a_no_op(fn):
    """torch raises ZeroDivisionError here (fan_in + fan_out == 0); vkml warns and does nothing, as
    torch's kaiming_* do for every zero-element tensor."""
    with pytest.warns(UserWarning, match="zero-element"):
        assert getattr(vk.nn.init, fn)(vk.empty(0, 0)).shape == (0, 0)


# ------------------------------------------------------------------------------------------
# autograd.Function errors name the class


class NoBackward(vk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2


class NoForward(vk.autograd.Function):
    @staticmethod
    def backward(ctx, g):
        return g


class SavesANumber(vk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, None, 3)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g


def test_function_without_backward_names_the_class():
    y = NoBackward.apply(vk.ones(3, requires_grad=True)).sum()  # forward works, as in torch
    with pytest.raises(NotImplementedError, match=r"NoBackward\.backward is not implemented"):
        y.backward()
    x = vk.ones(3, requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"NoBackward\.backward"):
        vk.autograd.grad(NoBackward.apply(x).sum(), [x])


def test_function_without_forward_names_the_class():
    with pytest.raises(NotImplementedError, match=r"NoForward\.forward is not implemented"):
        NoForward.apply(vk.ones(3, requires_grad=True))


def test_function_ctx_save_for_backward_non_tensor_names_the_class():
    with pytest.raises(TypeError, match=r"SavesANumber: save_for_backward .* argument 2 is of type int"):
        SavesANumber.apply(vk.ones(3, requires_grad=True))
