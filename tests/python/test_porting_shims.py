"""Names real programs import beside the ops, each against torch: vk.jit (TorchScript's names, run
eagerly), vk._assert, vk.nn.modules.utils (_pair and its kin), vk.utils.benchmark (Timer,
Measurement, Compare), vk.nn.attention (sdpa_kernel) and vk.nn.utils.stateless."""
import collections
import typing
import warnings

import pytest
import torch

import vkml as vk
from vkml import nn


class _Block(nn.Module):
    """A layer written as timm's and torchvision's are: a scripting guard, an unused helper."""

    def __init__(self, lib):
        super().__init__()
        self.lib = lib
        self.fc = lib.nn.Linear(3, 3)

    @vk.jit.unused
    def _checkpointed(self, x):
        return self.fc(x)

    def forward(self, x):
        if not self.lib.jit.is_scripting() and not self.lib.jit.is_tracing():
            x = self._checkpointed(x)
        self.lib._assert(x.shape[-1] == 3, "three features")
        return self.lib.jit.annotate(typing.List[int], [1])[0] * x


def test_jit_names_run_the_model_eagerly_regression():
    # `torch.jit.is_scripting()` in a layer, torch.jit.script(model) and torch.jit.trace(model, x)
    # in a program stopped on AttributeError
    m = _Block(vk)
    x = vk.randn(2, 3)
    vk.jit._warned = False
    with pytest.warns(UserWarning, match="no TorchScript"):
        scripted = vk.jit.script(m)
    assert scripted is m and vk.jit.trace(m, x) is m and vk.jit.trace_module(m, {"forward": x}) is m
    assert vk.equal(scripted(x), m.fc(x))
    assert vk.jit.is_scripting() is torch.jit.is_scripting() is False
    assert vk.jit.is_tracing() is torch.jit.is_tracing() is False
    assert not isinstance(scripted, vk.jit.ScriptModule)


def test_jit_decorators_and_values_as_torch_in_eager_mode():
    for lib in (torch, vk):
        def f(a):
            return a + 1
        assert lib.jit.ignore(f)(1) == 2 and lib.jit.ignore(drop=True)(f)(1) == 2
        assert lib.jit.unused(f)(1) == 2 and lib.jit.export(f)(1) == 2
        assert lib.jit.annotate(typing.Dict[str, int], {}) == {}
        assert lib.jit.Attribute(3, int).value == 3 and lib.jit.Attribute(3, int).type is int
        assert lib.jit.wait(lib.jit.fork(lambda a, b: a * b, 3, b=4)) == 12
        assert lib.jit.Final is typing.Final
    with pytest.raises(NotImplementedError, match="state_dict"):
        vk.jit.save(vk.nn.Linear(2, 2), "m.pt")
    with pytest.raises(NotImplementedError, match="state_dict"):
        vk.jit.load("m.pt")


def test_assert_as_torch():
    for lib in (torch, vk):
        lib._assert(True, "never")
        lib._assert(lib.tensor(True), "never")
        with pytest.raises(AssertionError, match="the message"):
            lib._assert(False, "the message")
        with pytest.raises(AssertionError, match="a tensor"):
            lib._assert(lib.tensor(False), "a tensor")


def test_nn_modules_utils_as_torchs():
    from torch.nn.modules import utils as tu

    from vkml.nn.modules import utils as vu
    for name, arg in [("_single", 3), ("_pair", 3), ("_pair", (1, 2)), ("_pair", [4, 5]), ("_triple", 2),
                      ("_quadruple", 0), ("_single", (7,))]:
        assert getattr(vu, name)(arg) == getattr(tu, name)(arg), (name, arg)
    assert vu._ntuple(5, "x")(1) == tu._ntuple(5, "x")(1)
    assert vu._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)
    assert vu._list_with_default([None, 3], [5, 6, 7]) == tu._list_with_default([None, 3], [5, 6, 7])
    assert vu._list_with_default(4, [1]) == 4
    with pytest.raises(ValueError, match="at least 3"):
        vu._list_with_default([1, 2], [1, 2])
    dicts = []
    for mod in (tu, vu):
        sd = collections.OrderedDict([("module.w", 1), ("module.b", 2), ("other", 3)])
        sd._metadata = collections.OrderedDict([("", {}), ("module", {"v": 1}), ("module.fc", {"v": 2})])
        mod.consume_prefix_in_state_dict_if_present(sd, "module.")
        dicts.append((list(sd.items()), list(sd._metadata.items())))
    assert dicts[0] == dicts[1]


