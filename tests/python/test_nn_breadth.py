"""Issue #16's nn breadth: activations, losses and layers (F function and module each) against torch
2.x: forward, gradients of inputs and parameters in float32 and float64, second derivatives on a subset,
state_dict keys and torch checkpoints, torch's error types, and a subset on the Vulkan device."""

import os

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import nn
from vkml.nn import functional as F

from conftest import to_np

TOLS = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=3e-4, atol=3e-5)}
TDT = {"float64": torch.float64, "float32": torch.float32}
VDT = {"float64": vk.float64, "float32": vk.float32}
TN = torch.nn
TF = torch.nn.functional


def close(a, b, dt, what="", loose=False):
    tol = TOLS["float32"] if loose else TOLS[dt]
    a, b = (v if isinstance(v, np.ndarray) else to_np(v) for v in (a, b))
    np.testing.assert_allclose(a, b, err_msg=what, equal_nan=True, **tol)


def pair(arrays, dt, grads, device=None):
    """vkml and torch tensors of the same values; grads[i] says whether array i requires grad."""
    vs, ts = [], []
    for a, g in zip(arrays, grads):
        a = np.asarray(a)
        if np.issubdtype(a.dtype, np.floating):
            v = vk.tensor(a, dtype=VDT[dt])
            if device is not None:
                v = v.to(device)
            vs.append(v.requires_grad_() if g else v)
            ts.append(torch.tensor(a, dtype=TDT[dt], requires_grad=g))
        else:
            v = vk.tensor(a)
            vs.append(v.to(device) if device is not None else v)
            ts.append(torch.tensor(a))
    return vs, ts


def check(vfn, tfn, arrays, dt, grads=None, device=None, seed=1, loose=False):
    """Compares vfn(*vkml) with tfn(*torch): the value and every requested input gradient."""
    grads = grads if grads is not None else [np.issubdtype(np.asarray(a).dtype, np.floating) for a in arrays]
    vs, ts = pair(arrays, dt, grads, device)
    yv, yt = vfn(*vs), tfn(*ts)
    close(yv, yt, dt, "forward", loose)
    if not any(grads):
        return
    up = np.random.default_rng(seed).uniform(-1, 1, size=tuple(yt.shape))
    upv = vk.tensor(up, dtype=VDT[dt])
    yv.backward(upv.to(device) if device is not None else upv)
    yt.backward(torch.tensor(up, dtype=TDT[dt]))
    for i, (v, t, g) in enumerate(zip(vs, ts, grads)):
        if g:
            assert v.grad is not None, f"input {i} got no gradient"
            close(v.grad, t.grad, dt, f"gradient of input {i}", loose)


def rnd(*shape, seed=0, lo=None, hi=None):
    rng = np.random.default_rng(seed)
    if lo is not None:
        return rng.uniform(lo, hi, size=shape)
    return rng.standard_normal(shape)


DTS = ["float64", "float32"]

# ======================= activations =======================

# (name, vk function, torch function); inputs avoid the kinks (|x| and x +- 3 not near the breaks).
ACTS = [
    ("mish", F.mish, TF.mish),
    ("hardswish", F.hardswish, TF.hardswish),
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid),
    ("hardtanh", F.hardtanh, TF.hardtanh),
    ("hardtanh_args", lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: TF.hardtanh(x, -0.5, 2.0)),
    ("relu6", F.relu6, TF.relu6),
    ("leaky_relu", F.leaky_relu, TF.leaky_relu),
    ("leaky_relu_02", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
    ("elu", F.elu, TF.elu),
    ("elu_a", lambda x: F.elu(x, 0.7), lambda x: TF.elu(x, 0.7)),
    ("selu", F.selu, TF.selu),
    ("celu", lambda x: F.celu(x, 1.3), lambda x: TF.celu(x, 1.3)),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
    ("silu", F.silu, TF.silu),
    ("softplus", F.softplus, TF.softplus),
    ("softplus_beta", lambda x: F.softplus(x, 2.0, 3.0), lambda x: TF.softplus(x, 2.0, 3.0)),
    ("softsign", F.softsign, TF.softsign),
    ("tanhshrink", F.tanhshrink, TF.tanhshrink),
    ("threshold", lambda x: F.threshold(x, 0.3, -2.0), lambda x: TF.threshold(x, 0.3, -2.0)),
    ("glu", F.glu, TF.glu),
    ("glu0", lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0)),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid),
    ("softmin", lambda x: F.softmin(x, -1), lambda x: TF.softmin(x, -1)),
    ("hardshrink", F.hardshrink, TF.hardshrink),
    ("softshrink", lambda x: F.softshrink(x, 0.3), lambda x: TF.softshrink(x, 0.3)),
    ("normalize", F.normalize, TF.normalize),
    ("normalize_p1", lambda x: F.normalize(x, 1.0, -1), lambda x: TF.normalize(x, 1.0, -1)),
]
SHAPES = [(4, 6), (2, 3, 4), (6,)]


# torch computes these gradients with float constants even in float64 (1/6 and 1/alpha rounded to
# float): vkml's exact values differ from torch's by ~3e-8 relative there
TORCH_FLOAT_CONSTANTS = ("hardsigmoid", "celu", "Hardsigmoid", "CELU")


def act_input(shape, seed=0):
    x = np.array(rnd(*shape, seed=seed) * 3.0).reshape(shape)
    # keep away from the kinks at 0, +-0.3, +-0.5, +-1, +-3, 6 (a gradient there is a convention)
    for k in (0.0, 0.3, 0.5, 1.0, 3.0, 6.0):
        for s in (1, -1):
            near = np.abs(x - s * k) < 0.02
            x[near] += 0.05
    return x


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name,vf,tf", ACTS, ids=[a[0] for a in ACTS])
def test_activation_vs_torch(name, vf, tf, shape, dt):
    if name == "glu0" and shape[0] % 2 or name.startswith("normalize") and len(shape) == 1 and "p1" not in name:
        for f, t in ((vf, vk.tensor(act_input(shape))), (tf, torch.tensor(act_input(shape)))):
            with pytest.raises((RuntimeError, IndexError)):  # odd halving dim; dim 1 of a 1-D input
                f(t)
        return
    check(vf, tf, [act_input(shape)], dt, loose=name in TORCH_FLOAT_CONSTANTS)


def test_activation_extremes_stay_finite():
    x = np.array([-1e4, -60.0, -20.0, 0.0, 20.0, 60.0, 1e4])
    for name, vf, tf in ACTS:
        if name.startswith("glu") or name.startswith("normalize") or name == "softmin":
            continue
        check(vf, tf, [x], "float64", loose=name in TORCH_FLOAT_CONSTANTS)


