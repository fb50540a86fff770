"""The solver family (#15 linalg) against torch: lu_factor / lu_factor_ex, solve_triangular,
solve, inv / inverse, det, slogdet, logdet, matrix_power, triangular_solve, lu / lu_unpack /
lu_solve, cholesky / cholesky_ex, cholesky_solve and cholesky_inverse: values (float64 to
1e-10, float32 to 1e-4 relative: LAPACK's blocked order against vkml's unblocked one), gradients
against torch and finite differences (float64), batched and broadcast inputs, the Vulkan device
(float32 and float64), singular matrices and typed errors."""
import numpy as np
import pytest
import torch

import vkml as vk
from conftest import devices, to_np

RNG = np.random.default_rng(15)


def well_conditioned(*shape):
    """Random matrices plus 4 * a cyclic permutation: invertible, and pivoting swaps rows."""
    n = shape[-1]
    return RNG.uniform(-1, 1, size=shape) + 4.0 * np.roll(np.eye(n), 1, axis=1)


def pair(a, device="cpu", dtype="float64", grad=False):
    v = vk.tensor(a, dtype=getattr(vk, dtype), requires_grad=grad)
    if device != "cpu":
        v = v.detach().to(device).requires_grad_(grad)
    return v, torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)


def close(v, t, dtype="float64"):
    tol = 1e-10 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(to_np(v), to_np(t), rtol=tol, atol=tol)


def mats(sa, sb=None):
    """A well-conditioned (permuted) A, and B when sb is given."""
    return lambda: [well_conditioned(*sa)] + ([RNG.uniform(-1, 1, size=sb)] if sb else [])


def spd(m, a):
    """A symmetric positive-definite matrix (A A^T of a well-conditioned A)."""
    return a @ a.mT


def tri(sa, sb, dominant=True, a_first=True):
    """A triangular-solve operand (3 added on the diagonal unless unitriangular) and B."""
    def make():
        a = RNG.uniform(-1, 1, size=sa) + (3.0 * np.eye(sa[-1]) if dominant else 0.0)
        b = RNG.uniform(-1, 1, size=sb)
        return [a, b] if a_first else [b, a]
    return make


