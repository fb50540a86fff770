"""Outputs written with non-temporal stores (issue 18, Zen 3): a contiguous output of
`_stream_min_bytes()` or more (half the last-level cache) from a cheap element-wise map, layer_norm
(forward and backward), batch_norm's forward, softmax's backward or float32 exp at two or more
threads goes through simd.h write_out, 512-byte blocks streamed past the cache, the unaligned head
and the tail written directly (c = a + b on 64 MB arrays: 7.8 -> 5.1 ms). The threshold is read once per process, so children run the
same ops with VKML_STREAM_MIN_BYTES=0 (every such output streamed, at small sizes) and with it out
of reach; every result must be the same to the bit, and right against NumPy and torch. Sizes cover
one element, less than a block, whole blocks with and without a tail, unaligned destinations, and
ranges split between two threads."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import vkml as vk

NEVER = str(10**18)
SIZES = [1, 100, 128, 129, 1000, 4113, 70001]  # floats: 128 fill a block; 70001 splits in two
LN_SHAPES = [(70, 1000), (33, 129), (3, 4101), (600, 130)]  # (rows, normalized size)
BN_SHAPES = [(4, 3, 50, 50), (2, 5, 7, 300), (3, 2, 1, 129)]  # segments of S = H * W values

CHILD = r"""
import sys
import numpy as np
import vkml as vk

F = vk.nn.functional
out = {"threshold": np.array(vk._C._stream_min_bytes())}
rng = np.random.default_rng(0)
for threads in (1, 2):
    vk.set_num_threads(threads)
    for n in SIZES:
        a_np = rng.standard_normal(n).astype(np.float32)
        b_np = rng.standard_normal(n).astype(np.float32) + 0.5
        a, b = vk.tensor(a_np), vk.tensor(b_np)
        i, j = vk.tensor(rng.integers(-9, 9, n)), vk.tensor(rng.integers(-9, 9, n).astype(np.int32))
        res = {
            "add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "neg": -a, "abs": a.abs(),
            "relu": F.relu(a), "clamp": a.clamp(-0.5, 0.7), "sqrt": a.abs().sqrt(),
            "rsqrt": b.abs().rsqrt(), "reciprocal": b.reciprocal(), "square": a ** 2,
            "cube": a ** 3, "maximum": vk.maximum(a, b), "gt": a > b, "eq": a == a,
            "int_add": i + i, "int_mul": i * 3, "int32_and": i.to(vk.int32) & (i.to(vk.int32) + 1),
            "to_f64": a.double(), "to_i32": (a * 100).to(vk.int32),
            "f64_add": a.double() + b.double(), "exp": a.exp(), "exp_wide": (a * 40).exp(),
        }
        z = vk.zeros(n + 8)
        z[3:3 + n].copy_(a)  # a destination 12 bytes past a line
        res["copy_offset"] = z
        for act in ("tanh", "sigmoid", "relu", "softmax"):
            x = vk.tensor(a_np, requires_grad=True)
            if act == "softmax":
                y = F.softmax(x.reshape(1, n), -1).reshape(n)
            else:
                y = getattr(vk, act)(x)
            y.backward(vk.tensor(b_np))
            res[act + "_grad"] = x.grad
        for k, v in res.items():
            out[f"{k}/{n}/{threads}"] = v.numpy()
        out[f"in_a/{n}/{threads}"], out[f"in_b/{n}/{threads}"] = a_np, b_np
        out[f"in_i/{n}/{threads}"] = i.numpy()
    for rows, cols in LN_SHAPES:
        x_np = (rng.standard_normal((rows, cols)) * 3 + 1).astype(np.float32)
        g_np = rng.standard_normal((rows, cols)).astype(np.float32)
        for affine in (True, False):
            x = vk.tensor(x_np, requires_grad=True)
            w = vk.tensor(rng.standard_normal(cols).astype(np.float32), requires_grad=True)
            b = vk.tensor(rng.standard_normal(cols).astype(np.float32), requires_grad=True)
            y = F.layer_norm(x, (cols,), w, b) if affine else F.layer_norm(x, (cols,))
            y.backward(vk.tensor(g_np))
            key = f"{rows}x{cols}/{affine}/{threads}"
            out["ln_y/" + key], out["ln_dx/" + key] = y.detach().numpy(), x.grad.numpy()
            out["ln_in/" + key] = np.stack([x_np, g_np])
            out["ln_wb/" + key] = np.stack([w.detach().numpy(), b.detach().numpy()])
            if affine:
                out["ln_dw/" + key], out["ln_db/" + key] = w.grad.numpy(), b.grad.numpy()
    for shape in BN_SHAPES:
        x_np = (rng.standard_normal(shape) * 2 - 1).astype(np.float32)
        w_np, b_np = rng.standard_normal((2, shape[1])).astype(np.float32)
        mean, var = vk.zeros(shape[1]), vk.ones(shape[1])
        y = F.batch_norm(vk.tensor(x_np), mean, var, vk.tensor(w_np), vk.tensor(b_np),
                         training=True)
        key = "x".join(map(str, shape)) + f"/{threads}"
        out["bn_y/" + key], out["bn_x/" + key] = y.numpy(), x_np
        out["bn_wb/" + key] = np.stack([w_np, b_np])
