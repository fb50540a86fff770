"""In-place writes recorded by autograd (ops/inplace.h): a write into a tensor that requires grad,
or of a value that requires grad, while grad mode is on. Each program is written as PyTorch
programs write it and runs in both libraries on the same float64 inputs: the values, the
gradients and the version counters must agree. Before the write was recorded, every program here
raised in vkml ("writing a value that requires grad into a tensor in place would drop its
graph")."""
import inspect

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close

rng = np.random.default_rng(7)


def run_both(program, *arrays, tol=1e-12):
    """program(lib, *leaves) -> a tensor; its sum's gradients in both libraries, compared."""
    results = []
    for lib in (torch, vk):
        leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
        out = program(lib, *leaves)
        (out * lib.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))).sum().backward()
        results.append((out.detach().numpy(), [x.grad for x in leaves]))
    (want, want_grads), (got, got_grads) = results
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    for g, w in zip(got_grads, want_grads):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol)


def test_index_add_of_expert_outputs_regression():
    # a mixture-of-experts layer: each expert's weighted output added back at its tokens' rows
    def moe(lib, x, w1, w2, gate):
        out = lib.zeros_like(x)
        for e, w in enumerate((w1, w2)):
            tok = lib.tensor([0, 2, 5] if e == 0 else [1, 2, 3, 4])
            out.index_add_(0, tok, (x[tok] @ w).tanh() * gate[tok, e:e + 1])
        return out
    run_both(moe, rng.normal(size=(6, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 4)),
             rng.random((6, 2)))


def test_setitem_in_a_recurrent_loop_regression():
    def rnn(lib, x, w):
        out = lib.zeros(2, 5, 3, dtype=lib.float64)
        h = lib.zeros(2, 3, dtype=lib.float64)
        for t in range(5):
            h = lib.tanh(x[:, t] + h @ w)
            out[:, t] = h
        return out
    run_both(rnn, rng.normal(size=(2, 5, 3)), rng.normal(size=(3, 3)))


def test_masked_fill_of_attention_scores_regression():
    def attend(lib, q, k):
        s = q @ k.transpose(0, 1) / 2.0
        s.masked_fill_(lib.ones(4, 4).triu(1).bool(), float("-inf"))
        return lib.softmax(s, -1)
    run_both(attend, rng.normal(size=(4, 3)), rng.normal(size=(4, 3)))


def test_setitem_of_decoded_boxes_regression():
    # YOLO-style decoding: slices of a prediction rewritten from themselves
    def decode(lib, p):
        y = p + 0.5  # (a sigmoid here would refuse in both: its rule reads its output)
        grid = lib.tensor([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0]], dtype=lib.float64)
        y[..., :2] = y[..., :2] * 2 + grid
        y[..., 2:4] = (y[..., 2:4] * 2) ** 2
        return y
    run_both(decode, rng.normal(size=(2, 3, 5)))


def test_setitem_with_a_mask_and_advanced_indices_regression():
    def masked(lib, x, v):
        y = x * 2
        y[x > 0] = 0
        y[lib.tensor([0, 3])] = v
        return y
    run_both(masked, rng.normal(size=(5, 2)), rng.normal(size=(2, 2)))


def test_setitem_with_a_repeated_index_gives_the_overwritten_value_no_gradient():
    # the last write wins (torch's CPU rule); the values written over do not reach the result,
    # so their gradient is 0 (torch gives them the gradient of the element as well)
    x = vk.zeros(2, dtype=vk.float64)
    v = vk.tensor([1.0, 2.0, 3.0], dtype=vk.float64, requires_grad=True)
    x[vk.tensor([1, 0, 1])] = v
    assert x.tolist() == [2.0, 3.0]
    (x * vk.tensor([10.0, 100.0], dtype=vk.float64)).sum().backward()
    assert v.grad.tolist() == [0.0, 10.0, 100.0]


def test_chained_inplace_methods_regression():
    def chain(lib, x, b):
        # each rule that reads the values it overwrites keeps them (pow_, clamp_, mul_ by a
        # tensor requiring grad, sin_, lerp_); relu_ reads its output, so it comes last
        y = x @ b
        y.add_(x[:, :1], alpha=0.5).mul_(3).sub_(b[0]).div_(2.0)
        y.pow_(2)
        y.clamp_(max=1.0)
        y.mul_(b)
        y.sin_()
        y.lerp_(b, 0.3)
        y.addcmul_(b, x)
        y.relu_()
        return y
    run_both(chain, rng.normal(size=(3, 3)), rng.normal(size=(3, 3)))


