"""Issue #16 item 6: nn.Module's API against torch's: forward pre-hooks and forward hooks (with_kwargs,
prepend, always_call, handles), full backward (pre-)hooks with the gradients torch gives them,
traversal (named_modules with memo/prefix/remove_duplicate, named_children, apply), buffers that are
not persistent, lookups by name, load_state_dict(strict=False) and its errors, ParameterList and
ParameterDict."""

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import nn

from conftest import to_np

TN = torch.nn


def close(a, b, tol=1e-12):
    np.testing.assert_allclose(to_np(a), to_np(b), rtol=tol, atol=tol)


def _pair(make):
    vm, tm = make(nn).double(), make(TN).double()
    vm.load_state_dict({k: vk.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return vm, tm


# ---- forward hooks ---------------------------------------------------------------------------------

def _record_forward_hooks(lib, m, log):
    hs = [m.register_forward_pre_hook(lambda mod, args: log.append("pre1")),
          m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,)),
          m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True),
          m.register_forward_pre_hook(lambda mod, args, kwargs: (args, kwargs), with_kwargs=True),
          m.register_forward_hook(lambda mod, args, out: out + 1),
          m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("kw", sorted(kwargs))) or out * 3,
                                  with_kwargs=True),
          m.register_forward_hook(lambda mod, args, out: log.append("first"), prepend=True)]
    return hs


def test_forward_hooks_equal_torch():
    vm, tm = _pair(lambda lib: lib.Linear(3, 2))
    vlog, tlog = [], []
    vh, th = _record_forward_hooks(nn, vm, vlog), _record_forward_hooks(TN, tm, tlog)
    x = np.random.default_rng(0).standard_normal((4, 3))
    close(vm(vk.tensor(x)), tm(torch.tensor(x)))
    assert vlog == tlog == ["pre0", "pre1", "first", ("kw", [])]
    for h in vh[1:]:
        h.remove()
    for h in th[1:]:
        h.remove()
    close(vm(vk.tensor(x)), tm(torch.tensor(x)))
    with vm.register_forward_hook(lambda mod, args, out: out * 0):
        assert np.all(to_np(vm(vk.tensor(x))) == 0)
    assert np.any(to_np(vm(vk.tensor(x))) != 0)  # the context manager removed it


def test_forward_pre_hook_with_kwargs_changes_kwargs():
    class M(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale
    m = M()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 10.0}), with_kwargs=True)
    assert m(vk.ones(2)).tolist() == [10.0, 10.0]
    m2 = M()
    m2.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
        m2(vk.ones(2))


def test_always_call_hook_runs_when_forward_raises():
    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    for lib in (nn, TN):
        m = Bad() if lib is nn else type("TBad", (TN.Module,), {"forward": lambda self, x: Bad.forward(self, x)})()
        seen = []
        m.register_forward_hook(lambda mod, args, out: seen.append(("always", out)), always_call=True)
        m.register_forward_hook(lambda mod, args, out: seen.append("normal"))
        with pytest.raises(ValueError, match="boom"):
            m(1)
        assert seen == [("always", None)]


# ---- full backward hooks ---------------------------------------------------------------------------

def _bilinear_hooks(vm, tm, modify):
    logs = {"v": [], "t": []}

    def hooks(key):
        def pre(mod, gout):
            logs[key].append(("pre", [to_np(g) for g in gout]))
            return (gout[0] * 2,) if modify else None

        def post(mod, gin, gout):
            logs[key].append(("post", [None if g is None else to_np(g) for g in gin], [to_np(g) for g in gout]))
            return (gin[0] * 3, gin[1]) if modify else None
        return pre, post
    for key, m in (("v", vm), ("t", tm)):
        pre, post = hooks(key)
        m.register_full_backward_pre_hook(pre)
        m.register_full_backward_hook(post)
    return logs


@pytest.mark.parametrize("modify", [False, True])
def test_full_backward_hooks_equal_torch(modify):
    vm, tm = _pair(lambda lib: lib.Bilinear(3, 2, 4))
    logs = _bilinear_hooks(vm, tm, modify)
    rng = np.random.default_rng(1)
    a, b, up = rng.standard_normal((5, 3)), rng.standard_normal((5, 2)), rng.standard_normal((5, 4))
    va, vb = vk.tensor(a, requires_grad=True), vk.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (vm(va, vb) * vk.tensor(up)).sum().backward()
    (tm(ta, tb) * torch.tensor(up)).sum().backward()
    assert [e[0] for e in logs["v"]] == [e[0] for e in logs["t"]] == ["pre", "post"]
    for ev, et in zip(logs["v"], logs["t"]):
        for gv, gt in zip(ev[1:], et[1:]):
            for x, y in zip(gv, gt):
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    close(va.grad, ta.grad)
    close(vb.grad, tb.grad)
    close(vm.weight.grad, tm.weight.grad)


