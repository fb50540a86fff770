"""Porting (issue #15): the names PyTorch programs use beside the ops -- devices, vk.cuda,
vk.backends, vk.accelerator, vk.amp, vk.distributed, vk.nn.parallel, dtype names, vk.Size,
finfo/iinfo, Tensor.type()/new_*(), formatting -- each compared with torch where torch defines
the behaviour."""

import math
import warnings

import pytest
import torch

import vkml as vk

# ---------------------------------------------------------------- names


def test_every_name_of_the_issue_imports():
    import vkml.backends.cuda  # noqa: F401
    import vkml.backends.cudnn  # noqa: F401
    import vkml.cuda.amp  # noqa: F401
    from vkml.cuda.amp import GradScaler, autocast  # noqa: F401
    from vkml.amp import GradScaler as G2  # noqa: F401
    from vkml.distributed import destroy_process_group, init_process_group  # noqa: F401
    from vkml.nn.parallel import DataParallel, DistributedDataParallel  # noqa: F401
    from vkml.utils.data import (DataLoader, Dataset, RandomSampler, TensorDataset)  # noqa: F401
    from vkml.utils.data.dataloader import DataLoader as DL  # noqa: F401
    from vkml.utils.data.distributed import DistributedSampler  # noqa: F401
    for name in ("float16", "half", "bfloat16", "uint8", "int8", "int16", "Size", "inf", "nan",
                 "pi", "e", "finfo", "iinfo", "device", "autocast", "cuda", "backends",
                 "accelerator", "amp", "distributed"):
        assert hasattr(vk, name), name
    assert vk.nn.parallel.DistributedDataParallel is DistributedDataParallel
    assert vk.utils.data.DataLoader is DL
    assert vk.cuda.amp.GradScaler is GradScaler


def test_constants_equal_torch():
    assert vk.pi == torch.pi and vk.e == torch.e and vk.inf == torch.inf
    assert math.isnan(vk.nan) and math.isnan(torch.nan)


# ---------------------------------------------------------------- devices


DEVICES = ["cpu", vk.device("cpu"), None]

CREATIONS = [
    ("tensor", lambda m, **kw: m.tensor([1.0, 2.0], **kw)),
    ("zeros", lambda m, **kw: m.zeros(2, 3, **kw)),
    ("ones", lambda m, **kw: m.ones((2, 3), **kw)),
    ("full", lambda m, **kw: m.full((2,), 7.0, **kw)),
    ("empty", lambda m, **kw: m.empty(2, **kw)),
    ("arange", lambda m, **kw: m.arange(0, 5, **kw)),
    ("linspace", lambda m, **kw: m.linspace(0, 1, 5, **kw)),
    ("eye", lambda m, **kw: m.eye(3, **kw)),
    ("rand", lambda m, **kw: m.rand(2, **kw)),
    ("randn", lambda m, **kw: m.randn(2, **kw)),
    ("randint", lambda m, **kw: m.randint(0, 5, (3,), **kw)),
    ("zeros_like", lambda m, **kw: m.zeros_like(m.ones(2), **kw)),
    ("ones_like", lambda m, **kw: m.ones_like(m.ones(2), **kw)),
    ("full_like", lambda m, **kw: m.full_like(m.ones(2), 3.0, **kw)),
    ("empty_like", lambda m, **kw: m.empty_like(m.ones(2), **kw)),
    ("rand_like", lambda m, **kw: m.rand_like(m.ones(2), **kw)),
    ("randn_like", lambda m, **kw: m.randn_like(m.ones(2), **kw)),
    ("as_tensor", lambda m, **kw: m.as_tensor([1.0, 2.0], **kw)),
]


