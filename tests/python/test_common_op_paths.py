"""The faster paths of everyday ops (#18, the op sweep of 2026-12-06): floor / ceil / trunc / frac
from nearbyint, trunc as one op, float32 sums (16 double lanes, their tree in vectors: the same
bits), max / min over four vectors with a vectorised merge, argmax's early stop, index_select along
the last dim, scatter_add's loop order, interpolate by gathers, adaptive_avg_pool over even windows
as a mean, cdist by a matrix product (torch's compute_mode), arange in parallel, float32 pow; then
(the backward sweep of the same day) short-row sums, variances and max / min with their lanes in
registers, flip of the last dim by row reversal, tril / triu as one mask, mean's gradient divided
before it is expanded, silu and the smooth L1 / Huber losses as one op each way; then (2026-12-07)
topk's selection by one scan, nonzero written straight as int64 and a mask's positions unchecked
(they are in range by construction). Each checked
against torch (values, signs of zeros, NaN, gradients in float64), on contiguous and strided
inputs, at one and two threads, and on Vulkan where the op is a kernel there."""

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, devices, same_bits, to_np


def rounding_inputs(dtype):
    big = 2.0 ** (23 if dtype == np.float32 else 52)
    special = [0.0, -0.0, 0.3, -0.3, 0.5, -0.5, 0.7, -0.7, 1.0, -1.0, 1.5, -1.5, 2.5, -2.5,
               big - 0.5, -(big - 0.5), big, -big, big + 2, 3e38, -3e38, np.inf, -np.inf, np.nan,
               1e-40, -1e-40, 0.49999997, -0.49999997]
    rng = np.random.default_rng(1)
    noise = rng.standard_normal(3000) * 10.0 ** rng.integers(-3, 8, 3000)
    return np.concatenate([np.array(special), noise]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "frac", "fix"])
def test_floor_ceil_trunc_from_nearbyint_keep_libm_bits(name, dtype, threads):
    a = rounding_inputs(dtype)
    got = getattr(vk, name)(vk.tensor(a))
    same_bits(got, getattr(torch, name)(torch.from_numpy(a)), f"{name} {dtype.__name__}")
    strided = getattr(vk, name)(vk.tensor(np.stack([a, a], 1))[:, 1])  # a strided view
    same_bits(strided, got, f"{name} strided")
    for dev in devices()[1:]:
        same_bits(getattr(vk, name)(vk.tensor(a).to(dev)).cpu(), got, f"{name} on {dev}")


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_trunc_of_integers_is_identity(dtype):
    a = np.array([-7, -1, 0, 1, 9], dtype=dtype)
    for name in ("floor", "ceil", "trunc"):
        out = getattr(vk, name)(vk.tensor(a))
        assert str(out.dtype).endswith(dtype)
        np.testing.assert_array_equal(to_np(out), a)


def test_trunc_is_one_op_with_zero_gradient():
    x = vk.tensor(np.array([-2.5, -0.5, 0.5, 2.5]), requires_grad=True)
    y = vk.trunc(x)
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), np.zeros(4))


def test_div_rounding_mode_trunc_matches_torch():
    rng = np.random.default_rng(2)
    a = (rng.standard_normal(500) * 100).astype(np.float32)
    b = rng.choice([-3.0, -0.5, 0.25, 7.0], 500).astype(np.float32)
    same_bits(vk.div(vk.tensor(a), vk.tensor(b), rounding_mode="trunc"),
              torch.div(torch.from_numpy(a), torch.from_numpy(b), rounding_mode="trunc"), "div trunc")


# ---- float32 sums (a faster float-block path was measured and not taken: these guard it) ----

@pytest.mark.parametrize("n", [1, 15, 63, 64, 65, 255, 256, 257, 1000, 8191, 8193, 100003])
def test_float32_sum_is_accurate(n, threads):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 10.0 ** rng.integers(-2, 3, n)).astype(np.float32)
    exact = np.sum(a.astype(np.float64))
    bound = 1e-6 * np.sum(np.abs(a.astype(np.float64))) + 1e-30
    got = float(vk.tensor(a).sum().item())
    assert abs(got - exact) <= bound, (n, got, exact)
    # rows and the mean take the same path
    rows = np.stack([a, -a, 2 * a])
    exact_rows = rows.astype(np.float64).sum(1)
    np.testing.assert_allclose(to_np(vk.tensor(rows).sum(1)), exact_rows, rtol=0, atol=3 * bound)
    np.testing.assert_allclose(to_np(vk.tensor(rows).mean(1)), exact_rows / n, rtol=0, atol=3 * bound / n)


def test_float32_sum_keeps_cancelling_large_values(threads):
    # 256 times 1e38 would overflow a float partial sum; sums in double give 0 (torch's float
    # sum says inf).
    a = np.concatenate([np.full(256, 1e38), np.full(256, -1e38)]).astype(np.float32)
    assert float(vk.tensor(a).sum().item()) == 0.0
    assert to_np(vk.tensor(np.stack([a, a])).sum(1)).tolist() == [0.0, 0.0]
    with_inf = a.copy()
    with_inf[3] = np.inf
    assert float(vk.tensor(with_inf).sum().item()) == np.inf
    with_nan = np.ones(1000, np.float32)
    with_nan[700] = np.nan
    assert np.isnan(float(vk.tensor(with_nan).sum().item()))
    over = np.full(1000, 3e38, np.float32)  # a sum beyond float32 is inf either way
    assert float(vk.tensor(over).sum().item()) == np.inf


def test_float32_sum_same_bits_at_any_thread_count():
    a = np.random.default_rng(5).standard_normal((37, 70001)).astype(np.float32)
    vk.set_num_threads(1)
    one = to_np(vk.tensor(a).sum(1)), float(vk.tensor(a).sum().item())
    vk.set_num_threads(2)
    try:
        two = to_np(vk.tensor(a).sum(1)), float(vk.tensor(a).sum().item())
    finally:
        vk.set_num_threads(1)
    np.testing.assert_array_equal(one[0], two[0])
    assert one[1] == two[1]


# ---- max / min / argmax over rows ----

ROW_SHAPES = [(3, 1), (5, 7), (9, 16), (4, 17), (6, 63), (3, 64), (2, 65), (7, 100), (2, 1000),
              (1, 5000), (3, 9000), (300, 64)]


