"""Issue #15/#16: torch's top-level spellings of nn functions (torch.dropout(input, p, train),
torch.batch_norm(..., cudnn_enabled), torch.embedding(weight, indices), integer reductions, the
recurrent cells, ...) and the F functions / modules composed in nn/_more.py (channel_shuffle, pdist,
lp_pool*, local_response_norm, max_unpool*, adaptive 3-D pools, multi_margin_loss,
multilabel_margin_loss, triplet_margin_with_distance_loss, rrelu, feature_alpha_dropout, dropout3d,
gumbel_softmax) against torch: values and gradients on the CPU and the Vulkan device, float64
finite differences of the new compositions, the random ones' structure, torch's error types."""

import math
import os

import numpy as np
import pytest
import torch

import vkml as vk
from vkml.nn import functional as F

from conftest import check_fd, to_np

TF = torch.nn.functional
DEVICES = ["cpu", "vulkan"]
TOL = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-5)}
VDT = {"float64": vk.float64, "float32": vk.float32}
TDT = {"float64": torch.float64, "float32": torch.float32}


def device_of(name):
    if name == "vulkan" and not vk.vulkan.is_available():
        if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
            pytest.fail("VKML_REQUIRE_VULKAN=1 but no Vulkan device is available")
        pytest.skip("no Vulkan device")
    return vk.device(name)


def rnd(*shape, seed=0, lo=None, hi=None):
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, size=shape) if lo is not None else rng.standard_normal(shape)


