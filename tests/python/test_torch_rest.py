"""The rest of the torch namespace (issue #15, vkml/_torch_rest.py) against torch 2.13: gradient,
as_strided and its copy/scatter forms, histogramdd, nonzero_static, frobenius_norm, norm_except_dim,
set_default_tensor_type, the anomaly switches, detach_/addmv_/put/resize_as_, Tensor.new, the
resize_ family, apply_/map_/map2_ and the small Tensor attributes."""

import warnings

import numpy as np
import pytest
import torch

import vkml as vk

from conftest import assert_close, devices, numeric_grad

DEVICES = devices()
RNG = np.random.default_rng(15)


def _pair(a, device="cpu", grad=False):
    return (vk.tensor(a, device=device, requires_grad=grad), torch.tensor(a, requires_grad=grad))


def _same_error(fv, ft, match=None):
    """fv and ft raise the same exception type (and fv's message matches `match`)."""
    with pytest.raises(Exception) as et:
        ft()
    with pytest.raises(type(et.value), match=match):
        fv()


# ---- torch.gradient ----

GRADIENT_CASES = [
    ((7,), {}),
    ((7,), dict(spacing=0.5, edge_order=2)),
    ((5, 6), {}),
    ((5, 6), dict(spacing=[2.0, 0.25])),
    ((5, 6), dict(dim=1, edge_order=2)),
    ((4, 5, 3), dict(dim=[0, -1], spacing=3.0, edge_order=2)),
    ((4, 5, 3), dict(dim=(2,), spacing=[0.5])),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,kw", GRADIENT_CASES)
def test_gradient_even_spacing_values_and_gradients(device, shape, kw):
    a = RNG.standard_normal(shape)
    xv, xt = _pair(a, device, grad=True)
    gv, gt = vk.gradient(xv, **kw), torch.gradient(xt, **kw)
    assert len(gv) == len(gt)
    ups = [RNG.standard_normal(tuple(g.shape)) for g in gt]
    for v, t in zip(gv, gt):
        assert_close(v, t)
    sum((v * vk.tensor(u, device=device)).sum() for v, u in zip(gv, ups)).backward()
    sum((t * torch.tensor(u)).sum() for t, u in zip(gt, ups)).backward()
    assert_close(xv.grad, xt.grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_coordinate_tensors_values_and_gradients(device, edge_order):
    a = RNG.standard_normal((5, 6))
    c0, c1 = np.cumsum(RNG.random(5) + 0.1), np.cumsum(RNG.random(6) + 0.1)
    xv, xt = _pair(a, device, grad=True)
    kv = dict(spacing=(vk.tensor(c0, device=device), vk.tensor(c1, device=device)), edge_order=edge_order)
    kt = dict(spacing=(torch.tensor(c0), torch.tensor(c1)), edge_order=edge_order)
    gv, gt = vk.gradient(xv, **kv), torch.gradient(xt, **kt)
    for v, t in zip(gv, gt):
        assert_close(v, t)
    (gv[0].sum() + 2 * gv[1].sum()).backward()
    (gt[0].sum() + 2 * gt[1].sum()).backward()
    assert_close(xv.grad, xt.grad)


def test_gradient_integer_input_gives_default_float():
    v, t = vk.gradient(vk.tensor([1, 4, 9, 16])), torch.gradient(torch.tensor([1, 4, 9, 16]))
    assert v[0].dtype == vk.float32 and t[0].dtype == torch.float32
    assert_close(v[0], t[0])
    c = [0, 1, 3, 4]
    assert_close(vk.gradient(vk.tensor([1.0, 4, 9, 16]), spacing=(vk.tensor(c),))[0],
                 torch.gradient(torch.tensor([1.0, 4, 9, 16]), spacing=(torch.tensor(c),))[0], "float32")


@pytest.mark.parametrize("shape,kw", [((4,), dict(edge_order=3)), ((4,), dict(spacing=[1.0, 2.0])), ((4,), dict(dim=5)),
                                      ((3, 4), dict(spacing=[1.0, 2.0], dim=1)), ((3, 4), dict(dim=[1, -1]))])
def test_gradient_bad_arguments_raise_as_torch(shape, kw):
    with pytest.raises(Exception) as et:
        torch.gradient(torch.ones(shape), **kw)
    with pytest.raises(type(et.value)) as ev:
        vk.gradient(vk.ones(*shape), **kw)
    assert str(ev.value) == str(et.value)


def test_gradient_too_short_a_dim_for_the_edge_order():
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        vk.gradient(vk.tensor([1.0, 4.0]), edge_order=2)


def test_gradient_coordinate_tensor_of_the_wrong_length_is_refused():
    with pytest.raises(RuntimeError, match="coordinate tensor"):
        vk.gradient(vk.tensor([1.0, 4, 5]), spacing=[vk.tensor([1.0, 2.0])])


# ---- as_strided, as_strided_copy, as_strided_scatter ----

STRIDED = [((2, 2), (1, 2), None), ((3, 3), (1, 1), 2), ((2, 3), (3, 1), 0), ((4,), (0,), 5),
           ((2, 2, 2), (4, 1, 2), 1), ((), (), 3), ((0, 2), (1, 1), None)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size,stride,offset", STRIDED)
def test_as_strided_values_and_overlapping_gradients(device, size, stride, offset):
    a = RNG.standard_normal(12)
    xv, xt = _pair(a, device, grad=True)
    yv, yt = vk.as_strided(xv, size, stride, offset), torch.as_strided(xt, size, stride, offset)
    assert_close(yv, yt)
    up = RNG.standard_normal(size)
    (yv * vk.tensor(up, device=device)).sum().backward()
    (yt * torch.tensor(up)).sum().backward()
    assert_close(xv.grad, xt.grad)  # elements read twice get the summed gradient, as torch's


def test_as_strided_method_copy_and_a_view_input_with_an_offset():
    base_v, base_t = _pair(np.arange(12.0))
    v, t = base_v[3:].view(3, 3), base_t[3:].view(3, 3)
    assert_close(v.as_strided((2, 2), (3, 1)), t.as_strided((2, 2), (3, 1)))
    assert_close(vk.as_strided_copy(v, (2, 2), (1, 3), 4), torch.as_strided_copy(t, (2, 2), (1, 3), 4))


def test_as_strided_is_a_copy_writes_do_not_reach_the_input():
    x = vk.arange(6.0)
    y = x.as_strided((2, 2), (1, 2))
    y.fill_(-1.0)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("args", [((2, 2), (1, -1)), ((3, 3), (2, 2)), ((2,), (1,), 5), ((2, 2), (1, 1), -1),
                                  ((2, 2), (1,))])
def test_as_strided_bad_geometry_raises_runtime_error(args):
    _same_error(lambda: vk.as_strided(vk.arange(6.0), *args), lambda: torch.as_strided(torch.arange(6.0), *args))


def test_as_strided_of_a_non_contiguous_input_is_refused_clearly():
    with pytest.raises(RuntimeError, match="as_strided: vkml reads the flat memory of a contiguous input"):
        vk.arange(6.0).view(2, 3).t().as_strided((2,), (1,))


def test_as_strided_in_place_is_not_implemented():
    with pytest.raises(NotImplementedError, match="as_strided_"):
        vk.arange(6.0).as_strided_((2,), (1,))


@pytest.mark.parametrize("device", DEVICES)
def test_as_strided_scatter_values_and_gradients(device):
    """Values against torch; gradients against finite differences: torch 2.13's gradient for
    input is wrong (it keeps the overwritten elements' gradient and drops the others; its
    gradcheck fails), vkml's is the true one."""
    a, s = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 3))
    xv, xt = _pair(a, device, grad=True)
    sv, st = _pair(s, device, grad=True)
    yv = vk.as_strided_scatter(xv, sv, (2, 3), (4, 1), 1)
    assert_close(yv, torch.as_strided_scatter(xt, st, (2, 3), (4, 1), 1))
    up = RNG.standard_normal((3, 4))
    (yv * vk.tensor(up, device=device)).sum().backward()
    gx, gs = numeric_grad(lambda p, q: vk.as_strided_scatter(vk.tensor(p), vk.tensor(q), (2, 3), (4, 1), 1),
                          [a.copy(), s.copy()], up)
    assert_close(xv.grad, gx, "float32")
    assert_close(sv.grad, gs, "float32")


def test_as_strided_scatter_method_and_src_of_the_wrong_shape():
    xv, xt = _pair(np.arange(6.0))
    sv, st = _pair([10.0, 20.0])
    assert_close(xv.as_strided_scatter(sv, (2,), (2,)), xt.as_strided_scatter(st, (2,), (2,)))
    _same_error(lambda: vk.as_strided_scatter(xv, vk.ones(3), (2,), (2,)),
                lambda: torch.as_strided_scatter(xt, torch.ones(3), (2,), (2,)))


# ---- histogramdd ----

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", [dict(bins=[2, 3]), dict(bins=4, density=True),
                                dict(bins=2, range=[0.0, 1.0, -1.0, 1.0]),
                                dict(bins=[3, 2], weight=True), dict(bins=[3, 2], weight=True, density=True)])
