"""interpolate's linear modes one pass per dim (#18, the op sweep of 2026-12-07): each dim's step,
x[lo] * w_lo + x[hi] * w_hi, is one op (interpolate_dim) where it was two index_selects, two
products and a sum (bilinear upsampling of 4 x 512 x 512 floats by two: 2.42 ms, torch 1.47). The
values keep their bits -- each product and the sum rounded, no FMA in any kernel copy -- checked
against that composite written in numpy; against torch (values, float64 gradients); on strided
inputs, at one and two threads, and on Vulkan where there is a device. mode="bicubic" (it raised
NotImplementedError) is two interpolate_dim steps a dim, four neighbours each, against torch."""

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, devices, to_np


@pytest.fixture(params=devices())
def device(request):
    return request.param


def composite(x, size, scales, align_corners):
    """The per-dim composite in numpy: torch's source coordinates in double, the weights rounded to
    x's dtype, then x[lo] * keep + x[hi] * frac with each operation rounded in that dtype."""
    y = x
    for i, out in enumerate(size):
        d, n = 2 + i, y.shape[2 + i]
        j = np.arange(out, dtype=np.float64)
        if align_corners:
            src = j * (n - 1) / (out - 1) if out > 1 else np.zeros(out)
        else:
            scale = n / out if scales is None else 1.0 / scales[i]
            src = np.maximum(0.0, (j + 0.5) * scale - 0.5)
        lo = np.minimum(np.floor(src).astype(np.int64), n - 1)
        hi = np.minimum(lo + 1, n - 1)
        frac = src - lo
        shape = [1] * y.ndim
        shape[d] = out
        keep_w, frac_w = ((1.0 - frac).astype(x.dtype).reshape(shape), frac.astype(x.dtype).reshape(shape))
        y = np.take(y, lo, axis=d) * keep_w + np.take(y, hi, axis=d) * frac_w
    return y


def graph_names(t):
    names, todo, kept = [], [t.grad_fn], []
    while todo:
        f = todo.pop()
        if f is None:
            continue
        kept.append(f)
        names.append(f.name)
        todo.extend(g for g, _ in f.next_functions)
    return names


CASES = [  # (input shape, mode, size, scale_factor, align_corners)
    ((2, 3, 9, 7), "bilinear", None, 2, False),
    ((2, 3, 9, 7), "bilinear", (5, 13), None, True),
    ((1, 2, 16, 16), "bilinear", None, 0.5, False),
    ((2, 3, 11), "linear", (23,), None, False),
    ((1, 2, 4, 5, 3), "trilinear", None, (2, 1.5, 3), False),
    ((1, 1, 1, 6), "bilinear", (3, 4), None, True),
]


@pytest.mark.parametrize("shape,mode,size,factor,corners", CASES)
def test_interpolate_linear_one_pass_per_dim_regression(shape, mode, size, factor, corners, device, threads):
    rng = np.random.default_rng(13)
    x = rng.standard_normal(shape).astype(np.float32)
    F, TF = vk.nn.functional, torch.nn.functional
    kw = dict(size=size, scale_factor=factor, mode=mode, align_corners=corners)
    v = vk.tensor(x).to(device).requires_grad_()
    y = F.interpolate(v, **kw)
    names = graph_names(y)
    assert "InterpolateDimBackward" in names and "IndexSelectBackward" not in names, names
    out = tuple(y.shape[2:])
    factors = None if factor is None else [float(f) for f in np.broadcast_to(factor, (len(shape) - 2,))]
    want = composite(x, out, factors, corners)
    if device == "cpu":  # the composite's bits
        np.testing.assert_array_equal(to_np(y), want)
    assert_close(y.cpu(), want, "float32")
    assert_close(y.cpu(), TF.interpolate(torch.tensor(x), **kw), "float32", what="torch")
    for view in (x.transpose(0, 1, 3, 2) if x.ndim == 4 else x[:, :, ::-1],):
        got = F.interpolate(vk.tensor(view).to(device), **kw).cpu()
        assert_close(got, TF.interpolate(torch.tensor(view.copy()), **kw), "float32", what="strided")
    # float64 gradients against torch's (scatters of g times the weights)
    x64 = rng.standard_normal(shape)
    up = rng.standard_normal(tuple(y.shape))
    v = vk.tensor(x64).to(device).requires_grad_()
    t = torch.tensor(x64, requires_grad=True)
    (F.interpolate(v, **kw) * vk.tensor(up).to(device)).sum().backward()
    (TF.interpolate(t, **kw) * torch.tensor(up)).sum().backward()
    assert_close(v.grad.cpu(), t.grad, what="d input")


BICUBIC = [  # (input shape, size, scale_factor, align_corners)
    ((2, 3, 9, 7), None, 2, False),
    ((2, 3, 9, 7), (5, 13), None, True),
    ((1, 2, 16, 12), None, 0.5, False),
    ((1, 1, 3, 2), (8, 1), None, False),
    ((1, 1, 1, 4), (3, 9), None, True),
]


@pytest.mark.parametrize("shape,size,factor,corners", BICUBIC)
def test_interpolate_bicubic_as_torch(shape, size, factor, corners, device):
    """mode="bicubic" (it raised NotImplementedError): torch's cubic convolution (A = -0.75) over
    four neighbours clamped at the edges, as two interpolate_dim steps a dim; values and float64
    gradients against torch, strided inputs, and torch's error for input that is not 4-D."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal(shape).astype(np.float32)
    F, TF = vk.nn.functional, torch.nn.functional
    kw = dict(size=size, scale_factor=factor, mode="bicubic", align_corners=corners)
    assert_close(F.interpolate(vk.tensor(x).to(device), **kw).cpu(), TF.interpolate(torch.tensor(x), **kw),
                 "float32", what="values")
    view = x[:, :, ::-1]
    assert_close(F.interpolate(vk.tensor(view).to(device), **kw).cpu(),
                 TF.interpolate(torch.tensor(view.copy()), **kw), "float32", what="strided")
    x64 = rng.standard_normal(shape)
    v = vk.tensor(x64).to(device).requires_grad_()
    t = torch.tensor(x64, requires_grad=True)
    yv, yt = F.interpolate(v, **kw), TF.interpolate(t, **kw)
    assert_close(yv.cpu(), yt, what="float64 values")
    up = rng.standard_normal(tuple(yt.shape))
    (yv * vk.tensor(up).to(device)).sum().backward()
    (yt * torch.tensor(up)).sum().backward()
    assert_close(v.grad.cpu(), t.grad, what="d input")
    with pytest.raises(NotImplementedError, match="4D"):
        F.interpolate(vk.tensor(x[0]).to(device), scale_factor=2, mode="bicubic")
