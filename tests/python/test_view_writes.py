"""Recorded writes through views (y[:, 0].fill_(0), buf[:, t].copy_(h), y.view(-1).add_(1)) and
views taken before a write: as torch's CopySlices and view regeneration, the base's history takes
the write (a strided_scatter of it into the base's node) and every tensor over that memory is
taken again from it. Each case runs in torch and vkml on the same float64 inputs: the same values,
gradients, second-order gradients, and the same refusals."""
import numpy as np
import pytest
import torch

import vkml as vk


def both(program, *arrays):
    """program(lib, *leaves) -> loss, run in both libraries; returns (vkml's, torch's) gradients
    and losses."""
    out = []
    for lib in (vk, torch):
        leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
        loss = program(lib, *leaves)
        loss.backward()
        out.append((loss.item(), [x.grad.numpy().copy() if x.grad is not None else None
                                  for x in leaves]))
    (got_loss, got), (want_loss, want) = out
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-12)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


RNG = np.random.default_rng(7)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(3, 4))


def fill_a_column(lib, a, b):
    y = a * b
    y[:, 0].fill_(0.5)
    return (y * y).sum()


def add_through_a_flat_view(lib, a, b):
    y = a.sin()
    y.view(-1).add_(b.view(-1))
    return (y * a).sum()


def mul_a_row_by_a_leaf(lib, a, b):
    y = a * 2
    y[1].mul_(b[1])
    return (y ** 2).sum()


def zero_a_row_of_a_transpose(lib, a, b):
    y = a * b
    y.t()[2].zero_()
    return (y.exp()).sum()


def mul_through_a_narrow_view(lib, a, b):
    y = a + b
    y.narrow(1, 1, 2).mul_(b[:, 1:3])
    y[0, 1:3].mul_(3.0)  # a view of a view
    return (y * b).sum()


def copy_rows_into_a_buffer(lib, a, b):
    buf = lib.zeros(3, 4, dtype=lib.float64)
    for t in range(4):
        buf[:, t].copy_(a[:, t] * b[:, (t + 1) % 4])
    assert buf.requires_grad and not buf.is_leaf  # its history now holds the writes
    return (buf * buf.cumsum(1)).sum()


def augmented_assignment_on_a_slice(lib, a, b):
    y = a * b
    y[:, :2] *= 0.5  # tmp = y[:, :2]; tmp *= 0.5; y[:, :2] = tmp
    y[..., 2:] = y[..., 2:].tanh()
    return (y * a).sum()


def write_then_read_a_view_taken_before(lib, a, b):
    y = a * 1.0
    v = y[0]  # taken before the writes: regenerated from the write's history
    w = y[:, 1]
    y[0, 1:] = b[0, 1:] ** 2
    y[:, 1].mul_(a[:, 1])
    return (v * b[1]).sum() + (w ** 2).sum() + y.sum()


def write_through_a_view_taken_before(lib, a, b):
    y = a.cos()
    v = y[1:]
    y[2].add_(b[2])  # v is stale after this
    v.mul_(b[1:])  # and written through: regenerated first
    return (y * y).sum() + v.sum()


def scatter_kinds_through_views(lib, a, b):
    y = a * b
    y[0].clamp_(min=-0.2, max=0.3)
    y[1][y[1] > 0] = 0.0  # a mask write into a view
    y[2].masked_fill_(b[2] > 0, 1.5)
    y[:, 3].copy_(a[:, 0])
    return (y * a).sum()


PROGRAMS = [fill_a_column, add_through_a_flat_view, mul_a_row_by_a_leaf,
            zero_a_row_of_a_transpose, mul_through_a_narrow_view, copy_rows_into_a_buffer,
            augmented_assignment_on_a_slice, write_then_read_a_view_taken_before,
            write_through_a_view_taken_before, scatter_kinds_through_views]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__ for p in PROGRAMS])
def test_writes_through_views_match_torch_regression(program):
    both(program, A, B)


def test_second_order_through_a_write_through_a_view():
    out = []
    for lib in (vk, torch):
        a = lib.tensor(A, requires_grad=True)
        y = a * a
        y[1:, 2].mul_(a[1:, 0])
        (g,) = lib.autograd.grad((y ** 2).sum(), a, create_graph=True)
        (g * g).sum().backward()
        out.append((g.detach().numpy().copy(), a.grad.numpy().copy()))
    for got, want in zip(*out):
        np.testing.assert_allclose(got, want, rtol=1e-11)


