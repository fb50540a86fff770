"""Shape, view, indexing, scatter and dtype functions of torch (issue #15, "shape/index breadth":
vkml/_shape_fns.py, vkml/_index_fns.py) against PyTorch: values in float32 and float64,
gradients against torch's and against finite differences in float64, every case again on the
Vulkan device, and bad input raising the error torch raises (naming the op)."""

import os

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, check_fd, devices, to_np

# torch's own notice on its index_reduce (the oracle's, not vkml's)
pytestmark = pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")


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

for _red in ("prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        CASES.append(C(f"index_reduce_{_red}_{_inc}",
                       lambda L, a, s, r=_red, inc=_inc: a.index_reduce(
                           0, I(L, [0, 2, 0, 0]), s, r, include_self=inc),
                       [R(3, 2), R(4, 2)]))


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


# ---- creation-like functions: values against torch (float64 and float32), on both devices ----

CREATION = [
    ("tril_indices", lambda L: L.tril_indices(3, 4, 1)),
    ("triu_indices", lambda L: L.triu_indices(4, 3, -1)),
    ("triu_indices_empty", lambda L: L.triu_indices(2, 2, 5)),
    ("logspace", lambda L: L.logspace(-1, 2, 5, dtype=L.float64)),
    ("logspace_base2", lambda L: L.logspace(0, 3, 4, base=2, dtype=L.float32)),
    ("hann", lambda L: L.hann_window(6, dtype=L.float64)),
    ("hann_sym", lambda L: L.hann_window(5, periodic=False, dtype=L.float64)),
    ("hamming", lambda L: L.hamming_window(7, dtype=L.float64)),
    ("hamming_ab", lambda L: L.hamming_window(5, False, 0.5, 0.4, dtype=L.float64)),
    ("blackman", lambda L: L.blackman_window(8, dtype=L.float64)),
    ("bartlett", lambda L: L.bartlett_window(7, periodic=False, dtype=L.float64)),
    ("kaiser", lambda L: L.kaiser_window(9, dtype=L.float64)),
    ("kaiser_beta", lambda L: L.kaiser_window(6, False, 3.5, dtype=L.float64)),
    ("window_len1", lambda L: L.hann_window(1)),
    ("window_len0", lambda L: L.blackman_window(0)),
    ("window_f32", lambda L: L.hann_window(5)),
]


@pytest.mark.parametrize("name,f", CREATION, ids=[n for n, _ in CREATION])
@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_creation_matches_torch(name, f, device):
    if device == "vulkan":
        _require_vulkan()
    vk.set_default_device(device)
    try:
        v = f(vk)
    finally:
        vk.set_default_device("cpu")
    t = f(torch)
    assert v.device.type == device
    assert str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert_close(v, t, "float64" if t.dtype == torch.float64 else "float32", what=name)


def test_range_includes_end_and_warns():
    with pytest.warns(UserWarning, match="deprecated"):
        v = vk.range(1, 4, 0.5)
    with pytest.warns(UserWarning):
        t = torch.range(1, 4, 0.5)
    assert_close(v, t, "float32")
    assert v.dtype == vk.float32


# ---- unique over a dim, unique_consecutive ----

UNIQUE = [
    ("dim0", lambda L, x: L.unique(x, dim=0, return_inverse=True, return_counts=True)),
    ("dim1", lambda L, x: L.unique(x, dim=1, return_inverse=True, return_counts=True)),
    ("dim-1_plain", lambda L, x: x.unique(dim=-1)),
    ("consecutive", lambda L, x: L.unique_consecutive(x, return_inverse=True,
                                                      return_counts=True)),
    ("consecutive_dim0", lambda L, x: x.unique_consecutive(return_counts=True, dim=0)),
    ("consecutive_dim1", lambda L, x: L.unique_consecutive(x, return_inverse=True, dim=1)),
]
UNIQUE_INPUT = [[1, 2, 1, 1], [3, 0, 3, 3], [1, 2, 1, 1], [1, 2, 1, 1], [0, 0, 0, 5]]


