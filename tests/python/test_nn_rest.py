"""Issue #16, the rest of torch.nn: the 3-D pads, AdaptiveLogSoftmaxWithLoss, LinearCrossEntropyLoss and
F.linear_cross_entropy, CrossMapLRN2d, Container, FractionalMaxPool2d/3d and F.fractional_max_pool2d/3d
(_with_indices), each against torch 2.13: forward values, gradients of inputs and parameters (float64),
state_dict keys and shapes, and torch's error types."""

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import nn
from vkml.nn import functional as F

from conftest import assert_close, to_np

TN, TF = torch.nn, torch.nn.functional
RNG = np.random.default_rng(0)
# torch's and vkml's Linear both warn on the zero-width projection of a far cluster (in // div^i == 0)
pytestmark = pytest.mark.filterwarnings("ignore:Initializing zero-element tensors is a no-op")


def both(a, grad=True):
    """The same float64 values as a vkml and a torch tensor (leaves; grad if asked)."""
    a = np.asarray(a, dtype=np.float64)
    return vk.tensor(a).requires_grad_(grad), torch.tensor(a, requires_grad=grad)


def backward_both(yv, yt, seed=1):
    up = np.random.default_rng(seed).uniform(-1, 1, size=tuple(yt.shape))
    yv.backward(vk.tensor(up))
    yt.backward(torch.tensor(up))


def load_torch_params(vm, tm):
    """Copies torch's parameters into the vkml module through state_dict (keys and shapes must agree)."""
    ts = tm.state_dict()
    assert list(vm.state_dict()) == list(ts)
    for k, v in ts.items():
        assert tuple(vm.state_dict()[k].shape) == tuple(v.shape), k
    vm.load_state_dict({k: vk.tensor(v.numpy()) for k, v in ts.items()})


def assert_param_grads(vm, tm):
    tp = dict(tm.named_parameters())
    for name, p in vm.named_parameters():
        if tp[name].grad is None:
            assert p.grad is None, name
        else:
            assert_close(p.grad, tp[name].grad, what=name)


# ---- 3-D pads ----

PADS3D = [("ConstantPad3d", ((1, 2, 0, 1, 2, 1), 1.5)), ("ConstantPad3d", (1, -0.5)),
          ("ZeroPad3d", ((2, 0, 1, 1, 0, 2),)), ("ZeroPad3d", (1,)), ("ReflectionPad3d", ((1, 2, 0, 1, 2, 1),)),
          ("ReflectionPad3d", (1,)), ("ReplicationPad3d", ((1, 2, 0, 3, 2, 1),)),
          ("CircularPad3d", ((1, 2, 0, 1, 2, 1),)), ("CircularPad3d", (1,))]


@pytest.mark.parametrize("name,args", PADS3D, ids=[f"{n}-{i}" for i, (n, _) in enumerate(PADS3D)])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5, 3), (3, 4, 5, 3)], ids=["batched", "unbatched"])
def test_pad3d_modules_match_torch(name, args, shape):
    vm, tm = getattr(nn, name)(*args), getattr(TN, name)(*args)
    assert vm.padding == tm.padding and repr(vm) == repr(tm)
    xv, xt = both(RNG.standard_normal(shape))
    yv, yt = vm(xv), tm(xt)
    assert_close(yv, yt, what="forward")
    backward_both(yv, yt)
    assert_close(xv.grad, xt.grad, what="grad")


def test_pad3d_wrong_padding_length_names_the_layer():
    with pytest.raises(ValueError, match="ReflectionPad3d: padding must be an int or 6 values, got 4"):
        nn.ReflectionPad3d((1, 1, 1, 1))


# ---- AdaptiveLogSoftmaxWithLoss ----

def _asm_pair(head_bias=False, div_value=4.0, cutoffs=(4, 9, 14), n_classes=20, in_features=16):
    torch.manual_seed(0)
    tm = TN.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs), div_value, head_bias).double()
    vm = nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs), div_value, head_bias,
                                       dtype=vk.float64)
    load_torch_params(vm, tm)
    return vm, tm