def test_full_backward_hook_with_an_input_that_does_not_require_grad():
    vm, tm = _pair(lambda lib: lib.Bilinear(3, 2, 4))
    logs = _bilinear_hooks(vm, tm, False)
    a, b = np.ones((2, 3)), np.ones((2, 2))
    vm(vk.tensor(a, requires_grad=True), vk.tensor(b)).sum().backward()
    tm(torch.tensor(a, requires_grad=True), torch.tensor(b)).sum().backward()
    (_, gin_v, _), (_, gin_t, _) = logs["v"][1], logs["t"][1]
    for gv, gt in zip(gin_v, gin_t):  # torch gives zeros for the input that does not require grad
        np.testing.assert_allclose(gv, gt, rtol=1e-12)


def test_full_backward_hook_when_no_input_requires_grad_fires_on_the_outputs():
    vm, tm = _pair(lambda lib: lib.Linear(3, 2))
    seen = {}

    def hook(key):
        def fn(m, gi, go):
            seen[key] = (gi, to_np(go[0]))
        return fn
    vm.register_full_backward_hook(hook("v"))
    tm.register_full_backward_hook(hook("t"))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        vm(vk.ones(2, 3, dtype=vk.float64)).sum().backward()
    with pytest.warns(UserWarning):
        tm(torch.ones(2, 3, dtype=torch.float64)).sum().backward()
    assert seen["v"][0] == seen["t"][0] == (None,)
    np.testing.assert_array_equal(seen["v"][1], seen["t"][1])
    assert vm.weight.grad is not None


def test_backward_hook_handle_removes_it():
    m = nn.Linear(2, 2)
    calls = []
    h = m.register_full_backward_hook(lambda mod, gi, go: calls.append(1))
    m(vk.ones(1, 2, requires_grad=True)).sum().backward()
    h.remove()
    m(vk.ones(1, 2, requires_grad=True)).sum().backward()
    assert calls == [1]


# ---- traversal and lookups -------------------------------------------------------------------------

def _shared(lib):
    shared = lib.Linear(2, 2)
    return lib.Sequential(shared, lib.ReLU(), lib.Sequential(shared, lib.Tanh()))


def test_named_modules_children_apply_equal_torch():
    vm, tm = _shared(nn), _shared(TN)
    for kw in [{}, {"prefix": "net"}, {"remove_duplicate": False}, {"memo": set()}]:
        assert [n for n, _ in vm.named_modules(**kw)] == [n for n, _ in tm.named_modules(**kw)], kw
    assert [n for n, _ in vm.named_children()] == [n for n, _ in tm.named_children()]
    order_v, order_t = [], []
    vm.apply(lambda m: order_v.append(type(m).__name__))
    tm.apply(lambda m: order_t.append(type(m).__name__))
    assert order_v == order_t
    assert [n for n, _ in vm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in vm.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in tm.named_parameters(remove_duplicate=False)]


def test_lookups_by_name_and_their_errors():
    for lib in (nn, TN):
        m = lib.Sequential(lib.Linear(2, 2), lib.BatchNorm1d(2))
        m.register_module("extra", lib.ReLU())
        assert m.get_submodule("1") is m[1] and m.get_submodule("extra") is m.extra
        assert m.get_parameter("0.weight") is m[0].weight
        assert m.get_buffer("1.running_mean") is m[1].running_mean
        with pytest.raises(AttributeError, match="has no attribute `nope`"):
            m.get_submodule("nope")
        with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
            m.get_parameter("1.running_mean")
        with pytest.raises(AttributeError, match="`weight` is not a buffer"):
            m.get_buffer("0.weight")


def test_non_persistent_buffer_is_not_in_state_dict():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("kept", vk.ones(2))
            self.register_buffer("scratch", vk.zeros(2), persistent=False)
    m = M()
    assert list(m.state_dict()) == ["kept"] and [n for n, _ in m.named_buffers()] == ["kept", "scratch"]
    r = m.load_state_dict({"kept": vk.zeros(2), "scratch": vk.ones(2)}, strict=False)
    assert r.unexpected_keys == ["scratch"] and r.missing_keys == []
    assert m.scratch.tolist() == [0.0, 0.0]


