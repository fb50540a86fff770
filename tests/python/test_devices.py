"""The device API (issue #13, item 7): vkml.device, Tensor.device / .to(device) / .cpu(),
device= on creation functions and layers, Module.to(device).

A test device with the CPU's kernels on host memory (vk._C._host_test_device(), registered from
the bindings) stands in for a second device here, and tests/cpp/test_device_seam.cpp registers
others from C++; the Vulkan device itself is tested in test_vulkan.py. Here: the Python surface,
checked against torch where torch has the same behaviour.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import vkml as vk

HAS_VULKAN = vk.is_device_available("vulkan")


def test_device_objects_behave_as_torch_devices():
    d = vk.device("cpu")
    t = torch.device("cpu")
    assert str(d) == str(t) == "cpu"
    assert repr(d) == repr(t) == "device(type='cpu')"
    assert d.type == t.type == "cpu" and d.index is None and t.index is None
    assert d == vk.device("cpu") and d == vk.device(d) and hash(d) == hash(vk.device("cpu"))
    assert (d == "cpu") == (t == "cpu") == False  # noqa: E712  (as torch: a str is not a device)
    v = vk.device("vulkan", 1)
    assert str(v) == "vulkan:1" and repr(v) == "device(type='vulkan', index=1)"
    assert v.type == "vulkan" and v.index == 1 and v == vk.device("vulkan:1") and v != d
    assert {d: 1, vk.device("cpu"): 2} == {d: 2}


@pytest.mark.parametrize("spec", ["cuda", "foo", "vulkan:x", "vulkan:-1", "cpu:1", ""])
def test_unknown_or_malformed_devices_are_device_errors(spec):
    with pytest.raises(vk.DeviceError):
        vk.device(spec)
    with pytest.raises(RuntimeError):  # what torch raises for a bad device string
        vk.device(spec)


def test_device_index_given_twice_is_an_error():
    with pytest.raises(vk.DeviceError, match="twice"):
        vk.device("vulkan:0", 1)


def test_tensor_device_and_cpu():
    x = vk.tensor([1.0, 2.0])
    assert x.device == vk.device("cpu") and x.device.type == "cpu" and x.is_cpu
    assert x.cpu() is x
    assert x.to("cpu") is x and x.to(vk.device("cpu")) is x and x.to(device="cpu") is x
    assert x.to(torch.device("cpu")) is x  # a torch.device in ported code
    y = x.to("cpu", vk.float64)
    assert y.dtype == vk.float64 and y.device == x.device
    z = x.to(device="cpu", copy=True)
    assert z is not x and z.tolist() == x.tolist()
    w = x.to(vk.tensor([1], dtype=vk.int32))
    assert w.dtype == vk.int32


_NO_VULKAN_CHECK = """
import vkml as vk
assert not vk.vulkan.is_available() and not vk.is_device_available("vulkan")
x = vk.ones(3)
for spec in ("vulkan", "vulkan:0"):
    for make in (lambda: x.to(spec), lambda: vk.zeros(2, device=spec),
                 lambda: vk.nn.Linear(2, 3, device=spec), vk.vulkan.device_name):
        try:
            make()
        except vk.DeviceError as e:
            assert "vulkan" in str(e) and "not available" in str(e), e
            print(e)
        else:
            raise AssertionError("no DeviceError")