ACT_MODULES = [
    ("Mish", (), {}), ("Hardswish", (), {}), ("Hardsigmoid", (), {}), ("Hardtanh", (-2.0, 1.5), {}),
    ("ReLU6", (), {}), ("LeakyReLU", (0.1,), {}), ("ELU", (), {"alpha": 0.5}), ("SELU", (), {}),
    ("CELU", (2.0,), {}), ("GELU", (), {"approximate": "tanh"}), ("Softplus", (), {"beta": 0.5, "threshold": 10}),
    ("Softsign", (), {}), ("Tanhshrink", (), {}), ("Threshold", (0.1, 20.0), {}), ("GLU", (), {"dim": 1}),
    ("LogSigmoid", (), {}), ("Softmin", (), {"dim": 1}), ("Softmax", (), {"dim": 1}), ("LogSoftmax", (), {"dim": 0}),
    ("Softmax2d", (), {}), ("Hardshrink", (), {}), ("Softshrink", (0.7,), {}), ("SiLU", (), {}),
    ("ReLU", (), {}),
]


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("name,args,kwargs", ACT_MODULES, ids=[a[0] for a in ACT_MODULES])
def test_activation_module_vs_torch(name, args, kwargs, dt):
    vm, tm = getattr(nn, name)(*args, **kwargs), getattr(TN, name)(*args, **kwargs)
    assert repr(vm) == repr(tm)
    check(vm, tm, [act_input((2, 4, 3, 2))], dt, loose=name in TORCH_FLOAT_CONSTANTS)


@pytest.mark.parametrize("name", ["ReLU", "ReLU6", "Hardtanh", "LeakyReLU", "ELU", "SELU", "CELU", "Mish",
                                  "Hardswish", "Hardsigmoid", "SiLU"])
def test_activation_inplace_writes_the_input(name):
    x0 = act_input((3, 4))
    xv, xt = vk.tensor(x0), torch.tensor(x0)
    vm, tm = getattr(nn, name)(inplace=True), getattr(TN, name)(inplace=True)
    assert repr(vm) == repr(tm)
    yv, yt = vm(xv), tm(xt)
    close(yv, yt, "float64")
    close(xv, xt, "float64", "the input holds the result")


@pytest.mark.parametrize("name", ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "Hardswish", "SiLU", "Mish"])
def test_inplace_layers_inside_a_model_train_as_torch(name):
    """inplace=True inside a network (torchvision's habit): the gradients equal torch's."""
    torch.manual_seed(0)
    tm = TN.Sequential(TN.Linear(4, 6), getattr(TN, name)(inplace=True), TN.Linear(6, 2)).double()
    vm = nn.Sequential(nn.Linear(4, 6), getattr(nn, name)(inplace=True), nn.Linear(6, 2)).double()
    load_torch_state(vm, tm)
    x = rnd(5, 4)
    yv, yt = vm(vk.tensor(x)), tm(torch.tensor(x))
    close(yv, yt, "float64")
    yv.sum().backward()
    yt.sum().backward()
    for (n, pv), (_, pt) in zip(vm.named_parameters(), tm.named_parameters()):
        close(pv.grad, pt.grad, "float64", n)
    with pytest.raises(RuntimeError):  # the explicit in-place function on a leaf that requires grad
        F.elu_(vk.tensor(x, requires_grad=True))


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("num,shape", [(1, (3, 4)), (4, (2, 4, 3)), (4, (2, 4, 3, 2)), (1, (5,)), (1, ())],
                         ids=str)
def test_prelu_input_and_weight_grads(num, shape, dt):
    vm, tm = nn.PReLU(num, init=0.3).to(VDT[dt]), TN.PReLU(num, init=0.3).to(TDT[dt])
    assert list(vm.state_dict()) == list(tm.state_dict()) == ["weight"]
    w = rnd(num, seed=3)
    vm.load_state_dict({"weight": vk.tensor(w, dtype=VDT[dt])})
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
    check(vm, tm, [act_input(shape)], dt)
    # the weight's gradient: a second run with a fresh graph
    x = act_input(shape, seed=2)
    yv, yt = vm(vk.tensor(x, dtype=VDT[dt])), tm(torch.tensor(x, dtype=TDT[dt]))
    yv.sum().backward()
    yt.sum().backward()
    close(vm.weight.grad, tm.weight.grad, dt, "weight gradient")
    assert repr(vm) == repr(tm)


@pytest.mark.parametrize("name,vf,tf", [a for a in ACTS if a[0] in (
    "mish", "elu", "selu", "celu", "softplus", "softsign", "logsigmoid", "glu", "leaky_relu", "hardswish",
    "normalize", "tanhshrink")], ids=lambda a: a if isinstance(a, str) else "")
def test_activation_second_order(name, vf, tf):
    x0 = act_input((4, 6), seed=5)
    xv = vk.tensor(x0, requires_grad=True)
    xt = torch.tensor(x0, requires_grad=True)
    up = rnd(4, 6, seed=6) if name != "glu" else rnd(4, 3, seed=6)
    (gv,) = vk.autograd.grad((vf(xv) * vk.tensor(up)).sum(), [xv], create_graph=True)
    (gt,) = torch.autograd.grad((tf(xt) * torch.tensor(up)).sum(), [xt], create_graph=True)
    close(gv, gt, "float64", "first derivative", loose=name in TORCH_FLOAT_CONSTANTS)
    w = rnd(4, 6, seed=7)
    second_order(gv, gt, xv, xt, w, loose=name in TORCH_FLOAT_CONSTANTS)


def second_order(gv, gt, xv, xt, w, loose=False):
    """d/dx sum(g * w) in both; a derivative that is zero (piecewise-linear pieces) is None."""
    # a first derivative that is constant has no graph (vkml) or a zero second derivative
    hv = vk.autograd.grad((gv * vk.tensor(w)).sum(), [xv], allow_unused=True)[0] if gv.requires_grad else None
    ht = torch.autograd.grad((gt * torch.tensor(w)).sum(), [xt], allow_unused=True)[0] if gt.requires_grad else None
    hv = np.zeros(w.shape) if hv is None else to_np(hv)
    ht = np.zeros(w.shape) if ht is None else to_np(ht)
    close(hv, ht, "float64", "second derivative", loose)


# ======================= losses =======================

def _probs(*shape, seed=0):
    return rnd(*shape, seed=seed, lo=0.05, hi=0.95)