def test_load_state_dict_strict_false_returns_keys_as_torch():
    vm, tm = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)), TN.Sequential(TN.Linear(2, 3), TN.BatchNorm1d(3))
    sd = {k: v.detach().numpy() for k, v in tm.state_dict().items()}
    del sd["1.running_var"]
    sd["2.weight"] = np.zeros(1, np.float32)
    rv = vm.load_state_dict({k: vk.tensor(v) for k, v in sd.items()}, strict=False)
    rt = tm.load_state_dict({k: torch.tensor(v) for k, v in sd.items()}, strict=False)
    assert rv.missing_keys == rt.missing_keys and rv.unexpected_keys == rt.unexpected_keys
    assert tuple(rv) == (rv.missing_keys, rv.unexpected_keys)
    full = {k: vk.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    assert repr(vm.load_state_dict(full)) == repr(tm.load_state_dict(tm.state_dict())) == \
        "<All keys matched successfully>"
    for bad, msg in [(dict(full, **{"0.weight": vk.zeros(2, 2)}), "size mismatch for 0.weight"),
                     ({k: v for k, v in full.items() if k != "0.bias"}, r'Missing key\(s\) in state_dict: "0.bias"'),
                     (dict(full, extra=vk.zeros(1)), r'Unexpected key\(s\) in state_dict: "extra"')]:
        with pytest.raises(RuntimeError, match=msg):
            vm.load_state_dict(bad)
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):  # strict=False still checks shapes
        vm.load_state_dict(dict(full, **{"0.weight": vk.zeros(2, 2)}), strict=False)


# ---- ParameterList / ParameterDict -----------------------------------------------------------------

def test_parameter_list_equals_torch():
    class Net:
        @staticmethod
        def make(lib, tensor):
            m = lib.Module()
            m.ps = lib.ParameterList([lib.Parameter(tensor([1.0, 2.0])), tensor([[3.0]])])
            m.ps.append(lib.Parameter(tensor([4.0])))
            return m
    vm, tm = Net.make(nn, vk.tensor), Net.make(TN, torch.tensor)
    assert list(vm.state_dict()) == list(tm.state_dict()) == ["ps.0", "ps.1", "ps.2"]
    assert all(isinstance(p, nn.Parameter) for p in vm.ps) and len(vm.ps) == 3
    assert vm.ps[-1].tolist() == [4.0] and len(vm.ps[1:]) == 2
    assert repr(vm.ps).replace("vkml", "torch") == repr(tm.ps)
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable"):
        vm.ps.extend(5)
    with pytest.raises(IndexError):
        vm.ps[3]


def test_parameter_dict_equals_torch():
    vd = nn.ParameterDict({"b": vk.ones(2), "a": nn.Parameter(vk.zeros(1))})
    td = TN.ParameterDict({"b": torch.ones(2), "a": TN.Parameter(torch.zeros(1))})
    assert list(vd.keys()) == list(td.keys()) and list(vd.state_dict()) == list(td.state_dict())
    vd["c"] = vk.ones(3)
    assert isinstance(vd["c"], nn.Parameter) and "c" in vd and len(vd) == 3
    assert vd.pop("c").tolist() == [1.0, 1.0, 1.0] and "c" not in vd
    assert repr(vd).replace("vkml", "torch") == repr(td)
    with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
        vd[1] = vk.ones(1)


def test_module_state_flags_zero_grad_and_dtype():
    vm, tm = _pair(lambda lib: lib.Sequential(lib.Linear(2, 2), lib.Dropout(0.5)))
    assert vm.eval() is vm and not vm[1].training
    vm.train()
    assert vm[1].training
    vm(vk.ones(1, 2, dtype=vk.float64)).sum().backward()
    vm.zero_grad(set_to_none=False)
    assert all(np.all(to_np(p.grad) == 0) for p in vm.parameters())
    vm.zero_grad()
    assert all(p.grad is None for p in vm.parameters())
    assert vm.requires_grad_(False) is vm and not any(p.requires_grad for p in vm.parameters())
    assert vm.to(vk.float32)[0].weight.dtype == vk.float32
    assert repr(vm).replace("vkml", "torch") == repr(tm)
