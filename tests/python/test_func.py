"""vk.func against torch.func: functional_call (parameters, buffers, several dicts, tied weights,
strict, the module restored after a failing forward), grad / grad_and_value (argnums, has_aux,
nested), vjp, jvp, linearize, jacrev, jacfwd, hessian, stack_module_state, and a MAML
meta-learning step (inner adaptation through functional_call with create_graph) run with both
libraries from the same weights."""

import numpy as np
import pytest
import torch
import torch.func as TF

import vkml as vk
import vkml.func as VF
from conftest import assert_close, to_np

RNG = np.random.default_rng(55)


def _twin_mlps():
    vm = vk.nn.Sequential(vk.nn.Linear(3, 8), vk.nn.Tanh(), vk.nn.Linear(8, 2))
    tm = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    with torch.no_grad():
        for (_, vp), (_, tp) in zip(vm.named_parameters(), tm.named_parameters()):
            tp.copy_(torch.tensor(to_np(vp)))
    return vm, tm


def test_functional_call_matches_torch():
    vm, tm = _twin_mlps()
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    w = RNG.standard_normal((2, 8)).astype(np.float32)
    before = to_np(vm[2].weight)
    got = VF.functional_call(vm, {"2.weight": vk.tensor(w)}, (vk.tensor(x),))
    want = TF.functional_call(tm, {"2.weight": torch.tensor(w)}, (torch.tensor(x),))
    assert_close(got, want, "float32", what="functional_call")
    assert (to_np(vm[2].weight) == before).all()  # the module's own weight is back
    b = RNG.standard_normal(2).astype(np.float32)
    got = VF.functional_call(vm, ({"2.weight": vk.tensor(w)}, {"2.bias": vk.tensor(b)}), vk.tensor(x))
    want = TF.functional_call(tm, ({"2.weight": torch.tensor(w)}, {"2.bias": torch.tensor(b)}), torch.tensor(x))
    assert_close(got, want, "float32", what="functional_call with two dicts")
    with pytest.raises(ValueError, match="multiple dictionaries"):
        VF.functional_call(vm, ({"2.bias": vk.tensor(b)}, {"2.bias": vk.tensor(b)}), vk.tensor(x))
    with pytest.raises(RuntimeError, match="missing keys"):
        VF.functional_call(vm, {"2.bias": vk.tensor(b)}, vk.tensor(x), strict=True)