def _outputs(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def compare(vfn, tfn, arrays, device, dt="float64", grads=None):
    """vfn(*vkml tensors on device) against tfn(*torch tensors): every output, then the gradients of
    the float inputs (grads[i] False: no gradient asked) through the first output."""
    dev = device_of(device)
    grads = grads or [np.issubdtype(np.asarray(a).dtype, np.floating) for a in arrays]
    vs, ts = [], []
    for a, g in zip(arrays, grads):
        a = np.asarray(a)
        if np.issubdtype(a.dtype, np.floating):
            vs.append(vk.tensor(a, dtype=VDT[dt]).to(dev).requires_grad_(bool(g)))
            ts.append(torch.tensor(a, dtype=TDT[dt], requires_grad=bool(g)))
        else:
            vs.append(vk.tensor(a).to(dev))
            ts.append(torch.tensor(a))
    yv, yt = _outputs(vfn(*vs)), _outputs(tfn(*ts))
    assert len(yv) == len(yt)
    for i, (a, b) in enumerate(zip(yv, yt)):
        assert a.device == dev, f"output {i} left the device"
        np.testing.assert_allclose(to_np(a), to_np(b), err_msg=f"output {i}", equal_nan=True, **TOL[dt])
    if not any(grads):
        return
    up = np.random.default_rng(7).uniform(-1, 1, size=tuple(yt[0].shape))
    yv[0].backward(vk.tensor(up, dtype=VDT[dt]).to(dev))
    yt[0].backward(torch.tensor(up, dtype=TDT[dt]))
    for i, (v, t, g) in enumerate(zip(vs, ts, grads)):
        if g:
            assert v.grad is not None, f"input {i} got no gradient"
            np.testing.assert_allclose(to_np(v.grad), to_np(t.grad), err_msg=f"gradient of input {i}", **TOL[dt])


X34 = rnd(3, 4)
IDX = np.array([[0, 2], [3, 1]])
CLS = np.array([1, 0, 3])
SIGN = np.array([1.0, -1.0, 1.0])
# (id, vkml fn, torch fn, arrays): the torch-namespace names, called with torch's positional signatures
ALIASES = [
    ("conv1d", lambda x, w, b: vk.conv1d(x, w, b, 2, 1), lambda x, w, b: torch.conv1d(x, w, b, 2, 1),
     [rnd(2, 3, 7), rnd(4, 3, 3, seed=1), rnd(4, seed=2)]),
    ("embedding", lambda w, i: vk.embedding(w, i, 1), lambda w, i: torch.embedding(w, i, 1), [rnd(4, 3), IDX]),
    ("layer_norm", lambda x, w, b: vk.layer_norm(x, [4], w, b, 1e-3, False),
     lambda x, w, b: torch.layer_norm(x, [4], w, b, 1e-3, False), [rnd(2, 3, 4), rnd(4, seed=1), rnd(4, seed=2)]),
    ("batch_norm", lambda x, w, b, m, v: vk.batch_norm(x, w, b, m, v, True, 0.2, 1e-4, True),
     lambda x, w, b, m, v: torch.batch_norm(x, w, b, m, v, True, 0.2, 1e-4, True),
     [rnd(4, 3, 2), rnd(3, seed=1), rnd(3, seed=2), rnd(3, seed=3), rnd(3, seed=4, lo=0.5, hi=2)],
     [True, True, True, False, False]),
    ("batch_norm_eval", lambda x, m, v: vk.batch_norm(x, None, None, m, v, False, 0.1, 1e-5, False),
     lambda x, m, v: torch.batch_norm(x, None, None, m, v, False, 0.1, 1e-5, False),
     [rnd(4, 3), rnd(3, seed=3), rnd(3, seed=4, lo=0.5, hi=2)], [True, False, False]),
    ("group_norm", lambda x, w, b: vk.group_norm(x, 2, w, b, 1e-4, True),
     lambda x, w, b: torch.group_norm(x, 2, w, b, 1e-4, True), [rnd(2, 4, 3), rnd(4, seed=1), rnd(4, seed=2)]),
    ("instance_norm", lambda x, w, b: vk.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
     lambda x, w, b: torch.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
     [rnd(2, 3, 5), rnd(3, seed=1), rnd(3, seed=2)]),
    ("rms_norm", lambda x, w: vk.rms_norm(x, [4], w, 1e-6), lambda x, w: torch.rms_norm(x, [4], w, 1e-6),
     [rnd(3, 4), rnd(4, seed=1)]),
    # (alpha 0.5: torch's celu gradient rounds 1 / alpha to float32, 1e-8 off for 0.7; vkml's is exact)
    ("celu", lambda x: vk.celu(x, 0.5), lambda x: torch.celu(x, 0.5), [X34]),
    ("selu", vk.selu if hasattr(vk, "selu") else None, torch.selu, [X34]),
    ("threshold", lambda x: vk.threshold(x, 0.1, -2.0), lambda x: torch.threshold(x, 0.1, -2.0), [X34]),
    ("hardshrink", lambda x: vk.hardshrink(x, 0.3), lambda x: torch.hardshrink(x, 0.3), [X34]),
    ("Tensor.hardshrink", lambda x: x.hardshrink(0.3), lambda x: x.hardshrink(0.3), [X34]),
    ("prelu", vk.prelu if hasattr(vk, "prelu") else None, torch.prelu, [rnd(2, 3, 4), rnd(3, seed=1)]),
    ("Tensor.prelu", lambda x, w: x.prelu(w), lambda x, w: x.prelu(w), [rnd(2, 3, 4), rnd(1, seed=1)]),
    ("pixel_shuffle", lambda x: vk.pixel_shuffle(x, 2), lambda x: torch.pixel_shuffle(x, 2), [rnd(1, 8, 2, 3)]),
    ("pixel_unshuffle", lambda x: vk.pixel_unshuffle(x, 2), lambda x: torch.pixel_unshuffle(x, 2),
     [rnd(1, 2, 4, 6)]),
    ("channel_shuffle", lambda x: vk.channel_shuffle(x, 3), lambda x: torch.channel_shuffle(x, 3),
     [rnd(2, 6, 2, 2)]),
    ("native_channel_shuffle", lambda x: vk.native_channel_shuffle(x, 2),
     lambda x: torch.native_channel_shuffle(x, 2), [rnd(2, 4, 3)], [False]),  # (torch: no derivative)
    ("cosine_similarity", lambda a, b: vk.cosine_similarity(a, b, 0, 1e-8),
     lambda a, b: torch.cosine_similarity(a, b, 0, 1e-8), [X34, rnd(3, 4, seed=1)]),
    ("pairwise_distance", lambda a, b: vk.pairwise_distance(a, b, 3.0, 1e-6, True),
     lambda a, b: torch.pairwise_distance(a, b, 3.0, 1e-6, True), [X34, rnd(3, 4, seed=1)]),
    ("pdist", lambda x: vk.pdist(x), lambda x: torch.pdist(x), [rnd(5, 3)]),
    ("pdist_p1.5", lambda x: vk.pdist(x, 1.5), lambda x: torch.pdist(x, 1.5), [rnd(4, 3)]),
    ("pdist_inf", lambda x: vk.pdist(x, math.inf), lambda x: torch.pdist(x, math.inf), [rnd(4, 3)]),
    ("bilinear", lambda a, b, w, c: vk.bilinear(a, b, w, c), lambda a, b, w, c: torch.bilinear(a, b, w, c),
     [rnd(3, 2), rnd(3, 4, seed=1), rnd(5, 2, 4, seed=2), rnd(5, seed=3)]),
    ("constant_pad_nd", lambda x: vk.constant_pad_nd(x, (1, 2, 0, 1), 0.5),
     lambda x: torch.constant_pad_nd(x, (1, 2, 0, 1), 0.5), [rnd(2, 3, 4)]),
    ("adaptive_avg_pool1d", lambda x: vk.adaptive_avg_pool1d(x, 3), lambda x: torch.adaptive_avg_pool1d(x, 3),
     [rnd(2, 3, 7)]),
    ("adaptive_max_pool1d", lambda x: vk.adaptive_max_pool1d(x, 3), lambda x: torch.adaptive_max_pool1d(x, 3),
     [rnd(2, 3, 7)]),
    ("lstm_cell", lambda x, h, c, wi, wh, bi, bh: vk.lstm_cell(x, [h, c], wi, wh, bi, bh),
     lambda x, h, c, wi, wh, bi, bh: torch.lstm_cell(x, [h, c], wi, wh, bi, bh),
     [rnd(2, 3), rnd(2, 4, seed=1), rnd(2, 4, seed=2), rnd(16, 3, seed=3), rnd(16, 4, seed=4), rnd(16, seed=5),
      rnd(16, seed=6)]),
    ("gru_cell", lambda x, h, wi, wh, bi, bh: vk.gru_cell(x, h, wi, wh, bi, bh),
     lambda x, h, wi, wh, bi, bh: torch.gru_cell(x, h, wi, wh, bi, bh),
     [rnd(2, 3), rnd(2, 4, seed=1), rnd(12, 3, seed=3), rnd(12, 4, seed=4), rnd(12, seed=5), rnd(12, seed=6)]),
    ("gru_cell_nobias", lambda x, h, wi, wh: vk.gru_cell(x, h, wi, wh),
     lambda x, h, wi, wh: torch.gru_cell(x, h, wi, wh),
     [rnd(2, 3), rnd(2, 4, seed=1), rnd(12, 3, seed=3), rnd(12, 4, seed=4)]),
    ("rnn_tanh_cell", lambda x, h, wi, wh, bi: vk.rnn_tanh_cell(x, h, wi, wh, bi),
     lambda x, h, wi, wh, bi: torch.rnn_tanh_cell(x, h, wi, wh, bi),
     [rnd(2, 3), rnd(2, 4, seed=1), rnd(4, 3, seed=3), rnd(4, 4, seed=4), rnd(4, seed=5)]),
    ("rnn_relu_cell", lambda x, h, wi, wh: vk.rnn_relu_cell(x, h, wi, wh),
     lambda x, h, wi, wh: torch.rnn_relu_cell(x, h, wi, wh),
     [rnd(2, 3), rnd(2, 4, seed=1), rnd(4, 3, seed=3), rnd(4, 4, seed=4)]),
    ("rrelu_eval", lambda x: vk.rrelu(x, 0.1, 0.3), lambda x: torch.rrelu(x, 0.1, 0.3), [X34]),
]
for r in (0, 1, 2):
    ALIASES += [
        (f"kl_div_r{r}", lambda a, b, r=r: vk.kl_div(a, b, r, log_target=True),
         lambda a, b, r=r: torch.kl_div(a, b, r, log_target=True), [X34, rnd(3, 4, seed=1)]),
        (f"bce_with_logits_r{r}", lambda x, t, w, pw, r=r: vk.binary_cross_entropy_with_logits(x, t, w, pw, r),
         lambda x, t, w, pw, r=r: torch.binary_cross_entropy_with_logits(x, t, w, pw, r),
         [X34, rnd(3, 4, seed=1, lo=0, hi=1), rnd(4, seed=2, lo=0.5, hi=2), rnd(4, seed=3, lo=0.5, hi=2)],
         [True, True, False, False]),
        (f"margin_ranking_loss_r{r}", lambda a, b, y, r=r: vk.margin_ranking_loss(a, b, y, 0.1, r),
         lambda a, b, y, r=r: torch.margin_ranking_loss(a, b, y, 0.1, r), [rnd(3), rnd(3, seed=1), SIGN],
         [True, True, False]),
        (f"hinge_embedding_loss_r{r}", lambda x, y, r=r: vk.hinge_embedding_loss(x, y, 1.5, r),
         lambda x, y, r=r: torch.hinge_embedding_loss(x, y, 1.5, r), [rnd(3), SIGN], [True, False]),
        (f"cosine_embedding_loss_r{r}", lambda a, b, y, r=r: vk.cosine_embedding_loss(a, b, y, 0.2, r),
         lambda a, b, y, r=r: torch.cosine_embedding_loss(a, b, y, 0.2, r), [X34, rnd(3, 4, seed=1), SIGN],
         [True, True, False]),
        (f"triplet_margin_loss_r{r}", lambda a, p, n, r=r: vk.triplet_margin_loss(a, p, n, 1.0, 2.0, 1e-6, True, r),
         lambda a, p, n, r=r: torch.triplet_margin_loss(a, p, n, 1.0, 2.0, 1e-6, True, r),
         [X34, rnd(3, 4, seed=1), rnd(3, 4, seed=2)]),
        (f"poisson_nll_loss_r{r}", lambda x, t, r=r: vk.poisson_nll_loss(x, t, True, True, 1e-8, r),
         lambda x, t, r=r: torch.poisson_nll_loss(x, t, True, True, 1e-8, r), [X34, rnd(3, 4, seed=1, lo=0, hi=3)]),
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ALIASES, ids=[c[0] for c in ALIASES])
def test_torch_namespace_alias_vs_torch(case, device):
    name, vfn, tfn, arrays = case[:4]
    assert vfn is not None, f"vk.{name} is missing"
    compare(vfn, tfn, arrays, device, grads=case[4] if len(case) > 4 else None)


def test_ctc_loss_alias_vs_torch():
    # (gradients through log_softmax: torch's ctc_loss backward assumes normalized log-probabilities)
    logits = np.random.default_rng(0).standard_normal((6, 2, 4))
    targets, il, tl = torch.tensor([[1, 2, 1], [3, 1, 0]]), [6, 5], [3, 2]
    for r in (0, 1, 2):
        v = vk.tensor(logits).requires_grad_()
        t = torch.tensor(logits).requires_grad_()
        yv = vk.ctc_loss(v.log_softmax(2), vk.tensor(targets.numpy()), il, tl, 0, r, False)
        yt = torch.ctc_loss(t.log_softmax(2), targets, il, tl, 0, r, False)
        np.testing.assert_allclose(to_np(yv), to_np(yt), rtol=1e-9)
        yv.sum().backward()
        yt.sum().backward()
        np.testing.assert_allclose(to_np(v.grad), to_np(t.grad), rtol=1e-8, atol=1e-10)


def test_batch_norm_alias_updates_the_running_stats_as_torch():
    x, m, v = rnd(5, 3), rnd(3, seed=1), rnd(3, seed=2, lo=0.5, hi=2)
    vm, vv, tm, tv = vk.tensor(m), vk.tensor(v), torch.tensor(m), torch.tensor(v)
    vk.batch_norm(vk.tensor(x), None, None, vm, vv, True, 0.3, 1e-5, False)
    torch.batch_norm(torch.tensor(x), None, None, tm, tv, True, 0.3, 1e-5, False)
    np.testing.assert_allclose(to_np(vm), to_np(tm), rtol=1e-12)
    np.testing.assert_allclose(to_np(vv), to_np(tv), rtol=1e-12)
    assert not np.allclose(to_np(vm), m), "the running mean did not move"


def test_inplace_aliases_write_the_input():
    for name, args in [("celu_", (0.5,)), ("selu_", ()), ("threshold_", (0.0, 9.0)), ("rrelu_", (0.1, 0.3))]:
        x = vk.tensor(X34)
        t = torch.tensor(X34)
        out = getattr(vk, name)(x, *args)
        getattr(torch, name)(t, *args)
        assert out is x
        np.testing.assert_allclose(to_np(x), to_np(t), rtol=1e-12, err_msg=name)
    x = vk.tensor(X34, requires_grad=True)  # a leaf that requires grad: torch's RuntimeError
    with pytest.raises(RuntimeError):
        vk.selu_(x)
    with pytest.raises(RuntimeError):
        torch.selu_(torch.tensor(X34, requires_grad=True))


# ---------------- random ones: dropout family, rrelu, gumbel_softmax ----------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"])
def test_dropout_aliases_eval_identity_p1_and_inplace(name, device):
    dev = device_of(device)
    x = vk.tensor(rnd(4, 3, 5)).to(dev)
    fn = getattr(vk, name)
    np.testing.assert_array_equal(to_np(fn(x, 0.4, False)), to_np(x))
    np.testing.assert_array_equal(to_np(fn(x, 0.0, True)), to_np(x))
    np.testing.assert_array_equal(to_np(fn(x, 1.0, True)), np.zeros((4, 3, 5)))
    y = to_np(fn(vk.full((30, 20, 4), 6.0, dtype=vk.float64).to(dev), 0.5, True))
    per_channel = bool(np.all((y == y[:, :, :1]).all(2)))
    assert per_channel == name.startswith("feature"), "feature_* draw once per (N, C), the others per element"
    y = x.clone()
    assert getattr(vk, name + "_")(y, 0.5, True) is y
    assert not np.array_equal(to_np(y), to_np(x)), f"{name}_ left the input as it was"
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        fn(x, 1.5, True)
    with pytest.raises(RuntimeError):
        getattr(torch, name)(torch.zeros(2), 1.5, True)


ALPHA = 1.7580993408473766


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", ["torch", "F"])
def test_feature_alpha_dropout_is_torchs_affine_map_per_channel(fn, device):
    dev = device_of(device)
    p = 0.3
    a = 1 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    x = vk.tensor(rnd(40, 50, 3) + 5).to(dev)  # (+5: a kept value is never the dropped constant)
    y = vk.feature_alpha_dropout(x, p, True) if fn == "torch" else F.feature_alpha_dropout(x, p, True)
    xn, yn = to_np(x), to_np(y)
    kept = np.isclose(yn, xn * a + ALPHA * a * p, rtol=1e-12)
    dropped = np.isclose(yn, ALPHA * a * (p - 1), rtol=1e-12)
    assert np.all(kept | dropped)
    assert np.all(kept.all(2) | dropped.all(2)), "one draw per (N, C)"
    assert abs(dropped.all(2).mean() - p) < 0.05
    # its gradient: a where kept, 0 where dropped (float64 finite differences, the same draw)
    check_fd(lambda t: (vk.manual_seed(3), F.feature_alpha_dropout(t, 0.5, True))[1], [rnd(3, 4, 2)])


@pytest.mark.parametrize("device", DEVICES)
def test_dropout3d_draws_per_channel_and_batched_or_not(device):
    dev = device_of(device)
    for shape in [(6, 20, 2, 2, 3), (30, 2, 2, 3)]:
        x = vk.ones(shape, dtype=vk.float64).to(dev)
        y = to_np(F.dropout3d(x, 0.5, True))
        flat = y.reshape(y.shape[0] * (y.shape[1] if len(shape) == 5 else 1), -1)
        assert np.all((flat == flat[:, :1]).all(1)), "one draw per channel"
        assert set(np.unique(flat)) <= {0.0, 2.0} and 0 < (flat[:, 0] == 0).mean() < 1
    np.testing.assert_array_equal(to_np(vk.nn.Dropout3d(0.5).eval()(x)), to_np(x))


@pytest.mark.parametrize("device", DEVICES)
def test_rrelu_training_draws_slopes_in_bounds_with_their_gradient(device):
    dev = device_of(device)
    x = vk.tensor(rnd(50, 40)).to(dev).requires_grad_()
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    xn, yn, g = to_np(x), to_np(y), to_np(x.grad)
    pos = xn > 0
    np.testing.assert_array_equal(yn[pos], xn[pos])
    np.testing.assert_array_equal(g[pos], 1.0)
    slope = yn[~pos] / xn[~pos]
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.03, "slopes not uniform in [0.1, 0.3]"
    np.testing.assert_allclose(g[~pos], slope, rtol=1e-12)
    # the same generator state gives the same slopes; the module in eval is torch's fixed slope
    gens = [vk.Generator(device=dev).manual_seed(5) for _ in range(2)]
    a, b = (vk.rrelu(x.detach(), 0.1, 0.3, True, generator=g) for g in gens)
    np.testing.assert_array_equal(to_np(a), to_np(b))
    m = vk.nn.RReLU(0.1, 0.3).eval()
    np.testing.assert_allclose(to_np(m(x.detach())), to_np(torch.nn.RReLU(0.1, 0.3).eval()(torch.tensor(xn))),
                               rtol=1e-12)
    check_fd(lambda t: (vk.manual_seed(2), F.rrelu(t, 0.1, 0.3, True))[1], [rnd(3, 4) + 0.05])
    with pytest.raises(RuntimeError, match="Lower bound"):
        F.rrelu(x, 0.3, 0.1)


@pytest.mark.parametrize("device", DEVICES)
def test_gumbel_softmax_soft_and_straight_through_hard(device):
    dev = device_of(device)
    logits = vk.tensor(rnd(6, 5)).to(dev).requires_grad_()
    w = vk.tensor(rnd(6, 5, seed=1)).to(dev)
    vk.manual_seed(11)
    soft = F.gumbel_softmax(logits, tau=0.7)
    (soft * w).sum().backward()
    g_soft = to_np(logits.grad)
    logits.grad = None
    vk.manual_seed(11)
    hard = F.gumbel_softmax(logits, tau=0.7, hard=True)
    (hard * w).sum().backward()
    s, h = to_np(soft), to_np(hard)
    np.testing.assert_allclose(s.sum(1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(h, np.eye(5)[s.argmax(1)], atol=1e-12)
    np.testing.assert_allclose(to_np(logits.grad), g_soft, rtol=1e-10, atol=1e-12)  # straight through
    # the noise really is Gumbel(0, 1): with equal logits the argmax is uniform
    vk.manual_seed(0)
    counts = np.bincount(to_np(F.gumbel_softmax(vk.zeros(4000, 4), hard=True)).argmax(1), minlength=4)
    assert np.all(np.abs(counts / 4000 - 0.25) < 0.04), counts


# ---------------- deterministic F functions and modules of nn/_more.py ----------------

POS = rnd(2, 3, 8, 6, seed=3, lo=0.2, hi=2.0)
FUNCS = [
    ("lp_pool1d", lambda x: F.lp_pool1d(x, 2, 3, 2), lambda x: TF.lp_pool1d(x, 2, 3, 2), [rnd(2, 3, 9)]),
    ("lp_pool1d_ceil", lambda x: F.lp_pool1d(x, 1.5, 2, ceil_mode=True),
     lambda x: TF.lp_pool1d(x, 1.5, 2, ceil_mode=True), [POS[:, :, :, 0]]),
    ("lp_pool2d", lambda x: F.lp_pool2d(x, 3, (2, 3)), lambda x: TF.lp_pool2d(x, 3, (2, 3)), [POS]),
    ("lp_pool2d_inf", lambda x: F.lp_pool2d(x, math.inf, 2), lambda x: TF.lp_pool2d(x, math.inf, 2),
     [rnd(1, 2, 4, 4)]),
    ("lp_pool3d", lambda x: F.lp_pool3d(x, 2, 2, (1, 2, 2)), lambda x: TF.lp_pool3d(x, 2, 2, (1, 2, 2)),
     [rnd(1, 2, 3, 4, 4)]),
    ("local_response_norm_3d", lambda x: F.local_response_norm(x, 3, 0.1, 0.6, 2.0),
     lambda x: TF.local_response_norm(x, 3, 0.1, 0.6, 2.0), [rnd(2, 5, 4)]),
    ("local_response_norm_5d", lambda x: F.local_response_norm(x, 2), lambda x: TF.local_response_norm(x, 2),
     [rnd(2, 4, 2, 3, 2)]),
    ("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (2, 3, None)),
     lambda x: TF.adaptive_avg_pool3d(x, (2, 3, None)), [rnd(2, 2, 5, 4, 3)]),
    ("adaptive_max_pool3d", lambda x: F.adaptive_max_pool3d(x, 2, True),
     lambda x: TF.adaptive_max_pool3d(x, 2, True), [rnd(1, 2, 5, 4, 3)]),
    ("adaptive_max_pool2d_with_indices", lambda x: F.adaptive_max_pool2d_with_indices(x, 2),
     lambda x: TF.adaptive_max_pool2d_with_indices(x, 2), [rnd(1, 2, 5, 4)]),
    ("channel_shuffle", lambda x: F.channel_shuffle(x, 2), lambda x: TF.channel_shuffle(x, 2), [rnd(2, 4, 3)]),
    ("max_pool3d_with_indices", lambda x: F.max_pool3d_with_indices(x, 2, 1),
     lambda x: TF.max_pool3d_with_indices(x, 2, 1), [rnd(1, 2, 3, 4, 3)]),
    ("pdist", lambda x: F.pdist(x, 3), lambda x: TF.pdist(x, 3), [rnd(4, 2)]),
    ("triplet_with_distance", lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n),
     lambda a, p, n: TF.triplet_margin_with_distance_loss(a, p, n), [X34, rnd(3, 4, seed=1), rnd(3, 4, seed=2)]),
    ("triplet_with_cosine_swap", lambda a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5, swap=True,
        reduction="none"),
     lambda a, p, n: TF.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1 - TF.cosine_similarity(u, v), margin=0.5, swap=True,
        reduction="none"), [X34, rnd(3, 4, seed=1), rnd(3, 4, seed=2)]),
]
for red in ("mean", "sum", "none"):
    FUNCS += [
        (f"multi_margin_p1_{red}", lambda x, y, red=red: F.multi_margin_loss(x, y, reduction=red),
         lambda x, y, red=red: TF.multi_margin_loss(x, y, reduction=red), [X34, CLS]),
        (f"multi_margin_p2_w_{red}", lambda x, y, w, red=red: F.multi_margin_loss(x, y, 2, 0.7, w, reduction=red),
         lambda x, y, w, red=red: TF.multi_margin_loss(x, y, 2, 0.7, w, reduction=red),
         [X34, CLS, rnd(4, seed=5, lo=0.5, hi=2)], [True, False, False]),
        (f"multi_margin_1d_{red}", lambda x, y, red=red: F.multi_margin_loss(x, y, reduction=red),
         lambda x, y, red=red: TF.multi_margin_loss(x, y, reduction=red), [rnd(5), np.array(2)]),
        (f"multilabel_margin_{red}", lambda x, y, red=red: F.multilabel_margin_loss(x, y, reduction=red),
         lambda x, y, red=red: TF.multilabel_margin_loss(x, y, reduction=red),
         [X34, np.array([[3, 0, -1, 1], [1, 1, 2, -1], [-1, 2, 0, 3]])]),
        (f"multilabel_margin_1d_{red}", lambda x, y, red=red: F.multilabel_margin_loss(x, y, reduction=red),
         lambda x, y, red=red: TF.multilabel_margin_loss(x, y, reduction=red), [rnd(4), np.array([2, 0, -1, 3])]),
    ]