@pytest.mark.parametrize("name,f", UNIQUE, ids=[n for n, _ in UNIQUE])
@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_unique_dim_and_consecutive_match_torch(name, f, dtype):
    t = f(torch, torch.tensor(UNIQUE_INPUT, dtype=getattr(torch, dtype)))
    v = f(vk, vk.tensor(UNIQUE_INPUT, dtype=getattr(vk, dtype)))
    for a, e in zip(_outputs(v), _outputs(t)):
        assert_close(a, e, "float64", what=name)


def test_unique_dim_on_vulkan(on_vulkan):
    x = vk.tensor(UNIQUE_INPUT)
    t = torch.tensor(UNIQUE_INPUT)
    for a, e in zip(vk.unique(x, dim=0, return_inverse=True, return_counts=True),
                    torch.unique(t, dim=0, return_inverse=True, return_counts=True)):
        assert a.device.type == "vulkan"
        assert_close(a, e, what="unique dim=0 on vulkan")


# ---- dtype helpers, small predicates, printing ----

def test_promote_types_and_result_type_match_torch():
    names = ["bool", "int32", "int64", "float32", "float64"]
    for a in names:
        for b in names:
            assert str(vk.promote_types(getattr(vk, a), getattr(vk, b))).split(".")[-1] == \
                str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[-1]
            assert vk.can_cast(getattr(vk, a), getattr(vk, b)) == \
                torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)
    for x, y in [((), 2.5), ((2,), 2.5), ((2,), 3), ((), True)]:
        for d in ["bool", "int32", "int64", "float32"]:
            tv = torch.zeros(x, dtype=getattr(torch, d))
            vv = vk.zeros(x, dtype=getattr(vk, d))
            assert str(vk.result_type(vv, y)).split(".")[-1] == \
                str(torch.result_type(tv, y)).split(".")[-1], (x, y, d)
    # a 0-d tensor does not widen a dimensioned one of the same category (torch's rule)
    assert vk.result_type(vk.zeros(2, dtype=vk.int32), vk.zeros((), dtype=vk.int64)) == vk.int32
    assert vk.result_type(vk.zeros(2, dtype=vk.int32), vk.zeros(2, dtype=vk.int64)) == vk.int64


def test_predicates_and_small_methods():
    x = vk.zeros(2, 3)
    assert vk.is_same_size(x, vk.ones(2, 3)) and not x.is_same_size(vk.ones(3, 2))
    assert vk.is_signed(x) and vk.tensor([1]).is_signed() and not vk.tensor([True]).is_signed()
    assert vk.is_nonzero(vk.tensor([2.0])) and not vk.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one value"):
        vk.is_nonzero(x)
    with pytest.raises(RuntimeError, match="no values"):
        vk.is_nonzero(vk.zeros(0))
    assert x.ndimension() == 2 and x.get_device() == -1
    assert vk.typename(x) == "vkml.FloatTensor" and vk.typename(3) == "int"
    y = vk.ones(2)
    assert vk.zero_(y) is y and y.tolist() == [0.0, 0.0]
    assert vk.fill_(y, 3) is y and y.tolist() == [3.0, 3.0]
    z = vk.fill(vk.zeros(2, dtype=vk.int64), vk.tensor(4))
    assert z.dtype == vk.int64 and z.tolist() == [4, 4]


def test_get_device_on_vulkan():
    _require_vulkan()
    assert vk.zeros(2).to("vulkan").get_device() == 0


def test_set_printoptions_matches_torch():
    cases = [dict(precision=2), dict(threshold=5, edgeitems=2), dict(sci_mode=True),
             dict(sci_mode=False), dict(linewidth=30), dict(profile="short"),
             dict(profile="full")]
    values = np.linspace(-3.0, 1e3, 12).reshape(3, 4)
    try:
        for opts in cases:
            torch.set_printoptions(**opts)
            vk.set_printoptions(**opts)
            expected = repr(torch.tensor(values, dtype=torch.float32)).replace("torch", "vkml")
            assert repr(vk.tensor(values, dtype=vk.float32)) == expected, opts
            torch.set_printoptions(profile="default", sci_mode=None)
            vk.set_printoptions(profile="default")
    finally:
        torch.set_printoptions(profile="default", sci_mode=None)
        vk.set_printoptions(profile="default")
    with pytest.raises(ValueError, match="profile"):
        vk.set_printoptions(profile="wide")