def extreme_input(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype in (np.int32, np.int64, np.int8):
        return rng.integers(-100, 100, shape).astype(dtype)
    a = rng.standard_normal(shape).astype(dtype)
    a[a > 2.2] = -np.inf  # -inf in some rows
    return a


@pytest.mark.parametrize("shape", ROW_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.int8])
def test_max_min_argmax_rows_four_vectors_match_torch(shape, dtype, threads):
    a = extreme_input(shape, dtype, shape[0] * 1000 + shape[1])
    if dtype in (np.float32, np.float64) and shape[1] > 3:
        a[0, shape[1] // 2] = np.nan  # NaN wins, and argmax points at it
        a[-1, :] = a[-1, 0]  # ties: the first index
    v, t = vk.tensor(a), torch.from_numpy(a)
    for name in ("amax", "amin"):
        assert_close(getattr(v, name)(1), getattr(t, name)(1), what=name)
    for name in ("argmax", "argmin"):
        np.testing.assert_array_equal(to_np(getattr(v, name)(1)), to_np(getattr(t, name)(1)), err_msg=name)
    values, idx = v.max(1)
    tvalues, tidx = t.max(1)
    assert_close(values, tvalues, what="max values")
    np.testing.assert_array_equal(to_np(idx), to_np(tidx))
    np.testing.assert_array_equal(to_np(v.argmax()), to_np(t.argmax()))
    strided = vk.tensor(np.ascontiguousarray(a.T)).t()  # the strided path
    assert_close(strided.amax(1), t.amax(1), what="strided amax")


@pytest.mark.parametrize("n", [16, 17, 47, 64, 65, 100, 130])
def test_extreme_rows_in_registers_regression(n, threads):
    # a row of a vector or more folds in registers, its tail (under a vector) padded with the
    # reduction's identity (-inf, +inf, the lowest or highest integer); the lanes take v by the
    # max/min instruction, then NaN by a select: NaN anywhere wins, the identity never shows
    rng = np.random.default_rng(n)
    a = rng.standard_normal((8, n)).astype(np.float32)
    a[0, -1] = np.nan  # in the tail
    a[1, :] = -np.inf
    a[2, :] = np.inf
    a[3, :] = np.nan
    a[4, n // 3] = np.nan
    a[5, -1] = 50.0  # the maximum in the tail
    a[6, -1] = -50.0
    for dtype in (np.float32, np.float64):
        v, t = vk.tensor(a.astype(dtype)), torch.tensor(a.astype(dtype))
        for name in ("amax", "amin"):
            assert_close(getattr(v, name)(1), getattr(t, name)(1), what=name)
            np.testing.assert_array_equal(to_np(getattr(v, "arg" + name[1:])(1)),
                                          to_np(getattr(t, "arg" + name[1:])(1)))
    for dtype in (np.int8, np.int32, np.int64):
        info = np.iinfo(dtype)
        b = rng.integers(-100, 100, (4, n)).astype(dtype)
        b[0, :] = info.min
        b[1, :] = info.max
        b[2, -1] = info.max
        b[3, -1] = info.min
        v, t = vk.tensor(b), torch.tensor(b)
        for name in ("amax", "amin"):
            np.testing.assert_array_equal(to_np(getattr(v, name)(1)), to_np(getattr(t, name)(1)), err_msg=name)


def test_argmax_stops_at_the_first_match_in_every_block():
    # rows longer than one reduction block (8192): the first maximum in a later block, and an
    # equal value earlier in a later block than the first
    a = np.zeros((2, 20000), np.float32)
    a[0, 15000] = 5
    a[0, 19000] = 5
    a[1, 3] = 7
    a[1, 9000] = 7
    np.testing.assert_array_equal(to_np(vk.tensor(a).argmax(1)), [15000, 3])
    np.testing.assert_array_equal(to_np(vk.tensor(-a).argmin(1)), [15000, 3])


# ---- index_select along the last dim ----

def test_index_select_last_dim_by_rows_regression(threads):
    # row boundaries fall inside the parallel ranges (rows of 700 outputs, ranges of 65536)
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64, np.int16, np.uint8):
        a = rng.integers(0, 100, (301, 1000)).astype(dtype)
        idx = rng.integers(0, 1000, 700)
        got = vk.tensor(a).index_select(1, vk.tensor(idx))
        np.testing.assert_array_equal(to_np(got), a[:, idx])


# ---- interpolate by gathers ----

INTERP = [
    ("nearest", None, (2, 3, 7, 9), dict(scale_factor=2)),
    ("nearest", None, (2, 3, 7, 9), dict(size=(5, 4))),
    ("nearest", None, (1, 2, 10), dict(scale_factor=1.7)),
    ("nearest-exact", None, (2, 3, 7, 9), dict(size=(11, 5))),
    ("bilinear", False, (2, 3, 7, 9), dict(scale_factor=2)),
    ("bilinear", True, (2, 3, 7, 9), dict(size=(13, 4))),
    ("bilinear", False, (1, 2, 8, 8), dict(scale_factor=0.5)),
    ("bilinear", False, (1, 2, 5, 6), dict(scale_factor=(1.5, 2.5))),
    ("linear", False, (2, 3, 11), dict(size=20)),
    ("linear", True, (2, 3, 11), dict(size=4)),
    ("trilinear", False, (1, 2, 3, 4, 5), dict(scale_factor=2)),
    ("trilinear", True, (1, 2, 3, 4, 5), dict(size=(2, 7, 3))),
]


@pytest.mark.parametrize("mode,align,shape,kw", INTERP, ids=[f"{m}-{a}-{s}-{k}" for m, a, s, k in INTERP])
def test_interpolate_by_gathers_matches_torch(mode, align, shape, kw):
    a = np.random.default_rng(len(shape)).standard_normal(shape)
    extra = {} if align is None else dict(align_corners=align)
    v = vk.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    yv = vk.nn.functional.interpolate(v, mode=mode, **kw, **extra)
    yt = torch.nn.functional.interpolate(t, mode=mode, **kw, **extra)
    assert_close(yv, yt, what="values")
    g = np.random.default_rng(9).standard_normal(tuple(yt.shape))
    yv.backward(vk.tensor(g))
    yt.backward(torch.tensor(g))
    assert_close(v.grad, t.grad, what="gradient")
    y32 = vk.nn.functional.interpolate(vk.tensor(a.astype(np.float32)), mode=mode, **kw, **extra)
    assert_close(y32, yt.detach().float(), "float32", what="float32")
    for dev in devices()[1:]:
        yd = vk.nn.functional.interpolate(vk.tensor(a.astype(np.float32)).to(dev), mode=mode, **kw, **extra)
        assert_close(yd.cpu(), y32, "float32", what=dev)


# ---- adaptive_avg_pool over even windows ----

@pytest.mark.parametrize("shape,out", [((2, 3, 8, 8), (1, 1)), ((2, 3, 8, 8), (2, 4)), ((2, 3, 8, 6), (8, 3)),
                                       ((3, 8, 6), (4, 2)), ((2, 3, 7, 9), (3, 3)), ((2, 3, 7, 9), (1, 1))],
                         ids=str)
def test_adaptive_avg_pool_even_windows_as_mean(shape, out):
    a = np.random.default_rng(4).standard_normal(shape)
    v = vk.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    yv = vk.nn.functional.adaptive_avg_pool2d(v, out)
    yt = torch.nn.functional.adaptive_avg_pool2d(t, out)
    assert_close(yv, yt, what="values")
    g = np.random.default_rng(5).standard_normal(tuple(yt.shape))
    yv.backward(vk.tensor(g))
    yt.backward(torch.tensor(g))
    assert_close(v.grad, t.grad, what="gradient")
    a1 = a.reshape(-1, shape[-1])[None]
    assert_close(vk.nn.functional.adaptive_avg_pool1d(vk.tensor(a1), out[-1]),
                 torch.nn.functional.adaptive_avg_pool1d(torch.tensor(a1), out[-1]), what="1d")
    assert tuple(vk.nn.functional.adaptive_avg_pool2d(vk.tensor(a), (0, 2)).shape) == shape[:-2] + (0, 2)


# ---- cdist by a matrix product ----

@pytest.mark.parametrize("mode", [None, "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist",
                                  "use_mm_for_euclid_dist_if_necessary"])
@pytest.mark.parametrize("rows", [(5, 6), (30, 4), (3, 40)], ids=str)
def test_cdist_compute_modes_match_torch(mode, rows):
    rng = np.random.default_rng(rows[0])
    x1 = rng.standard_normal((2, rows[0], 5))
    x2 = rng.standard_normal((2, rows[1], 5))
    x2[:, 1] = x1[:, 0]  # a pair at distance 0: gradient 0 on both paths, as torch
    kw = {} if mode is None else dict(compute_mode=mode)
    v1, v2 = vk.tensor(x1, requires_grad=True), vk.tensor(x2, requires_grad=True)
    t1, t2 = torch.tensor(x1, requires_grad=True), torch.tensor(x2, requires_grad=True)
    yv, yt = vk.cdist(v1, v2, **kw), torch.cdist(t1, t2, **kw)
    assert_close(yv, yt, what="values", dtype="float64" if mode == "donot_use_mm_for_euclid_dist" else "float32")
    g = rng.standard_normal(tuple(yt.shape))
    yv.backward(vk.tensor(g))
    yt.backward(torch.tensor(g))
    assert np.isfinite(to_np(v1.grad)).all() and np.isfinite(to_np(v2.grad)).all()
    assert_close(v1.grad, t1.grad, "float32", what="grad x1")
    assert_close(v2.grad, t2.grad, "float32", what="grad x2")


def test_cdist_product_path_keeps_nan_and_checks_mode():
    x = np.ones((30, 3))
    x[4, 1] = np.nan
    d = to_np(vk.cdist(vk.tensor(x), vk.tensor(x)))
    assert np.isnan(d[4]).all() and np.isnan(d[:, 4]).all() and (d[:4, :4] == 0).all()
    for rows in (3, 30):  # integers are refused on both paths, as torch
        with pytest.raises(RuntimeError, match="floating-point"):
            vk.cdist(vk.ones(rows, 2, dtype=vk.int64), vk.ones(rows, 2, dtype=vk.int64))
    with pytest.raises(ValueError, match="not a valid value for compute_mode"):
        vk.cdist(vk.tensor(x), vk.tensor(x), compute_mode="fast")
    assert_close(vk.cdist(vk.tensor(x), vk.tensor(x), p=1.0), torch.cdist(torch.tensor(x), torch.tensor(x), p=1.0))


# ---- arange in parallel ----

@pytest.mark.parametrize("args,dtype", [((200003,), None), ((5, 300001, 3), None),
                                        ((0.5, 70000.5, 0.25), "float32"), ((-3.0, 99999.0, 0.5), "float64"),
                                        ((-100, 200000), "int32")], ids=str)
def test_arange_in_parallel_matches_torch(args, dtype, threads):
    kw = {} if dtype is None else dict(dtype=getattr(vk, dtype))
    tkw = {} if dtype is None else dict(dtype=getattr(torch, dtype))
    np.testing.assert_array_equal(to_np(vk.arange(*args, **kw)), to_np(torch.arange(*args, **tkw)))


# ---- scatter_add along the innermost dim, and float sums' lane tree in vectors ----

@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add_loop_order_matches_torch(dim):
    # dim 1 of a contiguous (rows, 300) walks each row's lines inside (the lines are the closer
    # in memory); dim 0 walks across them. Repeated indices add in order either way.
    rng = np.random.default_rng(6)
    src = rng.standard_normal((40, 300))
    idx = rng.integers(0, 7 if dim == 0 else 50, (40, 300))
    base = rng.standard_normal((7, 300) if dim == 0 else (40, 50))
    got = vk.tensor(base).scatter_add(dim, vk.tensor(idx), vk.tensor(src))
    want = torch.tensor(base).scatter_add(dim, torch.tensor(idx), torch.tensor(src))
    assert_close(got, want)
    for t in (vk.tensor(idx[:, :7]).t().contiguous().t(),):  # a strided index
        assert_close(vk.tensor(base).scatter_add(dim, t, vk.tensor(src)),
                     torch.tensor(base).scatter_add(dim, torch.tensor(idx[:, :7]), torch.tensor(src)))
    bad = idx.copy()
    bad[3, 5] = 10_000
    with pytest.raises(IndexError):
        vk.tensor(base).scatter_add(dim, vk.tensor(bad), vk.tensor(src))


def lanes16_double(row):
    """The CPU's float sum of a row of up to 8192 elements, in double: element k into double lane
    k mod 16, each lane in order, then the fixed tree (lane j takes j + 1, then j + 2, j + 4, j + 8)."""
    lane = [0.0] * 16
    for k, v in enumerate(row.tolist()):
        lane[k % 16] += v
    for w in (1, 2, 4, 8):
        for j in range(0, 16 - w, 2 * w):
            lane[j] += lane[j + w]
    return lane[0]


def lanes16_sum(row):
    return np.float32(lanes16_double(row))


def test_float_sum_lane_tree_in_vectors_keeps_the_bits():
    # sum_lanes16 (simd.h) does merge_tree's additions in vectors: the same bits as the tree
    rng = np.random.default_rng(8)
    for n in (32, 33, 64, 100, 1000, 8192):
        a = (rng.standard_normal((6, n)) * 10.0 ** rng.integers(-4, 5, (6, n))).astype(np.float32)
        want = np.array([lanes16_sum(r) for r in a])
        np.testing.assert_array_equal(to_np(vk.tensor(a).sum(1)), want, err_msg=str(n))


@pytest.mark.parametrize("capability", ["avx2", "default"])
def test_float_sum_lane_tree_same_bits_in_every_kernel_copy(capability):
    # 16 lanes at every vector width: the AVX2 and generic (SSE2) copies sum as the machine's
    import os
    import subprocess
    import sys
    code = ("import numpy as np, vkml as vk\n"
            "a = np.random.default_rng(8).standard_normal((5, 777)).astype(np.float32)\n"
            "print(vk.tensor(a).sum(1).numpy().tobytes().hex())")
    env = dict(os.environ, VKML_CPU_CAPABILITY=capability)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    a = np.random.default_rng(8).standard_normal((5, 777)).astype(np.float32)
    assert out.stdout.strip() == to_np(vk.tensor(a).sum(1)).tobytes().hex()
    assert out.stdout.strip() == np.array([lanes16_sum(r) for r in a]).tobytes().hex()


# ---- float32 pow as e^(y log x) in double ----

def pow_ulps(got, x, y):
    ref = torch.pow(torch.from_numpy(x).double(), torch.from_numpy(y).double())
    r32 = ref.float().numpy()
    ok = np.isfinite(r32) & (np.abs(r32) >= np.finfo(np.float32).tiny)
    err = np.abs(got.astype(np.float64) - ref.numpy()) / np.spacing(np.abs(r32)).astype(np.float64)
    return float(err[ok].max()), ok


def test_float32_pow_within_half_an_ulp_and_libm_special_values(threads):
    rng = np.random.default_rng(11)
    n = 200_000
    x = np.abs(rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(np.float32)
    y = (rng.standard_normal(n) * 4).astype(np.float32)
    got = to_np(vk.pow(vk.tensor(x), vk.tensor(y)))
    inside = np.abs(y.astype(np.float64) * np.log(x.astype(np.float64))) <= 80  # the vmath path
    worst, _ = pow_ulps(got[inside], x[inside], y[inside])
    assert worst <= 0.5001, worst
    worst, _ = pow_ulps(got, x, y)  # and libm's powf beyond (glibc: within 0.82 ulp)
    assert worst <= 0.82, worst
    # what libm decides: zeros, negative bases (integer and not), infinities, NaN, 1 ** NaN,
    # x ** 0, overflow to inf, subnormal and zero results -- mixed into blocks of ordinary values
    sx = np.array([0.0, -0.0, 0.0, -2.0, -2.0, -2.0, np.inf, -np.inf, np.nan, 1.0, 5.0, 3e38, 2.0,
                   1e-30, 0.5, 2.0, 1e-45, 7.0], np.float32)
    sy = np.array([2.0, 3.0, -1.0, 3.0, 0.5, 2.0, 0.5, 3.0, 0.0, np.nan, 0.0, 2.0, 130.0,
                   1.5, 140.0, -130.0, 0.5, np.inf], np.float32)
    bx = np.tile(x[:256], 4)
    by = np.tile(y[:256], 4)
    bx[300:300 + sx.size], by[300:300 + sy.size] = sx, sy
    got = vk.pow(vk.tensor(bx), vk.tensor(by))
    same_bits(got[300:300 + sx.size], torch.pow(torch.from_numpy(sx), torch.from_numpy(sy)), "special values")
    # the block holding them keeps every other value as it is alone (no neighbour effect)
    alone = to_np(vk.pow(vk.tensor(x[:256]), vk.tensor(y[:256])))
    np.testing.assert_array_equal(to_np(got)[256:300], alone[:44])
    np.testing.assert_array_equal(to_np(got)[300 + sx.size:512], alone[44 + sx.size:])
    # strided operands and one-value operands: the same bits as the contiguous blocks
    strided = vk.pow(vk.tensor(np.stack([bx, bx], 1))[:, 0], vk.tensor(np.stack([by, by], 1))[:, 1])
    same_bits(strided, got, "strided")
    same_bits(vk.pow(vk.tensor(bx), 1.7), vk.pow(vk.tensor(bx), vk.tensor(np.full_like(bx, 1.7))), "x ** 1.7")
    same_bits(vk.exp2(vk.tensor(by)), vk.pow(vk.tensor(np.full_like(by, 2.0)), vk.tensor(by)), "exp2")
    worst, _ = pow_ulps(to_np(vk.exp2(vk.tensor(y))), np.full_like(y, 2.0), y)
    assert worst <= 0.5001, worst
    np.testing.assert_array_equal(to_np(vk.exp2(vk.tensor(np.arange(-20, 20, dtype=np.float32)))),
                                  2.0 ** np.arange(-20, 20, dtype=np.float32))  # exact powers



# ---- float sums and variances over short rows, lanes in registers ----

@pytest.mark.parametrize("n", [32, 47, 64, 100, 129])
def test_row_sums_and_vars_in_registers_regression(n, threads):
    # rows of a few vectors fold their 16 lanes in registers (simd.h row_sum16; they took 15 ns a
    # row in a call per row): the lane tree of the long path, tails included, for sums and means;
    # variances (the same fold of squared deviations) against torch
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((300, n)) * 10.0 ** rng.integers(-3, 4, (300, n))).astype(np.float32)
    x = vk.tensor(a)
    np.testing.assert_array_equal(to_np(x.sum(1)), np.array([lanes16_sum(r) for r in a]))
    np.testing.assert_array_equal(to_np(x.mean(-1)), np.array([np.float32(lanes16_double(r) / n) for r in a]))
    strided = vk.tensor(np.repeat(a, 2, axis=1))[:, ::2]  # not one run: the long path, same lanes
    np.testing.assert_array_equal(to_np(strided.sum(1)), np.array([lanes16_sum(r) for r in a]))
    d = a.astype(np.float64)
    np.testing.assert_allclose(to_np(vk.tensor(d).var(1)), to_np(torch.tensor(d).var(1)), rtol=1e-13)
    np.testing.assert_allclose(to_np(x.var(1, correction=0)), to_np(torch.tensor(a).var(1, correction=0)),
                               rtol=3e-6)


# ---- topk: a few of many by one scan ----

def stable_first(x, k, dim, largest):
    """The stable sort's first k along dim (NaN the largest; ties: the earlier element first)."""
    x = np.moveaxis(x, dim, -1)
    vals, idxs = [], []
    for row in x.reshape(-1, x.shape[-1]):
        r = row.astype(np.float64)
        nan = np.isnan(r)
        pos = np.arange(len(r))
        order = np.lexsort((pos, -r, ~nan)) if largest else np.lexsort((pos, r, nan))
        idxs.append(order[:k])
        vals.append(row[order[:k]])
    shape = x.shape[:-1] + (k,)
    return (np.moveaxis(np.array(vals).reshape(shape), -1, dim),
            np.moveaxis(np.array(idxs).reshape(shape), -1, dim))


@pytest.mark.parametrize("k", [0, 1, 5, 32, 33, 256, 300, 1024])  # scan, partial sort, radix
@pytest.mark.parametrize("largest", [True, False])
def test_topk_selects_a_few_by_one_scan_regression(k, largest, threads):
    # (#18: a partial sort took 2.5 ns an element for the top 5 of rows of 1024, torch 1.9) the
    # stable sort's first k -- ties by index, NaN the largest, -0.0 tied with 0.0 -- on random
    # rows, rows of ties, sorted rows both ways (every element enters), NaN rows, short rows and
    # strided rows (a dim that is not the last), against torch's values
    rng = np.random.default_rng(k)
    rows = [rng.standard_normal(1024), np.floor(rng.uniform(0, 6, 1024)), np.arange(1024.0),
            np.arange(1024.0)[::-1].copy(), np.full(1024, 2.5),
            np.where(rng.uniform(size=1024) < 0.05, np.nan, rng.standard_normal(1024)),
            np.where(rng.uniform(size=1024) < 0.5, 0.0, -0.0) + np.floor(rng.uniform(-1, 1, 1024))]
    for dtype in (np.float32, np.float64):
        x = np.stack(rows).astype(dtype)
        for dim, data in ((1, x), (0, np.ascontiguousarray(x.T))):
            v, i = vk.tensor(data).topk(k, dim, largest=largest)
            want_v, want_i = stable_first(data, k, dim, largest)
            np.testing.assert_array_equal(to_np(i), want_i)
            np.testing.assert_array_equal(to_np(v), want_v)
            tv, _ = torch.from_numpy(data).topk(k, dim, largest=largest)
            np.testing.assert_array_equal(to_np(v), tv.numpy())
    for n in (1, 7, 15, 16, 17, 40):  # shorter than a block, and a block and a tail
        if k <= n:
            x = np.floor(rng.uniform(0, 4, (3, n))).astype(np.float32)
            v, i = vk.tensor(x).topk(k, 1, largest=largest)
            want_v, want_i = stable_first(x, k, 1, largest)
            np.testing.assert_array_equal(to_np(i), want_i)
            np.testing.assert_array_equal(to_np(v), want_v)
    ints = rng.integers(-5, 5, (4, 300))
    for dtype in (np.int32, np.int64):
        v, i = vk.tensor(ints.astype(dtype)).topk(min(k, 300), 1, largest=largest)
        want_v, want_i = stable_first(ints, min(k, 300), 1, largest)
        np.testing.assert_array_equal(to_np(i), want_i)
        np.testing.assert_array_equal(to_np(v), want_v)


# ---- sort: rows of 64 or more by radix ----

@pytest.mark.parametrize("n", [63, 64, 65, 1000, 4099])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_rows_by_radix_is_the_stable_sort_regression(n, descending, threads):
    # (#18: std::stable_sort of (value, index) pairs took 50 ns an element over rows of 1024)
    # the stable sort's order -- ties by index, NaN the largest, -0.0 tied with 0.0 -- against
    # torch's stable sort (values and indices), on random rows, rows of few distinct values (most
    # radix passes skipped), NaN and signed zeros, the extremes of the integer types, sorted rows
    # both ways, along the last dim and along dim 0
    rng = np.random.default_rng(n)
    floats = np.stack([
        rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n),
        np.floor(rng.uniform(-3, 3, n)),
        np.where(rng.uniform(size=n) < 0.1, np.nan, rng.standard_normal(n)),
        np.where(rng.uniform(size=n) < 0.5, 0.0, -0.0),
        np.concatenate([[np.inf, -np.inf, -np.nan], rng.standard_normal(n - 3)]),
        np.arange(n, dtype=np.float64), -np.arange(n, dtype=np.float64)])
    info32, info64 = np.iinfo(np.int32), np.iinfo(np.int64)
    ints = np.stack([rng.integers(-5, 5, n), rng.integers(info32.min, info32.max, n, endpoint=True),
                     np.where(rng.uniform(size=n) < 0.5, info32.min, info32.max)])
    wide = np.stack([rng.integers(info64.min, info64.max, n, endpoint=True),
                     np.where(rng.uniform(size=n) < 0.5, info64.min, info64.max)])
    cases = [floats.astype(np.float32), floats, ints.astype(np.int32), ints.astype(np.int64), wide,
             ints.astype(np.int16) % 1000, (ints % 200).astype(np.uint8), ints % 2 == 0]
    for x in cases:
        for dim, data in ((1, x), (0, np.ascontiguousarray(x.T))):
            v, i = vk.tensor(data).sort(dim, descending=descending)
            tv, ti = torch.from_numpy(data).sort(dim=dim, descending=descending, stable=True)
            np.testing.assert_array_equal(to_np(i), ti.numpy(), err_msg=f"{data.dtype} dim {dim}")
            got = to_np(v)
            np.testing.assert_array_equal(got, tv.numpy())
            if data.dtype.kind == "f":  # the values are x's own, zeros' signs included
                np.testing.assert_array_equal(np.signbit(got), np.signbit(np.take_along_axis(data, ti.numpy(), dim)))
            np.testing.assert_array_equal(to_np(vk.tensor(data).argsort(dim, descending=descending, stable=True)),
                                          ti.numpy())


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("counts", [False, True])
def test_unique_makes_its_inverse_only_when_asked(inverse, counts):
    # (torch's default leaves the inverse out: its scatter was a quarter of unique's time) every
    # combination of the flags against torch, ints and floats with NaN (each NaN its own value)
    rng = np.random.default_rng(11)
    for x in (rng.integers(0, 50, (30, 40)), np.where(rng.uniform(size=500) < 0.05, np.nan,
                                                      np.floor(rng.uniform(-5, 5, 500)))):
        got = vk.unique(vk.tensor(x), return_inverse=inverse, return_counts=counts)
        want = torch.unique(torch.from_numpy(x), return_inverse=inverse, return_counts=counts)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        assert len(got) == len(want)
        np.testing.assert_array_equal(to_np(got[0]), want[0].numpy())
        if counts:
            np.testing.assert_array_equal(to_np(got[-1]), want[-1].numpy())
        if inverse:  # torch's order among NaNs (each its own value) is its sort's: compare the rest
            g, w, nan = to_np(got[1]), want[1].numpy(), np.isnan(x)
            np.testing.assert_array_equal(g[~nan], w[~nan])
            assert np.isnan(to_np(got[0])[g[nan]]).all() and len(set(g[nan].tolist())) == nan.sum()