def _sign(*shape, seed=0):
    return np.where(np.random.default_rng(seed).uniform(size=shape) > 0.5, 1.0, -1.0)


def _cls(n, c, seed=0, extra=()):
    return np.random.default_rng(seed).integers(0, c, size=(n, *extra)).astype(np.int64)


# (name, vk fn(args, reduction), torch fn, arrays builder): arrays are float (grad) or int (no grad)
LOSSES = [
    ("l1", lambda r: lambda a, b: F.l1_loss(a, b, reduction=r), lambda r: lambda a, b: TF.l1_loss(a, b, reduction=r),
     lambda: [rnd(3, 4), rnd(3, 4, seed=1)]),
    ("nll", lambda r: lambda a, t: F.nll_loss(a, t, reduction=r), lambda r: lambda a, t: TF.nll_loss(a, t, reduction=r),
     lambda: [np.log(_probs(5, 4)), _cls(5, 4)]),
    ("nll_weight_ignore", lambda r: lambda a, w, t: F.nll_loss(a, t, w, ignore_index=1, reduction=r),
     lambda r: lambda a, w, t: TF.nll_loss(a, t, w, ignore_index=1, reduction=r),
     lambda: [np.log(_probs(6, 3, 2)), _probs(3, seed=2), _cls(6, 3, extra=(2,))]),
    ("bce", lambda r: lambda p, y: F.binary_cross_entropy(p, y, reduction=r),
     lambda r: lambda p, y: TF.binary_cross_entropy(p, y, reduction=r), lambda: [_probs(4, 3), _probs(4, 3, seed=1)]),
    ("bce_weight", lambda r: lambda p, y, w: F.binary_cross_entropy(p, y, w, reduction=r),
     lambda r: lambda p, y, w: TF.binary_cross_entropy(p, y, w, reduction=r),
     lambda: [_probs(4, 3), _probs(4, 3, seed=1), _probs(3, seed=2)]),
    ("bce_logits", lambda r: lambda x, y, w, pw: F.binary_cross_entropy_with_logits(x, y, w, reduction=r,
                                                                                      pos_weight=pw),
     lambda r: lambda x, y, w, pw: TF.binary_cross_entropy_with_logits(x, y, w, reduction=r, pos_weight=pw),
     lambda: [rnd(4, 3) * 3, _probs(4, 3, seed=1), _probs(4, 3, seed=2), _probs(3, seed=3) * 3]),
    ("kl_div", lambda r: lambda x, t: F.kl_div(x, t, reduction=r), lambda r: lambda x, t: TF.kl_div(x, t, reduction=r),
     lambda: [np.log(_probs(3, 5)), np.concatenate([_probs(2, 5, seed=1), np.zeros((1, 5))])]),
    ("kl_div_log_target", lambda r: lambda x, t: F.kl_div(x, t, reduction=r, log_target=True),
     lambda r: lambda x, t: TF.kl_div(x, t, reduction=r, log_target=True),
     lambda: [np.log(_probs(3, 5)), np.log(_probs(3, 5, seed=1))]),
    ("smooth_l1", lambda r: lambda a, b: F.smooth_l1_loss(a, b, reduction=r, beta=0.5),
     lambda r: lambda a, b: TF.smooth_l1_loss(a, b, reduction=r, beta=0.5), lambda: [rnd(4, 5), rnd(4, 5, seed=1)]),
    ("smooth_l1_beta0", lambda r: lambda a, b: F.smooth_l1_loss(a, b, reduction=r, beta=0.0),
     lambda r: lambda a, b: TF.smooth_l1_loss(a, b, reduction=r, beta=0.0), lambda: [rnd(4, 5), rnd(4, 5, seed=1)]),
    ("huber", lambda r: lambda a, b: F.huber_loss(a, b, reduction=r, delta=0.7),
     lambda r: lambda a, b: TF.huber_loss(a, b, reduction=r, delta=0.7), lambda: [rnd(4, 5), rnd(4, 5, seed=1)]),
    ("margin_ranking", lambda r: lambda a, b, y: F.margin_ranking_loss(a, b, y, 0.2, reduction=r),
     lambda r: lambda a, b, y: TF.margin_ranking_loss(a, b, y, 0.2, reduction=r),
     lambda: [rnd(7), rnd(7, seed=1), _sign(7)]),
    ("hinge_embedding", lambda r: lambda x, y: F.hinge_embedding_loss(x, y, 0.8, reduction=r),
     lambda r: lambda x, y: TF.hinge_embedding_loss(x, y, 0.8, reduction=r), lambda: [rnd(4, 5), _sign(4, 5)]),
    ("cosine_embedding", lambda r: lambda a, b, y: F.cosine_embedding_loss(a, b, y, 0.1, reduction=r),
     lambda r: lambda a, b, y: TF.cosine_embedding_loss(a, b, y, 0.1, reduction=r),
     lambda: [rnd(6, 4), rnd(6, 4, seed=1), _sign(6)]),
    ("triplet", lambda r: lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction=r),
     lambda r: lambda a, p, n: TF.triplet_margin_loss(a, p, n, reduction=r),
     lambda: [rnd(5, 4), rnd(5, 4, seed=1) * 0.5, rnd(5, 4, seed=2)]),
    ("triplet_p1_swap", lambda r: lambda a, p, n: F.triplet_margin_loss(a, p, n, 2.0, 1, swap=True, reduction=r),
     lambda r: lambda a, p, n: TF.triplet_margin_loss(a, p, n, 2.0, 1, swap=True, reduction=r),
     lambda: [rnd(5, 4), rnd(5, 4, seed=1), rnd(5, 4, seed=2)]),
    ("poisson", lambda r: lambda x, t: F.poisson_nll_loss(x, t, reduction=r),
     lambda r: lambda x, t: TF.poisson_nll_loss(x, t, reduction=r), lambda: [rnd(4, 3), rnd(4, 3, seed=1, lo=0, hi=4)]),
    ("poisson_full_rate", lambda r: lambda x, t: F.poisson_nll_loss(x, t, False, True, reduction=r),
     lambda r: lambda x, t: TF.poisson_nll_loss(x, t, False, True, reduction=r),
     lambda: [rnd(4, 3, lo=0.1, hi=3), rnd(4, 3, seed=1, lo=0, hi=4)]),
    ("gaussian", lambda r: lambda x, t, v: F.gaussian_nll_loss(x, t, v, reduction=r),
     lambda r: lambda x, t, v: TF.gaussian_nll_loss(x, t, v, reduction=r),
     lambda: [rnd(4, 3), rnd(4, 3, seed=1), rnd(4, 3, seed=2, lo=0.1, hi=2)]),
    ("gaussian_homo_full", lambda r: lambda x, t, v: F.gaussian_nll_loss(x, t, v, full=True, reduction=r),
     lambda r: lambda x, t, v: TF.gaussian_nll_loss(x, t, v, full=True, reduction=r),
     lambda: [rnd(4, 3), rnd(4, 3, seed=1), rnd(4, seed=2, lo=0.1, hi=2)]),
    ("gaussian_clamped", lambda r: lambda x, t, v: F.gaussian_nll_loss(x, t, v, eps=0.5, reduction=r),
     lambda r: lambda x, t, v: TF.gaussian_nll_loss(x, t, v, eps=0.5, reduction=r),
     lambda: [rnd(4, 3), rnd(4, 3, seed=1), rnd(4, 1, seed=2, lo=0.1, hi=2)]),
    ("multilabel_soft_margin", lambda r: lambda x, y, w: F.multilabel_soft_margin_loss(x, y, w, reduction=r),
     lambda r: lambda x, y, w: TF.multilabel_soft_margin_loss(x, y, w, reduction=r),
     lambda: [rnd(4, 5) * 3, (rnd(4, 5, seed=1) > 0).astype(float), _probs(5, seed=2)]),
    ("soft_margin", lambda r: lambda x, y: F.soft_margin_loss(x, y, reduction=r),
     lambda r: lambda x, y: TF.soft_margin_loss(x, y, reduction=r), lambda: [rnd(4, 5) * 3, _sign(4, 5)]),
    ("ce_label_smoothing", lambda r: lambda x, w, t: F.cross_entropy(x, t, w, reduction=r, label_smoothing=0.2),
     lambda r: lambda x, w, t: TF.cross_entropy(x, t, w, reduction=r, label_smoothing=0.2),
     lambda: [rnd(5, 4), _probs(4, seed=2), _cls(5, 4)]),
    ("ce_probs", lambda r: lambda x, p: F.cross_entropy(x, p, reduction=r, label_smoothing=0.1),
     lambda r: lambda x, p: TF.cross_entropy(x, p, reduction=r, label_smoothing=0.1),
     lambda: [rnd(5, 4, 2), _probs(5, 4, 2, seed=1)]),
]
REDUCTIONS = ["none", "mean", "sum"]
# how many leading arrays are differentiable inputs (the rest: targets and weights, as torch)
NGRAD = {"l1": 2, "kl_div_log_target": 2, "smooth_l1": 2, "smooth_l1_beta0": 2, "huber": 2, "margin_ranking": 2,
         "cosine_embedding": 2, "triplet": 3, "triplet_p1_swap": 3, "poisson": 2, "poisson_full_rate": 2,
         "gaussian": 3, "gaussian_homo_full": 3, "gaussian_clamped": 3, "bce_logits": 2}


