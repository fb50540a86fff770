"""vk.nn layers vs torch.nn with copied weights: outputs, gradients, running stats, state_dict keys."""

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import nn
from vkml.nn import functional as F

from conftest import to_np

TOLS = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-5)}
TDT = {"float64": torch.float64, "float32": torch.float32}
VDT = {"float64": vk.float64, "float32": vk.float32}


def copy_weights(vm, tm):
    with torch.no_grad():
        for (kn, tp), (vn, vp) in zip(tm.state_dict().items(), vm.state_dict().items()):
            assert kn == vn
            tp.copy_(torch.from_numpy(to_np(vp)))


def close(a, b, dt):
    np.testing.assert_allclose(to_np(a), to_np(b), **TOLS[dt])


CASES = [
    ("linear", lambda: nn.Linear(5, 3), lambda: torch.nn.Linear(5, 3), (4, 5)),
    ("linear_nobias", lambda: nn.Linear(5, 3, bias=False), lambda: torch.nn.Linear(5, 3, bias=False), (2, 4, 5)),
    ("conv", lambda: nn.Conv2d(2, 4, 3, stride=2, padding=1), lambda: torch.nn.Conv2d(2, 4, 3, stride=2, padding=1),
     (2, 2, 7, 7)),
    ("conv_dil_groups", lambda: nn.Conv2d(4, 6, 3, dilation=2, groups=2, padding=2),
     lambda: torch.nn.Conv2d(4, 6, 3, dilation=2, groups=2, padding=2), (2, 4, 6, 6)),
    ("maxpool", lambda: nn.MaxPool2d(2), lambda: torch.nn.MaxPool2d(2), (2, 3, 6, 6)),
    ("maxpool_s1p1", lambda: nn.MaxPool2d(3, 1, 1), lambda: torch.nn.MaxPool2d(3, 1, 1), (1, 2, 5, 5)),
    ("avgpool", lambda: nn.AvgPool2d(2), lambda: torch.nn.AvgPool2d(2), (2, 3, 6, 6)),
    ("layernorm", lambda: nn.LayerNorm(6), lambda: torch.nn.LayerNorm(6), (3, 4, 6)),
    ("layernorm2d", lambda: nn.LayerNorm((4, 6)), lambda: torch.nn.LayerNorm((4, 6)), (3, 4, 6)),
    ("relu", nn.ReLU, torch.nn.ReLU, (3, 5)),
    ("gelu", nn.GELU, torch.nn.GELU, (3, 5)),
    ("gelu_tanh", lambda: nn.GELU("tanh"), lambda: torch.nn.GELU("tanh"), (3, 5)),
    ("tanh", nn.Tanh, torch.nn.Tanh, (3, 5)),
    ("sigmoid", nn.Sigmoid, torch.nn.Sigmoid, (3, 5)),
    ("silu", nn.SiLU, torch.nn.SiLU, (3, 5)),
    ("flatten", nn.Flatten, torch.nn.Flatten, (2, 3, 4)),
    ("seq", lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)),
     lambda: torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)), (5, 4)),
]


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("name,vmk,tmk,shape", CASES, ids=[c[0] for c in CASES])
def test_layer_forward_backward_vs_torch(name, vmk, tmk, shape, dt):
    vm, tm = vmk().to(VDT[dt]), tmk().to(TDT[dt])
    copy_weights(vm, tm)
    x0 = np.random.default_rng(0).standard_normal(shape)
    xv = vk.tensor(x0, dtype=VDT[dt], requires_grad=True)
    xt = torch.tensor(x0, dtype=TDT[dt], requires_grad=True)
    yv, yt = vm(xv), tm(xt)
    close(yv, yt, dt)
    g = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    yv.backward(vk.tensor(g, dtype=VDT[dt]))
    yt.backward(torch.tensor(g, dtype=TDT[dt]))
    close(xv.grad, xt.grad, dt)
    for (n, pv), (_, pt) in zip(vm.named_parameters(), tm.named_parameters()):
        close(pv.grad, pt.grad, dt)