# ---- nonzero and boolean-mask indexing ----

@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("shape", [(), (1,), (1000,), (33, 65), (4, 5, 6), (2, 1, 3, 4), (0,), (3, 0, 2)],
                         ids=str)
def test_nonzero_written_straight_as_int64_regression(shape, device):
    # (#18: coordinates went through a vector of doubles with a division per dim, 6 ns an element;
    # x[x > 0] of 1M floats took 9 ms, torch 6.7) random masks, all false, all true, only the first
    # or only the last true, against torch; then x[mask] and masked_select with them
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    n = int(np.prod(shape))
    masks = [rng.uniform(size=shape) < 0.4, np.zeros(shape, bool), np.ones(shape, bool)]
    for at in (0, n - 1):
        if n:
            m = np.zeros(n, bool)
            m[at] = True
            masks.append(m.reshape(shape))
    for m in masks:
        got = vk.tensor(m).to(device).nonzero()
        assert got.device.type == device and got.dtype == vk.int64
        want = torch.from_numpy(np.asarray(m)).nonzero()
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(to_np(got.cpu()), want.numpy())
        if shape:
            xv, mv = vk.tensor(x).to(device), vk.tensor(m).to(device)
            np.testing.assert_array_equal(to_np(xv[mv].cpu()), x[m])
            np.testing.assert_array_equal(to_np(vk.masked_select(xv, mv).cpu()), x[m])


