"""float32 products through oneDNN's sgemm (issue 18 item 3): by shape by default where oneDNN runs
AVX2 or wider (backend/cpu/onednn.cpp: use_onednn_sgemm), for every product with
VKML_SGEMM=onednn, never with VKML_SGEMM=openblas. Each in a fresh process, since the choice is
made once per process: products of every operand layout the kernels pass (transposed, strided,
batched, broadcast, the convolutions' and the long-K slices, with a bias of each layout; attention's
small per-head products) against float64, and the same bits at one and two threads."""

import os
import subprocess
import sys

import pytest

CHILD = r"""
import os, numpy as np, vkml as vk
has_avx2 = "avx2" in open("/proc/cpuinfo").read()
asked = os.environ.get("VKML_SGEMM", "")
want = "blas" if asked == "openblas" or not (vk._C._has_onednn() and has_avx2) else \
    "onednn" if asked == "onednn" else "by shape"
assert vk._C._sgemm_choice() == want, (vk._C._sgemm_choice(), want)
r = np.random.default_rng(0)
def f32(*s):
    return r.standard_normal(s).astype(np.float32)
cases = [
    (lambda a, b: a @ b, (f32(64, 300), f32(300, 130))),                     # plain
    (lambda a, b: a @ b.t(), (f32(64, 9216), f32(128, 9216))),               # B^T, long K (slices)
    (lambda a, b: a.t() @ b, (f32(200, 48), f32(200, 72))),                  # A^T
    (lambda a, b: a[:, ::2] @ b, (f32(33, 80), f32(40, 17))),                # strided A (packed)
    (lambda a, b: a @ b, (f32(3, 16, 128), f32(3, 128, 512))),               # batched
    (lambda a, b: a @ b, (f32(5, 16, 64), f32(64, 96))),                     # broadcast B
    (lambda x, w: vk.nn.functional.conv2d(x, w, padding=1), (f32(4, 6, 9, 9), f32(8, 6, 3, 3))),
]
for fn, (a, b) in cases:
    want = fn(vk.tensor(a.astype(np.float64)), vk.tensor(b.astype(np.float64))).numpy()
    got = {}
    for threads in (1, 2):
        vk.set_num_threads(threads)
        got[threads] = fn(vk.tensor(a), vk.tensor(b)).numpy()
    np.testing.assert_allclose(got[1], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    np.testing.assert_array_equal(got[1], got[2])
# the bias, added to a float or double C after its product (linalg.cpp product_into): row tiles
# (M >= 1024), long-K slices, a 2-D bias, a strided one; float64 products and float32 ones against
# NumPy in float64
F = vk.nn.functional
linear = (lambda x, w, b: F.linear(x, w, b), lambda x, w, b: x @ w.T + b)
bias_cases = [
    (*linear, (f32(1100, 40), f32(96, 40), f32(96))),
    (*linear, (f32(64, 9216), f32(128, 9216), f32(128))),
    (lambda x, w, b: vk.addmm(b, x, w), lambda x, w, b: b + x @ w, (f32(70, 50), f32(50, 30), f32(70, 30))),
    (lambda x, w, b: vk.addmm(b[::2], x, w), lambda x, w, b: b[::2] + x @ w,
     (f32(70, 50), f32(50, 30), f32(60))),
    (lambda x, w, b: F.linear(x, w, b[1::3]), lambda x, w, b: x @ w.T + b[1::3],
     (f32(300, 20), f32(7, 20), f32(21))),
]
for fn, ref, arrays in bias_cases:
    want = ref(*(a.astype(np.float64) for a in arrays))
    np.testing.assert_allclose(fn(*(vk.tensor(a.astype(np.float64)) for a in arrays)).numpy(), want,
                               rtol=1e-12, atol=1e-12 * np.abs(want).max())
    got = {}
    for threads in (1, 2):
        vk.set_num_threads(threads)
        got[threads] = fn(*(vk.tensor(a) for a in arrays)).numpy()
    np.testing.assert_allclose(got[1], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    np.testing.assert_array_equal(got[1], got[2])
# attention's per-head products (64 x 64 x 32 and 64 x 32 x 64, 2^17 multiply-adds each: oneDNN by
# shape from 2^15 on AVX2) on q, k, v strided out of one qkv tensor, forward and backward
def attention(qkv, gy):
    q, k, v = qkv.reshape(2, 64, 3, 2, 32).permute(2, 0, 3, 1, 4)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    (y * gy).sum().backward()
    return np.concatenate([y.detach().numpy().ravel(), qkv.grad.numpy().ravel()])
qkv, gy = f32(2, 64, 192), f32(2, 2, 64, 32)
want = attention(vk.tensor(qkv.astype(np.float64)).requires_grad_(), vk.tensor(gy.astype(np.float64)))
got = {}
for threads in (1, 2):
    vk.set_num_threads(threads)
    got[threads] = attention(vk.tensor(qkv).requires_grad_(), vk.tensor(gy))
np.testing.assert_allclose(got[1], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
np.testing.assert_array_equal(got[1], got[2])
x, w = vk.tensor(f32(8, 64)).requires_grad_(), vk.tensor(f32(32, 64)).requires_grad_()
(x @ w.t()).square().sum().backward()
gx = 2 * (x.detach().numpy() @ w.detach().numpy().T) @ w.detach().numpy()
np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-4, atol=1e-4 * np.abs(gx).max())
print("ok")
"""


