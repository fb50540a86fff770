"""vk.optim.lr_scheduler vs torch.optim.lr_scheduler: every scheduler, several option sets, run side by side
for 100 steps on dummy optimizers; every lr (and momentum / beta1 where the scheduler cycles it) compared,
and resuming mid-way from vkml's own state_dict and from torch's."""

import math
import warnings

import numpy as np
import pytest
import torch

import vkml as vk

V, T = vk.optim, torch.optim
STEPS, RESUME_AT = 100, 37


class Halver:  # a callable object: its __dict__ is saved in the state_dict (a lambda is not)
    def __init__(self):
        self.factor = 0.97

    def __call__(self, epoch):
        return self.factor ** epoch


def _opt(lib, kind, groups):
    mod = vk if lib is V else torch
    params = [mod.nn.Parameter(mod.zeros(2)) for _ in range(groups)]
    pg = [{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(params)]
    if kind == "sgd":
        return lib.SGD(pg, lr=0.1)
    if kind == "momentum":
        return lib.SGD(pg, lr=0.1, momentum=0.9)
    return lib.Adam(pg, lr=0.01, betas=(0.9, 0.99))


def _lin(lib, o, **kw):
    return lib.lr_scheduler.LinearLR(o, **kw)


# name -> (optimizer kind, groups, builder(lib, optimizer) -> scheduler)
CASES = {
    "StepLR": ("sgd", 2, lambda L, o: L.lr_scheduler.StepLR(o, step_size=7, gamma=0.5)),
    "MultiStepLR": ("sgd", 1, lambda L, o: L.lr_scheduler.MultiStepLR(o, milestones=[10, 30, 30, 60], gamma=0.3)),
    "ExponentialLR": ("sgd", 2, lambda L, o: L.lr_scheduler.ExponentialLR(o, gamma=0.97)),
    "ConstantLR": ("sgd", 1, lambda L, o: L.lr_scheduler.ConstantLR(o, factor=0.25, total_iters=12)),
    "ConstantLR-default": ("sgd", 2, lambda L, o: L.lr_scheduler.ConstantLR(o)),
    "LinearLR": ("sgd", 2, lambda L, o: L.lr_scheduler.LinearLR(o, start_factor=0.1, end_factor=0.9,
                                                                    total_iters=40)),
    "PolynomialLR": ("sgd", 2, lambda L, o: L.lr_scheduler.PolynomialLR(o, total_iters=60, power=2.0)),
    "PolynomialLR-linear": ("sgd", 1, lambda L, o: L.lr_scheduler.PolynomialLR(o, total_iters=30)),
    "CosineAnnealingLR": ("sgd", 2, lambda L, o: L.lr_scheduler.CosineAnnealingLR(o, T_max=23, eta_min=1e-3)),
    "MultiplicativeLR": ("sgd", 1, lambda L, o: L.lr_scheduler.MultiplicativeLR(o, lambda e: 0.95 if e % 3 else 1.1)),
    "MultiplicativeLR-list": ("sgd", 2, lambda L, o: L.lr_scheduler.MultiplicativeLR(
        o, [lambda e: 0.99, lambda e: 0.9 + 0.001 * e])),
    "LambdaLR-object": ("sgd", 2, lambda L, o: L.lr_scheduler.LambdaLR(o, Halver())),
    "CosineAnnealingWarmRestarts": ("sgd", 2, lambda L, o: L.lr_scheduler.CosineAnnealingWarmRestarts(
        o, T_0=10, eta_min=0.001)),
    "CosineAnnealingWarmRestarts-mult": ("sgd", 1, lambda L, o: L.lr_scheduler.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2)),
    "OneCycleLR-cos-momentum": ("momentum", 2, lambda L, o: L.lr_scheduler.OneCycleLR(o, max_lr=[0.5, 1.0],
                                                                                       total_steps=STEPS)),
    "OneCycleLR-linear-adam": ("adam", 1, lambda L, o: L.lr_scheduler.OneCycleLR(
        o, max_lr=0.02, epochs=10, steps_per_epoch=10, pct_start=0.25, anneal_strategy="linear",
        div_factor=10.0, final_div_factor=100.0, base_momentum=0.8, max_momentum=0.9)),
    "OneCycleLR-three-phase": ("adam", 2, lambda L, o: L.lr_scheduler.OneCycleLR(
        o, max_lr=0.1, total_steps=STEPS + 5, three_phase=True, pct_start=0.4)),
    "OneCycleLR-no-momentum": ("sgd", 1, lambda L, o: L.lr_scheduler.OneCycleLR(
        o, max_lr=0.3, total_steps=STEPS, cycle_momentum=False)),
    "CyclicLR-triangular": ("momentum", 2, lambda L, o: L.lr_scheduler.CyclicLR(
        o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=7, step_size_down=4)),
    "CyclicLR-triangular2-adam": ("adam", 1, lambda L, o: L.lr_scheduler.CyclicLR(
        o, base_lr=0.001, max_lr=0.01, step_size_up=5, mode="triangular2", base_momentum=0.85)),
    "CyclicLR-exp_range": ("momentum", 1, lambda L, o: L.lr_scheduler.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=6, mode="exp_range", gamma=0.98)),
    "CyclicLR-scale_fn": ("sgd", 1, lambda L, o: L.lr_scheduler.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=8, scale_fn=lambda x: 0.5 * (1 + math.sin(x)),
        scale_mode="iterations", cycle_momentum=False)),
    "SequentialLR": ("sgd", 2, lambda L, o: L.lr_scheduler.SequentialLR(
        o, [_lin(L, o, start_factor=0.1, total_iters=10), L.lr_scheduler.ExponentialLR(o, gamma=0.95),
            L.lr_scheduler.StepLR(o, step_size=5, gamma=0.5)], milestones=[10, 40])),
    "SequentialLR-cosine": ("sgd", 1, lambda L, o: L.lr_scheduler.SequentialLR(
        o, [L.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=4),
            L.lr_scheduler.CosineAnnealingLR(o, T_max=30)], milestones=[20])),
    "ChainedScheduler": ("sgd", 2, lambda L, o: L.lr_scheduler.ChainedScheduler(
        [L.lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2), L.lr_scheduler.ExponentialLR(o, gamma=0.9)])),
    "ChainedScheduler-opt": ("momentum", 1, lambda L, o: L.lr_scheduler.ChainedScheduler(
        [L.lr_scheduler.MultiStepLR(o, [5, 50]), L.lr_scheduler.LinearLR(o, total_iters=20)], optimizer=o)),
}