# ---- flip of the last dim by row reversal ----

FLIP_DTYPES = [np.bool_, np.int8, np.int16, np.float16, np.float32, np.int64, np.float64]


@pytest.mark.parametrize("dtype", FLIP_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,dims", [((3, 1024), [1]), ((2, 3, 17), [-1]), ((5, 16), [0, 1]),
                                        ((4, 15), [1]), ((2, 3, 40), [0, 2]), ((2, 40, 3), [1]),
                                        ((64,), [0])], ids=str)
def test_flip_last_dim_reverses_rows_regression(dtype, shape, dims, threads):
    # a flip of the last dim reverses each row (it copied one element at a time: 5.9x torch's
    # time); rows under 16 elements and other dims take the strided copy
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    a = (rng.standard_normal(shape) * 50).astype(dtype)
    want = np.flip(a, dims)
    np.testing.assert_array_equal(to_np(vk.flip(vk.tensor(a), dims)), want)
    # strided and offset inputs: every other column, a transposed view
    s = np.ascontiguousarray(np.repeat(a, 2, axis=-1))
    np.testing.assert_array_equal(to_np(vk.flip(vk.tensor(s)[..., 1::2], dims)), want)
    t = vk.tensor(np.ascontiguousarray(np.swapaxes(a, 0, -1))).transpose(0, -1)
    np.testing.assert_array_equal(to_np(vk.flip(t, dims)), want)


