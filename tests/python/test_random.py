"""Random sampling as PyTorch programs use it (issue 15 item 3): vk.Generator, generator= on every
random function, the default generator's functions, and randperm / multinomial / bernoulli /
normal / poisson with torch's signatures, dtypes, shapes and errors.

vkml's stream is not torch's, so values are compared where the draw is certain; distributions are
checked statistically with fixed seeds (deterministic), each bound set for a false-failure rate
below 1e-6 had the seed been random (means: 5.5 standard errors; chi-square: the 1 - 1e-6
quantile), so they cannot flake and still catch a wrong distribution.
"""

import math

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import devices, to_np

Z = 5.5


def chi2_bound(df):
    """The 1 - 1e-6 quantile of chi-square (Wilson-Hilferty: errs high for small df)."""
    h = 2.0 / (9.0 * df)
    return df * (1.0 - h + 4.753 * math.sqrt(h)) ** 3


def chi2(counts, probs):
    counts, probs = np.asarray(counts, float), np.asarray(probs, float)
    n = counts.sum()
    keep = probs > 0
    e = n * probs[keep]
    return float(((counts[keep] - e) ** 2 / e).sum())


# ---- vk.Generator and the default generator ----

def test_generator_api_matches_torch():
    g = vk.Generator()
    tg = torch.Generator()
    assert g.initial_seed() == tg.initial_seed() == 67280421310721
    assert g.manual_seed(3) is g and tg.manual_seed(3) is tg
    assert g.initial_seed() == 3
    assert str(g.device) == "cpu"
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1 == torch.Generator().manual_seed(-1).initial_seed()
    with pytest.raises(ValueError):
        g.manual_seed(2 ** 64)
    with pytest.raises(TypeError):
        g.manual_seed(1.5)
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    assert vk.Generator(device="vulkan").device == vk.device("vulkan")
    assert isinstance(vk.default_generator, vk.Generator)
    assert vk.manual_seed(5) is vk.default_generator and vk.initial_seed() == 5
    assert isinstance(vk.seed(), int)


def test_generator_state_round_trips():
    g = vk.Generator().manual_seed(7)
    vk.rand(3, generator=g)
    state = g.get_state()
    assert isinstance(state, vk.Tensor) and state.dtype == vk.int64 and state.shape == (2,)
    a = vk.randn(5, generator=g).tolist()
    vk.rand(9, generator=g)
    assert g.set_state(state) is g
    assert vk.randn(5, generator=g).tolist() == a
    g2 = vk.Generator()
    g2.set_state(state)  # another generator continues the same stream
    g.set_state(state)
    assert vk.rand(4, generator=g2).tolist() == vk.rand(4, generator=g).tolist()
    with pytest.raises(RuntimeError, match="int64 tensor of 2 elements"):
        g.set_state(vk.zeros(3))
    # the default generator: get_rng_state / set_rng_state, also from tuple(state) (saved files)
    vk.manual_seed(1)
    st = vk.get_rng_state()
    b = vk.rand(3).tolist()
    vk.set_rng_state(st)
    assert vk.rand(3).tolist() == b
    vk.set_rng_state(tuple(st))
    assert vk.rand(3).tolist() == b
    vk.set_rng_state(st.tolist())
    assert vk.rand(3).tolist() == b


def test_a_generator_is_independent_of_the_default():
    vk.manual_seed(11)
    before = vk.get_rng_state().tolist()
    g = vk.Generator().manual_seed(11)
    a = vk.rand(6, generator=g).tolist()
    vk.randperm(5, generator=g)
    vk.multinomial(vk.ones(4), 2, generator=g)
    vk.bernoulli(vk.full((3,), 0.5), generator=g)
    vk.normal(vk.zeros(3), 1.0, generator=g)
    vk.poisson(vk.ones(3), generator=g)
    vk.randint(0, 5, (3,), generator=g)
    vk.rand_like(vk.zeros(2), generator=g)
    vk.randn_like(vk.zeros(2), generator=g)
    vk.zeros(4).uniform_(generator=g)
    vk.zeros(4).normal_(generator=g)
    vk.zeros(4).bernoulli_(0.5, generator=g)
    assert vk.get_rng_state().tolist() == before
    assert vk.rand(6).tolist() == a  # the same seed: the same numbers


