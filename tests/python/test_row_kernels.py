"""The row kernels' float sums (src/vkml/backend/cpu/simd.h row_sums): layer_norm forward and backward,
the softmax family and batch_norm's channels (where their segments are whole 16-lane vectors) take
their sums in float blocks added into double, layer_norm's about the mean of a row's first 8
elements (its variance from the same pass when that shift is near the mean) and batch_norm's about
x - x[0]; rows those sums cannot take (overflow, underflow, inf, NaN) fall back to sums in double.
Column sums (sum over a leading dim) add eight rows in float, then into double.
Each case is checked against float64 arithmetic on the same float32 inputs, at row lengths on both
sides of the 16-lane vectors and 256-element blocks, and the AVX2 and AVX-512 kernel copies must
give the same bits."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import vkml as vk

F = vk.nn.functional
LENGTHS = (1, 3, 16, 17, 33, 255, 256, 257, 300, 1024)


def ln_reference(x, w, b, g, eps):
    """layer_norm's output and gradients (x, w, b) in float64, each with the magnitude of the terms
    it is made of (what its float rounding is relative to)."""
    x, w, b, g = (a.astype(np.float64) for a in (x, w, b, g))
    mu = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)
    xhat = (x - mu) * rstd
    u = g * w
    mean_u, mean_ux = u.mean(-1, keepdims=True), (u * xhat).mean(-1, keepdims=True)
    dx = rstd * (u - mean_u - xhat * mean_ux)
    dx_terms = rstd * (abs(u) + abs(mean_u) + abs(xhat * mean_ux))
    return ((xhat * w + b, abs(xhat * w) + abs(b)), (dx, dx_terms),
            ((g * xhat).sum(0), abs(g * xhat).sum(0)), (g.sum(0), abs(g).sum(0)))


def ln_vkml(x, w, b, g, eps):
    xt, wt, bt = (vk.tensor(a, requires_grad=True) for a in (x, w, b))
    y = F.layer_norm(xt, (x.shape[-1],), wt, bt, eps)
    y.backward(vk.tensor(g))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()


def assert_close_rows(got, ref, rtol):
    """Each row of got within rtol of the magnitude of the terms its reference value is made of
    (ref = (value, terms)), the scale float rounding errors are relative to."""
    value, terms = (np.atleast_2d(a) for a in ref)
    got2 = np.atleast_2d(got).astype(np.float64)
    scale = np.maximum(terms.max(-1, keepdims=True), np.finfo(np.float64).tiny)
    err = np.abs(got2 - value) / scale
    assert np.isfinite(got2).all() and err.max() <= rtol, f"worst error {err.max():.3g} of the row scale"


def check_layer_norm(x, eps=1e-5, rtol=2e-6, seed=0):
    rng = np.random.default_rng(seed)
    n = x.shape[-1]
    w = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    for got, ref in zip(ln_vkml(x, w, b, g, eps), ln_reference(x, w, b, g, eps)):
        assert_close_rows(got, ref, rtol)


@pytest.mark.parametrize("n", LENGTHS)
def test_layer_norm_float_sums_match_float64(n):
    x = np.random.default_rng(n).standard_normal((5, n)).astype(np.float32) * 2 + 1
    check_layer_norm(x)


@pytest.mark.parametrize("n", [40, 100, 512, 513])
def test_layer_norm_weight_gradient_blocks_match_float64(n):
    """70 rows: blocks of 32 rows (their float sums added into double); rows of up to 512 floats
    take strips of 32 columns held in registers (100: three and a partial one), 513 the running
    sums per column."""
    x = np.random.default_rng(n + 1).standard_normal((70, n)).astype(np.float32)
    check_layer_norm(x, rtol=2e-6)


def test_layer_norm_off_centre_rows_keep_their_spread():
    """Rows 65536 + d with d on a 2^-7 grid in [-1, 1] and mean exactly 65536: x - x[0] is exact,
    so the shifted float sums find the mean and variance to float precision. Float sums of x itself
    (partial sums near 2^20, spaced 2^-3) would miss the mean by a good part of the spread."""
    rng = np.random.default_rng(1)
    half = rng.integers(-128, 129, (4, 512)) / 128.0
    d = np.concatenate([half, -half], axis=1)  # mean of d exactly 0
    x = (65536.0 + rng.permuted(d, axis=1)).astype(np.float32)
    assert (x.astype(np.float64).mean(1) == 65536.0).all()
    check_layer_norm(x, rtol=2e-6)


def test_layer_norm_outlier_first_element():
    """The shift is the mean of the first 8 elements: a first element 1e4 standard deviations out
    costs the float sums nothing they cannot carry (a value lies at most sqrt(n) standard
    deviations from its row's mean, and so does the shift)."""
    x = np.random.default_rng(2).standard_normal((3, 700)).astype(np.float32)
    x[:, 0] = 1e4
    check_layer_norm(x, rtol=2e-6)


@pytest.mark.parametrize("n", [300, 65536])
def test_layer_norm_shift_far_from_the_mean_takes_a_second_pass(n):
    """The sums are taken about the mean of the first 8 elements, and the variance from their
    squares in the same pass only where that shift lies within a standard deviation of the mean.
    Here the first 8 lie 1000 out, about 90 standard deviations of the row at 65536 (the most a
    shift can lie out is sqrt(n / 8)): one pass would cancel the mean square (1e6) down to the
    variance (~120)."""
    x = np.random.default_rng(5).standard_normal((3, n)).astype(np.float32)
    x[:, :8] += 1000
    check_layer_norm(x, rtol=2e-6)


def test_layer_norm_huge_rows_take_the_double_path():
    """|x| ~ 1e20: squares overflow float (3.4e38) -- the row falls back to double sums."""
    x = (np.random.default_rng(3).standard_normal((3, 257)) * 1e20).astype(np.float32)
    check_layer_norm(x, rtol=2e-6)


def test_layer_norm_tiny_rows_with_zero_eps_take_the_double_path():
    """|x| ~ 1e-25 and eps = 0: float squares (1e-50) underflow to 0, which would make rstd
    infinite -- the row falls back to double sums and normalises to O(1) values."""
    x = (np.random.default_rng(4).standard_normal((3, 300)) * 1e-25).astype(np.float32)
    check_layer_norm(x, eps=0.0, rtol=2e-6)


def test_layer_norm_huge_gradients_take_the_double_path():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 300)).astype(np.float32)
    w = rng.standard_normal(300).astype(np.float32)
    b = np.zeros(300, np.float32)
    g = (rng.standard_normal((2, 300)) * 3e37).astype(np.float32)  # u * u overflows float
    got = ln_vkml(x, w, b, g, 1e-5)
    ref = ln_reference(x, w, b, g, 1e-5)
    assert_close_rows(got[1], ref[1], 2e-6)