def _unpool_case(n):
    def run(mod, x):
        f = mod.nn.functional
        pool = getattr(f, f"max_pool{n}d")
        values, idx = pool(x, 2, 2, return_indices=True)
        return getattr(f, f"max_unpool{n}d")(values, idx, 2, 2, output_size=list(x.shape[2:]))
    shape = [(2, 3, 7), (1, 2, 5, 4), (1, 2, 4, 5, 3)][n - 1]
    return (f"max_unpool{n}d", lambda x: run(vk, x), lambda x: run(torch, x), [rnd(*shape)])


FUNCS += [_unpool_case(n) for n in (1, 2, 3)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", FUNCS, ids=[c[0] for c in FUNCS])
def test_functional_vs_torch(case, device):
    compare(case[1], case[2], case[3], device, grads=case[4] if len(case) > 4 else None)


@pytest.mark.parametrize("case", [c for c in FUNCS if c[0] in (
    "lp_pool1d_ceil", "lp_pool2d", "local_response_norm_3d", "local_response_norm_5d", "pdist",
    "triplet_with_cosine_swap", "multi_margin_p2_w_none", "multilabel_margin_sum", "max_unpool2d",
    "adaptive_max_pool3d")], ids=lambda c: c[0])
def test_new_compositions_float64_finite_differences(case):
    _, vfn, _, arrays = case[:4]
    floats = [i for i, a in enumerate(arrays) if np.issubdtype(np.asarray(a).dtype, np.floating)][:1]
    others = [vk.tensor(a) for a in arrays]

    def f(x):
        args = list(others)
        args[floats[0]] = x
        out = vfn(*args)
        return out[0] if isinstance(out, tuple) else out
    check_fd(f, [arrays[floats[0]]])


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_float32_runs_too(dt):
    compare(lambda x: F.local_response_norm(x, 3), lambda x: TF.local_response_norm(x, 3), [rnd(2, 5, 4)], "cpu", dt)
    compare(lambda x, y: F.multilabel_margin_loss(x, y), lambda x, y: TF.multilabel_margin_loss(x, y),
            [X34, np.array([[3, 0, -1, 1], [1, 1, 2, -1], [-1, 2, 0, 3]])], "cpu", dt)


MODULES = [
    ("ChannelShuffle", (2,), [rnd(2, 4, 3)]),
    ("LPPool1d", (2, 3), [rnd(2, 3, 9)]),
    ("LPPool2d", (2.0, 2, 1, True), [rnd(1, 2, 5, 5)]),
    ("LPPool3d", (2, 2), [rnd(1, 2, 4, 4, 4)]),
    ("LocalResponseNorm", (3, 1e-2, 0.5, 1.5), [rnd(2, 6, 3, 3)]),
    ("AdaptiveAvgPool3d", ((1, 2, 3),), [rnd(1, 2, 4, 4, 5)]),
    ("AdaptiveMaxPool3d", (2,), [rnd(1, 2, 4, 4, 5)]),
    ("MultiMarginLoss", (2, 0.5), [X34, CLS]),
    ("MultiLabelMarginLoss", (), [X34, np.array([[3, 0, -1, 1], [1, 1, 2, -1], [-1, 2, 0, 3]])]),
    ("TripletMarginWithDistanceLoss", (), [X34, rnd(3, 4, seed=1), rnd(3, 4, seed=2)]),
]


@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_module_vs_torch(case):
    name, args, arrays = case
    vm, tm = getattr(vk.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(vm) == repr(tm)
    compare(lambda *xs: vm(*xs), lambda *xs: tm(*xs), arrays, "cpu")


def test_max_unpool_modules_and_feature_alpha_dropout_module():
    x = rnd(1, 2, 6, 4)
    for mod in (vk, torch):
        pool, unpool = mod.nn.MaxPool2d(2, return_indices=True), mod.nn.MaxUnpool2d(2)
        v, i = pool(mod.tensor(x))
        out = unpool(v, i)
        assert repr(unpool) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))" or mod is vk
        if mod is vk:
            vout = to_np(out)
        else:
            np.testing.assert_allclose(vout, to_np(out), rtol=1e-12)
    m = vk.nn.FeatureAlphaDropout(0.2).eval()
    np.testing.assert_array_equal(to_np(m(vk.tensor(x))), x)