@pytest.mark.parametrize("fn", [
    lambda g: vk.rand(5, generator=g), lambda g: vk.randn(2, 3, generator=g),
    lambda g: vk.randint(0, 9, (5,), generator=g), lambda g: vk.randint(9, (5,), generator=g),
    lambda g: vk.rand_like(vk.zeros(4), generator=g), lambda g: vk.randn_like(vk.zeros(4), generator=g),
    lambda g: vk.randperm(8, generator=g), lambda g: vk.multinomial(vk.ones(2, 5), 3, generator=g),
    lambda g: vk.bernoulli(vk.full((6,), 0.5), generator=g), lambda g: vk.bernoulli(vk.zeros(6), 0.5, generator=g),
    lambda g: vk.normal(vk.zeros(4), vk.ones(4), generator=g), lambda g: vk.normal(0.0, 1.0, (4,), generator=g),
    lambda g: vk.poisson(vk.full((5,), 3.0), generator=g),
    lambda g: vk.zeros(5).uniform_(-1, 1, generator=g), lambda g: vk.zeros(5).normal_(2, 3, generator=g),
    lambda g: vk.zeros(5).bernoulli_(0.3, generator=g), lambda g: vk.ones(4).multinomial(2, generator=g),
], ids=lambda f: "")
def test_every_random_function_takes_a_generator(fn):
    g = vk.Generator()
    a = fn(g.manual_seed(42)).tolist()
    off = g.get_state().tolist()[1]
    assert off > 0, "the generator did not advance"
    assert fn(g.manual_seed(42)).tolist() == a
    assert fn(g).tolist() != a or off == 0  # the stream moved on
    with pytest.raises(TypeError, match="generator"):
        fn(object())


def test_nn_init_takes_a_generator():
    w = vk.zeros(4, 5)
    a = vk.nn.init.kaiming_uniform_(w, generator=vk.Generator().manual_seed(3)).tolist()
    b = vk.nn.init.kaiming_uniform_(vk.zeros(4, 5), generator=vk.Generator().manual_seed(3)).tolist()
    assert a == b
    assert vk.nn.init.normal_(vk.zeros(3), generator=vk.Generator().manual_seed(1)).tolist() == \
        vk.nn.init.normal_(vk.zeros(3), generator=vk.Generator().manual_seed(1)).tolist()


def test_generator_device_must_match():
    g = vk.Generator(device="vulkan")
    with pytest.raises(RuntimeError, match="expected a 'cpu' device type for generator but found 'vulkan'"):
        vk.rand(2, generator=g)
    with pytest.raises(RuntimeError, match="randperm"):
        vk.randperm(3, generator=g)


# ---- signatures, dtypes, shapes as torch ----

def test_randperm_as_torch():
    for n in (0, 1, 10):
        v, t = vk.randperm(n), torch.randperm(n)
        assert v.dtype == vk.int64 and v.shape == tuple(t.shape)
        assert sorted(v.tolist()) == list(range(n))
    for dt in ("int32", "float32", "float64"):
        assert vk.randperm(5, dtype=getattr(vk, dt)).dtype == getattr(vk, dt)
    assert vk.randperm(3, requires_grad=False).requires_grad is False
    with pytest.raises(RuntimeError, match="randperm"):
        vk.randperm(-1)
    with pytest.raises(TypeError):
        vk.randperm(3, vk.Generator())  # generator is keyword-only, as torch