def test_histogramdd_matches_torch(device, kw):
    a = RNG.standard_normal((5, 7, 2))
    w = RNG.random((5, 7))
    kv, kt = dict(kw), dict(kw)
    if kw.get("weight"):
        kv["weight"], kt["weight"] = vk.tensor(w, device=device), torch.tensor(w)
    hv, ht = vk.histogramdd(vk.tensor(a, device=device), **kv), torch.histogramdd(torch.tensor(a), **kt)
    assert_close(hv.hist, ht.hist)
    assert len(hv.bin_edges) == len(ht.bin_edges)
    for ev, et in zip(hv.bin_edges, ht.bin_edges):
        assert_close(ev, et)


def test_histogramdd_edge_tensors_and_return_type():
    a = RNG.standard_normal((20, 3))
    edges = [np.array([-1.0, 0.0, 1.0]), np.array([-2.0, 2.0]), np.array([-0.5, 0.0, 0.5, 3.0])]
    hv = vk.histogramdd(vk.tensor(a), bins=[vk.tensor(e) for e in edges])
    ht = torch.histogramdd(torch.tensor(a), bins=[torch.tensor(e) for e in edges])
    assert_close(hv.hist, ht.hist)
    assert isinstance(hv, vk.return_types.histogramdd)
    assert isinstance(hv.bin_edges, tuple)


