"""torch's process-wide names (#15 porting, vkml/_torch_globals.py) against torch: layouts and
memory formats and the functions that take them, the determinism switches, interop threads,
warn-always, flush-denormal, OutOfMemoryError."""
import pickle

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import devices, to_np


@pytest.mark.parametrize("device", devices())
def test_layout_and_pin_memory_are_accepted_by_the_creation_functions(device):
    calls = [
        ("zeros", (2, 3), {}), ("ones", (4,), {}), ("full", ((2,), 1.5), {}), ("arange", (5,), {}),
        ("eye", (3,), {}), ("linspace", (0.0, 1.0, 5), {}), ("logspace", (0.0, 1.0, 4), {}),
        ("empty", (2, 2), {"memory_format": "contiguous_format"}), ("tensor", ([1.0, 2.0],), {"layout": None}),
    ]
    for name, args, extra in calls:
        kw = {"layout": "strided", **extra}
        kw = {k: v if v is None else getattr(vk, v) for k, v in kw.items()}
        tkw = {k: getattr(torch, v) for k, v in {"layout": "strided", **extra}.items() if v is not None}
        kw = {k: v for k, v in kw.items() if v is not None}
        got = getattr(vk, name)(*args, pin_memory=False, device=device, **kw)
        want = getattr(torch, name)(*args, pin_memory=False, **tkw)
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[5:] == str(want.dtype)[6:], name
        if name != "empty":
            np.testing.assert_allclose(to_np(got), to_np(want), rtol=1e-6)
        assert got.layout is vk.strided
    for name in ("rand", "randn"):
        assert tuple(getattr(vk, name)(3, layout=vk.strided).shape) == (3,)
    assert tuple(vk.randint(0, 5, (3,), layout=vk.strided).shape) == (3,)


@pytest.mark.parametrize("device", devices())
def test_memory_format_is_accepted_and_results_are_torchs_values(device):
    a = np.random.default_rng(0).uniform(-1, 1, size=(2, 3, 4, 5))
    v, t = vk.tensor(a).to(device), torch.tensor(a)
    for fmt in ("contiguous_format", "preserve_format", "channels_last"):
        for name in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"):
            got = getattr(vk, name)(v, memory_format=getattr(vk, fmt))
            assert tuple(got.shape) == (2, 3, 4, 5) and got.device == v.device
        np.testing.assert_array_equal(to_np(vk.full_like(v, 2.0, memory_format=getattr(vk, fmt))),
                                      to_np(torch.full_like(t, 2.0, memory_format=getattr(torch, fmt))))
        for method in ("contiguous", "clone"):
            np.testing.assert_array_equal(to_np(getattr(v, method)(memory_format=getattr(vk, fmt))),
                                          to_np(getattr(t, method)(memory_format=getattr(torch, fmt))))
        np.testing.assert_array_equal(to_np(vk.clone(v, memory_format=getattr(vk, fmt))), a)
    # gradients pass through as through the plain calls
    x = vk.tensor(a, requires_grad=True)
    (x.contiguous(memory_format=vk.channels_last) * 2).clone(memory_format=vk.preserve_format).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), np.full(a.shape, 2.0))


def test_is_contiguous_reads_the_strides_as_torch():
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    for make in (lambda L, t: t, lambda L, t: t.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
                 lambda L, t: t[:, :1], lambda L, t: t.reshape(2, 3, 20)):
        v, t = make(vk, vk.tensor(a)), make(torch, torch.tensor(a))
        for fmt in ("contiguous_format", "channels_last", "channels_last_3d"):
            assert v.is_contiguous(memory_format=getattr(vk, fmt)) == \
                t.is_contiguous(memory_format=getattr(torch, fmt)), fmt
        assert v.is_contiguous() == t.is_contiguous()


def test_layout_and_memory_format_objects():
    assert repr(vk.strided) == "vkml.strided" and repr(vk.channels_last) == "vkml.channels_last"
    for obj in (vk.strided, vk.contiguous_format, vk.preserve_format, vk.channels_last, vk.channels_last_3d):
        assert pickle.loads(pickle.dumps(obj)) is obj
    assert isinstance(vk.strided, vk.layout) and isinstance(vk.channels_last, vk.memory_format)
    assert vk.newaxis is None and vk.ones(3)[vk.newaxis].shape == (1, 3)
    with pytest.raises(NotImplementedError, match="zeros: layout='sparse_coo': vkml tensors are strided only"):
        vk.zeros(2, layout="sparse_coo")
    with pytest.raises(TypeError, match="memory_format"):
        vk.ones(2, 2).contiguous(memory_format="channels_last")
    with pytest.raises(TypeError):
        vk.zeros(2, memory_format=vk.channels_last)  # as torch.zeros, which takes none
    with pytest.raises(TypeError):
        vk.tensor([1.0], layout=vk.strided)  # as torch.tensor


def test_determinism_switches_as_torch():
    for L in (vk, torch):
        before = (L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled())
        try:
            seen = []
            for mode in (0, 1, 2, "default", "warn", "error"):
                L.set_deterministic_debug_mode(mode)
                seen.append((L.get_deterministic_debug_mode(), L.are_deterministic_algorithms_enabled(),
                             L.is_deterministic_algorithms_warn_only_enabled()))
            L.use_deterministic_algorithms(True, warn_only=True)
            seen.append(L.get_deterministic_debug_mode())
            with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
                L.set_deterministic_debug_mode(3)
            with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
                L.set_deterministic_debug_mode("loud")
            if L is vk:
                got = seen
            else:
                assert got == seen
        finally:
            L.use_deterministic_algorithms(before[0], warn_only=before[1])


def test_interop_threads_warn_always_flush_denormal():
    n = vk.get_num_interop_threads()
    vk.set_num_interop_threads(3)
    assert vk.get_num_interop_threads() == 3
    vk.set_num_interop_threads(n)
    with pytest.raises(RuntimeError, match="Expected positive number of threads"):
        vk.set_num_interop_threads(0)
    vk.init_num_threads()
    assert not vk.is_warn_always_enabled()
    vk.set_warn_always(True)
    assert vk.is_warn_always_enabled()
    vk.set_warn_always(False)
    assert vk.set_flush_denormal(True) is False  # not switched: vkml reports it, as torch where it cannot
    assert vk.is_vulkan_available() == vk.vulkan.is_available()
    assert (vk.has_lapack, vk.has_mkl, vk.has_openmp, vk.has_spectral) == (False, False, False, False)


def test_out_of_memory_error_catches_vkmls_allocation_failure():
    with pytest.raises(vk.OutOfMemoryError):
        vk.empty(10**15)
    with pytest.raises(vk.cuda.OutOfMemoryError):
        vk.zeros(10**15)