@pytest.mark.parametrize("choice", ["onednn", "openblas", None])
def test_sgemm_choices_match_float64_and_threads(choice):
    env = {k: v for k, v in os.environ.items() if k != "VKML_SGEMM"}
    if choice:
        env["VKML_SGEMM"] = choice
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


ROUTES = r"""
import sys, vkml as vk
rule = sys.argv[1]  # "avx2", "avx512", or "blas": no oneDNN sgemm in this build or on this CPU
assert vk._C._sgemm_choice() == ("blas" if rule == "blas" else "by shape"), vk._C._sgemm_choice()
route = lambda *p: "onednn" if vk._C._sgemm_by_onednn(*p) else "blas"
want = {  # (ta, tb, M, N, K): AVX2's route, AVX-512's
    (True, False, 2048, 128, 128): ("blas", "onednn"),  # a weight gradient g^T x
    (True, False, 384, 128, 2048): ("blas", "onednn"),
    (True, False, 192, 64, 768): ("onednn", "blas"),    # narrow C, small A
    (False, False, 2048, 512, 128): ("blas", "onednn"),  # B untransposed, 512 wide
    (False, True, 2048, 512, 128): ("onednn", "onednn"),
    (False, False, 768, 64, 256): ("onednn", "blas"),
    (False, True, 16, 16, 16): ("blas", "blas"),        # a few microseconds
}
got = {p: route(*p) for p in want}
expect = {p: "blas" if rule == "blas" else w[0 if rule == "avx2" else 1] for p, w in want.items()}
assert got == expect, (rule, got)
print("ok")
"""


def test_avx2_sgemm_keeps_transposed_a_on_openblas():
    """Regression (issue 18, Zen 3): oneDNN's AVX2 sgemm runs products with A stored transposed
    (the weight gradients g^T x) at half OpenBLAS's speed, and products whose untransposed B is
    512+ columns wide 20-30% behind; the AVX-512 rule of Zen 4 sent them all to oneDNN, which cost
    the transformer step 6%. oneDNN capped to AVX2 (VKML_CPU_CAPABILITY=avx2) takes the AVX2 rule
    on any machine, an AVX-512 machine's default run the AVX-512 rule; builds without oneDNN and
    CPUs without AVX2 send every product to OpenBLAS."""
    import vkml as vk
    flags = open("/proc/cpuinfo").read()
    onednn = vk._C._has_onednn() and "avx2" in flags
    env = {k: v for k, v in os.environ.items() if k not in ("VKML_SGEMM", "VKML_CPU_CAPABILITY")}
    runs = [("avx2", {**env, "VKML_CPU_CAPABILITY": "avx2"}) if onednn else ("blas", env)]
    if onednn and "avx512f" in flags:
        runs.append(("avx512", env))
    for rule, run_env in runs:
        r = subprocess.run([sys.executable, "-c", ROUTES, rule], env=run_env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip().endswith("ok"), rule + r.stdout + r.stderr


def test_one_thread_uses_one_core():
    """oneDNN's sgemm threads with OpenMP: each call runs under vkml's one-OpenMP-thread guard, so
    vk.set_num_threads(1) keeps products on one core (as the convolutions' regression test, in a
    fresh process without torch, whose conftest setting of the shared libgomp would hide it)."""
    code = (
        "import time, vkml as vk\n"
        "assert vk._C._sgemm_choice() in ('by shape', 'blas')\n"
        "vk.set_num_threads(1)\n"
        "a, b = vk.randn(512, 512), vk.randn(512, 512)\n"
        "a @ b\n"
        "wall, cpu = time.perf_counter(), time.process_time()\n"
        "while time.perf_counter() - wall < 0.5:\n"
        "    a @ b\n"
        "print((time.process_time() - cpu) / (time.perf_counter() - wall))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "VKML_NUM_THREADS",
                                                            "VKML_SGEMM")}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) < 1.3, f"CPU time / wall time {float(r.stdout):.2f} at one thread"