def loss_grads(name, arrays):
    return [i < NGRAD.get(name, 1) for i in range(len(arrays))]


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,vf,tf,build", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_vs_torch(name, vf, tf, build, reduction, dt):
    arrays = build()
    check(vf(reduction), tf(reduction), arrays, dt, grads=loss_grads(name, arrays))


def test_kl_div_batchmean_and_legacy_reduction_args():
    x, t = np.log(_probs(3, 5)), _probs(3, 5, seed=1)
    check(lambda a, b: F.kl_div(a, b, reduction="batchmean"), lambda a, b: TF.kl_div(a, b, reduction="batchmean"),
          [x, t], "float64")
    for sa, red in [(False, None), (None, False), (True, True)]:
        check(lambda a, b: F.smooth_l1_loss(a, b, size_average=sa, reduce=red),
              lambda a, b: TF.smooth_l1_loss(a, b, size_average=sa, reduce=red), [x, t], "float64")


LOSS_MODULES = [
    ("L1Loss", {}, lambda: [rnd(3, 4), rnd(3, 4, seed=1)]),
    ("NLLLoss", {"ignore_index": 0}, lambda: [np.log(_probs(5, 4)), _cls(5, 4)]),
    ("BCELoss", {}, lambda: [_probs(4, 3), _probs(4, 3, seed=1)]),
    ("BCEWithLogitsLoss", {}, lambda: [rnd(4, 3), _probs(4, 3, seed=1)]),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, lambda: [rnd(3, 4), rnd(3, 4, seed=1)]),
    ("SmoothL1Loss", {"beta": 2.0}, lambda: [rnd(3, 4) * 3, rnd(3, 4, seed=1)]),
    ("HuberLoss", {"delta": 0.5, "reduction": "sum"}, lambda: [rnd(3, 4), rnd(3, 4, seed=1)]),
    ("MarginRankingLoss", {"margin": 0.5}, lambda: [rnd(6), rnd(6, seed=1), _sign(6)]),
    ("HingeEmbeddingLoss", {}, lambda: [rnd(3, 4), _sign(3, 4)]),
    ("CosineEmbeddingLoss", {"margin": -0.2}, lambda: [rnd(4, 5), rnd(4, 5, seed=1), _sign(4)]),
    ("TripletMarginLoss", {"margin": 0.5, "swap": True}, lambda: [rnd(4, 5), rnd(4, 5, seed=1), rnd(4, 5, seed=2)]),
    ("PoissonNLLLoss", {"full": True}, lambda: [rnd(4, 3), rnd(4, 3, seed=1, lo=0, hi=4)]),
    ("GaussianNLLLoss", {"full": True}, lambda: [rnd(4, 3), rnd(4, 3, seed=1), rnd(4, 3, seed=2, lo=0.1, hi=2)]),
    ("MultiLabelSoftMarginLoss", {}, lambda: [rnd(4, 5), (rnd(4, 5, seed=1) > 0).astype(float)]),
    ("SoftMarginLoss", {"reduction": "none"}, lambda: [rnd(4, 5), _sign(4, 5)]),
    ("CrossEntropyLoss", {"label_smoothing": 0.3}, lambda: [rnd(5, 3), _cls(5, 3)]),
    ("MSELoss", {}, lambda: [rnd(3, 4), rnd(3, 4, seed=1)]),
]


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("name,kwargs,build", LOSS_MODULES, ids=[c[0] for c in LOSS_MODULES])
def test_loss_module_vs_torch(name, kwargs, build, dt):
    vm, tm = getattr(nn, name)(**kwargs), getattr(TN, name)(**kwargs)
    assert list(vm.state_dict()) == list(tm.state_dict())
    arrays = build()
    ngrad = {"MarginRankingLoss": 2, "CosineEmbeddingLoss": 2, "TripletMarginLoss": 3, "GaussianNLLLoss": 3}
    check(vm, tm, arrays, dt, grads=[i < ngrad.get(name, 1) for i in range(len(arrays))])


