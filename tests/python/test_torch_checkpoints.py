"""Issue #16 item 7: torch checkpoints load into the same vkml model. For every layer type of vk.nn
(a table: one line per layer), torch builds the module, trains it a step (so running statistics
move), saves its state_dict with safetensors.torch.save_file and with torch.save;
model.load_state_dict(vk.load(path)) loads either into the vkml module, whose outputs (training and
eval mode) then equal torch's. torch.save's zip archives are read without running code from them
(vkml/_torch_format.py): a pickle naming anything but tensors, containers and torch's small value
types is refused, as torch.load(weights_only=True) refuses it; a bare (pre-1.6) pickle is refused
with an error that names the format."""

import os
import pickle
import zipfile

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import vkml as vk
from vkml import nn

from conftest import to_np

TN = torch.nn


def _sequential(lib):
    return lib.Sequential(lib.Linear(4, 5), lib.ReLU(), lib.ModuleList([lib.LayerNorm(5)]),
                          lib.ModuleDict({"out": lib.Linear(5, 3)}))


class _Containers:
    """Sequential, ModuleList and ModuleDict nested, called through a small forward."""

    @staticmethod
    def make(lib):
        m = _sequential(lib)
        return m

    @staticmethod
    def call(m, x):
        x = m[1](m[0](x))
        return m[3]["out"](m[2][0](x))


def _weight_normed(lib):
    return lib.utils.parametrizations.weight_norm(lib.Linear(4, 3))


