"""vkml.autograd.functional against torch.autograd.functional: vjp, jvp, jacobian (both
strategies, every nesting of tuple inputs and outputs), hessian, vhp and hvp, in float64, with
create_graph (the results differentiate again) and strict mode's errors."""

import numpy as np
import pytest
import torch
import torch.autograd.functional as TAF

import vkml as vk
import vkml.autograd.functional as VAF
from conftest import assert_close

RNG = np.random.default_rng(5)


def both(*shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    return tuple(vk.tensor(a) for a in arrays), tuple(torch.tensor(a) for a in arrays)


def f_single(m):
    return lambda x: (x.sin() * x.exp()).sum(-1) + x[..., 0] * x[..., -1]


def f_pair(m):
    return lambda x, y: (x @ y).tanh()


def f_two_outputs(m):
    return lambda x, y: ((x * x).sum(), (x.unsqueeze(-1) * y.sum()).cos())


def close_nested(a, b, what):
    if isinstance(b, (tuple, list)):
        assert isinstance(a, tuple) and len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b)):
            close_nested(x, y, f"{what}[{i}]")
    else:
        assert_close(a, b, what=what)


def test_vjp_and_jvp_match_torch():
    (vx,), (tx,) = both((3, 4))
    (vu,), (tu,) = both((3,))
    close_nested(VAF.vjp(f_single(vk), vx, vu), TAF.vjp(f_single(torch), tx, tu), "vjp")
    (vv,), (tv,) = both((3, 4))
    close_nested(VAF.jvp(f_single(vk), vx, vv), TAF.jvp(f_single(torch), tx, tv), "jvp")
    vs, ts = both((2, 3), (3, 4))
    vw, tw = both((2, 4))
    close_nested(VAF.vjp(f_pair(vk), vs, vw[0]), TAF.vjp(f_pair(torch), ts, tw[0]), "vjp pair")
    vv2, tv2 = both((2, 3), (3, 4))
    close_nested(VAF.jvp(f_pair(vk), vs, vv2), TAF.jvp(f_pair(torch), ts, tv2), "jvp pair")
    # a single-element output needs no v
    close_nested(VAF.vjp(lambda x: (x * x).sum(), vx), TAF.vjp(lambda x: (x * x).sum(), tx), "scalar vjp")


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_matches_torch(strategy):
    kw = dict(vectorize=True, strategy=strategy)
    (vx,), (tx,) = both((2, 3))
    close_nested(VAF.jacobian(f_single(vk), vx, **kw), TAF.jacobian(f_single(torch), tx, **kw), "single")
    vs, ts = both((2, 3), (3, 4))
    close_nested(VAF.jacobian(f_pair(vk), vs, **kw), TAF.jacobian(f_pair(torch), ts, **kw), "pair")
    close_nested(VAF.jacobian(f_two_outputs(vk), vs, **kw), TAF.jacobian(f_two_outputs(torch), ts, **kw),
                 "two outputs")
    close_nested(VAF.jacobian(lambda x: (x.exp(), x * 2), vx, **kw),
                 TAF.jacobian(lambda x: (x.exp(), x * 2), tx, **kw), "tuple output, single input")


def test_hessian_vhp_hvp_match_torch():
    def f(x):
        return (x.sin() * x.pow(2)).sum() + x.prod()

    def g(x, y):
        return (x @ y).pow(2).sum()

    (vx,), (tx,) = both((4,))
    close_nested(VAF.hessian(f, vx), TAF.hessian(f, tx), "hessian")
    vs, ts = both((2, 3), (3, 2))
    close_nested(VAF.hessian(g, vs), TAF.hessian(g, ts), "hessian pair")
    (vv,), (tv,) = both((4,))
    close_nested(VAF.vhp(f, vx, vv), TAF.vhp(f, tx, tv), "vhp")
    close_nested(VAF.hvp(f, vx, vv), TAF.hvp(f, tx, tv), "hvp")
    vv2, tv2 = both((2, 3), (3, 2))
    close_nested(VAF.hvp(g, vs, vv2), TAF.hvp(g, ts, tv2), "hvp pair")


def test_create_graph_results_differentiate_again():
    x = vk.tensor(RNG.standard_normal(3)).requires_grad_()
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    jv = VAF.jacobian(lambda a: a.sin() * a.sum(), x, create_graph=True)
    jt = TAF.jacobian(lambda a: a.sin() * a.sum(), t, create_graph=True)
    assert jv.requires_grad
    jv.sum().backward()
    jt.sum().backward()
    assert_close(x.grad, t.grad, what="d jacobian")
    x.grad = None
    t.grad = None
    _, hv = VAF.hvp(lambda a: a.pow(3).sum(), x, vk.ones(3, dtype=vk.float64), create_graph=True)
    _, ht = TAF.hvp(lambda a: a.pow(3).sum(), t, torch.ones(3, dtype=torch.float64), create_graph=True)
    hv.sum().backward()
    ht.sum().backward()
    assert_close(x.grad, t.grad, what="d hvp")
    # without create_graph, nothing is recorded, and the inputs' graphs are left alone
    assert not VAF.jacobian(lambda a: a * 2, x).requires_grad


def test_strict_mode_and_bad_arguments():
    x = vk.ones(3, dtype=vk.float64)
    with pytest.raises(RuntimeError, match="independent of input 0"):
        VAF.vjp(lambda a: vk.ones(2, dtype=vk.float64), x, vk.ones(2, dtype=vk.float64), strict=True)
    _, z = VAF.vjp(lambda a: vk.ones(2, dtype=vk.float64), x, vk.ones(2, dtype=vk.float64))
    assert_close(z, np.zeros(3), what="independent: zeros")
    with pytest.raises(RuntimeError, match="can only be None"):
        VAF.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="invalid size"):
        VAF.jvp(lambda a: a * 2, x, vk.ones(4, dtype=vk.float64))
    with pytest.raises(RuntimeError, match="single element"):
        VAF.hessian(lambda a: a * 2, x)
    with pytest.raises(TypeError, match="must be a Tensor"):
        VAF.jacobian(lambda a: a, [x, 3.0])
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        VAF.jacobian(lambda a: a, x, strategy="forward-mode")
    assert vk.autograd.functional.jacobian is VAF.jacobian
