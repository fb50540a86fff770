"""VKML_WINOGRAD=0 (README): float32 3x3 stride-1 convolutions over 32+ channels run as Winograd
F(2x2, 3x3) or F(4x4, 3x3) by default (backend/cpu/winograd.h; this 16 x 16 layer's three passes
by F(4x4)) and as direct sums with the switch. Each in a fresh
process (the switch is read once per process): the forward and both gradients of a ResNet layer
against float64 either way, and the two ways' bits differ (so the switch takes effect)."""

import os
import subprocess
import sys

CHILD = r"""
import hashlib, numpy as np, vkml as vk
r = np.random.default_rng(0)
x = r.standard_normal((16, 64, 16, 16)).astype(np.float32)
w = (r.standard_normal((64, 64, 3, 3)) * 0.1).astype(np.float32)
g = r.standard_normal((16, 64, 16, 16)).astype(np.float32)
def passes(dtype):
    xt = vk.tensor(x.astype(dtype)).requires_grad_()
    wt = vk.tensor(w.astype(dtype)).requires_grad_()
    y = vk.nn.functional.conv2d(xt, wt, padding=1)
    y.backward(vk.tensor(g.astype(dtype)))
    return [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
digest = hashlib.sha256()
for got, want in zip(passes(np.float32), passes(np.float64)):
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
    digest.update(got.tobytes())
print(digest.hexdigest())
"""


def run(switch):
    env = {k: v for k, v in os.environ.items() if k != "VKML_WINOGRAD"}
    if switch is not None:
        env["VKML_WINOGRAD"] = switch
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.strip()


def test_winograd_switch_gives_the_direct_sums():
    winograd, direct = run(None), run("0")
    assert winograd != direct, "VKML_WINOGRAD=0 computed the same bits as the default"
    assert run("1") == winograd  # anything but 0 keeps Winograd
