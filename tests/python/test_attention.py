"""Issue #16's attention layers against torch: nn.MultiheadAttention, F.multi_head_attention_forward and
the Transformer modules, with torch's weights copied through state_dict (so the keys must be torch's), in
float64: outputs, attention weights, the gradients of the inputs and of every parameter, each kind of
mask (bool and float attn_mask, 2-D and 3-D, bool and float key_padding_mask, is_causal), on the CPU and
on the Vulkan device; finite differences; dropout's statistics; torch's errors for bad input."""

import os

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import nn
from vkml.nn import functional as F

from conftest import to_np

TN = torch.nn
TOL = dict(rtol=1e-9, atol=1e-10)
DEVICES = ["cpu", "vulkan"]


def close(a, b, what=""):
    a, b = (v if isinstance(v, np.ndarray) else to_np(v) for v in (a, b))
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    np.testing.assert_allclose(a, b, err_msg=what, equal_nan=True, **TOL)


def device_or_skip(name):
    if name == "cpu":
        return None
    if not vk.vulkan.is_available():
        if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
            pytest.fail("VKML_REQUIRE_VULKAN=1 but no Vulkan device is available")
        pytest.skip("no Vulkan device")
    return vk.device("vulkan")


def vk_tensor(a, dev, grad=False):
    v = vk.tensor(a)
    v = v.to(dev) if dev is not None else v
    return v.requires_grad_() if grad else v