def test_loss_module_weight_buffers_are_state():
    w = np.array([0.2, 1.0, 3.0])
    vm = nn.NLLLoss(weight=vk.tensor(w))
    tm = TN.NLLLoss(weight=torch.tensor(w))
    assert list(vm.state_dict()) == list(tm.state_dict()) == ["weight"]
    vm = nn.BCEWithLogitsLoss(pos_weight=vk.tensor(w))
    tm = TN.BCEWithLogitsLoss(pos_weight=torch.tensor(w))
    assert list(vm.state_dict()) == list(tm.state_dict())
    check(vm, tm, [rnd(4, 3), _probs(4, 3)], "float64", grads=[True, False])


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("shapes,kw", [(((4, 5), (4, 5)), {}), (((3, 4, 5), (4, 5)), {"dim": -1}),
                                       (((2, 6), (1, 6)), {"dim": 1, "eps": 1e-3}), (((5,), (5,)), {"dim": 0})],
                         ids=str)
def test_cosine_similarity_vs_torch(shapes, kw, dt):
    arrays = [rnd(*s, seed=i) for i, s in enumerate(shapes)]
    check(lambda a, b: F.cosine_similarity(a, b, **kw), lambda a, b: TF.cosine_similarity(a, b, **kw), arrays, dt)
    vm, tm = nn.CosineSimilarity(**kw), TN.CosineSimilarity(**kw)
    check(vm, tm, arrays, dt)


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("shapes,keepdim", [(((4, 5), (4, 5)), False), (((3, 4, 5), (4, 5)), True),
                                            (((5,), (5,)), False), (((5,), (5,)), True)], ids=str)
def test_pairwise_distance_vs_torch(shapes, keepdim, p, dt):
    arrays = [rnd(*s, seed=i) for i, s in enumerate(shapes)]
    check(lambda a, b: F.pairwise_distance(a, b, p, keepdim=keepdim),
          lambda a, b: TF.pairwise_distance(a, b, p, keepdim=keepdim), arrays, dt)
    check(nn.PairwiseDistance(p, keepdim=keepdim), TN.PairwiseDistance(p, keepdim=keepdim), arrays, dt)


@pytest.mark.parametrize("name", ["kl_div", "huber", "triplet", "cosine_embedding", "gaussian", "poisson",
                                  "multilabel_soft_margin", "soft_margin", "bce_logits"])
def test_loss_second_order(name):
    _, vf, tf, build = next(c for c in LOSSES if c[0] == name)
    arrays = build()
    vs, ts = pair(arrays, "float64", [i == 0 for i in range(len(arrays))])
    xv, xt = vs[0], ts[0]
    (gv,) = vk.autograd.grad(vf("sum")(*vs), [xv], create_graph=True)
    (gt,) = torch.autograd.grad(tf("sum")(*ts), [xt], create_graph=True)
    close(gv, gt, "float64", "first derivative")
    second_order(gv, gt, xv, xt, rnd(*xt.shape, seed=9))


# ======================= layers =======================