# (name, constructor taking torch.nn or vk.nn, input shapes, how to call it). Adding a layer adds a line.
LAYERS = [
    ("Linear", lambda lib: lib.Linear(4, 3), [(2, 4)], None),
    ("Linear_nobias", lambda lib: lib.Linear(4, 3, bias=False), [(2, 4)], None),
    ("Conv1d", lambda lib: lib.Conv1d(2, 3, 3, padding=1), [(2, 2, 7)], None),
    ("Conv2d", lambda lib: lib.Conv2d(2, 3, 3, stride=2), [(2, 2, 7, 7)], None),
    ("BatchNorm1d", lambda lib: lib.BatchNorm1d(3), [(4, 3)], None),
    ("BatchNorm2d", lambda lib: lib.BatchNorm2d(3, momentum=0.3), [(2, 3, 4, 4)], None),
    ("LayerNorm", lambda lib: lib.LayerNorm([3, 4]), [(2, 3, 4)], None),
    ("LayerNorm_nobias", lambda lib: lib.LayerNorm(4, bias=False), [(2, 4)], None),
    ("GroupNorm", lambda lib: lib.GroupNorm(2, 4), [(2, 4, 3)], None),
    ("InstanceNorm1d", lambda lib: lib.InstanceNorm1d(3, affine=True, track_running_stats=True), [(2, 3, 5)], None),
    ("InstanceNorm2d", lambda lib: lib.InstanceNorm2d(3, track_running_stats=True), [(2, 3, 4, 4)], None),
    ("RMSNorm", lambda lib: lib.RMSNorm(4), [(2, 4)], None),
    ("Embedding", lambda lib: lib.Embedding(6, 3, padding_idx=0), [("int", 6, (2, 5))], None),
    ("Bilinear", lambda lib: lib.Bilinear(3, 2, 4), [(2, 3), (2, 2)], None),
    ("PReLU", lambda lib: lib.PReLU(3), [(2, 3, 4)], None),
    ("containers", _Containers.make, [(2, 4)], _Containers.call),
    ("Sequential", _sequential, [(2, 4)], lambda m, x: m[3]["out"](m[2][0](m[1](m[0](x))))),
    ("weight_norm", _weight_normed, [(2, 4)], None),
    # recurrent layers (outputs first of (output, state))
    ("RNN", lambda lib: lib.RNN(3, 4, num_layers=2, bidirectional=True), [(5, 2, 3)], lambda m, x: m(x)[0]),
    ("LSTM", lambda lib: lib.LSTM(3, 4, proj_size=2, batch_first=True), [(2, 5, 3)], lambda m, x: m(x)[0]),
    ("GRU", lambda lib: lib.GRU(3, 4, num_layers=2), [(5, 2, 3)], lambda m, x: m(x)[0]),
    ("RNNCell", lambda lib: lib.RNNCell(3, 4, nonlinearity="relu"), [(2, 3)], None),
    ("LSTMCell", lambda lib: lib.LSTMCell(3, 4), [(2, 3)], lambda m, x: m(x)[1]),
    ("GRUCell", lambda lib: lib.GRUCell(3, 4), [(2, 3)], None),
    # attention and Transformer layers (dropout 0: the same in training mode)
    ("MultiheadAttention", lambda lib: lib.MultiheadAttention(4, 2, kdim=3, vdim=5), [(3, 2, 4), (6, 2, 3), (6, 2, 5)],
     lambda m, q, k, v: m(q, k, v)[0]),
    ("TransformerEncoderLayer", lambda lib: lib.TransformerEncoderLayer(4, 2, 8, dropout=0.0, norm_first=True),
     [(3, 2, 4)], None),
    ("TransformerDecoderLayer", lambda lib: lib.TransformerDecoderLayer(4, 2, 8, dropout=0.0), [(3, 2, 4), (5, 2, 4)],
     None),
    ("Transformer", lambda lib: lib.Transformer(4, 2, 1, 1, 8, dropout=0.0), [(3, 2, 4), (5, 2, 4)], None),
    # transposed and 3-D convolutions, 3-D batch norm, embedding bags
    ("ConvTranspose1d", lambda lib: lib.ConvTranspose1d(2, 3, 3, stride=2, output_padding=1), [(2, 2, 5)], None),
    ("ConvTranspose2d", lambda lib: lib.ConvTranspose2d(2, 4, 3, stride=2, groups=2), [(2, 2, 4, 4)], None),
    ("ConvTranspose3d", lambda lib: lib.ConvTranspose3d(2, 3, 2), [(1, 2, 3, 3, 3)], None),
    ("Conv3d", lambda lib: lib.Conv3d(2, 3, 2, padding=1), [(1, 2, 3, 4, 4)], None),
    ("BatchNorm3d", lambda lib: lib.BatchNorm3d(2), [(2, 2, 3, 3, 3)], None),
    ("InstanceNorm3d", lambda lib: lib.InstanceNorm3d(2, affine=True, track_running_stats=True),
     [(2, 2, 3, 3, 3)], None),
    ("EmbeddingBag", lambda lib: lib.EmbeddingBag(6, 3, mode="mean"), [("int", 6, (2, 4))], None),
    ("SyncBatchNorm", lambda lib: lib.SyncBatchNorm(3), [(4, 3, 2)], None),
    # the rest of torch.nn (#16): adaptive softmax through log_prob (every cluster's projection gets a
    # gradient), the loss with its own Linear (K-dimensional, with bias)
    ("AdaptiveLogSoftmaxWithLoss", lambda lib: lib.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7], div_value=2.0,
                                                                              head_bias=True),
     [(4, 8)], lambda m, x: m.log_prob(x)),
    ("LinearCrossEntropyLoss", lambda lib: lib.LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True),
     [(5, 3), ("int", 4, (5, 2))], None),
]


def _inputs(shapes, rng):
    out = []
    for s in shapes:
        if s[0] == "int":
            out.append(rng.integers(0, s[1], s[2]))
        else:
            out.append(rng.standard_normal(s).astype(np.float32))
    return out


def _torch_model(make, shapes, call, rng):
    """The torch module, after one training step (so its running statistics are not the initial ones)."""
    torch.manual_seed(0)
    tm = make(TN)
    xs = [torch.tensor(a) for a in _inputs(shapes, rng)]
    out = call(tm, *xs) if call else tm(*xs)
    if list(tm.parameters()):  # a plain SGD step (torch.optim's first use costs seconds)
        out.square().sum().backward()
        with torch.no_grad():
            for p in tm.parameters():
                p -= 0.1 * p.grad
    return tm