def copy_torch_state(vm, tm, dev):
    """torch's state_dict into the vkml module (via numpy), as a ported checkpoint; the keys must match."""
    assert list(vm.state_dict()) == list(tm.state_dict()), "state_dict keys differ from torch's"
    keys = vm.load_state_dict({k: vk.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert not keys.missing_keys and not keys.unexpected_keys
    if dev is not None:
        vm.to(dev)


def compare(vm, tm, arrays, grads, call, seed=5):
    """Runs call(module, tensors, lib) on both, compares every output, then the gradients of the inputs
    marked in grads and of every parameter, from one random upstream per output."""
    dev = next(iter(vm.parameters())).device
    dev = None if str(dev) == "cpu" else dev
    vs = [vk_tensor(a, dev, g and a.dtype == np.float64) if a is not None else None for a, g in zip(arrays, grads)]
    ts = [torch.tensor(a, requires_grad=g and a.dtype == np.float64) if a is not None else None
          for a, g in zip(arrays, grads)]
    outs_v, outs_t = call(vm, vs, vk), call(tm, ts, torch)
    outs_v = outs_v if isinstance(outs_v, tuple) else (outs_v,)
    outs_t = outs_t if isinstance(outs_t, tuple) else (outs_t,)
    assert len(outs_v) == len(outs_t)
    rng = np.random.default_rng(seed)
    loss_v, loss_t = 0, 0
    for i, (ov, ot) in enumerate(zip(outs_v, outs_t)):
        if ot is None:
            assert ov is None, f"output {i}: torch gives None"
            continue
        close(ov, ot, f"output {i}")
        up = rng.uniform(-1, 1, size=tuple(ot.shape))
        loss_v = loss_v + (ov * vk_tensor(up, dev)).sum()
        loss_t = loss_t + (ot * torch.tensor(up)).sum()
    loss_v.backward()
    loss_t.backward()
    for i, (v, t) in enumerate(zip(vs, ts)):
        if t is not None and t.requires_grad:
            close(v.grad, t.grad, f"gradient of input {i}")
    for (name, pv), (_, pt) in zip(vm.named_parameters(), tm.named_parameters()):
        close(pv.grad, pt.grad, f"gradient of {name}")
    return outs_v, outs_t


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def bool_mask(*shape, seed=1, p=0.3):
    """True (masked) at random, never a whole last-dim row (a row with no key left is NaN in torch too)."""
    m = np.random.default_rng(seed).uniform(size=shape) < p
    m[..., 0] = False
    return m


def padding(n, s):
    """key_padding_mask (n, s): sequence i has s - i positions of padding at its end (at least one kept)."""
    m = np.zeros((n, s), dtype=bool)
    for i in range(n):
        m[i, max(1, s - i):] = True
    return m


def as_float(mask):
    return np.where(mask, -np.inf, 0.0)


# ======================= nn.MultiheadAttention =======================

E, H, L, S, N = 8, 2, 4, 5, 3

# name: (constructor kwargs, forward kwargs of numpy masks and flags, self-attention, batched)
MHA_CASES = {
    "weights_averaged": (dict(), dict(), False, True),
    "weights_per_head": (dict(), dict(average_attn_weights=False), False, True),
    "no_weights": (dict(), dict(need_weights=False), False, True),
    "self_attention": (dict(), dict(), True, True),
    "batch_first_self": (dict(batch_first=True), dict(need_weights=False), True, True),
    "batch_first_cross": (dict(batch_first=True), dict(), False, True),
    "kdim_vdim": (dict(kdim=3, vdim=6), dict(), False, True),
    "no_bias": (dict(bias=False), dict(), False, True),
    "bias_kv_zero_attn": (dict(add_bias_kv=True, add_zero_attn=True),
                          dict(attn_mask=bool_mask(L, S), key_padding_mask=padding(N, S)), False, True),
    "attn_mask_bool_2d": (dict(), dict(attn_mask=bool_mask(L, S)), False, True),
    "attn_mask_bool_2d_no_weights": (dict(), dict(attn_mask=bool_mask(L, S), need_weights=False), False, True),
    "attn_mask_float_2d": (dict(), dict(attn_mask=rnd(L, S, seed=3)), False, True),
    "attn_mask_bool_3d": (dict(), dict(attn_mask=bool_mask(N * H, L, S)), False, True),
    "attn_mask_float_3d_no_weights": (dict(), dict(attn_mask=rnd(N * H, L, S, seed=4), need_weights=False),
                                      False, True),
    "key_padding_bool": (dict(), dict(key_padding_mask=padding(N, S)), False, True),
    "key_padding_float": (dict(), dict(key_padding_mask=as_float(padding(N, S))), False, True),
    "key_padding_and_attn_mask": (dict(), dict(key_padding_mask=as_float(padding(N, S)),
                                               attn_mask=rnd(L, S, seed=6), need_weights=False), False, True),
    "causal_hint": (dict(), dict(attn_mask=as_float(np.triu(np.ones((L, L), dtype=bool), 1)), is_causal=True,
                                 need_weights=False), True, True),
    # torch takes is_causal as a hint that replaces the mask when no weights and no padding are asked for
    "causal_hint_overrides_mask": (dict(), dict(attn_mask=rnd(L, L, seed=5), is_causal=True, need_weights=False),
                                   True, True),
    "causal_with_weights": (dict(), dict(attn_mask=np.triu(np.ones((L, L), dtype=bool), 1), is_causal=True),
                            True, True),
    "unbatched": (dict(), dict(key_padding_mask=padding(1, S)[0]), False, False),
    "unbatched_3d_mask": (dict(), dict(attn_mask=bool_mask(H, L, S), average_attn_weights=False), False, False),
    "unbatched_kdim_no_weights": (dict(kdim=3, vdim=6), dict(need_weights=False), False, False),
}


def mha_arrays(ctor, self_attn, batched, seed=0):
    kdim, vdim = ctor.get("kdim", E), ctor.get("vdim", E)
    lead = ((N, L) if ctor.get("batch_first") else (L, N)) if batched else (L,)
    lead_s = ((N, S) if ctor.get("batch_first") else (S, N)) if batched else (S,)
    q = rnd(*lead, E, seed=seed)
    if self_attn:
        return [q]
    return [q, rnd(*lead_s, kdim, seed=seed + 1), rnd(*lead_s, vdim, seed=seed + 2)]


def mha_call(fwd):
    masks = {k: v for k, v in fwd.items() if isinstance(v, np.ndarray)}
    flags = {k: v for k, v in fwd.items() if k not in masks}

    def call(m, ts, lib):
        q, k, v = (ts[0], ts[0], ts[0]) if len(ts) - len(masks) == 1 else ts[:3]
        extra = dict(zip(masks, ts[len(ts) - len(masks):]))
        return m(q, k, v, **extra, **flags)
    return masks, call


def make_mha(lib, ctor):
    return lib.nn.MultiheadAttention(E, H, **ctor, dtype=lib.float64)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MHA_CASES))