def test_layer_norm_constant_and_nonfinite_rows_as_torch():
    x = np.ones((4, 40), np.float32) * 3
    x[1, 5] = np.inf
    x[2, 7] = np.nan
    x[3] = 0.0
    w = np.linspace(-1, 1, 40).astype(np.float32)
    b = np.linspace(0, 2, 40).astype(np.float32)
    g = np.random.default_rng(6).standard_normal((4, 40)).astype(np.float32)
    got = ln_vkml(x, w, b, g, 1e-5)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y = torch.nn.functional.layer_norm(xt, (40,), wt, bt, 1e-5)
    y.backward(torch.tensor(g))
    want = (y.detach().numpy(), xt.grad.numpy())
    for a, t in zip(got[:2], want):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(t))
        np.testing.assert_allclose(a[[0, 3]], t[[0, 3]], rtol=1e-5, atol=1e-5)


def softmax_reference(x, g, log):
    """softmax or log_softmax and its input gradient in float64, as (value, terms) pairs."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    z = x - x.max(-1, keepdims=True)
    ls = np.log(np.exp(z).sum(-1, keepdims=True))
    if log:
        y = z - ls
        p_sum = np.exp(y) * g.sum(-1, keepdims=True)
        return (y, abs(z) + abs(ls)), (g - p_sum, abs(g) + abs(p_sum))
    y = np.exp(z - ls)
    s = (g * y).sum(-1, keepdims=True)
    return (y, y), (y * (g - s), y * (abs(g) + abs(s)))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("n", LENGTHS)
def test_softmax_float_sums_match_float64(n, log):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((4, n)) * 4).astype(np.float32)
    g = rng.standard_normal((4, n)).astype(np.float32)
    xt = vk.tensor(x, requires_grad=True)
    y = (F.log_softmax if log else F.softmax)(xt, -1)
    y.backward(vk.tensor(g))
    ref_y, ref_dx = softmax_reference(x, g, log)
    assert_close_rows(y.detach().numpy(), ref_y, 1e-6)
    assert_close_rows(xt.grad.numpy(), ref_dx, 1e-6)


def test_softmax_backward_huge_gradients():
    """Gradients of 3e37: the sum of g * y stays below the largest |g| (y sums to 1), so float sums
    cannot overflow here; the gradient is the float64 one."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 300)).astype(np.float32)
    g = (rng.standard_normal((2, 300)) * 3e37).astype(np.float32)
    xt = vk.tensor(x, requires_grad=True)
    F.softmax(xt, -1).backward(vk.tensor(g))
    assert_close_rows(xt.grad.numpy(), softmax_reference(x, g, False)[1], 1e-6)