def test_functional_call_buffers_ties_and_restores():
    """A BatchNorm's running statistics given as buffers are the ones updated (as torch's); a
    tensor given for one name of a tied weight stands for both; a forward that raises leaves
    the module as it was."""
    bn, tbn = vk.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    x = RNG.standard_normal((6, 3)).astype(np.float32)
    vmean, tmean = vk.zeros(3), torch.zeros(3)
    VF.functional_call(bn, {"running_mean": vmean}, vk.tensor(x))
    TF.functional_call(tbn, {"running_mean": tmean}, torch.tensor(x))
    assert_close(vmean, tmean, "float32", what="running_mean updated in the given tensor")
    assert (to_np(bn.running_mean) == 0).all()

    class Tied(vk.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = vk.nn.Linear(2, 2, bias=False)
            self.b = vk.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    w = vk.tensor(RNG.standard_normal((2, 2)).astype(np.float32))
    x2 = vk.tensor(RNG.standard_normal((1, 2)).astype(np.float32))
    assert_close(VF.functional_call(m, {"a.weight": w}, x2), x2 @ w.T @ w.T, "float32", what="tied")
    own = m.a.weight
    with pytest.raises(vk.ShapeError):
        VF.functional_call(m, {"a.weight": vk.zeros(3, 3)}, x2)
    assert m.a.weight is own and m.b.weight is own


FUNCS = [
    ("sin_times", lambda a: (a.sin() * a).sum(), lambda a: a.sin() * a),
    ("softplus_norm", lambda a: torch_or_vk(a).nn.functional.softplus(a).pow(2).sum(), lambda a: a.exp() / a.exp().sum()),
]


def torch_or_vk(t):
    return vk if isinstance(t, vk.Tensor) else torch


@pytest.mark.parametrize("name,scalar,vector", FUNCS, ids=[f[0] for f in FUNCS])
def test_transforms_match_torch_func(name, scalar, vector):
    a = RNG.standard_normal(4)
    va, ta = vk.tensor(a), torch.tensor(a)
    assert_close(VF.grad(scalar)(va), TF.grad(scalar)(ta), what="grad")
    g, v = VF.grad_and_value(scalar)(va)
    tg, tv = TF.grad_and_value(scalar)(ta)
    assert_close(g, tg, what="grad_and_value grad")
    assert_close(v, tv, what="grad_and_value value")
    assert_close(VF.jacrev(vector)(va), TF.jacrev(vector)(ta), what="jacrev")
    assert_close(VF.jacfwd(vector)(va), TF.jacfwd(vector)(ta), what="jacfwd")
    assert_close(VF.hessian(scalar)(va), TF.hessian(scalar)(ta), what="hessian")
    out, fn = VF.vjp(vector, va)
    tout, tfn = TF.vjp(vector, ta)
    cot = RNG.standard_normal(4)
    assert_close(out, tout, what="vjp value")
    assert_close(fn(vk.tensor(cot))[0], tfn(torch.tensor(cot))[0], what="vjp")
    tan = RNG.standard_normal(4)
    assert_close(VF.jvp(vector, (va,), (vk.tensor(tan),))[1], TF.jvp(vector, (ta,), (torch.tensor(tan),))[1],
                 what="jvp")
    out, jfn = VF.linearize(vector, va)
    assert_close(jfn(vk.tensor(tan)), TF.linearize(vector, ta)[1](torch.tensor(tan)), what="linearize")
    # nested: the second derivative of the scalar function's first coordinate path
    assert_close(VF.grad(lambda x: VF.grad(scalar)(x).sum())(va), TF.grad(lambda x: TF.grad(scalar)(x).sum())(ta),
                 what="grad of grad")


def test_argnums_and_has_aux():
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)

    def f(x, y):
        return (x * y.exp()).sum(), x.detach() + 1

    vg, vaux = VF.grad(f, argnums=(0, 1), has_aux=True)(vk.tensor(a), vk.tensor(b))
    tg, taux = TF.grad(f, argnums=(0, 1), has_aux=True)(torch.tensor(a), torch.tensor(b))
    for x, y in zip(vg, tg):
        assert_close(x, y, what="grad argnums")
    assert_close(vaux, taux, what="aux")
    assert_close(VF.jacrev(lambda x, y: x * y, argnums=1)(vk.tensor(a), vk.tensor(b)),
                 TF.jacrev(lambda x, y: x * y, argnums=1)(torch.tensor(a), torch.tensor(b)), what="jacrev argnums")
    with pytest.raises(RuntimeError, match="scalar"):
        VF.grad(lambda x: x * 2)(vk.tensor(a))


def test_stack_module_state_matches_torch():
    models = [vk.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = VF.stack_module_state(models)
    assert set(params) == {"weight", "bias"} and not buffers
    assert tuple(params["weight"].shape) == (4, 2, 3) and params["weight"].requires_grad
    assert_close(params["bias"][2], models[2].bias, "float32", what="stacked bias")
    with pytest.raises(RuntimeError, match="same class"):
        VF.stack_module_state([vk.nn.Linear(3, 2), vk.nn.Tanh()])


def test_maml_steps_as_torch():
    """MAML on sine regression tasks: two inner SGD steps by autograd.grad with create_graph
    through functional_call, the query loss's meta-gradient into Adam; four meta steps."""
    vm, tm = _twin_mlps()
    tasks = []
    for _ in range(4):
        amp, phase = RNG.uniform(0.5, 2.0), RNG.uniform(0, np.pi)
        xs = RNG.uniform(-3, 3, (2, 10, 3)).astype(np.float32)
        ys = (amp * np.sin(xs.sum(-1, keepdims=True) + phase)).repeat(2, -1).astype(np.float32)
        tasks.append((xs, ys))

    def run(lib, model, F):
        opt = lib.optim.Adam(model.parameters(), lr=1e-2)
        history = []
        for xs, ys in tasks:
            params = dict(model.named_parameters())
            for _ in range(2):
                loss = lib.nn.functional.mse_loss(F.functional_call(model, params, lib.tensor(xs[0])),
                                                  lib.tensor(ys[0]))
                grads = lib.autograd.grad(loss, list(params.values()), create_graph=True)
                params = {k: p - 0.1 * g for (k, p), g in zip(params.items(), grads)}
            query = lib.nn.functional.mse_loss(F.functional_call(model, params, lib.tensor(xs[1])),
                                               lib.tensor(ys[1]))
            opt.zero_grad()
            query.backward()
            opt.step()
            history.append([to_np(p) for p in model.parameters()] + [query.item()])
        return history

    for step, (a, b) in enumerate(zip(run(vk, vm, VF), run(torch, tm, TF))):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-6, err_msg=f"meta step {step}")