# ---- in-place forms: values as torch's, the version counter bumped, leaves refused ----

INPLACE = [
    ("scatter_", lambda L, x: x.scatter_(1, I(L, [[2, 0]]), L.ones(1, 2, dtype=x.dtype))),
    ("scatter_value", lambda L, x: x.scatter_(0, I(L, [[1, 0, 1]]), 5.0)),
    ("scatter_reduce_", lambda L, x: x.scatter_reduce_(1, I(L, [[0, 0], [2, 2]]),
                                                       L.ones(2, 2, dtype=x.dtype) * 3,
                                                       "amax")),
    ("scatter_add_", lambda L, x: x.scatter_add_(0, I(L, [[1, 1, 0]]),
                                                 L.ones(1, 3, dtype=x.dtype))),
    ("index_add_", lambda L, x: x.index_add_(1, I(L, [0, 0]), L.ones(2, 2, dtype=x.dtype))),
    ("index_copy_", lambda L, x: x.index_copy_(0, I(L, [1]), L.ones(1, 3, dtype=x.dtype))),
    ("index_put_", lambda L, x: x.index_put_((I(L, [0, 0]), I(L, [1, 1])),
                                             L.tensor(2.0, dtype=x.dtype), accumulate=True)),
    ("masked_scatter_", lambda L, x: x.masked_scatter_(x > 0, L.arange(6, dtype=x.dtype))),
    ("put_", lambda L, x: x.put_(I(L, [0, 4]), L.tensor([9.0, 8.0], dtype=x.dtype))),
    ("index_reduce_", lambda L, x: x.index_reduce_(1, I(L, [2, 2]),
                                                   L.ones(2, 2, dtype=x.dtype) * 4, "amin")),
]


@pytest.mark.parametrize("name,f", INPLACE, ids=[n for n, _ in INPLACE])
@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_inplace_forms_match_torch(name, f, device):
    if device == "vulkan":
        _require_vulkan()
    a = np.random.default_rng(3).standard_normal((2, 3))
    t, v = torch.tensor(a), vk.tensor(a, device=device)
    before = v._version
    vk.set_default_device(device)
    try:
        assert f(vk, v) is v
    finally:
        vk.set_default_device("cpu")
    assert v.device.type == device
    f(torch, t)
    assert v._version > before
    assert_close(v, t, what=name)
    leaf = vk.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError):
        f(vk, leaf)


# ---- bad input: the error torch raises, naming the op ----

