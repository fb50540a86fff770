"""Shape, view, indexing, scatter and dtype functions of torch (issue #15, "shape/index breadth":
vkml/_shape_fns.py, vkml/_index_fns.py) against PyTorch: values in float32 and float64,
gradients against torch's and against finite differences in float64, every case again on the
Vulkan device, and bad input raising the error torch raises (naming the op)."""

import os

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, check_fd, to_np


def R(*shape):
    return ("randn", shape)


def P(*shape):
    return ("pos", shape)


def make(spec, rng, dtype):
    kind, v = spec
    if kind == "randn":
        return rng.standard_normal(v).astype(dtype)
    return rng.uniform(0.5, 2.0, v).astype(dtype)


def I(lib, values):  # noqa: E743  an int64 index tensor of either library
    return lib.tensor(values, dtype=lib.int64)


class Case:
    """f(lib, *tensors) is called with lib = torch and lib = vkml on the same values."""

    def __init__(self, name, f, inputs, grad=True, fd=True, torch_grad=True):
        self.name, self.f, self.inputs, self.grad, self.fd = name, f, inputs, grad, fd
        # torch_grad=False: torch's own backward fails (its vander modifies a saved tensor in
        # place); the gradient is checked against finite differences only.
        self.torch_grad = torch_grad


C = Case
CASES = [
    # ---- shape / view ----
    C("hstack", lambda L, a, b: L.hstack([a, b]), [R(2, 3), R(2, 2)]),
    C("hstack1d", lambda L, a, b: L.hstack((a, b)), [R(3), R(2)]),
    C("vstack", lambda L, a, b: L.vstack([a, b]), [R(3), R(2, 3)]),
    C("row_stack", lambda L, a, b: L.row_stack([a, b]), [R(3), R(3)]),
    C("dstack", lambda L, a, b: L.dstack([a, b]), [R(2, 3), R(2, 3, 2)]),
    C("column_stack", lambda L, a, b: L.column_stack([a, b]), [R(3), R(3, 2)]),
    C("tile", lambda L, a: L.tile(a, (2, 1, 2)), [R(2, 3)]),
    C("Tensor.tile", lambda L, a: a.tile(2), [R(2, 3)]),
    C("movedim", lambda L, a: L.movedim(a, (0, 1), (2, 0)), [R(2, 3, 4)]),
    C("moveaxis", lambda L, a: L.moveaxis(a, -1, 0), [R(2, 3, 4)]),
    C("swapdims", lambda L, a: L.swapdims(a, 0, 2), [R(2, 3, 4)]),
    C("ravel", lambda L, a: a.t().ravel(), [R(2, 3)]),
    C("atleast_3d", lambda L, a, b: L.atleast_3d(a, b), [R(), R(2, 3)]),
    C("atleast_2d", lambda L, a: L.atleast_2d(a), [R(3)]),
    C("atleast_1d", lambda L, a: L.atleast_1d(a), [R()]),
    C("broadcast_tensors", lambda L, a, b: L.broadcast_tensors(a, b), [R(3, 1), R(1, 4)]),
    C("tensor_split", lambda L, a: L.tensor_split(a, 3, dim=1), [R(2, 7)]),
    C("tensor_split_idx", lambda L, a: a.tensor_split([1, 4, 9]), [R(6, 2)]),
    C("hsplit", lambda L, a: L.hsplit(a, [1, 3]), [R(2, 4)]),
    C("vsplit", lambda L, a: L.vsplit(a, 2), [R(4, 2)]),
    C("dsplit", lambda L, a: a.dsplit(2), [R(1, 2, 4)]),
    C("split_with_sizes", lambda L, a: a.split_with_sizes([1, 3], 1), [R(2, 4)]),
    C("rot90", lambda L, a: L.rot90(a, 1, (0, 1)), [R(2, 3)]),
    C("rot90_k3", lambda L, a: a.rot90(3, [1, 2]), [R(2, 3, 4)]),
    C("rot90_k2", lambda L, a: L.rot90(a, -2), [R(2, 3)]),
    C("fliplr", lambda L, a: L.fliplr(a), [R(2, 3)]),
    C("flipud", lambda L, a: a.flipud(), [R(2, 3)]),
    C("diagflat", lambda L, a: L.diagflat(a, 1), [R(2, 2)]),
    C("block_diag", lambda L, a, b, c: L.block_diag(a, b, c), [R(2, 3), R(3), R()]),
    C("cartesian_prod", lambda L, a, b: L.cartesian_prod(a, b), [R(3), R(2)]),
    C("combinations", lambda L, a: L.combinations(a, 2), [R(4)]),
    C("combinations_repl", lambda L, a: L.combinations(a, 3, with_replacement=True), [R(3)]),
    C("trapezoid", lambda L, a: L.trapezoid(a, dx=0.5), [R(3, 5)]),
    C("trapezoid_x", lambda L, a, x: L.trapezoid(a, x, dim=0), [R(4, 2), R(4)]),
    C("trapz", lambda L, a: L.trapz(a, dim=0), [R(3, 2)]),
    C("cumulative_trapezoid", lambda L, a: L.cumulative_trapezoid(a), [R(2, 5)]),
    C("vander", lambda L, a: L.vander(a, 4), [R(3)], torch_grad=False),
    C("vander_incr", lambda L, a: L.vander(a, increasing=True), [R(4)], torch_grad=False),
    C("inner", lambda L, a, b: L.inner(a, b), [R(2, 3), R(4, 3)]),
    C("vdot", lambda L, a, b: L.vdot(a, b), [R(3), R(3)]),
    C("chain_matmul", lambda L, a, b, c: L.chain_matmul(a, b, c), [R(2, 3), R(3, 4), R(4, 2)]),
    C("cov", lambda L, a: L.cov(a), [R(3, 5)]),
    C("cov_w", lambda L, a, w: L.cov(a, correction=0, aweights=w), [R(2, 4), P(4)]),
    C("cov_fw", lambda L, a: L.cov(a, fweights=I(L, [1, 2, 1, 3])), [R(2, 4)]),
    C("corrcoef", lambda L, a: L.corrcoef(a), [R(3, 6)]),
    C("sum_to_size", lambda L, a: a.sum_to_size(3, 1), [R(2, 3, 4)]),
    C("fill", lambda L, a: L.fill(a, 2.5), [R(2, 3)], grad=False),
    # ---- indexing / scatter ----
    C("scatter", lambda L, a, s: L.scatter(a, 1, I(L, [[0, 2], [1, 0]]), s),
      [R(2, 3), R(2, 2)]),
    C("scatter_src_larger", lambda L, a, s: L.scatter(a, 1, I(L, [[0, 2]]), s),
      [R(2, 3), R(2, 3)], torch_grad=False),  # torch's backward fails on its shape
    # Repeated indices: the last writer wins, as torch's CPU; only it gets the gradient (torch
    # gives every writer one: see docs/compat.md), so the gradient is checked by differences.
    C("scatter_dup_last_wins", lambda L, a, s: a.scatter(0, I(L, [0, 2, 0, 0]), s),
      [R(4), R(4)], torch_grad=False),
    C("scatter_value", lambda L, a: a.scatter(0, I(L, [[1, 0, 1]]), 7.0), [R(2, 3)]),
    C("scatter_add_reduce", lambda L, a, s: a.scatter(0, I(L, [[1, 0], [1, 1]]), s,
                                                      reduce="add"), [R(2, 2), R(2, 2)],
      grad=False),
    C("scatter_mul_reduce", lambda L, a, s: a.scatter(0, I(L, [[1, 0], [1, 1]]), s,
                                                      reduce="multiply"), [R(2, 2), R(2, 2)],
      grad=False),
    C("scatter_add", lambda L, a, s: a.scatter_add(1, I(L, [[0, 0, 2]]), s), [R(2, 3), R(1, 3)]),
    C("take", lambda L, a: L.take(a, I(L, [[0, 5], [-1, 2]])), [R(2, 3)]),
    C("take_along_dim", lambda L, a: L.take_along_dim(a, I(L, [[0], [2]]), 1), [R(2, 3)]),
    C("take_along_dim_bc", lambda L, a: a.take_along_dim(I(L, [[[1, 0]]]), dim=0), [R(2, 3, 2)]),
    C("take_along_dim_flat", lambda L, a: L.take_along_dim(a, I(L, [4, 0])), [R(2, 3)]),
    C("index_copy", lambda L, a, s: a.index_copy(1, I(L, [2, 0]), s), [R(2, 3), R(2, 2)]),
    C("index_put", lambda L, a, v: a.index_put((I(L, [0, 1, 0]), I(L, [2, 0, 1])), v),
      [R(2, 3), R(3)]),
    C("index_put_dup", lambda L, a, v: a.index_put((I(L, [0, 1, 0]), I(L, [2, 0, 2])), v),
      [R(2, 3), R(3)], torch_grad=False),
    C("index_put_acc", lambda L, a, v: a.index_put((I(L, [0, 1, 0]),), v, accumulate=True),
      [R(2, 3), R(3, 3)]),
    C("index_put_bool", lambda L, a, v: a.index_put((L.tensor([True, False, True]),), v),
      [R(3, 2), R(2)]),
    C("masked_select", lambda L, a: L.masked_select(a, L.tensor([True, False, True])),
      [R(2, 3)]),
    C("masked_scatter", lambda L, a, s: a.masked_scatter(L.tensor([[True, False, True],
                                                                   [False, True, False]]), s),
      [R(2, 3), R(5)]),
    C("select_scatter", lambda L, a, s: L.select_scatter(a, s, 1, -1), [R(2, 3), R(2)]),
    C("slice_scatter", lambda L, a, s: L.slice_scatter(a, s, 1, 0, 4, 2), [R(2, 4), R(2, 2)]),
    C("slice_scatter_default", lambda L, a, s: a.slice_scatter(s, start=1), [R(3, 2), R(2, 2)]),
    C("diagonal_scatter", lambda L, a, s: L.diagonal_scatter(a, s, 1), [R(3, 3), R(2)]),
    C("diagonal_scatter_dims", lambda L, a, s: a.diagonal_scatter(s, 0, 1, 2), [R(2, 2, 3),
                                                                                 R(2, 2)]),
    C("put", lambda L, a, s: a.put(I(L, [1, 5, -2]), s), [R(2, 3), R(3)]),
    C("put_dup", lambda L, a, s: a.put(I(L, [1, 5, 1]), s), [R(2, 3), R(3)], torch_grad=False),
    C("put_acc", lambda L, a, s: a.put(I(L, [1, 5, 1]), s, accumulate=True), [R(2, 3), R(3)]),
]
for _red in ("sum", "prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        CASES.append(C(f"scatter_reduce_{_red}_{_inc}",
                       lambda L, a, s, r=_red, inc=_inc: a.scatter_reduce(
                           1, I(L, [[0, 0, 2, 0], [1, 1, 1, 2]]), s, r, include_self=inc),
                       [R(2, 4), R(2, 4)]))