np.savez(sys.argv[1], **out)
"""


def run_child(tmp_path, threshold, capability):
    path = tmp_path / f"out_{threshold}_{capability}.npz"
    env = dict(os.environ, VKML_STREAM_MIN_BYTES=threshold, VKML_CPU_CAPABILITY=capability)
    code = f"SIZES = {SIZES!r}\nLN_SHAPES = {LN_SHAPES!r}\nBN_SHAPES = {BN_SHAPES!r}\n{CHILD}"
    r = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return dict(np.load(path))


# Each copy of the kernels streams with its own instructions (SSE2, AVX, AVX-512); a capability
# above the machine's runs the best it has.
@pytest.fixture(scope="module", params=["default", "avx2", "avx512"])
def results(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("streamed")
    return run_child(tmp, "0", request.param), run_child(tmp, NEVER, request.param)


def test_streamed_outputs_equal_cached_ones_bitwise(results):
    streamed, cached = results
    assert int(streamed["threshold"]) == 0 and int(cached["threshold"]) == 10**18
    assert streamed.keys() == cached.keys()
    for key in streamed:
        if key != "threshold":
            np.testing.assert_array_equal(streamed[key], cached[key], err_msg=key, strict=True)


def test_streamed_maps_match_numpy(results):
    streamed, _ = results
    for threads in (1, 2):
        for n in SIZES:
            at = lambda k: streamed[f"{k}/{n}/{threads}"]  # noqa: E731
            a, b, i = at("in_a"), at("in_b"), at("in_i")
            with np.errstate(over="ignore"):
                exp_wide = np.exp(a * np.float32(40))  # past 88: inf; below -87: subnormal or 0
            want = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "neg": -a,
                    "abs": np.abs(a), "relu": np.maximum(a, 0), "clamp": np.clip(a, -0.5, 0.7),
                    "sqrt": np.sqrt(np.abs(a)), "square": a * a, "maximum": np.maximum(a, b),
                    "gt": a > b, "eq": np.ones(n, bool), "int_add": i + i, "int_mul": i * 3,
                    "to_f64": a.astype(np.float64), "f64_add": a.astype(np.float64) + b,
                    "relu_grad": np.where(a > 0, b, 0).astype(np.float32),
                    "exp": np.exp(a), "exp_wide": exp_wide,
                    "copy_offset": np.concatenate([np.zeros(3, np.float32), a,
                                                   np.zeros(5, np.float32)])}
            for k, v in want.items():
                if k.startswith("exp"):  # vmath's exp: within an ulp or so of NumPy's
                    np.testing.assert_allclose(at(k), v, rtol=3e-7, atol=3e-45,
                                               err_msg=f"{k}/{n}/{threads}")
                else:
                    np.testing.assert_array_equal(at(k), v, err_msg=f"{k}/{n}/{threads}")
            for act in ("tanh", "sigmoid", "softmax"):
                x = torch.tensor(a, dtype=torch.float64, requires_grad=True)
                y = (torch.softmax(x, 0) if act == "softmax" else getattr(torch, act)(x))
                y.backward(torch.tensor(b, dtype=torch.float64))
                np.testing.assert_allclose(at(act + "_grad"), x.grad.numpy(), rtol=1e-5,
                                           atol=1e-6, err_msg=f"{act}/{n}/{threads}")


def test_streamed_layer_norm_matches_torch(results):
    streamed, _ = results
    for key in (k[len("ln_y/"):] for k in streamed if k.startswith("ln_y/")):
        affine = "/True/" in key
        x, g = streamed["ln_in/" + key].astype(np.float64)
        w, b = streamed["ln_wb/" + key].astype(np.float64)
        tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
        ty = torch.nn.functional.layer_norm(tx, (x.shape[1],), *((tw, tb) if affine else ()))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(streamed["ln_y/" + key], ty.detach().numpy(), rtol=1e-5,
                                   atol=2e-5, err_msg=key)
        np.testing.assert_allclose(streamed["ln_dx/" + key], tx.grad.numpy(), rtol=1e-4,
                                   atol=1e-4, err_msg=key)
        if affine:
            np.testing.assert_allclose(streamed["ln_dw/" + key], tw.grad.numpy(), rtol=1e-4,
                                       atol=1e-3, err_msg=key)
            np.testing.assert_allclose(streamed["ln_db/" + key], tb.grad.numpy(), rtol=1e-4,
                                       atol=1e-3, err_msg=key)


def test_streamed_batch_norm_matches_torch(results):
    streamed, _ = results
    keys = [k[len("bn_y/"):] for k in streamed if k.startswith("bn_y/")]
    assert len(keys) == 2 * len(BN_SHAPES)
    for key in keys:
        x = torch.tensor(streamed["bn_x/" + key], dtype=torch.float64)
        w, b = torch.tensor(streamed["bn_wb/" + key], dtype=torch.float64)
        want = torch.nn.functional.batch_norm(x, None, None, w, b, training=True)
        np.testing.assert_allclose(streamed["bn_y/" + key], want.numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=key)


def test_default_threshold_is_half_the_last_level_cache():
    caches = pathlib.Path("/sys/devices/system/cpu/cpu0/cache")
    best = (0, 0)
    for d in sorted(caches.glob("index*")):
        try:
            level, size = int((d / "level").read_text()), (d / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1], 1)
        best = max(best, (level, int(size.rstrip("KM")) * scale))
    want = best[1] // 2 if best[1] else 16 << 20
    env = {k: v for k, v in os.environ.items() if k != "VKML_STREAM_MIN_BYTES"}
    r = subprocess.run([sys.executable, "-c", "import vkml; print(vkml._C._stream_min_bytes())"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == want


def test_bad_threshold_variable_warns_and_keeps_default():
    env = dict(os.environ, VKML_STREAM_MIN_BYTES="16MB")
    r = subprocess.run([sys.executable, "-c", "import vkml; print(vkml._C._stream_min_bytes())"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "VKML_STREAM_MIN_BYTES=16MB is not a byte count" in r.stderr
    assert int(r.stdout) > 0