def test_log_softmax_backward_overflowing_float_sums_take_the_double_path():
    """sum(g) over a row of +3e37 then -3e37 (256 each): a lane's float sum over a block of 256
    overflows (16 x 3e37 > 3.4e38) although the row's sum is 0; the row's sum is then taken in
    double, and the gradient is g itself, not NaN."""
    x = np.random.default_rng(8).standard_normal((1, 512)).astype(np.float32)
    g = np.concatenate([np.full(256, 3e37), np.full(256, -3e37)]).astype(np.float32)[None]
    xt = vk.tensor(x, requires_grad=True)
    F.log_softmax(xt, -1).backward(vk.tensor(g))
    assert_close_rows(xt.grad.numpy(), softmax_reference(x, g, True)[1], 1e-6)


def bn_reference(x, w, b, g, eps):
    """batch_norm (training statistics) and its gradients in float64, as (value, terms) pairs."""
    x, w, b, g = (a.astype(np.float64) for a in (x, w, b, g))
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mu = x.mean(axes, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mu) ** 2).mean(axes, keepdims=True) + eps)
    xhat = (x - mu) * rstd
    wb, bb = w.reshape(shape), b.reshape(shape)
    mean_g, mean_gx = g.mean(axes, keepdims=True), (g * xhat).mean(axes, keepdims=True)
    dx = wb * rstd * (g - mean_g - xhat * mean_gx)
    dx_terms = abs(wb) * rstd * (abs(g) + abs(mean_g) + abs(xhat * mean_gx))
    per_channel = lambda a: np.moveaxis(a, 1, 0).reshape(a.shape[1], -1)  # noqa: E731
    return ((per_channel(xhat * wb + bb), per_channel(abs(xhat * wb) + abs(bb))),
            (per_channel(dx), per_channel(dx_terms)),
            ((g * xhat).sum(axes), abs(g * xhat).sum(axes)), (g.sum(axes), abs(g).sum(axes)))


def check_batch_norm(x, eps=1e-5, rtol=2e-6, outputs=(0, 1, 2, 3)):
    """outputs: which of y, dx, dweight, dbias to check."""
    rng = np.random.default_rng(9)
    C = x.shape[1]
    w = rng.standard_normal(C).astype(np.float32)
    b = rng.standard_normal(C).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    xt, wt, bt = (vk.tensor(a, requires_grad=True) for a in (x, w, b))
    y = F.batch_norm(xt, None, None, wt, bt, training=True, eps=eps)
    y.backward(vk.tensor(g))
    per_channel = lambda a: np.moveaxis(a, 1, 0).reshape(a.shape[1], -1)  # noqa: E731
    got = (per_channel(y.detach().numpy()), per_channel(xt.grad.numpy()), wt.grad.numpy()[None],
           bt.grad.numpy()[None])
    ref = bn_reference(x, w, b, g, eps)
    ref = ref[:2] + tuple((v[None], t[None]) for v, t in ref[2:])
    for i in outputs:
        assert_close_rows(got[i], ref[i], rtol)


