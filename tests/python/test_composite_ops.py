"""Composite ops (ops/composite.h: torch functions built from the op table's ops) and the generic
in-place variants, against PyTorch: forward in float32 and float64, gradients (and second
derivatives on a subset) against torch's, gradients against finite differences in float64, error
types for bad input, and every case again with the vkml tensors on the Vulkan device."""

import math
import os

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, check_fd, to_np

INF = math.inf


def R(*shape):
    return ("randn", shape)


def P(*shape):  # positive, away from zero (divisors, norms' inputs)
    return ("pos", shape)


def A(values):
    return ("array", values)


def make(spec, rng, dtype):
    kind, v = spec
    if kind == "randn":
        return rng.standard_normal(v).astype(dtype)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, v).astype(dtype)
    return np.array(v, dtype=dtype)


class Case:
    def __init__(self, name, vkf, tf, inputs, grad=True, second=False, fd=True):
        self.name, self.vkf, self.tf, self.inputs = name, vkf, tf, inputs
        self.grad, self.second, self.fd = grad, second, fd


def same(name, inputs, **kw):
    """A case calling the same function path on vk and torch: name 'linalg.norm' etc."""
    def get(mod, dotted):
        for part in dotted.split("."):
            mod = getattr(mod, part)
        return mod
    fn_name, _, call = name.partition("(")
    args = kw.pop("args", ())
    kwargs = kw.pop("kwargs", {})
    return Case(name + (f"{args}{kwargs}" if args or kwargs else ""),
                lambda *xs: get(vk, fn_name)(*xs, *args, **kwargs),
                lambda *xs: get(torch, fn_name)(*xs, *args, **kwargs), inputs, **kw)


CASES = [
    same("lerp", [R(3, 4), R(4)], args=(0.3,), second=True),
    same("lerp", [R(2, 3), R(2, 3), R(3)], second=True),
    same("lerp", [R(2, 3), R(2, 3)], args=(1.7,)),
    same("addcmul", [R(3, 1), R(1, 4), R(3, 4)], kwargs=dict(value=0.5), second=True),
    same("addcmul", [R(3), R(3), R(3)]),
    same("addcdiv", [R(3, 4), R(3, 4), P(4)], kwargs=dict(value=-2), second=True),
    same("addcdiv", [R(2), R(2), P(2)]),
    same("outer", [R(3), R(4)], second=True),
    same("ger", [R(2), R(5)]),
    same("addmv", [R(2), R(2, 3), R(3)], kwargs=dict(beta=0.5, alpha=2)),
    same("addmv", [R(2), R(2, 3), R(3)]),
    same("addr", [R(2, 3), R(2), R(3)], kwargs=dict(beta=2, alpha=-1)),
    same("baddbmm", [R(3, 5), R(2, 3, 4), R(2, 4, 5)], kwargs=dict(beta=0.5, alpha=3)),
    same("baddbmm", [R(2, 3, 5), R(2, 3, 4), R(2, 4, 5)], second=True),
    same("addbmm", [R(3, 5), R(2, 3, 4), R(2, 4, 5)], kwargs=dict(alpha=0.5)),
    same("std_mean", [R(3, 4)], args=(1,), second=True),
    same("std_mean", [R(3, 4)], kwargs=dict(dim=(0, 1), correction=0, keepdim=True)),
    same("var_mean", [R(3, 4)], kwargs=dict(dim=0, unbiased=False)),
    same("var_mean", [R(5)]),
    same("diff", [R(6)], second=True),
    same("diff", [R(3, 5)], kwargs=dict(n=2, dim=0)),
    same("diff", [R(3, 5)], kwargs=dict(n=3)),
    Case("diff prepend append", lambda x, p, a: vk.diff(x, dim=1, prepend=p, append=a),
         lambda x, p, a: torch.diff(x, dim=1, prepend=p, append=a), [R(3, 4), R(3, 1), R(3, 2)]),
    same("roll", [R(3, 4)], args=(1,)),
    same("roll", [R(3, 4)], args=((1, -2), (0, 1))),
    same("roll", [R(3, 4)], kwargs=dict(shifts=5, dims=1)),
    same("roll", [R(3, 4)], kwargs=dict(shifts=-7)),
    same("repeat_interleave", [R(2, 3)], args=(2,)),
    same("repeat_interleave", [R(2, 3)], kwargs=dict(repeats=3, dim=1)),
    same("repeat_interleave", [R(2, 3)], kwargs=dict(repeats=2, dim=0, output_size=4)),
    same("cross", [R(4, 3), R(4, 3)], kwargs=dict(dim=1), second=True),
    same("cross", [R(3, 2), R(3, 1)], kwargs=dict(dim=0)),
    same("linalg.cross", [R(2, 3), R(1, 3)]),
    same("trace", [R(3, 4)]),
    same("diagonal", [R(3, 4)]),
    same("diagonal", [R(3, 4)], kwargs=dict(offset=1)),
    same("diagonal", [R(4, 3)], kwargs=dict(offset=-2)),
    same("diagonal", [R(2, 3, 4)], kwargs=dict(offset=1, dim1=2, dim2=0)),
    same("diag", [R(3)]),
    same("diag", [R(3)], args=(-1,)),
    same("diag", [R(3, 4)], args=(1,)),
    same("diag_embed", [R(2, 3)]),
    same("diag_embed", [R(2, 3)], kwargs=dict(offset=1, dim1=0, dim2=2)),
    same("tensordot", [R(2, 3, 4), R(3, 4, 5)]),
    same("tensordot", [R(2, 3, 4), R(4, 2)], kwargs=dict(dims=([0, 2], [1, 0]))),
    same("tensordot", [R(2, 3), R(4)], kwargs=dict(dims=0)),
    same("kron", [R(2, 3), R(2, 2)]),
    same("kron", [R(2), R(3, 2)]),
    same("unflatten", [R(2, 12)], args=(1, (3, -1))),
    same("dist", [R(3, 4), R(4)]),
    same("dist", [R(3, 4), R(3, 4)], args=(1,)),
    same("dist", [R(3, 4), R(3, 4)], args=(INF,)),
    same("dist", [R(3, 4), R(3, 4)], args=(0.5,)),
    same("cdist", [R(3, 4), R(5, 4)]),
    same("cdist", [R(2, 3, 4), R(2, 5, 4)], kwargs=dict(p=1.0)),
    same("cdist", [R(3, 4), R(5, 4)], kwargs=dict(p=3.0)),
    same("nan_to_num", [A([1.0, math.nan, INF, -INF, -2.5])], fd=False),
    same("nan_to_num", [A([1.0, math.nan, INF, -INF])], kwargs=dict(nan=1.5, posinf=9.0, neginf=-7),
         fd=False),
    same("nan_to_num", [R(3)]),
    same("trunc", [A([-1.7, -0.5, 0.5, 2.5, 3.0])], fd=False),
    same("clamp", [R(3, 4), R(4), R(3, 1)], fd=False),
    same("clamp_min", [R(3, 4)], args=(0.2,), fd=False),
    same("clamp_max", [R(3, 4)], args=(0.2,), fd=False),
]

