"""The narrow dtypes (#19): float16, bfloat16, uint8, int8, int16 against PyTorch.

Tolerances come from the formats: a 16-bit result computed in float32 and rounded once is within
one unit in the last place of the exact value's rounding, so a value compared with torch's (which
also computes in float32) may differ by one ulp where the two float32 computations fall on either
side of a rounding boundary: |a - b| <= ulp(b) = 2^-10 |b| (float16) or 2^-7 |b| (bfloat16), plus
the format's smallest normal for values near zero. Element-wise arithmetic (+ - * /, casts,
comparisons, integer arithmetic) is exact: bit for bit with torch.
"""

import math

import numpy as np
import pytest
import torch

import vkml as vk

HALF = ["float16", "bfloat16"]
NARROW_INT = ["uint8", "int8", "int16"]
ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64"]
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
TINY = {"float16": 2.0 ** -14, "bfloat16": 2.0 ** -126}


def vd(name):
    return getattr(vk, name)


def td(name):
    return getattr(torch, name)


def bits(t):
    """The raw bits of a torch or vkml tensor of a 16-bit float dtype, as numpy uint16."""
    if isinstance(t, vk.Tensor):
        t = torch.from_dlpack(t.detach())
    return t.detach().contiguous().view(torch.int16).numpy().view(np.uint16)


def as_torch(t):
    return torch.from_dlpack(t.detach().contiguous())


def assert_ulps(v, t, dtype, ulps=1, what=""):
    """v (vkml) within `ulps` units of the format of t (torch), elementwise."""
    a = as_torch(v).double()
    b = t.detach().double()
    assert v.dtype == vd(dtype), f"{what}: dtype {v.dtype} != {dtype}"
    assert tuple(v.shape) == tuple(b.shape), what
    both_nan = torch.isnan(a) & torch.isnan(b)
    tol = ulps * (EPS[dtype] * b.abs() + TINY[dtype])
    bad = ~both_nan & ~((a - b).abs() <= tol) & ~(a == b)
    assert not bad.any(), f"{what}: vkml {a[bad][:5].tolist()} vs torch {b[bad][:5].tolist()}"


# ---- the dtypes themselves ----

@pytest.mark.parametrize("name", ALL)
def test_dtype_names_sizes_and_kinds_as_torch(name):
    v, t = vd(name), td(name)
    assert str(v) == "vkml." + name
    assert v.itemsize == t.itemsize
    assert v.is_floating_point == t.is_floating_point
    assert vk.finfo(v).eps == torch.finfo(t).eps if t.is_floating_point else True
    if not t.is_floating_point and name != "bool":
        assert (vk.iinfo(v).min, vk.iinfo(v).max) == (torch.iinfo(t).min, torch.iinfo(t).max)


def test_aliases_as_torch():
    assert vk.half == vk.float16 and vk.short == vk.int16
    assert vk.zeros(2, dtype=vk.half).dtype == vk.float16
    assert vk.ones(2).to(vk.bfloat16).type() == "vkml.BFloat16Tensor"
    assert vk.ones(2).to(vk.uint8).type() == "vkml.ByteTensor"
    x = vk.tensor([1.5, -2.0])
    for method, name in (("half", "float16"), ("bfloat16", "bfloat16"), ("byte", "uint8"),
                         ("char", "int8"), ("short", "int16")):
        assert getattr(x, method)().dtype == vd(name)
        assert getattr(x, method)().tolist() == getattr(torch.tensor([1.5, -2.0]), method)().tolist()


@pytest.mark.parametrize("method", ["half", "bfloat16"])
def test_module_half_and_bfloat16_convert_parameters_and_run_as_torch(method):
    vk.manual_seed(0)
    v = vk.nn.Sequential(vk.nn.Linear(4, 8), vk.nn.GELU(), vk.nn.LayerNorm(8), vk.nn.Linear(8, 2))
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.LayerNorm(8),
                            torch.nn.Linear(8, 2))
    t.load_state_dict({k: torch.from_dlpack(p.detach()) for k, p in v.state_dict().items()})
    getattr(v, method)()
    getattr(t, method)()
    assert all(p.dtype == vd("float16" if method == "half" else "bfloat16") for p in v.parameters())
    x = np.random.default_rng(9).uniform(-1, 1, (5, 4))
    name = "float16" if method == "half" else "bfloat16"
    a = v(vk.tensor(x).to(vd(name)))
    b = t(torch.tensor(x).to(td(name)))
    scale = b.double().abs().max().item()
    assert (as_torch(a).double() - b.double()).abs().max().item() <= 8 * EPS[name] * scale


