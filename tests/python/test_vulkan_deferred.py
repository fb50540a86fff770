"""vkfix (issue #14, item 3): an embedding + cross-entropy training step on the Vulkan device never
waits for the device before its loss is read (the index ops check their index on the device), an
index out of range is an IndexError raised at the next read, naming the op, and scatter_add is
bitwise the same from run to run. Compared with torch on the CPU."""
import os

import numpy as np
import pytest
import torch

import vkml as vk

if not vk.vulkan.is_available():
    if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
        raise RuntimeError("VKML_REQUIRE_VULKAN=1 but the Vulkan device is unavailable")
    pytest.skip("no Vulkan device", allow_module_level=True)


def _step_losses(m, device, steps, on_step=None):
    gen = np.random.default_rng(5)
    tokens = gen.integers(0, 11, size=(steps, 3, 4))
    targets = gen.integers(0, 7, size=(steps, 12))
    m.manual_seed(0)
    emb = m.nn.Embedding(11, 6)
    head = m.nn.Linear(6, 7)
    with m.no_grad():
        emb.weight.copy_(m.tensor(np.linspace(-1, 1, 66).reshape(11, 6), dtype=m.float32))
        head.weight.copy_(m.tensor(np.linspace(1, -1, 42).reshape(7, 6), dtype=m.float32))
        head.bias.zero_()
    emb.to(device)
    head.to(device)
    opt = m.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.5)
    losses = []
    for s in range(steps):
        x = m.tensor(tokens[s]).to(device)
        y = m.tensor(targets[s]).to(device)
        opt.zero_grad()
        loss = m.nn.functional.cross_entropy(head(emb(x)).reshape(12, 7), y)
        loss.backward()
        opt.step()
        if on_step:
            on_step(lambda: losses.append(loss.item()))
        else:
            losses.append(loss.item())
    return losses


def test_an_embedding_cross_entropy_step_waits_only_for_its_loss():
    waits = []

    def on_step(read_loss):
        before = vk.vulkan.memory_stats()["host_waits"]
        read_loss()
        after = vk.vulkan.memory_stats()["host_waits"]
        waits.append((before, after))

    got = _step_losses(vk, "vulkan", 4, on_step)
    want = _step_losses(torch, "cpu", 4)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # One whole step (after the first: its uploads of fresh tensors) from one loss read to the
    # next: the read is its only wait.
    for (_, a0), (b1, a1) in zip(waits[1:], waits[2:]):
        assert b1 == a0, "the step waited for the device before its loss was read"
        assert a1 - b1 == 1


def test_an_index_out_of_range_is_raised_at_the_next_read_naming_the_op():
    x = vk.arange(6.0).reshape(2, 3).to("vulkan")
    y = vk.index_select(x, 1, vk.tensor([0, 3]).to("vulkan"))  # recorded: no error yet
    with pytest.raises(IndexError, match=r"index_select: index 3 is out of range for dim 1 of size 3"):
        y.tolist()
    assert x.index_select(1, vk.tensor([2]).to("vulkan")).tolist() == [[2.0], [5.0]]
    emb = vk.nn.Embedding(4, 2).to("vulkan")
    out = emb(vk.tensor([1, -1]).to("vulkan"))
    with pytest.raises(IndexError, match="index -1"):
        vk.vulkan.synchronize()
    logits = vk.zeros(2, 3, device="vulkan")
    with pytest.raises(IndexError, match="gather: index 5"):
        vk.nn.functional.cross_entropy(logits, vk.tensor([0, 5]).to("vulkan")).item()
    with pytest.raises(IndexError):  # torch too, at its call
        torch.nn.functional.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 5]))
    del out