CASES = [
    ("solve", lambda m, a, b: m.linalg.solve(a, b), mats((3, 3), (3, 2))),
    ("solve-vector", lambda m, a, b: m.linalg.solve(a, b), mats((4, 4), (4,))),
    ("solve-batched-broadcast", lambda m, a, b: m.linalg.solve(a, b), mats((2, 1, 3, 3), (4, 3, 2))),
    ("solve-batched-vector", lambda m, a, b: m.linalg.solve(a, b), mats((2, 3, 3), (2, 3))),
    ("solve-right", lambda m, a, b: m.linalg.solve(a, b, left=False), mats((3, 3), (2, 3))),
    ("inv", lambda m, a: m.linalg.inv(a), mats((2, 4, 4))),
    ("inverse", lambda m, a: m.inverse(a), mats((3, 3))),
    ("det", lambda m, a: m.linalg.det(a), mats((2, 3, 3))),
    ("det-method", lambda m, a: a.det(), mats((4, 4))),
    ("slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), mats((2, 3, 3))),
    ("slogdet-top", lambda m, a: tuple(m.slogdet(a)), mats((3, 3))),
    ("logdet", lambda m, a: m.logdet(a), mats((2, 3, 3))),
    ("matrix_power3", lambda m, a: m.linalg.matrix_power(a, 3), mats((3, 3))),
    ("matrix_power-2", lambda m, a: m.linalg.matrix_power(a, -2), mats((2, 3, 3))),
    ("matrix_power0", lambda m, a: a.matrix_power(0), mats((3, 3))),
    ("lu_factor", lambda m, a: tuple(m.linalg.lu_factor(a)), mats((2, 4, 4))),
    ("lu_factor_ex", lambda m, a: tuple(m.linalg.lu_factor_ex(a)), mats((3, 3))),
    ("solve_triangular-upper", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
     tri((3, 3), (3, 4))),
    ("solve_triangular-lower-right", lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=False, left=False), tri((3, 3), (2, 3))),
    ("solve_triangular-unit", lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=False, unitriangular=True), tri((2, 3, 3), (3, 2), dominant=False)),
    ("triangular_solve", lambda m, b, a: tuple(m.triangular_solve(b, a, upper=False, transpose=True)),
     tri((3, 3), (3, 2), a_first=False)),
    ("lu", lambda m, a: tuple(m.linalg.lu(a)), mats((2, 4, 4))),
    ("lu_unpack", lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a))), mats((3, 3))),
    ("lu_unpack-partial", lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a), unpack_pivots=False)),
     mats((3, 3))),
    ("lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), mats((2, 4, 4), (2, 4, 3))),
    ("lu_solve-adjoint", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True),
     mats((3, 3), (3, 2))),
    ("lu_solve-right-broadcast", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False),
     mats((2, 1, 3, 3), (4, 2, 3))),
    ("lu_solve-right-adjoint", lambda m, a, b: m.linalg.lu_solve(
        *m.linalg.lu_factor(a), b, left=False, adjoint=True), mats((3, 3), (2, 3))),
    ("lu_solve-top", lambda m, a, b: m.lu_solve(b, *m.linalg.lu_factor(a)), mats((3, 3), (3, 1))),
    ("lu-top", lambda m, a: tuple(m.lu(a, get_infos=True)), mats((2, 3, 3))),
    ("lu-method", lambda m, a: tuple(a.lu()), mats((3, 3))),
    ("cholesky", lambda m, a: m.linalg.cholesky(spd(m, a)), mats((2, 4, 4))),
    ("cholesky-upper", lambda m, a: m.linalg.cholesky(spd(m, a), upper=True), mats((3, 3))),
    ("cholesky_ex", lambda m, a: tuple(m.linalg.cholesky_ex(spd(m, a))), mats((2, 3, 3))),
    ("cholesky-method", lambda m, a: spd(m, a).cholesky(), mats((3, 3))),
    ("cholesky_solve", lambda m, a, b: m.cholesky_solve(b, m.linalg.cholesky(spd(m, a))),
     mats((3, 3), (3, 2))),
    ("cholesky_solve-upper-broadcast", lambda m, a, b: m.cholesky_solve(
        b, m.linalg.cholesky(spd(m, a), upper=True), upper=True), mats((2, 1, 3, 3), (4, 3, 2))),
    ("cholesky_solve-method", lambda m, a, b: b.cholesky_solve(m.linalg.cholesky(spd(m, a))),
     mats((3, 3), (3, 1))),
    ("cholesky_inverse", lambda m, a: m.cholesky_inverse(m.linalg.cholesky(spd(m, a))), mats((2, 3, 3))),
    ("cholesky_inverse-upper", lambda m, a: m.linalg.cholesky(spd(m, a), upper=True).cholesky_inverse(
        upper=True), mats((3, 3))),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, fn, make, dtype, device):
    arrays = make()
    ins = [pair(a, device, dtype, grad=True) for a in arrays]
    vout, tout = fn(vk, *[v for v, _ in ins]), fn(torch, *[t for _, t in ins])
    vout = vout if isinstance(vout, tuple) else (vout,)
    tout = tout if isinstance(tout, tuple) else (tout,)
    assert len(vout) == len(tout)
    for v, t in zip(vout, tout):
        assert tuple(v.shape) == tuple(t.shape), name
        assert str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], name
        if t.dtype.is_floating_point:
            close(v, t, dtype)
        else:
            np.testing.assert_array_equal(to_np(v), to_np(t))
    # matrix_power(A, 0) is the identity: torch's keeps a graph (of zero gradient), vkml's none
    floats = [k for k, t in enumerate(tout) if t.dtype.is_floating_point and vout[k].requires_grad]
    if not floats:
        assert name == "matrix_power0"
        return
    ups = [RNG.uniform(-1, 1, size=tuple(tout[k].shape)) for k in floats]
    vg = vk.autograd.grad([vout[k] for k in floats], [v for v, _ in ins],
                          [vk.tensor(u, dtype=getattr(vk, dtype)).to(device) for u in ups],
                          allow_unused=True)
    tg = torch.autograd.grad([tout[k] for k in floats], [t for _, t in ins],
                             [torch.tensor(u, dtype=getattr(torch, dtype)) for u in ups],
                             allow_unused=True)
    for a, b, (t_in) in zip(vg, tg, ins):
        b = torch.zeros_like(t_in[1]) if b is None else b
        close(a, b, dtype)


