"""vk.optim.Rprop and ASGD (issue #15) against torch.optim's: 50 float64 steps (parameters and state to
1e-12), state_dict layout and loading torch's state_dict mid-way, the Vulkan device against the CPU, bad
arguments. The harness is test_optim_breadth.py's."""

import numpy as np
import pytest
import torch

import vkml as vk

from conftest import to_np
from test_optim_breadth import (_assert_params, _assert_state, _init, _pair, _step_both, _vulkan_or_skip,
                                Model)

CASES = [
    ("Rprop", dict()), ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.002, maximize=True, foreach=False)),
    ("ASGD", dict()), ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.6, t0=10, weight_decay=0.1)),
    ("ASGD", dict(lr=0.02, t0=0, maximize=True)),
]
IDS = [f"{n}{i}" for i, (n, _) in enumerate(CASES)]


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_fifty_float64_steps_match_torch(name, kw):
    vm, tm, vo, to = _pair(name, kw, split=True)
    for i in range(50):
        _step_both(vm, tm, vo, to, 1)
        _assert_params(vm, tm, f"{name}{kw} step {i}")
    _assert_state(vo, to, vm, tm)
    assert not np.allclose(to_np(vm.params[0]), _init()[0]), "the optimizer did not move the parameters"


def test_asgd_averages_after_t0_and_rprop_clamps_its_steps():
    # the branches the cases above reach: ASGD's running average (mu < 1) and Rprop's step bounds
    vm, tm, vo, to = _pair("ASGD", dict(lr=0.05, t0=3), split=False)
    _step_both(vm, tm, vo, to, 10)
    ax = to_np(vo.state[vm.params[0]]["ax"])
    assert not np.allclose(ax, to_np(vm.params[0])), "ax is only a copy of the parameter: no averaging ran"
    _assert_state(vo, to, vm, tm)
    vm, tm, vo, to = _pair("Rprop", dict(lr=0.05, etas=(0.3, 1.2), step_sizes=(0.03, 0.06)), split=False)
    _step_both(vm, tm, vo, to, 10)
    sizes = to_np(vo.state[vm.params[0]]["step_size"])
    assert sizes.max() == 0.06 and sizes.min() == 0.03, "the bounds were never reached"
    _assert_state(vo, to, vm, tm)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_state_dict_layout_and_loading_torchs_state_dict(name, kw):
    from test_optim_breadth import test_state_dict_layout_and_loading_torchs_state_dict as check
    check(name, kw)


@pytest.mark.parametrize("name,kw", [CASES[1], CASES[4]], ids=["Rprop", "ASGD"])
def test_vulkan_parameters_match_the_cpu_run(name, kw):
    _vulkan_or_skip()
    init = _init(3)
    models = [Model(vk, init, device=d, dtype=vk.float32) for d in ("cpu", "vulkan")]
    opts = [getattr(vk.optim, name)(m.params, **kw) for m in models]
    for _ in range(5):
        for m, o in zip(models, opts):
            m.backward()
            o.step()
    for pc, pv in zip(models[0].params, models[1].params):
        assert pv.device == vk.device("vulkan")
        np.testing.assert_allclose(to_np(pv), to_np(pc), rtol=2e-5, atol=2e-6)
        for k, v in opts[0].state[pc].items():
            vv = opts[1].state[pv][k]
            if v.ndim > 0:
                assert vv.device == vk.device("vulkan"), f"state {k} left the device"
            np.testing.assert_allclose(to_np(vv), to_np(v), rtol=2e-5, atol=2e-6)


BAD = [("Rprop", dict(lr=-1.0)), ("Rprop", dict(etas=(1.5, 1.2))), ("Rprop", dict(etas=(0.5, 0.9))),
       ("ASGD", dict(lr=-0.1)), ("ASGD", dict(weight_decay=-0.5))]


@pytest.mark.parametrize("name,kw", BAD, ids=[f"{n}-{list(k)[0]}{i}" for i, (n, k) in enumerate(BAD)])
def test_bad_arguments_raise_torchs_exception_type(name, kw):
    with pytest.raises(Exception) as te:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **kw)
    with pytest.raises(te.type) as ve:
        getattr(vk.optim, name)([vk.nn.Parameter(vk.zeros(2))], **kw)
    assert str(ve.value) == str(te.value)