@pytest.mark.parametrize("args,kw", [((np.array([0.0, 1.0]), 2), {}), ((np.array([[0.0, 1.0]]), [2, 2, 2]), {}),
                                     ((np.array([[0.0, 1.0]]), 2), dict(range=[0.0, 1.0]))])
def test_histogramdd_bad_arguments_raise_as_torch(args, kw):
    a, bins = args
    _same_error(lambda: vk.histogramdd(vk.tensor(a), bins, **kw),
                lambda: torch.histogramdd(torch.tensor(a), bins, **kw))


# ---- nonzero_static, frobenius_norm, norm_except_dim ----

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size,fill", [(3, -1), (1, 7), (2, 0), (0, -1), (6, 9)])
def test_nonzero_static_pads_or_truncates_as_torch(device, size, fill):
    a = [[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]
    xv, xt = _pair(a, device)
    assert_close(vk.nonzero_static(xv, size=size, fill_value=fill),
                 torch.nonzero_static(xt, size=size, fill_value=fill))
    assert_close(xv.nonzero_static(size=size), xt.nonzero_static(size=size))


@pytest.mark.parametrize("kw", [dict(size=-1), dict(size=1, fill_value=2.5)])
def test_nonzero_static_bad_size_or_fill_value_is_refused(kw):
    _same_error(lambda: vk.nonzero_static(vk.ones(2), **kw), lambda: torch.nonzero_static(torch.ones(2), **kw),
                match="nonzero_static")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim,keepdim", [((0, 1), False), ([1], True), (0, False), ((), False)])
def test_frobenius_norm_values_and_gradients(device, dim, keepdim):
    a = RNG.standard_normal((3, 4))
    xv, xt = _pair(a, device, grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt = torch.frobenius_norm(xt, dim, keepdim)
    yv = vk.frobenius_norm(xv, dim, keepdim)
    assert_close(yv, yt)
    yv.sum().backward()
    yt.sum().backward()
    assert_close(xv.grad, xt.grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,pow,dim", [((2, 3), 2, 0), ((2, 3), 2, 1), ((2, 3), 2, -1), ((2, 3, 4), 3, 1),
                                           ((2, 3, 4), 1, -2), ((5,), 2, 0)])
def test_norm_except_dim_values_and_gradients(device, shape, pow, dim):
    a = RNG.standard_normal(shape)
    xv, xt = _pair(a, device, grad=True)
    yv, yt = vk.norm_except_dim(xv, pow, dim), torch.norm_except_dim(xt, pow, dim)
    assert_close(yv, yt)
    yv.sum().backward()
    yt.sum().backward()
    assert_close(xv.grad, xt.grad)


# ---- switches: default tensor type, anomaly mode ----

def test_set_default_tensor_type_sets_the_default_dtype():
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            vk.set_default_tensor_type("torch.DoubleTensor")
        assert vk.get_default_dtype() == vk.float64 and vk.tensor([1.0]).dtype == vk.float64
        with pytest.warns(UserWarning):
            vk.set_default_tensor_type("torch.FloatTensor")
        assert vk.get_default_dtype() == vk.float32
    finally:
        vk.set_default_dtype(vk.float32)


@pytest.mark.parametrize("bad", ["torch.IntTensor", "torch.cuda.FloatTensor", "torch.NoSuchTensor"])
def test_set_default_tensor_type_refuses_non_float_types(bad):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if bad != "torch.NoSuchTensor":  # torch imports the module part of an unknown name
            with pytest.raises(TypeError):
                torch.set_default_tensor_type(bad)
        with pytest.raises(TypeError, match="type"):
            vk.set_default_tensor_type(bad)
        with pytest.raises(TypeError, match="only floating-point types"):
            vk.set_default_tensor_type(vk.float64)
    assert vk.get_default_dtype() == vk.float32


def test_set_anomaly_enabled_and_check_nan_flag():
    assert vk.is_anomaly_check_nan_enabled() is torch.is_anomaly_check_nan_enabled() is True
    try:
        vk.set_anomaly_enabled(True)
        assert vk.is_anomaly_enabled() and vk.autograd.is_anomaly_enabled()
        with pytest.warns(UserWarning, match="check_nan"):
            vk.set_anomaly_enabled(True, check_nan=False)
        assert vk.is_anomaly_check_nan_enabled() is False
    finally:
        vk.set_anomaly_enabled(False)
    assert not vk.is_anomaly_enabled() and vk.is_anomaly_check_nan_enabled() is True


# ---- torch-namespace forms: detach_, addmv_, put, resize_as_ ----

def test_detach_cuts_the_graph_in_place():
    x = vk.ones(3, requires_grad=True)
    y = x * 2
    assert vk.detach_(y) is y
    assert not y.requires_grad and y.grad_fn is None


def test_addmv_in_place_matches_torch():
    a, m, v = RNG.standard_normal(3), RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    xv, xt = _pair(a)
    out = vk.addmv_(xv, vk.tensor(m), vk.tensor(v), beta=0.5, alpha=2.0)
    torch.addmv_(xt, torch.tensor(m), torch.tensor(v), beta=0.5, alpha=2.0)
    assert out is xv
    assert_close(xv, xt)


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_is_functional_and_differentiable(accumulate):
    xv, xt = _pair(np.arange(6.0), grad=True)
    sv, st = _pair(np.array([9.0, 8.0, 7.0]), grad=True)
    iv, it = vk.tensor([0, 5, 0]), torch.tensor([0, 5, 0])
    yv = vk.put(xv, iv, sv, accumulate) if accumulate else vk.put(xv, iv[1:], sv[1:])
    yt = torch.put(xt, it, st, accumulate) if accumulate else torch.put(xt, it[1:], st[1:])
    assert_close(yv, yt)
    assert_close(xv, xt)  # the input is unchanged
    w = RNG.standard_normal(6)
    (yv * vk.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    assert_close(xv.grad, xt.grad)
    assert_close(sv.grad, st.grad)


def test_resize_as_namespace_form():
    xv, xt = _pair(np.arange(6.0))
    vk.resize_as_(xv, vk.empty(3, 2))
    torch.resize_as_(xt, torch.empty(3, 2))
    assert_close(xv, xt)


# ---- Tensor.new ----

@pytest.mark.parametrize("args", [(), (2, 3), ([1.5, 2.5],), ((4, 5),), ([[1, 2], [3, 4]],)])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_tensor_new_legacy_constructor_shapes_and_dtypes(args, dtype):
    xv, xt = vk.zeros(2, dtype=getattr(vk, dtype)), torch.zeros(2, dtype=getattr(torch, dtype))
    yv, yt = xv.new(*args), xt.new(*args)
    assert tuple(yv.shape) == tuple(yt.shape) and yv.dtype.name == str(yt.dtype).split(".")[-1]
    if args and isinstance(args[0], (list, tuple)):
        assert_close(yv, yt)


def test_tensor_new_of_a_size_and_of_a_tensor():
    x = vk.zeros(2)
    assert tuple(x.new(vk.Size([3, 1])).shape) == (3, 1)
    other = vk.arange(3.0, requires_grad=True)
    y = x.new(other)
    assert not y.requires_grad and y.data_ptr() == other.data_ptr()  # the same memory, as torch's
    with pytest.raises(TypeError, match="new\\(\\)"):
        x.new(vk.arange(3))


# ---- resize_, resize_as_, resize, resize_as ----

@pytest.mark.parametrize("sizes", [(3, 2), (6,), (2, 2), (1,), (0,), (2, 5)])
def test_resize_in_place_keeps_the_elements_in_memory_order(sizes):
    xv, xt = _pair(np.arange(6.0))
    xv, xt = xv.view(2, 3), xt.view(2, 3)
    assert xv.resize_(*sizes) is xv
    xt.resize_(*sizes)
    n = min(6, int(np.prod(sizes)))
    assert tuple(xv.shape) == tuple(xt.shape) and tuple(xv.stride()) == tuple(xt.stride())
    assert_close(xv.reshape(-1)[:n], xt.reshape(-1)[:n])  # grown elements are uninitialized in torch


@pytest.mark.parametrize("device", DEVICES)
def test_resize_grows_and_shrinks_on_every_device(device):
    x = vk.arange(6.0, device=device)
    x.resize_(2, 4)
    assert tuple(x.shape) == (2, 4) and x.device.type == device
    assert x.reshape(-1)[:6].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    x.resize_(3)
    assert x.tolist() == [0.0, 1.0, 2.0]
    assert x.new(2, 2).device.type == device and x.new([1.0]).device.type == device


@pytest.mark.parametrize("sizes", [(3, 2), (2, 3), (6,), (4,)])
def test_resize_of_a_transposed_tensor_reads_memory_order_as_torch(sizes):
    xv, xt = vk.arange(6.0).view(2, 3).t(), torch.arange(6.0).view(2, 3).t()
    xv.resize_(*sizes)
    xt.resize_(*sizes)  # the same shape keeps the strides; another reads the memory in order
    assert_close(xv, xt)
    assert tuple(xv.stride()) == tuple(xt.stride())


def test_resize_shrinking_shares_memory_with_views():
    base = vk.arange(6.0)
    alias = base.view(2, 3)
    alias.resize_([4])
    alias.fill_(-1.0)
    assert base.tolist() == [-1.0, -1.0, -1.0, -1.0, 4.0, 5.0]


def test_resize_refuses_a_tensor_that_requires_grad():
    _same_error(lambda: vk.ones(3, requires_grad=True).resize_(3), lambda: torch.ones(3, requires_grad=True).resize_(3),
                match="cannot resize variables that require grad")


def test_resize_growing_a_view_is_refused_clearly():
    with pytest.raises(RuntimeError, match="resize_: growing a view"):
        vk.arange(6.0)[2:].resize_(8)
    with pytest.raises(RuntimeError, match="resize_: vkml can resize"):
        vk.arange(6.0)[::2].resize_(2)


def test_resize_as_in_place_method():
    xv, xt = _pair(np.arange(6.0))
    xv.resize_as_(vk.empty(2, 3))
    xt.resize_as_(torch.empty(2, 3))
    assert_close(xv, xt)


def test_resize_out_of_place_is_a_differentiable_reshape():
    xv, xt = _pair(RNG.standard_normal((2, 3)), grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        yv = xv.resize(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt = xt.resize(3, 2)
        zt = xt.resize_as(torch.empty(6))
    assert_close(yv, yt)
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        zv = xv.resize_as(vk.empty(6))
    assert_close(zv, zt)
    w = RNG.standard_normal((3, 2))
    ((yv * vk.tensor(w)).sum() + zv.sum()).backward()
    ((yt * torch.tensor(w)).sum() + zt.sum()).backward()
    assert_close(xv.grad, xt.grad)


def test_resize_out_of_place_needs_the_same_number_of_elements():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_error(lambda: vk.ones(2, 3).resize(4), lambda: torch.ones(2, 3).resize(4),
                    match="requested resize to 4 \\(4 elements in total\\)")


# ---- apply_, map_, map2_ ----

def test_apply_map_map2_call_python_per_element_as_torch():
    xv, xt = _pair(np.arange(6.0).reshape(2, 3))
    assert xv.apply_(lambda v: v * v + 1) is xv
    xt.apply_(lambda v: v * v + 1)
    assert_close(xv, xt)
    row_v, row_t = _pair(np.array([1.0, 10.0, 100.0]))  # broadcast to self's shape
    xv.map_(row_v, lambda a, b: a - b)
    xt.map_(row_t, lambda a, b: a - b)
    assert_close(xv, xt)
    xv.map2_(row_v, vk.ones(2, 1, dtype=vk.float64), lambda a, b, c: a * b + c)
    xt.map2_(row_t, torch.ones(2, 1, dtype=torch.float64), lambda a, b, c: a * b + c)
    assert_close(xv, xt)


def test_map_needs_other_of_self_dtype():
    _same_error(lambda: vk.ones(2, dtype=vk.float64).map_(vk.ones(2), lambda a, b: a),
                lambda: torch.ones(2, dtype=torch.float64).map_(torch.ones(2), lambda a, b: a), match="map_")


def test_apply_on_an_integer_tensor_keeps_the_dtype():
    xv, xt = vk.arange(4), torch.arange(4)
    xv.apply_(lambda v: v * 3)
    xt.apply_(lambda v: v * 3)
    assert xv.dtype == vk.int64 and xv.tolist() == xt.tolist()


def test_apply_and_map_refuse_tensors_that_require_grad():
    _same_error(lambda: vk.ones(2, requires_grad=True).apply_(lambda a: a),
                lambda: torch.ones(2, requires_grad=True).apply_(lambda a: a), match="apply_\\(\\)")
    _same_error(lambda: vk.ones(2).map_(vk.ones(2, requires_grad=True), lambda a, b: a),
                lambda: torch.ones(2).map_(torch.ones(2, requires_grad=True), lambda a, b: a), match="map_\\(\\)")


def test_apply_needs_a_callable():
    with pytest.raises(TypeError, match="apply_"):
        vk.ones(2).apply_(3)


@pytest.mark.skipif("vulkan" not in DEVICES, reason="no Vulkan device")
def test_apply_refuses_a_vulkan_tensor():
    with pytest.raises(TypeError, match="apply_ is only implemented on CPU tensors"):
        vk.ones(2, device="vulkan").apply_(lambda a: a)


# ---- small attributes ----

def test_output_nr_name_and_const_data_ptr():
    x = vk.arange(3.0, requires_grad=True)
    assert x.output_nr == torch.arange(3.0).output_nr == 0
    assert (x * 2).output_nr == 0
    assert x.name is None and torch.arange(3.0).name is None
    assert x.const_data_ptr() == x.data_ptr()


@pytest.mark.parametrize("make", [lambda m: m.randn(3, 4, 5).permute(2, 0, 1), lambda m: m.empty(3, 1, 4),
                                  lambda m: m.empty(2, 3).t(), lambda m: m.empty(()), lambda m: m.empty(4, 6)[:, ::2]])
def test_dim_order_matches_torch(make):
    assert make(vk).dim_order() == make(torch).dim_order()


def test_dim_order_ambiguity_check():
    _same_error(lambda: vk.empty(2, 1, 1).expand(2, 3, 3).dim_order(ambiguity_check=True),
                lambda: torch.empty(2, 1, 1).expand(2, 3, 3).dim_order(ambiguity_check=True))


class _MyTensor(vk.Tensor):
    pass


def test_as_subclass_shares_memory():
    x = vk.arange(4.0)
    y = x.as_subclass(_MyTensor)
    assert type(y) is _MyTensor and y.data_ptr() == x.data_ptr()
    y.fill_(2.0)
    assert x.tolist() == [2.0] * 4


def test_as_subclass_refuses_a_non_tensor_class_and_a_tensor_in_a_graph():
    _same_error(lambda: vk.arange(3.0).as_subclass(int), lambda: torch.arange(3.0).as_subclass(int),
                match="does not inherit from Tensor")
    with pytest.raises(RuntimeError, match="as_subclass"):
        vk.arange(3.0, requires_grad=True).as_subclass(_MyTensor)