def test_the_base_object_takes_the_write_regression():
    # buf[:, t].copy_(h): the object `buf` stands for the written memory, with its history
    for lib in (vk, torch):
        x = lib.ones(2, 3, requires_grad=True)
        buf = lib.zeros(2, 3)
        before = buf
        buf[:, 0].copy_(x[:, 0] * 2)
        assert buf is before and buf.requires_grad and buf.grad_fn is not None
        buf.sum().backward()
        assert x.grad.tolist() == [[2.0, 0.0, 0.0], [2.0, 0.0, 0.0]]


def test_writing_the_memory_of_a_leaf_requiring_grad_is_refused_in_both():
    for lib in (vk, torch):
        w = lib.ones(3, 4, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf"):
            w[0].mul_(2)
        with pytest.raises(RuntimeError):
            w.view(-1).add_(1)
        with lib.no_grad():
            v = w[1]
        with pytest.raises(RuntimeError):
            v.mul_(2)  # torch: a view of a leaf; vkml: the same message
        with lib.no_grad():
            w[0].mul_(2)  # an optimizer-style update
        assert w[0].tolist() == [2.0] * 4


def test_a_view_made_under_no_grad_of_a_result_is_refused_in_both():
    for lib in (vk, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        with lib.no_grad():
            v = y[:2]
        with pytest.raises(RuntimeError, match="no_grad"):
            v.mul_(x[:2])  # no history links v to y: the write could not reach y's gradient
        with pytest.raises(RuntimeError, match="no_grad"):
            v.zero_()


def test_a_loop_of_writes_through_views_of_a_buffer():
    # a recurrent-style loop writing rows and parts of rows (tests/cpp/test_inplace_record.cpp
    # checks that the nodes it makes are freed: the base holds its successor weakly)
    x = vk.ones(8, 4, requires_grad=True)
    for _ in range(3):
        buf = vk.zeros(8, 4)
        for t in range(8):
            buf[t].copy_(x[t] * t)
            buf[t, :2].mul_(2.0)
        buf.sum().backward()
    expected = np.repeat(np.arange(8.0)[:, None], 4, 1) * np.array([2.0, 2.0, 1.0, 1.0]) * 3
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_a_view_taken_before_a_write_describes_its_new_history_regression():
    # its autograd attributes are read after taking it again, as its ops' inputs are
    for lib in (vk, torch):
        x = lib.ones(3, requires_grad=True)
        buf = lib.zeros(2, 3)
        v = buf[0]
        assert not v.requires_grad
        buf[0] = x * 2
        assert v.requires_grad and v.grad_fn is not None and not v.is_leaf
        v.backward(lib.tensor([1.0, 2.0, 3.0]))
        assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_retain_grad_follows_the_written_view_and_keeps_the_source_flag():
    got = []
    for lib in (vk, torch):
        x = lib.tensor(A[0], requires_grad=True)
        y = x * 2
        v = y[1:3]
        v.retain_grad()
        src = x[:2] * 3
        src.retain_grad()
        v.copy_(src)
        ((y * y).sum() + (v * v * 5).sum()).backward()
        got.append((v.grad.tolist(), src.grad.tolist(), x.grad.tolist()))
    np.testing.assert_allclose(np.array(got[0][0]), np.array(got[1][0]), rtol=1e-6)
    np.testing.assert_allclose(np.array(got[0][1]), np.array(got[1][1]), rtol=1e-6)
    np.testing.assert_allclose(np.array(got[0][2]), np.array(got[1][2]), rtol=1e-6)
    got = []
    for lib in (vk, torch):  # a setitem into the view (its region node took the flag first)
        x = lib.tensor(A[0], requires_grad=True)
        y = x * 2
        v = y[1:]
        v.retain_grad()
        v[1:] = x[:2] * 3
        ((y * y).sum() + (v * v * 5).sum()).backward()
        got.append((v.grad.tolist(), x.grad.tolist()))
    for g, w in zip(*got):
        np.testing.assert_allclose(g, w, rtol=1e-6)
