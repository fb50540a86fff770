"""The CPU kernels' run-time dispatch (issue 18 item 6): vk.backends.cpu.get_cpu_capability() as
torch's, and the generic copy (VKML_CPU_CAPABILITY=default), which a machine without AVX2 runs,
computing what torch computes on the same machine. tests/cpp/test_cpu_capability.cpp checks the
detection and the registration; make test runs the C++ suite under the generic copy and a subset
under qemu as a Haswell and a Nehalem."""

import os
import platform
import subprocess
import sys

import numpy as np
import pytest
import torch

import vkml as vk

NAMES = ("DEFAULT", "AVX2", "AVX512")


def run_with_capability(value, code):
    env = dict(os.environ, VKML_CPU_CAPABILITY=value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)


def test_capability_is_torchs_on_this_machine():
    got = vk.backends.cpu.get_cpu_capability()
    assert got in NAMES
    if platform.machine() not in ("x86_64", "AMD64"):
        assert got == "DEFAULT"
        return
    asked = os.environ.get("VKML_CPU_CAPABILITY")
    if asked:  # a run that picked a narrower copy on purpose
        assert NAMES.index(got) <= NAMES.index(asked.upper())
        return
    if os.environ.get("ATEN_CPU_CAPABILITY"):  # torch told to pick a narrower one
        return
    theirs = torch.backends.cpu.get_cpu_capability()
    if vk._C._has_cpu_dispatch():
        # torch picks by the same levels (AVX2 with FMA; AVX-512 F/BW/VL/DQ).
        assert got == theirs
    else:  # one copy (the sanitizer builds: x86-64), which this machine must run
        assert NAMES.index(got) <= NAMES.index(theirs)


GENERIC_COPY_VS_TORCH = r"""
import numpy as np, torch, vkml as vk
assert vk.backends.cpu.get_cpu_capability() == "DEFAULT", vk.backends.cpu.get_cpu_capability()
g = np.random.default_rng(0)
x = g.standard_normal((67, 129)).astype(np.float32)
w = g.standard_normal((129, 33)).astype(np.float32)
img = g.standard_normal((2, 3, 11, 11)).astype(np.float32)
ker = g.standard_normal((4, 3, 3, 3)).astype(np.float32)
def both(f):
    a = f(vk, vk.tensor(x), vk.tensor(w), vk.tensor(img), vk.tensor(ker))
    b = f(torch, torch.tensor(x), torch.tensor(w), torch.tensor(img), torch.tensor(ker))
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-5, atol=2e-5)
both(lambda t, x, w, i, k: t.exp(x) * t.tanh(x) + t.sigmoid(x) - t.log1p(x.abs()))
both(lambda t, x, w, i, k: t.nn.functional.gelu(x) + t.nn.functional.gelu(x, approximate="tanh"))
both(lambda t, x, w, i, k: t.erf(x) + t.sqrt(x.abs()) / (1 + x * x))
both(lambda t, x, w, i, k: t.softmax(x, 1) + t.log_softmax(x, 0))
both(lambda t, x, w, i, k: t.nn.functional.layer_norm(x, (129,)))
both(lambda t, x, w, i, k: t.stack([x.sum(1), x.amax(1), x.mean(1), x.var(1), x.argmax(1).float()]))
both(lambda t, x, w, i, k: x.cumsum(1) / 100)
both(lambda t, x, w, i, k: x @ w)
both(lambda t, x, w, i, k: t.nn.functional.conv2d(i, k, padding=1).relu())
both(lambda t, x, w, i, k: t.nn.functional.max_pool2d(i, 2) + t.nn.functional.avg_pool2d(i, 2))
both(lambda t, x, w, i, k: t.where(x > 0, x.floor(), x.round()).clamp(-1, 1) ** 2)
# backward and an optimizer step (the optimizer kernels are dispatched too)
def step(t):
    p = t.tensor(w, requires_grad=True)
    opt = t.optim.Adam([p], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = t.nn.functional.cross_entropy(t.tensor(x) @ p, t.arange(67) % 33)
        loss.backward()
        opt.step()
    return p.detach()
np.testing.assert_allclose(step(vk).numpy(), step(torch).numpy(), rtol=1e-4, atol=1e-5)
print("ok")
"""


def test_generic_copy_computes_what_torch_computes():
    r = run_with_capability("default", GENERIC_COPY_VS_TORCH)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def capability_under(value):
    r = run_with_capability(value, "import vkml as vk; print(vk.backends.cpu.get_cpu_capability())")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip(), r.stderr


def test_an_unknown_capability_name_warns_and_keeps_the_best():
    got, err = capability_under("sse9")
    assert "VKML_CPU_CAPABILITY=sse9 is none of default, avx2, avx512" in err
    assert got == capability_under("")[0] and got in NAMES  # empty: the machine's best


@pytest.mark.parametrize("asked", ["default", "avx2", "AVX512"])
def test_a_name_picks_that_copy_capped_at_the_machines(asked):
    best = capability_under("")[0]
    expected = NAMES[min(NAMES.index(asked.upper()), NAMES.index(best))]
    assert capability_under(asked)[0] == expected


RANDOM_DRAWS = r"""
import hashlib, sys, numpy as np, vkml as vk
h = hashlib.sha256()
g = vk.Generator().manual_seed(2026)
normal64 = []
for dtype in (vk.float32, vk.float64):
    for n in (1, 63, 64, 65, 1001, 4099):
        h.update(vk.rand(n, dtype=dtype, generator=g).numpy().tobytes())
        z = vk.randn(n, dtype=dtype, generator=g).numpy()
        if dtype == vk.float32:
            h.update(z.tobytes())
        else:
            normal64.append(z)
h.update(vk.randint(-7, 1000003, (5000,), generator=g).numpy().tobytes())
h.update(vk.empty(3000).bernoulli_(0.3, generator=g).numpy().tobytes())
np.save(sys.argv[1], np.concatenate(normal64))
print(vk.backends.cpu.get_cpu_capability(), h.hexdigest())
"""


@pytest.mark.parametrize("asked", ["default", "avx2"])
def test_random_numbers_same_in_every_kernel_copy_regression(asked, tmp_path):
    # Philox's rounds are written with each instruction set's 32 x 32 -> 64 multiplies (AVX-512,
    # AVX2) and as a portable loop (the generic copy): the same words from each, so the same rand,
    # randint, bernoulli and float32 randn. float64 randn's Box-Muller polynomials round with FMA
    # where the copy has it: within an ulp or two of each other.
    def draws(value):
        r = subprocess.run([sys.executable, "-c", RANDOM_DRAWS, str(tmp_path / f"{value}.npy")],
                           env=dict(os.environ, VKML_CPU_CAPABILITY=value), capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        name, digest = r.stdout.split()
        return name, digest, np.load(tmp_path / f"{value}.npy")
    native_name, native_hash, native64 = draws("")
    other_name, other_hash, other64 = draws(asked)
    assert other_name == NAMES[min(NAMES.index(asked.upper()), NAMES.index(native_name))]
    assert other_hash == native_hash
    np.testing.assert_allclose(other64, native64, rtol=5e-16, atol=0)