GRADCHECK = [
    ("solve", lambda a, b: vk.linalg.solve(a, b), mats((3, 3), (3, 2))),
    ("inv", lambda a: vk.linalg.inv(a), mats((2, 3, 3))),
    ("det", lambda a: vk.linalg.det(a), mats((3, 3))),
    ("slogdet", lambda a: vk.linalg.slogdet(a).logabsdet, mats((3, 3))),
    ("lu_factor", lambda a: vk.linalg.lu_factor(a).LU, mats((4, 4))),
    ("matrix_power", lambda a: vk.linalg.matrix_power(a, -3), mats((3, 3))),
    ("solve_triangular", lambda a, b: vk.linalg.solve_triangular(a, b, upper=True, left=False),
     tri((3, 3), (2, 3))),
    ("lu", lambda a: vk.linalg.lu(a).U, mats((4, 4))),
    ("lu_solve", lambda a, b: vk.linalg.lu_solve(*vk.linalg.lu_factor(a), b, adjoint=True),
     mats((3, 3), (3, 2))),
    # LU given directly: the gradient reaches both packed triangles
    ("lu_solve-packed", lambda a, b: vk.linalg.lu_solve(a, vk.tensor([2, 3, 3], dtype=vk.int32), b),
     tri((3, 3), (3, 2))),
    ("cholesky", lambda a: vk.linalg.cholesky(spd(vk, a)), mats((2, 3, 3))),
    ("cholesky-upper", lambda a: vk.linalg.cholesky(spd(vk, a), upper=True), mats((3, 3))),
    ("cholesky_solve", lambda a, b: vk.cholesky_solve(b, vk.linalg.cholesky(spd(vk, a))),
     mats((3, 3), (3, 2))),
    # the factor given directly: only its lower triangle is read, and differentiated
    ("cholesky_solve-factor", lambda L, b: vk.cholesky_solve(b, L), tri((3, 3), (3, 2))),
    ("cholesky_inverse-factor", lambda L: vk.cholesky_inverse(L, upper=True),
     lambda: [RNG.uniform(-1, 1, size=(3, 3)) + 3.0 * np.eye(3)]),
]