def _momenta(opt):
    out = []
    for g in opt.param_groups:
        if "betas" in g:
            out.append(tuple(float(b) for b in g["betas"]))
        elif "momentum" in g:
            out.append(float(g["momentum"]))
    return out


def _snapshot(opt, sched):
    return ([float(g["lr"]) for g in opt.param_groups], [float(x) for x in sched.get_last_lr()], _momenta(opt))


def _assert_same(a, b, what):
    (lr_a, last_a, m_a), (lr_b, last_b, m_b) = a, b
    np.testing.assert_allclose(lr_a, lr_b, rtol=1e-12, atol=1e-15, err_msg=f"{what}: lr")
    np.testing.assert_allclose(last_a, last_b, rtol=1e-12, atol=1e-15, err_msg=f"{what}: get_last_lr")
    np.testing.assert_allclose(np.array(m_a, dtype=float), np.array(m_b, dtype=float), rtol=1e-12, atol=1e-15,
                               err_msg=f"{what}: momentum/betas")


@pytest.mark.parametrize("name", list(CASES))
def test_scheduler_sequence_and_resume_vs_torch(name):
    kind, groups, build = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's chained-scheduler construction warnings
        vopt, topt = _opt(V, kind, groups), _opt(T, kind, groups)
        vs, ts = build(V, vopt), build(T, topt)
        resumed = None
        for i in range(STEPS):
            _assert_same(_snapshot(vopt, vs), _snapshot(topt, ts), f"{name} step {i}")
            if resumed is not None:
                for k, (ro, rs) in enumerate(resumed):
                    _assert_same(_snapshot(ro, rs), _snapshot(topt, ts), f"{name} resumed#{k} step {i}")
            if i == RESUME_AT:
                vsd, tsd = vs.state_dict(), ts.state_dict()
                assert _keys(vsd) == _keys(tsd), f"{name}: state_dict keys"
                resumed = []
                for ssd, osd in ((vsd, vopt.state_dict()), (tsd, topt.state_dict())):
                    # torch's resume order: build the scheduler, then load the optimizer's and the scheduler's state
                    ro = _opt(V, kind, groups)
                    rs = build(V, ro)
                    ro.load_state_dict(osd)
                    rs.load_state_dict(ssd)
                    resumed.append((ro, rs))
            for o, s in [(vopt, vs), (topt, ts)] + (resumed or []):
                o.step()
                s.step()


def _keys(sd):
    out = set()
    for k, v in sd.items():
        out.add(k)
        if k == "_schedulers":
            out |= {f"{k}.{kk}" for child in v for kk in _keys(child)}
    return out


PLATEAU = [
    dict(),
    dict(mode="max", factor=0.5, patience=2, threshold=0.01, threshold_mode="abs", cooldown=3),
    dict(mode="min", factor=0.3, patience=0, threshold=0.05, cooldown=1, min_lr=[0.004, 0.02]),
    dict(factor=0.5, patience=1, min_lr=0.05, eps=1e-3),
]