def test_multinomial_as_torch():
    p = vk.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 1.0]])
    v = vk.multinomial(p, 2)
    assert v.dtype == vk.int64 and v.shape == (2, 2)
    assert vk.multinomial(vk.ones(3), 5, True).shape == (5,)
    assert vk.multinomial(vk.ones(3), num_samples=2, replacement=False).shape == (2,)
    assert p.multinomial(1).shape == (2, 1)
    bad = [
        (vk.tensor([0.0, 0.0]), 1, False, "sum of probabilities <= 0"),
        (vk.tensor([-1.0, 1.0]), 1, False, "element < 0"),
        (vk.tensor([math.inf, 1.0]), 1, False, "inf"),
        (vk.tensor([math.nan, 1.0]), 1, False, "nan"),
        (vk.tensor([1.0, 1.0]), 3, False, "without replacement"),
        (vk.tensor([1.0, 1.0]), 0, True, "n_sample <= 0"),
    ]
    for probs, k, repl, msg in bad:
        with pytest.raises(RuntimeError, match=msg):
            vk.multinomial(probs, k, repl)
        with pytest.raises(RuntimeError):
            torch.multinomial(torch.tensor(probs.tolist()), k, repl)
    with pytest.raises(vk.ShapeError, match="1 or 2 dim"):
        vk.multinomial(vk.ones(2, 2, 2), 1)
    with pytest.raises(vk.DTypeError):
        vk.multinomial(vk.tensor([1, 2]), 1)


def test_bernoulli_normal_poisson_as_torch():
    p = vk.tensor([0.0, 1.0, 1.0], dtype=vk.float64)
    assert vk.bernoulli(p).tolist() == [0.0, 1.0, 1.0] and vk.bernoulli(p).dtype == vk.float64
    assert vk.bernoulli(vk.zeros(3), p=1.0).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        vk.bernoulli(vk.tensor([1.5]))
    x = vk.zeros(4)
    assert x.bernoulli_(1.0) is x and x.tolist() == [1.0] * 4
    assert x.uniform_(2, 3) is x and all(2 <= v < 3 for v in x.tolist())
    assert x.normal_(5, 0) is x and x.tolist() == [5.0] * 4

    m = vk.tensor([1.0, 2.0])
    assert vk.normal(m, 0.0).tolist() == [1.0, 2.0]
    assert vk.normal(m).shape == (2,)  # std defaults to 1, as torch's (Tensor mean, float std=1)
    assert vk.normal(2.0, vk.zeros(3)).tolist() == [2.0] * 3
    assert vk.normal(vk.zeros(2, 3), vk.ones(3)).shape == (2, 3)
    f = vk.normal(0.0, 1.0, (2, 5))
    assert f.shape == (2, 5) and f.dtype == vk.float32
    assert vk.normal(0.0, 1.0, size=(3,), dtype=vk.float64).dtype == vk.float64
    # mean's dtype, as torch (whose normal(float32, float64) is float32)
    assert vk.normal(vk.ones(2), vk.ones(2, dtype=vk.float64)).dtype == vk.float32
    with pytest.raises(TypeError, match="size"):
        vk.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        vk.normal(m, -1.0)
    with pytest.raises(RuntimeError, match="all elements of std >= 0.0"):
        vk.normal(m, vk.tensor([1.0, -1.0]))

    assert vk.poisson(vk.zeros(3)).tolist() == [0.0] * 3
    assert vk.poisson(vk.ones(2, dtype=vk.float64)).dtype == vk.float64
    with pytest.raises(RuntimeError, match="non-negative"):
        vk.poisson(vk.tensor([-1.0]))


def test_gradients_are_zero_as_torch():
    for fn in (lambda m, x: m.normal(x, 1.0), lambda m, x: m.normal(x, x * 0 + 1),
               lambda m, x: m.bernoulli(x * 0 + 0.5), lambda m, x: m.poisson(x)):
        for m in (vk, torch):
            x = m.tensor([0.5, 2.0], requires_grad=True)
            y = fn(m, x)
            assert y.requires_grad
            y.sum().backward()
            assert x.grad.tolist() == [0.0, 0.0]


# ---- distributions ----

def test_rand_randn_randint_distributions():
    g = vk.Generator().manual_seed(1)
    n = 200000
    counts = np.bincount(to_np(vk.randint(0, 10, (n,), generator=g)), minlength=10)
    assert chi2(counts, [0.1] * 10) < chi2_bound(9)
    u = to_np(vk.rand(n, generator=g))
    assert chi2(np.histogram(u, bins=20, range=(0, 1))[0], [0.05] * 20) < chi2_bound(19)
    z = to_np(vk.randn(n, dtype=vk.float64, generator=g))
    assert abs(z.mean()) < Z / math.sqrt(n) and abs(z.var() - 1) < Z * math.sqrt(2 / n)