@pytest.mark.parametrize("a", ALL)
@pytest.mark.parametrize("b", ALL)
def test_promotion_table_is_torchs(a, b):
    assert str(vk.promote_types(vd(a), vd(b))).split(".")[1] == \
        str(torch.promote_types(td(a), td(b))).split(".")[1]
    x = vk.ones(2, dtype=vd(a)) + vk.ones(2, dtype=vd(b))
    y = torch.ones(2, dtype=td(a)) + torch.ones(2, dtype=td(b))
    assert str(x.dtype).split(".")[1] == str(y.dtype).split(".")[1]


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "float16", "bfloat16"])
def test_scalars_and_zero_dim_tensors_keep_the_narrow_dtype(name):
    for other in (2, 2.5, True, vk.tensor(3.0), vk.tensor(3)):
        tother = torch.tensor(other.item()) if isinstance(other, vk.Tensor) else other
        x = vk.ones(3, dtype=vd(name)) * other
        y = torch.ones(3, dtype=td(name)) * tother
        assert str(x.dtype).split(".")[1] == str(y.dtype).split(".")[1], (name, other)


# ---- conversions, bit for bit ----

SPECIAL = [0.0, -0.0, 1.0, -1.5, 65504.0, 65519.0, 65520.0, 1e5, -1e5, 2.0 ** -24, 2.0 ** -25,
           3 * 2.0 ** -26, 2.0 ** -14 * (1 - 2.0 ** -11), 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
           1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 3.3895313892515355e38, 3.4e38, 1e-40, 1e-45,
           math.inf, -math.inf, math.nan, 0.1, 1 / 3, 123.456, -7.0e-6]


@pytest.mark.parametrize("name", HALF)
@pytest.mark.parametrize("src", ["float32", "float64"])
def test_rounding_into_16_bits_is_torchs_bit_for_bit(name, src):
    values = SPECIAL + list(np.random.default_rng(1).standard_normal(2000) * 1e3)
    x = vk.tensor(values, dtype=vd(src)).to(vd(name))
    y = torch.tensor(values, dtype=td(src)).to(td(name))
    # NaN payloads are each library's own (torch's vectorised bfloat16 NaN is 0xFFFF, its scalar
    # one 0x7FC0): NaN must stay NaN, every other value must have torch's bits.
    nan = np.isnan(np.array(values, dtype=np.float64))
    assert np.isnan(as_torch(x).float().numpy()[nan]).all()
    np.testing.assert_array_equal(bits(x)[~nan], bits(y)[~nan])


@pytest.mark.parametrize("name", HALF)
@pytest.mark.parametrize("to", ALL)
def test_converting_out_of_16_bits_is_torchs(name, to):
    rng = np.random.default_rng(2)
    values = [v for v in SPECIAL if math.isfinite(v) and abs(v) < 60000] + \
        list(rng.uniform(-300, 300, 500))
    x = vk.tensor(values).to(vd(name))
    y = torch.tensor(values).to(td(name))
    a, b = as_torch(x.to(vd(to))), y.to(td(to))
    assert a.dtype == b.dtype
    torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", NARROW_INT)
@pytest.mark.parametrize("src", ["int64", "int32", "float32", "bool"])
def test_narrow_integer_conversions_wrap_as_torch(name, src):
    values = [0, 1, -1, 127, 128, 255, 256, -128, -129, 32767, 32768, -32769, 70000, -70000]
    if src == "bool":
        values = [0, 1, 1, 0]
    x = vk.tensor(values, dtype=vd(src)).to(vd(name))
    y = torch.tensor(values, dtype=td(src)).to(td(name))
    assert x.tolist() == y.tolist()


# ---- arithmetic ----

