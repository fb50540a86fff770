"""Issue #16's convolution, pooling and embedding breadth against torch: conv_transpose1d/2d,
conv3d, pooling's ceil_mode / count_include_pad=False / divisor_override / return_indices,
embedding's max_norm and from_pretrained, embedding_bag; their modules (torch's state_dict keys,
torch's weights loaded); forward and every gradient in float64 on the CPU and on the Vulkan device,
second order for the transposed convolutions, finite differences, and torch's error types."""

import os

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import nn
from vkml.nn import functional as F

from conftest import to_np

TF = torch.nn.functional
TOL = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-5)}


def _vulkan():
    if not vk.vulkan.is_available():
        if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
            pytest.fail("VKML_REQUIRE_VULKAN=1 but no Vulkan device is available")
        pytest.skip("no Vulkan device")
    return vk.device("vulkan")


DEVICES = ["cpu", "vulkan"]


def device_of(name):
    return _vulkan() if name == "vulkan" else None


def close(a, b, what="", dt="float64"):
    np.testing.assert_allclose(to_np(a), to_np(b), err_msg=what, **TOL[dt])


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def pair(arrays, device=None, dt="float64"):
    vdt, tdt = getattr(vk, dt), getattr(torch, dt)
    vs, ts = [], []
    for a in arrays:
        v = vk.tensor(a, dtype=vdt)
        vs.append((v.to(device) if device is not None else v).requires_grad_())
        ts.append(torch.tensor(a, dtype=tdt, requires_grad=True))
    return vs, ts


def check(vfn, tfn, arrays, device=None, dt="float64"):
    """vfn(*vkml) against tfn(*torch): the value and the gradient of every input."""
    vs, ts = pair(arrays, device, dt)
    yv, yt = vfn(*vs), tfn(*ts)
    assert tuple(yv.shape) == tuple(yt.shape), (yv.shape, yt.shape)
    close(yv, yt, "forward", dt)
    up = rnd(*yt.shape, seed=7)
    upv = vk.tensor(up, dtype=getattr(vk, dt))
    yv.backward(upv.to(device) if device is not None else upv)
    yt.backward(torch.tensor(up, dtype=getattr(torch, dt)))
    for i, (v, t) in enumerate(zip(vs, ts)):
        assert v.grad is not None, f"input {i} got no gradient"
        close(v.grad, t.grad, f"gradient of input {i}", dt)


# ======================= transposed convolutions =======================

