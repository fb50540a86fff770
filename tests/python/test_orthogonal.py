"""nn.utils.parametrizations.orthogonal against torch's: every map (matrix_exp, cayley,
householder), square / tall / wide / batched weights, with and without the trivialization; the
initial weight (the original's QR Q), the parametrized forward after steps of SGD, the gradients
into the unconstrained tensor, orthogonality kept, state_dict names, and the errors."""

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, to_np

RNG = np.random.default_rng(17)


def _twin(shape, orthogonal_map, use_trivialization):
    w = RNG.standard_normal(shape)
    vm = vk.nn.Linear(shape[-1], shape[-2], bias=False).double()
    tm = torch.nn.Linear(shape[-1], shape[-2], bias=False).double()
    with vk.no_grad():
        vm.weight = vk.nn.Parameter(vk.tensor(w))
    with torch.no_grad():
        tm.weight = torch.nn.Parameter(torch.tensor(w))
    vk.nn.utils.parametrizations.orthogonal(vm, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orthogonal_map,
                                               use_trivialization=use_trivialization)
    return vm, tm


CASES = [((4, 4), None, True), ((4, 4), "cayley", True), ((4, 4), "householder", True),
         ((6, 3), None, False), ((6, 3), "householder", False), ((3, 6), "householder", False),
         ((5, 5), "householder", False)]


@pytest.mark.parametrize("shape,orthogonal_map,trivial", CASES, ids=[f"{s}-{m}-{t}" for s, m, t in CASES])
def test_orthogonal_matches_torch(shape, orthogonal_map, trivial):
    vm, tm = _twin(shape, orthogonal_map, trivial)
    assert list(vm.state_dict()) == list(tm.state_dict())
    assert_close(vm.weight, tm.weight, what="initial orthogonal weight")
    vopt = vk.optim.SGD(vm.parameters(), lr=0.1)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    for step in range(3):
        x = RNG.standard_normal((5, shape[-1]))
        target = RNG.standard_normal((5, shape[-2]))
        vl = (vm(vk.tensor(x)) - vk.tensor(target)).pow(2).sum()
        tl = (tm(torch.tensor(x)) - torch.tensor(target)).pow(2).sum()
        vopt.zero_grad()
        topt.zero_grad()
        vl.backward()
        tl.backward()
        assert_close(vl, tl, what=f"loss at step {step}")
        vo = vm.parametrizations.weight.original
        to = tm.parametrizations.weight.original
        assert_close(vo.grad, to.grad, what=f"gradient of the unconstrained tensor at step {step}")
        vopt.step()
        topt.step()
    q = to_np(vm.weight)
    gram = q.T @ q if shape[0] >= shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)


def test_orthogonal_keeps_an_orthogonal_original_and_refuses_bad_input():
    q, _ = np.linalg.qr(RNG.standard_normal((4, 4)))
    m = vk.nn.Linear(4, 4, bias=False).double()
    with vk.no_grad():
        m.weight.copy_(vk.tensor(q))
    vk.nn.utils.parametrizations.orthogonal(m)
    assert_close(m.weight, q, what="an orthogonal weight is kept")
    with pytest.raises(ValueError, match="matrix"):
        vk.nn.utils.parametrizations.orthogonal(vk.nn.LayerNorm(3))
    with pytest.raises(ValueError, match="orthogonal_map"):
        vk.nn.utils.parametrizations.orthogonal(vk.nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="no parameter"):
        vk.nn.utils.parametrizations.orthogonal(vk.nn.Linear(3, 3), name="nope")
    m2 = vk.nn.utils.parametrizations.orthogonal(vk.nn.Linear(3, 3), use_trivialization=False)
    with pytest.raises(NotImplementedError):
        m2.weight = vk.eye(3)