def test_scatter_add_is_bitwise_the_same_every_run_and_torchs_sum():
    gen = np.random.default_rng(3)
    src = (gen.standard_normal((300, 5)) * 10.0 ** gen.integers(-3, 4, (300, 5))).astype(np.float32)
    index = gen.integers(0, 4, size=(300, 5))
    base = np.zeros((4, 5), dtype=np.float32)
    d = [vk.tensor(base).to("vulkan").scatter_add(0, vk.tensor(index).to("vulkan"),
                                                  vk.tensor(src).to("vulkan")).cpu().numpy()
         for _ in range(2)]
    assert d[0].tobytes() == d[1].tobytes()
    cpu = vk.tensor(base).scatter_add(0, vk.tensor(index), vk.tensor(src)).numpy()
    assert d[0].tobytes() == cpu.tobytes()  # the CPU's order of the sums
    want = torch.zeros(4, 5, dtype=torch.float64).scatter_add(
        0, torch.tensor(index), torch.tensor(src, dtype=torch.float64))
    np.testing.assert_allclose(d[0], want.numpy(), rtol=1e-5, atol=1e-5)


# ---- hostwait (issue #14): integer //, %, **, fmod, one_hot with num_classes and the index checks
# of the scatter/index_put/masked_scatter/take composites never wait for the device; bad input is
# raised at the next host read (the error word), with torch's error. ----


def _waits():
    return vk.vulkan.memory_stats()["host_waits"]


def _no_wait(fn):
    """fn() on inputs already on the device, checked not to wait for it."""
    vk.vulkan.synchronize()
    before = _waits()
    out = fn()
    assert _waits() == before, "the op waited for the device"
    return out


def _dev(values, dtype=None):
    t = vk.tensor(values, dtype=dtype).to("vulkan")
    vk.vulkan.synchronize()
    return t


