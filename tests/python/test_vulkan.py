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


def test_every_dtype_computes_on_the_device():
    # vkgaps: integer matrix products too (int32; int64 with shaderInt64), exact as on the CPU
    i = vk.arange(4).reshape(2, 2)
    assert (i.to("vulkan") @ i.to("vulkan")).tolist() == (i @ i).tolist() == [[2, 3], [6, 11]]
    assert (vk.arange(3).to("vulkan") + 1).tolist() == [1, 2, 3]
    assert vk.zeros(2, dtype=vk.float64, device="vulkan").sin().tolist() == [0.0, 0.0]
    x = vk.ones(2, device="vulkan")
    assert (x.reshape(1, 2) @ x.reshape(2, 1)).tolist() == [[2.0]]


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
    assert "256, 256" in lines[1]


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


def _linear_problem():
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((16, 3)).astype(np.float32)
    ys = (xs @ np.array([1.5, -2.0, 0.5], dtype=np.float32) + 0.3)[:, None]
    return xs, ys


def _train_linear(lib, dev, optimizer, steps, on_step=None):
    xs, ys = _linear_problem()
    x, y = lib.tensor(xs).to(dev), lib.tensor(ys).to(dev)
    w = lib.zeros(3).to(dev).requires_grad_()
    b = lib.zeros(1).to(dev).requires_grad_()
    opt = (lib.optim.SGD([w, b], lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)
           if optimizer == "sgd" else lib.optim.AdamW([w, b], lr=0.05, amsgrad=True))
    losses = []
    for step in range(steps):
        opt.zero_grad()
        r = (x * w).sum(1, keepdim=True) + b - y
        loss = (r * r).mean()
        loss.backward()
        opt.step()
        if on_step is not None:
            on_step(step, lambda: losses.append(loss.item()))
        else:
            losses.append(loss.item())
    return losses


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_training_step_copies_nothing_between_host_and_device_but_the_loss(optimizer):
    # Forward, backward, the optimizer's update and its state all stay on the device; the host
    # reads the loss (one copy), and the step's scalars are written by the device (no upload).
    deltas = []

    def on_step(step, read_loss):
        before = vk.vulkan.memory_stats()
        read_loss()
        after = vk.vulkan.memory_stats()
        deltas.append((before, after))

    got = _train_linear(vk, "vulkan", optimizer, 6, on_step)
    want = _train_linear(torch, "cpu", optimizer, 6)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for (b0, a0), (b1, a1) in zip(deltas[1:], deltas[2:]):  # one whole step: b0 -> b1 ... a1
        assert a1["host_to_device_copies"] == a0["host_to_device_copies"]
        assert a1["device_to_host_copies"] - a0["device_to_host_copies"] == 1
        assert a1["allocated_bytes"] == a0["allocated_bytes"]
        assert a1["submissions"] - a0["submissions"] == 1  # the whole step in one submission


def test_device_memory_stays_flat_over_a_thousand_steps():
    seen = []

    def on_step(step, read_loss):
        if step % 100 == 99:
            read_loss()
            stats = vk.vulkan.memory_stats()
            seen.append((stats["allocated_bytes"], stats["reserved_bytes"]))

    _train_linear(vk, "vulkan", "adam", 1000, on_step)
    assert len(set(seen)) == 1, seen


def test_memory_is_reported_and_handed_back():
    vk.vulkan.synchronize()
    base = vk.vulkan.memory_allocated()
    x = vk.zeros(1000, device="vulkan")
    assert vk.vulkan.memory_allocated() == base + 4000
    assert vk.vulkan.memory_reserved() >= vk.vulkan.memory_allocated()
    del x
    assert vk.vulkan.memory_allocated() == base
    vk.vulkan.empty_cache()
    assert vk.vulkan.memory_reserved() >= vk.vulkan.memory_allocated()