def load_torch_state(vm, tm):
    """Copies torch's state_dict into the vkml module (through numpy), as a ported checkpoint."""
    assert list(vm.state_dict()) == list(tm.state_dict()), "state_dict keys differ from torch's"
    missing = vm.load_state_dict({k: vk.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert not missing.missing_keys and not missing.unexpected_keys


LAYERS = [
    ("groupnorm", lambda m: m.GroupNorm(2, 6), (3, 6, 4, 2)),
    ("groupnorm_3d", lambda m: m.GroupNorm(3, 6, affine=True), (2, 6, 5)),
    ("groupnorm_noaffine", lambda m: m.GroupNorm(1, 4, affine=False), (2, 4, 3)),
    ("instancenorm1d", lambda m: m.InstanceNorm1d(3), (2, 3, 5)),
    ("instancenorm1d_unbatched", lambda m: m.InstanceNorm1d(3, affine=True), (3, 5)),
    ("instancenorm2d_affine", lambda m: m.InstanceNorm2d(4, affine=True), (2, 4, 3, 3)),
    ("instancenorm2d_track", lambda m: m.InstanceNorm2d(4, affine=True, track_running_stats=True), (2, 4, 3, 3)),
    ("layernorm_nobias", lambda m: m.LayerNorm(5, bias=False), (3, 5)),
    ("rmsnorm", lambda m: m.RMSNorm(5), (3, 5)),
    ("rmsnorm_2d_eps", lambda m: m.RMSNorm((2, 5), eps=1e-3), (3, 2, 5)),
    ("rmsnorm_noaffine", lambda m: m.RMSNorm(4, elementwise_affine=False), (2, 3, 4)),
    ("conv1d", lambda m: m.Conv1d(3, 4, 3), (2, 3, 9)),
    ("conv1d_args", lambda m: m.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2), (2, 4, 11)),
    ("conv1d_unbatched", lambda m: m.Conv1d(2, 3, 2, bias=False), (2, 7)),
    ("conv1d_same", lambda m: m.Conv1d(2, 3, 4, padding="same", dilation=1), (2, 2, 8)),
    ("conv1d_same_dil", lambda m: m.Conv1d(2, 3, 3, padding="same", dilation=3), (2, 2, 8)),
    ("conv1d_valid", lambda m: m.Conv1d(2, 3, 3, padding="valid"), (2, 2, 8)),
    ("conv1d_reflect", lambda m: m.Conv1d(2, 3, 3, padding=2, padding_mode="reflect"), (2, 2, 8)),
    ("conv1d_circular", lambda m: m.Conv1d(2, 3, 3, padding=1, padding_mode="circular"), (2, 2, 8)),
    ("conv2d_same", lambda m: m.Conv2d(2, 3, (2, 3), padding="same"), (2, 2, 5, 6)),
    ("conv2d_replicate", lambda m: m.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="replicate"), (2, 2, 5, 6)),
    ("maxpool1d", lambda m: m.MaxPool1d(3, 2, 1), (2, 3, 9)),
    ("maxpool1d_unbatched", lambda m: m.MaxPool1d(2), (3, 8)),
    ("avgpool1d", lambda m: m.AvgPool1d(3, 2, 1), (2, 3, 9)),
    ("adaptive_avg1d", lambda m: m.AdaptiveAvgPool1d(4), (2, 3, 10)),
    ("adaptive_avg1d_up", lambda m: m.AdaptiveAvgPool1d(7), (2, 3, 5)),
    ("adaptive_avg2d", lambda m: m.AdaptiveAvgPool2d((3, 5)), (2, 3, 7, 11)),
    ("adaptive_avg2d_none", lambda m: m.AdaptiveAvgPool2d((None, 2)), (3, 7, 5)),
    ("adaptive_avg2d_1", lambda m: m.AdaptiveAvgPool2d(1), (2, 4, 3, 3)),
    ("adaptive_max1d", lambda m: m.AdaptiveMaxPool1d(4), (2, 3, 10)),
    ("adaptive_max1d_up", lambda m: m.AdaptiveMaxPool1d(7), (2, 3, 5)),
    ("adaptive_max2d", lambda m: m.AdaptiveMaxPool2d((3, 5)), (2, 3, 7, 11)),
    ("adaptive_max2d_none", lambda m: m.AdaptiveMaxPool2d((None, 2)), (3, 7, 5)),
    ("adaptive_max2d_1", lambda m: m.AdaptiveMaxPool2d(1), (2, 4, 3, 3)),
    ("upsample_nearest", lambda m: m.Upsample(scale_factor=2), (1, 2, 3, 4)),
    ("upsample_nearest_size", lambda m: m.Upsample(size=(5, 7)), (1, 2, 3, 4)),
    ("upsample_nearest_exact", lambda m: m.Upsample(size=(5, 3), mode="nearest-exact"), (1, 2, 3, 4)),
    ("upsample_bilinear", lambda m: m.Upsample(scale_factor=1.7, mode="bilinear"), (2, 2, 3, 4)),
    ("upsample_bilinear_ac", lambda m: m.Upsample(size=(5, 9), mode="bilinear", align_corners=True), (2, 2, 3, 4)),
    ("upsample_bilinear_down", lambda m: m.Upsample(size=(2, 3), mode="bilinear"), (2, 2, 5, 7)),
    ("upsample_linear", lambda m: m.Upsample(scale_factor=3, mode="linear"), (2, 2, 4)),
    ("upsample_linear_ac", lambda m: m.Upsample(size=7, mode="linear", align_corners=True), (2, 2, 4)),
    ("upsampling_bilinear2d", lambda m: m.UpsamplingBilinear2d(scale_factor=2), (1, 2, 3, 3)),
    ("upsampling_nearest2d", lambda m: m.UpsamplingNearest2d(size=(4, 5)), (1, 2, 3, 3)),
    ("pixel_shuffle", lambda m: m.PixelShuffle(2), (2, 8, 3, 2)),
    ("pixel_shuffle_5d", lambda m: m.PixelShuffle(3), (2, 2, 9, 2, 1)),
    ("pixel_unshuffle", lambda m: m.PixelUnshuffle(2), (2, 2, 4, 6)),
    ("zeropad1d", lambda m: m.ZeroPad1d((1, 2)), (2, 3, 4)),
    ("zeropad2d", lambda m: m.ZeroPad2d(2), (2, 3, 4)),
    ("constpad1d", lambda m: m.ConstantPad1d(2, 3.5), (2, 4)),
    ("constpad2d", lambda m: m.ConstantPad2d((1, 0, 2, 1), -1.0), (1, 2, 3, 4)),
    ("reflpad1d", lambda m: m.ReflectionPad1d((2, 3)), (2, 3, 5)),
    ("reflpad2d", lambda m: m.ReflectionPad2d((1, 2, 2, 0)), (1, 2, 3, 4)),
    ("replpad1d", lambda m: m.ReplicationPad1d(3), (2, 2, 4)),
    ("replpad2d", lambda m: m.ReplicationPad2d((0, 3, 1, 2)), (2, 3, 4)),
    ("circpad1d", lambda m: m.CircularPad1d((1, 3)), (2, 2, 4)),
    ("circpad2d", lambda m: m.CircularPad2d(1), (1, 2, 3, 4)),
    ("flatten", lambda m: m.Flatten(0, 1), (2, 3, 4)),
    ("unflatten", lambda m: m.Unflatten(1, (2, 3)), (4, 6, 2)),
    ("unflatten_neg", lambda m: m.Unflatten(-1, (2, -1)), (4, 6)),
    ("identity", lambda m: m.Identity(), (3, 4)),
    ("unfold", lambda m: m.Unfold(2, padding=1, stride=2), (2, 3, 4, 5)),
    ("fold", lambda m: m.Fold((4, 5), 2, stride=1), (2, 12, 12)),
]


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("name,make,shape", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_vs_torch(name, make, shape, dt):
    torch.manual_seed(0)
    tm = make(TN).to(TDT[dt])
    vm = make(nn).to(VDT[dt])
    # parameters: random values (not the defaults) so a swapped weight and bias would show
    with torch.no_grad():
        for i, p in enumerate(tm.parameters()):
            p.copy_(torch.tensor(rnd(*p.shape, seed=10 + i)))
    load_torch_state(vm, tm)
    assert repr(vm) == repr(tm)
    vm.train(), tm.train()
    x0 = rnd(*shape)
    xv = vk.tensor(x0, dtype=VDT[dt], requires_grad=True)
    xt = torch.tensor(x0, dtype=TDT[dt], requires_grad=True)
    yv, yt = vm(xv), tm(xt)
    close(yv, yt, dt, "forward")
    up = rnd(*yt.shape, seed=3)
    yv.backward(vk.tensor(up, dtype=VDT[dt]))
    yt.backward(torch.tensor(up, dtype=TDT[dt]))
    close(xv.grad, xt.grad, dt, "input gradient")
    for (n, pv), (_, pt) in zip(vm.named_parameters(), tm.named_parameters()):
        close(pv.grad, pt.grad, dt, f"gradient of {n}")
    for (n, bv), (_, bt) in zip(vm.named_buffers(), tm.named_buffers()):
        close(bv, bt, dt, f"buffer {n} after a training step")
    vm.eval(), tm.eval()
    close(vm(xv), tm(xt), dt, "forward in eval mode")


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 5)), ((2, 3, 4), (2, 3, 5)), ((4,), (5,))], ids=str)
def test_bilinear_vs_torch(shapes, dt):
    torch.manual_seed(0)
    tm, vm = TN.Bilinear(4, 5, 3).to(TDT[dt]), nn.Bilinear(4, 5, 3).to(VDT[dt])
    load_torch_state(vm, tm)
    assert repr(vm) == repr(tm)
    vs, ts = pair([rnd(*shapes[0]), rnd(*shapes[1], seed=1)], dt, [True, True])
    yv, yt = vm(*vs), tm(*ts)
    close(yv, yt, dt)
    yv.sum().backward()
    yt.sum().backward()
    for v, t in zip(vs, ts):
        close(v.grad, t.grad, dt)
    close(vm.weight.grad, tm.weight.grad, dt)
    close(vm.bias.grad, tm.bias.grad, dt)