@pytest.mark.parametrize("shape", [(16, 3, 4, 4), (8, 5, 8, 8), (3, 2, 2, 2), (4, 3, 7, 7), (6, 4, 32)])
def test_batch_norm_float_sums_match_float64(shape):
    """4 x 4 and 8 x 8 planes (whole 16-lane vectors) take float sums, 2 x 2, 7 x 7 and 32 the
    double path; each against float64."""
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 2 + 1).astype(np.float32)
    check_batch_norm(x)


def test_batch_norm_off_centre_channels_keep_their_spread():
    """Channels of 65536 + d, d on a 2^-7 grid with mean exactly 0: the shifted float sums find the
    mean and variance to float precision (sums of x itself would not)."""
    rng = np.random.default_rng(10)
    half = rng.integers(-128, 129, (3, 64)) / 128.0
    d = rng.permuted(np.concatenate([half, -half], axis=1), axis=1)  # (C, N * 16), mean 0
    x = (65536.0 + d).reshape(3, 8, 16).transpose(1, 0, 2).reshape(8, 3, 4, 4).astype(np.float32)
    # the output and input gradient are y = x * scale + shift and dx = k g + kx x + k0 (torch's
    # forms), which round relative to x's magnitude whatever the sums: the weight and bias
    # gradients and the statistics themselves (momentum 1: the batch's mean and unbiased variance)
    check_batch_norm(x, outputs=(2, 3))
    mean, var = vk.zeros(3), vk.ones(3)
    F.batch_norm(vk.tensor(x), mean, var, training=True, momentum=1.0)
    x64 = x.astype(np.float64)
    np.testing.assert_array_equal(mean.numpy(), np.full(3, 65536.0, np.float32))
    np.testing.assert_allclose(var.numpy(), x64.var((0, 2, 3), ddof=1), rtol=1e-6)


def test_batch_norm_huge_and_tiny_channels_take_the_double_path():
    """Channels of 1e20 (float squares overflow) and 1e-25 with eps = 0 (they underflow) take the
    double path, and every output matches float64."""
    rng = np.random.default_rng(11)
    check_batch_norm((rng.standard_normal((4, 2, 4, 4)) * 1e20).astype(np.float32))
    check_batch_norm((rng.standard_normal((4, 2, 4, 4)) * 1e-25).astype(np.float32), eps=0.0)


def test_batch_norm_input_gradient_at_extreme_scales():
    """The input gradient was k g + kx x + k0 with kx = -k rstd mean(g xhat), which scales as
    1 / var: at 1e20 it rounded to a subnormal (errors of 2e-5 of the gradient's scale), at 1e-25
    with eps = 0 it overflowed to inf. Now k (g - mean(g) - xhat mean(g xhat)), for 4 x 4 planes
    (whose float sums fall back to double at these scales) and 2 x 2 ones (double throughout)."""
    rng = np.random.default_rng(12)
    for shape in ((4, 2, 4, 4), (8, 2, 2, 2)):
        check_batch_norm((rng.standard_normal(shape) * 1e20).astype(np.float32), outputs=(1,))
        check_batch_norm((rng.standard_normal(shape) * 1e-25).astype(np.float32), eps=0.0,
                         outputs=(1,))


# Column sums (reduction.cpp reduce_cols: a linear layer's bias gradient, sum over dim 0): eight rows
# added in float, pairwise, then into double accumulators; the rest row by row. Row counts on both
# sides of 8, column counts on both sides of the 256-column blocks, an offset column mean and a
# long reduction (65536 rows about 1e4, where a float running sum is off by 3e-4 of the bound's
# scale).
@pytest.mark.parametrize("shape,dims,offset", [
    ((1, 5), 0, 3.0), ((7, 300), 0, 3.0), ((8, 300), 0, 3.0), ((9, 257), 0, 3.0),
    ((37, 513), 0, -2.0), ((2048, 384), 0, 0.5), ((3, 64, 40), (0, 1), 3.0), ((100, 3, 20), 0, 3.0),
    ((65536, 40), 0, 1e4)])