@pytest.mark.parametrize("head_bias,div_value", [(False, 4.0), (True, 2.0)])
def test_adaptive_log_softmax_forward_and_gradients_match_torch(head_bias, div_value):
    vm, tm = _asm_pair(head_bias, div_value)
    xv, xt = both(RNG.standard_normal((12, 16)))
    target = np.array([0, 3, 4, 8, 9, 13, 14, 19, 1, 10, 5, 16])  # every cluster, both edges of each
    ov, ot = vm(xv, vk.tensor(target)), tm(xt, torch.tensor(target))
    assert type(ov).__name__ == "_ASMoutput" and ov._fields == ("output", "loss")
    assert_close(ov.output, ot.output, what="output")
    assert_close(ov.loss, ot.loss, what="loss")
    (ov.loss + ov.output.sum() * 0.5).backward()
    (ot.loss + ot.output.sum() * 0.5).backward()
    assert_close(xv.grad, xt.grad, what="input grad")
    assert_param_grads(vm, tm)


def test_adaptive_log_softmax_unused_cluster_gets_no_gradient_as_torch():
    vm, tm = _asm_pair()
    xv, xt = both(RNG.standard_normal((5, 16)))
    target = np.array([0, 2, 3, 15, 19])  # nothing in the clusters [4, 9) and [9, 14)
    ov, ot = vm(xv, vk.tensor(target)), tm(xt, torch.tensor(target))
    assert_close(ov.output, ot.output)
    ov.loss.backward(), ot.loss.backward()
    assert vm.tail[0][0].weight.grad is None and tm.tail[0][0].weight.grad is None
    assert_param_grads(vm, tm)
    assert_close(xv.grad, xt.grad)


def test_adaptive_log_softmax_unbatched_input():
    vm, tm = _asm_pair()
    xv, xt = both(RNG.standard_normal(16))
    ov, ot = vm(xv, vk.tensor(11)), tm(xt, torch.tensor(11))
    assert tuple(ov.output.shape) == tuple(ot.output.shape) == ()
    assert_close(ov.output, ot.output)
    assert_close(ov.loss, ot.loss)


def test_adaptive_log_softmax_log_prob_and_predict_match_torch():
    vm, tm = _asm_pair(True, 2.0)
    xv, xt = both(RNG.standard_normal((40, 16)) * 3)
    lv, lt = vm.log_prob(xv), tm.log_prob(xt)
    assert_close(lv, lt, what="log_prob")
    backward_both(lv, lt)
    assert_close(xv.grad, xt.grad, what="log_prob grad")
    assert_param_grads(vm, tm)
    with torch.no_grad():
        np.testing.assert_array_equal(to_np(vm.predict(xv.detach())), to_np(tm.predict(xt.detach())))


def test_adaptive_log_softmax_predict_takes_tail_classes():
    """A head that favours a cluster: predict must then answer a class of that cluster, as torch's."""
    vm, tm = _asm_pair(True)
    with torch.no_grad():
        tm.head.bias.copy_(torch.tensor([0.0] * 4 + [50.0, 0.0, 0.0]))
    load_torch_params(vm, tm)
    x = RNG.standard_normal((6, 16))
    pv, pt = vm.predict(vk.tensor(x)), tm.predict(torch.tensor(x))
    np.testing.assert_array_equal(to_np(pv), to_np(pt))
    assert (to_np(pv) >= 4).all()


@pytest.mark.parametrize("cutoffs", [[], [5, 3], [0, 4], [4, 20], [4, 4], [2.5]])
def test_adaptive_log_softmax_bad_cutoffs(cutoffs):
    with pytest.raises(ValueError, match="cutoffs should be a sequence"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)
    with pytest.raises(ValueError, match="cutoffs should be a sequence"):
        TN.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)