@pytest.mark.parametrize("name,make", CREATIONS, ids=[c[0] for c in CREATIONS])
@pytest.mark.parametrize("device", DEVICES, ids=["str", "device", "None"])
def test_creation_takes_device_and_dtype_as_torch(name, make, device):
    tdev = None if device is None else torch.device(str(device))
    for vdt, tdt in [(None, None), (vk.float64, torch.float64)]:
        if name == "randint" and vdt is not None:
            vdt, tdt = vk.int32, torch.int32
        v = make(vk, device=device, dtype=vdt)
        t = make(torch, device=tdev, dtype=tdt)
        assert v.device == vk.device("cpu")
        if vk.vulkan.is_available():
            g = make(vk, device=vk.device("vulkan") if device is not None else "vulkan",
                     dtype=vdt)
            assert g.device == vk.device("vulkan") and g.dtype == v.dtype
        assert v.dtype.name == str(t.dtype).split(".")[1]
        assert tuple(v.shape) == tuple(t.shape)


def test_arange_long_on_a_device_as_gpt_scripts_write_it():
    device = "cpu"
    pos = vk.arange(0, 7, dtype=vk.long, device=device)
    assert pos.tolist() == torch.arange(0, 7, dtype=torch.long, device=device).tolist()
    assert pos.dtype == vk.int64


def test_tensor_to_and_cpu_variants():
    x = vk.tensor([1.5, 2.5])
    assert x.to("cpu") is x and x.to(vk.device("cpu")) is x and x.cpu() is x
    assert x.to("cpu", non_blocking=True) is x
    assert x.to(vk.float64).dtype == vk.float64
    assert x.to("cpu", vk.int64).tolist() == [1, 2]
    assert x.to(device="cpu", dtype=vk.float64).dtype == vk.float64
    assert x.to(vk.tensor([1], dtype=vk.int32)).dtype == vk.int32
    assert x.to(x, copy=True) is not x


def test_tensor_type_as_torch():
    for vdt, tdt in [(vk.float32, torch.float32), (vk.float64, torch.float64),
                     (vk.int64, torch.int64), (vk.int32, torch.int32), (vk.bool, torch.bool),
                     (vk.float16, torch.float16), (vk.bfloat16, torch.bfloat16),
                     (vk.uint8, torch.uint8), (vk.int8, torch.int8), (vk.int16, torch.int16)]:
        v, t = vk.zeros(2, dtype=vdt), torch.zeros(2, dtype=tdt)
        assert v.type().replace("vkml.", "torch.") == t.type()
    x = vk.tensor([1.7, -2.2])
    assert x.type(vk.int64).tolist() == torch.tensor([1.7, -2.2]).type(torch.int64).tolist()
    assert x.type("torch.LongTensor").dtype == vk.int64
    assert x.type("vkml.DoubleTensor").dtype == vk.float64
    assert x.type(vk.float32) is x
    assert x.type("torch.HalfTensor").dtype == vk.float16
    with pytest.raises(vk.DTypeError, match="ComplexFloatTensor"):
        x.type("torch.ComplexFloatTensor")


def test_new_constructors_as_torch():
    v = vk.tensor([[1, 2]], dtype=vk.int32)
    t = torch.tensor([[1, 2]], dtype=torch.int32)
    pairs = [
        (v.new_zeros(2, 3), t.new_zeros(2, 3)),
        (v.new_zeros((2, 3)), t.new_zeros((2, 3))),
        (v.new_ones([4]), t.new_ones([4])),
        (v.new_full((2, 2), 5), t.new_full((2, 2), 5)),
        (v.new_empty(3), t.new_empty(3)),
        (v.new_tensor([3, 4]), t.new_tensor([3, 4])),
        (v.new_zeros(2, dtype=vk.float64), t.new_zeros(2, dtype=torch.float64)),
        (v.new_ones(2, dtype=vk.float32, requires_grad=True),
         t.new_ones(2, dtype=torch.float32, requires_grad=True)),
    ]
    for a, b in pairs:
        assert a.dtype.name == str(b.dtype).split(".")[1]
        assert tuple(a.shape) == tuple(b.shape)
        assert a.requires_grad == b.requires_grad
    for i, (a, b) in enumerate(pairs):
        if i != 4:  # new_empty: values undefined
            assert a.tolist() == b.tolist()
    assert v.new_zeros(2, device="cpu").device == vk.device("cpu")