# ---------------- errors: torch's types ----------------

ERRORS = [
    ("channel_shuffle groups", lambda m: m.channel_shuffle(m.zeros(2, 5, 3), 2)),
    ("channel_shuffle zero groups", lambda m: m.channel_shuffle(m.zeros(2, 4, 3), 0)),
    ("channel_shuffle 2-D", lambda m: m.channel_shuffle(m.zeros(2, 4), 2)),
    ("pdist 3-D", lambda m: m.pdist(m.zeros(2, 4, 3))),
    ("pdist negative p", lambda m: m.pdist(m.zeros(4, 3), -1)),
    ("feature_dropout 1-D", lambda m: m.feature_dropout(m.zeros(3), 0.5, True)),
    ("feature_alpha_dropout 1-D", lambda m: m.feature_alpha_dropout(m.zeros(3), 0.5, True)),
    ("F.feature_alpha_dropout p", lambda m: m.nn.functional.feature_alpha_dropout(m.zeros(2, 3), 1.5, True)),
    ("multi_margin p", lambda m: m.nn.functional.multi_margin_loss(m.zeros(2, 3), m.tensor([0, 1]), p=3)),
    ("multilabel target size", lambda m: m.nn.functional.multilabel_margin_loss(m.zeros(2, 3), m.tensor([0, 1]))),
    ("multilabel target range", lambda m: m.nn.functional.multilabel_margin_loss(
        m.zeros(2, 3), m.tensor([[0, 5, -1], [1, -1, 0]]))),
    ("local_response_norm 2-D", lambda m: m.nn.functional.local_response_norm(m.zeros(2, 3), 2)),
    ("max_unpool bad index", lambda m: m.nn.functional.max_unpool1d(m.zeros(1, 2, 3),
                                                                     m.tensor([[[0, 9, 2], [1, 2, 3]]]), 2)),
    ("max_unpool bad output_size", lambda m: m.nn.functional.max_unpool1d(
        m.zeros(1, 2, 3), m.tensor([[[0, 1, 2], [1, 2, 3]]]), 2, output_size=[12])),
    ("rrelu bounds", lambda m: m.rrelu(m.zeros(2), 0.3, 0.1, True)),
    ("triplet_with_distance margin", lambda m: m.nn.functional.triplet_margin_with_distance_loss(
        m.zeros(2, 3), m.zeros(2, 3), m.zeros(2, 3), margin=0)),
    ("TripletMarginWithDistanceLoss margin", lambda m: m.nn.TripletMarginWithDistanceLoss(margin=-1)),
    ("MultiMarginLoss p", lambda m: m.nn.MultiMarginLoss(p=3)),
    ("lstm_cell 1-D", lambda m: m.lstm_cell(m.zeros(3), [m.zeros(4), m.zeros(4)], m.zeros(16, 3), m.zeros(16, 4))),
    ("rnn_tanh_cell input size", lambda m: m.rnn_tanh_cell(m.zeros(2, 3), m.zeros(2, 4), m.zeros(4, 5),
                                                            m.zeros(4, 4))),
    ("dropout p", lambda m: m.dropout(m.zeros(2), 1.5, True)),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_are_torchs_types(case):
    _, fn = case
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(te.type):
        fn(vk)


def test_an_unknown_integer_reduction_raises():
    # torch reads any integer other than 1 and 2 as "none": vkml refuses it rather than guess
    with pytest.raises(ValueError, match="reduction"):
        vk.kl_div(vk.zeros(2), vk.zeros(2), 5)


# ---------------- nanmedian (torch.nanmedian, Tensor.nanmedian) ----------------

NAN = float("nan")
NANROWS = np.array([[1.0, NAN, 3, 2], [2, 2, NAN, 2], [5, 1, 1, 5], [1, 1, 1, 1], [0.5, -2, NAN, NAN],
                    [4, 3, 2, 1]])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True), (-1, True)])