def test_adaptive_log_softmax_bad_targets_and_shapes():
    vm, _ = _asm_pair()
    x = vk.tensor(RNG.standard_normal((3, 16)))
    with pytest.raises(RuntimeError, match=r"AdaptiveLogSoftmaxWithLoss: Target values should be in \[0, 19\], "
                                           r"but values in range \[-1, 20\] were found"):
        vm(x, vk.tensor([-1, 20, 2]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        vm(x, vk.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input"):
        vm(x, vk.tensor(1))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        vm(x, vk.tensor([[1, 2, 3]]))
    with pytest.raises(RuntimeError, match="log_prob: expected a 2-D input"):
        vm.log_prob(x[0])


# ---- LinearCrossEntropyLoss and F.linear_cross_entropy ----

LCE_CASES = [
    dict(),
    dict(bias=True, reduction="sum"),
    dict(weight=True, reduction="none"),
    dict(weight=True, ignore_index=2),
    dict(label_smoothing=0.2, bias=True),
    dict(out=(2, 3), bias=True),
    dict(out=(2,), reduction="none", weight=True),
    dict(probabilities=True, label_smoothing=0.1),
    dict(unbatched=True, bias=True),
]


def _lce_arrays(case, n=6, f=5, c=4):
    out = case.get("out", ())
    x = RNG.standard_normal(f if case.get("unbatched") else (n, f))
    w = RNG.standard_normal((c,) + out + (f,))
    b = RNG.standard_normal((c,) + out) if case.get("bias") else None
    batch = () if case.get("unbatched") else (n,)
    if case.get("probabilities"):
        t = RNG.uniform(0, 1, batch + (c,) + out)
        t = t / t.sum(axis=len(batch), keepdims=True)
    else:
        t = RNG.integers(0, c, batch + out)
    return x, w, b, t


@pytest.mark.parametrize("case", LCE_CASES, ids=[str(i) for i in range(len(LCE_CASES))])
def test_linear_cross_entropy_matches_torch(case):
    x, w, b, t = _lce_arrays(case)
    xv, xt = both(x)
    wv, wt = both(w)
    bv, bt = both(b) if b is not None else (None, None)
    cw = RNG.uniform(0.5, 2, w.shape[0]) if case.get("weight") else None
    kw = dict(reduction=case.get("reduction", "mean"), label_smoothing=case.get("label_smoothing", 0.0),
              ignore_index=case.get("ignore_index"))
    yv = F.linear_cross_entropy(xv, wv, vk.tensor(t), linear_bias=bv,
                                weight=None if cw is None else vk.tensor(cw), **kw)
    yt = TF.linear_cross_entropy(xt, wt, torch.tensor(t), linear_bias=bt,
                                 weight=None if cw is None else torch.tensor(cw), **kw)
    assert_close(yv, yt, what="forward")
    backward_both(yv, yt)
    for (v, tt, name) in [(xv, xt, "input"), (wv, wt, "linear_weight"), (bv, bt, "linear_bias")]:
        if v is not None:
            assert_close(v.grad, tt.grad, what=name)


@pytest.mark.parametrize("kw", [dict(), dict(out_features=(2, 3), bias=True, reduction="sum", ignore_index=1),
                                dict(label_smoothing=0.3, weight=True)])
def test_linear_cross_entropy_loss_module_matches_torch(kw):
    kw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"] = np.array([0.5, 1.0, 2.0, 1.5])
    tkw = {k: torch.tensor(v) if k == "weight" else v for k, v in kw.items()}
    vkw = {k: vk.tensor(v) if k == "weight" else v for k, v in kw.items()}
    torch.manual_seed(0)
    tm = TN.LinearCrossEntropyLoss(5, 4, dtype=torch.float64, **tkw)
    vm = nn.LinearCrossEntropyLoss(5, 4, dtype=vk.float64, **vkw)
    load_torch_params(vm, tm)
    x, _, _, t = _lce_arrays(dict(out=kw.get("out_features", ())))
    xv, xt = both(x)
    yv, yt = vm(xv, vk.tensor(t)), tm(xt, torch.tensor(t))
    assert_close(yv, yt, what="forward")
    backward_both(yv, yt)
    assert_close(xv.grad, xt.grad, what="input grad")
    assert_param_grads(vm, tm)


def test_linear_cross_entropy_bad_input():
    x, w, t = vk.randn(3, 5), vk.randn(4, 5), vk.tensor([0, 1, 2])
    with pytest.raises(RuntimeError, match="linear_cross_entropy: expected equal input and linear_weight last"):
        F.linear_cross_entropy(vk.randn(3, 6), w, t)
    with pytest.raises(RuntimeError, match="linear_cross_entropy: expected input with dimensionality 1 or 2"):
        F.linear_cross_entropy(vk.randn(2, 3, 5), w, t)
    with pytest.raises(RuntimeError, match=r"linear_cross_entropy: expected linear_bias shape \(4,\), got \(5,\)"):
        F.linear_cross_entropy(x, w, t, linear_bias=vk.randn(5))
    with pytest.raises(RuntimeError, match="linear_cross_entropy: ignore_index cannot be specified"):
        F.linear_cross_entropy(x, w, vk.rand(3, 4), ignore_index=0)
    with pytest.raises(RuntimeError, match="requires batched input"):
        F.linear_cross_entropy(vk.randn(5), vk.randn(4, 2, 5), vk.tensor(1))
    with pytest.raises(RuntimeError, match=r"LinearCrossEntropyLoss: expected weight shape to be \(4,\)"):
        nn.LinearCrossEntropyLoss(5, 4, weight=vk.ones(3))
    with pytest.raises(RuntimeError, match="label_smoothing to be in range"):
        nn.LinearCrossEntropyLoss(5, 4, label_smoothing=1.5)


def test_linear_cross_entropy_options_change_no_value():
    """vkml takes the reference path whatever the options say; they are checked as torch checks them."""
    x, w, _, t = _lce_arrays({})
    opts = nn.LinearCrossEntropyOptions(batch_chunk_size=2, acc_policy="accurate", chunking_method=None)
    topts = TN.LinearCrossEntropyOptions(batch_chunk_size=2, acc_policy="accurate", chunking_method=None)
    assert [f.name for f in __import__("dataclasses").fields(opts)] == \
        [f.name for f in __import__("dataclasses").fields(topts)]
    xv, xt = both(x)
    yv = F.linear_cross_entropy(xv, vk.tensor(w), vk.tensor(t), options=opts)
    yt = TF.linear_cross_entropy(xt, torch.tensor(w), torch.tensor(t), options=topts)
    assert_close(yv, yt)
    yv.backward(), yt.backward()
    assert_close(xv.grad, xt.grad)
    for bad in [dict(acc_policy="fast"), dict(chunking_method="rows"), dict(batch_chunk_size=0),
                dict(acc_dtype=vk.int64)]:
        with pytest.raises(ValueError, match="LinearCrossEntropyOptions: "):
            nn.LinearCrossEntropyOptions(**bad)
    with pytest.raises(TypeError, match="linear_cross_entropy: options must be None or"):
        F.linear_cross_entropy(xv, vk.tensor(w), vk.tensor(t), options={"batch_chunk_size": 2})


# ---- CrossMapLRN2d and Container ----

@pytest.mark.parametrize("size,channels", [(5, 3), (5, 8), (3, 6), (4, 7), (2, 5), (1, 4), (6, 9)])
def test_cross_map_lrn2d_matches_torch_forward(size, channels):
    x = RNG.standard_normal((2, channels, 3, 4))
    vm, tm = nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5), TN.CrossMapLRN2d(size, 0.3, 0.75, 1.5)
    assert repr(vm) == repr(tm)
    assert_close(vm(vk.tensor(x)), tm(torch.tensor(x)))


@pytest.mark.parametrize("size,channels", [(5, 8), (3, 3), (4, 6)])
def test_cross_map_lrn2d_gradient_is_its_forwards_own(size, channels):
    """torch's CrossMapLRN2d backward is not its forward's derivative (torch.autograd.gradcheck fails on it),
    so the oracle is central differences of torch's forward."""
    x = RNG.standard_normal((1, channels, 2, 2))
    up = RNG.uniform(-1, 1, x.shape)
    tm = TN.CrossMapLRN2d(size, 0.3, 0.75, 1.5)
    xv = vk.tensor(x).requires_grad_()
    nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5)(xv).backward(vk.tensor(up))
    num = np.zeros_like(x)
    eps = 1e-6
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        plus, minus = (float((tm(torch.tensor(x + s * d)) * torch.tensor(up)).sum()) for s in (1, -1))
        num[i] = (plus - minus) / (2 * eps)
    np.testing.assert_allclose(to_np(xv.grad), num, rtol=1e-6, atol=1e-7)


def test_cross_map_lrn2d_needs_4d_input():
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        nn.CrossMapLRN2d(3)(vk.randn(2, 3, 4))


def test_new_modules_repr_as_torch():
    for make in [lambda L: L.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7]),
                 lambda L: L.LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True, ignore_index=1),
                 lambda L: L.FractionalMaxPool3d(2, output_ratio=0.5), lambda L: L.CrossMapLRN2d(3, k=2)]:
        assert repr(make(nn)) == repr(make(TN))


