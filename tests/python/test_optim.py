"""vk.optim vs torch.optim: 5 steps with identical params and gradients; schedulers' lr sequences."""

import math

import numpy as np
import pytest
import torch

import vkml as vk

from conftest import to_np


def _run(vk_cls, t_cls, kwargs, dtype="float64", steps=5, groups=False, shapes=((3, 4), (4,))):
    rng = np.random.default_rng(0)
    p0 = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(p.shape) for p in p0] for _ in range(steps)]
    vdt, tdt = (vk.float64, torch.float64) if dtype == "float64" else (vk.float32, torch.float32)
    vps = [vk.nn.Parameter(vk.tensor(p, dtype=vdt)) for p in p0]
    tps = [torch.nn.Parameter(torch.tensor(p, dtype=tdt)) for p in p0]
    if groups:
        vopt = vk_cls([{"params": vps[:1]}, {"params": vps[1:], "lr": 0.05}], **kwargs)
        topt = t_cls([{"params": tps[:1]}, {"params": tps[1:], "lr": 0.05}], **kwargs)
    else:
        vopt, topt = vk_cls(vps, **kwargs), t_cls(tps, **kwargs)
    for gs in grads:
        for vp, tp, g in zip(vps, tps, gs):
            vp.grad, tp.grad = vk.tensor(g, dtype=vdt), torch.tensor(g, dtype=tdt)
        vopt.step()
        topt.step()
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-6)
    for vp, tp in zip(vps, tps):
        np.testing.assert_allclose(to_np(vp), to_np(tp), **tol)
    return vopt, topt, vps, tps


SGD_CASES = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, dampening=0.3),
             dict(lr=0.1, momentum=0.9, nesterov=True), dict(lr=0.1, momentum=0.5, weight_decay=0.01),
             dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1, maximize=True)]
ADAM_CASES = [dict(lr=0.01), dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6), dict(lr=0.01, weight_decay=0.1),
              dict(lr=0.01, amsgrad=True), dict(lr=0.01, maximize=True)]


@pytest.mark.parametrize("kw", SGD_CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sgd_vs_torch(kw, dtype):
    _run(vk.optim.SGD, torch.optim.SGD, kw, dtype)


@pytest.mark.parametrize("kw", ADAM_CASES)
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_adam_adamw_vs_torch(kw, cls, dtype):
    _run(getattr(vk.optim, cls), getattr(torch.optim, cls), kw, dtype)


@pytest.mark.parametrize("cls,kw", [("SGD", kw) for kw in SGD_CASES] + [("Adam", kw) for kw in ADAM_CASES]
                         + [("AdamW", dict(lr=0.01, weight_decay=0.1)), ("Adadelta", dict()),
                            ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.05, maximize=True))])
def test_sgd_adam_vector_body_vs_torch(cls, kw):
    """The fused updates' loops run one instantiation per combination of options, vectorised (SGD's
    ran scalar before: the options were runtime flags), over parameters long enough for the vector
    body and a remainder (the cases above fit in one remainder). Adadelta's step is fused too (it
    was a composition of tensor ops)."""
    _run(getattr(vk.optim, cls), getattr(torch.optim, cls), kw, "float32", shapes=((37, 29), (515,)))


def test_param_groups_and_zero_grad():
    vopt, topt, vps, tps = _run(vk.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9), groups=True)
    assert vopt.param_groups[1]["lr"] == 0.05 and vopt.param_groups[0]["lr"] == 0.1
    vopt.zero_grad()
    assert all(p.grad is None for p in vps)
    with pytest.raises(ValueError):
        vk.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError):
        vk.optim.SGD(vps, lr=0.1, nesterov=True)


@pytest.mark.parametrize("cls,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01, amsgrad=True)),
                                    ("AdamW", dict(lr=0.01))])
def test_optimizer_state_dict_format_and_resume(cls, kw):
    vopt, topt, vps, tps = _run(getattr(vk.optim, cls), getattr(torch.optim, cls), kw, steps=3)
    vsd, tsd = vopt.state_dict(), topt.state_dict()
    assert sorted(vsd) == sorted(tsd) == ["param_groups", "state"]
    assert sorted(vsd["state"]) == sorted(tsd["state"])
    for i in tsd["state"]:
        assert sorted(vsd["state"][i]) == sorted(tsd["state"][i])
        for k, v in tsd["state"][i].items():
            np.testing.assert_allclose(np.asarray(to_np(vsd["state"][i][k]) if isinstance(vsd["state"][i][k], vk.Tensor)
                                                  else vsd["state"][i][k]), to_np(v), rtol=1e-12)
    tg = {k: v for k, v in tsd["param_groups"][0].items()}
    for k, v in vsd["param_groups"][0].items():
        if k in tg:
            assert v == tg[k], k
    # through vk.save / vk.load, into a fresh optimizer, then 2 more steps agree with torch's
    import tempfile, os
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "opt.safetensors")
        vk.save(vsd, path)
        loaded = vk.load(path)
    vps2 = [vk.nn.Parameter(p.detach().clone()) for p in vps]
    vopt2 = getattr(vk.optim, cls)(vps2, **kw)
    vopt2.load_state_dict(loaded)
    rng = np.random.default_rng(5)
    for _ in range(2):
        for vp, tp in zip(vps2, tps):
            g = rng.standard_normal(tuple(tp.shape))
            vp.grad, tp.grad = vk.tensor(g), torch.tensor(g)
        vopt2.step()
        topt.step()
    for vp, tp in zip(vps2, tps):
        np.testing.assert_allclose(to_np(vp), to_np(tp), rtol=1e-12, atol=1e-12)


SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.001)),
    ("CosineAnnealingLR", dict(T_max=4)),
    ("LinearLR", dict(start_factor=0.1, total_iters=4)),
    ("LinearLR", dict(start_factor=0.5, end_factor=0.2, total_iters=3)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.95 ** e)),
]


@pytest.mark.parametrize("name,kw", SCHEDULERS, ids=[f"{n}{i}" for i, (n, _) in enumerate(SCHEDULERS)])
def test_scheduler_lr_sequence_vs_torch(name, kw):
    vopt = vk.optim.SGD([vk.nn.Parameter(vk.zeros(2))], lr=0.1)
    topt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1)
    vs = getattr(vk.optim.lr_scheduler, name)(vopt, **kw)
    ts = getattr(torch.optim.lr_scheduler, name)(topt, **kw)
    vseq, tseq = [], []
    for i in range(15):
        vseq.append(vs.get_last_lr()[0])
        tseq.append(ts.get_last_lr()[0])
        vopt.step(), topt.step()
        vs.step(), ts.step()
        if i == 6:  # state_dict round trip into a fresh scheduler mid-way (torch's resume order)
            sd, osd = vs.state_dict(), vopt.state_dict()
            vs2 = getattr(vk.optim.lr_scheduler, name)(vopt, **kw)  # (changes the lr, like torch's)
            vopt.load_state_dict(osd)
            vs2.load_state_dict(sd)
            vs = vs2
            tsd = ts.state_dict()
            for k in ("last_epoch", "base_lrs", "_step_count"):
                assert sd[k] == tsd[k], k
    np.testing.assert_allclose(vseq, tseq, rtol=1e-12, atol=0)