@pytest.mark.parametrize("device", devices())
def test_multinomial_distributions(device):
    g = vk.Generator(device=device).manual_seed(2)
    w = [1.0, 0.0, 3.0, 6.0]
    s = to_np(vk.multinomial(vk.tensor(w, device=device), 100000, replacement=True, generator=g).cpu())
    counts = np.bincount(s, minlength=4)
    assert counts[1] == 0
    assert chi2(counts, np.array(w) / 10) < chi2_bound(2)
    rows = 40000
    probs = vk.tensor([[0.5, 0.3, 0.2]] * rows, device=device)
    s = to_np(vk.multinomial(probs, 3, generator=g).cpu())
    assert all(sorted(r) == [0, 1, 2] for r in s[:1000])
    assert (np.sort(s, axis=1) == [0, 1, 2]).all()
    # the order of draws: P(first = i, second = j) = p_i p_j / (1 - p_i)
    p = [0.5, 0.3, 0.2]
    pairs = np.bincount(s[:, 0] * 3 + s[:, 1], minlength=9)
    expected = [p[i] * p[j] / (1 - p[i]) if i != j else 0.0 for i in range(3) for j in range(3)]
    assert chi2(pairs, expected) < chi2_bound(5)


@pytest.mark.parametrize("device", devices())
def test_bernoulli_normal_poisson_distributions(device):
    g = vk.Generator(device=device).manual_seed(3)
    n = 100000
    b = to_np(vk.bernoulli(vk.full((n,), 0.2, device=device), generator=g).cpu())
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.2) < Z * math.sqrt(0.16 / n)
    x = to_np(vk.normal(vk.full((n,), 3.0, device=device), 2.0, generator=g).cpu()).astype(np.float64)
    assert abs(x.mean() - 3) < Z * 2 / math.sqrt(n) and abs(x.var() - 4) < Z * 4 * math.sqrt(2 / n)
    for lam in (0.7, 6.0, 25.0, 400.0):
        k = to_np(vk.poisson(vk.full((n,), lam, dtype=vk.float64, device=device), generator=g).cpu())
        assert (k == np.floor(k)).all() and (k >= 0).all()
        assert abs(k.mean() - lam) < Z * math.sqrt(lam / n)
        assert abs(k.var() - lam) < Z * math.sqrt((lam + 2 * lam * lam) / n)


def test_randperm_orders_are_uniform():
    g = vk.Generator().manual_seed(4)
    seen = {}
    for _ in range(12000):
        key = tuple(vk.randperm(3, generator=g).tolist())
        seen[key] = seen.get(key, 0) + 1
    assert len(seen) == 6
    assert chi2(list(seen.values()), [1 / 6] * 6) < chi2_bound(5)


# ---- devices ----

def test_same_seed_same_numbers_on_every_device():
    if "vulkan" not in devices():
        pytest.skip("no vulkan device")

    def draws(device):
        g = vk.Generator(device=device).manual_seed(99)
        p = vk.tensor([[1.0, 2.0, 0.0, 4.0], [1.0, 1.0, 1.0, 1.0]], device=device)
        r = vk.tensor([0.5, 3.0, 12.0, 80.0], device=device)
        return [vk.randperm(20, generator=g, device=device), vk.multinomial(p, 3, generator=g),
                vk.multinomial(p, 6, True, generator=g), vk.bernoulli(r / 100, generator=g),
                vk.normal(r, 1.5, generator=g), vk.poisson(r, generator=g),
                vk.rand(5, generator=g, device=device), vk.randint(0, 7, (5,), generator=g, device=device),
                vk.zeros(4, device=device).uniform_(generator=g)]

    for a, b in zip(draws("cpu"), draws("vulkan")):
        assert b.device == vk.device("vulkan")
        assert a.tolist() == b.cpu().tolist()
