"""Issue #15, randint part: the random in-place fills (random_, exponential_, geometric_,
log_normal_, cauchy_, randint_like), and frexp, histc, renorm, rsub, scalar_tensor, against
PyTorch on the CPU and on the Vulkan device; gradients against finite differences in float64;
errors as torch's.

vkml's random stream is not torch's: distributions are checked with fixed seeds (deterministic)
against bounds with a false-failure rate below 1e-6 had the seed been random (means: 5.5
standard errors; Kolmogorov-Smirnov: D * sqrt(n) < 2.7), so they cannot flake and still catch a
wrong distribution (each bound was checked to fail on a wrong parameter)."""

import math

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import devices, numeric_grad, to_np

Z = 5.5
KS = 2.7  # P(sqrt(n) D > 2.7) < 1e-6 for the Kolmogorov distribution


DEVICES = devices()


def _ks(samples, cdf):
    """sqrt(n) * the Kolmogorov-Smirnov distance of samples from the continuous cdf."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = x.size
    f = cdf(x)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    return math.sqrt(n) * d


def _gen(device, seed=7):
    return vk.Generator(device=device).manual_seed(seed)


# ---- random in-place fills ----

@pytest.mark.parametrize("device", DEVICES)
def test_exponential_distribution(device):
    x = vk.empty(20000, device=device).exponential_(2.5, generator=_gen(device))
    v = to_np(x)
    assert v.min() > 0
    assert _ks(v, lambda t: 1 - np.exp(-2.5 * t)) < KS
    assert _ks(v, lambda t: 1 - np.exp(-2.7 * t)) > KS  # a wrong rate fails the bound


@pytest.mark.parametrize("device", DEVICES)
def test_cauchy_and_log_normal_distributions(device):
    c = to_np(vk.empty(20000, dtype=vk.float64, device=device).cauchy_(1.5, 0.5, generator=_gen(device)))
    assert _ks(c, lambda t: 0.5 + np.arctan((t - 1.5) / 0.5) / np.pi) < KS
    assert _ks(c, lambda t: 0.5 + np.arctan((t - 1.6) / 0.5) / np.pi) > KS
    ln = to_np(vk.empty(20000, device=device).log_normal_(0.3, 0.7, generator=_gen(device, 8)))
    assert ln.min() > 0
    logs = np.log(ln.astype(np.float64))
    assert abs(logs.mean() - 0.3) < Z * 0.7 / math.sqrt(logs.size)
    assert abs(logs.std() - 0.7) < 0.02
    z = to_np(vk.empty(20000, device=device).log_normal_(generator=_gen(device, 9)))  # torch's 1, 2
    assert abs(np.log(z.astype(np.float64)).mean() - 1.0) < Z * 2 / math.sqrt(z.size)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
def test_geometric_distribution(device, dtype):
    p = 0.3
    x = to_np(vk.empty(20000, dtype=getattr(vk, dtype), device=device).geometric_(p, generator=_gen(device)))
    assert x.min() >= 1 and np.all(x == np.round(x))
    mean, sd = 1 / p, math.sqrt(1 - p) / p
    assert abs(x.mean() - mean) < Z * sd / math.sqrt(x.size)
    # P(X = 1) = p
    assert abs((x == 1).mean() - p) < Z * math.sqrt(p * (1 - p) / x.size)


@pytest.mark.parametrize("device", DEVICES)
def test_random_ranges_per_dtype(device):
    g = _gen(device)
    x = to_np(vk.empty(5000, dtype=vk.int64, device=device).random_(-3, 4, generator=g))
    assert set(np.unique(x)) == set(range(-3, 4))
    assert np.all(to_np(vk.empty(1000, device=device).random_(10, generator=g)) < 10)
    b = to_np(vk.empty(1000, dtype=vk.bool, device=device).random_(generator=g))
    assert b.dtype == np.bool_ and 400 < b.sum() < 600
    f = to_np(vk.empty(20000, device=device).random_(generator=g))  # [0, 2^24]
    assert f.min() >= 0 and f.max() <= 2**24 and f.max() > 2**23 and np.all(f == np.round(f))
    i = to_np(vk.empty(20000, dtype=vk.int32, device=device).random_(generator=g))  # [0, 2^31 - 1]
    assert i.min() >= 0 and i.max() > 2**30
    big = to_np(vk.empty(20000, dtype=vk.int64, device=device).random_(generator=g))
    assert big.min() >= 0 and big.max() > 2**62
    lo = to_np(vk.empty(2000, dtype=vk.int64, device=device).random_(5, to=8, generator=g))
    assert set(np.unique(lo)) == {5, 6, 7}
    chi = ((np.bincount(x + 3, minlength=7) - x.size / 7) ** 2 / (x.size / 7)).sum()
    assert chi < 38.0  # chi-square with 6 degrees of freedom, 1 - 1e-6 quantile


def test_random_errors_as_torch():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        vk.zeros(3).random_(5, 5)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for int"):
        vk.zeros(3, dtype=vk.int32).random_(0, 2**40)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        vk.zeros(3, dtype=vk.bool).random_(0, 3)
    with pytest.raises(RuntimeError, match="from is out of bounds"):
        vk.zeros(3, dtype=vk.int32).random_(-2**40, 0)
    with pytest.raises(TypeError, match="generator"):
        vk.zeros(3).random_(generator=3)


@pytest.mark.parametrize("call,message", [
    (lambda t: t.exponential_(0), "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda t: t.exponential_(-1), "exponential_ expects lambda > 0.0"),
    (lambda t: t.geometric_(0), r"geometric_ expects p to be in \(0, 1\), but got p=0"),
    (lambda t: t.geometric_(1), r"geometric_ expects p to be in \(0, 1\)"),
    (lambda t: t.log_normal_(1, 0), "log_normal_ expects std > 0.0, but found std=0"),
    (lambda t: t.cauchy_(0, 0), "cauchy_ expects sigma > 0.0, but found sigma=0"),
    (lambda t: t.long().exponential_(), "continuous probability distribution"),
    (lambda t: t.long().cauchy_(), "continuous probability distribution"),
])
def test_fill_errors_as_torch(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(vk.zeros(3))
    with pytest.raises(RuntimeError, match=message):
        call(torch.zeros(3))


def test_log_normal_of_integers_not_implemented():
    with pytest.raises(NotImplementedError, match="log_normal_"):
        vk.zeros(3, dtype=vk.int64).log_normal_()


def test_fills_return_self_bump_version_and_keep_no_graph():
    for fill in (lambda t: t.random_(3), lambda t: t.exponential_(), lambda t: t.geometric_(0.5),
                 lambda t: t.log_normal_(), lambda t: t.cauchy_()):
        x = vk.zeros(4)
        assert fill(x) is x
        assert x.grad_fn is None and x.shape == (4,)
    leaf = vk.zeros(3, requires_grad=True)
    for fill in ("random_", "exponential_", "log_normal_", "cauchy_"):
        with pytest.raises(RuntimeError, match="requires grad"):  # as torch's leaf check
            getattr(leaf, fill)()
    with vk.no_grad():
        assert leaf.exponential_() is leaf and leaf.min().item() > 0
    assert leaf.grad_fn is None and leaf.requires_grad


def test_uniform_normal_bernoulli_refuse_a_leaf_that_requires_grad_regression():
    # They wrote into a leaf that requires grad without a word (their fill ran under no_grad);
    # torch refuses, as vkml does for every other in-place write. Under no_grad they still fill.
    for L in (vk, torch):
        leaf = L.zeros(3, requires_grad=True)
        for fill in ("uniform_", "normal_", "bernoulli_"):
            with pytest.raises(RuntimeError):
                getattr(leaf, fill)()
        assert leaf.tolist() == [0.0, 0.0, 0.0]
        with L.no_grad():
            leaf.uniform_(2.0, 3.0)
        assert leaf.min().item() >= 2.0 and leaf.grad_fn is None and leaf.requires_grad
    with pytest.raises(RuntimeError, match="normal_: a leaf .*float32.* in-place operation"):
        vk.ones(2, requires_grad=True).normal_()


@pytest.mark.parametrize("fill", [
    lambda t, g: t.random_(0, 100, generator=g), lambda t, g: t.exponential_(1.5, generator=g),
    lambda t, g: t.geometric_(0.2, generator=g), lambda t, g: t.log_normal_(generator=g),
    lambda t, g: t.cauchy_(generator=g),
    lambda t, g: vk.randint_like(t, 3, 9, generator=g),
])
def test_same_seed_same_numbers_on_every_device(fill):
    out = {}
    for device in DEVICES:
        a = fill(vk.zeros(64, device=device), _gen(device, 5))
        b = fill(vk.zeros(64, device=device), _gen(device, 5))
        assert to_np(a).tolist() == to_np(b).tolist()
        out[device] = to_np(a)
    if "vulkan" in out:  # the same draws; tan/log/exp of them within float32 rounding
        np.testing.assert_allclose(out["vulkan"], out["cpu"], rtol=2e-6, atol=1e-6)


def test_the_default_generator_drives_fills():
    vk.manual_seed(11)
    a = vk.zeros(8).exponential_().tolist()
    vk.manual_seed(11)
    assert vk.zeros(8).exponential_().tolist() == a
    assert vk.zeros(8).exponential_().tolist() != a


def test_randint_like_as_torch():
    x = vk.zeros(2, 3)
    for v, t in ((vk.randint_like(x, 5), torch.randint_like(torch.zeros(2, 3), 5)),
                 (vk.randint_like(x, 2, 5), torch.randint_like(torch.zeros(2, 3), 2, 5)),
                 (vk.randint_like(x, high=5, dtype=vk.int64),
                  torch.randint_like(torch.zeros(2, 3), high=5, dtype=torch.int64))):
        assert v.shape == tuple(t.shape) and str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    r = to_np(vk.randint_like(vk.zeros(3000, dtype=vk.int32), -2, 3))
    assert set(np.unique(r)) == {-2, -1, 0, 1, 2}
    with pytest.raises(TypeError, match="high"):
        vk.randint_like(x)
    with pytest.raises(ShapeErrorOrRuntime):
        vk.randint_like(x, 5, 5)


ShapeErrorOrRuntime = (vk.ShapeError, RuntimeError)


# ---- frexp ----

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_frexp_matches_torch(device, dtype):
    a = [0.0, 1.0, -3.0, 0.5, 0.75, 1024.0, 1023.999, -1e-3, 3e38, 1e-30, float("inf"),
         float("-inf"), float("nan"), -0.0, 2.0**-126]
    if dtype == "float64":
        a += [1e300, 1e-310, 2.0**-1074]
    else:
        a += [1e-40] if device == "cpu" else []  # float32 subnormals: the CPU's
    ta = torch.tensor(a, dtype=getattr(torch, dtype))
    tm, te = torch.frexp(ta)
    m, e = vk.frexp(vk.tensor(a, dtype=getattr(vk, dtype), device=device))
    assert e.dtype == vk.int32 and m.dtype == getattr(vk, dtype)
    np.testing.assert_array_equal(to_np(m), tm.numpy())
    np.testing.assert_array_equal(to_np(e), te.numpy())
    r = vk.tensor([6.0], device=device).frexp()
    assert r.mantissa.tolist() == [0.75] and r.exponent.tolist() == [3]
    with pytest.raises(RuntimeError, match="frexp"):
        vk.frexp(vk.tensor([1]))


# ---- histc ----

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc_matches_torch(device, dtype):
    rng = np.random.default_rng(4)
    a = rng.normal(size=(40, 25)).astype(dtype)
    a[0, :3] = [np.nan, 4.0, -4.0]
    for bins, lo, hi in ((10, -2.0, 2.0), (7, 0.0, 0.0), (1, -1.0, 1.0), (100, -3.0, 0.5)):
        ta = torch.tensor(a)
        if lo == hi:  # torch refuses a NaN in the data range: compare without it
            ta = ta.nan_to_num(0.0)
        t = torch.histc(ta, bins=bins, min=lo, max=hi)
        v = vk.histc(vk.tensor(to_np(ta), device=device), bins=bins, min=lo, max=hi)
        assert v.dtype == getattr(vk, dtype) and v.device == vk.device(device)
        np.testing.assert_array_equal(to_np(v), t.numpy(), err_msg=f"bins={bins} [{lo}, {hi}]")
    edges = vk.tensor([0.0, 1.0, 2.0, 3.0, 3.0], device=device)  # max goes to the last bin
    assert vk.histc(edges, 3, 0, 3).tolist() == torch.histc(torch.tensor([0.0, 1, 2, 3, 3]), 3, 0, 3).tolist()
    assert vk.histc(vk.tensor([2.0, 2.0], device=device), 3).tolist() == [0.0, 2.0, 0.0]
    assert edges.histc(bins=2, min=0, max=4).tolist() == [2.0, 3.0]


def test_histc_errors_as_torch():
    with pytest.raises(NotImplementedError, match="histc"):
        vk.histc(vk.tensor([1, 2]), 3)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        vk.histc(vk.tensor([1.0, 2.0]), 0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        vk.histc(vk.tensor([1.0, 2.0]), 3, min=2, max=1)
    with pytest.raises(RuntimeError, match="not finite"):
        vk.histc(vk.tensor([1.0, float("nan")]), 3)


# ---- renorm, rsub, scalar_tensor ----

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, 1, 2.5), (3.0, -1, 0.5), (2, 2, 0.8)])
def test_renorm_matches_torch_with_gradients(device, p, dim, maxnorm):
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 4, 2))
    a[1] *= 0.01  # a slice under maxnorm stays as it is
    x = vk.tensor(a, requires_grad=True, device=device) if device == "cpu" else \
        vk.tensor(a, requires_grad=True).to(device)
    tx = torch.tensor(a, requires_grad=True)
    v, t = vk.renorm(x, p, dim, maxnorm), torch.renorm(tx, p, dim, maxnorm)
    np.testing.assert_allclose(to_np(v), t.detach().numpy(), rtol=1e-12, atol=1e-14)
    up = rng.uniform(-1, 1, size=a.shape)
    (g,) = vk.autograd.grad(v, x, vk.tensor(up, device=device))
    (tg,) = torch.autograd.grad(t, tx, torch.tensor(up))
    np.testing.assert_allclose(to_np(g), tg.numpy(), rtol=1e-10, atol=1e-12)
    if device == "cpu":
        (fd,) = numeric_grad(lambda y: vk.renorm(vk.tensor(y), p, dim, maxnorm), [a.copy()], up)
        np.testing.assert_allclose(to_np(g), fd, rtol=1e-6, atol=1e-7)
    y = vk.tensor(a, device=device)
    assert y.renorm_(p, dim, maxnorm) is y
    np.testing.assert_allclose(to_np(y), t.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(to_np(vk.tensor(a, device=device).renorm(p, dim, maxnorm)),
                               t.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("call,error,message", [
    (lambda m, x: m.renorm(x, 0, 0, 1.0), RuntimeError, "non-positive-norm not supported"),
    (lambda m, x: m.renorm(x, 2, 0, -1.0), RuntimeError, "expected maxnorm to be >= 0"),
    (lambda m, x: m.renorm(x, 2, 3, 1.0), IndexError, "Dimension out of range"),
    (lambda m, x: m.renorm(x[0], 2, 0, 1.0), RuntimeError, "at least 2 dimensions"),
])
def test_renorm_errors_as_torch(call, error, message):
    with pytest.raises(error, match=message):
        call(vk, vk.zeros(2, 3))
    with pytest.raises(error, match=message):
        call(torch, torch.zeros(2, 3))


@pytest.mark.parametrize("device", DEVICES)
def test_rsub_and_scalar_tensor_match_torch(device):
    a = [[1.0, -2.0, 3.5], [0.25, 4.0, -1.0]]
    x, tx = vk.tensor(a, device=device), torch.tensor(a)
    for v, t in ((vk.rsub(x, 5), torch.rsub(tx, 5)), (vk.rsub(x, x * 3), torch.rsub(tx, tx * 3)),
                 (vk.rsub(x, 2.5, alpha=2), torch.rsub(tx, 2.5, alpha=2)),
                 (vk.rsub(x, x[0], alpha=0.5), torch.rsub(tx, tx[0], alpha=0.5)),
                 (vk.rsub(vk.tensor([1, 2], device=device), 5, alpha=2),
                  torch.rsub(torch.tensor([1, 2]), 5, alpha=2))):
        assert str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(to_np(v), t.numpy())
    xg = vk.tensor(a, requires_grad=True)
    (g,) = vk.autograd.grad(vk.rsub(xg, 1.0, alpha=3).sum(), xg)
    assert g.tolist() == [[-3.0] * 3] * 2
    for v, t in ((vk.scalar_tensor(3), torch.scalar_tensor(3)),
                 (vk.scalar_tensor(2.5, dtype=vk.float64), torch.scalar_tensor(2.5, dtype=torch.float64)),
                 (vk.scalar_tensor(7, dtype=vk.int64), torch.scalar_tensor(7, dtype=torch.int64))):
        assert v.shape == () and v.item() == t.item()
        assert str(v.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    s = vk.scalar_tensor(1.5, device=device, requires_grad=True)
    assert s.device == vk.device(device) and s.requires_grad
    with pytest.raises(RuntimeError, match="subtraction with a bool"):
        vk.rsub(vk.tensor([True]), vk.tensor([True]))


# ---- binomial ----

@pytest.mark.parametrize("device", DEVICES)
def test_binomial_distribution_and_dtypes(device):
    n, p = 12.0, 0.3
    count = vk.full((20000,), n, device=device)
    x = to_np(vk.binomial(count, vk.full((20000,), p, device=device), generator=_gen(device)))
    assert x.dtype == np.float32 and x.min() >= 0 and x.max() <= n and np.all(x == np.round(x))
    assert abs(x.mean() - n * p) < Z * math.sqrt(n * p * (1 - p) / x.size)
    assert abs(x.var() - n * p * (1 - p)) < 0.1
    edge = vk.binomial(vk.tensor([0.0, 3.0, 10.0], dtype=vk.float64, device=device),
                       vk.tensor([0.5, 0.0, 1.0], dtype=vk.float64, device=device))
    assert edge.dtype == vk.float64 and edge.tolist() == [0.0, 0.0, 10.0]  # certain draws
    b = vk.binomial(vk.tensor([[5.0], [7.0]], device=device), vk.tensor([0.5, 0.25, 1.0], device=device))
    assert b.shape == (2, 3) and to_np(b)[:, 2].tolist() == [5.0, 7.0]
    a1 = vk.binomial(count[:50], vk.full((50,), p, device=device), generator=_gen(device, 3))
    a2 = vk.binomial(count[:50], vk.full((50,), p, device=device), generator=_gen(device, 3))
    assert a1.tolist() == a2.tolist()


def test_binomial_errors():
    with pytest.raises(ValueError, match="floating-point dtypes for count"):
        vk.binomial(vk.tensor([3]), vk.tensor([0.5]))
    with pytest.raises(RuntimeError, match="binomial"):
        vk.binomial(vk.tensor([3.0]), vk.tensor([0.5], dtype=vk.float64))
    with pytest.raises(RuntimeError, match=r"prob to be in \[0, 1\]"):
        vk.binomial(vk.tensor([3.0]), vk.tensor([1.5]))
    with pytest.raises(RuntimeError, match="count to be >= 0"):
        vk.binomial(vk.tensor([-1.0]), vk.tensor([0.5]))
    with pytest.raises(RuntimeError, match="exceeds"):
        vk.binomial(vk.full((1000,), 1e6), vk.full((1000,), 0.5))