BAD = [
    ("scatter index out of range", lambda: vk.scatter(vk.zeros(3), 0, vk.tensor([3]),
                                                      vk.ones(1)), IndexError, "scatter"),
    ("scatter negative index", lambda: vk.zeros(3).scatter(0, vk.tensor([-4]), 1.0),
     IndexError, "scatter"),
    ("scatter float index", lambda: vk.zeros(3).scatter(0, vk.tensor([0.0]), 1.0),
     vk.DTypeError, "scatter"),
    ("scatter index too big", lambda: vk.zeros(2, 2).scatter(1, vk.zeros(3, 1, dtype=vk.int64),
                                                             vk.ones(3, 1)),
     vk.ShapeError, "scatter"),
    ("scatter_reduce bad reduce", lambda: vk.zeros(3).scatter_reduce(
        0, vk.tensor([0]), vk.ones(1), "max"), RuntimeError, "scatter_reduce"),
    ("scatter bad reduce", lambda: vk.zeros(3).scatter(0, vk.tensor([0]), vk.ones(1),
                                                       reduce="max"), RuntimeError, "scatter"),
    ("take out of range", lambda: vk.take(vk.zeros(2, 2), vk.tensor([4])), IndexError, "take"),
    ("take_along_dim ndim", lambda: vk.take_along_dim(vk.zeros(2, 2), vk.tensor([0]), 0),
     RuntimeError, "take_along_dim"),
    ("index_copy out of range", lambda: vk.zeros(2, 3).index_copy(1, vk.tensor([3]),
                                                                 vk.ones(2, 1)),
     IndexError, "index_copy"),
    ("index_copy source shape", lambda: vk.zeros(2, 3).index_copy(1, vk.tensor([0]),
                                                                 vk.ones(3, 1)),
     vk.ShapeError, "index_copy"),
    ("index_put out of range", lambda: vk.zeros(2, 3).index_put((vk.tensor([2]),),
                                                               vk.tensor(1.0)),
     IndexError, "index_put"),
    ("index_put value shape", lambda: vk.zeros(2, 3).index_put((vk.tensor([0, 1]),),
                                                              vk.ones(4)),
     vk.ShapeError, "index_put"),
    ("index_put indices not a tuple", lambda: vk.zeros(2).index_put(vk.tensor([0]),
                                                                   vk.tensor(1.0)),
     TypeError, "index_put"),
    ("masked_select float mask", lambda: vk.masked_select(vk.zeros(2), vk.zeros(2)),
     vk.DTypeError, "masked_select"),
    ("masked_scatter short source", lambda: vk.zeros(3).masked_scatter(
        vk.tensor([True, True, False]), vk.ones(1)), RuntimeError, "masked_scatter"),
    ("select_scatter index", lambda: vk.select_scatter(vk.zeros(2, 3), vk.zeros(2), 1, 3),
     IndexError, "select_scatter"),
    ("slice_scatter src shape", lambda: vk.slice_scatter(vk.zeros(2, 4), vk.zeros(2, 3), 1,
                                                         0, 4, 2),
     vk.ShapeError, "slice_scatter"),
    ("diagonal_scatter src shape", lambda: vk.diagonal_scatter(vk.zeros(3, 3), vk.zeros(2)),
     vk.ShapeError, "diagonal_scatter"),
    ("put out of range", lambda: vk.zeros(2).put(vk.tensor([-3]), vk.ones(1)), IndexError,
     "put"),
    ("movedim repeated", lambda: vk.movedim(vk.zeros(2, 3), (0, 0), (1, 0)), RuntimeError,
     "movedim"),
    ("movedim dim", lambda: vk.zeros(2, 3).movedim(2, 0), IndexError, "movedim"),
    ("broadcast_shapes", lambda: vk.broadcast_shapes((2, 3), (3, 2)), vk.ShapeError,
     "broadcast_shapes"),
    ("hsplit uneven", lambda: vk.hsplit(vk.zeros(2, 3), 2), RuntimeError, "hsplit"),
    ("vsplit 1-d", lambda: vk.vsplit(vk.zeros(4), 2), RuntimeError, "vsplit"),
    ("split_with_sizes sum", lambda: vk.zeros(4).split_with_sizes([1, 2]), RuntimeError,
     "split_with_sizes"),
    ("tensor_split 0-d", lambda: vk.tensor_split(vk.tensor(1.0), 2), RuntimeError,
     "tensor_split"),
    ("rot90 same dims", lambda: vk.rot90(vk.zeros(2, 2), 1, (0, 0)), RuntimeError, "rot90"),
    ("block_diag 3-d", lambda: vk.block_diag(vk.zeros(1, 1, 1)), RuntimeError, "block_diag"),
    ("cartesian_prod 2-d", lambda: vk.cartesian_prod(vk.zeros(2, 2)), RuntimeError,
     "cartesian_prod"),
    ("inner shapes", lambda: vk.inner(vk.zeros(2, 3), vk.zeros(2)), vk.ShapeError, "inner"),
    ("chain_matmul 1-d", lambda: vk.chain_matmul(vk.zeros(2)), RuntimeError, "chain_matmul"),
    ("cov 3-d", lambda: vk.cov(vk.zeros(1, 1, 1)), RuntimeError, "cov"),
    ("trapezoid x length", lambda: vk.trapezoid(vk.zeros(3), vk.zeros(2)), vk.ShapeError,
     "trapezoid"),
    ("sum_to_size", lambda: vk.zeros(2, 3).sum_to_size(2), RuntimeError, "expandable"),
    ("window negative", lambda: vk.hann_window(-1), RuntimeError, "hann_window"),
    ("window int dtype", lambda: vk.hann_window(3, dtype=vk.int64), vk.DTypeError,
     "hann_window"),
    ("vander 2-d", lambda: vk.vander(vk.zeros(2, 2)), RuntimeError, "one-dimensional"),
    ("unique dim", lambda: vk.unique(vk.zeros(2, 2), dim=2), IndexError, "unique"),
    ("index_reduce sum", lambda: vk.zeros(2).index_reduce(0, vk.tensor([0]), vk.ones(1), "sum"),
     RuntimeError, "index_reduce"),
    ("index_reduce out of range", lambda: vk.zeros(2).index_reduce(
        0, vk.tensor([2]), vk.ones(1), "amax"), IndexError, "index_reduce"),
]