def test_nanmedian_vs_torch_with_nans_and_ties(dim, keepdim, device):
    def run(mod, x):
        if dim is None:
            return mod.nanmedian(x)
        out = x.nanmedian(dim, keepdim=keepdim) if mod is vk else torch.nanmedian(x, dim, keepdim=keepdim)
        assert out.values is out[0] and out.indices is out[1]
        return tuple(out)
    compare(lambda x: run(vk, x), lambda x: run(torch, x), [NANROWS], device)


@pytest.mark.parametrize("device", DEVICES)
def test_nanmedian_rows_of_nan_only_give_nan(device):
    dev = device_of(device)
    x = vk.tensor([[NAN, NAN], [1.0, NAN]]).to(dev)
    np.testing.assert_array_equal(to_np(x.nanmedian(1).values), [NAN, 1.0])
    assert math.isnan(vk.nanmedian(vk.tensor([NAN, NAN]).to(dev)).item())
    assert vk.nanmedian(vk.tensor(3.0).to(dev), 0).values.item() == 3.0


def test_nanmedian_float64_finite_differences_and_errors():
    x = rnd(4, 5, seed=9)
    x[1, 2] = x[3, 0] = NAN
    check_fd(lambda t: vk.nanmedian(t, 1).values, [x])
    check_fd(lambda t: vk.nanmedian(t, 0, True).values, [rnd(3, 4, seed=2)])
    check_fd(lambda t: vk.nanmedian(t), [rnd(3, 3, seed=4)])
    for mod in (vk, torch):
        assert math.isnan(mod.nanmedian(mod.zeros(0)).item())
        with pytest.raises(IndexError):
            mod.zeros(2, 3).nanmedian(2)
        with pytest.raises(IndexError, match="non-zero size"):
            mod.zeros(2, 0).nanmedian(1)