@pytest.mark.skipif(not vk.vulkan.is_available(), reason="no Vulkan device")
def test_new_constructors_keep_the_device():
    v = vk.ones(2, device="vulkan")
    for r in (v.new_zeros(3), v.new_ones(3), v.new_full((3,), 2.0), v.new_empty(3),
              v.new_tensor([1.0])):
        assert r.device == v.device
    assert v.new_zeros(3, device="cpu").device == vk.device("cpu")
    assert v.type() == "vkml.vulkan.FloatTensor"


# ---------------------------------------------------------------- dtype names


NARROW = [("float16", "float16"), ("half", "float16"), ("bfloat16", "bfloat16"),
          ("uint8", "uint8"), ("int8", "int8"), ("int16", "int16"), ("short", "int16")]


@pytest.mark.parametrize("name,canonical", NARROW)
def test_narrow_dtype_names_print_and_compare_as_torch(name, canonical):
    d = getattr(vk, name)
    td = getattr(torch, name)
    assert repr(d) == repr(td).replace("torch.", "vkml.")
    assert str(d) == str(td).replace("torch.", "vkml.")
    assert d is getattr(vk, canonical)
    assert d == d and d != vk.float32 and vk.float32 != d
    assert d.is_floating_point == td.is_floating_point
    assert d.itemsize == td.itemsize
    assert d.is_signed == td.is_signed
    table = {"fp16": vk.float16, "bf16": vk.bfloat16, "fp32": vk.float32}  # as scripts build
    assert len(table) == 3 and hash(d) == hash(d)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "uint8", "int8", "int16"])
def test_narrow_dtypes_make_tensors_of_their_dtype(name):
    # They were names without tensors before #19 (a DTypeError on use).
    d, t = getattr(vk, name), getattr(torch, name)
    for make in (lambda m, d: m.zeros(2, dtype=d), lambda m, d: m.tensor([1.0, 2.0], dtype=d),
                 lambda m, d: m.ones(2).to(d), lambda m, d: m.arange(2, dtype=d),
                 lambda m, d: m.full((2,), 1, dtype=d), lambda m, d: m.ones(2).new_zeros(2, dtype=d),
                 lambda m, d: m.ones(2).type(d)):
        v = make(vk, d)
        assert v.dtype == d and v.tolist() == make(torch, t).tolist()


# ---------------------------------------------------------------- Size


def test_size_as_torch():
    v, t = vk.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    for a, b in [(v.shape, t.shape), (v.size(), t.size()),
                 (vk.zeros(()).shape, torch.zeros(()).shape)]:
        assert isinstance(a, vk.Size) and isinstance(a, tuple)
        assert repr(a) == repr(b).replace("torch.", "vkml.")
        assert str(a) == str(b).replace("torch.", "vkml.")
        assert a == b and a.numel() == b.numel()
    assert v.size(1) == 3 and v.size(-1) == 4
    for op in (lambda s: s[1:], lambda s: s + (5,), lambda s: (5,) + s, lambda s: s * 2):
        assert type(op(v.shape)).__name__ == type(op(t.shape)).__name__ == "Size"
        assert tuple(op(v.shape)) == tuple(op(t.shape))
    assert isinstance(v.shape[0], int)
    assert vk.Size([2, 3]) == (2, 3)
    import pickle
    assert pickle.loads(pickle.dumps(v.shape)) == v.shape