@pytest.mark.parametrize("name,f,err,match", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_like_torch(name, f, err, match):
    with pytest.raises(err, match=match):
        f()


def test_linspace_and_eye_follow_the_default_device():
    # Regression: vk.linspace and vk.eye made CPU tensors after vk.set_default_device("vulkan")
    # (their bindings ignored the default device), so vk.logspace mixed devices there.
    _require_vulkan()
    vk.set_default_device("vulkan")
    try:
        made = [vk.linspace(0, 1, 3), vk.eye(2), vk.logspace(0, 1, 3)]
    finally:
        vk.set_default_device("cpu")
    assert all(t.device.type == "vulkan" for t in made)
    assert vk.linspace(0, 1, 3).device.type == "cpu"


# ---- the default dtype ----

DEFAULT_DTYPE_MAKERS = [
    ("zeros", lambda L: L.zeros(2)), ("empty", lambda L: L.empty(2)),
    ("ones", lambda L: L.ones(2, 1)), ("full_float", lambda L: L.full((2,), 1.5)),
    ("full_int", lambda L: L.full((2,), 3)), ("full_bool", lambda L: L.full((2,), True)),
    ("arange_float", lambda L: L.arange(0.0, 3)), ("arange_int", lambda L: L.arange(3)),
    ("linspace", lambda L: L.linspace(0, 1, 3)), ("logspace", lambda L: L.logspace(0, 1, 3)),
    ("eye", lambda L: L.eye(2)), ("rand", lambda L: L.rand(2)), ("randn", lambda L: L.randn(2)),
    ("randint", lambda L: L.randint(0, 3, (2,))),
    ("normal", lambda L: L.normal(0.0, 1.0, (2,))),
    ("tensor_float", lambda L: L.tensor([1.5, 2])), ("tensor_scalar", lambda L: L.tensor(2.5)),
    ("tensor_int", lambda L: L.tensor([1, 2])), ("tensor_bool", lambda L: L.tensor([True])),
    ("tensor_numpy_f32", lambda L: L.tensor(np.zeros(2, np.float32))),
    ("Tensor", lambda L: L.Tensor([1, 2])),
    ("hann_window", lambda L: L.hann_window(4)), ("kaiser_window", lambda L: L.kaiser_window(4)),
    ("sqrt_of_int", lambda L: L.sqrt(L.tensor([4]))),
    ("true_division_of_ints", lambda L: L.tensor([3]) / L.tensor([2])),
    ("tril_indices", lambda L: L.tril_indices(2, 2)),
    # an integer tensor with a Python float, and where() of two Python numbers
    ("int_tensor_times_float", lambda L: L.tensor([3]) * 2.5),
    ("float_plus_int_tensor", lambda L: 0.5 + L.tensor([3])),
    ("where_of_numbers", lambda L: L.where(L.tensor([True, False]), 1, 2.5)),
]


@pytest.mark.parametrize("default", ["float64", "float32"])
def test_every_creation_function_follows_the_default_dtype(default):
    before = vk.get_default_dtype()
    try:
        torch.set_default_dtype(getattr(torch, default))
        vk.set_default_dtype(getattr(vk, default))
        assert vk.get_default_dtype() == getattr(vk, default)
        for name, f in DEFAULT_DTYPE_MAKERS:
            with torch.device("cpu"):
                expected = str(f(torch).dtype).split(".")[-1]
            assert f(vk).dtype.name == expected, (name, default)
        # printing leaves out the default dtype, as torch
        assert repr(vk.tensor([1.5])) == repr(torch.tensor([1.5])).replace("torch", "vkml")
        other = vk.float32 if default == "float64" else vk.float64
        assert repr(vk.tensor([1.5], dtype=other)) == repr(
            torch.tensor([1.5], dtype=getattr(torch, other.name))).replace("torch", "vkml")
    finally:
        torch.set_default_dtype(torch.float32)
        vk.set_default_dtype(before)
    # resetting restores what every function makes
    assert vk.get_default_dtype() == vk.float32
    assert vk.zeros(1).dtype == vk.float32 and vk.tensor([1.5]).dtype == vk.float32
    assert vk.sqrt(vk.tensor([4])).dtype == vk.float32


def test_set_default_dtype_refuses_non_float():
    with pytest.raises(vk.DTypeError, match="set_default_dtype"):
        vk.set_default_dtype(vk.int64)
    assert vk.get_default_dtype() == vk.float32


# ---- in-place view ops: the tensor's own shape changes, its memory stays ----

VIEW_INPLACE = [
    ("t_", lambda x: x.t_()), ("transpose_", lambda x: x.transpose_(0, 2)),
    ("swapaxes_", lambda x: x.swapaxes_(1, 2)), ("swapdims_", lambda x: x.swapdims_(0, 1)),
    ("squeeze_", lambda x: x.squeeze_()), ("squeeze_dim", lambda x: x.squeeze_(1)),
    ("unsqueeze_", lambda x: x.unsqueeze_(-1)),
]


@pytest.mark.parametrize("name,f", VIEW_INPLACE, ids=[n for n, _ in VIEW_INPLACE])
def test_inplace_view_ops_match_torch(name, f):
    a = np.arange(6.0).reshape((1, 2, 3) if name != "t_" else (2, 3))
    t, v = torch.tensor(a), vk.tensor(a)
    before = v._version
    assert f(v) is v
    f(t)
    assert tuple(v.shape) == tuple(t.shape) and v._version > before
    assert_close(v, t, what=name)
    v.add_(1.0)  # still the same memory: a view taken before sees the write
    leaf = vk.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match=name.split("_dim")[0].rstrip("_") + "_"):
        f(leaf)
    with vk.no_grad():
        f(leaf)
    assert tuple(leaf.shape) == tuple(t.shape)


