"""The low-level bindings of vk::nn::functional, vk::optim and vk::io (vkml._C._nn, _optim, _io)
that the Python nn/optim/io packages build on: each against PyTorch or the reference
safetensors implementation."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import vkml as vk
from conftest import assert_close, to_np

nn = vk._C._nn


def _pair(shapes, seed=0, lo=-1.0, hi=1.0):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(lo, hi, s) for s in shapes]
    return ([vk.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _check(vf, tf, shapes, consts=(), seed=0, lo=-1.0, hi=1.0):
    vs, ts = _pair(shapes, seed, lo, hi)
    vy = vf(*vs, *[vk.tensor(c) for c in consts])
    ty = tf(*ts, *[torch.tensor(c) for c in consts])
    assert_close(vy, ty, "float64", what="forward")
    g = np.random.default_rng(seed + 1).uniform(-1, 1, tuple(ty.shape))
    vg = vk.autograd.grad(vy, vs, vk.tensor(g), allow_unused=True)
    tg = torch.autograd.grad(ty, ts, torch.tensor(g), allow_unused=True)
    for k, (a, b) in enumerate(zip(vg, tg)):
        b = torch.zeros_like(ts[k]) if b is None else b
        assert_close(a, b, "float64", what=f"grad {k}")


def test_functional_against_torch():
    tgt = np.array([2, 0, 1, 2])
    _check(lambda x, w, b: nn.linear(x, w, b), TF.linear, [(4, 3), (5, 3), (5,)])
    _check(lambda x, t: nn.cross_entropy(x, t), lambda x, t: TF.cross_entropy(x, t), [(4, 3)], [tgt])
    _check(lambda x, t: nn.cross_entropy(x, t, label_smoothing=0.1, reduction="sum"),
           lambda x, t: TF.cross_entropy(x, t, label_smoothing=0.1, reduction="sum"), [(4, 3)], [tgt])
    _check(lambda x, t: nn.nll_loss(x.log_softmax(1), t), lambda x, t: TF.nll_loss(x.log_softmax(1), t),
           [(4, 3)], [tgt])
    _check(nn.mse_loss, TF.mse_loss, [(3, 2), (3, 2)])
    _check(nn.l1_loss, TF.l1_loss, [(3, 2), (3, 2)])
    _check(lambda x, w, b: nn.layer_norm(x, (3,), w, b), lambda x, w, b: TF.layer_norm(x, (3,), w, b),
           [(2, 4, 3), (3,), (3,)])
    _check(lambda x, t: nn.binary_cross_entropy_with_logits(x, t.sigmoid()),
           lambda x, t: TF.binary_cross_entropy_with_logits(x, t.sigmoid()), [(3, 2), (3, 2)])
    _check(lambda q, k, v: nn.scaled_dot_product_attention(q, k, v, is_causal=True),
           lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
           [(2, 4, 3), (2, 4, 3), (2, 4, 5)])
    _check(lambda x, w: nn.conv2d(x, w, None, 1, 1), lambda x, w: TF.conv2d(x, w, None, 1, 1),
           [(1, 2, 4, 4), (3, 2, 3, 3)])
    _check(lambda x: nn.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [(1, 1, 4, 4)])
    _check(lambda x: nn.silu(x), TF.silu, [(5,)])
    _check(lambda w: nn.embedding(vk.tensor([[0, 2], [2, 1]]), w),
           lambda w: TF.embedding(torch.tensor([[0, 2], [2, 1]]), w), [(3, 4)])
    np.testing.assert_array_equal(to_np(nn.one_hot(vk.tensor([0, 2]), 3)),
                                  TF.one_hot(torch.tensor([0, 2]), 3).numpy())


def test_batch_norm_updates_running_stats():
    x = np.random.default_rng(0).normal(size=(8, 3))
    rm, rv = vk.zeros(3, dtype=vk.float64), vk.ones(3, dtype=vk.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    y = nn.batch_norm(vk.tensor(x), rm, rv, training=True)
    ty = TF.batch_norm(torch.tensor(x), trm, trv, training=True)
    assert_close(y, ty)
    assert_close(rm, trm)
    assert_close(rv, trv)


def test_optimizer_steps_match_torch():
    rng = np.random.default_rng(0)
    p0 = rng.normal(size=(3, 2))
    grads = [rng.normal(size=(3, 2)) for _ in range(3)]
    # SGD with momentum and nesterov
    p = vk.tensor(p0)
    tp = torch.tensor(p0, requires_grad=True)
    topt = torch.optim.SGD([tp], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
    buf = None
    for g in grads:
        buf = vk._C._optim.sgd_step_(p, vk.tensor(g), buf, 0.1, 0.9, 0.0, True, 0.01)
        tp.grad = torch.tensor(g)
        topt.step()
    assert_close(p, tp)
    # AdamW with amsgrad
    p = vk.tensor(p0)
    m1, m2, mx = vk.zeros_like(p), vk.zeros_like(p), vk.zeros_like(p)
    tp = torch.tensor(p0, requires_grad=True)
    topt = torch.optim.AdamW([tp], lr=0.01, weight_decay=0.1, amsgrad=True)
    for step, g in enumerate(grads, 1):
        vk._C._optim.adam_step_(p, vk.tensor(g), m1, m2, step, 0.01, weight_decay=0.1, decoupled=True,
                                amsgrad=True, max_exp_avg_sq=mx)
        tp.grad = torch.tensor(g)
        topt.step()
    assert_close(p, tp)
    gs = [vk.tensor(g) for g in grads]
    tgs = [torch.tensor(g) for g in grads]
    total = vk._C._optim.clip_grad_norm_(gs, 1.0)
    params = [torch.zeros(3, 2, dtype=torch.float64, requires_grad=True) for _ in tgs]
    for q, g in zip(params, tgs):
        q.grad = g
    ttotal = torch.nn.utils.clip_grad_norm_(params, 1.0)
    assert_close(total, ttotal)
    for g, q in zip(gs, params):
        assert_close(g, q.grad)


def test_safetensors_round_trip_with_reference(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    tensors = [("w", vk.randn(3, 4)), ("b", vk.arange(5)), ("m", vk.tensor([True, False])),
               ("d", vk.tensor([1.5], dtype=vk.float64))]
    path = str(tmp_path / "a.safetensors")
    vk._C._io.save_safetensors(path, tensors, {"format": "vkml"})
    ref = st.load_file(path)
    for name, t in tensors:
        np.testing.assert_array_equal(ref[name], to_np(t))
    path2 = str(tmp_path / "b.safetensors")
    st.save_file({k: v for k, v in ref.items()}, path2, metadata={"k": "v"})
    loaded, meta = vk._C._io.load_safetensors(path2)
    assert meta == {"k": "v"}
    for name, t in loaded:
        np.testing.assert_array_equal(to_np(t), ref[name])
    data = open(path, "rb").read()
    parsed, meta = vk._C._io.parse_safetensors(data)
    assert [n for n, _ in parsed] == ["w", "b", "m", "d"] and meta == {"format": "vkml"}
    with pytest.raises(RuntimeError):
        vk._C._io.parse_safetensors(b"\x00\x01", "broken")