def test_container_registers_keyword_modules_as_torch():
    with pytest.warns(FutureWarning, match="Container is deprecated"):
        vm = nn.Container(first=nn.Linear(2, 3), second=nn.ReLU())
    with pytest.warns(FutureWarning):
        tm = TN.Container(first=TN.Linear(2, 3), second=TN.ReLU())
    assert [n for n, _ in vm.named_children()] == [n for n, _ in tm.named_children()]
    assert list(vm.state_dict()) == list(tm.state_dict())


# ---- fractional max pooling ----

FMP = [  # (input shape, kernel, output_size, output_ratio)
    ((2, 3, 10, 9), 2, (4, 5), None),
    ((3, 11, 7), (3, 2), (5, 3), None),
    ((2, 2, 9, 8), 3, None, (0.5, 0.7)),
    ((1, 1, 6, 6), 2, 1, None),
    ((2, 2, 7, 8, 9), 2, (3, 4, 5), None),
    ((2, 6, 7, 5), (2, 3, 2), (3, 2, 3), None),
    ((1, 2, 8, 8, 8), 3, None, 0.5),
]


def _fmp(n, torch_lib=False):
    lib = TF if torch_lib else F
    return getattr(lib, f"fractional_max_pool{n}d")


def _fmp_case(shape, kernel):
    n = 3 if len(shape) == 5 or (isinstance(kernel, tuple) and len(kernel) == 3) else 2
    batch = shape[0] if len(shape) == n + 2 else 1
    return n, RNG.uniform(0, 1, (batch, shape[-n - 1], n))


