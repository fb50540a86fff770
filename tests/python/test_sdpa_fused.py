"""scaled_dot_product_attention as one op (#18): F.scaled_dot_product_attention without a mask or
dropout runs the fused `attention` op, whose backward recomputes the weights instead of keeping the
(..., Tq, Tk) scores. Against torch in float64 (forward and every gradient, with and without the
causal mask, equal and unequal lengths, the transformer's permuted heads, lengths past one chunk of
the backward's scratch), float32 against the float64 result, the same bits at any thread count,
second derivatives, the paths that keep the unfused ops, autocast, the Vulkan device, bad input."""

import numpy as np
import pytest
import torch

import vkml as vk
from vkml.nn import functional as F

from conftest import devices, to_np

TF = torch.nn.functional


def _inputs(rng, b, h, tq, tk, e, ev, dtype=np.float64):
    shapes = [(b, h, tq, e), (b, h, tk, e), (b, h, tk, ev), (b, h, tq, ev)]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _run(lib, arrays, causal, scale=None, device=None):
    """Output and the gradients of q, k, v for the gradient g, through lib's sdpa."""
    q, k, v, g = arrays
    if lib is vk:
        ts = [vk.tensor(a, device=device, requires_grad=True) for a in (q, k, v)]
        y = F.scaled_dot_product_attention(*ts, is_causal=causal, scale=scale)
        y.backward(vk.tensor(g, device=device))
    else:
        ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        y = TF.scaled_dot_product_attention(*ts, is_causal=causal, scale=scale)
        y.backward(torch.tensor(g))
    return [to_np(y)] + [to_np(t.grad) for t in ts]


