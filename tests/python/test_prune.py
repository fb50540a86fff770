"""vk.nn.utils.prune against torch.nn.utils.prune: the masks of L1 / Ln-structured / custom /
global pruning, pruning twice (a PruningContainer over what is left), the parameters and buffers
it leaves (weight_orig, weight_mask), forward and gradients through the pruned weight, remove(),
random pruning's counts, bad amounts, and the pruning tutorial's loop (prune, train, prune again)
run with both libraries."""

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as TP

import vkml as vk
import vkml.nn.utils.prune as VP
from conftest import assert_close, to_np

RNG = np.random.default_rng(66)


def _twins(make_v, make_t):
    vm, tm = make_v(), make_t()
    with torch.no_grad(), vk.no_grad():
        for (_, vp), (_, tp) in zip(vm.named_parameters(), tm.named_parameters()):
            # distinct magnitudes: no ties for topk to break differently
            signs = RNG.choice([-1.0, 1.0], vp.numel())
            a = ((RNG.permutation(vp.numel()) + 1) * signs / vp.numel()).reshape(tuple(vp.shape)).astype(np.float32)
            tp.copy_(torch.tensor(a))
            vp.copy_(vk.tensor(a))
    return vm, tm


def _masks_equal(vm, tm, name="weight"):
    np.testing.assert_array_equal(to_np(getattr(vm, name + "_mask")), to_np(getattr(tm, name + "_mask")))


def test_l1_then_structured_then_remove_match_torch():
    vm, tm = _twins(lambda: vk.nn.Conv2d(3, 6, 3), lambda: torch.nn.Conv2d(3, 6, 3))
    VP.l1_unstructured(vm, "weight", amount=0.3)
    TP.l1_unstructured(tm, "weight", amount=0.3)
    _masks_equal(vm, tm)
    assert sorted(n for n, _ in vm.named_parameters()) == sorted(n for n, _ in tm.named_parameters())
    assert sorted(n for n, _ in vm.named_buffers()) == ["weight_mask"]
    VP.ln_structured(vm, "weight", amount=2, n=2, dim=0)
    TP.ln_structured(tm, "weight", amount=2, n=2, dim=0)
    _masks_equal(vm, tm)
    VP.l1_unstructured(vm, "weight", amount=10)
    TP.l1_unstructured(tm, "weight", amount=10)
    _masks_equal(vm, tm)
    x = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32)
    vy, ty = vm(vk.tensor(x)), tm(torch.tensor(x))
    assert_close(vy, ty, "float32", what="pruned forward")
    vy.sum().backward()
    ty.sum().backward()
    assert_close(vm.weight_orig.grad, tm.weight_orig.grad, "float32", what="gradient of weight_orig")
    assert VP.is_pruned(vm) and TP.is_pruned(tm)
    VP.remove(vm, "weight")
    TP.remove(tm, "weight")
    assert not VP.is_pruned(vm)
    assert sorted(n for n, _ in vm.named_parameters()) == ["bias", "weight"]
    assert_close(vm.weight, tm.weight, "float32", what="weight after remove")
    assert "weight_mask" not in dict(vm.named_buffers())
    with pytest.raises(ValueError, match="has to be pruned"):
        VP.remove(vm, "weight")


def test_global_custom_and_importance_scores_match_torch():
    make = (lambda lib: lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3)))
    vm, tm = _twins(lambda: make(vk), lambda: make(torch))
    VP.global_unstructured([(vm[0], "weight"), (vm[2], "weight")], pruning_method=VP.L1Unstructured, amount=0.4)
    TP.global_unstructured([(tm[0], "weight"), (tm[2], "weight")], pruning_method=TP.L1Unstructured, amount=0.4)
    _masks_equal(vm[0], tm[0])
    _masks_equal(vm[2], tm[2])
    mask = (RNG.random(8) > 0.5).astype(np.float32)
    VP.custom_from_mask(vm[0], "bias", vk.tensor(mask))
    TP.custom_from_mask(tm[0], "bias", torch.tensor(mask))
    _masks_equal(vm[0], tm[0], "bias")
    scores = RNG.random((3, 8)).astype(np.float32)
    VP.l1_unstructured(vm[2], "bias", amount=1)
    TP.l1_unstructured(tm[2], "bias", amount=1)
    _masks_equal(vm[2], tm[2], "bias")
    VP.l1_unstructured(vm[2], "weight", amount=3, importance_scores=vk.tensor(scores))
    TP.l1_unstructured(tm[2], "weight", amount=3, importance_scores=torch.tensor(scores))
    _masks_equal(vm[2], tm[2])
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    assert_close(vm(vk.tensor(x)), tm(torch.tensor(x)), "float32", what="globally pruned forward")


def test_random_pruning_counts_and_bad_amounts():
    m = vk.nn.Linear(10, 10)
    VP.random_unstructured(m, "weight", amount=0.25)
    assert int((m.weight_mask == 0).sum()) == 25
    VP.random_structured(m, "weight", amount=3, dim=1)
    cols_gone = (to_np(m.weight_mask) == 0).all(0).sum()
    assert cols_gone >= 3 and int((m.weight == 0).sum()) >= 25
    with pytest.raises(ValueError):
        VP.l1_unstructured(vk.nn.Linear(2, 2), "weight", amount=1.5)
    with pytest.raises(ValueError):
        VP.l1_unstructured(vk.nn.Linear(2, 2), "weight", amount=5)
    with pytest.raises(TypeError):
        VP.l1_unstructured(vk.nn.Linear(2, 2), "weight", amount="half")
    with pytest.raises(IndexError):
        VP.ln_structured(vk.nn.Linear(2, 2), "weight", amount=1, n=1, dim=3)


def test_prune_and_finetune_loop_steps_as_torch():
    """The pruning tutorial's shape: prune 20% of each layer's weights by magnitude, train three
    SGD steps (the masked entries stay zero), prune again, train, then remove the reparameterisation."""
    make = (lambda lib: lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.Tanh(), lib.nn.Linear(16, 2)))
    vm, tm = _twins(lambda: make(vk), lambda: make(torch))
    x = RNG.standard_normal((32, 6)).astype(np.float32)
    y = RNG.standard_normal((32, 2)).astype(np.float32)

    def run(lib, P, model):
        losses = []
        for _ in range(2):
            for layer in (model[0], model[2]):
                P.l1_unstructured(layer, "weight", amount=0.2)
            opt = lib.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(3):
                loss = lib.nn.functional.mse_loss(model(lib.tensor(x)), lib.tensor(y))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        for layer in (model[0], model[2]):
            P.remove(layer, "weight")
        return losses, {n: to_np(p) for n, p in model.named_parameters()}

    (vl, vp), (tl, tp) = run(vk, VP, vm), run(torch, TP, tm)
    np.testing.assert_allclose(vl, tl, rtol=1e-5)
    assert list(vp) == list(tp)  # remove() registers weight again, after bias
    for name in vp:
        np.testing.assert_allclose(vp[name], tp[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert (vp["0.weight"] == 0).sum() == (tp["0.weight"] == 0).sum() > 0  # the pruned entries stay 0