def test_multihead_attention_matches_torch(name, device):
    dev = device_or_skip(device)
    ctor, fwd, self_attn, batched = MHA_CASES[name]
    torch.manual_seed(0)
    tm, vm = make_mha(torch, ctor), make_mha(vk, ctor)
    if ctor.get("bias", True):  # torch starts the biases at zero: make them count
        with torch.no_grad():
            for n, p in tm.named_parameters():
                if "bias" in n:
                    p.copy_(torch.randn(p.shape, dtype=p.dtype))
    copy_torch_state(vm, tm, dev)
    masks, call = mha_call(fwd)
    arrays = mha_arrays(ctor, self_attn, batched) + list(masks.values())
    outs_v, outs_t = compare(vm, tm, arrays, [True] * (len(arrays) - len(masks)) + [False] * len(masks), call)
    if fwd.get("need_weights", True):
        assert outs_v[1] is not None
    if dev is not None:
        assert outs_v[0].device == dev


def test_multihead_attention_state_dict_keys_and_shapes():
    for ctor in (dict(), dict(kdim=3, vdim=6), dict(add_bias_kv=True), dict(bias=False)):
        tm, vm = make_mha(torch, ctor), make_mha(vk, ctor)
        assert {k: tuple(v.shape) for k, v in vm.state_dict().items()} == \
            {k: tuple(v.shape) for k, v in tm.state_dict().items()}, ctor


