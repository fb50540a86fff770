"""The Vulkan backend (issue #14) from Python, on this machine's Vulkan device (lavapipe in CI),
compared with torch on the CPU. Without a device the tests skip and say why; VKML_REQUIRE_VULKAN=1
(make test sets it) makes that a failure."""
import os

import numpy as np
import pytest
import torch

import vkml as vk


def _why():
    try:
        vk.vulkan.device_name()
    except vk.DeviceError as e:
        return str(e)
    return ""


if not vk.vulkan.is_available():
    if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
        raise RuntimeError("VKML_REQUIRE_VULKAN=1 but " + _why())
    pytest.skip(_why(), allow_module_level=True)

VK = vk.device("vulkan")


def test_the_device_names_itself():
    assert isinstance(vk.vulkan.device_name(), str) and vk.vulkan.device_name()
    assert vk.is_device_available("vulkan") and vk.is_device_available("vulkan:0")
    assert not vk.is_device_available("vulkan:1")
    vk.vulkan.synchronize()


def test_moves_keep_every_bit_and_print():
    x = vk.tensor([[1.5, -2.25, 3e-8], [1e30, -0.0, 7.0]])
    d = x.to("vulkan")
    assert d.device == VK and d.dtype == vk.float32
    assert np.array_equal(d.cpu().numpy(), x.numpy())
    assert "vulkan:0" in repr(d) and "1.5" in repr(d)
    assert d.tolist() == x.tolist() and d[0, 0].item() == 1.5
    with pytest.raises(vk.DeviceError, match=r"\.cpu\(\)"):
        d.numpy()


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "neg", "scalar", "broadcast", "view"])
def test_arithmetic_matches_torch(op):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32) + 3
    fns = {
        "add": lambda m, x, y: x + y,
        "sub": lambda m, x, y: x - y,
        "mul": lambda m, x, y: x * y,
        "div": lambda m, x, y: x / y,
        "neg": lambda m, x, y: -x,
        "scalar": lambda m, x, y: x * 2.5 - 1,
        "broadcast": lambda m, x, y: x + y[0],
        "view": lambda m, x, y: x.t()[1:3] * y.t()[1:3],
    }
    f = fns[op]
    got = f(vk, vk.tensor(a).to("vulkan"), vk.tensor(b).to("vulkan"))
    want = f(torch, torch.tensor(a), torch.tensor(b))
    assert got.device == VK
    if op == "div":  # GLSL division may be off by an ulp or two
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6)
    else:
        assert np.array_equal(got.cpu().numpy(), want.numpy())


def test_creation_on_the_device():
    assert vk.zeros(2, 3, device="vulkan").device == VK
    assert vk.full((2,), 4.5, device="vulkan").tolist() == [4.5, 4.5]
    assert vk.ones(3, device=VK).tolist() == [1.0, 1.0, 1.0]


def test_backward_runs_on_the_device():
    xv = [1.0, -2.0, 3.0]
    x = vk.tensor(xv, device="vulkan", requires_grad=True)
    for _ in range(2):  # the second backward accumulates into x.grad on the device
        (x * x + 2 * x).cpu().sum().backward()
    t = torch.tensor(xv, requires_grad=True)
    for _ in range(2):
        (t * t + 2 * t).sum().backward()
    assert x.grad.device == VK
    assert x.grad.tolist() == t.grad.tolist()


def test_what_this_version_cannot_do_says_so():
    x = vk.ones(2, device="vulkan")
    with pytest.raises(NotImplementedError, match="matmul.*vulkan:0"):
        x.reshape(1, 2) @ x.reshape(2, 1)
    with pytest.raises(vk.DTypeError, match="add.*vulkan.*int64"):
        vk.arange(3).to("vulkan") + 1
    with pytest.raises(vk.DTypeError, match="float64"):
        vk.zeros(2, dtype=vk.float64, device="vulkan")


def test_the_readme_gpu_example_runs_as_written():
    import contextlib
    import io
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[2] / "README.md").read_text()
    section = text[text.index("## The GPU: Vulkan"):]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == vk.vulkan.device_name()
    assert "1000, 1000" in lines[1]


def test_threads_share_the_device():
    # One queue, one command pool: submissions from several threads take turns, and each thread
    # sees its own results.
    import threading

    errors = []

    def work(k):
        try:
            x = vk.full((1000,), float(k), device="vulkan")
            for _ in range(20):
                x = x + 1.0
            assert x.cpu().tolist() == [k + 20.0] * 1000
        except Exception as e:  # noqa: BLE001 -- reported below, with the thread's number
            errors.append((k, repr(e)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "rsqrt", "reciprocal", "abs", "sign", "sin", "cos",
                                "tanh", "sigmoid"])
def test_unary_math_matches_torch(op):
    rng = np.random.default_rng(1)
    a = rng.uniform(-4, 4, (5, 7)).astype(np.float32)
    if op in ("log", "sqrt", "rsqrt", "reciprocal"):
        a = np.abs(a) + 0.1
    got = getattr(vk.tensor(a).to("vulkan"), op)()
    want = getattr(torch.tensor(a), op)()
    assert got.device == VK
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dims", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_and_mean_match_torch(op, dims):
    a = np.random.default_rng(2).standard_normal((3, 4, 5)).astype(np.float32)
    args = () if dims is None else (dims,)
    got = getattr(vk.tensor(a).to("vulkan"), op)(*args)
    want = getattr(torch.tensor(a), op)(*args)
    assert got.device == VK and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=2e-6, atol=2e-6)


def test_a_model_trains_on_the_device_as_on_the_cpu():
    # Linear regression by hand (no matmul on the device yet): 30 SGD steps, parameters, loss and
    # gradients on the device all along; the losses follow torch's to float32 rounding.
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((16, 3)).astype(np.float32)
    ys = (xs @ np.array([1.5, -2.0, 0.5], dtype=np.float32) + 0.3)[:, None]

    def train(lib, dev):
        x, y = lib.tensor(xs).to(dev), lib.tensor(ys).to(dev)
        w = lib.zeros(3).to(dev).requires_grad_()
        b = lib.zeros(1).to(dev).requires_grad_()
        losses = []
        for _ in range(30):
            r = (x * w).sum(1, keepdim=True) + b - y
            loss = (r * r).mean()
            loss.backward()
            with lib.no_grad():
                w -= 0.1 * w.grad
                b -= 0.1 * b.grad
            w.grad = None
            b.grad = None
            losses.append(loss.item())
        assert w.device.type == ("vulkan" if lib is vk else "cpu")
        return losses

    np.testing.assert_allclose(train(vk, "vulkan"), train(torch, "cpu"), rtol=2e-5)