# (name, n, input shape, weight shape, bias, kwargs)
CONVT = [
    ("plain", 2, (2, 3, 4, 5), (3, 2, 3, 3), True, {}),
    ("stride_pad_outpad", 2, (2, 4, 4, 5), (4, 3, 3, 2), True,
     dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("asym", 2, (1, 2, 3, 4), (2, 3, 2, 3), False, dict(stride=(3, 2), padding=(2, 1), output_padding=(2, 0))),
    ("dilation_outpad_ge_stride", 2, (2, 2, 4, 4), (2, 2, 3, 2), True,
     dict(padding=2, output_padding=(1, 0), dilation=(2, 1))),
    ("unbatched", 2, (3, 4, 4), (3, 2, 2, 2), True, dict(stride=2)),
    ("1d", 1, (2, 4, 6), (4, 2, 3), True, dict(stride=3, padding=1, output_padding=2, groups=2)),
    ("1d_dilation", 1, (2, 3, 5), (3, 2, 2), False, dict(dilation=3, padding=1)),
    ("1d_unbatched", 1, (3, 5), (3, 2, 4), True, dict(stride=2)),
    ("3d", 3, (2, 4, 3, 4, 3), (4, 3, 3, 2, 3), True, dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("3d_dilation", 3, (1, 2, 3, 3, 2), (2, 2, 2, 3, 2), False,
     dict(stride=(1, 2, 3), padding=(2, 0, 1), dilation=(2, 1, 1), output_padding=(1, 1, 2))),
    ("3d_unbatched", 3, (2, 2, 3, 2), (2, 1, 2, 2, 2), True, {}),
]


def _convt(lib, n):
    return getattr(TF if lib is torch else F, f"conv_transpose{n}d")


def _convt_args(shape_x, shape_w, bias, kwargs):
    groups = kwargs.get("groups", 1)
    arrays = [rnd(*shape_x, seed=1), rnd(*shape_w, seed=2)]
    if bias:
        arrays.append(rnd(shape_w[1] * groups, seed=3))
    return arrays


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,n,sx,sw,bias,kw", CONVT, ids=[c[0] for c in CONVT])
def test_conv_transpose_vs_torch(name, n, sx, sw, bias, kw, device):
    dev = device_of(device)
    check(lambda *a: _convt(vk, n)(*a, **kw), lambda *a: _convt(torch, n)(*a, **kw),
          _convt_args(sx, sw, bias, kw), dev)


@pytest.mark.parametrize("name", ["stride_pad_outpad", "dilation_outpad_ge_stride", "1d", "3d"])
def test_conv_transpose_second_order_vs_torch(name):
    _, n, sx, sw, bias, kw = next(c for c in CONVT if c[0] == name)
    arrays = _convt_args(sx, sw, bias, kw)
    vs, ts = pair(arrays)
    yv, yt = _convt(vk, n)(*vs, **kw), _convt(torch, n)(*ts, **kw)
    up = rnd(*yt.shape, seed=5)
    gv = vk.autograd.grad((yv * vk.tensor(up)).sum(), vs, create_graph=True)
    gt = torch.autograd.grad((yt * torch.tensor(up)).sum(), ts, create_graph=True)
    # a scalar of the first-order gradients with every input in it (squares: x and w meet)
    sv = sum(((g * g).sum() for g in gv), vk.tensor(0.0, dtype=vk.float64))
    st = sum((g * g).sum() for g in gt)
    hv = vk.autograd.grad(sv, vs, allow_unused=True)
    ht = torch.autograd.grad(st, ts, allow_unused=True)
    for i, (a, b) in enumerate(zip(hv, ht)):
        if b is None:
            assert a is None or not np.any(to_np(a)), f"second derivative {i}"
        else:
            close(a, b, f"second derivative of input {i}")


def test_conv_transpose_gradcheck_finite_differences():
    x, w, b = (vk.tensor(a, dtype=vk.float64, requires_grad=True) for a in
               _convt_args((1, 2, 3, 3), (2, 2, 3, 2), True, {}))
    assert vk.autograd.gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                                 (x, w, b))
    assert vk.autograd.gradcheck(lambda x, w: F.conv3d(x, w, stride=(2, 1, 1), padding=1),
                                 (vk.tensor(rnd(1, 2, 3, 3, 3), dtype=vk.float64, requires_grad=True),
                                  vk.tensor(rnd(2, 2, 2, 2, 2, seed=1), dtype=vk.float64, requires_grad=True)))


def test_top_level_names_are_torchs():
    x, w = rnd(1, 2, 3, 3), rnd(2, 2, 2, 2, seed=1)
    close(vk.conv_transpose2d(vk.tensor(x), vk.tensor(w), stride=2),
          torch.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2))
    close(vk.conv_transpose1d(vk.tensor(x[:, :, 0]), vk.tensor(w[:, :, 0])),
          torch.conv_transpose1d(torch.tensor(x[:, :, 0]), torch.tensor(w[:, :, 0])))
    close(vk.conv3d(vk.tensor(x[:, :, None]), vk.tensor(w[:, :, None])),
          torch.conv3d(torch.tensor(x[:, :, None]), torch.tensor(w[:, :, None])))
    close(vk.conv_transpose3d(vk.tensor(x[:, :, None]), vk.tensor(w[:, :, None]), stride=2),
          torch.conv_transpose3d(torch.tensor(x[:, :, None]), torch.tensor(w[:, :, None]), stride=2))
    close(vk.max_pool1d(vk.tensor(x[0]), 2, ceil_mode=True), torch.max_pool1d(torch.tensor(x[0]), 2, ceil_mode=True))
    close(vk.avg_pool1d(vk.tensor(x[0]), 2, ceil_mode=True), torch.avg_pool1d(torch.tensor(x[0]), 2, ceil_mode=True))
    close(vk.max_pool3d(vk.tensor(x), 2, ceil_mode=True), torch.max_pool3d(torch.tensor(x), 2, ceil_mode=True))
    for v, t in zip(vk.max_pool1d_with_indices(vk.tensor(x[0]), 2),
                    torch.max_pool1d_with_indices(torch.tensor(x[0]), 2)):
        close(v, t)
    for v, t in zip(F.max_pool2d_with_indices(vk.tensor(x), 2), TF.max_pool2d_with_indices(torch.tensor(x), 2)):
        close(v, t)
    w2, w2t = vk.tensor(w[0, 0] * 3), torch.tensor(w[0, 0] * 3)
    vk.embedding_renorm_(w2, vk.tensor([1]), 1.0, 2.0)
    torch.embedding_renorm_(w2t, torch.tensor([1]), 1.0, 2.0)
    close(w2, w2t)


# ======================= 3-D convolution =======================

