"""vk.optim.swa_utils against torch.optim.swa_utils: AveragedModel's running mean and EMA (the
per-tensor and list forms, buffers averaged or followed), SWALR's schedule, update_bn's
statistics, in a short SWA training run compared step by step."""

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, to_np


def model_pair(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(8, 4), (8,), (8,), (8,), (3, 8), (3,)]
    weights = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in shapes]

    def make(lib):
        nn = lib.nn
        m = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
        with lib.no_grad():
            for p, w in zip(m.parameters(), weights):
                p.copy_(lib.tensor(w))
        return m
    return make(vk), make(torch)


def same_params(a, b, what, tol="float32"):
    for (name, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items()):
        assert_close(to_np(p).astype(np.float64), to_np(q).astype(np.float64), tol, what=f"{what}: {name}")


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_fn", "swa_fn", "swa_buffers"])
def test_averaged_model_matches_torch(kind):
    vm, tm = model_pair()
    su_v, su_t = vk.optim.swa_utils, torch.optim.swa_utils
    kw = {"swa": lambda su: {}, "ema_multi": lambda su: {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)},
          "ema_fn": lambda su: {"avg_fn": su.get_ema_avg_fn(0.8)}, "swa_fn": lambda su: {"avg_fn": su.get_swa_avg_fn()},
          "swa_buffers": lambda su: {"use_buffers": True}}[kind]
    av, at = su_v.AveragedModel(vm, **kw(su_v)), su_t.AveragedModel(tm, **kw(su_t))
    ov, ot = vk.optim.SGD(vm.parameters(), lr=0.1, momentum=0.9), torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(1)
    for step in range(5):
        x = rng.standard_normal((16, 4)).astype(np.float32)
        y = rng.integers(0, 3, 16)
        for lib, m, opt in ((vk, vm, ov), (torch, tm, ot)):
            opt.zero_grad()
            lib.nn.functional.cross_entropy(m(lib.tensor(x)), lib.tensor(y)).backward()
            opt.step()
        av.update_parameters(vm)
        at.update_parameters(tm)
        assert int(av.n_averaged) == int(at.n_averaged) == step + 1
        same_params(av, at, f"{kind} step {step}")
    x = rng.standard_normal((5, 4)).astype(np.float32)
    av.eval()
    at.eval()
    assert_close(av(vk.tensor(x)), at(torch.tensor(x)), "float32", what="forward")
    with pytest.raises(AssertionError):
        su_v.AveragedModel(vm, avg_fn=su_v.get_swa_avg_fn(), multi_avg_fn=su_v.get_swa_multi_avg_fn())


@pytest.mark.parametrize("strategy,epochs", [("cos", 5), ("linear", 3), ("cos", 0)])
def test_swalr_schedule_matches_torch(strategy, epochs):
    pv, pt = vk.nn.Parameter(vk.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    ov = vk.optim.SGD([{"params": [pv]}, {"params": [vk.nn.Parameter(vk.zeros(1))], "lr": 0.3}], lr=0.1)
    ot = torch.optim.SGD([{"params": [pt]}, {"params": [torch.nn.Parameter(torch.zeros(1))], "lr": 0.3}], lr=0.1)
    sv = vk.optim.swa_utils.SWALR(ov, swa_lr=[0.02, 0.05], anneal_epochs=epochs, anneal_strategy=strategy)
    st = torch.optim.swa_utils.SWALR(ot, swa_lr=[0.02, 0.05], anneal_epochs=epochs, anneal_strategy=strategy)
    for _ in range(8):
        np.testing.assert_allclose(sv.get_last_lr(), st.get_last_lr(), rtol=1e-12)
        ov.step()
        ot.step()
        sv.step()
        st.step()
    with pytest.raises(ValueError, match="anneal_strategy"):
        vk.optim.swa_utils.SWALR(ov, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs"):
        vk.optim.swa_utils.SWALR(ov, 0.1, anneal_epochs=-1)


def test_update_bn_matches_torch():
    """Running statistics recomputed as the mean over the loader, momenta and mode restored,
    instance norms untouched."""
    vm, tm = model_pair(3)
    rng = np.random.default_rng(4)
    batches = [rng.standard_normal((10, 4)).astype(np.float32) * 2 + 1 for _ in range(4)]
    for m in (vm, tm):
        m.eval()
    vk.optim.swa_utils.update_bn([(vk.tensor(b), 0) for b in batches], vm)
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], tm)
    same_params(vm, tm, "update_bn")
    assert not vm.training and vm[1].momentum == 0.1
    inst = vk.nn.Sequential(vk.nn.InstanceNorm1d(2, track_running_stats=True))
    inst.train()
    inst(vk.randn(3, 2, 5))
    before = to_np(inst[0].running_mean)
    vk.optim.swa_utils.update_bn([vk.randn(3, 2, 5)], inst)
    np.testing.assert_array_equal(to_np(inst[0].running_mean), before)