def test_flip_gradient_matches_torch():
    a = np.random.default_rng(3).standard_normal((6, 300))
    g = np.random.default_rng(4).standard_normal((6, 300))
    x, tx = vk.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    vk.flip(x, [1]).backward(vk.tensor(g))
    torch.flip(tx, [1]).backward(torch.tensor(g))
    np.testing.assert_array_equal(to_np(x.grad), tx.grad.numpy())


# ---- tril / triu as one mask ----

@pytest.mark.parametrize("diagonal", [0, 3, -2, 40, -40, 2 ** 62, -2 ** 62, 2 ** 63 - 1, -2 ** 63])
@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 4, 6), (7, 5), (0, 3), (1, 1)], ids=str)
def test_tril_triu_mask_matches_torch(shape, diagonal):
    # col <= row + diagonal, the diagonal clamped into [-rows, cols] (no overflow at the extremes)
    a = np.random.default_rng(2).standard_normal(shape)
    for name in ("tril", "triu"):
        for arr in (a, (a > 0), (a * 10).astype(np.int32)):
            want = getattr(torch, name)(torch.tensor(arr), diagonal).numpy()
            got = to_np(getattr(vk, name)(vk.tensor(arr), diagonal))
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {arr.dtype}")


@pytest.mark.parametrize("device", devices())
def test_tril_triu_gradient_and_device(device):
    a = np.random.default_rng(5).standard_normal((3, 6, 4))
    g = np.random.default_rng(6).standard_normal((3, 6, 4))
    for name, d in (("tril", -1), ("triu", 2)):
        x, tx = vk.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
        y = getattr(vk, name)(x, d)
        y.backward(vk.tensor(g, device=device))
        getattr(torch, name)(tx, d).backward(torch.tensor(g))
        np.testing.assert_array_equal(to_np(y), getattr(torch, name)(torch.tensor(a), d).numpy())
        np.testing.assert_array_equal(to_np(x.grad), tx.grad.numpy())