@pytest.mark.parametrize("shape,kernel,size,ratio", FMP, ids=[str(i) for i in range(len(FMP))])
def test_fractional_max_pool_matches_torch(shape, kernel, size, ratio):
    n, samples = _fmp_case(shape, kernel)
    xv, xt = both(RNG.standard_normal(shape))
    yv, iv = _fmp(n)(xv, kernel, size, ratio, return_indices=True, _random_samples=vk.tensor(samples))
    yt, it = _fmp(n, True)(xt, kernel, size, ratio, return_indices=True, _random_samples=torch.tensor(samples))
    assert_close(yv, yt, what="forward")
    np.testing.assert_array_equal(to_np(iv), to_np(it))
    assert iv.dtype == vk.int64
    backward_both(yv, yt)
    assert_close(xv.grad, xt.grad, what="grad")


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_float32_windows_match_torch(n):
    """The window starts are computed in the input's dtype, as torch's: float32 rounds as torch's does."""
    shape = (4, 8) + (23,) * n
    samples = RNG.uniform(0, 1, (4, 8, n)).astype(np.float32)
    x = RNG.permutation(np.prod(shape)).reshape(shape).astype(np.float32)  # distinct values
    _, iv = _fmp(n)(vk.tensor(x), 2, 11, return_indices=True, _random_samples=vk.tensor(samples))
    _, it = _fmp(n, True)(torch.tensor(x), 2, 11, return_indices=True, _random_samples=torch.tensor(samples))
    np.testing.assert_array_equal(to_np(iv), to_np(it))