def test_a_corrupt_pipeline_cache_is_ignored_and_rewritten(tmp_path):
    # The pipeline cache is an optimisation: a damaged file must cost a compile, never a crash or
    # a wrong result.
    import subprocess
    import sys

    code = ("import vkml as vk; x = vk.full((3,), 2.0, device='vulkan'); "
            "print((x * x + 1.0).tolist())")
    env = dict(os.environ, VKML_CACHE_DIR=str(tmp_path))

    def run():
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run() == "[5.0, 5.0, 5.0]"
    files = list(tmp_path.glob("vulkan-pipelines-*.bin"))
    assert len(files) == 1 and files[0].stat().st_size >= 32
    files[0].write_bytes(b"\xff" * 200)
    assert run() == "[5.0, 5.0, 5.0]"
    files[0].write_bytes(files[0].read_bytes()[:7])
    assert run() == "[5.0, 5.0, 5.0]"


def test_device_tensors_save_and_load_as_cpu_tensors(tmp_path):
    # Defect: vk.save of a model on the device raised "not on the CPU" (digits --device vulkan
    # could not checkpoint). Tensors are read back and saved; they load on the CPU, and
    # load_state_dict copies them onto the device.
    model = vk.nn.Linear(3, 2).to("vulkan")
    path = tmp_path / "m.safetensors"
    vk.save(model.state_dict(), path)
    loaded = vk.load(path)
    assert loaded["weight"].device == vk.device("cpu")
    assert loaded["weight"].tolist() == model.weight.cpu().tolist()
    other = vk.nn.Linear(3, 2).to("vulkan")
    other.load_state_dict(loaded)
    assert other.weight.device == VK and other.weight.tolist() == model.weight.tolist()


def _digits_losses(device, steps=100, model_kind="mlp"):
    # The digits example's model, optimizer and data, step by step (its loop, without the epochs).
    from vkml.examples import digits
    from vkml.nn import functional as F

    Xtr, ytr, _, _ = digits.load_data()
    vk.manual_seed(0)
    model = digits.build_model(model_kind).to(device)
    opt, _ = digits.build_optim(model_kind, model, 30)
    X, y = digits.inputs(model_kind, Xtr, device), vk.tensor(ytr, device=device)
    order = digits.shuffle_order(0, 0, len(ytr))
    losses = []
    for b in range(steps):
        rows = order[(b * 32) % len(ytr):][:32]
        idx = vk.tensor(rows, device=device)
        loss = F.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def test_digits_trains_on_the_device_as_on_the_cpu_and_repeats_bit_for_bit():
    on_device = _digits_losses("vulkan")
    np.testing.assert_allclose(on_device, _digits_losses("cpu"), rtol=1e-4)
    assert on_device[-1] < 0.5 * on_device[0]
    np.testing.assert_array_equal(_digits_losses("vulkan"), on_device)  # deterministic


def test_set_default_device_puts_new_tensors_there():
    # As torch.set_default_device: creation functions without device= use it; *_like keep their
    # input's device; an explicit device= wins; None (or "cpu") restores the CPU.
    vk.set_default_device("vulkan")
    try:
        assert vk.get_default_device() == VK
        assert vk.zeros(2).device == VK and vk.tensor([1.0, 2.0]).device == VK
        assert vk.arange(3).device == VK and vk.randn(2).device == VK
        assert vk.zeros(2, device="cpu").device == vk.device("cpu")
        assert vk.zeros_like(vk.ones(2, device="cpu")).device == vk.device("cpu")
    finally:
        vk.set_default_device(None)
    assert vk.zeros(1).device == vk.device("cpu")


def test_an_array_operand_joins_the_tensors_device():
    # A numpy array or a list in an op is a constant: it goes where the tensor is (it raised a
    # DeviceError, cpu against vulkan).
    x = vk.ones(2, 3, device="vulkan")
    y = x @ np.ones((3, 2), dtype=np.float32)
    assert y.device == VK and y.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert (x[0] + [1.0, 2.0, 3.0]).tolist() == [2.0, 3.0, 4.0]


