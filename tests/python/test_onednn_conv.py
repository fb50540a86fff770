"""float32 convolutions through oneDNN's direct convolution (issue 18 item 4): on an AVX2 or AVX-512
CPU, batches of 8+ images with 3x3-and-wider kernels over 32+ channels run there (one call per
image, or per slice of channels over few positions), and so do 7x7 stems' forwards and first
layers' weight gradients from 3 channels; elsewhere im2col + GEMM. Either way the
forward and both gradients follow torch's to float32 accuracy, and a ResNet block's output is the
same at one and two threads."""

import numpy as np
import pytest
import torch

import vkml as vk


@pytest.mark.parametrize("stride,pad,dil,bias", [(1, 1, 1, True), (2, 1, 1, False), (1, 2, 2, True)])
def test_conv2d_follows_torch(stride, pad, dil, bias):
    g = torch.Generator().manual_seed(0)
    tx = torch.randn(8, 64, 12, 12, generator=g, requires_grad=True)
    tw = torch.randn(48, 64, 3, 3, generator=g, requires_grad=True)
    tb = torch.randn(48, generator=g, requires_grad=True) if bias else None
    x = vk.tensor(tx.detach().numpy()).requires_grad_()
    w = vk.tensor(tw.detach().numpy()).requires_grad_()
    b = vk.tensor(tb.detach().numpy()).requires_grad_() if bias else None
    ty = torch.nn.functional.conv2d(tx, tw, tb, stride=stride, padding=pad, dilation=dil)
    y = vk.nn.functional.conv2d(x, w, b, stride=stride, padding=pad, dilation=dil)
    scale = float(ty.detach().abs().max())
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5 * scale)
    (ty ** 2).sum().backward()
    (y ** 2).sum().backward()
    pairs = [(x.grad, tx.grad), (w.grad, tw.grad)] + ([(b.grad, tb.grad)] if bias else [])
    for mine, theirs in pairs:
        t = theirs.numpy()
        np.testing.assert_allclose(mine.numpy(), t, rtol=1e-4, atol=1e-5 * np.abs(t).max())


def test_conv2d_same_bits_at_one_and_two_threads():
    x, w = vk.randn(9, 64, 8, 8), vk.randn(64, 64, 3, 3)
    saved = vk.get_num_threads()
    try:
        vk.set_num_threads(1)
        one = vk.nn.functional.conv2d(x, w, padding=1).numpy()
        vk.set_num_threads(2)
        two = vk.nn.functional.conv2d(x, w, padding=1).numpy()
    finally:
        vk.set_num_threads(saved)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("call", [
    "vk.nn.functional.conv2d(x, w, padding=1)",
    "vk.nn.grad.conv2d_input(x.shape, w, x, padding=1)",
    "vk.nn.grad.conv2d_weight(x, w.shape, x, padding=1)"])
def test_one_thread_uses_one_core(call):
    """Regression: oneDNN fixes a primitive's thread count when it is created, and the convolution
    primitive was created outside the one-OpenMP-thread guard, so at vk.set_num_threads(1) each
    per-image call ran on every core (process CPU time 1.98x wall time on 2 cores). In a fresh
    process without torch: this suite's conftest sets torch's (shared libgomp) threads to 1, which
    hid it."""
    import os
    import subprocess
    import sys
    code = (
        "import time, vkml as vk\n"
        "vk.set_num_threads(1)\n"
        "x, w = vk.randn(16, 64, 16, 16), vk.randn(64, 64, 3, 3)\n"
        f"{call}\n"
        "wall, cpu = time.perf_counter(), time.process_time()\n"
        "while time.perf_counter() - wall < 0.5:\n"
        f"    {call}\n"
        "print((time.process_time() - cpu) / (time.perf_counter() - wall))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "VKML_NUM_THREADS")}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) < 1.3, f"CPU time / wall time {float(r.stdout):.2f} at one thread"


@pytest.mark.parametrize("shape,k,stride", [((16, 64, 16, 16, 64), 3, 1), ((8, 32, 9, 9, 48), 3, 2),
                                            ((16, 64, 4, 4, 32), 3, 1), ((6, 3, 20, 20, 16), 3, 1),
                                            ((8, 3, 20, 20, 32), 3, 1), ((8, 3, 32, 32, 32), 7, 2),
                                            ((9, 32, 16, 16, 40), 3, 2), ((8, 40, 16, 16, 200), 5, 1),
                                            ((9, 4, 32, 32, 32), 5, 1)])
def test_nn_grad_follows_torch_and_threads(shape, k, stride):
    """conv2d's gradient ops (vk.nn.grad, as torch.nn.grad) at shapes that take oneDNN's backward
    passes (the first two, on AVX2 and AVX-512; the fifth and sixth for the weight gradient: a
    first layer of 3 channels, a 7x7 stem; the last three: stride 2 onto 64 positions, 5x5
    kernels), im2col + GEMM (the third and fourth), against torch's, and the same bits at one and
    two threads. oneDNN's weight gradient runs by slices of the output channels over the whole
    batch where the batch's 8 parts would cover under 1024 positions each (the fifth to the
    eighth; 40 = 16 + 16 + 8 and 200 = 6 x 32 + 8 end in a narrower slice), and by parts, one
    partial gradient each, in the last (9 images of 1024 positions)."""
    n, c, h, w_, o = shape
    pad = k // 2
    g = torch.Generator().manual_seed(1)
    tx, tw = torch.randn(n, c, h, w_, generator=g), torch.randn(o, c, k, k, generator=g)
    tg = torch.randn(torch.nn.functional.conv2d(tx, tw, stride=stride, padding=pad).shape, generator=g)
    x, w, gy = vk.tensor(tx.numpy()), vk.tensor(tw.numpy()), vk.tensor(tg.numpy())
    want_dx = torch.nn.grad.conv2d_input(tx.shape, tw, tg, stride=stride, padding=pad).numpy()
    want_dw = torch.nn.grad.conv2d_weight(tx, tw.shape, tg, stride=stride, padding=pad).numpy()
    saved = vk.get_num_threads()
    try:
        got = {}
        for threads in (1, 2):
            vk.set_num_threads(threads)
            got[threads] = (vk.nn.grad.conv2d_input(x.shape, w, gy, stride=stride, padding=pad).numpy(),
                            vk.nn.grad.conv2d_weight(x, w.shape, gy, stride=stride, padding=pad).numpy())
    finally:
        vk.set_num_threads(saved)
    for mine, theirs in zip(got[1], (want_dx, want_dw)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-5 * np.abs(theirs).max())
    for one, two in zip(got[1], got[2]):
        np.testing.assert_array_equal(one, two)