@pytest.mark.parametrize("fmt", ["safetensors", "torch.save"])
@pytest.mark.parametrize("name,make,shapes,call", LAYERS, ids=[row[0] for row in LAYERS])
def test_torch_safetensors_checkpoint_loads(name, make, shapes, call, fmt, tmp_path):
    rng = np.random.default_rng(0)
    tm = _torch_model(make, shapes, call, rng)
    path = tmp_path / f"{name}.{fmt}"
    if fmt == "torch.save":
        torch.save(tm.state_dict(), path)  # views and all, as programs save them
    else:
        save_file({k: v.contiguous() for k, v in tm.state_dict().items()}, str(path))
    vm = make(nn)
    assert list(vm.state_dict()) == list(tm.state_dict()), "state_dict keys differ from torch's"
    result = vm.load_state_dict(vk.load(path))
    assert result.missing_keys == [] and result.unexpected_keys == []
    for k, v in tm.state_dict().items():
        got = vm.state_dict()[k]
        assert got.dtype == getattr(vk, str(v.dtype).split(".")[1]), k
        np.testing.assert_array_equal(to_np(got), to_np(v), err_msg=k)
    for train in (False, True):
        vm.train(train), tm.train(train)
        arrays = _inputs(shapes, rng)
        yv = call(vm, *[vk.tensor(a) for a in arrays]) if call else vm(*[vk.tensor(a) for a in arrays])
        yt = call(tm, *[torch.tensor(a) for a in arrays]) if call else tm(*[torch.tensor(a) for a in arrays])
        np.testing.assert_allclose(to_np(yv), to_np(yt), rtol=1e-5, atol=1e-5, err_msg=f"{name} train={train}")
    for k, v in tm.state_dict().items():  # the training-mode call moved the running statistics alike
        np.testing.assert_allclose(to_np(vm.state_dict()[k]), to_np(v), rtol=1e-5, atol=1e-6, err_msg=k)


def test_every_layer_of_vk_nn_with_parameters_is_in_the_table():
    """A layer with parameters or buffers added to vk.nn needs a line in LAYERS (or a reason here)."""
    in_table = {type(row[1](nn)).__name__.removeprefix("Parametrized") for row in LAYERS}
    elsewhere = {"ParameterList", "ParameterDict",  # tests/python/test_module_api.py
                 "Module", "Sequential", "ModuleList", "ModuleDict",
                 "RNNBase", "RNNCellBase"}  # base classes: RNN/LSTM/GRU and the cells are in the table
    # lazy layers: torch checkpoints of their non-lazy layers load into them in tests/python/test_lazy_modules.py
    elsewhere |= {name for name in nn.modules.__all__ if name.startswith("Lazy")}
    missing = []
    for name in nn.modules.__all__:
        cls = getattr(nn, name)
        if not isinstance(cls, type) or not issubclass(cls, nn.Module) or name in in_table | elsewhere:
            continue
        try:
            m = cls()
        except TypeError:
            missing.append(name)  # needs arguments: layers with parameters do
            continue
        if list(m.state_dict()):
            missing.append(name)
    # layers that take arguments but hold no state (pooling, padding, ...) are fine: build them to tell
    stateful = [n for n in missing if _has_state(getattr(nn, n))]
    assert stateful == [], f"add a line to LAYERS for {stateful}"


def _has_state(cls):
    for args in [(2,), (2, 2), (2, 2, 2), (2, 2, 2, 2)]:
        try:
            return bool(list(cls(*args).state_dict()))
        except Exception:
            continue
    return False