@pytest.mark.parametrize("dt", [vk.int32, vk.int64])
def test_integer_division_and_power_do_not_wait_and_raise_at_the_next_read(dt):
    a, b = _dev([7, -7, 5, -9], dt), _dev([2, 3, -4, 5], dt)
    ta, tb = torch.tensor([7, -7, 5, -9]), torch.tensor([2, 3, -4, 5])
    assert _no_wait(lambda: a // b).tolist() == (ta // tb).tolist()
    assert _no_wait(lambda: a % b).tolist() == (ta % tb).tolist()
    assert _no_wait(lambda: vk.fmod(a, b)).tolist() == torch.fmod(ta, tb).tolist()
    e, neg_e = _dev([2, 0, 3, 1], dt), _dev([1, -1, -2, -3], dt)
    assert _no_wait(lambda: b ** e).tolist() == (tb ** torch.tensor([2, 0, 3, 1])).tolist()
    # negative exponents: 1 / b^-e truncated, as torch's (-1 and 1 bases keep their sign rule)
    base = _dev([2, -1, 1, -1], dt)
    assert _no_wait(lambda: base ** neg_e).tolist() == \
        (torch.tensor([2, -1, 1, -1]) ** torch.tensor([1, -1, -2, -3])).tolist() == [2, -1, 1, -1]
    zero = _dev([2, 3, 0, 5], dt)
    for fn, name in [(lambda: a // zero, "floor_divide"), (lambda: a % zero, "remainder"),
                     (lambda: vk.fmod(a, zero), "fmod")]:
        out = _no_wait(fn)
        with pytest.raises(RuntimeError, match=f"{name}: ZeroDivisionError"):  # torch's text
            out.tolist()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([1]) // torch.tensor([0])
    assert (a // b).tolist() == (ta // tb).tolist()  # no error left over


def test_one_hot_with_num_classes_does_not_wait_and_raises_torchs_error_at_the_next_read():
    idx = _dev([[0, 2], [1, 2]])
    got = _no_wait(lambda: vk.nn.functional.one_hot(idx, 4))
    assert got.device.type == "vulkan"
    assert got.tolist() == torch.nn.functional.one_hot(torch.tensor([[0, 2], [1, 2]]), 4).tolist()
    for values, msg in [([0, 4], "Class values must be smaller than num_classes"),
                        ([-1, 0], "Class values must be non-negative")]:
        bad = _dev(values)
        out = _no_wait(lambda: vk.nn.functional.one_hot(bad, 4))
        with pytest.raises(RuntimeError, match=f"one_hot: {msg}"):
            out.tolist()
        with pytest.raises(RuntimeError, match=msg):
            torch.nn.functional.one_hot(torch.tensor(values), 4)
    # num_classes=-1: the output's shape is the largest value + 1, read back: one documented wait
    vk.vulkan.synchronize()
    before = _waits()
    assert vk.nn.functional.one_hot(idx).shape == (2, 2, 3)
    assert _waits() == before + 1


def test_index_composites_do_not_wait_and_raise_a_bad_index_at_the_next_read():
    gen = np.random.default_rng(0)
    x = gen.standard_normal((4, 3)).astype(np.float32)
    index = gen.integers(0, 4, size=(5, 3))
    src = gen.standard_normal((5, 3)).astype(np.float32)
    mask = gen.random((4, 3)) > 0.5
    X, I, S, M, rows = _dev(x), _dev(index), _dev(src), _dev(mask), _dev([3, 0, 2])
    tx, ti, ts, tm = torch.tensor(x), torch.tensor(index), torch.tensor(src), torch.tensor(mask)
    cases = [
        (lambda: X.scatter_reduce(0, I, S, "sum"), tx.scatter_reduce(0, ti, ts, "sum")),
        (lambda: X.scatter_reduce(0, I, S, "mean", include_self=False),
         tx.scatter_reduce(0, ti, ts, "mean", include_self=False)),
        (lambda: X.scatter(0, I[:1], S), tx.scatter(0, ti[:1], ts)),
        (lambda: X.index_put((rows,), S[:3, :1]), tx.index_put((torch.tensor([3, 0, 2]),), ts[:3, :1])),
        (lambda: X.index_put((I[:, 0],), S[:, :1], accumulate=True),
         tx.index_put((ti[:, 0],), ts[:, :1], accumulate=True)),
        (lambda: X.masked_scatter(M, S), tx.masked_scatter(tm, ts)),
        (lambda: vk.take(X, I), torch.take(tx, ti)),
    ]
    for k, (fn, want) in enumerate(cases):
        got = _no_wait(fn)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, atol=1e-6,
                                   err_msg=f"case {k}")
    bad, bad_flat = _dev([[0, 1, 4]]), _dev([12])
    for fn in [lambda: X.scatter_reduce(0, bad, S, "sum"), lambda: X.scatter(0, bad, S),
               lambda: X.index_put((bad[0],), S[0, :1]), lambda: vk.take(X, bad_flat)]:
        out = _no_wait(fn)
        with pytest.raises(IndexError, match="out of bounds for size"):
            out.tolist()
    out = _no_wait(lambda: X.masked_scatter(M, S[:1, :1]))
    if mask.sum() > 1:
        with pytest.raises(RuntimeError, match="masked_scatter: Number of elements of source"):
            out.tolist()


# ---- the last host waits that did not come from a value-dependent shape: x[idx] and index_put
# with tensor indices (their bounds), binary_cross_entropy (its probability range),
# scatter_reduce / index_reduce prod, amax, amin (the widest destination) and embedding_bag's max
# (the longest bag). Each now runs without a wait and still raises bad input at the next read. ----


def test_advanced_indexing_does_not_wait_and_raises_a_bad_index_at_the_next_read():
    gen = np.random.default_rng(11)
    x = gen.standard_normal((4, 3)).astype(np.float32)
    X, rows, cols = _dev(x), _dev([3, -1, 0, 3]), _dev([2, 0, 1, 1])
    tx, tr, tc = torch.tensor(x), torch.tensor([3, -1, 0, 3]), torch.tensor([2, 0, 1, 1])
    got = [_no_wait(lambda: X[rows]), _no_wait(lambda: X[rows, cols]),
           _no_wait(lambda: X[:, cols[:2]])]
    want = [tx[tr], tx[tr, tc], tx[:, tc[:2]]]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.cpu().numpy(), w.numpy())
    Y = _dev(x)
    _no_wait(lambda: Y.index_put_((rows, cols), _dev(np.float32(7.0))))
    ty = torch.tensor(x)
    ty.index_put_((tr, tc), torch.tensor(7.0))
    np.testing.assert_array_equal(Y.cpu().numpy(), ty.numpy())
    for fn in [lambda: X[_dev([4])], lambda: X[:, _dev([0, -4])],
               lambda: _dev(x).index_put_((_dev([9]),), _dev(np.float32(1.0)))]:
        out = _no_wait(fn)
        with pytest.raises(IndexError, match="index(_put)?: an index is out of bounds"):
            out.tolist()
    with pytest.raises(IndexError, match="out of bounds for dim 0 with size 4"):  # CPU: at once
        vk.tensor(x)[vk.tensor([4])]


def test_binary_cross_entropy_does_not_wait_and_raises_a_bad_probability_at_the_next_read():
    p = np.array([0.2, 0.9, 0.5], dtype=np.float32)
    y = np.array([1.0, 0.0, 1.0], dtype=np.float32)
    loss = _no_wait(lambda: vk.nn.functional.binary_cross_entropy(_dev(p), _dev(y)))
    want = torch.nn.functional.binary_cross_entropy(torch.tensor(p), torch.tensor(y))
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)
    for bad in ([0.2, 1.5, 0.5], [0.2, float("nan"), 0.5], [-0.1, 0.5, 0.5]):
        out = _no_wait(lambda: vk.nn.functional.binary_cross_entropy(_dev(np.float32(bad)), _dev(y)))
        with pytest.raises(RuntimeError, match="binary_cross_entropy: every element of the input "
                                               "must be a probability"):
            out.item()
    with pytest.raises(RuntimeError, match="found values in"):  # CPU: at once, with the range
        vk.nn.functional.binary_cross_entropy(vk.tensor([1.5]), vk.tensor([1.0]))


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_extremes_do_not_wait_and_match_torch(reduce, include_self):
    gen = np.random.default_rng(13)
    x = gen.integers(-3, 4, (4, 3)).astype(np.float32)  # small integers: many ties
    src = gen.integers(-3, 4, (6, 3)).astype(np.float32)
    index = gen.integers(0, 4, (6, 3))
    X, S, I = _dev(x), _dev(src), _dev(index)
    tx, ts, ti = torch.tensor(x), torch.tensor(src), torch.tensor(index)
    got = _no_wait(lambda: X.scatter_reduce(0, I, S, reduce, include_self=include_self))
    want = tx.scatter_reduce(0, ti, ts, reduce, include_self=include_self)
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    rows = _dev([2, 0, 2, 2, 1, 0])
    got = _no_wait(lambda: X.index_reduce(0, rows, S, reduce, include_self=include_self))
    want = tx.index_reduce(0, torch.tensor([2, 0, 2, 2, 1, 0]), ts, reduce,
                           include_self=include_self)
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    out = _no_wait(lambda: X.scatter_reduce(0, _dev([[0, 4, 1]]), S, reduce))
    with pytest.raises(IndexError, match="scatter_reduce: an index is out of bounds"):
        out.tolist()


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_max_does_not_wait_and_matches_torch(padding_idx):
    gen = np.random.default_rng(17)
    w = gen.standard_normal((6, 4)).astype(np.float32)
    inp, offsets = [1, 2, 2, 5, 0, 3, 2, 4, 4], [0, 3, 3, 4, 7, 9]  # an empty bag, a last one
    W = vk.tensor(w, requires_grad=True, device="vulkan")
    I, O = _dev(inp), _dev(offsets)
    out = _no_wait(lambda: vk.nn.functional.embedding_bag(I, W, O, mode="max",
                                                          padding_idx=padding_idx))
    tw = torch.tensor(w, requires_grad=True)
    want = torch.nn.functional.embedding_bag(torch.tensor(inp), tw, torch.tensor(offsets),
                                             mode="max", padding_idx=padding_idx)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), want.detach().numpy())
    g = gen.standard_normal(tuple(want.shape)).astype(np.float32)
    out.backward(vk.tensor(g, device="vulkan"))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(W.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-6)
    out = _no_wait(lambda: vk.nn.functional.embedding_bag(I, W, _dev([0, 5, 3]), mode="max"))
    with pytest.raises(RuntimeError, match="embedding_bag: offsets must be non-decreasing"):
        out.tolist()