# ---------------- affine_grid / grid_sample ----------------

GS_INPUT, GS_GRID = rnd(2, 3, 5, 4, seed=1), rnd(2, 3, 6, 2, seed=2, lo=-1.2, hi=1.2)
GRID_CASES = [(m, p, a) for m in ("bilinear", "nearest") for p in ("zeros", "border") for a in (False, True)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode,padding_mode,align_corners", GRID_CASES)
def test_grid_sample_vs_torch(mode, padding_mode, align_corners, device):
    compare(lambda x, g: F.grid_sample(x, g, mode, padding_mode, align_corners),
            lambda x, g: TF.grid_sample(x, g, mode, padding_mode, align_corners), [GS_INPUT, GS_GRID], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size,align_corners", [([2, 3, 4, 5], False), ([2, 1, 3, 1], True), ([2, 2, 3, 4, 2], True),
                                                ([2, 2, 3, 4, 2], False)])
def test_affine_grid_vs_torch(size, align_corners, device):
    theta = rnd(2, len(size) - 2, len(size) - 1, seed=4)
    compare(lambda t: F.affine_grid(t, size, align_corners), lambda t: TF.affine_grid(t, size, align_corners),
            [theta], device)


def test_grid_sample_and_affine_grid_float64_finite_differences():
    check_fd(lambda x, g: F.grid_sample(x, g, align_corners=False), [GS_INPUT[:1, :2], GS_GRID[:1]])
    check_fd(lambda x, g: F.grid_sample(x, g, padding_mode="border", align_corners=True),
             [GS_INPUT[:1, :1], GS_GRID[:1]])
    theta = rnd(1, 2, 3, seed=5) * 0.5
    check_fd(lambda t: F.grid_sample(vk.tensor(GS_INPUT[:1]), F.affine_grid(t, [1, 3, 4, 3], False), align_corners=False),
             [theta])