# norms: vector (ord incl. inf, -inf, 0, fractional, negative), matrix, torch.norm, linalg.norm
for ord_ in (2, 1, INF, -INF, 0, 0.5, 3, -1, 1.5):
    CASES.append(same("linalg.vector_norm", [P(3, 4)], args=(ord_,), fd=ord_ != 0,
                      second=ord_ in (2, 3)))
    CASES.append(same("linalg.vector_norm", [R(3, 4)], args=(ord_,),
                      kwargs=dict(dim=1, keepdim=True), fd=ord_ not in (0,) and abs(ord_) != INF))
CASES += [
    same("linalg.vector_norm", [R(2, 3, 4)], kwargs=dict(dim=(0, 2))),
    Case("vector_norm dtype", lambda x: vk.linalg.vector_norm(x, dtype=vk.float64),
         lambda x: torch.linalg.vector_norm(x, dtype=torch.float64), [R(2, 3)]),
    same("norm", [R(3, 4)]),
    same("norm", [R(3, 4)], kwargs=dict(p=1, dim=1)),
    same("norm", [R(3, 4)], kwargs=dict(p="fro", dim=(0, 1), keepdim=True)),
    same("linalg.norm", [R(3, 4)]),
    same("linalg.norm", [R(3, 4)], args=(INF,)),
    same("linalg.norm", [R(4)], args=(3,)),
    same("linalg.norm", [R(2, 3, 4)], kwargs=dict(dim=(0, 2))),
    same("linalg.norm", [R(2, 3, 4)], kwargs=dict(ord=-1, dim=(2, 1), keepdim=True)),
]
for ord_ in ("fro", 1, -1, INF, -INF):
    CASES.append(same("linalg.matrix_norm", [R(2, 3, 4)], args=(ord_,)))
    CASES.append(same("linalg.matrix_norm", [R(3, 4, 2)], args=(ord_,),
                      kwargs=dict(dim=(0, 1), keepdim=True)))

