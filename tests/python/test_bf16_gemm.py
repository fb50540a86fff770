"""bfloat16 matrix products (issue 19 item 3): on AVX512-BF16 / AMX hardware vkml runs them through
oneDNN (as torch does), elsewhere it widens them to float32 and sgemm. Either way each element is
the float32-accumulated product rounded once to bfloat16, so vkml and torch agree to one bfloat16
rounding; checked for matmul, addmm, a linear layer's forward and backward, and autocast, with
the generic copy (VKML_CPU_CAPABILITY=default, where the hardware path is off) alike."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import vkml as vk


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return []


def bf16_pair(*shape, seed=0):
    t = torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)
    return vk.tensor(t.float().numpy()).to(vk.bfloat16), t  # exact: bfloat16 -> float32 -> back


def as64(x):
    if isinstance(x, torch.Tensor):
        return x.detach().double().numpy()
    return x.detach().to(vk.float64).numpy()


def assert_one_rounding(got, want64, scale64):
    """Each bfloat16 element within one rounding (2^-8 relative) of the float64 product of the same
    bfloat16 inputs, plus float32 accumulation error (2^-16 of sum |a_ik b_kj|)."""
    g = as64(got)
    tol = np.abs(want64) * 2.0 ** -8 + scale64 * 2.0 ** -16
    bad = np.abs(g - want64) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} elements off, worst {np.abs(g - want64).max()}"


def test_engine_is_native_where_the_hardware_is():
    """A build with oneDNN on a CPU with AVX512-BF16 must run bfloat16 products natively (half the
    time of the widened path); the name says which engine runs them."""
    name = vk._C._bf16_gemm_name()
    assert vk.backends.mkldnn.is_available() == vk._C._has_onednn()
    capped = os.environ.get("VKML_CPU_CAPABILITY", "avx512").lower() != "avx512" or \
        os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA")
    hardware = "avx512_bf16" in cpu_flags() or "amx_bf16" in cpu_flags()
    if vk._C._has_onednn() and hardware and not capped:
        assert vk._C._has_bf16_gemm(), name
        assert "oneDNN" in name and ("AVX512-BF16" in name or "AMX" in name), name
    if not hardware:
        assert not vk._C._has_bf16_gemm(), name


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("m,n,k", [(7, 9, 11), (64, 48, 300), (40, 1100, 96), (24, 16, 4096)])
def test_matmul_matches_torch_and_float64(m, n, k, ta, tb):
    (a, ta_) = bf16_pair(k, m, seed=1) if ta else bf16_pair(m, k, seed=1)
    (b, tb_) = bf16_pair(n, k, seed=2) if tb else bf16_pair(k, n, seed=2)
    if ta:
        a, ta_ = a.t(), ta_.t()
    if tb:
        b, tb_ = b.t(), tb_.t()
    got, theirs = vk.matmul(a, b), torch.matmul(ta_, tb_)
    assert got.dtype == vk.bfloat16 and tuple(got.shape) == (m, n)
    a64, b64 = as64(a), as64(b)
    want, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
    assert_one_rounding(got, want, scale)
    assert_one_rounding(theirs, want, scale)  # the yardstick holds torch to the same bound


def test_batched_and_addmm_match_torch():
    a, ta = bf16_pair(3, 5, 33, 70, seed=3)
    b, tb = bf16_pair(3, 5, 70, 21, seed=4)
    got = vk.matmul(a, b)
    a64, b64 = as64(a), as64(b)
    assert_one_rounding(got, a64 @ b64, np.abs(a64) @ np.abs(b64))
    assert_one_rounding(torch.matmul(ta, tb), a64 @ b64, np.abs(a64) @ np.abs(b64))
    x, tx = bf16_pair(33, 70, seed=5)
    w, tw = bf16_pair(70, 21, seed=6)
    bias, tbias = bf16_pair(21, seed=7)
    got = vk.addmm(bias, x, w)
    x64, w64, c64 = as64(x), as64(w), as64(bias)
    want, scale = x64 @ w64 + c64, np.abs(x64) @ np.abs(w64) + np.abs(c64)
    assert_one_rounding(got, want, scale)
    assert_one_rounding(torch.addmm(tbias, tx, tw), want, scale)


def test_bf16_linear_forward_and_backward_follow_torch():
    torch.manual_seed(0)
    tl = torch.nn.Linear(96, 40).to(torch.bfloat16)
    vl = vk.nn.Linear(96, 40).to(vk.bfloat16)
    with vk.no_grad():
        vl.weight.copy_(vk.tensor(tl.weight.detach().float().numpy()).to(vk.bfloat16))
        vl.bias.copy_(vk.tensor(tl.bias.detach().float().numpy()).to(vk.bfloat16))
    x, tx = bf16_pair(32, 96, seed=8)
    x.requires_grad_(True)
    tx.requires_grad_(True)
    y, ty = vl(x), tl(tx)
    (y.float() ** 2).sum().backward()
    (ty.float() ** 2).sum().backward()
    for mine, theirs in ((y, ty), (x.grad, tx.grad), (vl.weight.grad, tl.weight.grad),
                         (vl.bias.grad, tl.bias.grad)):
        assert mine.dtype == vk.bfloat16
        m64, t64 = as64(mine), as64(theirs)
        # two bfloat16 roundings apart at most (each side one, of products that differ only in
        # float32 summation order)
        np.testing.assert_allclose(m64, t64, rtol=2.0 ** -7, atol=2.0 ** -7 * np.abs(t64).max())


def test_autocast_linear_runs_in_bf16():
    lin = vk.nn.Linear(64, 32)
    x = vk.randn(16, 64)
    with vk.autocast(device_type="cpu", dtype=vk.bfloat16):
        y = lin(x)
    assert y.dtype == vk.bfloat16
    want = x.numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    np.testing.assert_allclose(as64(y), want, rtol=2 ** -6, atol=2 ** -6 * np.abs(want).max())


def test_generic_copy_widens_and_agrees():
    """VKML_CPU_CAPABILITY=default turns the hardware path off (that machine has none): the widened
    product must give the same bfloat16 results to one rounding."""
    code = (
        "import vkml as vk, numpy as np, torch\n"
        "t = torch.randn(50, 70, generator=torch.Generator().manual_seed(9)).to(torch.bfloat16)\n"
        "u = torch.randn(70, 30, generator=torch.Generator().manual_seed(10)).to(torch.bfloat16)\n"
        "a = vk.tensor(t.float().numpy()).to(vk.bfloat16)\n"
        "b = vk.tensor(u.float().numpy()).to(vk.bfloat16)\n"
        "print(vk._C._has_bf16_gemm())\n"
        "np.save(__import__('sys').argv[1], vk.matmul(a, b).to(vk.float32).numpy())\n")
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"vk_bf16_{os.getpid()}.npy")
    env = dict(os.environ, VKML_CPU_CAPABILITY="default")
    r = subprocess.run([sys.executable, "-c", code, out], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
    widened = np.load(out)
    os.remove(out)
    t = torch.randn(50, 70, generator=torch.Generator().manual_seed(9)).to(torch.bfloat16)
    u = torch.randn(70, 30, generator=torch.Generator().manual_seed(10)).to(torch.bfloat16)
    a = vk.tensor(t.float().numpy()).to(vk.bfloat16)
    b = vk.tensor(u.float().numpy()).to(vk.bfloat16)
    here = as64(vk.matmul(a, b))
    a64, b64 = as64(a), as64(b)
    want, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
    for got in (here, widened.astype(np.float64)):
        tol = np.abs(want) * 2.0 ** -8 + scale * 2.0 ** -16
        assert (np.abs(got - want) <= tol).all()
    # one rounding each from float32 sums that differ only in order: at most one ulp apart
    assert (np.abs(here - widened) <= np.abs(want) * 2.0 ** -7 + scale * 2.0 ** -16).all()


@pytest.mark.parametrize("stride,pad,groups", [(1, 1, 1), (2, 1, 1), (1, 0, 2)])
def test_bf16_conv2d_forward_and_backward_follow_torch(stride, pad, groups):
    x, tx = bf16_pair(2, 8, 12, 12, seed=11)
    w, tw = bf16_pair(16, 8 // groups, 3, 3, seed=12)
    b, tb = bf16_pair(16, seed=13)
    for t in (x, w, b, tx, tw, tb):
        t.requires_grad_(True)
    y = vk.nn.functional.conv2d(x, w, b, stride=stride, padding=pad, groups=groups)
    ty = torch.nn.functional.conv2d(tx, tw, tb, stride=stride, padding=pad, groups=groups)
    assert y.dtype == vk.bfloat16
    x64, w64, b64 = (torch.from_numpy(as64(t)) for t in (x, w, b))
    want = torch.nn.functional.conv2d(x64, w64, b64, stride=stride, padding=pad, groups=groups)
    scale = torch.nn.functional.conv2d(x64.abs(), w64.abs(), b64.abs(), stride=stride, padding=pad,
                                       groups=groups)
    assert_one_rounding(y, want.numpy(), scale.numpy())
    assert_one_rounding(ty, want.numpy(), scale.numpy())
    (y.float() ** 2).sum().backward()
    (ty.float() ** 2).sum().backward()
    for mine, theirs in ((x.grad, tx.grad), (w.grad, tw.grad), (b.grad, tb.grad)):
        assert mine.dtype == vk.bfloat16
        m64, t64 = as64(mine), as64(theirs)
        np.testing.assert_allclose(m64, t64, rtol=2.0 ** -6, atol=2.0 ** -7 * np.abs(t64).max())


def test_bf16_matmul_leaves_the_callers_openmp_threads_alone():
    """Regression: oneDNN is pinned to one OpenMP thread per call, and that setting belongs to the
    calling thread's OpenMP state, which torch shares when its libgomp was loaded first; it was set
    once and never put back, so torch.get_num_threads() read 1 after a vkml bfloat16 matmul and
    torch ran single-threaded from then on (a 2-thread benchmark of torch read 1-thread times)."""
    saved = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        a = vk.randn(64, 64).to(vk.bfloat16)
        vk.matmul(a, a)
        vk.nn.functional.conv2d(vk.randn(1, 4, 8, 8).to(vk.bfloat16),
                                vk.randn(4, 4, 3, 3).to(vk.bfloat16))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(saved)