@pytest.mark.parametrize("dt", DTS)
def test_embedding_padding_idx_gets_no_gradient(dt):
    torch.manual_seed(0)
    tm, vm = TN.Embedding(6, 3, padding_idx=2).to(TDT[dt]), nn.Embedding(6, 3, padding_idx=2).to(VDT[dt])
    load_torch_state(vm, tm)
    idx = np.array([[0, 2, 5], [2, 2, 1]])
    yv, yt = vm(vk.tensor(idx)), tm(torch.tensor(idx))
    close(yv, yt, dt)
    up = rnd(2, 3, 3)
    yv.backward(vk.tensor(up, dtype=VDT[dt]))
    yt.backward(torch.tensor(up, dtype=TDT[dt]))
    close(vm.weight.grad, tm.weight.grad, dt)
    assert np.all(to_np(vm.weight.grad)[2] == 0)


@pytest.mark.parametrize("mode,size,scale,ac", [
    ("nearest", None, (2.5, 0.6), None), ("bilinear", (4, 3), None, False), ("bilinear", None, 0.5, True),
    ("area", (2, 3), None, None), ("nearest", (7, 2), None, None), ("bilinear", None, (1.5, 2.0), False)], ids=str)
def test_interpolate_vs_torch(mode, size, scale, ac):
    x = rnd(2, 3, 5, 6)
    check(lambda a: F.interpolate(a, size, scale, mode, ac), lambda a: TF.interpolate(a, size, scale, mode, ac),
          [x], "float64")
    if scale is not None:
        check(lambda a: F.interpolate(a, size, scale, mode, ac, recompute_scale_factor=True),
              lambda a: TF.interpolate(a, size, scale, mode, ac, recompute_scale_factor=True), [x], "float64")


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad,shape", [((1, 2), (2, 3, 4)), ((2, 1, 0, 2), (1, 2, 3, 4)), ((1, 1), (2, 5))],
                         ids=str)
def test_pad_modes_vs_torch(mode, pad, shape):
    check(lambda a: F.pad(a, pad, mode), lambda a: TF.pad(a, pad, mode), [rnd(*shape)], "float64")


def test_aliases_vs_torch():
    x = rnd(1, 2, 3, 4)
    check(lambda a: F.upsample_bilinear(a, scale_factor=2), lambda a: TF.upsample_bilinear(a, scale_factor=2),
          [x], "float64")
    check(lambda a: F.upsample_nearest(a, size=(5, 6)), lambda a: TF.upsample_nearest(a, size=(5, 6)), [x], "float64")
    for vf, tf in ((F.selu_, torch.selu_), (lambda a: F.celu_(a, 0.5), lambda a: TF.celu_(a, 0.5)),
                   (F.relu_, TF.relu_), (lambda a: F.threshold_(a, 0.1, 2.0), lambda a: TF.threshold_(a, 0.1, 2.0))):
        xv, xt = vk.tensor(x), torch.tensor(x)
        vf(xv), tf(xt)
        close(xv, xt, "float64", loose=True)
    close(F.max_pool1d_with_indices(vk.tensor(x[0]), 2)[1], TF.max_pool1d_with_indices(torch.tensor(x[0]), 2)[1],
          "float64")


def test_max_pool1d_indices_vs_torch():
    x = rnd(2, 3, 9)
    v, vi = F.max_pool1d(vk.tensor(x), 3, 2, 1, return_indices=True)
    t, ti = TF.max_pool1d(torch.tensor(x), 3, 2, 1, return_indices=True)
    close(v, t, "float64")
    np.testing.assert_array_equal(to_np(vi), to_np(ti))
    vm, tm = nn.MaxPool1d(3, return_indices=True), TN.MaxPool1d(3, return_indices=True)
    np.testing.assert_array_equal(to_np(vm(vk.tensor(x))[1]), to_np(tm(torch.tensor(x))[1]))


@pytest.mark.parametrize("name,make,shape", [
    ("groupnorm", lambda m: m.GroupNorm(2, 4), (2, 4, 3)), ("rmsnorm", lambda m: m.RMSNorm(4), (3, 4)),
    ("instancenorm", lambda m: m.InstanceNorm1d(2, affine=True), (2, 2, 4)),
    ("upsample_bilinear", lambda m: m.Upsample(scale_factor=2, mode="bilinear"), (1, 2, 3, 3)),
    ("conv1d_same", lambda m: m.Conv1d(2, 2, 3, padding="same", padding_mode="reflect"), (1, 2, 5))],
    ids=lambda v: v if isinstance(v, str) else None)  # str(lambda) holds an address: ids differ per process
def test_layer_second_order(name, make, shape):
    torch.manual_seed(0)
    tm, vm = make(TN).double(), make(nn).double()
    with torch.no_grad():
        for i, p in enumerate(tm.parameters()):
            p.copy_(torch.tensor(rnd(*p.shape, seed=10 + i)))
    load_torch_state(vm, tm)
    x0 = rnd(*shape)
    xv, xt = vk.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    up = rnd(*tm(xt).shape, seed=4)
    (gv,) = vk.autograd.grad((vm(xv) ** 2 * vk.tensor(up)).sum(), [xv], create_graph=True)
    (gt,) = torch.autograd.grad((tm(xt) ** 2 * torch.tensor(up)).sum(), [xt], create_graph=True)
    close(gv, gt, "float64")
    second_order(gv, gt, xv, xt, rnd(*shape, seed=5))


# ======================= dropout variants (random: checked by their structure) =======================

@pytest.mark.parametrize("cls,shape", [("Dropout1d", (8, 16, 20)), ("Dropout1d", (16, 20)),
                                       ("Dropout2d", (8, 16, 5, 4)), ("Dropout2d", (8, 16, 20))], ids=str)
def test_channel_dropout_drops_whole_channels(cls, shape):
    vk.manual_seed(0)
    m = getattr(nn, cls)(p=0.4)
    assert repr(m) == repr(getattr(TN, cls)(p=0.4))
    x = vk.ones(*shape, dtype=vk.float64, requires_grad=True)
    y = m(x)
    a = to_np(y).reshape(*shape[:len(shape) - (1 if len(shape) == 2 else len(shape) - 2)], -1)
    # each channel is all zero or all 1 / (1 - p)
    assert np.all((a == 0).all(-1) | np.isclose(a, 1 / 0.6).all(-1))
    frac = float((a == 0).all(-1).mean())
    assert 0.2 < frac < 0.6, frac
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), to_np(y))
    m.eval()
    assert np.array_equal(to_np(m(x)), to_np(x))