# einsum: explicit, implicit, ellipsis, traces and diagonals, three operands, broadcasting
for eq, shapes in [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iji->j", [(3, 2, 3)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (2,)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk,ikl,ilm->jm", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,j", [(2, 3), (1,)]),
    ("Ab,bA->", [(2, 3), (3, 2)]),
    ("...,...", [(2, 3), (3,)]),
    ("i...->...", [(2, 3, 4)]),
]:
    CASES.append(Case(f"einsum {eq}", lambda *xs, eq=eq: vk.einsum(eq, *xs),
                      lambda *xs, eq=eq: torch.einsum(eq, *xs), [R(*s) for s in shapes],
                      second=eq in ("ij,jk->ik", "ii->i")))
CASES.append(Case("einsum list", lambda a, b: vk.einsum("ij,jk", [a, b]),
                  lambda a, b: torch.einsum("ij,jk", [a, b]), [R(2, 3), R(3, 2)]))
# meshgrid: tuple outputs; the gradient flows back through the expanded views
for indexing in ("ij", "xy"):
    CASES.append(Case(f"meshgrid {indexing}",
                      lambda *xs, i=indexing: vk.stack(vk.meshgrid(*xs, indexing=i)),
                      lambda *xs, i=indexing: torch.stack(torch.meshgrid(*xs, indexing=i)),
                      [R(3), R(4), R(2)]))
# bool results (no gradient): logical ops, isclose, nan/inf included
SPECIAL = A([0.0, 1.0, -2.0, math.nan, INF, -INF, 1e-9, 0.0])
SPECIAL2 = A([0.0, 1.0 + 1e-6, -2.0, math.nan, INF, INF, 0.0, -0.0])
for name in ("logical_and", "logical_or", "logical_xor"):
    CASES.append(same(name, [SPECIAL, SPECIAL2], grad=False))
CASES += [
    same("logical_not", [SPECIAL], grad=False),
    same("isclose", [SPECIAL, SPECIAL2], grad=False),
    same("isclose", [SPECIAL, SPECIAL2], kwargs=dict(equal_nan=True, rtol=0.1), grad=False),
    same("isclose", [SPECIAL, SPECIAL2], kwargs=dict(rtol=0, atol=0), grad=False),
    same("isclose", [R(3, 4), R(4)], kwargs=dict(atol=1.0), grad=False),
]
# empty and 0-d inputs
CASES += [
    same("linalg.vector_norm", [R(0, 3)], grad=False),
    same("linalg.vector_norm", [R()], fd=False),
    same("diff", [R(0)], grad=False),
    same("roll", [R(0, 2)], args=(1, 0), grad=False),
    same("roll", [R()], args=(1,), grad=False),
    same("outer", [R(0), R(3)], grad=False),
    same("lerp", [R(), R()], args=(0.5,)),
    same("isclose", [R(0), R(0)], grad=False),
    same("trace", [R(0, 0)], grad=False),
]


def _params():
    for i, c in enumerate(CASES):
        for dtype in ("float32", "float64"):
            yield pytest.param(i, dtype, id=f"{i}-{c.name}-{dtype}")


def _require_vulkan():
    if not vk.vulkan.is_available():
        if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
            pytest.fail("VKML_REQUIRE_VULKAN=1 but the vulkan device is not available")
        pytest.skip("no vulkan device")