CONV3D = [
    ("plain", (2, 2, 4, 5, 4), (3, 2, 2, 3, 2), True, {}),
    ("stride_pad_dil_groups", (2, 4, 5, 6, 5), (6, 2, 3, 2, 2), True,
     dict(stride=(2, 1, 2), padding=(1, 1, 0), dilation=(1, 2, 1), groups=2)),
    ("same", (1, 2, 4, 5, 4), (2, 2, 2, 3, 2), False, dict(padding="same", dilation=(2, 1, 1))),
    ("valid", (1, 2, 4, 4, 4), (2, 2, 3, 3, 3), True, dict(padding="valid")),
    ("unbatched", (2, 3, 4, 4), (2, 2, 2, 2, 2), False, dict(stride=2, padding=1)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,sx,sw,bias,kw", CONV3D, ids=[c[0] for c in CONV3D])
def test_conv3d_vs_torch(name, sx, sw, bias, kw, device):
    arrays = [rnd(*sx, seed=1), rnd(*sw, seed=2)] + ([rnd(sw[0], seed=3)] if bias else [])
    check(lambda *a: F.conv3d(*a, **kw), lambda *a: TF.conv3d(*a, **kw), arrays, device_of(device))


# ======================= modules =======================

MODULES = [
    ("ConvTranspose2d", lambda m: m.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
     (2, 4, 3, 4)),
    ("ConvTranspose2d_nobias", lambda m: m.ConvTranspose2d(2, 3, (2, 3), bias=False, dilation=2), (1, 2, 3, 3)),
    ("ConvTranspose1d", lambda m: m.ConvTranspose1d(3, 2, 4, stride=2, padding=1), (2, 3, 5)),
    ("Conv3d", lambda m: m.Conv3d(2, 4, 3, stride=(1, 2, 1), padding=1, groups=2), (2, 2, 4, 5, 4)),
    ("Conv3d_reflect", lambda m: m.Conv3d(2, 3, 2, padding=1, padding_mode="reflect"), (1, 2, 3, 4, 3)),
    ("BatchNorm3d", lambda m: m.BatchNorm3d(3), (2, 3, 2, 3, 2)),
    ("ConvTranspose3d", lambda m: m.ConvTranspose3d(2, 4, (2, 3, 2), stride=(2, 1, 2), groups=2), (1, 2, 2, 3, 3)),
    ("MaxPool3d", lambda m: m.MaxPool3d(2, ceil_mode=True), (1, 2, 3, 5, 4)),
    ("AvgPool3d", lambda m: m.AvgPool3d(3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 2, 3, 5, 4)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,make,shape", MODULES, ids=[c[0] for c in MODULES])
def test_module_with_torchs_weights(name, make, shape, device):
    dev = device_of(device)
    torch.manual_seed(0)
    tm, vm = make(torch.nn).double(), make(nn).double()
    assert list(vm.state_dict()) == list(tm.state_dict())
    for k, v in vm.state_dict().items():  # torch's shapes, torch's init bounds
        assert tuple(v.shape) == tuple(tm.state_dict()[k].shape), k
    vm.load_state_dict({k: vk.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    if dev is not None:
        vm = vm.to(dev)
    x = rnd(*shape, seed=4)
    xv = vk.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    yv = vm(xv.to(dev) if dev is not None else xv)
    yt = tm(xt)
    close(yv, yt, "forward")
    up = rnd(*yt.shape, seed=5)
    upv = vk.tensor(up)
    yv.backward(upv.to(dev) if dev is not None else upv)
    yt.backward(torch.tensor(up))
    close(xv.grad, xt.grad, "input gradient")
    tp = dict(tm.named_parameters())
    for k, p in vm.named_parameters():
        close(p.grad, tp[k].grad, f"gradient of {k}")


def test_conv_transpose_init_matches_torchs_bounds():
    vm = nn.ConvTranspose2d(4, 6, 3, groups=2)
    fan_in = 3 * 3 * 3  # weight (in, out / groups, k, k): torch's fan_in is dim 1 times the kernel
    bound = 1 / np.sqrt(fan_in)
    assert tuple(vm.weight.shape) == (4, 3, 3, 3) and tuple(vm.bias.shape) == (6,)
    assert np.abs(to_np(vm.weight)).max() <= bound and np.abs(to_np(vm.bias)).max() <= bound
    assert np.abs(to_np(vm.weight)).max() > bound / 2  # not all zeros: kaiming_uniform ran


def test_conv_transpose_output_size():
    torch.manual_seed(0)
    tm = torch.nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1).double()
    vm = nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1).double()
    vm.load_state_dict({k: vk.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = rnd(1, 2, 3, 4)
    for size in ([8, 11], [1, 3, 9, 12], (7, 10)):
        yt = tm(torch.tensor(x), output_size=size)
        yv = vm(vk.tensor(x), output_size=size)
        close(yv, yt, f"output_size={size}")
    with pytest.raises(ValueError, match="valid sizes"):
        vm(vk.tensor(x), output_size=[10, 10])
    with pytest.raises(ValueError):
        tm(torch.tensor(x), output_size=[10, 10])


# ======================= pooling =======================

POOLS = [
    ("max_ceil", "max_pool2d", dict(kernel_size=3, stride=2, ceil_mode=True)),
    ("max_ceil_pad", "max_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max_ceil_dil", "max_pool2d", dict(kernel_size=(2, 3), stride=2, padding=1, dilation=2, ceil_mode=True)),
    # the last window would start in the right padding: torch drops it
    ("max_ceil_drop", "max_pool2d", dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),
    ("avg_ceil", "avg_pool2d", dict(kernel_size=3, stride=2, ceil_mode=True)),
    ("avg_ceil_pad", "avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_ceil_nopad", "avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                          count_include_pad=False)),
    ("avg_nopad", "avg_pool2d", dict(kernel_size=(3, 2), stride=(2, 1), padding=1, count_include_pad=False)),
    ("avg_divisor", "avg_pool2d", dict(kernel_size=3, stride=2, padding=1, divisor_override=5)),
    ("avg_divisor_ceil", "avg_pool2d", dict(kernel_size=2, stride=2, ceil_mode=True, divisor_override=3)),
    ("avg_ceil_drop", "avg_pool2d", dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),
    ("max1d_ceil", "max_pool1d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg1d_ceil", "avg_pool1d", dict(kernel_size=3, stride=2, ceil_mode=True)),
    ("avg1d_nopad", "avg_pool1d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                       count_include_pad=False)),
    ("max3d", "max_pool3d", dict(kernel_size=2)),
    ("max3d_ceil_dil", "max_pool3d", dict(kernel_size=(2, 3, 2), stride=(2, 2, 1), padding=(1, 1, 0),
                                          dilation=(2, 1, 1), ceil_mode=True)),
    ("avg3d_ceil", "avg_pool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg3d_nopad", "avg_pool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg3d_divisor", "avg_pool3d", dict(kernel_size=(2, 3, 2), stride=(2, 2, 1), padding=(1, 1, 0),
                                         ceil_mode=True, divisor_override=7)),
]

POOL_SHAPES = {"1d": (2, 3, 8), "2d": (2, 3, 7, 8), "3d": (2, 2, 5, 7, 6)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,kw", POOLS, ids=[c[0] for c in POOLS])
def test_pool_modes_vs_torch(name, fn, kw, device):
    shape = POOL_SHAPES[fn[-2:]]
    check(lambda x: getattr(F, fn)(x, **kw), lambda x: getattr(TF, fn)(x, **kw), [rnd(*shape)], device_of(device))


@pytest.mark.parametrize("name,fn,kw", [p for p in POOLS if p[1].startswith("max")], ids=lambda v: str(v))
def test_max_pool_ceil_mode_indices_vs_torch(name, fn, kw):
    shape = POOL_SHAPES[fn[-2:]]
    x = rnd(*shape)
    vv, vi = getattr(F, fn)(vk.tensor(x), return_indices=True, **kw)
    tv, ti = getattr(TF, fn)(torch.tensor(x), return_indices=True, **kw)
    close(vv, tv)
    np.testing.assert_array_equal(to_np(vi), to_np(ti))


def test_pool_modules_pass_the_modes():
    x = rnd(2, 3, 7, 8)
    for vm, tm in [(nn.MaxPool2d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
                   (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False, divisor_override=None),
                    torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)),
                   (nn.AvgPool2d(2, divisor_override=3), torch.nn.AvgPool2d(2, divisor_override=3))]:
        close(vm(vk.tensor(x)), tm(torch.tensor(x)), repr(vm))
    for vm, tm in [(nn.MaxPool1d(3, 2, ceil_mode=True), torch.nn.MaxPool1d(3, 2, ceil_mode=True)),
                   (nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False),
                    torch.nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False))]:
        close(vm(vk.tensor(x[0])), tm(torch.tensor(x[0])), repr(vm))
    vv, vi = nn.MaxPool2d(2, ceil_mode=True, return_indices=True)(vk.tensor(x))
    tv, ti = torch.nn.MaxPool2d(2, ceil_mode=True, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(to_np(vi), to_np(ti))
    vv, vi = nn.MaxPool3d(2, 1, return_indices=True)(vk.tensor(x))  # unbatched (C, D, H, W)
    tv, ti = torch.nn.MaxPool3d(2, 1, return_indices=True)(torch.tensor(x))
    close(vv, tv)
    np.testing.assert_array_equal(to_np(vi), to_np(ti))


def test_max_pool3d_indices_take_the_first_of_tied_maxima_as_torch():
    x = np.round(rnd(1, 2, 4, 5, 4) * 0.6)  # many ties
    for kw in (dict(kernel_size=2, stride=1), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)):
        vv, vi = F.max_pool3d(vk.tensor(x), return_indices=True, **kw)
        tv, ti = TF.max_pool3d(torch.tensor(x), return_indices=True, **kw)
        close(vv, tv)
        np.testing.assert_array_equal(to_np(vi), to_np(ti))


def test_pool_second_order_vs_torch():
    x = rnd(1, 2, 5, 7)
    for fn, kw in [(F.avg_pool2d, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
                   (F.max_pool2d, dict(kernel_size=2, stride=2, ceil_mode=True))]:
        tfn = getattr(TF, fn.__name__)
        (xv,), (xt,) = pair([x])
        gv, = vk.autograd.grad((fn(xv, **kw) ** 2).sum(), xv, create_graph=True)
        gt, = torch.autograd.grad((tfn(xt, **kw) ** 2).sum(), xt, create_graph=True)
        close(gv, gt, fn.__name__)
        close(vk.autograd.grad((gv ** 2).sum(), xv)[0], torch.autograd.grad((gt ** 2).sum(), xt)[0], fn.__name__)


@pytest.mark.parametrize("device", DEVICES)
def test_adaptive_max_pool_indices_vs_torch(device):
    dev = device_of(device)
    x = np.round(rnd(2, 3, 7, 9) * 0.7)  # ties: the first maximum in (h, w) order, as torch's
    xv = vk.tensor(x).to(dev) if dev is not None else vk.tensor(x)
    for size in [(3, 4), (7, 9), (1, 1), (5, 2), (4, None)]:
        vv, vi = F.adaptive_max_pool2d(xv, size, return_indices=True)
        tv, ti = TF.adaptive_max_pool2d(torch.tensor(x), size, return_indices=True)
        close(vv, tv)
        np.testing.assert_array_equal(to_np(vi), to_np(ti), err_msg=str(size))
    for size in (3, 9, 4, 1):
        vv, vi = F.adaptive_max_pool1d(xv[0], size, return_indices=True)
        tv, ti = TF.adaptive_max_pool1d(torch.tensor(x[0]), size, return_indices=True)
        np.testing.assert_array_equal(to_np(vi), to_np(ti), err_msg=str(size))
    vv, vi = nn.AdaptiveMaxPool2d((2, 3), return_indices=True)(xv[0])
    tv, ti = torch.nn.AdaptiveMaxPool2d((2, 3), return_indices=True)(torch.tensor(x[0]))
    np.testing.assert_array_equal(to_np(vi), to_np(ti))


# ======================= embeddings =======================

IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9])
OFFSETS = np.array([0, 4, 4, 6])  # an empty bag (4, 4) among them

BAGS = [(mode, pad, two_d) for mode in ("sum", "mean", "max") for pad in (None, 2, -1) for two_d in (False, True)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode,padding_idx,two_d", BAGS, ids=lambda v: str(v))
def test_embedding_bag_vs_torch(mode, padding_idx, two_d, device):
    dev = device_of(device)
    idx = IDX.reshape(2, 4) if two_d else IDX
    iv = vk.tensor(idx).to(dev) if dev is not None else vk.tensor(idx)
    ov = None if two_d else (vk.tensor(OFFSETS).to(dev) if dev is not None else vk.tensor(OFFSETS))
    ot = None if two_d else torch.tensor(OFFSETS)
    check(lambda w: F.embedding_bag(iv, w, ov, mode=mode, padding_idx=padding_idx),
          lambda w: TF.embedding_bag(torch.tensor(idx), w, ot, mode=mode, padding_idx=padding_idx),
          [rnd(10, 4)], dev)


@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_per_sample_weights_vs_torch(include_last_offset):
    check(lambda w, p: F.embedding_bag(vk.tensor(IDX), w, vk.tensor(OFFSETS), mode="sum", per_sample_weights=p,
                                       include_last_offset=include_last_offset),
          lambda w, p: TF.embedding_bag(torch.tensor(IDX), w, torch.tensor(OFFSETS), mode="sum",
                                        per_sample_weights=p, include_last_offset=include_last_offset),
          [rnd(10, 4), rnd(8, seed=1)])


def test_embedding_bag_module_and_from_pretrained():
    torch.manual_seed(0)
    tm = torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=0).double()
    vm = nn.EmbeddingBag(10, 3, mode="max", padding_idx=0).double()
    assert list(vm.state_dict()) == list(tm.state_dict()) == ["weight"]
    assert not np.any(to_np(vm.weight)[0])  # the padding row starts at zero
    vm.load_state_dict({"weight": vk.tensor(tm.weight.detach().numpy())})
    close(vm(vk.tensor(IDX), vk.tensor(OFFSETS)), tm(torch.tensor(IDX), torch.tensor(OFFSETS)))
    w = rnd(10, 3)
    vb = nn.EmbeddingBag.from_pretrained(vk.tensor(w), mode="sum", include_last_offset=True)
    tb = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="sum", include_last_offset=True)
    assert vb.weight.requires_grad == tb.weight.requires_grad is False
    close(vb(vk.tensor(IDX), vk.tensor(OFFSETS)), tb(torch.tensor(IDX), torch.tensor(OFFSETS)))
    assert nn.EmbeddingBag.from_pretrained(vk.tensor(w), freeze=False).weight.requires_grad


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
def test_embedding_max_norm_renorms_rows_in_place_like_torch(norm_type, device):
    dev = device_of(device)
    w = rnd(10, 4) * 2
    wv = vk.tensor(w).to(dev) if dev is not None else vk.tensor(w)
    wt = torch.tensor(w)
    iv = vk.tensor(IDX).to(dev) if dev is not None else vk.tensor(IDX)
    yv = F.embedding(iv, wv, max_norm=1.5, norm_type=norm_type)
    yt = TF.embedding(torch.tensor(IDX), wt, max_norm=1.5, norm_type=norm_type)
    close(yv, yt, "lookup")
    close(wv, wt, "the weight after the renorm")
    assert np.array_equal(to_np(wv)[[0, 6, 7, 8]], w[[0, 6, 7, 8]])  # rows not looked up stay bitwise
    # the module: the parameter itself is renormed, and gradients still flow to it
    tm = torch.nn.Embedding(10, 4, max_norm=1.0).double()
    vm = nn.Embedding(10, 4, max_norm=1.0).double()
    vm.load_state_dict({"weight": vk.tensor(tm.weight.detach().numpy())})
    vm(vk.tensor(IDX)).sum().backward()
    tm(torch.tensor(IDX)).sum().backward()
    close(vm.weight, tm.weight)
    close(vm.weight.grad, tm.weight.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_scale_grad_by_freq_vs_torch(device):
    dev = device_of(device)
    idx = np.array([[1, 2, 4, 2], [4, 3, 2, 9]])
    iv = vk.tensor(idx).to(dev) if dev is not None else vk.tensor(idx)
    for pad in (None, 3):
        check(lambda w: F.embedding(iv, w, padding_idx=pad, scale_grad_by_freq=True),
              lambda w: TF.embedding(torch.tensor(idx), w, padding_idx=pad, scale_grad_by_freq=True), [rnd(10, 4)], dev)
    tm = torch.nn.Embedding(10, 4, scale_grad_by_freq=True).double()
    vm = nn.Embedding(10, 4, scale_grad_by_freq=True).double()
    vm.load_state_dict({"weight": vk.tensor(tm.weight.detach().numpy())})
    (vm(vk.tensor(idx)) ** 2).sum().backward()
    (tm(torch.tensor(idx)) ** 2).sum().backward()
    close(vm.weight.grad, tm.weight.grad)


def test_not_implemented_options_say_so():
    w = vk.tensor(rnd(5, 2))
    with pytest.raises(NotImplementedError, match="sparse"):
        F.embedding(vk.tensor([1]), w, sparse=True)
    with pytest.raises(NotImplementedError, match="scale_grad_by_freq"):
        F.embedding_bag(vk.tensor([[1, 2]]), w, scale_grad_by_freq=True)


def test_embedding_bag_max_norm_like_torch():
    w = rnd(10, 4) * 2
    wv, wt = vk.tensor(w), torch.tensor(w)
    close(F.embedding_bag(vk.tensor(IDX), wv, vk.tensor(OFFSETS), max_norm=1.0),
          TF.embedding_bag(torch.tensor(IDX), wt, torch.tensor(OFFSETS), max_norm=1.0))
    close(wv, wt)


def test_embedding_from_pretrained():
    w = rnd(5, 3)
    ve = nn.Embedding.from_pretrained(vk.tensor(w), padding_idx=1)
    te = torch.nn.Embedding.from_pretrained(torch.tensor(w), padding_idx=1)
    assert ve.weight.requires_grad == te.weight.requires_grad is False
    assert ve.padding_idx == te.padding_idx == 1
    close(ve(vk.tensor([[0, 1], [4, 1]])), te(torch.tensor([[0, 1], [4, 1]])))
    assert nn.Embedding.from_pretrained(vk.tensor(w), freeze=False).weight.requires_grad
    with pytest.raises(AssertionError):
        nn.Embedding.from_pretrained(vk.tensor(w[0]))


# ======================= bad input: torch's error types =======================

def _t(lib, *shape):
    return lib.tensor(rnd(*shape)) if lib is torch else vk.tensor(rnd(*shape))


def _i(lib, values):
    return lib.tensor(values)


BAD = [
    ("convt_channels", lambda L, f: f.conv_transpose2d(_t(L, 1, 3, 4, 4), _t(L, 2, 2, 3, 3))),
    ("convt_ndim", lambda L, f: f.conv_transpose2d(_t(L, 4, 4), _t(L, 4, 2, 3, 3))),
    ("convt_outpad", lambda L, f: f.conv_transpose2d(_t(L, 1, 2, 4, 4), _t(L, 2, 2, 3, 3), output_padding=1)),
    ("convt_negpad", lambda L, f: f.conv_transpose1d(_t(L, 1, 2, 4), _t(L, 2, 2, 3), padding=-1)),
    ("convt_too_small", lambda L, f: f.conv_transpose2d(_t(L, 1, 2, 1, 1), _t(L, 2, 2, 1, 1), padding=1)),
    ("convt_stride0", lambda L, f: f.conv_transpose2d(_t(L, 1, 2, 4, 4), _t(L, 2, 2, 3, 3), stride=0)),
    ("convt_groups", lambda L, f: f.conv_transpose2d(_t(L, 1, 3, 4, 4), _t(L, 3, 2, 3, 3), groups=2)),
    ("convt_padding_str", lambda L, f: f.conv_transpose2d(_t(L, 1, 2, 4, 4), _t(L, 2, 2, 3, 3), padding="same")),
    ("conv3d_channels", lambda L, f: f.conv3d(_t(L, 1, 3, 4, 4, 4), _t(L, 2, 2, 3, 3, 3))),
    ("conv3d_ndim", lambda L, f: f.conv3d(_t(L, 4, 4), _t(L, 2, 2, 3, 3, 3))),
    ("conv3d_kernel_too_big", lambda L, f: f.conv3d(_t(L, 1, 2, 2, 4, 4), _t(L, 2, 2, 3, 3, 3))),
    ("conv3d_same_strided", lambda L, f: f.conv3d(_t(L, 1, 2, 4, 4, 4), _t(L, 2, 2, 3, 3, 3), stride=2,
                                                  padding="same")),
    ("convt3d_outpad_depth", lambda L, f: f.conv_transpose3d(_t(L, 1, 2, 3, 3, 3), _t(L, 2, 2, 2, 2, 2),
                                                             output_padding=(1, 0, 0))),
    ("convt3d_channels", lambda L, f: f.conv_transpose3d(_t(L, 1, 3, 3, 3, 3), _t(L, 2, 2, 2, 2, 2))),
    ("pool3d_ndim", lambda L, f: f.max_pool3d(_t(L, 4, 4), 2)),
    ("pool3d_too_small", lambda L, f: f.avg_pool3d(_t(L, 1, 1, 1, 4, 4), 2)),
    ("pool3d_pad_over_half", lambda L, f: f.max_pool3d(_t(L, 1, 1, 4, 4, 4), 2, padding=(2, 0, 0))),
    ("pool_pad_over_half", lambda L, f: f.max_pool2d(_t(L, 1, 1, 5, 5), 2, padding=2, ceil_mode=True)),
    ("avg_pad_over_half", lambda L, f: f.avg_pool2d(_t(L, 1, 1, 5, 5), 2, padding=2, count_include_pad=False)),
    ("avg_divisor_zero", lambda L, f: f.avg_pool2d(_t(L, 1, 1, 5, 5), 2, divisor_override=0)),
    ("bag_2d_offsets", lambda L, f: f.embedding_bag(_i(L, [[1, 2]]), _t(L, 5, 2), _i(L, [0]))),
    ("bag_1d_no_offsets", lambda L, f: f.embedding_bag(_i(L, [1, 2]), _t(L, 5, 2))),
    ("bag_3d", lambda L, f: f.embedding_bag(_i(L, [[[1]]]), _t(L, 5, 2))),
    ("bag_mode", lambda L, f: f.embedding_bag(_i(L, [[1]]), _t(L, 5, 2), mode="median")),
    ("bag_psw_mean", lambda L, f: f.embedding_bag(_i(L, [[1, 2]]), _t(L, 5, 2), mode="mean",
                                                  per_sample_weights=_t(L, 1, 2))),
    ("bag_psw_shape", lambda L, f: f.embedding_bag(_i(L, [[1, 2]]), _t(L, 5, 2), mode="sum",
                                                   per_sample_weights=_t(L, 2))),
    ("bag_first_offset", lambda L, f: f.embedding_bag(_i(L, [1, 2]), _t(L, 5, 2), _i(L, [1]))),
    ("bag_weight_1d", lambda L, f: f.embedding_bag(_i(L, [[1, 2]]), _t(L, 5))),
    ("bag_index_range", lambda L, f: f.embedding_bag(_i(L, [[1, 7]]), _t(L, 5, 2))),
    ("bag_padding_idx_range", lambda L, f: f.embedding_bag(_i(L, [[1, 2]]), _t(L, 5, 2), padding_idx=5)),
]


@pytest.mark.parametrize("name,call", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_like_torch(name, call):
    with pytest.raises(Exception) as want:
        call(torch, TF)
    with pytest.raises(want.type):
        call(vk, F)


def test_module_bad_arguments_like_torch():
    for make in (lambda m: m.ConvTranspose2d(2, 2, 3, padding_mode="reflect"),
                 lambda m: m.ConvTranspose1d(3, 2, 3, groups=2)):
        with pytest.raises(ValueError):
            make(torch.nn)
        with pytest.raises(ValueError):
            make(nn)
    with pytest.raises(ValueError, match="5D"):
        nn.BatchNorm3d(2)(vk.tensor(rnd(2, 2, 3, 3)))


# ======================= float32 on the Vulkan device =======================

F32 = [
    ("conv_transpose2d", lambda lib: lambda x, w, b: getattr(lib, "conv_transpose2d")(x, w, b, stride=2, padding=1,
                                                                                       output_padding=1, groups=2),
     [(2, 4, 4, 5), (4, 3, 3, 2), (6,)]),
    ("conv_transpose3d", lambda lib: lambda x, w: getattr(lib, "conv_transpose3d")(x, w, stride=(1, 2, 2)),
     [(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)]),
    ("conv3d", lambda lib: lambda x, w: getattr(lib, "conv3d")(x, w, padding=1, stride=2), [(1, 2, 4, 5, 4),
                                                                                          (3, 2, 3, 3, 3)]),
    ("avg_pool2d", lambda lib: lambda x: getattr(lib, "avg_pool2d")(x, 3, 2, 1, ceil_mode=True,
                                                                    count_include_pad=False), [(2, 3, 7, 8)]),
    ("max_pool3d", lambda lib: lambda x: getattr(lib, "max_pool3d")(x, 2, ceil_mode=True), [(1, 2, 3, 5, 4)]),
]


@pytest.mark.parametrize("name,make,shapes", F32, ids=[c[0] for c in F32])
def test_float32_on_vulkan(name, make, shapes):
    dev = _vulkan()
    check(make(F), make(TF), [rnd(*s, seed=i) for i, s in enumerate(shapes)], dev, "float32")


# ======================= torch checkpoints =======================

def _net(m):
    """Every layer type of this file with parameters or buffers, in one model."""
    class Net(m.Module):
        def __init__(self):
            super().__init__()
            self.bag = m.EmbeddingBag(10, 4, mode="sum")
            self.up = m.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
            self.up1 = m.ConvTranspose1d(3, 2, 2, stride=2)
            self.conv3 = m.Conv3d(2, 2, 2, padding=1)
            self.bn3 = m.BatchNorm3d(2)
            self.up3 = m.ConvTranspose3d(2, 1, 2, stride=(1, 2, 1))

        def forward(self, idx, offsets):
            x = self.bag(idx, offsets)[:, :, None, None]                   # (B, 4, 1, 1)
            x = self.up(x.expand(-1, -1, 2, 2))                             # (B, 3, 4, 4)
            x = self.up1(x.reshape(x.shape[0], 3, 16))                      # (B, 2, 32)
            x = self.bn3(self.conv3(x.reshape(x.shape[0], 2, 2, 4, 4)))     # (B, 2, 3, 5, 5)
            return self.up3(x)

    return Net()


def test_torch_safetensors_checkpoint_loads(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    torch.manual_seed(0)
    tm = _net(torch.nn).double()
    tm.train()
    tm(torch.tensor(IDX), torch.tensor(OFFSETS))  # running stats away from their initial values
    tm.eval()
    path = tmp_path / "net.safetensors"
    st.save_file({k: v.contiguous() for k, v in tm.state_dict().items()}, str(path))
    vm = _net(nn).double()
    assert list(vm.state_dict()) == list(tm.state_dict())
    vm.load_state_dict(vk.load(path))
    vm.eval()
    close(vm(vk.tensor(IDX), vk.tensor(OFFSETS)), tm(torch.tensor(IDX), torch.tensor(OFFSETS)))