# ---- mean's gradient divided before it is expanded ----

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dims", [((1000,), None), ((6, 7, 5), (0, 2)), ((6, 7, 5), (1,)), ((3, 0), (1,))],
                         ids=str)
def test_mean_gradient_divided_before_expanding(shape, dims, dtype):
    # g / N once per output, then expanded: the same bits as dividing each expanded element
    a = np.random.default_rng(9).standard_normal(shape).astype(dtype)
    x, tx = vk.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y = x.mean() if dims is None else x.mean(dims)
    ty = tx.mean() if dims is None else tx.mean(dims)
    g = np.random.default_rng(10).standard_normal(ty.shape).astype(dtype)
    y.backward(vk.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(to_np(x.grad), tx.grad.numpy())


# ---- silu, smooth_l1_loss and huber_loss, one op each way ----

def test_silu_and_regression_losses_special_values_match_torch():
    # NaN and inf pass as torch's; beta 0 is the l1 loss (gradient 0 at a zero difference)
    vals = np.array([-np.inf, -30.0, -2.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 30.0, np.inf, np.nan])
    for dtype in (np.float32, np.float64):
        a = vals.astype(dtype)
        x, tx = vk.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        vk.nn.functional.silu(x).backward(vk.ones(len(a), dtype=x.dtype))
        torch.nn.functional.silu(tx).backward(torch.ones(len(a), dtype=tx.dtype))
        assert_close(vk.nn.functional.silu(x.detach()), torch.nn.functional.silu(tx.detach()), np.dtype(dtype).name)
        assert_close(x.grad, tx.grad, np.dtype(dtype).name)
        t = np.zeros_like(a)
        t[4] = 1.0
        for name, kws in (("smooth_l1_loss", ({}, {"beta": 0.5}, {"beta": 0.0})),
                          ("huber_loss", ({}, {"delta": 0.5}))):
            for kw in kws:
                for red in ("none", "mean", "sum"):
                    x, tx = vk.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
                    y = getattr(vk.nn.functional, name)(x, vk.tensor(t), reduction=red, **kw)
                    ty = getattr(torch.nn.functional, name)(tx, torch.tensor(t), reduction=red, **kw)
                    what = f"{name} {kw} {red} {np.dtype(dtype).name}"
                    assert_close(y, ty, np.dtype(dtype).name, what=what)
                    y.sum().backward()
                    ty.sum().backward()
                    assert_close(x.grad, tx.grad, np.dtype(dtype).name, what=what + " grad")


# ---- cumsum / cumprod along a dim other than the last, by blocks of rows ----

@pytest.mark.parametrize("shape,dim", [((1024, 300), 0), ((3, 40, 700), 1), ((5, 2, 3), 0), ((600, 2), 0),
                                       ((4, 3, 300), 0), ((2, 1, 5), 1)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_cumsum_cumprod_by_blocks_of_rows_regression(shape, dim, dtype, threads):
    # neighbouring rows walk the dim together (one row at a time took 13 ms for (1024, 1024)
    # over dim 0); each row still accumulates in order, in double for floats: torch's values
    rng = np.random.default_rng(shape[0] + dim)
    a = (rng.standard_normal(shape) * 3).astype(dtype)
    if dtype in (np.float32, np.float64):
        a.flat[::37] = np.nan
    v, t = vk.tensor(a), torch.tensor(a)
    got, want = v.cumsum(dim), t.cumsum(dim)
    assert got.dtype == getattr(vk, str(want.dtype).split(".")[1])
    assert_close(got, want, "float32" if dtype == np.float32 else "float64")
    small = (a * 0.01 + 1).astype(dtype) if dtype in (np.float32, np.float64) else np.sign(a).astype(dtype)
    assert_close(vk.tensor(small).cumprod(dim), torch.tensor(small).cumprod(dim),
                 "float32" if dtype == np.float32 else "float64")
    # a strided input (copied first) and the gradient, the reverse cumsum along the same dim
    if dtype == np.float64:
        x, tx = vk.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        g = rng.standard_normal(shape)
        x.cumsum(dim).backward(vk.tensor(g))
        tx.cumsum(dim).backward(torch.tensor(g))
        assert_close(x.grad, tx.grad)
        assert_close(vk.tensor(a).transpose(0, -1).cumsum(dim), torch.tensor(a).transpose(0, -1).cumsum(dim))


def test_cumsum_integer_overflow_wraps_as_torch():
    a = np.full((3, 4), 2 ** 62, np.int64)
    a[:, 1] = -2 ** 63
    for dim in (0, 1):
        np.testing.assert_array_equal(to_np(vk.tensor(a).cumsum(dim)), torch.tensor(a).cumsum(dim).numpy())
        np.testing.assert_array_equal(to_np(vk.tensor(a).cumprod(dim)), torch.tensor(a).cumprod(dim).numpy())


# ---- lerp: torch's two-sided formula ----

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lerp_weight_one_gives_end_regression(dtype):
    # start + w (end - start) alone gave 0 for lerp(1e8, 1, 1) in float32 (end - start rounds to
    # -1e8); torch's form for |w| >= 0.5, end - (end - start) (1 - w), gives end exactly
    s = np.array([1e8, 3.0, -7.5, 0.0, 1e-30, -2.0], dtype)
    e = np.array([1.0, 1e-8, 2.25, -1e8, 5.0, -2.0], dtype)
    for w in (0.0, 1.0):
        want = e if w == 1.0 else s
        np.testing.assert_array_equal(to_np(vk.lerp(vk.tensor(s), vk.tensor(e), w)), want)
        np.testing.assert_array_equal(to_np(vk.lerp(vk.tensor(s), vk.tensor(e), vk.full((6,), w, dtype=vk.tensor(s).dtype))),
                                      want)
    name = np.dtype(dtype).name
    for w in (0.3, 0.4999, 0.5, 0.75, 0.9, -0.7, 1.7, -3.0):
        want = torch.lerp(torch.tensor(s), torch.tensor(e), w)  # torch's vector loop fuses a multiply-add
        assert_close(vk.lerp(vk.tensor(s), vk.tensor(e), w), want, name, what=str(w))
        assert_close(vk.lerp(vk.tensor(s), vk.tensor(e), vk.tensor(np.full(6, w, dtype))), want, name, what=str(w))


def test_lerp_tensor_weight_gradients_match_torch():
    rng = np.random.default_rng(12)
    s, e = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    w = rng.uniform(-1.5, 1.5, (5,))  # both sides, broadcast
    s[0, 0], e[1, 1] = np.inf, -np.inf  # (end - start) infinite: d/dw is inf, not NaN
    vs, ve, vw = (vk.tensor(a, requires_grad=True) for a in (s, e, w))
    ts, te, tw = (torch.tensor(a, requires_grad=True) for a in (s, e, w))
    g = rng.standard_normal((4, 5))
    vk.lerp(vs, ve, vw).backward(vk.tensor(g))
    torch.lerp(ts, te, tw).backward(torch.tensor(g))
    assert_close(vk.lerp(vs, ve, vw), torch.lerp(ts, te, tw))
    for a, b in ((vs, ts), (ve, te), (vw, tw)):
        assert_close(a.grad, b.grad)


# ---- lerp, addcmul, addcdiv: one op each (the pointwise family) ----

def _pointwise(m, name, a, b, c, value):
    if name == "lerp":
        return m.lerp(a, b, c)
    if name == "lerp_scalar":
        return m.lerp(a, b, value)
    return getattr(m, name)(a, b, c, value=value)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["lerp", "lerp_scalar", "addcmul", "addcdiv"])
def test_lerp_addcmul_addcdiv_one_op_regression(name, dtype, device, threads):
    """lerp took 8 passes with a tensor weight (where picked the side) and 3 with a scalar one,
    addcmul and addcdiv 3: now one op each (the grad_fn's inputs are the leaves). On the CPU the
    bits are torch's (its order, its fused multiply-add), contiguous, strided and broadcast, on both
    sides of |w| = 0.5 and at w = 0 and 1; where the multiply-add rounds twice (the generic CPU copy,
    which the sanitizer build runs, has no FMA; lavapipe's fma) within an ulp."""
    fused = vk.backends.cpu.get_cpu_capability() != "DEFAULT"
    rng = np.random.default_rng(21)
    a, b, c = (rng.standard_normal((64, 33)).astype(dtype) for _ in range(3))
    if name == "lerp":
        c = rng.uniform(-1, 2, (64, 33)).astype(dtype)
        c[0, :6] = [0.0, 1.0, 0.5, -0.5, 0.4999, 2.0]
    if name == "addcdiv":
        c[np.abs(c) < 0.1] = 0.5
    a[1, :4] = [np.inf, -np.inf, np.nan, -0.0]
    for value in ([0.3, 1.0, 0.0, -2.5] if name == "lerp_scalar" else [1, -0.37]):
        for layout in ("contiguous", "strided", "broadcast"):
            args = [a, b, c]
            if layout == "strided":
                args = [np.ascontiguousarray(x.T).T for x in args]
            if layout == "broadcast":
                args = [a, b[:1], c[:, :1]]
            vargs = [vk.tensor(x).to(device).requires_grad_() for x in args]
            got = _pointwise(vk, name, *vargs, value)
            assert got.grad_fn.name == name.split("_")[0].capitalize() + "Backward"
            if layout != "broadcast":  # (there the grad_fn's inputs are expands of the leaves)
                assert all(f.name == "AccumulateGrad" for f, _ in got.grad_fn.next_functions if f is not None)
            want = _pointwise(torch, name, *[torch.tensor(x) for x in args], value)
            if device == "cpu" and fused:
                same_bits(got.detach(), want, f"{name} {value} {layout}")
            else:
                assert_close(got.detach().cpu(), want, np.dtype(dtype).name, what=f"{name} {value} {layout}")


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("name", ["lerp", "lerp_scalar", "addcmul", "addcdiv"])
def test_lerp_addcmul_addcdiv_gradients_match_torch(name, device):
    """torch's rules (derivatives.yaml), every input, broadcast inputs summed back to their shapes."""
    rng = np.random.default_rng(22)
    a, b, c = rng.standard_normal((4, 5)), rng.standard_normal((1, 5)), rng.standard_normal((4, 1))
    if name == "addcdiv":
        c = np.abs(c) + 0.5
    g = rng.standard_normal((4, 5))
    vargs = [vk.tensor(x).to(device).requires_grad_() for x in (a, b, c)]
    targs = [torch.tensor(x, requires_grad=True) for x in (a, b, c)]
    _pointwise(vk, name, *vargs, -0.7).backward(vk.tensor(g).to(device))
    _pointwise(torch, name, *targs, -0.7).backward(torch.tensor(g))
    for v, t in zip(vargs, targs):
        if t.grad is None:
            assert v.grad is None
        else:
            assert_close(v.grad.cpu(), t.grad, "float64", what=name)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_lerp_addcmul_16bit_compute_in_float_as_torch(dtype):
    """The 16-bit floats compute in float (torch's opmath): a scalar weight is rounded to float, not
    to the 16-bit type (lerp(0, 1, 0.1) in float16 is 0.1 rounded once), the value likewise."""
    rng = np.random.default_rng(23)
    a, b, c = (rng.standard_normal(257).astype(np.float32) for _ in range(3))
    td = getattr(torch, dtype)
    ta, tb, tc = (torch.tensor(x).to(td) for x in (a, b, c))
    va, vb, vc = (vk.tensor(x).to(getattr(vk, dtype)) for x in (a, b, c))
    for got, want in ((vk.lerp(va, vb, 0.1), torch.lerp(ta, tb, 0.1)),
                      (vk.lerp(va, vb, vc), torch.lerp(ta, tb, tc)),
                      (vk.addcmul(va, vb, vc, value=0.1), torch.addcmul(ta, tb, tc, value=0.1)),
                      (vk.addcdiv(va, vb, vc, value=0.1), torch.addcdiv(ta, tb, tc, value=0.1))):
        assert got.dtype == getattr(vk, dtype)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_addcmul_types_and_errors_as_torch():
    """The result type of the three (a 0-d float64 does not promote float32 tensors), integers still
    wrap through mul and add, and torch's errors."""
    x = vk.ones(3)
    assert vk.addcmul(x, x, vk.tensor(2.0, dtype=vk.float64)).dtype == vk.float32
    assert vk.addcmul(vk.ones(3, dtype=vk.int32), x, x).dtype == vk.float32
    big = vk.tensor([2 ** 62], dtype=vk.int64)
    assert vk.addcmul(big, big, vk.tensor([4])).tolist() == torch.addcmul(
        torch.tensor([2 ** 62]), torch.tensor([2 ** 62]), torch.tensor([4])).tolist()
    with pytest.raises(RuntimeError, match="integral input tensors"):
        vk.addcmul(vk.ones(3, dtype=vk.int64), vk.ones(3, dtype=vk.int64), vk.ones(3, dtype=vk.int64), value=0.5)
    with pytest.raises(RuntimeError, match="integer division"):
        vk.addcdiv(x, vk.ones(3, dtype=vk.int64), vk.ones(3, dtype=vk.int64))
    with pytest.raises(RuntimeError, match="expected dtype float"):
        vk.lerp(x, vk.ones(3, dtype=vk.float64), 0.5)
    with pytest.raises(RuntimeError, match="weight"):
        vk.lerp(x, x, vk.ones(3, dtype=vk.float64))
    with pytest.raises(NotImplementedError, match="lerp"):
        vk.lerp(vk.ones(3, dtype=vk.int64), vk.ones(3, dtype=vk.int64), 0.5)


# ---- mse_loss's element in one pass ----

@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mse_loss_one_pass_element_regression(dtype, device):
    """mse_loss was sub then mul then the reduction (3 passes; torch's kernel fuses the first two):
    its element is one op now, squared_difference(a, b) = (a - b)^2 -- the grad_fn of the 'none'
    loss takes the leaves -- with torch's bits for 'none' and its values for 'mean' and 'sum'
    (contiguous, strided, NaN and inf), and torch's gradients (2 (a - b) g), broadcast target too."""
    rng = np.random.default_rng(31)
    a, b = (rng.standard_normal((64, 33)).astype(dtype) for _ in range(2))
    a[0, :3] = [np.nan, np.inf, -np.inf]
    F, TF = vk.nn.functional, torch.nn.functional
    va, vb = (vk.tensor(x).to(device).requires_grad_() for x in (a, b))
    assert F.mse_loss(va, vb, reduction="none").grad_fn.name == "SquaredDifferenceBackward"
    for reduction in ("none", "mean", "sum"):
        for x, y in ((a, b), (a.T, b.T), (a[1:], b[1:])):
            got = F.mse_loss(vk.tensor(x).to(device), vk.tensor(y).to(device), reduction=reduction).cpu()
            want = TF.mse_loss(torch.tensor(x), torch.tensor(y), reduction=reduction)
            if reduction == "none":
                same_bits(got, want, reduction)
            else:
                assert_close(got, want, np.dtype(dtype).name, what=reduction)
    g, h = rng.standard_normal((64, 33)), rng.standard_normal((1, 33))
    va, vb = vk.tensor(g).to(device).requires_grad_(), vk.tensor(h).to(device).requires_grad_()
    ta, tb = torch.tensor(g, requires_grad=True), torch.tensor(h, requires_grad=True)
    F.mse_loss(va, vb).backward()
    with pytest.warns(UserWarning, match="target size"):  # (vkml does not warn: noted on #18)
        TF.mse_loss(ta, tb).backward()
    assert_close(va.grad.cpu(), ta.grad, "float64", what="d input")
    assert_close(vb.grad.cpu(), tb.grad, "float64", what="d target")