def _outputs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def run_case(c, dtype, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [make(s, rng, dtype) for s in c.inputs]
    grad = c.grad and dtype in ("float32", "float64")
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    vs = [vk.tensor(a, requires_grad=grad) for a in arrays]
    tout, vout = _outputs(c.tf(*ts)), _outputs(c.vkf(*vs))
    assert len(tout) == len(vout)
    for t, v in zip(tout, vout):
        assert str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (v.dtype, t.dtype)
        assert_close(v, t, dtype, what=f"{c.name} forward")
    if not grad:
        return
    ups = [rng.uniform(-1, 1, tuple(t.shape)).astype(dtype) for t in tout]
    tg = torch.autograd.grad(tout, ts, [torch.tensor(u) for u in ups], allow_unused=True,
                             create_graph=c.second)
    vg = vk.autograd.grad(vout, vs, [vk.tensor(u) for u in ups], allow_unused=True,
                          create_graph=c.second)
    for k, (a, e) in enumerate(zip(vg, tg)):
        if e is None or (not e.requires_grad and c.second and False):
            continue
        assert a is not None, f"{c.name}: input {k} got no gradient"
        assert_close(a, e, dtype, what=f"{c.name} grad {k}")
    if c.second:
        pairs = [(a, e) for a, e in zip(vg, tg) if e is not None and e.requires_grad]
        if not pairs:
            return
        ws = [rng.uniform(-1, 1, tuple(e.shape)).astype(dtype) for _, e in pairs]
        ts2 = sum((e * torch.tensor(w)).sum() for (_, e), w in zip(pairs, ws))
        vs2 = sum((a * vk.tensor(w)).sum() for (a, _), w in zip(pairs, ws))
        tgg = torch.autograd.grad(ts2, ts, allow_unused=True)
        vgg = vk.autograd.grad(vs2, vs, allow_unused=True)
        for k, (a, e) in enumerate(zip(vgg, tgg)):
            if e is None:
                continue
            if a is None:  # vkml prunes a zero second derivative
                assert not np.any(to_np(e)), f"{c.name}: second derivative {k} missing"
                continue
            assert_close(a, e, dtype, what=f"{c.name} second derivative {k}")


@pytest.mark.parametrize("i,dtype", list(_params()))
def test_composite_matches_torch(i, dtype):
    run_case(CASES[i], dtype)


@pytest.mark.parametrize("i", [pytest.param(i, id=f"{i}-{c.name}") for i, c in enumerate(CASES)
                               if c.grad and c.fd])
def test_composite_gradient_vs_finite_differences(i):
    c = CASES[i]
    rng = np.random.default_rng(1)
    arrays = [make(s, rng, "float64") for s in c.inputs]
    if not arrays or any(a.size == 0 for a in arrays):
        return
    def flat(*xs):  # several outputs (std_mean) checked as one vector
        outs = _outputs(c.vkf(*xs))
        return outs[0] if len(outs) == 1 else vk.cat([o.reshape(-1) for o in outs])
    check_fd(flat, arrays, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("i", [pytest.param(i, id=f"{i}-{c.name}-vulkan")
                               for i, c in enumerate(CASES)])
def test_composite_matches_torch_on_vulkan(i):
    _require_vulkan()
    vk.set_default_device("vulkan")
    try:
        run_case(CASES[i], "float32")
    finally:
        vk.set_default_device("cpu")


def test_vulkan_results_stay_on_the_device():
    _require_vulkan()
    x = vk.randn(3, 4).to("vulkan")
    for r in (vk.linalg.vector_norm(x), vk.roll(x, 1), vk.einsum("ij,kj->ik", x, x),
              vk.lerp(x, x, 0.5), vk.diff(x)):
        assert r.device.type == "vulkan"


def test_repeat_interleave_tensor_repeats():
    x = np.arange(6.0).reshape(2, 3)
    for reps, dim in (([1, 0, 2], 1), ([2, 1], 0), ([1, 2, 0, 1, 1, 3], None)):
        t = torch.tensor(x, requires_grad=True)
        v = vk.tensor(x, requires_grad=True)
        e = torch.repeat_interleave(t, torch.tensor(reps), dim=dim)
        a = vk.repeat_interleave(v, vk.tensor(reps), dim=dim)
        assert_close(a, e)
        e.sum().backward()
        a.sum().backward()
        assert_close(v.grad, t.grad)
    assert_close(vk.repeat_interleave(vk.tensor([2, 0, 1])),
                 torch.repeat_interleave(torch.tensor([2, 0, 1])))


def test_allclose_and_equal():
    a = vk.tensor([1.0, 2.0, math.nan])
    assert vk.allclose(a, a, equal_nan=True) and not vk.allclose(a, a)
    assert vk.allclose(vk.tensor([1.0, 2.0]), vk.tensor([1.0, 2.0 + 1e-7]))
    assert not vk.allclose(vk.tensor([1.0, 2.0]), vk.tensor([1.0, 2.1]))
    assert vk.tensor([1.0]).allclose(vk.tensor([1.0 + 1e-9]))
    assert vk.equal(vk.tensor([1, 2]), vk.tensor([1, 2]))
    assert not vk.equal(vk.tensor([1, 2]), vk.tensor([1, 3]))


def test_nan_to_num_defaults_per_dtype():
    x = np.array([math.nan, INF, -INF])
    for dt in (np.float32, np.float64):
        assert_close(vk.nan_to_num(vk.tensor(x.astype(dt))),
                     torch.nan_to_num(torch.tensor(x.astype(dt))))
    assert_close(vk.nan_to_num(vk.tensor([1, 2])), torch.nan_to_num(torch.tensor([1, 2])))


def test_gradcheck_in_float64():
    # vk.autograd.gradcheck (the core's finite differences) on a few composites
    rng = np.random.default_rng(3)
    a = vk.tensor(rng.uniform(0.5, 2, (3, 4)), requires_grad=True)
    b = vk.tensor(rng.uniform(0.5, 2, (4,)), requires_grad=True)
    for f in (lambda x, y: vk.lerp(x, y, 0.25), lambda x, y: vk.addcdiv(x, x, y, value=0.5),
              lambda x, y: vk.linalg.vector_norm(x * y, 0.5, dim=1),
              lambda x, y: vk.einsum("ij,j->i", x, y)):
        assert vk.autograd.gradcheck(f, (a, b))


def test_norm_gradient_at_zero_is_zero_as_torch():
    for ord_ in (2, 0.5, 1, 3):
        v = vk.zeros(3, dtype=vk.float64, requires_grad=True)
        t = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        vk.linalg.vector_norm(v, ord_).backward()
        torch.linalg.vector_norm(t, ord_).backward()
        assert_close(v.grad, t.grad, what=f"ord {ord_}")


def test_baddbmm_beta_zero_ignores_nan_input():
    inp = np.full((2, 2, 2), math.nan)
    b1, b2 = np.ones((2, 2, 3)), np.ones((2, 3, 2))
    assert_close(vk.baddbmm(vk.tensor(inp), vk.tensor(b1), vk.tensor(b2), beta=0),
                 torch.baddbmm(torch.tensor(inp), torch.tensor(b1), torch.tensor(b2), beta=0))


def test_fill_diagonal_and_index_fill():
    for shape, wrap in (((3, 3), False), ((5, 2), False), ((7, 3), True), ((2, 5), False),
                        ((3, 3, 3), False)):
        t = torch.zeros(shape)
        v = vk.zeros(*shape)
        t.fill_diagonal_(2.5, wrap=wrap)
        assert v.fill_diagonal_(2.5, wrap=wrap) is v
        assert_close(v, t, what=f"{shape} wrap={wrap}")
    x = np.arange(12.0).reshape(3, 4)
    for dim, idx in ((0, [0, 2]), (1, [-1, 1, 1]), (1, [])):
        e = torch.tensor(x).index_fill(dim, torch.tensor(idx, dtype=torch.long), -1.0)
        a = vk.tensor(x).index_fill(dim, vk.tensor(idx, dtype=vk.int64), -1.0)
        assert_close(a, e)
    with pytest.raises(IndexError):
        vk.tensor(x).index_fill(0, vk.tensor([3]), 0.0)


# ---- errors: the type torch raises, for the same bad input ----

ERRORS = [
    ("lerp dtype", lambda m, f64: m.lerp(m.ones(3), m.ones(3, dtype=f64), 0.5)),
    ("lerp int", lambda m, f64: m.lerp(m.tensor([1, 2]), m.tensor([1, 2]), 0.5)),
    ("addcdiv ints", lambda m, f64: m.addcdiv(m.ones(2), m.tensor([1, 2]), m.tensor([1, 2]))),
    ("addcmul shape", lambda m, f64: m.addcmul(m.ones(2), m.ones(3), m.ones(3))),
    ("outer 2-D", lambda m, f64: m.outer(m.ones(2, 2), m.ones(2))),
    ("baddbmm 4-D", lambda m, f64: m.baddbmm(m.ones(2, 2), m.ones(1, 2, 2, 2), m.ones(2, 2, 2))),
    ("baddbmm input", lambda m, f64: m.baddbmm(m.ones(3, 2, 2), m.ones(2, 2, 2), m.ones(2, 2, 2))),
    ("addmv shape", lambda m, f64: m.addmv(m.ones(2), m.ones(2, 3), m.ones(4))),
    ("isclose dtype", lambda m, f64: m.isclose(m.ones(3), m.ones(3, dtype=f64))),
    ("isclose rtol", lambda m, f64: m.isclose(m.ones(3), m.ones(3), rtol=-1)),
    ("diff 0-d", lambda m, f64: m.diff(m.tensor(1.0))),
    ("diff n", lambda m, f64: m.diff(m.ones(3), n=-1)),
    ("diff dim", lambda m, f64: m.diff(m.ones(3), dim=2)),
    ("roll align", lambda m, f64: m.roll(m.ones(4), (1, 2), (0,))),
    ("roll no dims", lambda m, f64: m.roll(m.ones(4), (1, 2))),
    ("roll dim", lambda m, f64: m.roll(m.ones(4), 1, 5)),
    ("meshgrid dtype", lambda m, f64: m.meshgrid(m.ones(2), m.ones(2, dtype=f64), indexing="ij")),
    ("meshgrid indexing", lambda m, f64: m.meshgrid(m.ones(2), indexing="foo")),
    ("meshgrid 2-D", lambda m, f64: m.meshgrid(m.ones(2, 2), indexing="ij")),
    ("vector_norm int", lambda m, f64: m.linalg.vector_norm(m.tensor([1, 2]))),
    ("vector_norm inf empty", lambda m, f64: m.linalg.vector_norm(m.ones(0), INF)),
    ("vector_norm dim", lambda m, f64: m.linalg.vector_norm(m.ones(2), dim=3)),
    ("matrix_norm 1-D", lambda m, f64: m.linalg.matrix_norm(m.ones(3))),
    ("matrix_norm ord", lambda m, f64: m.linalg.matrix_norm(m.ones(2, 2), 3)),
    ("matrix_norm name", lambda m, f64: m.linalg.matrix_norm(m.ones(2, 2), "foo")),
    ("cross size", lambda m, f64: m.linalg.cross(m.ones(2, 4), m.ones(2, 4))),
    ("cross none", lambda m, f64: m.cross(m.ones(2, 4), m.ones(2, 4))),
    ("cross ndim", lambda m, f64: m.linalg.cross(m.ones(2, 3), m.ones(3))),
    ("cross broadcast 1", lambda m, f64: m.cross(m.ones(3, 2), m.ones(1, 2), dim=0)),
    ("repeat negative", lambda m, f64: m.repeat_interleave(m.ones(3), -1)),
    ("repeat size", lambda m, f64: m.repeat_interleave(m.ones(3), m.tensor([1, 2]))),
    ("repeat output_size", lambda m, f64: m.repeat_interleave(m.ones(3), 2, output_size=5)),
    ("einsum size", lambda m, f64: m.einsum("ij,jk", m.ones(2, 3), m.ones(4, 2))),
    ("einsum few", lambda m, f64: m.einsum("ij,jk->ik", m.ones(2, 3))),
    ("einsum many", lambda m, f64: m.einsum("ij->ij", m.ones(2, 3), m.ones(2))),
    ("einsum output", lambda m, f64: m.einsum("ij->ik", m.ones(2, 3))),
    ("einsum subscript", lambda m, f64: m.einsum("i1->i", m.ones(2, 3))),
    ("einsum ndim", lambda m, f64: m.einsum("ijk->i", m.ones(2, 3))),
    ("trace 3-D", lambda m, f64: m.trace(m.ones(2, 2, 2))),
    ("dist shape", lambda m, f64: m.dist(m.ones(3), m.ones(2))),
    ("cdist cols", lambda m, f64: m.cdist(m.ones(2, 3), m.ones(2, 4))),
    ("tensordot size", lambda m, f64: m.tensordot(m.ones(2, 3), m.ones(4, 2), dims=([1], [0]))),
    ("diagonal same dims", lambda m, f64: m.diagonal(m.ones(2, 2), 0, 1, 1)),
    ("unflatten sizes", lambda m, f64: m.ones(2, 6).unflatten(1, (4, 2))),
    # regression: the product of the sizes overflowed int64 (UBSan stopped the binding sweep)
    ("unflatten sizes overflow",
     lambda m, f64: m.ones(2, 270).unflatten(1, (135, 4374082053107712000))),
    ("unflatten negative size", lambda m, f64: m.ones(2, 270).unflatten(1, (-2, -135))),
    ("exp_ int", lambda m, f64: m.tensor([1, 2]).exp_()),
    ("sub_ shape", lambda m, f64: m.ones(3).sub_(m.ones(2, 3))),
]


SHAPE_ERRORS = {"addcmul shape", "dist shape", "sub_ shape", "baddbmm input", "addmv shape"}


@pytest.mark.parametrize("name,f", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_type_matches_torch(name, f):
    with pytest.raises(Exception) as te:
        f(torch, torch.float64)
    with pytest.raises(Exception) as ve:
        f(vk, vk.float64)
    expected = type(te.value)
    if name in SHAPE_ERRORS:  # vkml's contract: shapes that do not broadcast are vk.ShapeError
        expected = vk.ShapeError
    assert isinstance(ve.value, expected), (
        f"{name}: vkml raised {type(ve.value).__name__}({ve.value}), torch "
        f"{type(te.value).__name__}({te.value})")


def test_nuclear_and_spectral_norms_match_torch():
    # (they raised NotImplementedError before the svd op; test_linalg_svd.py has the rest)
    a = np.array([[1.0, 2.0], [3.0, -4.0]])
    for ord_ in ("nuc", 2, -2):
        assert abs(vk.linalg.matrix_norm(vk.tensor(a), ord_).item() -
                   torch.linalg.matrix_norm(torch.tensor(a), ord_).item()) < 1e-12
    assert abs(vk.norm(vk.tensor(a), "nuc").item() - torch.norm(torch.tensor(a), "nuc").item()) < 1e-12


# ---- in-place variants ----

INPLACE = [
    ("exp_", (), "randn"), ("log_", (), "pos"), ("sqrt_", (), "pos"), ("abs_", (), "randn"),
    ("neg_", (), "randn"), ("sigmoid_", (), "randn"), ("tanh_", (), "randn"),
    ("relu_", (), "randn"), ("floor_", (), "randn"), ("ceil_", (), "randn"),
    ("round_", (), "randn"), ("trunc_", (), "randn"), ("sign_", (), "randn"),
    ("reciprocal_", (), "pos"), ("rsqrt_", (), "pos"), ("sin_", (), "randn"),
    ("cos_", (), "randn"), ("log1p_", (), "pos"), ("expm1_", (), "randn"),
    ("erf_", (), "randn"), ("square_", (), "randn"), ("negative_", (), "randn"),
    ("pow_", (2.0,), "randn"), ("pow_", ("T",), "pos"),
    ("sub_", ("T",), "randn"), ("sub_", (2.0,), "randn"), ("sub_", ("T", {"alpha": 3}), "randn"),
    ("div_", ("T", {"rounding_mode": "floor"}), "randn"), ("mul_", (1.5,), "randn"),
    ("add_", ("T", {"alpha": -2}), "randn"), ("clamp_", (-0.5, 0.5), "randn"),
    ("clamp_min_", (0.1,), "randn"), ("clamp_max_", (0.1,), "randn"),
    ("clamp_", ("T",), "randn"), ("clip_", (-0.2, 0.3), "randn"),
    ("lerp_", ("T", 0.3), "randn"), ("lerp_", ("T", "T"), "randn"),
    ("addcmul_", ("T", "T", {"value": 2}), "randn"), ("addcdiv_", ("T", "P", {"value": 0.5}), "randn"),
    ("masked_fill_", ("M", 7.0), "randn"), ("nan_to_num_", (), "special"),
    ("remainder_", (0.7,), "randn"), ("floor_divide_", (0.7,), "randn"),
    ("index_fill_", (1, "I", -3.0), "randn"), ("logical_not_", (), "randn"),
    ("logical_and_", ("T",), "randn"), ("true_divide_", ("T",), "pos"),
]


def _inplace_args(args, rng, lib):
    out, kwargs = [], {}
    for a in args:
        if isinstance(a, dict):
            kwargs = a
        elif a == "T":
            out.append(("randn", (3, 4)))
        elif a == "P":
            out.append(("pos", (4,)))
        elif a == "M":
            out.append(("array", np.arange(12).reshape(3, 4) % 3 == 0))
        elif a == "I":
            out.append(("array", np.array([0, 2])))
        else:
            out.append(a)
    arrays = [make(s, rng, "float64") if isinstance(s, tuple) and s[0] != "array"
              else (s[1] if isinstance(s, tuple) else s) for s in out]
    return arrays, kwargs


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
@pytest.mark.parametrize("method,args,init", INPLACE, ids=[f"{m}-{i}" for i, (m, _, _) in
                                                              enumerate(INPLACE)])
def test_inplace_matches_torch(method, args, init, device):
    if device == "vulkan":
        _require_vulkan()
    rng = np.random.default_rng(5)
    x0 = (make(("randn" if init != "pos" else "pos", (3, 4)), rng, "float32") if init != "special"
          else np.array([[1.0, math.nan, INF, -INF]] * 3, dtype=np.float32))
    arrays, kwargs = _inplace_args(args, rng, None)

    def conv(lib, a):
        if isinstance(a, np.ndarray):
            if lib is torch:
                return torch.tensor(a.astype(np.float32) if a.dtype == np.float64 else a)
            t = vk.tensor(a.astype(np.float32) if a.dtype == np.float64 else a)
            return t.to(device)
        return a

    t = torch.tensor(x0)
    v = vk.tensor(x0).to(device)
    version = v._version
    r = getattr(v, method)(*[conv(vk, a) for a in arrays], **kwargs)
    getattr(t, method)(*[conv(torch, a) for a in arrays], **kwargs)
    assert r is v
    assert v._version > version
    assert_close(v, t, "float32", what=method)


@pytest.mark.parametrize("method,args", [("exp_", ()), ("lerp_", (1.0, 0.5)),
                                         ("addcmul_", (1.0, 1.0)), ("clamp_min_", (0.0,)),
                                         ("sub_", (1.0,)), ("div_", (2.0,)),
                                         ("fill_diagonal_", (0.0,))])
def test_inplace_on_leaf_requiring_grad_raises(method, args):
    def fix(lib, a):
        return lib.ones(2, 2) if method in ("lerp_", "addcmul_") and a == 1.0 else a
    x = vk.ones(2, 2, requires_grad=True)
    t = torch.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError):
        getattr(t, method)(*[fix(torch, a) for a in args])
    with pytest.raises(RuntimeError, match=method):
        getattr(x, method)(*[fix(vk, a) for a in args])
    with vk.no_grad():  # allowed, as torch's optimizer updates
        getattr(x, method)(*[fix(vk, a) for a in args])


def test_inplace_with_a_value_requiring_grad_is_recorded():
    w = vk.ones(3, requires_grad=True)
    x = vk.zeros(3)
    assert x.lerp_(w, 0.5) is x and x.requires_grad
    x.sum().backward()
    assert w.grad.tolist() == [0.5, 0.5, 0.5]


def test_inplace_modifying_a_saved_tensor_raises_at_backward():
    for method, args in (("exp_", ()), ("sub_", (1.0,)), ("lerp_", (vk.zeros(3), 0.5)),
                         ("clamp_min_", (0.0,))):
        a = vk.ones(3, requires_grad=True)
        b = vk.tensor([1.0, 2.0, 3.0])
        y = a * b  # saves b
        getattr(b, method)(*args)
        with pytest.raises(RuntimeError):
            y.sum().backward()


def test_inplace_into_int_tensor_casts_or_raises_as_torch():
    v = vk.tensor([1, 2, 3])
    v.clamp_min_(2)
    assert v.tolist() == [2, 2, 3] and v.dtype == vk.int64
    with pytest.raises(RuntimeError):
        vk.tensor([1, 2]).sqrt_()
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2]).sqrt_()