# (B, H, Tq, Tk, E, Ev): one row; the transformer step's heads; lengths that are not whole tiles;
# more and fewer queries than keys; past one chunk of the backward's scratch (2^16 weights).
SHAPES = [(1, 1, 1, 1, 1, 1), (2, 3, 5, 5, 4, 3), (2, 2, 64, 64, 32, 32), (1, 2, 17, 17, 8, 5),
          (1, 2, 70, 130, 8, 5), (1, 1, 130, 70, 8, 5), (1, 1, 300, 300, 4, 3), (1, 1, 300, 400, 5, 8),
          (1, 1, 400, 300, 5, 8)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fused_sdpa_matches_torch_float64(shape, causal):
    arrays = _inputs(np.random.default_rng(sum(shape)), *shape)
    for what, a, b in zip(["out", "dq", "dk", "dv"], _run(vk, arrays, causal), _run(torch, arrays, causal)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_sdpa_float32_against_float64(causal):
    arrays = _inputs(np.random.default_rng(3), 2, 4, 64, 64, 32, 32)
    want = _run(torch, arrays, causal)
    got = _run(vk, [a.astype(np.float32) for a in arrays], causal)
    for what, a, b in zip(["out", "dq", "dk", "dv"], got, want):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=what)


def test_fused_sdpa_takes_the_scale_and_permuted_heads():
    """q, k, v as a GPT splits them, (B, T, 3, H, E) permuted: strided views, no copy needed."""
    rng = np.random.default_rng(5)
    qkv, g = rng.standard_normal((3, 20, 3 * 2 * 8)), rng.standard_normal((3, 2, 20, 8))
    outs = []
    for lib in (vk, torch):
        x = lib.tensor(qkv, requires_grad=True)
        q, k, v = x.reshape(3, 20, 3, 2, 8).permute(2, 0, 3, 1, 4)
        f = F if lib is vk else TF
        y = f.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
        y.backward(lib.tensor(g))
        outs.append((to_np(y), to_np(x.grad)))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("b,h,t,e,causal", [(3, 4, 45, 16, True), (1, 2, 300, 64, True),
                                             (1, 1, 300, 64, False)])
def test_fused_sdpa_same_bits_at_any_thread_count(b, h, t, e, causal):
    """Many entries go to the pool entry by entry; fewer entries than threads (the last two at 2
    and 3 threads) split each entry's forward into smaller items and its backward by tiles, and
    T = 300 takes two chunks of the backward's scratch: the same bits all the same."""
    arrays = _inputs(np.random.default_rng(7), b, h, t, t, e, e // 2, np.float32)
    before = vk.get_num_threads()
    try:
        runs = []
        for n in (1, 2, 3):
            vk.set_num_threads(n)
            # NaN in the blocks the run's outputs will reuse: a value a run leaves unwritten
            # would otherwise read as the last run's
            for size in (b * h * t * (e + e + e // 2), b * h * t * (e // 2)):
                vk.full((size,), float("nan"))  # freed at once, its block cached
            runs.append(_run(vk, arrays, causal))
    finally:
        vk.set_num_threads(before)
    for other in runs[1:]:
        for one, many in zip(runs[0], other):
            assert np.array_equal(one, many)


def test_fused_sdpa_records_one_node_and_the_others_keep_the_unfused_ops():
    q = vk.randn(2, 3, 6, 4, requires_grad=True)
    k1 = vk.randn(1, 3, 6, 4)  # a batch of 1 against 2: broadcast, which the op does not take
    assert F.scaled_dot_product_attention(q, q, q, is_causal=True).grad_fn.name == "AttentionBackward"
    assert F.scaled_dot_product_attention(q, q, q).grad_fn.name == "AttentionBackward"
    mask = vk.ones(6, 6, dtype=vk.bool).tril()
    for y in (F.scaled_dot_product_attention(q, q, q, attn_mask=mask),
              F.scaled_dot_product_attention(q, k1, k1),
              F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)):
        assert y.grad_fn.name != "AttentionBackward"
    # the broadcast batch still matches torch
    tq, tk = torch.tensor(to_np(q)), torch.tensor(to_np(k1))
    np.testing.assert_allclose(to_np(F.scaled_dot_product_attention(q, k1, k1)),
                               TF.scaled_dot_product_attention(tq, tk, tk).numpy(), rtol=1e-5, atol=1e-6)


def test_fused_sdpa_second_derivatives_match_torch():
    rng = np.random.default_rng(11)
    q, k, v, g = _inputs(rng, 1, 2, 7, 9, 3, 2)
    w = [rng.standard_normal(a.shape) for a in (q, k, v)]
    res = []
    for lib in (vk, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in (q, k, v)]
        f = F if lib is vk else TF
        y = f.scaled_dot_product_attention(*ts, is_causal=True)
        grads = lib.autograd.grad(y, ts, lib.tensor(g), create_graph=True)
        s = sum((d * lib.tensor(x)).sum() for d, x in zip(grads, w))
        res.append([to_np(d) for d in lib.autograd.grad(s, ts)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_fused_sdpa_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(13)
    ts = [vk.tensor(a, requires_grad=True) for a in _inputs(rng, 1, 1, 8, 8, 2, 2)[:3]]
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    assert vk.autograd.gradcheck(fn, ts)
    assert vk.autograd.gradgradcheck(fn, ts)


@pytest.mark.parametrize("tq,tk", [(0, 4), (4, 0), (0, 0)])
def test_fused_sdpa_empty_lengths_as_torch(tq, tk):
    """No keys: torch's math gives zeros (an empty softmax times an empty value); no queries:
    an empty output, and zero gradients for the keys and values."""
    arrays = _inputs(np.random.default_rng(1), 2, 2, tq, tk, 3, 2)
    for a, b in zip(_run(vk, arrays, True), _run(torch, arrays, True)):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_fused_sdpa_under_autocast_as_torch():
    rng = np.random.default_rng(17)
    q, k, v, _ = _inputs(rng, 2, 2, 8, 8, 4, 4, np.float32)
    with vk.autocast("cpu", dtype=vk.bfloat16):
        y = F.scaled_dot_product_attention(*(vk.tensor(a) for a in (q, k, v)), is_causal=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), is_causal=True)
    assert y.dtype == vk.bfloat16 and t.dtype == torch.bfloat16
    np.testing.assert_allclose(to_np(y.float()), t.float().numpy(), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("device", [d for d in devices() if d != "cpu"])
@pytest.mark.parametrize("causal", [False, True])
def test_fused_sdpa_on_vulkan_matches_the_cpu(device, causal):
    arrays = _inputs(np.random.default_rng(19), 2, 2, 13, 11, 4, 3, np.float32)
    for what, a, b in zip(["out", "dq", "dk", "dv"], _run(vk, arrays, causal, device=device),
                          _run(vk, arrays, causal)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=what)


def test_attention_op_bad_input_is_a_typed_error():
    f = vk.randn(2, 3, 4)
    with pytest.raises(vk.ShapeError, match="attention.*same batch"):
        vk._C._attention(f, vk.randn(3, 3, 4), vk.randn(3, 3, 4), 1.0)
    with pytest.raises(vk.ShapeError, match="attention"):
        vk._C._attention(f, vk.randn(2, 5, 3), vk.randn(2, 5, 2), 1.0)  # E differs
    with pytest.raises(vk.ShapeError, match="attention"):
        vk._C._attention(f, vk.randn(2, 5, 4), vk.randn(2, 6, 2), 1.0)  # Tk differs
    with pytest.raises(vk.DTypeError, match="attention"):
        vk._C._attention(vk.ones(2, 3, 4, dtype=vk.int64), f, f, 1.0)
    with pytest.raises(vk.DTypeError, match="attention"):
        vk._C._attention(f, f.double(), f, 1.0)
    with pytest.raises(vk.ShapeError, match="attention_backward.*gradient"):
        vk._C._attention_backward(vk.randn(2, 3, 5), f, f, f, 1.0)
