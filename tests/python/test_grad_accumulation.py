"""A leaf's .grad accumulates in place, as torch's (variable.grad += new_grad): a reference to .grad
taken after one backward sees the next one's sum, and gradients bucketed into one flat buffer
(p.grad = flat[i:j].view(p.shape), as flat-gradient optimizers and DDP buckets do) accumulate
there. (vkml added out of place wherever anything else held .grad: the reference kept the first
gradient and the buffer stayed as it was -- silently.) Each case runs in torch and vkml."""
import numpy as np
import pytest
import torch

import vkml as vk


def test_a_held_grad_sees_the_next_backward_regression():
    out = []
    for lib in (vk, torch):
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        (w * 3).sum().backward()
        held = w.grad
        before = held._version
        (w * w).sum().backward()
        assert held._version > before  # written in place, as torch's
        out.append((held.tolist(), w.grad.tolist()))
    assert out[0] == out[1]
    assert out[0][0] == [5.0, 7.0, 9.0]


def test_grads_bucketed_into_one_flat_buffer_accumulate_there_regression():
    out = []
    for lib in (vk, torch):
        lin = lib.nn.Linear(3, 2).double()
        with lib.no_grad():
            lin.weight.copy_(lib.arange(6, dtype=lib.float64).reshape(2, 3) / 10)
            lin.bias.fill_(0.5)
        flat = lib.zeros(8, dtype=lib.float64)
        lin.weight.grad = flat[:6].view(2, 3)
        lin.bias.grad = flat[6:]
        x = lib.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], dtype=lib.float64)
        for _ in range(2):
            lin(x).pow(2).sum().backward()
        out.append(flat.numpy().copy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-13)
    assert np.abs(out[0]).sum() > 0


def test_zero_grad_without_none_then_backward_keeps_the_same_memory():
    out = []
    for lib in (vk, torch):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        (w * w).sum().backward()
        held = w.grad
        opt.zero_grad(set_to_none=False)
        (w * 5).sum().backward()
        out.append(held.tolist())
    assert out[0] == out[1] == [5.0, 5.0]


@pytest.mark.parametrize("lib", [vk, torch], ids=["vkml", "torch"])
def test_create_graph_accumulation_stays_out_of_place(lib):
    w = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    (w * w).sum().backward(create_graph=True)
    first = w.grad
    (w * w * w).sum().backward(create_graph=True)
    assert first.tolist() == [2.0, 4.0]  # a new tensor: the first keeps its values and history
    assert w.grad.tolist() == [5.0, 16.0] and w.grad.requires_grad