def test_multihead_attention_init_as_torch():
    """xavier_uniform_ projections, zero biases, xavier_normal_ bias_k/bias_v: the ranges and zeros."""
    vm = nn.MultiheadAttention(16, 4, add_bias_kv=True)
    bound = (6.0 / (16 + 48)) ** 0.5
    w = to_np(vm.in_proj_weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert not to_np(vm.in_proj_bias).any() and not to_np(vm.out_proj.bias).any()
    assert to_np(vm.bias_k).std() > 0 and vm.in_proj_weight.dtype == vk.float32


def test_multi_head_attention_forward_functional():
    """torch's F signature directly: separate projection weights, static_k/static_v, no training."""
    rng = np.random.default_rng(2)
    arr = dict(q=rng.standard_normal((L, N, E)), k=rng.standard_normal((S, N, 3)), v=rng.standard_normal((S, N, 6)),
               wq=rng.standard_normal((E, E)), wk=rng.standard_normal((E, 3)), wv=rng.standard_normal((E, 6)),
               b=rng.standard_normal(3 * E), wo=rng.standard_normal((E, E)), bo=rng.standard_normal(E),
               sk=rng.standard_normal((N * H, S, E // H)), sv=rng.standard_normal((N * H, S, E // H)))
    vt = {k: vk.tensor(a).requires_grad_() for k, a in arr.items()}
    tt = {k: torch.tensor(a, requires_grad=True) for k, a in arr.items()}

    def call(f, t, static):
        return f(t["q"], t["k"], t["v"], E, H, None, t["b"], None, None, False, 0.5, t["wo"], t["bo"],
                 training=False, use_separate_proj_weight=True, q_proj_weight=t["wq"], k_proj_weight=t["wk"],
                 v_proj_weight=t["wv"], static_k=t["sk"] if static else None,
                 static_v=t["sv"] if static else None)
    for static in (False, True):
        (ov, wv), (ot, wt) = call(F.multi_head_attention_forward, vt, static), \
            call(TN.functional.multi_head_attention_forward, tt, static)
        close(ov, ot, "output")
        close(wv, wt, "weights")
        (ov.sum() + (wv * wv).sum()).backward()
        (ot.sum() + (wt * wt).sum()).backward()
        for k in arr:
            if tt[k].grad is not None:
                close(vt[k].grad, tt[k].grad, f"gradient of {k}")
                vt[k].grad, tt[k].grad = None, None


def test_multihead_attention_gradcheck_finite_differences():
    """The composed gradient against central differences (float64), masks and bias_k included."""
    vm = nn.MultiheadAttention(4, 2, add_bias_kv=True, dtype=vk.float64)
    q, k = vk.tensor(rnd(3, 2, 4, seed=7)).requires_grad_(), vk.tensor(rnd(2, 2, 4, seed=8)).requires_grad_()
    mask = vk.tensor(bool_mask(3, 2, seed=9))

    def f(q, k):
        out, w = vm(q, k, k, attn_mask=mask)
        return out.sum() + (w * w).sum()
    assert vk.autograd.gradcheck(f, (q, k), eps=1e-6, atol=1e-7, rtol=1e-6)


def test_multihead_attention_second_derivative():
    """Attention is differentiable twice (every rule is forward ops): the Hessian-vector product of torch."""
    q0 = rnd(3, 1, 4, seed=11)
    torch.manual_seed(1)
    tm, vm = TN.MultiheadAttention(4, 2, dtype=torch.float64), nn.MultiheadAttention(4, 2, dtype=vk.float64)
    copy_torch_state(vm, tm, None)
    res = []
    for m, lib, q in ((vm, vk, vk.tensor(q0).requires_grad_()), (tm, torch, torch.tensor(q0, requires_grad=True))):
        out, w = m(q, q, q)
        (g,) = lib.autograd.grad((out * out).sum() + w.sum(), q, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), q)
        res.append((g, h))
    close(res[0][0], res[1][0], "first derivative")
    close(res[0][1], res[1][1], "second derivative")


def test_multihead_attention_dropout_in_training():
    """vkml's RNG is not torch's: in training, the returned weights are the eval weights with about
    half of them zeroed and the rest scaled by 1 / (1 - p), as torch's dropout of the weights."""
    vm = nn.MultiheadAttention(E, H, dropout=0.5, dtype=vk.float64)
    q = vk.tensor(rnd(6, 4, E, seed=3))
    vm.eval()
    out_eval, w_eval = vm(q, q, q, average_attn_weights=False)
    vm.train()
    vk.manual_seed(0)
    out_train, w_train = vm(q, q, q, average_attn_weights=False)
    assert out_train.shape == out_eval.shape and w_train.shape == w_eval.shape == (4, H, 6, 6)
    we, wt = to_np(w_eval), to_np(w_train)
    kept = wt != 0
    assert 0.35 < kept.mean() < 0.65
    np.testing.assert_allclose(wt[kept], 2 * we[kept], rtol=1e-12)
    assert not np.allclose(to_np(out_train), to_np(out_eval))


# ======================= bad input =======================

def _raise_alike(make, exc):
    """torch and vkml raise the same exception type for the same bad call."""
    with pytest.raises(exc):
        make(torch)
    with pytest.raises(exc):
        make(vk)


def test_embed_dim_not_divisible_by_num_heads_raises_as_torch():
    _raise_alike(lambda lib: lib.nn.MultiheadAttention(10, 3), AssertionError)
    _raise_alike(lambda lib: lib.nn.MultiheadAttention(0, 2), ValueError)
    _raise_alike(lambda lib: lib.nn.TransformerEncoderLayer(10, 4), AssertionError)


def _mha_call(lib, **kw):
    m = lib.nn.MultiheadAttention(E, H, dtype=lib.float64)
    q = lib.tensor(rnd(L, N, E))
    k = lib.tensor(rnd(S, N, E))
    return m(q, k, k, **{n: lib.tensor(a) for n, a in kw.items()})


@pytest.mark.parametrize("kw, exc, words", [
    (dict(attn_mask=bool_mask(L, L)), RuntimeError, "2D attn_mask"),
    (dict(attn_mask=bool_mask(N, L, S)), RuntimeError, "3D attn_mask"),
    (dict(attn_mask=bool_mask(1, N, L, S)), AssertionError, "attn_mask"),
    (dict(key_padding_mask=padding(N, S + 1)), AssertionError, "key_padd"),
    (dict(key_padding_mask=padding(N, S)[None]), AssertionError, "key_padding_mask"),
    (dict(attn_mask=np.zeros((L, S), dtype=np.int64)), AssertionError, "only bool and floating"),
])
def test_wrong_mask_raises_as_torch(kw, exc, words):
    with pytest.raises(exc):
        _mha_call(torch, **kw)
    with pytest.raises(exc, match=words):
        _mha_call(vk, **kw)


def test_other_bad_input_raises_as_torch():
    _raise_alike(lambda lib: lib.nn.MultiheadAttention(E, H)(*(lib.zeros(L, N, E),) * 3, is_causal=True),
                 RuntimeError)  # is_causal is a hint: the mask is needed
    _raise_alike(lambda lib: lib.nn.MultiheadAttention(E, H)(lib.zeros(2, L, N, E), lib.zeros(2, S, N, E),
                                                             lib.zeros(2, S, N, E)), AssertionError)
    _raise_alike(lambda lib: lib.nn.MultiheadAttention(E, H)(lib.zeros(L, N, E + 1), lib.zeros(S, N, E + 1),
                                                             lib.zeros(S, N, E + 1)), AssertionError)
    _raise_alike(lambda lib: lib.nn.TransformerEncoderLayer(E, H, activation="tanh"), RuntimeError)
    _raise_alike(lambda lib: lib.nn.Transformer(E, H, 1, 1, 16)(lib.zeros(L, N, E), lib.zeros(L, N + 1, E)),
                 RuntimeError)
    _raise_alike(lambda lib: lib.nn.Transformer(E, H, 1, 1, 16)(lib.zeros(L, N, E), lib.zeros(L, N, E + 1)),
                 RuntimeError)


# ======================= the Transformer modules =======================

D, FF = 8, 16


def randomize(tm, seed=0):
    """torch's init leaves the norms at one and zero and the biases at zero: random values make every
    parameter count (and so its gradient checkable)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.5)


def _act(kind):
    """The activation argument: a string, or a callable from the module's own library."""
    if kind in ("relu", "gelu"):
        return lambda lib: kind
    return lambda lib: lib.nn.functional.silu


def _enc_layer(lib, act="relu", **kw):
    return lib.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=_act(act)(lib), dtype=lib.float64, **kw)


def _dec_layer(lib, act="relu", **kw):
    return lib.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, activation=_act(act)(lib), dtype=lib.float64, **kw)


def _encoder(lib, layers=2, **kw):
    return lib.nn.TransformerEncoder(_enc_layer(lib, **kw), layers, norm=lib.nn.LayerNorm(D, dtype=lib.float64),
                                     enable_nested_tensor=False)


def _decoder(lib, layers=2, **kw):
    return lib.nn.TransformerDecoder(_dec_layer(lib, **kw), layers, norm=lib.nn.LayerNorm(D, dtype=lib.float64))


def _transformer(lib, **kw):
    return lib.nn.Transformer(D, H, 2, 1, FF, dropout=0.0, dtype=lib.float64, **kw)


CAUSAL_L = as_float(np.triu(np.ones((L, L), dtype=bool), 1))

# name: (make(lib), input shapes, {forward argument: numpy mask}, {flag: value})
TRANSFORMER_CASES = {
    "enc_layer_post_norm_relu": (_enc_layer, [(L, N, D)], dict(src_mask=bool_mask(L, L)), {}),
    "enc_layer_norm_first_gelu": (lambda lib: _enc_layer(lib, "gelu", norm_first=True), [(L, N, D)],
                                  dict(src_key_padding_mask=padding(N, L)), {}),
    "enc_layer_batch_first_callable": (lambda lib: _enc_layer(lib, "silu", batch_first=True), [(N, L, D)],
                                       dict(src_mask=rnd(L, L, seed=2), src_key_padding_mask=as_float(padding(N, L))),
                                       {}),
    "enc_layer_no_bias_causal": (lambda lib: _enc_layer(lib, bias=False), [(L, N, D)], dict(src_mask=CAUSAL_L),
                                 dict(is_causal=True)),
    "enc_layer_unbatched": (_enc_layer, [(L, D)], dict(src_key_padding_mask=padding(1, L)[0]), {}),
    "dec_layer_all_masks": (_dec_layer, [(L, N, D), (S, N, D)],
                            dict(tgt_mask=CAUSAL_L, memory_mask=bool_mask(L, S), tgt_key_padding_mask=padding(N, L),
                                 memory_key_padding_mask=padding(N, S)), {}),
    "dec_layer_norm_first_gelu_batch_first": (lambda lib: _dec_layer(lib, "gelu", norm_first=True, batch_first=True),
                                              [(N, L, D), (N, S, D)], dict(tgt_mask=CAUSAL_L),
                                              dict(tgt_is_causal=True)),
    "encoder_masks": (_encoder, [(L, N, D)], dict(mask=rnd(L, L, seed=3), src_key_padding_mask=padding(N, L)), {}),
    "encoder_causal_detected": (lambda lib: _encoder(lib, norm_first=True), [(L, N, D)], dict(mask=CAUSAL_L), {}),
    "decoder_masks": (_decoder, [(L, N, D), (S, N, D)],
                      dict(tgt_mask=CAUSAL_L, memory_key_padding_mask=as_float(padding(N, S))), {}),
    "transformer_batch_first": (lambda lib: _transformer(lib, batch_first=True), [(N, S, D), (N, L, D)],
                                dict(src_mask=bool_mask(S, S), tgt_mask=CAUSAL_L, src_key_padding_mask=padding(N, S),
                                     memory_key_padding_mask=padding(N, S)), {}),
    "transformer_norm_first_gelu": (lambda lib: _transformer(lib, norm_first=True, activation="gelu"),
                                    [(S, N, D), (L, N, D)], dict(tgt_mask=CAUSAL_L, memory_mask=bool_mask(L, S)),
                                    dict(tgt_is_causal=True)),
    "transformer_unbatched": (_transformer, [(S, D), (L, D)], dict(tgt_key_padding_mask=padding(1, L)[0]), {}),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(TRANSFORMER_CASES))
def test_transformer_module_matches_torch(name, device):
    dev = device_or_skip(device)
    make, shapes, masks, flags = TRANSFORMER_CASES[name]
    torch.manual_seed(0)
    tm, vm = make(torch), make(vk)
    randomize(tm)
    copy_torch_state(vm, tm, dev)
    arrays = [rnd(*s, seed=i) for i, s in enumerate(shapes)] + list(masks.values())

    def call(m, ts, lib):
        return m(*ts[:len(shapes)], **dict(zip(masks, ts[len(shapes):])), **flags)
    compare(vm, tm, arrays, [True] * len(shapes) + [False] * len(masks), call)


def test_transformer_state_dict_keys():
    """The submodule names (self_attn, multihead_attn, linear1/2, norm1/2/3, encoder/decoder.norm)."""
    for make in (_enc_layer, _dec_layer, _encoder, _decoder, _transformer,
                 lambda lib: _transformer(lib, bias=False)):
        tm, vm = make(torch), make(vk)
        assert {k: tuple(v.shape) for k, v in vm.state_dict().items()} == \
            {k: tuple(v.shape) for k, v in tm.state_dict().items()}


def test_generate_square_subsequent_mask_as_torch():
    for sz, dt in ((1, None), (4, None), (3, "float64")):
        v = nn.Transformer.generate_square_subsequent_mask(sz, dtype=getattr(vk, dt) if dt else None)
        t = TN.Transformer.generate_square_subsequent_mask(sz, dtype=getattr(torch, dt) if dt else None)
        assert str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(to_np(v), to_np(t))


def test_encoder_inference_zeroes_padding_as_torch():
    """torch's inference path (eval, no grad, padding mask, batch_first) runs on nested tensors and pads
    the result with zeros: the padded positions' outputs are the final norm of zero, here too."""
    torch.manual_seed(0)
    make = lambda lib: lib.nn.TransformerEncoder(  # noqa: E731
        lib.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=lib.float64), 2,
        norm=lib.nn.LayerNorm(D, dtype=lib.float64))
    tm, vm = make(torch), make(vk)
    randomize(tm)
    copy_torch_state(vm, tm, None)
    tm.eval()
    vm.eval()
    x, pad = rnd(N, L, D), padding(N, L)
    with torch.no_grad(), vk.no_grad():
        yt = tm(torch.tensor(x), src_key_padding_mask=torch.tensor(pad))
        yv = vm(vk.tensor(x), src_key_padding_mask=vk.tensor(pad))
    close(yv, yt, "inference output")
    norm_of_zero = to_np(vm.norm.bias)
    np.testing.assert_allclose(to_np(yv)[pad], np.broadcast_to(norm_of_zero, (int(pad.sum()), D)), rtol=1e-12)


def test_torch_safetensors_checkpoint_loads(tmp_path):
    """A torch nn.Transformer's state_dict saved with safetensors loads into vkml's, and both compute the same."""
    st = pytest.importorskip("safetensors.torch")
    torch.manual_seed(0)
    tm, vm = _transformer(torch, batch_first=True, norm_first=True), _transformer(vk, batch_first=True, norm_first=True)
    randomize(tm, seed=3)
    path = tmp_path / "transformer.safetensors"
    st.save_file(tm.state_dict(), str(path))
    keys = vm.load_state_dict(vk.load(path))
    assert not keys.missing_keys and not keys.unexpected_keys
    src, tgt = rnd(N, S, D, seed=1), rnd(N, L, D, seed=2)
    mask = TN.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    yt = tm(torch.tensor(src), torch.tensor(tgt), tgt_mask=mask)
    vmask = nn.Transformer.generate_square_subsequent_mask(L, dtype=vk.float64)
    yv = vm(vk.tensor(src), vk.tensor(tgt), tgt_mask=vmask)
    close(yv, yt, "output after loading the torch checkpoint")
