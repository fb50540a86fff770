"""Lazy modules (torch.nn.Lazy*) and nn.parameter's UninitializedParameter / UninitializedBuffer, against
torch 2.13: the shapes inferred at the first call, the class change, values and gradients once torch's
weights are loaded, optimizers built before the first call, load_state_dict before it, devices, errors."""

import copy

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import vkml as vk
from vkml import nn
from vkml.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

from conftest import assert_close, devices, to_np

# (class name, constructor args, constructor kwargs, input shape)
CASES = [
    ("LazyLinear", (4,), {}, (3, 5)),
    ("LazyLinear", (4,), {"bias": False}, (2, 3, 6)),
    ("LazyConv1d", (4, 3), {"padding": 1}, (2, 3, 7)),
    ("LazyConv2d", (4, 3), {"groups": 2}, (2, 4, 6, 6)),
    ("LazyConv2d", (3, 2), {"padding_mode": "reflect", "padding": 1}, (3, 5, 5)),  # unbatched
    ("LazyConv3d", (2, 2), {"bias": False}, (1, 2, 4, 4, 3)),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2}, (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 2), {"groups": 2, "output_padding": 1, "stride": 2}, (2, 2, 3, 4)),
    ("LazyConvTranspose3d", (2, 2), {}, (2, 3, 3, 3)),  # unbatched
    ("LazyBatchNorm1d", (), {}, (5, 3)),
    ("LazyBatchNorm1d", (), {"momentum": None}, (4, 3, 6)),
    ("LazyBatchNorm2d", (), {"affine": False}, (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 3, 2)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 6)),
    ("LazyInstanceNorm2d", (), {"affine": False}, (2, 3, 4, 5)),
    ("LazyInstanceNorm3d", (), {"bias": False}, (2, 3, 3, 3, 4)),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _vk_state(tmodule):
    return {k: vk.tensor(v.detach().numpy()) for k, v in tmodule.state_dict().items()}


def _pair(name, args, kwargs, device="cpu"):
    """A vkml and a torch lazy module built the same way (float64)."""
    vm = getattr(nn, name)(*args, **kwargs, device=device, dtype=vk.float64)
    tm = getattr(torch.nn, name)(*args, **kwargs, dtype=torch.float64)
    return vm, tm


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=IDS)
def test_first_call_infers_shapes_and_becomes_the_layer(name, args, kwargs, shape, device):
    vm, tm = _pair(name, args, kwargs, device)
    assert vm.has_uninitialized_params() and tm.has_uninitialized_params()
    assert repr(vm) == repr(tm)
    x = _input(shape)
    vm(vk.tensor(x, device=device))
    tm(torch.tensor(x))
    assert type(vm).__name__ == type(tm).__name__ and type(vm) is getattr(nn, type(tm).__name__)
    assert not any(is_lazy(t) for t in vm.state_dict(keep_vars=True).values())
    vs, ts = vm.state_dict(), tm.state_dict()
    assert list(vs) == list(ts)
    for k in ts:
        assert tuple(vs[k].shape) == tuple(ts[k].shape), k
        assert vs[k].device == vk.device(device), k
        assert type(vs[k]) is vk.Tensor, k
    for k, v in vm.named_parameters():
        assert type(v) is nn.Parameter and v.requires_grad and v.dtype == vk.float64, k
    for k in ("running_mean", "running_var", "num_batches_tracked"):  # the first call's statistics
        if ts.get(k) is not None:
            assert_close(vs[k], ts[k], what=k)
    assert repr(vm) == repr(tm)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=IDS)