@pytest.mark.parametrize("name,f", VIEW_INPLACE, ids=[n for n, _ in VIEW_INPLACE])
def test_inplace_view_ops_on_a_result_record_as_torch_regression(name, f):
    # y.t_() on a result while recording was refused; torch's y takes the view's history
    a = np.arange(6.0).reshape((1, 2, 3) if name != "t_" else (2, 3)) - 2.5
    got = []
    for lib in (vk, torch):
        x = lib.tensor(a, requires_grad=True)
        y = x * 2
        row = y[0]  # taken before: keeps its shape
        before = y._version
        assert f(y) is y and y._version > before and not y.is_leaf
        w = lib.tensor(np.linspace(-1.0, 1.0, y.numel()).reshape(tuple(y.shape)))
        ((y * w).sum() + (row ** 2).sum()).backward()
        got.append((tuple(y.shape), tuple(row.shape), x.grad.numpy().copy()))
    assert got[0][:2] == got[1][:2]
    assert_close(got[0][2], got[1][2], what=name)


def test_inplace_view_of_a_saved_tensor_makes_backward_raise():
    a = vk.ones(2, 2, requires_grad=True)
    b = vk.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = (a * b).sum()
    b.t_()  # square: without the version counter the gradient would silently be b.T
    with pytest.raises(RuntimeError, match="modified|version"):
        y.backward()