def test_inplace_through_a_view_writes_the_base():
    t = torch.arange(12.0).reshape(3, 4)
    v = vk.arange(12.0).reshape(3, 4)
    t[:, 1].exp_()
    v[:, 1].exp_()
    assert_close(v, t, "float32")
    v.T.sigmoid_()
    t.T.sigmoid_()
    assert_close(v, t, "float32")


def test_where_with_one_argument_is_nonzero_as_tuple():
    for data in ([[0, 1], [2, 0]], [0.0, 1.5, 0.0, -2.0], True, [[False, True, True]]):
        a = vk.where(vk.tensor(data))
        e = torch.where(torch.tensor(data))
        assert len(a) == len(e)
        for x, y in zip(a, e):
            assert_close(x, y)


def test_tensordot_dims_zero_is_an_outer_product_regression():
    # wrap_dims reads an empty dim list as "all dims": dims=0 contracted every dim and raised
    a, b = np.arange(6.0).reshape(2, 3), np.arange(4.0)
    assert_close(vk.tensordot(vk.tensor(a), vk.tensor(b), dims=0),
                 torch.tensordot(torch.tensor(a), torch.tensor(b), dims=0))
    assert_close(vk.tensordot(vk.tensor(a), vk.tensor(a), dims=([1, 0], [1, 0])),
                 torch.tensordot(torch.tensor(a), torch.tensor(a), dims=([1, 0], [1, 0])))


def test_einsum_implicit_output_leaves_out_a_repeated_subscript_regression():
    # "ii" counts i twice: the implicit output is a trace (0-d), not the diagonal
    a = np.arange(9.0).reshape(3, 3)
    assert_close(vk.einsum("ii", vk.tensor(a)), torch.einsum("ii", torch.tensor(a)))
    assert_close(vk.einsum("ij,jj", vk.tensor(a), vk.tensor(a)),
                 torch.einsum("ij,jj", torch.tensor(a), torch.tensor(a)))


def test_diag_embed_keeps_nan_off_the_diagonal():
    x = np.array([[math.nan, 1.0]])
    assert_close(vk.diag_embed(vk.tensor(x), 1), torch.diag_embed(torch.tensor(x), 1))
    assert_close(vk.diag(vk.tensor([math.nan, INF])), torch.diag(torch.tensor([math.nan, INF])))