print("ok", (x + 1).tolist())
"""


def test_vulkan_without_a_device_says_so_and_never_crashes():
    # Without a Vulkan driver (none installed, or hidden from the loader as here), the device is
    # unavailable with the reason in the error, and the CPU works as before. In a process of its
    # own: the device is looked for once per process.
    env = dict(os.environ, VK_DRIVER_FILES="/nonexistent/icd.json", VK_ICD_FILENAMES="/nonexistent/icd.json")
    env.pop("VKML_VULKAN_VALIDATE", None)
    r = subprocess.run([sys.executable, "-c", _NO_VULKAN_CHECK], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ok [2.0, 2.0, 2.0]" in r.stdout
    if HAS_VULKAN:  # a build with the backend says why it found no device
        assert "no Vulkan driver" in r.stdout or "no Vulkan device" in r.stdout, r.stdout


def test_to_a_device_vkml_does_not_have():
    x = vk.ones(3)
    for spec in ["cuda", "cuda:0", "mps"]:
        with pytest.raises(RuntimeError, match="unknown device"):
            x.to(spec)


CREATION = [
    lambda d: vk.zeros(2, 3, device=d),
    lambda d: vk.empty(2, device=d),
    lambda d: vk.ones((2,), device=d),
    lambda d: vk.full((2,), 7.0, device=d),
    lambda d: vk.arange(5, device=d),
    lambda d: vk.linspace(0, 1, 4, device=d),
    lambda d: vk.eye(3, device=d),
    lambda d: vk.rand(2, device=d),
    lambda d: vk.randn(2, device=d),
    lambda d: vk.randint(0, 5, (3,), device=d),
    lambda d: vk.tensor([1.0, 2.0], device=d),
    lambda d: vk.as_tensor([1.0, 2.0], device=d),
    lambda d: vk.zeros_like(vk.ones(2), device=d),
    lambda d: vk.ones_like(vk.ones(2), device=d),
    lambda d: vk.full_like(vk.ones(2), 3, device=d),
    lambda d: vk.rand_like(vk.ones(2), device=d),
    lambda d: vk.randn_like(vk.ones(2), device=d),
]


@pytest.mark.parametrize("make", CREATION)
@pytest.mark.parametrize("device", [None, "cpu", vk.device("cpu"), torch.device("cpu")])
def test_creation_functions_take_device(make, device):
    assert make(device).device == vk.device("cpu")


@pytest.mark.parametrize("make", CREATION)
def test_creation_functions_reject_unknown_devices(make):
    with pytest.raises(vk.DeviceError):
        make("cuda")
    with pytest.raises(vk.DeviceError):
        make(3)  # an int is torch's CUDA ordinal: vkml has no such device


def test_module_to_moves_in_place_and_keeps_optimizer_references():
    vk.manual_seed(0)
    model = vk.nn.Sequential(vk.nn.Linear(3, 4, device="cpu"), vk.nn.ReLU(), vk.nn.Linear(4, 1))
    params = list(model.parameters())
    opt = vk.optim.SGD(model.parameters(), lr=0.1)
    assert model.to("cpu") is model and model.cpu() is model
    model.to(vk.float64)
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert all(p.dtype == vk.float64 and p.requires_grad for p in params)
    x = vk.randn(5, 3, dtype=vk.float64)
    before = [p.detach().clone() for p in params]
    model(x).sum().backward()
    opt.step()  # the optimizer built before the cast still updates the model's parameters
    assert all(not np.array_equal(b.numpy(), p.detach().numpy()) for b, p in zip(before, params))


def test_module_to_casts_gradients_and_buffers():
    bn = vk.nn.BatchNorm1d(3)
    bn(vk.randn(4, 3)).sum().backward()
    bn.to(device=vk.device("cpu"), dtype=vk.float64)
    assert bn.weight.grad.dtype == vk.float64 and bn.running_mean.dtype == vk.float64
    assert bn.num_batches_tracked.dtype == vk.int64  # integers are not cast


def test_numpy_and_dlpack_stay_cpu():
    x = vk.arange(3)
    assert x.__dlpack_device__() == (1, 0)
    assert x.numpy().tolist() == [0, 1, 2]


# ---- across two devices: host_test (host memory, the CPU's kernels) stands in for a GPU ----

HT = vk._C._host_test_device()


def test_host_test_device_is_a_device():
    assert str(HT) == "host_test:0" and HT.type == "host_test" and HT.index == 0
    assert vk.device("host_test") == HT and vk.is_device_available(HT)
    assert not vk.is_device_available("host_test:1")
    with pytest.raises(vk.DeviceError, match="does not exist"):
        vk.zeros(2, device="host_test:1")


def test_moves_keep_values_and_return_self_when_nothing_changes():
    x = vk.randn(3, 4)
    y = x.to(HT)
    assert y.device == HT and not y.is_cpu and y.to(HT) is y and y.to("host_test:0") is y
    back = y.cpu()
    assert back.device == vk.device("cpu") and np.array_equal(back.numpy(), x.numpy())
    assert y.tolist() == x.tolist() and y[0, 0].item() == x[0, 0].item()
    assert "tensor(" in repr(y)
    z = x.t().to(HT, vk.float64)  # non-contiguous source, and a dtype change
    assert z.dtype == vk.float64 and np.array_equal(z.cpu().numpy(), x.t().numpy().astype(np.float64))


def test_numpy_and_dlpack_of_a_device_tensor_say_to_call_cpu():
    y = vk.ones(2).to(HT)
    with pytest.raises(vk.DeviceError, match=r"\.cpu\(\)"):
        y.numpy()
    with pytest.raises(vk.DeviceError, match=r"\.cpu\(\)"):
        np.asarray(y)
    with pytest.raises(vk.DeviceError):
        y.__dlpack__()


def test_mixed_devices_are_a_device_error_naming_both():
    a, b = vk.ones(2, 3).to(HT), vk.ones(2, 3)
    for f in (lambda: a + b, lambda: b * a, lambda: vk.cat([a, b]), lambda: a @ b.t()):
        with pytest.raises(vk.DeviceError, match="host_test:0.*cpu|cpu.*host_test:0"):
            f()
    with pytest.raises(RuntimeError):  # as torch's "Expected all tensors to be on the same device"
        a - b


def test_numbers_and_0d_cpu_tensors_join_the_device():
    x = vk.tensor([1.0, 2.0]).to(HT)
    assert (x * 3).device == HT and (x * 3).tolist() == [3.0, 6.0]
    c = vk.tensor(2.0, requires_grad=True)
    w = vk.tensor([1.0, 2.0], requires_grad=True)
    (w.to(HT) * c).sum().backward()
    assert c.grad.device == vk.device("cpu") and c.grad.item() == 3.0
    assert w.grad.device == vk.device("cpu") and w.grad.tolist() == [2.0, 2.0]


def _train(device, opt_cls, **opt_kwargs):
    vk.manual_seed(0)
    model = vk.nn.Sequential(vk.nn.Linear(4, 8), vk.nn.Tanh(), vk.nn.Linear(8, 3))
    params = list(model.parameters())
    model.to(device)
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    opt = opt_cls(model.parameters(), **opt_kwargs)
    x = vk.randn(16, 4, device=device)
    target = vk.randint(0, 3, (16,), device=device)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = vk.nn.functional.cross_entropy(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu().numpy() for p in model.parameters()], model


@pytest.mark.parametrize("opt", [(vk.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
                                 (vk.optim.Adam, {"lr": 0.01}),
                                 (vk.optim.AdamW, {"lr": 0.01, "weight_decay": 0.1})])
def test_training_on_a_second_device_matches_the_cpu_bit_for_bit(opt):
    cls, kwargs = opt
    cpu_losses, cpu_params, _ = _train("cpu", cls, **kwargs)
    dev_losses, dev_params, model = _train(HT, cls, **kwargs)
    assert all(p.device == HT and p.grad.device == HT for p in model.parameters())
    assert dev_losses == cpu_losses
    for a, b in zip(dev_params, cpu_params):
        assert np.array_equal(a, b)


def test_module_to_device_then_back_keeps_parameters_and_state():
    lin = vk.nn.Linear(3, 2, device=HT)
    assert lin.weight.device == HT and lin.bias.device == HT
    bn = vk.nn.BatchNorm1d(3).to(HT)
    assert bn.running_mean.device == HT
    bn(vk.randn(4, 3, device=HT)).sum().backward()
    w = bn.weight
    bn.cpu()
    assert bn.weight is w and w.device == vk.device("cpu") and w.grad.device == vk.device("cpu")
    assert bn.running_mean.device == vk.device("cpu")


def test_creation_on_a_second_device_matches_the_cpu():
    vk.manual_seed(3)
    a = vk.randn(5)
    vk.manual_seed(3)
    b = vk.randn(5, device=HT)
    assert b.device == HT and b.tolist() == a.tolist()
    assert vk.zeros_like(b).device == HT and vk.full_like(b, 2).device == HT
    assert vk.arange(4, device=HT).tolist() == [0, 1, 2, 3]


# ---- issue #13, item 6: the value-dependent shortcuts of three rules are taken only on the CPU ----
# There they read values on the host (free); on another device the rule takes its general form,
# which reads nothing. Both forms must give the same gradients, and torch's.

def _grads_on(device, f, *xs):
    leaves = [vk.tensor(x, dtype=vk.float64, requires_grad=True) for x in xs]
    out = f(*[leaf.to(device) for leaf in leaves])
    assert out.device == vk.device(device)
    out.sum().backward()
    return [leaf.grad.tolist() for leaf in leaves]


def _torch_grads(f, *xs):
    leaves = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    f(*leaves).sum().backward()
    return [leaf.grad.tolist() for leaf in leaves]


@pytest.mark.parametrize("f,xs", [
    (lambda x: x ** 2.0, [[1.5, -2.0, 0.0]]),
    (lambda x: x ** 0.0, [[1.5, -2.0, 0.0]]),
    (lambda x: x ** 0.5, [[1.5, 2.0, 4.0]]),
    (lambda x: x.prod(), [[1.5, -2.0, 3.0]]),
    (lambda x: x.prod(), [[1.5, 0.0, 3.0]]),
    (lambda x: x.prod(), [[0.0, 2.0, 0.0]]),
    (lambda x: x.prod(1), [[[1.5, 2.0], [0.0, 3.0]]]),
], ids=["pow2", "pow0", "pow_half", "prod", "prod_one_zero", "prod_two_zeros", "prod_dim"])
def test_value_dependent_gradient_shortcuts_agree_off_the_cpu(f, xs):
    cpu, dev = _grads_on("cpu", f, *xs), _grads_on(HT, f, *xs)
    np.testing.assert_allclose(dev, cpu, rtol=1e-14, atol=0)
    np.testing.assert_allclose(cpu, _torch_grads(f, *xs), rtol=1e-14, atol=0)


def test_max_pool2d_backward_gradient_off_the_cpu_matches_the_cpu():
    # max_pool2d_backward's rule gathers the incoming gradient at the argmax indices; off the CPU
    # it does not read them to skip the mask for windows wholly in the padding.
    vk.manual_seed(0)
    x = vk.randn(1, 2, 5, 5, dtype=vk.float64)
    w = vk.randn(1, 2, 5, 5, dtype=vk.float64)
    results = []
    for device in ("cpu", HT):
        _, idx = vk.nn.functional.max_pool2d(x.to(device), 3, stride=2, padding=1, return_indices=True)
        g = vk.ones(1, 2, 3, 3, dtype=vk.float64, device=device).requires_grad_()
        dx = vk.max_pool2d_backward(g, idx, [1, 2, 5, 5])
        (dg,) = vk.autograd.grad((dx * w.to(device)).sum(), g)
        assert dg.device == vk.device(device)
        results.append(dg.tolist())
    expected = np.take_along_axis(w.numpy().reshape(1, 2, 25), idx.cpu().numpy().reshape(1, 2, 9), 2)
    assert results[0] == results[1] == expected.reshape(1, 2, 3, 3).tolist()


def test_copy_into_a_tensor_from_another_device():
    # As torch: cpu_tensor.copy_(device_tensor) and back; the source moves first, then converts.
    dst = vk.zeros(3)
    dst.copy_(vk.tensor([1.0, 2.0, 3.0], dtype=vk.float64, device=HT))
    assert dst.device == vk.device("cpu") and dst.dtype == vk.float32 and dst.tolist() == [1, 2, 3]
    back = vk.zeros(3, device=HT)
    back.copy_(dst * 2)
    assert back.device == HT and back.tolist() == [2, 4, 6]