def test_benchmark_timer_runs_the_statement_as_asked():
    calls = []

    def f():
        calls.append(vk.get_num_threads())
    before = vk.get_num_threads()
    t = vk.utils.benchmark.Timer("f()", setup="pass", globals={"f": f}, label="L", sub_label="s",
                                 description="vk", num_threads=1)
    m = t.timeit(50)
    assert len(calls) == 50 and set(calls) == {1} and vk.get_num_threads() == before
    assert m.number_per_run == 50 and len(m.times) == 1 and m.times[0] == m.raw_times[0] / 50
    assert m.median == m.mean == m.times[0] and m.iqr == 0.0 and m.title == "L: s"
    assert m.stmt == "f()" and m.description == "vk"
    calls.clear()
    m2 = t.blocked_autorange(min_run_time=0.02)
    assert sum(m2.raw_times) >= 0.02 and len(calls) >= m2.number_per_run * len(m2.raw_times)
    m3 = t.adaptive_autorange(min_run_time=0.01, max_run_time=0.5)
    assert sum(m3.raw_times) >= 0.01 and m3.median > 0
    two = vk.utils.benchmark.Timer("f()", globals={"f": f}, label="L", sub_label="s", description="two",
                                   num_threads=2).timeit(5)
    assert calls[-5:] == [2] * 5 and vk.get_num_threads() == before
    text = str(vk.utils.benchmark.Compare([m, m2, two]))
    assert "[-- L --]" in text and "vk" in text and "two" in text and "Times are in" in text
    assert "Median" in repr(m2) and "L: s" in repr(m)
    # torch's Measurement has the same fields
    import torch.utils.benchmark as tb  # torch's is imported on its own
    tm = tb.Timer("pass").timeit(10)
    for attr in ("median", "mean", "iqr", "times", "raw_times", "number_per_run", "title",
                 "significant_figures", "has_warnings", "task_spec", "description", "stmt"):
        assert hasattr(tm, attr) and hasattr(m, attr), attr
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NotImplementedError):
            t.repeat()


def test_sdpa_kernel_and_stateless_functional_call_as_torch():
    import numpy as np
    q = np.random.default_rng(0).standard_normal((1, 2, 4, 8)).astype(np.float32)
    outs = []
    for lib in (torch, vk):
        from_lib = __import__(lib.__name__ + ".nn.attention", fromlist=["sdpa_kernel"])
        with from_lib.sdpa_kernel([from_lib.SDPBackend.MATH, from_lib.SDPBackend.FLASH_ATTENTION]):
            t = lib.tensor(q)
            outs.append(lib.nn.functional.scaled_dot_product_attention(t, t, t, is_causal=True).numpy())
        with pytest.raises(AssertionError, match="SDPBackend or a list of SDPBackend instances, got str"):
            with from_lib.sdpa_kernel("math"):
                pass
        m = lib.nn.Linear(2, 1)
        w = {"weight": lib.ones(1, 2), "bias": lib.zeros(1)}
        assert lib.nn.utils.stateless.functional_call(m, w, (lib.tensor([[1.0, 2.0]]),)).item() == 3.0
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)
    assert [b.name for b in vk.nn.attention.SDPBackend] == list(torch.nn.attention.SDPBackend.__members__)