def _pair(name, rng, shape=(4, 5)):
    if name in HALF:
        a = rng.uniform(-4, 4, shape)
        b = rng.uniform(0.5, 4, shape)
        return ([vk.tensor(a).to(vd(name)), vk.tensor(b).to(vd(name))],
                [torch.tensor(a).to(td(name)), torch.tensor(b).to(td(name))])
    lo, hi = (0, 256) if name == "uint8" else (-128, 128) if name == "int8" else (-3000, 3000)
    a, b = rng.integers(lo, hi, shape), rng.integers(max(lo, 1), hi, shape)
    b[b == 0] = 1
    return ([vk.tensor(a, dtype=vd(name)), vk.tensor(b, dtype=vd(name))],
            [torch.tensor(a, dtype=td(name)), torch.tensor(b, dtype=td(name))])


EXACT_BINARY = {
    "add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b, "mul": lambda m, a, b: a * b,
    "neg": lambda m, a, b: -a, "abs": lambda m, a, b: a.abs(), "maximum": lambda m, a, b: m.maximum(a, b),
    "eq": lambda m, a, b: a == b, "lt": lambda m, a, b: a < b, "where": lambda m, a, b: m.where(a > b, a, b),
    "scalar": lambda m, a, b: a * 3 + 1, "clamp": lambda m, a, b: a.clamp(-2, 2),
    "cat": lambda m, a, b: m.cat([a, b], 1), "transpose": lambda m, a, b: a.t().contiguous(),
    "index": lambda m, a, b: a[1:, ::2], "flip": lambda m, a, b: a.flip(0),
}