def test_fractional_max_pool_ties_take_the_first_maximum_as_torch():
    x = RNG.integers(0, 3, (2, 3, 9, 9)).astype(np.float64)
    samples = RNG.uniform(0, 1, (2, 3, 2))
    xv, xt = both(x)
    yv, iv = F.fractional_max_pool2d_with_indices(xv, 3, 4, _random_samples=vk.tensor(samples))
    yt, it = TF.fractional_max_pool2d_with_indices(xt, 3, 4, _random_samples=torch.tensor(samples))
    np.testing.assert_array_equal(to_np(iv), to_np(it))
    backward_both(yv, yt)
    assert_close(xv.grad, xt.grad)


def test_fractional_max_pool_nan_takes_the_last_nan_of_a_window_as_torch():
    """Regression: vkml's max picks a window's first NaN, torch's kernel its last; the index (and so the
    gradient) must be torch's."""
    x = RNG.standard_normal((1, 2, 6, 6))
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = x[0, 1, 3, 4] = x[0, 1, 4, 5] = np.nan
    samples = RNG.uniform(0, 1, (1, 2, 2))
    xv, xt = both(x)
    yv, iv = F.fractional_max_pool2d(xv, 3, 3, return_indices=True, _random_samples=vk.tensor(samples))
    yt, it = TF.fractional_max_pool2d(xt, 3, 3, return_indices=True, _random_samples=torch.tensor(samples))
    np.testing.assert_array_equal(to_np(iv), to_np(it))
    assert_close(yv, yt)
    backward_both(yv, yt)
    assert_close(xv.grad, xt.grad)


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_module_matches_torch(n):
    shape = (2, 3) + (9,) * n
    samples = RNG.uniform(0, 1, (2, 3, n))
    cls = f"FractionalMaxPool{n}d"
    vm = getattr(nn, cls)(2, output_ratio=0.5, return_indices=True, _random_samples=vk.tensor(samples))
    tm = getattr(TN, cls)(2, output_ratio=0.5, return_indices=True, _random_samples=torch.tensor(samples))
    assert list(vm.state_dict()) == list(tm.state_dict()) == ["_random_samples"]
    assert vm.kernel_size == tm.kernel_size and vm.output_ratio == tm.output_ratio
    x = RNG.standard_normal(shape)
    (yv, iv), (yt, it) = vm(vk.tensor(x)), tm(torch.tensor(x))
    assert_close(yv, yt)
    np.testing.assert_array_equal(to_np(iv), to_np(it))


def test_fractional_max_pool_draws_its_own_samples_from_vk_generator():
    x = vk.randn(2, 3, 10, 10)
    vk.manual_seed(5)
    y1, i1 = F.fractional_max_pool2d(x, 2, output_size=4, return_indices=True)
    vk.manual_seed(5)
    y2, i2 = F.fractional_max_pool2d(x, 2, output_size=4, return_indices=True)
    np.testing.assert_array_equal(to_np(i1), to_np(i2))
    assert tuple(y1.shape) == (2, 3, 4, 4)
    # every output is the input at its index, and the last window ends flush with the input
    flat = to_np(x).reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, to_np(i1).reshape(2, 3, -1), 2).reshape(2, 3, 4, 4),
                                  to_np(y1))
    windows = to_np(nn.FractionalMaxPool2d(2, output_size=4)(x))
    assert windows.shape == (2, 3, 4, 4)