def test_a_torch_save_checkpoint_of_every_kind_loads_regression(tmp_path):
    # vk.load refused every file torch.save writes: pretrained weights and checkpoints had to be
    # converted to safetensors with torch installed
    torch.manual_seed(0)
    model = TN.Sequential(TN.Linear(3, 4), TN.BatchNorm1d(4))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(5, 3)).square().sum().backward()
    opt.step()
    base = torch.arange(12.0).reshape(3, 4)
    tensors = {"t": base.t(), "row": base[1], "strided": base[:, ::2], "f16": torch.randn(3).half(),
               "bf16": torch.randn(3).bfloat16(), "i8": torch.tensor([-3, 7], dtype=torch.int8),
               "u8": torch.tensor([200, 1], dtype=torch.uint8), "i16": torch.tensor([-300], dtype=torch.int16),
               "i32": torch.tensor([1 << 20], dtype=torch.int32), "b": torch.tensor([True, False]),
               "f64": torch.randn(2, 2, dtype=torch.float64), "empty": torch.zeros(0, 3), "scalar": torch.tensor(2.5),
               "grad": torch.ones(2, requires_grad=True), "param": TN.Parameter(torch.ones(2))}
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "lr": 0.1,
            "name": "run-1", "pair": (1, [2.0, None]), "size": torch.Size([2, 3]), "device": torch.device("cpu"),
            "dtype": torch.float16, "tags": {"a", "b"}, "tensors": tensors}
    path = tmp_path / "ckpt.pt"
    torch.save(ckpt, path)
    got = vk.load(path)
    assert got["epoch"] == 3 and got["lr"] == 0.1 and got["name"] == "run-1" and got["pair"] == (1, [2.0, None])
    assert got["size"] == vk.Size([2, 3]) and isinstance(got["size"], vk.Size)
    assert got["device"] == vk.device("cpu") and got["dtype"] == vk.float16 and got["tags"] == {"a", "b"}
    for k, v in tensors.items():
        w = got["tensors"][k]
        assert w.dtype == getattr(vk, str(v.dtype).split(".")[1]) and list(w.shape) == list(v.shape), k
        if v.dtype == torch.bfloat16:  # numpy has no bfloat16: compared widened, exactly
            w, v = w.float(), v.float()
        np.testing.assert_array_equal(to_np(w), v.detach().numpy(), err_msg=k)
        assert w.requires_grad == v.requires_grad, k
    assert isinstance(got["tensors"]["param"], nn.Parameter)
    vm = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    vm.load_state_dict(got["model"])
    vopt = vk.optim.Adam(vm.parameters(), lr=1e-3)
    vopt.load_state_dict(got["optimizer"])  # the Adam moments and steps as torch saved them
    state = vopt.state_dict()["state"]
    for i, s in opt.state_dict()["state"].items():
        np.testing.assert_array_equal(to_np(state[i]["exp_avg"]), s["exp_avg"].numpy())
    assert vk.load(path, map_location="cpu")["tensors"]["t"].device == vk.device("cpu")
    assert vk.load(path, map_location=vk.device("cpu"))["epoch"] == 3


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    path = tmp_path / "evil.pt"
    torch.save({"w": torch.ones(2)}, path)
    with zipfile.ZipFile(path) as z:  # the same archive with its pickle replaced
        members = {n: z.read(n) for n in z.namelist()}
    pkl = [n for n in members if n.endswith("data.pkl")][0]
    members[pkl] = pickle.dumps({"w": Evil()}, protocol=2)
    with zipfile.ZipFile(path, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    with pytest.raises(pickle.UnpicklingError, match=r"names posix.system, which vkml does not build"):
        vk.load(path)
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError):  # torch's default refuses it too
        torch.load(path)
    assert not marker.exists()


def test_a_bare_torch_pickle_is_refused_clearly(tmp_path):
    legacy = tmp_path / "legacy.pt"
    torch.save(TN.Linear(2, 2).state_dict(), legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(ValueError, match="is a bare pickle, torch.save's format before torch 1.6"):
        vk.load(legacy)


@pytest.mark.skipif(not vk.vulkan.is_available(), reason="no Vulkan device")
def test_torch_checkpoint_loads_into_a_model_on_vulkan(tmp_path):
    rng = np.random.default_rng(1)
    tm = _torch_model(lambda lib: lib.Sequential(lib.Conv2d(1, 2, 3), lib.BatchNorm2d(2)), [(2, 1, 5, 5)], None, rng)
    path = tmp_path / "m.safetensors"
    save_file(tm.state_dict(), str(path))
    vm = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)).to("vulkan")
    vm.load_state_dict(vk.load(path))
    vm.eval(), tm.eval()
    x = rng.standard_normal((2, 1, 5, 5)).astype(np.float32)
    assert str(vm[0].weight.device).startswith("vulkan")
    np.testing.assert_allclose(to_np(vm(vk.tensor(x, device="vulkan"))), to_np(tm(torch.tensor(x))), rtol=1e-5,
                               atol=1e-5)