@pytest.mark.parametrize("name,fn,make", GRADCHECK, ids=[c[0] for c in GRADCHECK])
def test_gradients_match_finite_differences(name, fn, make):
    ins = [vk.tensor(a, requires_grad=True) for a in make()]
    assert vk.autograd.gradcheck(fn, ins, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_second_derivatives_of_inv_match_torch():
    a = well_conditioned(3, 3)
    v, t = pair(a, grad=True)
    w = RNG.uniform(-1, 1, size=(3, 3))
    (gv,) = vk.autograd.grad((vk.linalg.inv(v) ** 2).sum(), [v], create_graph=True)
    (gt,) = torch.autograd.grad((torch.linalg.inv(t) ** 2).sum(), [t], create_graph=True)
    (hv,) = vk.autograd.grad((gv * vk.tensor(w)).sum(), [v])
    (ht,) = torch.autograd.grad((gt * torch.tensor(w)).sum(), [t])
    close(hv, ht)


def test_second_derivatives_of_cholesky_match_torch():
    a = well_conditioned(3, 3)
    v, t = pair(a, grad=True)
    w = RNG.uniform(-1, 1, size=(3, 3))
    (gv,) = vk.autograd.grad((vk.linalg.cholesky(spd(vk, v)) ** 2).sum(), [v], create_graph=True)
    (gt,) = torch.autograd.grad((torch.linalg.cholesky(spd(torch, t)) ** 2).sum(), [t], create_graph=True)
    (hv,) = vk.autograd.grad((gv * vk.tensor(w)).sum(), [v])
    (ht,) = torch.autograd.grad((gt * torch.tensor(w)).sum(), [t])
    close(hv, ht)


def test_cholesky_solve_factor_gradient_is_torchs_on_the_read_triangle():
    # torch's rule gives the factor's unread triangle a gradient too (finite differences there
    # are zero); on the triangle that is read the two agree.
    L = np.tril(RNG.uniform(-1, 1, size=(3, 3))) + 3.0 * np.eye(3)
    b = RNG.uniform(-1, 1, size=(3, 2))
    (lv, bv), (lt, bt) = zip(pair(L, grad=True), pair(b, grad=True))
    gv = vk.autograd.grad(vk.cholesky_solve(bv, lv).sum(), [lv, bv])
    gt = torch.autograd.grad(torch.cholesky_solve(bt, lt).sum(), [lt, bt])
    close(gv[0], torch.tril(gt[0]))
    close(gv[1], gt[1])
    assert np.all(np.triu(to_np(gv[0]), 1) == 0.0)


# ---- singular matrices: torch's results and errors ----


@pytest.mark.parametrize("device", devices())
def test_singular_det_slogdet_logdet(device):
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    v, t = pair(s, device)
    assert vk.linalg.det(v).item() == 0.0
    sign, logabs = vk.linalg.slogdet(v)
    assert sign.item() == 0.0 and logabs.item() == -np.inf
    assert vk.logdet(v).item() == -np.inf
    assert np.isnan(vk.logdet(-vk.eye(3, dtype=vk.float64).to(device)).item())  # det < 0: NaN


@pytest.mark.parametrize("device", devices())
def test_singular_inv_raises_linalg_error_naming_the_batch_element(device):
    s = np.stack([np.eye(3), [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]]])
    v, t = pair(s, device)
    with pytest.raises(torch.linalg.LinAlgError) as te:
        torch.linalg.inv(t)
    with pytest.raises(vk.linalg.LinAlgError) as ve:
        vk.linalg.inv(v)
    assert isinstance(ve.value, RuntimeError)
    assert "linalg.inv" in str(ve.value) and "(Batch element 1)" in str(ve.value)
    assert "(Batch element 1)" in str(te.value)
    with pytest.raises(vk.linalg.LinAlgError, match=r"linalg.solve: \(Batch element 1\).*singular"):
        vk.linalg.solve(v, vk.ones(2, 3, 1, dtype=vk.float64).to(device))
    with pytest.raises(RuntimeError, match=r"lu_factor: \(Batch element 1\): U\[3,3\] is zero"):
        vk.linalg.lu_factor(v)
    got, want = vk.linalg.lu_factor_ex(v), torch.linalg.lu_factor_ex(t)
    assert got.info.tolist() == want.info.tolist() == [0, 3]
    assert got.pivots.tolist() == want.pivots.tolist()
    close(got.LU, want.LU)  # a zero pivot is left in place, as LAPACK's


@pytest.mark.parametrize("device", devices())
def test_lu_unpack_of_rectangular_factors_and_every_pivot_pattern(device):
    # LAPACK pivots from torch (tall, wide, repeated swaps, no swaps) unpacked on either device
    for shape in [(5, 3), (3, 5), (2, 4, 4)]:
        a = torch.tensor(RNG.uniform(-1, 1, size=shape))
        LU, piv = torch.linalg.lu_factor(a)
        k = piv.shape[-1]
        for pivots in (piv, torch.full_like(piv, k), torch.arange(1, k + 1, dtype=torch.int32).expand_as(piv)):
            want = torch.lu_unpack(LU, pivots.contiguous())
            got = vk.lu_unpack(pair(LU.numpy(), device)[0], vk.tensor(pivots.numpy()).to(device))
            for g, w in zip(got, want):
                close(g, w)