# ---------------------------------------------------------------- finfo / iinfo


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_finfo_equals_torch(name):
    a, b = vk.finfo(getattr(vk, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(a, attr) == getattr(b, attr), attr
    assert a.dtype == b.dtype
    assert repr(a) == repr(b)


def test_finfo_default_and_errors_as_torch():
    assert vk.finfo().eps == torch.finfo().eps
    for bad in (vk.int32, vk.int64, vk.bool, vk.uint8):
        with pytest.raises(TypeError):
            vk.finfo(bad)
    for bad in (vk.float32, vk.float16, vk.bool):
        with pytest.raises(TypeError):
            vk.iinfo(bad)
    with pytest.raises(TypeError):
        vk.finfo("float32")


@pytest.mark.parametrize("name", ["int32", "int64", "uint8", "int8", "int16"])
def test_iinfo_equals_torch(name):
    a, b = vk.iinfo(getattr(vk, name)), torch.iinfo(getattr(torch, name))
    assert (a.bits, a.max, a.min, a.dtype) == (b.bits, b.max, b.min, b.dtype)
    assert repr(a) == repr(b)


# ---------------------------------------------------------------- formatting


VALUES = [6324.0, 0.1, -3.5, 1e-8, 123456789.0, 0.0, -0.0, float("inf"), float("nan"), 2.5e20]
SPECS = ["", ".2f", ".4f", ">12", "<10.3f", "e", ".3e", ".3g", "g", "+.1f", "08.2f", "%"]


def test_format_of_a_0d_tensor_equals_torch():
    for value in VALUES:
        for dt in ("float32", "float64"):
            v = vk.tensor(value, dtype=getattr(vk, dt))
            t = torch.tensor(value, dtype=getattr(torch, dt))
            for spec in SPECS:
                assert format(v, spec) == format(t, spec), (value, dt, spec)
            assert f"{v}" == f"{t}"
    for value, spec in [(3, ""), (3, "d"), (3, "05d"), (-7, "x"), (True, ""), (False, "")]:
        assert format(vk.tensor(value), spec) == format(torch.tensor(value), spec)
    v = vk.tensor(2.0, requires_grad=True)
    assert f"{v * 3}" == f"{torch.tensor(2.0, requires_grad=True) * 3}" == "6.0"
    assert f"{vk.tensor(6324.0)}" == "6324.0"


def test_format_of_other_tensors_as_torch():
    for data in ([1.0, 2.0], [[1, 2], [3, 4]], [0.5]):
        v, t = vk.tensor(data), torch.tensor(data)
        assert f"{v}" == str(v) == str(t).replace("torch.", "vkml.")
        with pytest.raises(TypeError, match="unsupported format string"):
            format(v, ".2f")
        with pytest.raises(TypeError):
            format(t, ".2f")
    p = vk.nn.Parameter(vk.tensor(2.0))
    assert f"{p}" == str(p)  # a subclass formats as str(), as torch's Parameter does


# ---------------------------------------------------------------- vk.cuda


def test_cuda_as_torch_without_cuda():
    assert vk.cuda.is_available() is torch.cuda.is_available() is False
    assert vk.cuda.device_count() == torch.cuda.device_count() == 0
    assert vk.cuda.is_bf16_supported() is False
    vk.cuda.synchronize()
    vk.cuda.empty_cache()
    with pytest.raises(RuntimeError, match="CUDA"):
        vk.cuda.current_device()
    with pytest.raises(vk.DeviceError):
        vk.ones(2).to("cuda")


def test_cuda_seeding_leaves_the_cpu_generator_alone_as_torch():
    vk.manual_seed(3)
    a = vk.rand(4).tolist()
    vk.manual_seed(3)
    vk.cuda.manual_seed(11)
    vk.cuda.manual_seed_all(11)
    assert vk.rand(4).tolist() == a
    torch.manual_seed(3)
    b = torch.rand(4).tolist()
    torch.manual_seed(3)
    torch.cuda.manual_seed_all(11)
    assert torch.rand(4).tolist() == b


# ---------------------------------------------------------------- amp


def _fit(scaler_cls, steps=3, **kw):
    vk.manual_seed(0)
    model = vk.nn.Linear(3, 1)
    opt = vk.optim.SGD(model.parameters(), lr=0.1)
    scaler = scaler_cls(**kw)
    x, y = vk.ones(4, 3), vk.zeros(4, 1)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        scaled = scaler.scale(loss)
        assert scaled is loss
        scaled.backward()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
    return [p.detach().tolist() for p in model.parameters()], scaler


def test_grad_scaler_disabled_is_a_pass_through_as_torch():
    plain, _ = _fit(lambda: type("S", (), {"scale": lambda s, l: l, "unscale_": lambda s, o: None,
                                           "step": lambda s, o: o.step(),
                                           "update": lambda s: None})())
    for cls, kw in [(vk.cuda.amp.GradScaler, {"enabled": False}),
                    (vk.amp.GradScaler, {"device": "cuda", "enabled": False}),
                    (vk.amp.GradScaler, {"device": "cpu", "enabled": False})]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            params, scaler = _fit(cls, **kw)
        assert params == plain
        t = torch.amp.GradScaler("cuda", enabled=False)
        assert scaler.state_dict() == t.state_dict()
        assert scaler.get_scale() == t.get_scale()
        assert scaler.is_enabled() == t.is_enabled()
        scaler.load_state_dict(scaler.state_dict())


def test_grad_scaler_enabled_warns_and_disables_as_torch_without_cuda():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        s = vk.cuda.amp.GradScaler()
    with pytest.warns(UserWarning), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        t = torch.cuda.amp.GradScaler()
    assert s.is_enabled() == t.is_enabled() is False
    loss = vk.tensor(2.0)
    assert s.scale(loss) is loss


def test_autocast_runs_in_full_precision():
    x = vk.ones(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with vk.autocast(device_type="cpu", enabled=False):
            assert (x @ x).dtype == vk.float32
        with vk.cuda.amp.autocast(enabled=False):
            pass
    with pytest.warns(UserWarning, match="CUDA is not available"):
        with vk.autocast("cuda", dtype=vk.bfloat16):
            assert (x @ x).dtype == vk.float32

    @vk.autocast("cpu", enabled=False)
    def f(a):
        return a + 1
    assert f(x).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert vk.is_autocast_enabled() is False
    with pytest.raises(ValueError):
        vk.autocast(vk.device("cpu"))


# ---------------------------------------------------------------- backends, accelerator


def test_backends_switches_have_torchs_defaults_and_are_settable():
    for path in ("cuda.matmul.allow_tf32", "cudnn.allow_tf32", "cudnn.benchmark",
                 "cudnn.deterministic", "cudnn.enabled"):
        obj_v, obj_t = vk.backends, torch.backends
        *parents, leaf = path.split(".")
        for p in parents:
            obj_v, obj_t = getattr(obj_v, p), getattr(obj_t, p)
        assert getattr(obj_v, leaf) == getattr(obj_t, leaf), path
        old = getattr(obj_v, leaf)
        setattr(obj_v, leaf, not old)
        assert getattr(obj_v, leaf) == (not old)
        setattr(obj_v, leaf, old)
    assert vk.backends.mps.is_available() is False
    assert vk.backends.cudnn.is_available() is False
    vk.backends.cuda.enable_flash_sdp(False)


def test_float32_matmul_precision_as_torch():
    old = torch.get_float32_matmul_precision()
    assert vk.get_float32_matmul_precision() == old
    try:
        for p in ("high", "medium", "highest"):
            vk.set_float32_matmul_precision(p)
            torch.set_float32_matmul_precision(p)
            assert vk.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
        with pytest.warns(UserWarning):
            vk.set_float32_matmul_precision("bad")
        assert vk.get_float32_matmul_precision() == "highest"
    finally:
        torch.set_float32_matmul_precision(old)


def test_accelerator_is_the_vulkan_device():
    assert vk.accelerator.is_available() == vk.vulkan.is_available()
    acc = vk.accelerator.current_accelerator()
    if vk.vulkan.is_available():
        assert acc == vk.device("vulkan") and acc.type == "vulkan"
        assert vk.accelerator.device_count() == 1
        x = vk.ones(3, device=acc.type)  # the MNIST example's spelling
        assert x.device == acc
        vk.accelerator.synchronize()
    else:
        assert acc is None and vk.accelerator.device_count() == 0


# ---------------------------------------------------------------- distributed, parallel


def test_distributed_without_a_process_group_raises_at_use():
    """In a process that never called init_process_group (these tests): the group functions and
    DDP raise RuntimeError saying so, as torch's (tests/python/test_distributed.py runs them under
    mpirun)."""
    assert vk.distributed.is_initialized() is False
    for fn in (vk.distributed.get_rank, vk.distributed.destroy_process_group,
               lambda: vk.distributed.all_reduce(vk.ones(2))):
        # a build without MPI says that first
        with pytest.raises(RuntimeError, match="init_process_group|built without MPI"):
            fn()
    with pytest.raises(RuntimeError, match="init_process_group"):
        vk.nn.parallel.DistributedDataParallel(vk.nn.Linear(2, 2), device_ids=[0])


def test_data_parallel_without_gpus_is_the_module_as_torch():
    vk.manual_seed(0)
    lin = vk.nn.Linear(3, 2)
    dp = vk.nn.DataParallel(lin)
    tdp = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert list(dp.state_dict()) == list(tdp.state_dict())
    x = vk.ones(4, 3)
    assert dp(x).tolist() == lin(x).tolist()
    assert dp.module is lin


def test_distributed_sampler_with_explicit_ranks_equals_torch():
    from vkml.utils.data.distributed import DistributedSampler as V
    from torch.utils.data.distributed import DistributedSampler as T
    data = list(range(10))
    for drop_last in (False, True):
        for rank in range(3):
            v = V(data, num_replicas=3, rank=rank, shuffle=False, drop_last=drop_last)
            t = T(data, num_replicas=3, rank=rank, shuffle=False, drop_last=drop_last)
            assert list(v) == list(t) and len(v) == len(t)
    parts = [list(V(data, 3, r, shuffle=True, seed=1)) for r in range(3)]
    assert set(sum(parts, [])) == set(data) and len(sum(parts, [])) == 12  # padded as torch
    assert parts == [list(V(data, 3, r, shuffle=True, seed=1)) for r in range(3)]
    with pytest.raises(RuntimeError, match="init_process_group"):
        V(data)  # num_replicas and rank come from the process group, which is not initialised
    with pytest.raises(ValueError):
        V(data, 2, 2)


def test_a_gpt_style_script_runs_with_vkml_as_torch(monkeypatch):
    """The preamble and loop of a GPT training script, written for torch, run as written."""
    import vkml as torch  # noqa: F811  (the point of the test)
    import vkml.nn as nn
    from contextlib import nullcontext
    from vkml.nn import functional as F
    from vkml.nn.parallel import DistributedDataParallel as DDP  # noqa: F401
    from vkml.distributed import init_process_group, destroy_process_group  # noqa: F401
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)

    ddp = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() \
        else "float16"
    torch.manual_seed(1337)
    torch.cuda.manual_seed_all(1337)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device_type = "cuda" if "cuda" in device else "cpu"
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16,
               "float16": torch.float16}[dtype]
    ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type,
                                                                          dtype=ptdtype)

    class TinyLM(nn.Module):
        def __init__(self, vocab=11, block=8, dim=16):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(block, dim)
            self.head = nn.Linear(dim, vocab)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
            logits = self.head(F.gelu(self.wte(idx) + self.wpe(pos)))
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    model = TinyLM().to(device)
    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16" and device_type == "cuda"))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.tensor([i % 11 for i in range(200)], dtype=torch.long)
    losses = []
    for it in range(30):
        ix = torch.randint(len(data) - 9, (4,))
        x = torch.stack([data[i:i + 8] for i in ix.tolist()])
        y = torch.stack([data[i + 1:i + 9] for i in ix.tolist()])
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with ctx:
            _, loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        assert f"iter {it}: loss {loss.item():.4f}".startswith(f"iter {it}: loss ")
    assert losses[-1] < losses[0] * 0.5, losses
    assert not ddp and device == "cpu"