def _outputs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def run_case(c, dtype, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [make(s, rng, dtype) for s in c.inputs]
    ts = [torch.tensor(a, requires_grad=c.grad) for a in arrays]
    vs = [vk.tensor(a, requires_grad=c.grad) for a in arrays]
    tout, vout = _outputs(c.f(torch, *ts)), _outputs(c.f(vk, *vs))
    assert len(tout) == len(vout), c.name
    for t, v in zip(tout, vout):
        assert str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (c.name, v.dtype)
        assert_close(v, t, dtype, what=f"{c.name} forward")
    if not (c.grad and c.torch_grad):
        return
    pairs = [(t, v) for t, v in zip(tout, vout) if t.requires_grad]
    ups = [rng.uniform(-1, 1, tuple(t.shape)).astype(dtype) for t, _ in pairs]
    tg = torch.autograd.grad([t for t, _ in pairs], ts, [torch.tensor(u) for u in ups],
                             allow_unused=True)
    vg = vk.autograd.grad([v for _, v in pairs], vs, [vk.tensor(u) for u in ups],
                          allow_unused=True)
    for k, (a, e) in enumerate(zip(vg, tg)):
        if e is None:
            assert a is None or not np.any(to_np(a)), f"{c.name}: grad {k}"
            continue
        assert a is not None, f"{c.name}: input {k} got no gradient"
        assert_close(a, e, dtype, what=f"{c.name} grad {k}")


@pytest.mark.parametrize("i,dtype", [pytest.param(i, d, id=f"{c.name}-{d}")
                                     for i, c in enumerate(CASES)
                                     for d in ("float32", "float64")])
def test_matches_torch(i, dtype):
    run_case(CASES[i], dtype)


@pytest.mark.parametrize("i", [pytest.param(i, id=c.name) for i, c in enumerate(CASES)
                               if c.grad and c.fd])
def test_gradient_vs_finite_differences(i):
    c = CASES[i]
    arrays = [make(s, np.random.default_rng(1), "float64") for s in c.inputs]

    def flat(*xs):
        outs = _outputs(c.f(vk, *xs))
        return vk.cat([o.reshape(-1) for o in outs if o.is_floating_point()])
    check_fd(flat, arrays, rtol=1e-5, atol=1e-6)


def _require_vulkan():
    if not vk.vulkan.is_available():
        if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
            pytest.fail("VKML_REQUIRE_VULKAN=1 but the vulkan device is not available")
        pytest.skip("no vulkan device")


@pytest.fixture
def on_vulkan():
    _require_vulkan()
    vk.set_default_device("vulkan")
    try:
        yield
    finally:
        vk.set_default_device("cpu")


@pytest.mark.parametrize("i", [pytest.param(i, id=c.name) for i, c in enumerate(CASES)])
def test_matches_torch_on_vulkan(i, on_vulkan):
    run_case(CASES[i], "float32")
