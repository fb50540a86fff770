"""scatter_add with an index broadcast along the run (stride 0: index_select's and embedding's
gradient, or a user's idx[:, None].expand(...)) reads one index a line and adds the line as a
vector. It must give the bits of the general path (the same index materialised), reject a bad
index as before, and give embedding the gradient torch gives.
"""

import numpy as np
import pytest
import torch

import vkml as vk

torch.set_num_threads(1)


def _np(t):
    return t.numpy()


def _reference(base, dim, idx, src):
    out = base.copy()
    if dim == 0:
        np.add.at(out, idx, src)
    else:
        np.add.at(out.T, idx, src.T)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("layout", ["rows", "strided_src", "dim1"])
def test_broadcast_index_gives_the_general_paths_bits(dtype, index_dtype, layout):
    rng = np.random.default_rng(7)
    V, N, D = 11, 300, 37
    idx_np = rng.integers(0, V, N)  # repeats: the sum's order is index order on both paths
    if dtype == "int64":
        base_np, src_np = rng.integers(-50, 50, (V, D)), rng.integers(-50, 50, (N, 2 * D))
    else:
        base_np, src_np = rng.standard_normal((V, D)), rng.standard_normal((N, 2 * D)) * 1e3
    src_np = src_np.astype(dtype)
    idx = vk.tensor(idx_np, dtype=getattr(vk, index_dtype))
    base = vk.tensor(base_np.astype(dtype))
    src_full = vk.tensor(src_np)
    src = src_full[:, ::2] if layout == "strided_src" else src_full[:, :D]
    dim = 0
    index = idx[:, None].expand(N, D)
    if layout == "dim1":  # the index broadcast down the rows, scattered along dim 1
        dim, base, src = 1, base.t(), src.t()
        index = idx[None, :].expand(D, N)
    assert index.stride()[1 - dim] == 0
    got = vk.scatter_add(base, dim, index, src)
    general = vk.scatter_add(base, dim, index.contiguous(), src)
    assert _np(got).tobytes() == _np(general).tobytes()
    want = _reference(_np(base), dim, idx_np, _np(src))
    if dtype == "int64":
        np.testing.assert_array_equal(_np(got), want)
    else:
        np.testing.assert_allclose(_np(got), want, rtol=1e-12 if dtype == "float64" else 1e-5,
                                   atol=1e-9 if dtype == "float64" else 1e-2)


@pytest.mark.parametrize("bad", [11, 12, -1])
def test_broadcast_index_out_of_range_is_an_index_error(bad):
    idx = vk.tensor([0, 3, bad, 1])
    with pytest.raises(IndexError, match="scatter_add.*index"):
        vk.scatter_add(vk.zeros(11, 5), 0, idx[:, None].expand(4, 5), vk.ones(4, 5))


def test_same_bits_at_any_thread_count():
    rng = np.random.default_rng(3)
    idx = vk.tensor(rng.integers(0, 64, 4096))
    src = vk.tensor(rng.standard_normal((4096, 512)).astype(np.float32))
    index = idx[:, None].expand(4096, 512)
    outs = []
    for threads in (1, 2):
        vk.set_num_threads(threads)
        outs.append(_np(vk.scatter_add(vk.zeros(64, 512), 0, index, src)).tobytes())
    vk.set_num_threads(1)
    assert outs[0] == outs[1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_gradient_matches_torch(dtype):
    rng = np.random.default_rng(5)
    w_np = rng.standard_normal((96, 128)).astype(dtype)
    idx_np = rng.integers(0, 96, (32, 64))
    g_np = rng.standard_normal((32, 64, 128)).astype(dtype)
    grads = []
    for lib in (vk, torch):
        w = lib.tensor(w_np, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor(idx_np), w).backward(lib.tensor(g_np))
        grads.append(w.grad.numpy())
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[0], grads[1], **tol)