def test_values_and_gradients_match_torch_after_loading_its_weights(name, args, kwargs, shape, device):
    vm, tm = _pair(name, args, kwargs, device)
    x0 = _input(shape, seed=1)
    vm(vk.tensor(x0, device=device))
    tm(torch.tensor(x0))
    vm.load_state_dict(_vk_state(tm))
    x = _input(shape, seed=2)
    vx = vk.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    vy, ty = vm(vx), tm(tx)
    assert_close(vy, ty, what="output")
    g = _input(tuple(ty.shape), seed=3)
    vy.backward(vk.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    assert_close(vx.grad, tx.grad, what="input grad")
    tp = dict(tm.named_parameters())
    for k, p in vm.named_parameters():
        assert_close(p.grad, tp[k].grad, what=f"{k}.grad")


WITH_PARAMS = [(c, i) for c, i in zip(CASES, IDS) if c[2].get("affine", True)]


@pytest.mark.parametrize("name,args,kwargs,shape", [c for c, _ in WITH_PARAMS], ids=[i for _, i in WITH_PARAMS])
def test_optimizer_built_before_first_call_updates_the_parameters(name, args, kwargs, shape):
    vm, tm = _pair(name, args, kwargs)
    vopt = vk.optim.SGD(vm.parameters(), lr=0.5, momentum=0.9)
    topt = torch.optim.SGD(tm.parameters(), lr=0.5, momentum=0.9)
    before = list(vm.parameters())
    x = _input(shape)
    vm(vk.tensor(x))
    tm(torch.tensor(x))
    assert [id(p) for p in vm.parameters()] == [id(p) for p in before]  # materialized in place
    vm.load_state_dict(_vk_state(tm))
    for _ in range(2):
        vopt.zero_grad()
        topt.zero_grad()
        (vm(vk.tensor(x)) ** 2).sum().backward()
        (tm(torch.tensor(x)) ** 2).sum().backward()
        vopt.step()
        topt.step()
    tp = dict(tm.named_parameters())
    for k, p in vm.named_parameters():
        assert_close(p, tp[k], what=k)


NON_LAZY = [("LazyLinear", ("Linear", (5, 4)), (3, 5)),
            ("LazyConv2d", ("Conv2d", (6, 4, 3)), (2, 6, 5, 5)),
            ("LazyConvTranspose1d", ("ConvTranspose1d", (6, 4, 3)), (2, 6, 5)),
            ("LazyBatchNorm2d", ("BatchNorm2d", (3,)), (2, 3, 4, 4)),
            ("LazyInstanceNorm1d", ("InstanceNorm1d", (3,)), (2, 3, 6))]
LAZY_ARGS = {"LazyLinear": (4,), "LazyConv2d": (4, 3), "LazyConvTranspose1d": (4, 3)}


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("lazy,full,shape", NON_LAZY, ids=[c[0] for c in NON_LAZY])
def test_load_state_dict_before_first_call_takes_the_checkpoint_shapes(lazy, full, shape, device, tmp_path):
    kw = {"affine": True, "track_running_stats": True} if full[0] == "InstanceNorm1d" else {}
    tm = getattr(torch.nn, full[0])(*full[1], **kw, dtype=torch.float64)
    if full[0] in ("BatchNorm2d", "InstanceNorm1d"):  # running stats and affine parameters that are not defaults
        tm(torch.tensor(_input(shape, seed=4)))
        with torch.no_grad():
            for p in tm.parameters():
                p.uniform_(-1, 1)
        tm.eval()
    vm = getattr(nn, lazy)(*LAZY_ARGS.get(lazy, ()), device=device, dtype=vk.float64)
    path = str(tmp_path / "full.safetensors")  # a torch checkpoint of the non-lazy layer
    save_file({k: v.contiguous() for k, v in tm.state_dict().items()}, path)
    assert str(vm.load_state_dict(vk.load(path))) == "<All keys matched successfully>"
    assert type(vm).__name__ == lazy and not vm.has_uninitialized_params()
    assert getattr(vm, vm._inferred) == full[1][0]  # in_features etc. read from the checkpoint
    vm.train(tm.training)
    x = _input(shape, seed=5)
    assert_close(vm(vk.tensor(x, device=device)), tm(torch.tensor(x)), what="output")
    assert type(vm).__name__ == full[0]
    for k, v in vm.state_dict().items():
        assert_close(v, tm.state_dict()[k], what=k)


def test_state_dict_of_an_uninitialized_module_and_loading_it():
    m = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyBatchNorm1d())
    sd = m.state_dict()
    tsd = torch.nn.Sequential(torch.nn.LazyLinear(3), torch.nn.ReLU(), torch.nn.LazyBatchNorm1d()).state_dict()
    assert list(sd) == list(tsd)
    assert {k: repr(v) for k, v in sd.items() if k != "2.num_batches_tracked"} == \
        {k: repr(v) for k, v in tsd.items() if k != "2.num_batches_tracked"}
    other = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyBatchNorm1d())
    assert str(other.load_state_dict(sd)) == "<All keys matched successfully>"  # lazy into lazy: nothing copied
    assert other[0].has_uninitialized_params() and other[2].has_uninitialized_params()
    init = nn.Linear(2, 3)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        init.load_state_dict({"weight": sd["0.weight"], "bias": sd["0.bias"]})
    assert other(vk.randn(4, 2)).shape == (4, 3)