def test_alpha_dropout_keeps_mean_and_variance():
    vk.manual_seed(1)
    x = vk.tensor(rnd(200, 500))
    y = to_np(F.alpha_dropout(x, 0.3, training=True))
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    alpha, p = 1.7580993408473766, 0.3
    a = 1 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    assert 0.28 < np.isclose(y, -alpha * a * (1 - p)).mean() < 0.32  # dropped values share one value
    assert np.array_equal(to_np(nn.AlphaDropout(0.3).eval()(x)), to_np(x))
    with pytest.raises(ValueError):
        nn.Dropout2d(1.5)


# ======================= errors: torch's types =======================

ERRORS = [
    (lambda m, t: m.hardtanh(t(3), 2.0, 1.0), ValueError),
    (lambda m, t: m.glu(t(3)), RuntimeError),
    (lambda m, t: m.celu(t(3), 0.0), RuntimeError),
    (lambda m, t: m.prelu(t(2, 3), t(2)), RuntimeError),
    (lambda m, t: m.pad(t(2, 3), (3, 3), mode="reflect"), RuntimeError),
    (lambda m, t: m.pixel_shuffle(t(1, 3, 2, 2), 2), RuntimeError),
    (lambda m, t: m.group_norm(t(2, 6, 3), 4), RuntimeError),
    (lambda m, t: m.huber_loss(t(3), t(3), delta=0.0), RuntimeError),
    (lambda m, t: m.smooth_l1_loss(t(3), t(3), beta=-1.0), RuntimeError),
    (lambda m, t: m.kl_div(t(3), t(3), reduction="x"), ValueError),
    (lambda m, t: m.soft_margin_loss(t(3), t(3), reduction="x"), ValueError),
    (lambda m, t: m.margin_ranking_loss(t(3), t(3, 1), t(3)), RuntimeError),
    (lambda m, t: m.triplet_margin_loss(t(3, 4), t(4), t(3, 4)), RuntimeError),
    (lambda m, t: m.gaussian_nll_loss(t(3, 4), t(3, 4), t(2)), ValueError),
    (lambda m, t: m.gaussian_nll_loss(t(3), t(3), -t(3).abs()), ValueError),
    (lambda m, t: m.rms_norm(t(3, 4), (5,)), RuntimeError),
    (lambda m, t: m.adaptive_avg_pool2d(t(3), 2), RuntimeError),
    (lambda m, t: m.conv1d(t(2, 3, 5), t(4, 3, 3), padding="full"), RuntimeError),
    (lambda m, t: m.interpolate(t(1, 2, 3), size=4, scale_factor=2.0), ValueError),
    (lambda m, t: m.interpolate(t(1, 2, 3), size=4, mode="nearest", align_corners=True), ValueError),
    (lambda m, t: m.dropout1d(t(2, 3, 4, 5)), RuntimeError),
    (lambda m, t: m.mish(t(3).long() if hasattr(t(3), "long") else t(3).to(vk.int64)), (RuntimeError, TypeError)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_bad_input_raises_torch_error_type(i):
    f, err = ERRORS[i]
    with pytest.raises(err):
        f(TF, lambda *s: torch.randn(*s))
    with pytest.raises(err):
        f(F, lambda *s: vk.randn(*s))


@pytest.mark.parametrize("make", [lambda m: m.GroupNorm(4, 6), lambda m: m.Conv1d(2, 4, 3, stride=2, padding="same"),
                                  lambda m: m.Conv1d(2, 3, 3, padding_mode="mirror"),
                                  lambda m: m.TripletMarginLoss(margin=0.0)])
def test_bad_module_arguments_raise_value_error(make):
    with pytest.raises(ValueError):
        make(TN)
    with pytest.raises(ValueError):
        make(nn)


# ======================= the Vulkan device =======================

def _vulkan_or_skip():
    if not vk.vulkan.is_available():
        if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
            pytest.fail("VKML_REQUIRE_VULKAN=1 but no Vulkan device is available")
        pytest.skip("no Vulkan device")
    return vk.device("vulkan")


VULKAN_ACTS = ["mish", "hardswish", "elu", "selu", "softplus", "leaky_relu", "glu", "logsigmoid", "softshrink",
               "threshold", "normalize"]
VULKAN_LOSSES = ["kl_div", "smooth_l1", "huber", "cosine_embedding", "triplet", "gaussian", "soft_margin",
                 "margin_ranking", "poisson"]


@pytest.mark.parametrize("name", VULKAN_ACTS)
def test_activation_on_vulkan(name):
    dev = _vulkan_or_skip()
    _, vf, tf = next(a for a in ACTS if a[0] == name)
    check(vf, tf, [act_input((4, 6))], "float32", device=dev)


@pytest.mark.parametrize("name", VULKAN_LOSSES)
def test_loss_on_vulkan(name):
    dev = _vulkan_or_skip()
    _, vf, tf, build = next(c for c in LOSSES if c[0] == name)
    arrays = build()
    check(vf("mean"), tf("mean"), arrays, "float32", device=dev, grads=loss_grads(name, arrays))


@pytest.mark.parametrize("name", ["groupnorm", "rmsnorm", "conv1d_same", "adaptive_avg2d", "adaptive_max2d",
                                  "upsample_bilinear",
                                  "pixel_shuffle", "reflpad2d", "instancenorm2d_affine"])
def test_layer_on_vulkan(name):
    dev = _vulkan_or_skip()
    _, make, shape = next(c for c in LAYERS if c[0] == name)
    torch.manual_seed(0)
    tm, vm = make(TN), make(nn)
    load_torch_state(vm, tm)
    vm.to(dev)
    x0 = rnd(*shape).astype(np.float32)
    xv = vk.tensor(x0).to(dev).requires_grad_()
    xt = torch.tensor(x0, requires_grad=True)
    yv, yt = vm(xv), tm(xt)
    assert yv.device == dev
    close(yv, yt, "float32")
    yv.sum().backward()
    yt.sum().backward()
    close(xv.grad, xt.grad, "float32")
    for (n, pv), (_, pt) in zip(vm.named_parameters(), tm.named_parameters()):
        close(pv.grad, pt.grad, "float32", n)