# Index assignment into a Vulkan tensor: `t[1:3] = 4.0` read the CPU scalar as device memory and
# crashed the process; an integer-tensor or mask index raised DeviceError (the values were written
# through host pointers).
SETITEM_CASES = [
    ("slice_number", lambda t, L: t.__setitem__(slice(1, 3), 4.0)),
    ("int_number", lambda t, L: t.__setitem__(0, -1.0)),
    ("slice_tensor", lambda t, L: t.__setitem__(slice(2, 4), L.tensor([5.0, 6.0]))),
    ("index_tensor", lambda t, L: t.__setitem__(L.tensor([1, 3]), 2.0)),
    ("repeated_index_last_wins", lambda t, L: t.__setitem__(L.tensor([1, 1, 4]), L.tensor([7.0, 8.0, 9.0]))),
    ("mask", lambda t, L: t.__setitem__(t > 0.5, 3.0)),
    ("rows_and_cols", lambda t, L: t.view(2, 3).__setitem__((L.tensor([0, 1]), slice(None, 2)), L.tensor([[1.0], [2.0]]))),
]


@pytest.mark.parametrize("name,assign", SETITEM_CASES, ids=[c[0] for c in SETITEM_CASES])
@pytest.mark.parametrize("index_on_device", [False, True])
def test_index_assignment_on_the_device_regression(name, assign, index_on_device):
    base = np.array([0.25, 1.5, -2.0, 0.75, 3.0, -0.5], dtype=np.float32)
    expected = torch.tensor(base)
    assign(expected, torch)
    t = vk.tensor(base).to("vulkan")

    class OnDevice:  # vk with tensor() making the index/value on the device
        def __getattr__(self, name):
            return getattr(vk, name)

        def tensor(self, data):
            made = vk.tensor(data)
            return made.to("vulkan") if index_on_device else made

    assign(t, OnDevice())
    assert t.device == VK
    np.testing.assert_array_equal(t.cpu().numpy(), expected.numpy())


def test_index_assignment_on_the_device_bool_and_int64_regression():
    for dtype in ("bool", "int64"):
        base = np.array([0, 1, 0, 1, 1], dtype=dtype)
        t, expected = vk.tensor(base).to("vulkan"), torch.tensor(base)
        idx = [0, 2, 2]
        t[vk.tensor(idx).to("vulkan")] = 1
        expected[torch.tensor(idx)] = 1
        np.testing.assert_array_equal(t.cpu().numpy(), expected.numpy())


def test_recorded_inplace_writes_on_the_device():
    # ops/inplace.cpp's recorded writes (setitem by slices and masks, masked_fill_, relu_,
    # index_add_) on the device, against torch on the CPU
    rng = np.random.default_rng(3)
    xs, ws = rng.normal(size=(2, 4, 3)).astype(np.float32), rng.normal(size=(3, 3)).astype(np.float32)
    grads = []
    for lib, dev in ((torch, "cpu"), (vk, VK)):
        x = lib.tensor(xs, device=dev, requires_grad=True)
        w = lib.tensor(ws, device=dev, requires_grad=True)
        out = lib.zeros(2, 4, 3, device=dev)
        h = lib.zeros(2, 3, device=dev)
        for t in range(4):
            h = lib.tanh(x[:, t] + h @ w)
            out[:, t] = h
        out.masked_fill_(out > 0.5, 0.5)
        out[out < -0.6] = 0.0
        out.index_add_(1, lib.tensor([0, 2], device=dev), out[:, 1:3] * 0.5)
        out.relu_()  # last: its rule reads its output
        (out * out).sum().backward()
        grads.append([out.detach().cpu().numpy(), x.grad.cpu().numpy(), w.grad.cpu().numpy()])
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_writes_through_views_on_the_device():
    # ops/inplace.cpp's writes through views (the base's strided_scatter node, a view taken
    # before a write regenerated) on the device, against torch on the CPU
    rng = np.random.default_rng(4)
    xs = rng.normal(size=(3, 4)).astype(np.float32)
    grads = []
    for lib, dev in ((torch, "cpu"), (vk, VK)):
        x = lib.tensor(xs, device=dev, requires_grad=True)
        y = x * 2
        early = y[1]  # taken before the writes
        y[:, 0].fill_(0.5)
        y.view(-1)[2:6].mul_(x.view(-1)[:4])
        buf = lib.zeros(3, 4, device=dev)
        for t in range(4):
            buf[:, t].copy_(y[:, t].tanh())
        ((buf * y).sum() + (early * early).sum()).backward()
        grads.append([buf.detach().cpu().numpy(), x.grad.cpu().numpy()])
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
