"""The narrow dtypes on the Vulkan device (#19 item 7): float16 and bfloat16 (16-bit storage),
uint8, int8 (8-bit storage) and int16 are stored as themselves and computed in float32 / int32, as
on the CPU, so a program written for 16-bit weights runs on the GPU unchanged. The CPU is the
oracle here (test_half_precision and test_half_sweep check it against torch); the op-by-op sweep
on the device is test_half_sweep's vulkan half. A device without 16-bit storage refuses those
dtypes with a DTypeError naming the op and the device (VKML_VULKAN_NO_16BIT=1 runs as one)."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import vkml as vk

if not vk.vulkan.is_available():
    if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
        raise RuntimeError("VKML_REQUIRE_VULKAN=1 but the vulkan device is not available")
    pytest.skip("no vulkan device", allow_module_level=True)

HALVES = ["float16", "bfloat16"]
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def _np(t):
    return torch.from_dlpack(t.detach().cpu().contiguous()).double().numpy()


def test_the_device_reports_16_bit_storage():
    assert vk._C._vulkan_features()["int16_storage"] is True  # lavapipe has it


@pytest.mark.parametrize("name", HALVES)
def test_gradients_of_16_bit_leaves_on_the_device_are_16_bit_and_match_the_cpu(name):
    dt = getattr(vk, name)
    rng = np.random.default_rng(7)
    x0, w0 = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    grads = {}
    for dev in ("cpu", "vulkan"):
        x = vk.tensor(x0, dtype=dt, device=dev, requires_grad=True)
        w = vk.tensor(w0, dtype=dt, device=dev, requires_grad=True)
        for _ in range(2):  # the second backward accumulates into the 16-bit .grad (add_into)
            y = vk.tanh(x @ w).softmax(-1).log().mean()
            y.backward()
        assert x.grad.dtype == dt and w.grad.dtype == dt and x.grad.device.type == dev
        grads[dev] = (_np(x.grad), _np(w.grad), _np(y))
    for c, v in zip(grads["cpu"], grads["vulkan"]):
        scale = max(np.abs(c).max(), 1.0)
        assert np.abs(c - v).max() <= 2 * EPS[name] * scale, (c, v)


@pytest.mark.parametrize("name,opt", [("bfloat16", "Adam"), ("float16", "SGD"), ("bfloat16", "Adadelta")])
def test_a_16_bit_training_run_on_the_device_follows_the_cpu(name, opt):
    dt = getattr(vk, name)
    rng = np.random.default_rng(3)
    data, target = rng.standard_normal((16, 8)), rng.standard_normal((16, 2))
    runs = {}
    for dev in ("cpu", "vulkan"):
        vk.manual_seed(0)
        model = vk.nn.Sequential(vk.nn.Linear(8, 16), vk.nn.GELU(), vk.nn.Linear(16, 2))
        model.to(device=dev, dtype=dt)
        kw = {"lr": 0.01} if opt == "Adam" else {"lr": 0.05, "momentum": 0.9} if opt == "SGD" else {"eps": 1e-4}
        o = getattr(vk.optim, opt)(model.parameters(), **kw)
        x, t = vk.tensor(data, dtype=dt, device=dev), vk.tensor(target, dtype=dt, device=dev)
        losses = []
        for _ in range(5):
            o.zero_grad()
            loss = vk.nn.functional.mse_loss(model(x), t)
            loss.backward()
            o.step()
            losses.append(loss.float().item())
        p = next(model.parameters())
        assert p.dtype == dt and p.device.type == dev
        runs[dev] = losses
    assert runs["vulkan"][-1] < runs["vulkan"][0]
    np.testing.assert_allclose(runs["vulkan"], runs["cpu"], rtol=8 * EPS[name])


@pytest.mark.parametrize("name", ["uint8", "int8", "int16"])
def test_narrow_integers_on_the_device_wrap_as_torch(name):
    a = np.array([0, 1, 7, 100, 127, 200, 255, 3], dtype=np.int64)
    b = np.array([255, 2, 9, 100, 1, 100, 1, 250], dtype=np.int64)
    tdt = getattr(torch, name)
    ta, tb = torch.tensor(a).to(tdt), torch.tensor(b).to(tdt)
    va, vb = (vk.tensor(a, device="vulkan").to(getattr(vk, name)),
              vk.tensor(b, device="vulkan").to(getattr(vk, name)))
    for op in ("add", "sub", "mul", "maximum", "bitwise_xor"):
        got = getattr(vk, op)(va, vb)
        want = getattr(torch, op)(ta, tb)
        assert got.dtype == getattr(vk, name) and got.device.type == "vulkan"
        assert got.cpu().tolist() == want.tolist(), op
    assert (va * 3).sum().item() == (ta * 3).sum().item()  # the sum promotes to int64 as torch's
    assert (va.float() / 2).tolist() == (ta.float() / 2).tolist()


def test_a_write_through_a_view_of_a_16_bit_tensor_on_the_device_reaches_its_base():
    base = vk.zeros(3, 4, dtype=vk.float16, device="vulkan")
    view = base.t()[1:3]  # a view: views take every dtype on the device, as on the CPU
    view.fill_(2.5)
    base[0, :2] = vk.tensor([1.0, -1.0], device="vulkan")  # float32 into float16, rounded
    assert base.cpu().tolist() == [[1.0, -1.0, 2.5, 0.0], [0.0, 2.5, 2.5, 0.0],
                                   [0.0, 2.5, 2.5, 0.0]]


def test_an_embedding_in_bfloat16_on_the_device_gathers_its_rows():
    table = vk.randn(10, 4).to(vk.bfloat16)
    idx = vk.tensor([[3, 3, 9], [0, 1, 2]])
    got = vk.nn.functional.embedding(idx.to("vulkan"), table.to("vulkan"))
    assert got.dtype == vk.bfloat16
    assert _np(got).tolist() == _np(vk.nn.functional.embedding(idx, table)).tolist()


def test_autocast_on_the_device_runs_its_low_precision_ops_in_float16_as_the_cpu():
    out = {}
    for dev in ("cpu", "vulkan"):
        vk.manual_seed(0)
        lin = vk.nn.Linear(8, 4).to(dev)
        x = vk.randn(5, 8).to(dev)
        with vk.autocast(dev, dtype=vk.float16):
            y = lin(x)
            loss = y.softmax(-1).square().sum()
        assert y.dtype == vk.float16 and loss.dtype == vk.float32  # softmax in float32
        loss.backward()
        assert lin.weight.grad.dtype == vk.float32  # the float32 parameter's
        out[dev] = (_np(y), _np(lin.weight.grad))
    np.testing.assert_allclose(out["vulkan"][0], out["cpu"][0], rtol=0, atol=2 * EPS["float16"])
    np.testing.assert_allclose(out["vulkan"][1], out["cpu"][1], rtol=1e-3, atol=1e-5)


CHILD = textwrap.dedent("""
    import json
    import vkml as vk
    out = {"features": vk._C._vulkan_features(), "refused": {}}
    x = vk.ones(3, dtype=vk.float16).to("vulkan")  # moving bytes needs no 16-bit access
    out["moved"] = x.cpu().tolist()
    for name, fn in [("add", lambda: x + x), ("exp", lambda: x.exp()),
                     ("cast", lambda: x.float()), ("contiguous", lambda: x[::2].contiguous()),
                     ("neg", lambda: -vk.ones(2, dtype=vk.int16).to("vulkan"))]:
        try:
            fn()
            out["refused"][name] = None
        except vk.DTypeError as e:
            out["refused"][name] = str(e)
    out["uint8"] = (vk.ones(2, dtype=vk.uint8, device="vulkan") * 3).cpu().tolist()
    print(json.dumps(out))
""")


def test_a_device_without_16_bit_storage_refuses_16_bit_dtypes_naming_op_and_device():
    env = dict(os.environ, VKML_VULKAN_NO_16BIT="1", VKML_VULKAN_VALIDATE="1")
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "vkml vulkan validation" not in r.stderr, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["features"]["int16_storage"] is False
    assert out["moved"] == [1.0, 1.0, 1.0]
    for op, msg in out["refused"].items():
        assert msg is not None, f"{op} ran without 16-bit storage"
        assert msg.startswith(op) and "vulkan device" in msg and "16-bit storage" in msg, msg
        assert ("int16" if op == "neg" else "float16") in msg, msg
    assert out["uint8"] == [3, 3]  # 8-bit storage is its own feature