def test_fractional_max_pool_errors_as_torch():
    x = vk.randn(1, 1, 10, 10)
    with pytest.raises(ValueError, match="fractional_max_pool2d requires specifying either an output_size or an "
                                         "output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="fractional_max_pool2d\\(\\): pool height 2 too large relative to "
                                           "input height 10"):
        F.fractional_max_pool2d(x, 2, 10)
    with pytest.raises(RuntimeError, match="fractional_max_pool3d\\(\\): pool time 2 too large"):
        F.fractional_max_pool3d(vk.randn(1, 1, 4, 4, 4), 2, (4, 3, 3))
    with pytest.raises(RuntimeError, match=r"fractional_max_pool2d\(\): Expected 3D or 4D tensor"):
        F.fractional_max_pool2d(vk.randn(2, 1, 1, 10, 10), 2, 3)
    with pytest.raises(RuntimeError, match="fractional_max_pool2d: Expect _random_samples.size\\(2\\) equals to 2"):
        F.fractional_max_pool2d(x, 2, 3, _random_samples=vk.rand(1, 1, 3))
    with pytest.raises(RuntimeError, match=r"size\(0\) no less than input batch size 2, got 1"):
        F.fractional_max_pool2d(vk.randn(2, 1, 8, 8), 2, 3, _random_samples=vk.rand(1, 1, 2))
    with pytest.raises(RuntimeError, match=r"size\(1\) equals to input channel size 1, got 2"):
        F.fractional_max_pool2d(x, 2, 3, _random_samples=vk.rand(1, 2, 2))
    with pytest.raises(RuntimeError, match="Expect _random_samples to have 3 dimensions, got 2"):
        F.fractional_max_pool2d(x, 2, 3, _random_samples=vk.rand(1, 2))
    with pytest.raises(RuntimeError, match="Expect _random_samples to have the same dtype as input"):
        F.fractional_max_pool2d(x, 2, 3, _random_samples=vk.rand(1, 1, 2, dtype=vk.float64))
    with pytest.raises(RuntimeError, match="output_size must either be a single Int or tuple of Ints"):
        F.fractional_max_pool2d(x, 2, (3,))
    with pytest.raises(ValueError, match="FractionalMaxPool2d requires specifying either an output size"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool3d(2, 3, 0.5)
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.2\)"):
        nn.FractionalMaxPool2d(2, output_ratio=1.2)


def test_fractional_max_pool_empty_output_as_torch():
    x = RNG.standard_normal((2, 3, 9, 9))
    samples = RNG.uniform(0, 1, (2, 3, 2))
    yv = F.fractional_max_pool2d(vk.tensor(x), 2, (0, 3), _random_samples=vk.tensor(samples))
    yt = TF.fractional_max_pool2d(torch.tensor(x), 2, (0, 3), _random_samples=torch.tensor(samples))
    assert tuple(yv.shape) == tuple(yt.shape) == (2, 3, 0, 3)


# ---- on the Vulkan device: the same numbers as on the CPU ----

@pytest.mark.skipif(not vk.vulkan.is_available(), reason="no Vulkan device")
def test_nn_rest_on_vulkan_matches_cpu():
    x = vk.randn(2, 3, 9, 9)
    s = vk.rand(2, 3, 2)
    calls = [
        lambda d, x=x, s=s: F.fractional_max_pool2d(x.to(d), 2, 4, return_indices=True, _random_samples=s.to(d)),
        lambda d, x=x: nn.ReflectionPad3d(1)(x.to(d)),
        lambda d, x=x: nn.CrossMapLRN2d(3, 0.3)(x.to(d)),
        lambda d, x=x: F.linear_cross_entropy(x.reshape(6, 81).to(d), vk.ones(5, 81).to(d) * 0.01,
                                              vk.tensor([0, 1, 2, 3, 4, 0]).to(d)),
    ]
    for f in calls:
        cpu, dev = f("cpu"), f("vulkan")
        for a, b in zip(cpu if isinstance(cpu, tuple) else (cpu,), dev if isinstance(dev, tuple) else (dev,)):
            assert str(b.device).startswith("vulkan")
            np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-5, atol=1e-6)
    vm = nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7], div_value=2.0)
    inp, target = vk.randn(5, 8), vk.tensor([0, 4, 8, 11, 2])
    want = vm(inp, target)
    vm.to("vulkan")
    got = vm(inp.to("vulkan"), target.to("vulkan"))
    np.testing.assert_allclose(to_np(got.output), to_np(want.output), rtol=1e-5, atol=1e-6)