@pytest.mark.parametrize("kw", PLATEAU, ids=[f"plateau{i}" for i in range(len(PLATEAU))])
def test_reduce_lr_on_plateau_vs_torch(kw):
    rng = np.random.default_rng(3)
    metrics = list(np.round(np.maximum(1.0 / (1 + np.arange(STEPS) / 10), 0.4) + rng.uniform(0, 0.05, STEPS), 3))
    vopt, topt = _opt(V, "sgd", 2), _opt(T, "sgd", 2)
    vs, ts = V.lr_scheduler.ReduceLROnPlateau(vopt, **kw), T.lr_scheduler.ReduceLROnPlateau(topt, **kw)
    resumed = None
    for i, m in enumerate(metrics):
        vs.step(m)
        ts.step(m)
        if resumed:
            resumed.step(m)
            assert resumed.get_last_lr() == ts.get_last_lr(), f"resumed step {i}"
        assert vs.get_last_lr() == ts.get_last_lr(), f"step {i}"
        assert [g["lr"] for g in vopt.param_groups] == [g["lr"] for g in topt.param_groups]
        assert (vs.num_bad_epochs, vs.cooldown_counter, vs.best) == (ts.num_bad_epochs, ts.cooldown_counter, ts.best)
        if i == RESUME_AT:
            tsd = ts.state_dict()
            assert set(vs.state_dict()) == set(tsd)
            ro = _opt(V, "sgd", 2)
            resumed = V.lr_scheduler.ReduceLROnPlateau(ro, **kw)
            ro.load_state_dict(topt.state_dict())
            resumed.load_state_dict(tsd)
    assert vs.get_last_lr() != [0.1, 0.2], "the metric sequence never reduced the lr: the test is vacuous"


@pytest.mark.parametrize("name,kw,epochs", [
    ("StepLR", dict(step_size=3, gamma=0.5), [0, 4, 9, 2, 7]),
    ("MultiStepLR", dict(milestones=[2, 5, 5], gamma=0.5), [1, 6, 3, 5]),
    ("ExponentialLR", dict(gamma=0.9), [3, 1, 8]),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=0.01), [2, 7, 15, 4]),
    ("LinearLR", dict(start_factor=0.2, total_iters=6), [1, 3, 9]),
    ("PolynomialLR", dict(total_iters=8, power=1.5), [2, 5, 12]),
    ("ConstantLR", dict(factor=0.5, total_iters=3), [1, 4, 2]),
    ("CosineAnnealingWarmRestarts", dict(T_0=4, T_mult=2), [1, 5, 13, 30, 2]),
    ("CosineAnnealingWarmRestarts", dict(T_0=4), [1, 5, 13, 2.5]),
])
def test_deprecated_step_with_epoch_uses_closed_form(name, kw, epochs):
    vopt, topt = _opt(V, "sgd", 1), _opt(T, "sgd", 1)
    vs, ts = getattr(V.lr_scheduler, name)(vopt, **kw), getattr(T.lr_scheduler, name)(topt, **kw)
    for e in epochs:
        vopt.step(), topt.step()
        caught = []
        for s in (vs, ts):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                s.step(e)
            caught.append(any("epoch" in str(x.message) for x in w))
        assert caught[0] == caught[1], "the deprecation warning (torch's warns where it has a closed form)"
        np.testing.assert_allclose(vs.get_last_lr(), ts.get_last_lr(), rtol=1e-12, atol=0)
        assert vs.last_epoch == ts.last_epoch