def test_copy_and_scatter_of_values_requiring_grad_regression():
    def place(lib, x, src):
        buf = lib.zeros(3, 4, dtype=lib.float64)
        buf.copy_(x * 3)
        buf.scatter_(1, lib.tensor([[0], [1], [3]]), src)
        out = lib.empty(3, 4, dtype=lib.float64)
        out.copy_(buf)
        return out
    run_both(place, rng.normal(size=(3, 4)), rng.normal(size=(3, 1)))


def test_fill_and_zero_keep_requires_grad_with_zero_gradients():
    for lib in (torch, vk):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        y = x * 2
        assert y.fill_(5.0) is y and y.requires_grad
        z = x * 3
        z.zero_()
        (y + z).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_the_object_keeps_its_identity_and_version():
    for lib in (torch, vk):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        alias = y
        v = y._version
        assert y.mul_(3) is alias and alias._version == v + 1
        y[0] = 0.0
        assert alias._version == v + 2 and alias.tolist() == [0.0, 6.0, 6.0]
        alias.sum().backward()
        assert x.grad.tolist() == [0.0, 6.0, 6.0]


def test_second_order_through_an_inplace_write():
    for lib in (torch, vk):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x * x
        y.mul_(x)  # x^3
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        assert_close(g.detach().numpy(), 3 * np.array([0.5, -1.0, 2.0]) ** 2)
        assert_close(x.grad.numpy(), 6 * np.array([0.5, -1.0, 2.0]))


def test_a_rule_reading_the_overwritten_values_raises_as_torch():
    for lib in (torch, vk):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()  # exp's gradient is g * exp(x), its output
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation|in-place operation"):
            y.sum().backward()
    # sin's reads its input, not its output: writing the output is fine in both
    for lib in (torch, vk):
        x = lib.tensor([0.1, 0.2], requires_grad=True)
        y = x.sin()
        y.mul_(2)
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos([0.1, 0.2]), rtol=1e-6)


def test_a_leaf_requiring_grad_or_a_view_of_one_is_refused():
    w = vk.ones(3, requires_grad=True)
    for write in (lambda: w.add_(1), lambda: w.__setitem__(0, 2.0), lambda: w[1:].zero_(),
                  lambda: w.copy_(vk.zeros(3))):
        with pytest.raises(RuntimeError, match="leaf"):
            write()
    with vk.no_grad():
        w.add_(1)  # an optimizer step
    assert w.tolist() == [2.0, 2.0, 2.0]


def test_a_view_taken_before_a_recorded_write_is_regenerated_regression():
    # as torch: the view's history is taken again from the write's (it was refused, the old
    # history not explaining the new values)
    grads = []
    for lib in (vk, torch):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        v = y[:2]
        y[:2] = x[:2] ** 2
        (v * lib.tensor([1.0, 10.0])).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [2.0, 40.0, 0.0, 0.0]


def test_writes_under_no_grad_do_not_record():
    x = vk.ones(3, requires_grad=True)
    y = x * 2
    v = y[:1]
    with vk.no_grad():
        y.add_(1)
        y[1] = 7.0
    (v * 1).sum().backward()  # no recorded write: v is not refused
    assert x.grad.tolist() == [2.0, 0.0, 0.0]


def test_operators_on_a_view_of_an_intermediate_regression():
    # y[i] += v runs as t = y[i]; t += v; y[i] = t
    def update(lib, x, v):
        y = x * 1
        y[1] += v
        y[:, 0] *= 2
        return y
    run_both(update, rng.normal(size=(3, 2)), rng.normal(size=(2,)))


def test_retain_grad_follows_the_write_and_hooks_stay_with_the_old_values():
    results = []
    for lib in (torch, vk):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        seen = []
        y.register_hook(lambda g, seen=seen: seen.append(g.tolist()))
        y.mul_(3)
        y.relu_()
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        results.append((y.grad.tolist(), seen, x.grad.tolist()))
    assert results[0] == results[1]


def test_a_parameter_set_through_data_stays_usable_regression():
    # a soft target-network update written without no_grad: the write through .data is recorded
    # on the alias, and the parameter (a leaf: no history to contradict) is used as it is now
    results = []
    for lib in (torch, vk):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        p = lib.tensor([0.0, 0.0], requires_grad=True)
        p.data.copy_(0.5 * w + 0.5 * p.data)
        (p * lib.tensor([3.0, 4.0])).sum().backward()
        results.append((p.tolist(), p.grad.tolist(), w.grad))
    assert results[0] == results[1]