@pytest.mark.parametrize("name", HALF + NARROW_INT)
@pytest.mark.parametrize("op", sorted(EXACT_BINARY))
def test_exact_ops_are_torchs_bit_for_bit(name, op):
    (va, vb), (ta, tb) = _pair(name, np.random.default_rng(3))
    v = EXACT_BINARY[op](vk, va, vb)
    t = EXACT_BINARY[op](torch, ta, tb)
    assert str(v.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    torch.testing.assert_close(as_torch(v), t, rtol=0, atol=0)


@pytest.mark.parametrize("name", NARROW_INT)
def test_narrow_integer_arithmetic_wraps_as_torch(name):
    (va, vb), (ta, tb) = _pair(name, np.random.default_rng(4))
    for f in (lambda a, b: a * b, lambda a, b: a + b * 7, lambda a, b: a // b, lambda a, b: a % b,
              lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b, lambda a, b: a << 1,
              lambda a, b: a.sum(), lambda a, b: a.cumsum(0), lambda a, b: a.max(1).values,
              lambda a, b: a.sort(1).values, lambda a, b: a / b):
        v, t = f(va, vb), f(ta, tb)
        assert str(v.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        torch.testing.assert_close(as_torch(v), t, rtol=1e-6, atol=0)


ROUNDED_ONCE = {
    "div": lambda m, a, b: a / b, "exp": lambda m, a, b: a.exp(), "log": lambda m, a, b: b.log(),
    "sqrt": lambda m, a, b: b.sqrt(), "tanh": lambda m, a, b: a.tanh(),
    "sigmoid": lambda m, a, b: a.sigmoid(), "sin": lambda m, a, b: a.sin(),
    "pow": lambda m, a, b: b ** 1.5, "gelu": lambda m, a, b: m.nn.functional.gelu(a),
    "softmax": lambda m, a, b: a.softmax(1), "log_softmax": lambda m, a, b: a.log_softmax(1),
    "sum": lambda m, a, b: a.sum(1), "mean": lambda m, a, b: a.mean(0),
    "amax": lambda m, a, b: a.amax(1), "prod": lambda m, a, b: b.prod(1),
    "cumsum": lambda m, a, b: a.cumsum(1), "matmul": lambda m, a, b: a @ b.t(),
    "layer_norm": lambda m, a, b: m.nn.functional.layer_norm(a, (5,)),
}


@pytest.mark.parametrize("name", HALF)
@pytest.mark.parametrize("op", sorted(ROUNDED_ONCE))
def test_ops_round_once_as_torch(name, op):
    # Against the exact result (torch in float64 on the same 16-bit inputs) rounded to the
    # format: within one ulp. And against torch's own 16-bit kernel, which rounds some
    # intermediates to 16 bits (log_softmax's log-sum-exp, for one): within a few ulps of the
    # largest value.
    (va, vb), (ta, tb) = _pair(name, np.random.default_rng(5))
    v = ROUNDED_ONCE[op](vk, va, vb)
    exact = ROUNDED_ONCE[op](torch, ta.double(), tb.double()).to(td(name))
    assert_ulps(v, exact, name, what=op)
    own = ROUNDED_ONCE[op](torch, ta, tb)
    scale = own.double().abs().max().item()
    assert (as_torch(v).double() - own.double()).abs().max().item() <= 4 * EPS[name] * scale, op


# ---- autograd ----

@pytest.mark.parametrize("name", HALF)
def test_gradients_of_16_bit_leaves_are_16_bit_and_torchs(name):
    rng = np.random.default_rng(6)
    xs, ws = rng.uniform(-1, 1, (4, 6)), rng.uniform(-1, 1, (6, 3))
    vx = vk.tensor(xs).to(vd(name)).requires_grad_()
    vw = vk.tensor(ws).to(vd(name)).requires_grad_()
    tx = torch.tensor(xs).to(td(name)).requires_grad_()
    tw = torch.tensor(ws).to(td(name)).requires_grad_()
    for m, x, w in ((vk, vx, vw), (torch, tx, tw)):
        y = (x @ w).tanh()
        (y * y).sum().backward()
    assert vx.grad.dtype == vd(name) and vw.grad.dtype == vd(name)
    # each of backward's ops rounds: a few ulps of the largest gradient
    for v, t in ((vx.grad, tx.grad), (vw.grad, tw.grad)):
        scale = t.double().abs().max().item()
        assert (as_torch(v).double() - t.double()).abs().max().item() <= 8 * EPS[name] * scale


@pytest.mark.parametrize("name", HALF)
def test_16_bit_gradients_agree_with_float64_differences(name):
    # The gradient rule in 16 bits against float64 central differences of the same function on
    # the same (16-bit representable) inputs, to the format's precision.
    rng = np.random.default_rng(7)
    x64 = vk.tensor(rng.uniform(0.5, 2, (3, 4))).to(vd(name)).double()
    x = x64.to(vd(name)).requires_grad_()
    f = (lambda t: (t.log() * t.exp()).sum())
    f(x).backward()
    h = 1e-6
    num = np.zeros((3, 4))
    base = x64.numpy()
    for i in range(3):
        for j in range(4):
            p, q = base.copy(), base.copy()
            p[i, j] += h
            q[i, j] -= h
            num[i, j] = (f(vk.tensor(p)).item() - f(vk.tensor(q)).item()) / (2 * h)
    np.testing.assert_allclose(as_torch(x.grad).double().numpy(), num, rtol=8 * EPS[name], atol=0)


@pytest.mark.parametrize("name", HALF)
@pytest.mark.parametrize("opt", ["SGD", "Adam", "Adadelta"])
def test_optimizers_step_16_bit_parameters_as_torch(name, opt):
    rng = np.random.default_rng(8)
    w0 = rng.uniform(-1, 1, (5, 3))
    data = rng.uniform(-1, 1, (4, 5))
    results = []
    for m in (vk, torch):
        w = m.nn.Parameter(m.tensor(w0).to(getattr(m, name)))
        x = m.tensor(data).to(getattr(m, name))
        # eps 1e-4 and a loss scaled to gradients near 1: torch's float16 Adam computes in
        # float16, where the default eps is 0 and (1 - beta2) g^2 of a small gradient underflows
        # (0 / 0: NaN); vkml's step computes in float32 and rounds the state once
        o = m.optim.SGD([w], lr=0.1, momentum=0.9) if opt == "SGD" else \
            m.optim.Adam([w], lr=0.01, eps=1e-4) if opt == "Adam" else m.optim.Adadelta([w], eps=1e-4)
        for _ in range(3):
            o.zero_grad()
            (((x @ w) ** 2).mean() * 100).backward()
            o.step()
        results.append(w.detach())
    assert results[0].dtype == vd(name)
    assert_ulps(results[0], results[1], name, ulps=4, what=opt)


# ---- in place, views, printing ----

@pytest.mark.parametrize("name", HALF + NARROW_INT)
def test_views_and_in_place_writes_keep_the_dtype(name):
    x = vk.zeros(3, 4, dtype=vd(name))
    v = x.t()
    v[1] = 5
    assert x[:, 1].tolist() == [5, 5, 5]
    x.add_(1)
    x[0, 0] = 7
    x.copy_(x * 2)
    y = torch.zeros(3, 4, dtype=td(name))
    y.t()[1] = 5
    y.add_(1)
    y[0, 0] = 7
    y.copy_(y * 2)
    assert x.dtype == vd(name) and x.tolist() == y.tolist()


@pytest.mark.parametrize("name", HALF + NARROW_INT)
def test_repr_is_torchs(name):
    values = [[1.5, -2.25, 3.0], [0.1, 100.0, -7.0]] if name in HALF else [[1, 2, 3], [4, 5, 6]]
    x, y = vk.tensor(values, dtype=vd(name)), torch.tensor(values, dtype=td(name))
    assert repr(x) == repr(y).replace("torch.", "vkml.")
    assert x.tolist() == y.tolist()
    assert x[0, 0].item() == y[0, 0].item()


def test_too_big_a_fill_value_is_an_error_as_torch():
    with pytest.raises(RuntimeError, match="overflow"):
        vk.full((2,), 70000.0, dtype=vk.float16)
    with pytest.raises(RuntimeError, match="overflow"):
        vk.full((2,), 300, dtype=vk.uint8)
    assert vk.full((2,), 1e30, dtype=vk.bfloat16).tolist() == \
        torch.full((2,), 1e30, dtype=torch.bfloat16).tolist()


# ---- numpy, DLPack ----

@pytest.mark.parametrize("name", ["float16", "uint8", "int8", "int16"])
def test_numpy_round_trip_keeps_the_dtype(name):
    a = (np.arange(12).reshape(3, 4) * 3 - 7).astype(name)
    x = vk.tensor(a)
    assert x.dtype == vd(name)
    assert vk.from_numpy(a).dtype == vd(name)
    np.testing.assert_array_equal(x.numpy(), a)
    assert x.numpy().dtype == np.dtype(name)


def test_bfloat16_to_numpy_says_what_to_do_without_ml_dtypes():
    x = vk.tensor([1.5, 2.0]).to(vk.bfloat16)
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        with pytest.raises(TypeError, match="bfloat16"):
            x.numpy()
    else:
        a = x.numpy()
        assert str(a.dtype) == "bfloat16" and a.astype(np.float32).tolist() == [1.5, 2.0]
        assert vk.tensor(a).dtype == vk.bfloat16


@pytest.mark.parametrize("name", HALF + NARROW_INT)
def test_dlpack_with_torch_both_ways_bit_for_bit(name):
    t = torch.tensor([[1.5, -2.0, 3.25], [0.0, 7.0, -1.0]]).to(td(name))
    v = vk.from_dlpack(t)
    assert v.dtype == vd(name)
    back = torch.from_dlpack(v)
    assert back.dtype == td(name)
    torch.testing.assert_close(back, t, rtol=0, atol=0)


# ---- safetensors ----

@pytest.mark.parametrize("name,code", [("float16", "F16"), ("bfloat16", "BF16"), ("uint8", "U8"),
                                       ("int8", "I8"), ("int16", "I16")])
def test_safetensors_round_trip_with_the_safetensors_package_and_torch(tmp_path, name, code):
    from safetensors.torch import load_file, save_file
    t = (torch.arange(-6, 6) * 3).reshape(3, 4).to(td(name))
    path = str(tmp_path / "torch.safetensors")
    save_file({"w": t}, path)
    loaded = vk.load(path)
    assert loaded["w"].dtype == vd(name)
    torch.testing.assert_close(as_torch(loaded["w"]), t, rtol=0, atol=0)
    out = str(tmp_path / "vkml.safetensors")
    vk.save(loaded, out)
    with open(out, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        assert f'"dtype":"{code}"' in f.read(n).decode().replace(" ", "")
    torch.testing.assert_close(load_file(out)["w"], t, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["float16", "uint8", "int8", "int16"])
def test_vk_save_keeps_narrow_numpy_arrays_and_dtypes(tmp_path, name):
    a = np.arange(-3, 3).astype(name)
    path = str(tmp_path / "tree.safetensors")
    vk.save({"arr": a, "dt": vd(name), "t": [vk.tensor(a)]}, path)
    back = vk.load(path)
    assert back["arr"].dtype == a.dtype and back["arr"].tolist() == a.tolist()
    assert back["dt"] == vd(name) and back["t"][0].dtype == vd(name)


# ---- devices ----
# The Vulkan device's 16-bit dtypes, and the DTypeError of a device without 16-bit storage:
# test_vulkan_half.py.