def test_resume_with_last_epoch_and_warnings_like_torch():
    for lib in (V, T):
        o = _opt(lib, "sgd", 1)
        with pytest.raises(KeyError):
            lib.lr_scheduler.StepLR(o, step_size=2, last_epoch=4)  # no initial_lr in the groups yet
    # last_epoch >= 0 with initial_lr present: the first lr comes from the chainable form's initial branch
    res = []
    for lib in (V, T):
        o = _opt(lib, "sgd", 1)
        o.param_groups[0]["initial_lr"] = 0.5
        s = lib.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=10, last_epoch=3)
        seq = [s.get_last_lr()[0]]
        for _ in range(12):
            o.step()
            s.step()
            seq.append(s.get_last_lr()[0])
        res.append(seq)
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12)
    # stepping the scheduler before the optimizer warns (as torch does); the right order does not
    o = _opt(V, "sgd", 1)
    s = V.lr_scheduler.ExponentialLR(o, 0.9)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()
    o = _opt(V, "sgd", 1)
    s = V.lr_scheduler.ExponentialLR(o, 0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o.step()
        s.step()


BAD = [
    ("ConstantLR", lambda L, o: L.lr_scheduler.ConstantLR(o, factor=1.5)),
    ("LinearLR-start", lambda L, o: L.lr_scheduler.LinearLR(o, start_factor=0)),
    ("LinearLR-end", lambda L, o: L.lr_scheduler.LinearLR(o, end_factor=1.5)),
    ("LambdaLR-len", lambda L, o: L.lr_scheduler.LambdaLR(o, [lambda e: 1.0] * 3)),
    ("MultiplicativeLR-callable", lambda L, o: L.lr_scheduler.MultiplicativeLR(o, 0.5)),
    ("WarmRestarts-T0", lambda L, o: L.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=0)),
    ("WarmRestarts-T0-float", lambda L, o: L.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2.0)),
    ("WarmRestarts-Tmult", lambda L, o: L.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0)),
    ("WarmRestarts-eta", lambda L, o: L.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="x")),
    ("OneCycle-none", lambda L, o: L.lr_scheduler.OneCycleLR(o, max_lr=0.1)),
    ("OneCycle-total", lambda L, o: L.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=0)),
    ("OneCycle-epochs", lambda L, o: L.lr_scheduler.OneCycleLR(o, max_lr=0.1, epochs=-1, steps_per_epoch=3)),
    ("OneCycle-pct", lambda L, o: L.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1.5)),
    ("OneCycle-anneal", lambda L, o: L.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=10,
                                                               anneal_strategy="exp")),
    ("OneCycle-maxlr-len", lambda L, o: L.lr_scheduler.OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=10)),
    ("CyclicLR-mode", lambda L, o: L.lr_scheduler.CyclicLR(o, 0.01, 0.1, mode="sine")),
    ("Plateau-factor", lambda L, o: L.lr_scheduler.ReduceLROnPlateau(o, factor=1.0)),
    ("Plateau-mode", lambda L, o: L.lr_scheduler.ReduceLROnPlateau(o, mode="up")),
    ("Plateau-threshold_mode", lambda L, o: L.lr_scheduler.ReduceLROnPlateau(o, threshold_mode="x")),
    ("Plateau-min_lr", lambda L, o: L.lr_scheduler.ReduceLROnPlateau(o, min_lr=[0.1, 0.2])),
    ("Sequential-empty", lambda L, o: L.lr_scheduler.SequentialLR(o, [], milestones=[])),
    ("Sequential-milestones", lambda L, o: L.lr_scheduler.SequentialLR(
        o, [L.lr_scheduler.ExponentialLR(o, 0.9)], milestones=[3])),
    ("Sequential-plateau", lambda L, o: L.lr_scheduler.SequentialLR(
        o, [L.lr_scheduler.ExponentialLR(o, 0.9), L.lr_scheduler.ReduceLROnPlateau(o)], milestones=[3])),
    ("Sequential-other-opt", lambda L, o: L.lr_scheduler.SequentialLR(
        o, [L.lr_scheduler.ExponentialLR(_opt(L, "sgd", 1), 0.9)], milestones=[])),
    ("Chained-empty", lambda L, o: L.lr_scheduler.ChainedScheduler([])),
    ("Chained-plateau", lambda L, o: L.lr_scheduler.ChainedScheduler([L.lr_scheduler.ReduceLROnPlateau(o)])),
    ("not-an-optimizer", lambda L, o: L.lr_scheduler.StepLR(object(), 3)),
]


@pytest.mark.parametrize("name,build", BAD, ids=[n for n, _ in BAD])
def test_bad_arguments_raise_torchs_exception_type(name, build):
    with pytest.raises(Exception) as te:
        build(T, _opt(T, "sgd", 1))
    with pytest.raises(te.type):
        build(V, _opt(V, "sgd", 1))


def test_one_cycle_stepping_past_total_steps_raises_like_torch():
    for lib in (V, T):
        o = _opt(lib, "sgd", 1)
        s = lib.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=3, cycle_momentum=False)
        for _ in range(3):
            o.step()
            s.step()
        with pytest.raises(ValueError, match="Tried to step 4 times"):
            s.step()


def test_cycle_momentum_needs_momentum_like_torch():
    class NoMomentum(V.Optimizer):
        def __init__(self, params):
            super().__init__(params, dict(lr=0.1))

        def step(self, closure=None):
            pass

    for cls in ("OneCycleLR", "CyclicLR"):
        kw = dict(max_lr=0.1, total_steps=10) if cls == "OneCycleLR" else dict(base_lr=0.01, max_lr=0.1)
        with pytest.raises(ValueError, match="momentum"):
            getattr(V.lr_scheduler, cls)(NoMomentum([vk.nn.Parameter(vk.zeros(2))]), **kw)