def test_embedding_vs_torch():
    vm, tm = nn.Embedding(10, 4, padding_idx=0).double(), torch.nn.Embedding(10, 4, padding_idx=0).double()
    copy_weights(vm, tm)
    idx = np.array([[0, 3, 3], [9, 1, 0]])
    yv, yt = vm(vk.tensor(idx)), tm(torch.tensor(idx))
    close(yv, yt, "float64")
    (yv * yv).sum().backward()
    (yt * yt).sum().backward()
    close(vm.weight.grad, tm.weight.grad, "float64")
    assert np.all(to_np(nn.Embedding(5, 3, padding_idx=2).weight)[2] == 0)


@pytest.mark.parametrize("cls,tcls,shape", [(nn.BatchNorm1d, torch.nn.BatchNorm1d, (8, 3)),
                                            (nn.BatchNorm1d, torch.nn.BatchNorm1d, (4, 3, 5)),
                                            (nn.BatchNorm2d, torch.nn.BatchNorm2d, (4, 3, 5, 5))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_train_eval_running_stats(cls, tcls, shape, momentum):
    vm, tm = cls(3, momentum=momentum).double(), tcls(3, momentum=momentum).double()
    with torch.no_grad():
        tm.weight.copy_(torch.tensor([0.5, 1.5, -1.0]))
        tm.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    copy_weights(vm, tm)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x0 = rng.standard_normal(shape) * 2 + 1
        xv, xt = vk.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
        yv, yt = vm(xv), tm(xt)
        close(yv, yt, "float64")
        (yv * yv).sum().backward()
        (yt * yt).sum().backward()
        close(xv.grad, xt.grad, "float64")
        close(vm.weight.grad, tm.weight.grad, "float64")
    for k in ("running_mean", "running_var"):
        close(getattr(vm, k), getattr(tm, k), "float64")
    assert vm.num_batches_tracked.item() == tm.num_batches_tracked.item() == 3
    vm.eval(), tm.eval()
    x0 = rng.standard_normal(shape)
    close(vm(vk.tensor(x0)), tm(torch.tensor(x0)), "float64")
    assert not vm.training and vm.eval() is vm


def test_state_dict_keys_match_torch_and_round_trip():
    def vmodel():
        return nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                             nn.ModuleList([nn.Linear(4, 2), nn.LayerNorm(2)]),
                             nn.ModuleDict({"emb": nn.Embedding(3, 2)}))
    tm = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
                             torch.nn.ModuleList([torch.nn.Linear(4, 2), torch.nn.LayerNorm(2)]),
                             torch.nn.ModuleDict({"emb": torch.nn.Embedding(3, 2)}))
    a, b = vmodel(), vmodel()
    assert list(a.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in a.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert len(list(a.children())) == len(list(tm.children()))
    assert len(list(a.modules())) == len(list(tm.modules()))
    b.load_state_dict(a.state_dict())
    for (k, va), (_, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert np.array_equal(to_np(va), to_np(vb)), k
    # torch's weights load into vkml (same keys), and vkml's into torch
    b.load_state_dict({k: vk.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    tm.load_state_dict({k: torch.from_numpy(to_np(v)) for k, v in a.state_dict().items()})
    sd = a.state_dict()
    del sd["1.running_mean"]
    sd["extra.weight"] = vk.zeros(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "1.running_mean"'):
        b.load_state_dict(sd)
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "extra.weight"'):
        b.load_state_dict(sd)
    r = b.load_state_dict(sd, strict=False)
    sd = a.state_dict()
    sd["0.weight"] = vk.zeros(2, 2)
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        b.load_state_dict(sd)


def test_module_registration_train_zero_grad_repr():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.scale = nn.Parameter(vk.ones(1))
            self.register_buffer("count", vk.zeros(1))
            self.drop = nn.Dropout(0.2)
            self.plain = 5

        def forward(self, x):
            return self.drop(self.fc(x)) * self.scale

    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["scale", "fc.weight", "fc.bias"]
    assert [n for n, _ in net.named_buffers()] == ["count"]
    assert isinstance(net.fc.weight, nn.Parameter) and net.fc.weight.requires_grad
    net.eval()
    assert not net.drop.training
    x = vk.randn(4, 3)
    assert np.array_equal(to_np(net(x)), to_np(net(x)))  # dropout is off in eval
    net.train()
    net(x).sum().backward()
    assert net.scale.grad is not None
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net(x).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all(np.all(to_np(p.grad) == 0) for p in net.parameters())
    r = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert r == repr(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU()))
    assert repr(nn.Conv2d(1, 2, 3, padding=1)) == repr(torch.nn.Conv2d(1, 2, 3, padding=1))
    assert repr(nn.BatchNorm2d(4)) == repr(torch.nn.BatchNorm2d(4))
    assert net.to(vk.float64).fc.weight.dtype == vk.float64


def test_default_init_distributions():
    vk.manual_seed(0)
    w = to_np(nn.Linear(400, 300).weight)
    bound = 1 / np.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) == U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.02 * bound
    c = to_np(nn.Conv2d(4, 8, 3).weight)
    assert np.abs(c).max() <= 1 / np.sqrt(36)
    e = to_np(nn.Embedding(1000, 64).weight)
    assert abs(e.mean()) < 0.02 and abs(e.std() - 1) < 0.02
    bn = nn.BatchNorm2d(3)
    assert np.all(to_np(bn.weight) == 1) and np.all(to_np(bn.bias) == 0)
    t = vk.zeros(200, 300)
    nn.init.xavier_uniform_(t)
    a = np.sqrt(6 / 500)
    assert np.abs(to_np(t)).max() <= a and abs(to_np(t).std() - a / np.sqrt(3)) < 0.02 * a
    nn.init.kaiming_normal_(t, nonlinearity="relu")
    assert abs(to_np(t).std() - np.sqrt(2 / 300)) < 0.02 * np.sqrt(2 / 300)
    nn.init.ones_(t)
    assert np.all(to_np(t) == 1)


@pytest.mark.parametrize("fname,args,kwargs", [
    ("cross_entropy", ("logits", "labels"), dict(label_smoothing=0.1)),
    ("cross_entropy", ("logits", "labels"), dict(reduction="sum", ignore_index=1)),
    ("nll_loss", ("logp", "labels"), {}),
    ("mse_loss", ("logits", "other"), {}),
    ("l1_loss", ("logits", "other"), dict(reduction="none")),
    ("binary_cross_entropy", ("probs", "targets01"), {}),
    ("binary_cross_entropy_with_logits", ("logits", "targets01"), {}),
    ("softmax", ("logits",), dict(dim=1)),
    ("log_softmax", ("logits",), dict(dim=-1)),
])
def test_functional_vs_torch(fname, args, kwargs):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 5))
    data = dict(logits=logits, logp=logits - np.log(np.exp(logits).sum(1, keepdims=True)),
                other=rng.standard_normal((6, 5)), probs=1 / (1 + np.exp(-logits)),
                targets01=(rng.random((6, 5)) > 0.5).astype(np.float64), labels=rng.integers(0, 5, 6))
    va = [vk.tensor(data[a], requires_grad=data[a].dtype == np.float64) for a in args]
    ta = [torch.tensor(data[a], requires_grad=data[a].dtype == np.float64) for a in args]
    yv = getattr(F, fname)(*va, **kwargs)
    yt = getattr(torch.nn.functional, fname)(*ta, **kwargs)
    close(yv, yt, "float64")
    yv.sum().backward()
    yt.sum().backward()
    close(va[0].grad, ta[0].grad, "float64")


def test_clip_grad_norm_vs_torch():
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    vps = [vk.zeros(*g.shape, dtype=vk.float64, requires_grad=True) for g in gs]
    tps = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in gs]
    for vp, tp, g in zip(vps, tps, gs):
        vp.grad, tp.grad = vk.tensor(g), torch.tensor(g)
    nv = nn.utils.clip_grad_norm_(vps, 1.0)
    nt = torch.nn.utils.clip_grad_norm_(tps, 1.0)
    close(nv, nt, "float64")
    for vp, tp in zip(vps, tps):
        close(vp.grad, tp.grad, "float64")