GRID_ERRORS = [
    ("mode", lambda m: m.nn.functional.grid_sample(m.zeros(1, 1, 2, 2), m.zeros(1, 2, 2, 2), mode="cubic",
                                                     align_corners=False)),
    ("padding_mode", lambda m: m.nn.functional.grid_sample(m.zeros(1, 1, 2, 2), m.zeros(1, 2, 2, 2),
                                                             padding_mode="wrap", align_corners=False)),
    ("theta shape", lambda m: m.nn.functional.affine_grid(m.zeros(1, 3, 3), [1, 1, 2, 2], False)),
    ("size rank", lambda m: m.nn.functional.affine_grid(m.zeros(1, 2, 3), [1, 1, 2], False)),
    ("size zero", lambda m: m.nn.functional.affine_grid(m.zeros(1, 2, 3), [1, 1, 0, 2], False)),
]


@pytest.mark.parametrize("case", GRID_ERRORS, ids=[c[0] for c in GRID_ERRORS])
def test_grid_errors_are_torchs_types(case):
    with pytest.raises(Exception) as te:
        case[1](torch)
    with pytest.raises(te.type):
        case[1](vk)


def test_grid_sample_unsupported_modes_say_so():
    x, g = vk.zeros(1, 1, 2, 2), vk.zeros(1, 2, 2, 2)
    for kw in (dict(mode="bicubic"), dict(padding_mode="reflection")):
        with pytest.raises(NotImplementedError, match="not supported yet"):
            F.grid_sample(x, g, align_corners=False, **kw)