# ---- setitem by basic indices: one strided_scatter node that costs the region (#18) ----

def test_recorded_setitem_is_one_region_node_regression():
    # the recorded y[:, t] = h built and copied a tensor of y's size (positions, a scatter and a
    # where over the whole buffer) at every step; now the value goes into the region and the node
    # over y's memory is one strided_scatter whose parents are y's old history and the value
    x = vk.ones(2, 3, requires_grad=True)
    out = vk.zeros(2, 4, 3)
    first = out
    out[:, 1] = x * 2
    assert out is first and out.grad_fn.op == "strided_scatter"
    (old, _), (value, _) = out.grad_fn.next_functions
    assert old is None and value.op == "mul"  # the buffer had no history
    out[:, 2] = x.exp()
    assert out.grad_fn.next_functions[0][0].op == "strided_scatter"


@pytest.mark.parametrize("where", [
    (slice(None), 2), (1,), (Ellipsis, slice(1, None, 2)), (None, 0, slice(None, None, 3)),
    (-1, slice(-3, -1)), (slice(None), slice(None), slice(2, 3)), ()])
def test_setitem_by_basic_indices_matches_torch(where):
    # values, gradients of the buffer's old history and of the value; broadcast values, a value
    # of another dtype (cast), a buffer that is a contiguous part of a bigger one
    def program(lib, a, v):
        big = a * 1.0
        y = big[1]  # (3, 4, 5), contiguous, offset 60
        width = tuple(y[where].shape[-1:])  # the value broadcasts over the region's other dims
        y[where] = (v.sum() * lib.ones(width)).to(lib.float32) * 1.5  # cast to float64
        return y * y
    run_both(program, rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2,)), tol=1e-6)


def test_setitem_into_a_non_contiguous_tensor_and_from_its_own_memory():
    def program(lib, a, v):
        y = (a * 1).t()  # not contiguous: the general path
        y[1:3, 0] = v
        z = a * 2
        z[1:] = z[:-1] * 3  # the value reads the memory it is written into
        return y.sum(0) + z.sum(0)
    run_both(program, rng.normal(size=(4, 4)), rng.normal(size=(2,)))


def test_second_order_through_recorded_setitem():
    for lib in (torch, vk):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = lib.zeros(2, 3, dtype=lib.float64)
        y[0] = x ** 3
        y[1, 1:] = x[:2] * x[1:]
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        xs = np.array([0.5, -1.0, 2.0])
        assert_close(g.detach().numpy(), 3 * xs ** 2 + np.array([xs[1], xs[0] + xs[2], xs[1]]))
        assert_close(x.grad.numpy(), 6 * xs + np.array([1.0, 2.0, 1.0]))


def test_recorded_setitem_regenerates_stale_targets_and_values():
    grads = []
    for lib in (vk, torch):
        x = lib.ones(4, requires_grad=True)
        y = x * 1
        v = y[:2]
        y[2:] = x[2:] * 3
        v[0] = x[0] * 7  # v was taken before the write into y's memory
        y[2:] = v * 2  # and its history is the writes' (v sees the first one)
        y.sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [21.0, 3.0, 0.0, 0.0]


def test_setitem_of_a_value_requiring_grad_into_integers_is_a_plain_write():
    for lib in (torch, vk):
        x = lib.tensor([1.5, 2.5], requires_grad=True)
        y = lib.zeros(3, dtype=lib.int64)
        y[1:] = x * 2
        assert y.tolist() == [0, 3, 5] and not y.requires_grad


def test_detect_anomaly_names_the_line_of_a_recorded_setitem():
    # the node a recorded setitem makes is not made by dispatch: it notes the forward's site itself
    x = vk.ones(2, requires_grad=True)
    y = vk.zeros(3)
    with vk.autograd.detect_anomaly():
        y[1:] = x * 2  # the line named in the error
        line = inspect.currentframe().f_lineno - 1
        with pytest.raises(RuntimeError) as info:
            y.backward(vk.tensor([1.0, float("nan"), 1.0]))  # into the region
    msg = str(info.value)
    assert "strided_scatter" in msg and f"test_inplace_autograd.py:{line}" in msg, msg