def test_inplace_view_shares_memory_with_earlier_views():
    x = vk.zeros(2, 3)
    row = x[0]
    x.t_()
    x[1, 0] = 5.0
    assert row.tolist() == [0.0, 5.0, 0.0]


# ---- scatter_reduce's prod/amax/amin without a host read (issue #14): reduced per destination by
# doubling over the sorted values; gradients with ties and zeros against torch, and the one place
# where vkml's rule is not torch's against central differences ----

def _tied(shape, seed):
    return np.random.default_rng(seed).integers(-2, 3, shape).astype(np.float64)  # ties, zeros


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("device", devices())
def test_scatter_reduce_gradients_with_ties_and_zeros_match_torch(reduce, device):
    x, src = _tied((3, 4), 1), _tied((5, 4), 2)
    index = np.random.default_rng(3).integers(0, 3, (5, 4))
    g = np.random.default_rng(4).standard_normal((3, 4))
    for include_self in ([True, False] if reduce == "prod" else [True]):
        tx, ts = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
        vx = vk.tensor(x, requires_grad=True, device=device)
        vs = vk.tensor(src, requires_grad=True, device=device)
        t = tx.scatter_reduce(0, torch.tensor(index), ts, reduce, include_self=include_self)
        v = vx.scatter_reduce(0, vk.tensor(index, device=device), vs, reduce,
                              include_self=include_self)
        np.testing.assert_array_equal(to_np(v), to_np(t))
        t.backward(torch.tensor(g))
        v.backward(vk.tensor(g, device=device))
        np.testing.assert_allclose(to_np(vx.grad), to_np(tx.grad), atol=1e-12)
        np.testing.assert_allclose(to_np(vs.grad), to_np(ts.grad), atol=1e-12)


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradients_match_central_differences(reduce, include_self):
    rng = np.random.default_rng(5)
    index = vk.tensor(rng.integers(0, 3, (5, 2)))
    check_fd(lambda a, b: a.scatter_reduce(0, index, b, reduce, include_self=include_self),
             [rng.uniform(0.5, 2.0, (3, 2)), rng.uniform(0.5, 2.0, (5, 2))])


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_excluded_self_equal_to_the_result_takes_no_share(reduce):
    # torch counts an excluded self that equals the result among the ties, then zeroes its share:
    # src[0], the only value taking part, got half its gradient. out[0] = src[0] here, so its
    # derivative is 1 (central differences agree); vkml gives 1.
    s = vk.tensor([3.0, 5.0], requires_grad=True)
    src = vk.tensor([3.0, 1.0] if reduce == "amax" else [3.0, 4.0], requires_grad=True)
    out = s.scatter_reduce(0, vk.tensor([0, 0]), src, reduce, include_self=False)
    out.backward(vk.ones(2))
    assert src.grad.tolist() == [1.0, 0.0]
    assert s.grad.tolist() == [0.0, 1.0]
    check_fd(lambda a, b: a.scatter_reduce(0, vk.tensor([0, 0]), b, reduce, include_self=False),
             [[3.0, 5.0], src.detach().tolist()])


def test_scatter_reduce_second_order_of_prod_and_amax():
    rng = np.random.default_rng(6)
    index = vk.tensor([0, 1, 0, 0])
    for reduce in ("prod", "amax"):
        x = vk.tensor(rng.uniform(0.5, 2.0, 2), requires_grad=True)
        src = vk.tensor(rng.uniform(0.5, 2.0, 4), requires_grad=True)
        assert vk.autograd.gradgradcheck(
            lambda a, b: a.scatter_reduce(0, index, b, reduce) ** 2, (x, src))