def test_first_call_values_equal_the_non_lazy_layer_with_the_same_seed():
    vk.manual_seed(7)
    lazy = nn.LazyConv2d(4, 3)
    lazy(vk.zeros(1, 2, 5, 5))
    vk.manual_seed(7)
    full = nn.Conv2d(2, 4, 3)
    for k, v in full.state_dict().items():
        assert_close(lazy.state_dict()[k], v, what=k)


@pytest.mark.parametrize("device", devices())
def test_module_to_before_first_call_keeps_the_tensors_uninitialized(device):
    m = nn.LazyBatchNorm1d().to(device).double()
    kinds = {k: type(v) for k, v in m.state_dict(keep_vars=True).items()}
    assert kinds == {"weight": UninitializedParameter, "bias": UninitializedParameter,
                     "running_mean": UninitializedBuffer, "running_var": UninitializedBuffer,
                     "num_batches_tracked": vk.Tensor}
    m(vk.randn(4, 3, dtype=vk.float64, device=device))
    for k, v in m.state_dict().items():
        assert v.device == vk.device(device), k
        assert v.dtype == (vk.int64 if k == "num_batches_tracked" else vk.float64), k


def test_unbatched_instance_norm_reads_channels_from_dim_0():
    # torch's LazyInstanceNorm reads dim 1 even for an unbatched (C, L) input (its forward then fails)
    x = _input((3, 7))
    m = nn.LazyInstanceNorm1d(dtype=vk.float64)
    y = m(vk.tensor(x))
    assert m.num_features == 3
    t = torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True, dtype=torch.float64)
    assert_close(y, t(torch.tensor(x)))
    assert_close(m.running_mean, t.running_mean)


def test_deepcopy_before_first_call_leaves_original_lazy():
    # regression: the copy's first call removed its init hook through the handle, whose weak
    # references point at the original's hook dicts, so the original never initialized
    m = nn.LazyLinear(2)
    c = copy.deepcopy(m)
    assert is_lazy(c.weight) and c.weight is not m.weight
    c(vk.randn(3, 4))
    assert type(c) is nn.Linear and type(m) is nn.LazyLinear
    m(vk.randn(3, 5))
    assert type(m) is nn.Linear and m.weight.shape == (2, 5) and not m._forward_pre_hooks


def test_uninitialized_parameter_api():
    p = UninitializedParameter()
    assert isinstance(p, nn.Parameter) and is_lazy(p) and p.requires_grad
    assert nn.UninitializedParameter is nn.parameter.UninitializedParameter
    assert repr(p) == "<UninitializedParameter>" == str(p)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter or buffer"):
        p.shape
    q = copy.deepcopy(UninitializedParameter(False, dtype=vk.float64))
    assert type(q) is UninitializedParameter and not q.requires_grad
    q.materialize((2, 3))
    assert type(q) is nn.Parameter and q.shape == (2, 3) and q.dtype == vk.float64 and not q.requires_grad
    p.materialize(4, dtype=vk.float64)
    assert not is_lazy(p) and p.shape == (4,) and p.dtype == vk.float64 and p.is_leaf


def test_uninitialized_buffer_api():
    b = nn.UninitializedBuffer(persistent=False)
    assert is_lazy(b) and isinstance(b, vk.Tensor) and not isinstance(b, nn.Parameter)
    assert not b.requires_grad and b.persistent is False and repr(b) == "<UninitializedBuffer>"
    assert b.to(vk.float32) is b and type(b.double()) is UninitializedBuffer and b.double().dtype == vk.float64
    b.materialize([2, 2])
    assert not is_lazy(b) and isinstance(b, vk.Tensor) and b.shape == (2, 2)
    assert not is_lazy(torch.zeros(1)) and not is_lazy(None)