def test_lu_unpack_pivot_out_of_range_is_an_index_error():
    with pytest.raises(IndexError):
        vk.lu_unpack(vk.eye(3), vk.tensor([1, 4, 3], dtype=vk.int32))


@pytest.mark.parametrize("device", devices())
def test_not_positive_definite_is_a_linalg_error_naming_the_minor(device):
    s = np.stack([np.eye(3), [[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])
    v, t = pair(s, device)
    with pytest.raises(torch.linalg.LinAlgError) as te:
        torch.linalg.cholesky(t)
    with pytest.raises(vk.linalg.LinAlgError) as ve:
        vk.linalg.cholesky(v)
    assert str(ve.value) == str(te.value)
    with pytest.raises(vk.linalg.LinAlgError, match=r"\(Batch element 1\).*order 2"):
        vk.linalg.cholesky_ex(v, check_errors=True)
    got, want = vk.linalg.cholesky_ex(v), torch.linalg.cholesky_ex(t)
    assert got.info.dtype == vk.int32
    assert got.info.tolist() == want.info.tolist() == [0, 2]
    close(got.L[0], want.L[0])
    # negative and NaN pivots are found on the device too (LAPACK counts a NaN pivot as failed)
    bad = vk.tensor([[-1.0, 0.0], [0.0, 1.0]], dtype=vk.float64).to(device)
    assert vk.linalg.cholesky_ex(bad).info.item() == 1
    assert vk.linalg.cholesky_ex(bad * float("nan")).info.item() == 1
    with pytest.raises(vk.linalg.LinAlgError, match=r"^linalg.cholesky: The factorization .* order 1 "):
        vk.linalg.cholesky(bad)


def test_cholesky_reads_one_triangle_as_torch():
    w = well_conditioned(4, 4)
    a = w @ w.T
    junk = a + np.triu(RNG.uniform(5, 6, size=(4, 4)), 1)  # the upper triangle is not read
    for upper, x in ((False, junk), (True, junk.T)):
        close(vk.linalg.cholesky(vk.tensor(x), upper=upper),
              torch.linalg.cholesky(torch.tensor(x), upper=upper))


def test_singular_2d_message_has_no_batch_prefix():
    with pytest.raises(vk.linalg.LinAlgError, match=r"^linalg.inv: The diagonal element 2 is zero"):
        vk.linalg.inv(vk.tensor([[1.0, 2.0], [2.0, 4.0]]))


@pytest.mark.parametrize("call,err,match", [
    (lambda: vk.linalg.inv(vk.ones(2, 3)), vk.ShapeError, r"linalg.inv: A must be batches of square"),
    (lambda: vk.linalg.det(vk.ones(3)), vk.ShapeError, r"linalg.det: A must have at least 2"),
    (lambda: vk.linalg.inv(vk.ones(2, 2, dtype=vk.int64)), vk.DTypeError, r"linalg.inv: expected a float"),
    (lambda: vk.linalg.solve(vk.eye(2), vk.ones(3)), vk.ShapeError, r"linalg.solve: incompatible shapes"),
    (lambda: vk.linalg.solve(vk.ones(2, 2, 2), vk.ones(3, 2, 1)), vk.ShapeError, r"linalg.solve"),
    (lambda: vk.linalg.solve_triangular(vk.eye(2), vk.ones(2), upper=True), vk.ShapeError,
     r"solve_triangular: the input tensor B must have at least 2"),
    (lambda: vk.linalg.solve_triangular(vk.eye(2), vk.ones(3, 1), upper=True), vk.ShapeError,
     r"solve_triangular: incompatible shapes"),
    (lambda: vk.linalg.lu_factor(vk.ones(2, 2), pivot=False), NotImplementedError, r"pivot=False"),
    (lambda: vk.linalg.matrix_power(vk.ones(2, 3), 2), vk.ShapeError, r"matrix_power"),
    (lambda: vk.linalg.lu(vk.ones(2, 3)), vk.ShapeError, r"linalg.lu: A must be batches"),
    (lambda: vk.lu_unpack(vk.eye(3), vk.ones(3)), vk.DTypeError, r"lu_unpack: pivots must be an int32"),
    (lambda: vk.lu_unpack(vk.eye(3), vk.ones(2, dtype=vk.int32)), vk.ShapeError,
     r"lu_unpack: expected pivots of shape \[3\] for LU of shape \[3, 3\], got \[2\]"),
    (lambda: vk.linalg.lu_solve(vk.eye(3), vk.ones(3, dtype=vk.int32), vk.ones(3)), vk.ShapeError,
     r"lu_solve: the input tensor B must have at least 2"),
    (lambda: vk.linalg.lu_solve(vk.eye(3), vk.ones(3, dtype=vk.int32), vk.ones(2, 1)), vk.ShapeError,
     r"lu_solve: incompatible shapes"),
    (lambda: vk.linalg.cholesky(vk.ones(2, 3)), vk.ShapeError, r"linalg.cholesky: A must be batches"),
    (lambda: vk.linalg.cholesky(vk.eye(2, dtype=vk.int32)), vk.DTypeError, r"cholesky: expected a float"),
    (lambda: vk.cholesky_solve(vk.ones(3, 1), vk.eye(2)), vk.ShapeError,
     r"cholesky_solve: incompatible shapes"),
    (lambda: vk.cholesky_inverse(vk.ones(3)), vk.ShapeError, r"cholesky_inverse: A must have at least 2"),
])
def test_bad_input_is_a_typed_error(call, err, match):
    with pytest.raises(err, match=match):
        call()


# ---- the Vulkan device: the workgroup-per-matrix kernels ----


def _vulkan():
    if not vk.vulkan.is_available():
        pytest.skip("no vulkan device")


@pytest.mark.parametrize("n", [1, 17, 64, 256])
def test_vulkan_lu_up_to_256_matches_torch(n):
    # float64, so that rounding cannot change a pivot choice between the devices
    _vulkan()
    a = RNG.uniform(-1, 1, size=(2, n, n))
    lu_g, piv_g = vk.linalg.lu_factor(vk.tensor(a).to("vulkan"))
    lu_t, piv_t = torch.linalg.lu_factor(torch.tensor(a))
    assert piv_g.cpu().tolist() == piv_t.tolist()
    np.testing.assert_allclose(to_np(lu_g), to_np(lu_t), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n", [1, 17, 256])
def test_vulkan_cholesky_up_to_256_matches_torch(n):
    _vulkan()
    a = RNG.uniform(-1, 1, size=(2, n, n))
    a = a @ a.transpose(0, 2, 1) + n * np.eye(n)
    got = vk.linalg.cholesky(vk.tensor(a).to("vulkan"))
    np.testing.assert_allclose(to_np(got), to_np(torch.linalg.cholesky(torch.tensor(a))),
                               rtol=1e-9, atol=1e-9)
    with pytest.raises(vk.SizeError, match=r"cholesky: 257 x 257 .*cpu"):
        vk.linalg.cholesky_ex(vk.eye(257).to("vulkan"))


def test_vulkan_triangular_solve_many_columns_and_batches():
    _vulkan()
    a = np.tril(RNG.uniform(-1, 1, size=(3, 40, 40))) + 3 * np.eye(40)
    b = RNG.uniform(-1, 1, size=(3, 40, 37))
    got = vk.linalg.solve_triangular(vk.tensor(a).to("vulkan"), vk.tensor(b).to("vulkan"), upper=False)
    want = torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=False)
    close(got, want)


def test_vulkan_results_are_deterministic():
    _vulkan()
    a = vk.tensor(well_conditioned(4, 32, 32), dtype=vk.float32).to("vulkan")
    first = vk.linalg.inv(a).cpu().numpy()
    for _ in range(2):
        np.testing.assert_array_equal(vk.linalg.inv(a).cpu().numpy(), first)


def test_vulkan_too_large_is_a_size_error():
    _vulkan()
    with pytest.raises(vk.SizeError, match=r"lu_factor: 257 x 257 .*cpu"):
        vk.linalg.lu_factor_ex(vk.eye(257).to("vulkan"))
