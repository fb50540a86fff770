"""Random programs of recorded in-place writes (ops/inplace.h), run in torch and vkml on the same
float64 inputs: a program is a chain of writes into intermediates (the arithmetic methods,
unary ones, clamp_, setitem with slices, masks and index tensors, masked_fill_, index_add_,
copy_, and writes through views taken then or earlier), out-of-place steps between them, and
views taken along the way and used later. Both libraries must agree: the same values and
gradients, or both refuse. Where only vkml refuses, its message must be the documented difference
(a view taken before a recorded write that cannot be taken again from it, docs/compat.md); where
only torch refuses, vkml's gradients must be the central finite differences of its own forward (a
rule that does not read what was overwritten)."""
import numpy as np
import pytest
import torch

import vkml as vk

SHAPE = (4, 3)


def draw_program(seed):
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(int(rng.integers(2, 8))):
        kind = str(rng.choice([
            "add", "add_leaf", "mul_leaf", "mul_num", "div_leaf", "clamp", "unary", "set_row",
            "set_col", "set_mask", "set_index", "masked_fill", "index_add", "copy", "view",
            "use_view", "out_of_place", "matmul", "write_view", "write_old_view"]))
        steps.append((kind, int(rng.integers(0, 1 << 30))))
    start = str(rng.choice(["scale", "matmul", "sum", "sin"]))
    return start, steps


def run(lib, leaves, program, weights):
    """The program on tensors of `lib` made from the arrays in `leaves`; returns the result."""
    start, steps = program
    a, b, w = leaves
    t = {"scale": lambda: a * 1.5, "matmul": lambda: a @ w, "sum": lambda: a + b,
         "sin": lambda: a.sin()}[start]()
    views = []
    for kind, s in steps:
        r = np.random.default_rng(s)
        i, j = int(r.integers(0, SHAPE[0])), int(r.integers(0, SHAPE[1]))
        if kind == "add":
            t.add_(float(r.uniform(-1, 1)))
        elif kind == "add_leaf":
            t.add_(b, alpha=float(r.choice([1.0, -0.5])))
        elif kind == "mul_leaf":
            t.mul_(b)
        elif kind == "mul_num":
            t.mul_(0.5)
        elif kind == "div_leaf":
            t.div_(b.abs() + 1.0)
        elif kind == "clamp":
            t.clamp_(min=-0.8, max=0.9)
        elif kind == "unary":
            getattr(t, str(r.choice(["relu_", "sigmoid_", "tanh_", "exp_", "sin_", "neg_"])))()
        elif kind == "set_row":
            t[i] = a[j % SHAPE[0]] * 2.0
        elif kind == "set_col":
            t[:, j] = b[:, j].sin()
        elif kind == "set_mask":
            t[t > 0.3] = 0.25
        elif kind == "set_index":
            t[lib.tensor([i, (i + 2) % SHAPE[0]])] = w[: 2] * 0.5
        elif kind == "masked_fill":
            t.masked_fill_(b > 0, float(r.uniform(-1, 1)))
        elif kind == "index_add":
            t.index_add_(0, lib.tensor([i, (i + 1) % SHAPE[0]]), a[1:3] * 0.3)
        elif kind == "copy":
            t.copy_(t * 0.5 + b)
        elif kind == "view":
            views.append(t[i % 2: i % 2 + 2])
        elif kind == "use_view" and views:
            t = t + views[-1].sum()
        elif kind == "write_view":  # through a view taken now: its base takes the write
            how = int(r.integers(0, 4))
            if how == 0:
                t[i].mul_(b[i])
            elif how == 1:
                t[:, j].copy_(a[:, j] * 0.5)
            elif how == 2:
                t.view(-1)[i: i + 5].add_(b.reshape(-1)[:5])
            else:
                t.t()[j].sigmoid_()
        elif kind == "write_old_view" and views:  # through one taken before other writes
            views[-1].mul_(float(r.uniform(-1, 1)))
        elif kind == "out_of_place":
            t = t * 2.0 + a
        elif kind == "matmul":
            t = t @ w
    return (t * weights).sum(), t


def outcome(lib, arrays, program):
    leaves = [lib.tensor(x, dtype=lib.float64, requires_grad=True) for x in arrays]
    weights = lib.tensor(np.linspace(-1.0, 1.5, SHAPE[0] * SHAPE[1]).reshape(SHAPE))
    try:
        loss, t = run(lib, leaves, program, weights)
        loss.backward()
    except RuntimeError as e:
        return "raised", str(e)
    return "ok", (t.detach().numpy().copy(), [x.grad.numpy().copy() if x.grad is not None
                                              else np.zeros(x.shape) for x in leaves])


def finite_differences(arrays, program, eps=1e-6):
    weights = vk.tensor(np.linspace(-1.0, 1.5, SHAPE[0] * SHAPE[1]).reshape(SHAPE))
    grads = []
    for k, x in enumerate(arrays):
        g = np.zeros(x.shape)
        for idx in np.ndindex(x.shape):
            f = []
            for step in (eps, -eps):
                moved = [y.copy() for y in arrays]
                moved[k][idx] += step
                with vk.no_grad():
                    f.append(run(vk, [vk.tensor(y) for y in moved], program, weights)[0].item())
            g[idx] = (f[0] - f[1]) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("batch", range(8))
def test_random_inplace_programs_agree_with_torch(batch):
    counts = {}
    for seed in range(batch * 40, batch * 40 + 40):
        program = draw_program(seed)
        rng = np.random.default_rng(seed + 10_000)
        arrays = [rng.normal(size=SHAPE), rng.normal(size=SHAPE), rng.normal(size=(3, 3))]
        want, got = outcome(torch, arrays, program), outcome(vk, arrays, program)
        what = f"seed {seed}: {program}"
        counts[(want[0], got[0])] = counts.get((want[0], got[0]), 0) + 1
        if want[0] == "ok" and got[0] == "ok":
            np.testing.assert_allclose(got[1][0], want[1][0], rtol=1e-10, atol=1e-10, err_msg=what)
            for g, e in zip(got[1][1], want[1][1]):
                np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-10, err_msg=what)
        elif got[0] == "raised" and want[0] == "ok":
            assert "made before an in-place write" in got[1], f"{what}: vkml raised {got[1]}"
        elif got[0] == "ok" and want[0] == "raised":
            for g, e in zip(got[1][1], finite_differences(arrays, program)):
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=what)
    # the draw exercises the recorded path, not only refusals
    assert counts.get(("ok", "ok"), 0) >= 15, counts