def test_bad_inputs_raise_typed_errors():
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"):
        nn.LazyConv2d(4, 3)(vk.zeros(2, 3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv1d(4, 3, groups=2)(vk.zeros(1, 3, 5))
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.LazyConvTranspose1d(3, 3, groups=2)(vk.zeros(1, 4, 5))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 1D input\)"):
        nn.LazyBatchNorm1d()(vk.zeros(3))
    with pytest.raises(ValueError, match=r"expected 4D or 5D input \(got 3D input\)"):
        nn.LazyInstanceNorm3d()(vk.zeros(2, 3, 4))
    with pytest.raises(RuntimeError, match="LazyLinear: expected an input of at least 1 dimension"):
        nn.LazyLinear(3)(vk.tensor(1.0))
    with pytest.raises(TypeError, match="LazyLinear: expected a vkml Tensor as input, got list"):
        nn.LazyLinear(3)([1.0, 2.0])
    with pytest.raises(ValueError, match="materialize: the shape must be non-negative ints"):
        UninitializedParameter().materialize((2, -1))
    m = nn.LazyLinear(3)
    with pytest.raises(RuntimeError):
        m(vk.tensor(1.0))
    assert type(m) is nn.LazyLinear and m.has_uninitialized_params()  # a failed first call leaves it lazy


def test_mixin_without_initialize_parameters_and_incomplete_initialization():
    class Bare(nn.modules.lazy.LazyModuleMixin, nn.Module):
        def forward(self, x):
            return x
    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented for Bare"):
        Bare()(vk.zeros(1))

    class Half(nn.modules.lazy.LazyModuleMixin, nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = UninitializedParameter(), UninitializedParameter()

        def initialize_parameters(self, x):
            self.a.materialize((1,))
    with pytest.raises(RuntimeError, match="module Half has not been fully initialized"):
        Half()(vk.zeros(1))


def test_exports_match_torch():
    names = [n for n in dir(torch.nn) if n.startswith("Lazy") or n.startswith("Uninitialized")]
    assert names and all(hasattr(nn, n) for n in names)
    assert all(n in nn.modules.__all__ for n in names if n.startswith("Lazy"))
    for n in ("Parameter", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin", "is_lazy"):
        assert hasattr(nn.parameter, n), n
    assert nn.modules.lazy.LazyModuleMixin in nn.LazyLinear.__mro__
    assert to_np(nn.InstanceNorm3d(2)(vk.ones(1, 2, 2, 2, 2))).shape == (1, 2, 2, 2, 2)


def test_conv_transpose_repr_puts_output_padding_before_groups():
    # regression: ConvTranspose*d's repr appended output_padding after groups= and bias=, not where torch has it
    kw = dict(stride=2, output_padding=1, groups=2, dilation=2, bias=False)
    assert repr(nn.ConvTranspose2d(4, 2, 3, **kw)) == repr(torch.nn.ConvTranspose2d(4, 2, 3, **kw))


def test_user_lazy_module_keeps_its_reset_parameters_and_loads():
    # the mixin itself adds only torch's API: a user's reset_parameters and load_state_dict are untouched
    class Scale(nn.modules.lazy.LazyModuleMixin, nn.Module):
        cls_to_become = None

        def __init__(self):
            super().__init__()
            self.w = UninitializedParameter()
            self.resets = 0

        def reset_parameters(self):
            self.resets += 1
            nn.init.ones_(self.w)

        def initialize_parameters(self, x):
            if self.has_uninitialized_params():
                self.w.materialize(tuple(x.shape[1:]))
                self.reset_parameters()

        def forward(self, x):
            return x * self.w

    m = Scale()
    assert to_np(m(vk.full((2, 3), 2.0))).tolist() == [[2.0] * 3] * 2 and m.resets == 1
    assert type(m) is Scale and not m._forward_pre_hooks
    other = Scale()
    assert str(other.load_state_dict({"w": vk.tensor([3.0, 4.0])})) == "<All keys matched successfully>"
    assert to_np(other(vk.ones(1, 2))).tolist() == [[3.0, 4.0]] and other.resets == 0


def test_save_of_an_uninitialized_module_refuses_instead_of_writing_empty_weights_regression(tmp_path):
    # vk.save wrote the uninitialized weight as an empty tensor: loading the file gave shape-(0,)
    # weights. It now refuses, and the file saved before stays as it was.
    path = tmp_path / "m.safetensors"
    vk.save({"w": vk.ones(2)}, str(path))
    m = nn.LazyLinear(3)
    with pytest.raises(RuntimeError, match=r"vk.save: obj\[weight\] is an uninitialized parameter"):
        vk.save(m.state_dict(), str(path))
    with pytest.raises(RuntimeError, match=r"vk.save: obj\[model\]\[bias\] is an uninitialized"):
        vk.save({"model": {"bias": m.bias}, "step": 1}, str(path))
    assert vk.load(str(path))["w"].tolist() == [1.0, 1.0]
    m(vk.ones(4, 5))
    vk.save(m.state_dict(), str(path))
    assert tuple(vk.load(str(path))["weight"].shape) == (3, 5)