def test_column_sums_in_float_blocks_match_float64(shape, dims, offset):
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32) + np.float32(offset)
    want = x.astype(np.float64).sum(dims)
    terms = np.abs(x).astype(np.float64).sum(dims)
    got, threads_before = {}, vk.get_num_threads()
    for threads in (1, 2):
        vk.set_num_threads(threads)
        got[threads] = vk.tensor(x).sum(dims).numpy()
    vk.set_num_threads(threads_before)
    err = np.abs(got[1].astype(np.float64) - want) / terms
    assert err.max() <= 5e-7, f"worst error {err.max():.3g} of the column's sum of |x|"
    np.testing.assert_array_equal(got[1], got[2])
    mean = vk.tensor(x).mean(dims).numpy().astype(np.float64)
    assert (np.abs(mean - want / (x.size // want.size)) / (terms / (x.size // want.size))).max() <= 5e-7


SAME_BITS = r"""
import hashlib, numpy as np, vkml as vk
F = vk.nn.functional
rng = np.random.default_rng(0)
h = hashlib.sha256()
for n in (1, 5, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257, 300, 1024, 1100):
    x = vk.tensor(rng.standard_normal((7, n)).astype(np.float32) * 3 + 5, requires_grad=True)
    w = vk.tensor(rng.standard_normal(n).astype(np.float32), requires_grad=True)
    b = vk.tensor(rng.standard_normal(n).astype(np.float32), requires_grad=True)
    g = vk.tensor(rng.standard_normal((7, n)).astype(np.float32))
    y = F.layer_norm(x, (n,), w, b)
    y.backward(g)
    for t in (y, x.grad, w.grad, b.grad):
        h.update(t.detach().numpy().tobytes())
    for f in (F.softmax, F.log_softmax):
        x.grad = None
        y = f(x, 1)
        y.backward(g)
        h.update(y.detach().numpy().tobytes() + x.grad.numpy().tobytes())
for shape in ((16, 3, 4, 4), (8, 5, 8, 8), (4, 3, 7, 7)):
    x = vk.tensor(rng.standard_normal(shape).astype(np.float32) + 2, requires_grad=True)
    w = vk.tensor(rng.standard_normal(shape[1]).astype(np.float32), requires_grad=True)
    y = F.batch_norm(x, None, None, w, None, training=True)
    y.backward(vk.tensor(rng.standard_normal(shape).astype(np.float32)))
    h.update(y.detach().numpy().tobytes() + x.grad.numpy().tobytes() + w.grad.numpy().tobytes())
for shape in ((37, 513), (9, 20)):  # column sums: eight rows at a time in float
    h.update(vk.tensor(rng.standard_normal(shape).astype(np.float32)).sum(0).numpy().tobytes())
print(vk.backends.cpu.get_cpu_capability(), h.hexdigest())
"""


def test_row_kernels_same_bits_on_avx2_and_avx512():
    """row_sums gives every lane the same operations in the same order at any vector width: the
    AVX2 copy (8 floats a vector) and the AVX-512 copy (16) agree to the bit on layer_norm, the
    softmax family and batch_norm. (The generic copy may differ: it has no FMA.)"""
    runs = {}
    for cap in ("avx2", "avx512"):
        r = subprocess.run([sys.executable, "-c", SAME_BITS], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, VKML_CPU_CAPABILITY=cap))
        assert r.returncode == 0, r.stderr
        got_cap, digest = r.stdout.split()
        runs[got_cap] = digest
    if "AVX512" not in runs:
        pytest.skip("this CPU has no AVX-512: only one copy to compare")
    assert runs["AVX2"] == runs["AVX512"]
