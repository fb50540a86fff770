"""vk.vmap and vk.func's transforms over trees of tensors, against torch.func: the per-sample
gradients tutorial (vmap(grad(loss)) over functional_call with dicts of parameters), model
ensembling (stack_module_state + vmap over functional_call), batched Jacobians, nested vmap,
in_dims / out_dims in every form, randomness modes, gradients through vmap, and the errors torch
raises for bad in_dims, out_dims, sizes and outputs; vkml.utils._pytree against torch.utils._pytree."""

import collections

import numpy as np
import pytest
import torch
import torch.func as TF
import torch.utils._pytree as TP

import vkml as vk
import vkml.func as VF
import vkml.utils._pytree as VP
from conftest import assert_close, to_np

RNG = np.random.default_rng(77)


def _pair(*shape):
    a = RNG.standard_normal(shape)
    return vk.tensor(a), torch.tensor(a)


def _twin(vmodel, tmodel):
    with torch.no_grad():
        for (vn, vp), (tn, tp) in zip(vmodel.state_dict().items(), tmodel.state_dict().items()):
            assert vn == tn
            tp.copy_(torch.tensor(to_np(vp)))
    return vmodel, tmodel


def _shape(spec):
    """A spec of either library as nested (node type name, context, children)."""
    if spec.is_leaf():
        return "*"
    return (spec.type.__name__, spec.context, [_shape(c) for c in spec.children()])


def _assert_trees_close(got, want, what, **kw):
    gl, gs = VP.tree_flatten(got)
    wl, ws = TP.tree_flatten(want)
    assert _shape(gs) == _shape(ws), f"{what}: structure {gs} vs {ws}"
    for i, (g, w) in enumerate(zip(gl, wl)):
        assert_close(g, w, what=f"{what} leaf {i}", **kw)


# ---- pytrees ------------------------------------------------------------------------------------

NT = collections.namedtuple("NT", "p q")


def _sample_tree(lib):
    return (None, 1, [2, {"b": 3, "a": NT(4, lib.zeros(2))}],
            collections.OrderedDict(z=5, y=(6,)), collections.defaultdict(list, k=7), collections.deque([8, 9]))


def test_pytree_leaves_order_and_round_trip_match_torch():
    vl, vs = VP.tree_flatten(_sample_tree(vk))
    tl, ts = TP.tree_flatten(_sample_tree(torch))
    assert [x if not isinstance(x, vk.Tensor) else "T" for x in vl] == \
        [x if not isinstance(x, torch.Tensor) else "T" for x in tl]
    assert vs.num_leaves == ts.num_leaves and vs.num_nodes == ts.num_nodes
    back = VP.tree_unflatten(vl, vs)
    assert back[2][1]["a"].__class__ is NT and list(back[2][1]) == ["b", "a"]
    assert isinstance(back[4], collections.defaultdict) and back[4].default_factory is list
    assert VP.tree_structure(back) == vs
    doubled = VP.tree_map(lambda x, y: x + y if isinstance(x, int) else x, (1, [2, 3]), (10, [20, 30]))
    assert doubled == (11, [22, 33])
    assert VP.tree_map_only(int, lambda x: -x, {"a": 1, "b": "s"}) == {"a": -1, "b": "s"}
    with pytest.raises(ValueError):
        VP.tree_unflatten([1, 2], VP.tree_structure((1, 2, 3)))
    assert _shape(vs) == _shape(TP.tree_structure(_sample_tree(torch)))


def test_pytree_deeper_than_the_recursion_limit():
    tree = 0
    for i in range(5000):
        tree = [tree, i]
    leaves, spec = VP.tree_flatten(tree)
    assert len(leaves) == 5001 and leaves[0] == 0 and leaves[-1] == 4999
    back = VP.tree_unflatten(leaves, spec)
    for _ in range(5000):
        back = back[0]
    assert back == 0


# ---- the transforms over trees ------------------------------------------------------------------

def test_grad_vjp_jvp_jacobians_over_dicts_match_torch():
    vw, tw = _pair(3, 2)
    vb, tb = _pair(2)
    vx, tx = _pair(4, 3)

    def loss(params, x):
        return ((x @ params["w"] + params["b"]).tanh() ** 2).sum()

    def layer(params, x):
        y = x @ params["w"] + params["b"]
        return {"out": y.tanh(), "pre": (y, y.sum())}

    vp, tp = {"w": vw, "b": vb}, {"w": tw, "b": tb}
    _assert_trees_close(VF.grad(loss)(vp, vx), TF.grad(loss)(tp, tx), "grad over a dict")
    _assert_trees_close(VF.grad(loss, argnums=(0, 1))(vp, vx), TF.grad(loss, argnums=(0, 1))(tp, tx),
                        "grad argnums over a dict and a tensor")
    g, v = VF.grad_and_value(loss)(vp, vx)
    tg, tv = TF.grad_and_value(loss)(tp, tx)
    _assert_trees_close((g, v), (tg, tv), "grad_and_value")
    out, fn = VF.vjp(layer, vp, vx)
    tout, tfn = TF.vjp(layer, tp, tx)
    _assert_trees_close(out, tout, "vjp's value")
    cot = {"out": _pair(4, 2), "pre": (_pair(4, 2), _pair())}
    _assert_trees_close(fn({"out": cot["out"][0], "pre": (cot["pre"][0][0], cot["pre"][1][0])}),
                        tfn({"out": cot["out"][1], "pre": (cot["pre"][0][1], cot["pre"][1][1])}), "vjp over trees")
    with pytest.raises(RuntimeError, match="structure"):
        fn((cot["out"][0],))
    tan_v, tan_t = _pair(3, 2), _pair(2)
    _assert_trees_close(VF.jvp(layer, (vp, vx), ({"w": tan_v[0], "b": tan_t[0]}, vk.zeros_like(vx))),
                        TF.jvp(layer, (tp, tx), ({"w": tan_v[1], "b": tan_t[1]}, torch.zeros_like(tx))),
                        "jvp over trees")
    for vfn, tfn_ in ((VF.jacrev, TF.jacrev), (VF.jacfwd, TF.jacfwd)):
        _assert_trees_close(vfn(layer)(vp, vx), tfn_(layer)(tp, tx), f"{vfn.__name__} over trees")
        _assert_trees_close(vfn(layer, argnums=(0, 1))(vp, vx), tfn_(layer, argnums=(0, 1))(tp, tx),
                            f"{vfn.__name__} argnums over trees")
    _assert_trees_close(VF.hessian(loss)(vp, vx), TF.hessian(loss)(tp, tx), "hessian over a dict")
    with pytest.raises(ValueError, match="must be Tensor"):
        VF.grad(lambda d: d)(1.0)


# ---- vmap ---------------------------------------------------------------------------------------

def test_vmap_in_dims_out_dims_and_kwargs_match_torch():
    va, ta = _pair(3, 4)
    vb, tb = _pair(4, 3)
    vc, tc = _pair(4)
    cases = [
        (lambda x: x.sin().sum(), {}, (0,)),
        (lambda x, y: x * y, {"in_dims": (0, 1)}, (0, 1)),
        (lambda x, y: x @ y, {"in_dims": (1, None)}, (1, 2)),
        (lambda x, y: x + y, {"in_dims": (-1, None), "out_dims": -1}, (1, 2)),
        (lambda x: (x.exp(), x.sum()), {"out_dims": (1, 0)}, (0,)),
        (lambda d: d["a"] * d["c"], {"in_dims": ({"a": 0, "c": None},)}, ("dict",)),
    ]
    vargs = {0: va, 1: vb, 2: vc, "dict": {"a": va, "c": vc}}
    targs = {0: ta, 1: tb, 2: tc, "dict": {"a": ta, "c": tc}}
    for i, (f, kw, which) in enumerate(cases):
        got = vk.vmap(f, **kw)(*[vargs[w] for w in which])
        want = torch.vmap(f, **kw)(*[targs[w] for w in which])
        _assert_trees_close(got, want, f"vmap case {i}")
    got = vk.vmap(lambda x, scale=None: x * scale)(va, scale=vc)
    _assert_trees_close(got, torch.vmap(lambda x, scale=None: x * scale)(ta, scale=tc), "kwargs pass whole")
    got = vk.vmap(lambda x: (x * 2, vc), out_dims=(0, None))(va)
    _assert_trees_close(got, torch.vmap(lambda x: (x * 2, tc), out_dims=(0, None))(ta), "an unbatched output")
    nested = vk.vmap(vk.vmap(lambda x, y: (x * y).sum(), in_dims=(0, None)), in_dims=(None, 1))(va, vb)
    tnested = torch.vmap(torch.vmap(lambda x, y: (x * y).sum(), in_dims=(0, None)), in_dims=(None, 1))(ta, tb)
    _assert_trees_close(nested, tnested, "nested vmap")
    assert VF.vmap is vk.vmap
    empty = vk.vmap(lambda x: x.sum())(vk.zeros(0, 3))
    assert tuple(empty.shape) == tuple(torch.vmap(lambda x: x.sum())(torch.zeros(0, 3)).shape) == (0,)


def test_vmap_gradients_through_it_match_torch():
    va, ta = _pair(5, 3)
    va.requires_grad_()
    ta.requires_grad_()
    vw, tw = _pair(3)
    vk.vmap(lambda x: (x * vw).sin().sum())(va).pow(2).sum().backward()
    torch.vmap(lambda x: (x * tw).sin().sum())(ta).pow(2).sum().backward()
    assert_close(va.grad, ta.grad, what="gradient through vmap")
    # batched Jacobians: vmap(jacrev(f))
    f = lambda x: x.tanh() * x.sum()  # noqa: E731
    assert_close(vk.vmap(VF.jacrev(f))(va.detach()), torch.vmap(TF.jacrev(f))(ta.detach()), what="vmap(jacrev)")
    assert_close(vk.vmap(VF.hessian(lambda x: x.sin().prod()))(va.detach()),
                 torch.vmap(TF.hessian(lambda x: x.sin().prod()))(ta.detach()), what="vmap(hessian)")


def _mlps(n):
    vms, tms = [], []
    for _ in range(n):
        vm = vk.nn.Sequential(vk.nn.Linear(6, 16), vk.nn.ReLU(), vk.nn.Linear(16, 3))
        tm = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).double()
        vm.double()
        _twin(vm, tm)
        vms.append(vm)
        tms.append(tm)
    return vms, tms


def test_per_sample_gradients_tutorial_matches_torch():
    """torch.func's per-sample-gradients recipe, written as the tutorial writes it, run with both."""
    (vm,), (tm,) = _mlps(1)
    vx, tx = _pair(8, 6)
    y = RNG.integers(0, 3, 8)
    results = []
    for lib, F, func, model, data, targets in ((vk, vk.nn.functional, VF, vm, vx, vk.tensor(y)),
                                               (torch, torch.nn.functional, TF, tm, tx, torch.tensor(y))):
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            batch, targets = sample.unsqueeze(0), target.unsqueeze(0)
            predictions = func.functional_call(model, (params, buffers), (batch,))
            return F.cross_entropy(predictions, targets)

        per_sample = func.vmap(func.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
        results.append(per_sample)
    _assert_trees_close(*results, "per-sample gradients")
    # and each equals the gradient of that sample alone (vkml's own autograd)
    for i in range(8):
        vm.zero_grad()
        vk.nn.functional.cross_entropy(vm(vx[i:i + 1]), vk.tensor(y[i:i + 1])).backward()
        assert_close(results[0]["0.weight"][i], vm[0].weight.grad, what=f"sample {i}'s gradient")


def test_model_ensembling_matches_torch():
    vms, tms = _mlps(4)
    vx, tx = _pair(5, 6)
    vxs, txs = _pair(4, 5, 6)
    vparams, vbuffers = VF.stack_module_state(vms)
    tparams, tbuffers = TF.stack_module_state(tms)
    vbase, tbase = vms[0], tms[0]

    def vcall(params, buffers, x):
        return VF.functional_call(vbase, (params, buffers), (x,))

    def tcall(params, buffers, x):
        return TF.functional_call(tbase, (params, buffers), (x,))

    assert_close(vk.vmap(vcall, in_dims=(0, 0, None))(vparams, vbuffers, vx),
                 torch.vmap(tcall, in_dims=(0, 0, None))(tparams, tbuffers, tx), what="one minibatch, 4 models")
    assert_close(vk.vmap(vcall)(vparams, vbuffers, vxs), torch.vmap(tcall)(tparams, tbuffers, txs),
                 what="a minibatch per model")
    # the ensemble's summed loss differentiates into the stacked parameters
    vk.vmap(vcall, in_dims=(0, 0, None))(vparams, vbuffers, vx).square().sum().backward()
    torch.vmap(tcall, in_dims=(0, 0, None))(tparams, tbuffers, tx).square().sum().backward()
    for k in vparams:
        assert_close(vparams[k].grad, tparams[k].grad, what=f"ensemble gradient {k}")


def test_vmap_randomness_modes():
    x = vk.zeros(4, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vk.vmap(lambda a: a + vk.rand(3))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vk.vmap(lambda a: vk.nn.functional.dropout(a + 1, 0.5))(x)
    vk.manual_seed(5)
    same = vk.vmap(lambda a: a + vk.rand(3), randomness="same")(x)
    after_same = vk.get_rng_state().tolist()
    assert all(bool(vk.equal(same[i], same[0])) for i in range(4))
    vk.manual_seed(5)
    once = vk.rand(3)
    assert bool(vk.equal(once, same[0])) and vk.get_rng_state().tolist() == after_same
    diff = vk.vmap(lambda a: a + vk.rand(3), randomness="different")(x)
    assert not bool(vk.equal(diff[1], diff[0]))
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vk.vmap(lambda a: a, randomness="foo")(x)


def _same_error(vcall, tcall):
    with pytest.raises(Exception) as want:
        tcall()
    with pytest.raises(type(want.value)) as got:
        vcall()
    return str(got.value), str(want.value)


def test_vmap_errors_match_torch():
    va, ta = _pair(3, 4)
    vb, tb = _pair(4)
    cases = [
        (lambda L: L.vmap(lambda a: (a, 1))(va if L is vk else ta), "must only return Tensors"),
        (lambda L: L.vmap(lambda a: a, in_dims=(None,))(va if L is vk else ta), "at least one Tensor"),
        (lambda L: L.vmap(lambda a, b: a + b)(va if L is vk else ta, vb if L is vk else tb), "same size"),
        (lambda L: L.vmap(lambda a: a, in_dims=2)(va if L is vk else ta), "-2 <= in_dim < 2"),
        (lambda L: L.vmap(lambda a, b: a * b)(va if L is vk else ta, 2), "non-Tensor arguments"),
        (lambda L: L.vmap(lambda a: a, in_dims="a")(va if L is vk else ta), "expected `in_dims` to be int"),
        (lambda L: L.vmap(lambda a: a, in_dims=(0, 0))(va if L is vk else ta), "not compatible"),
        (lambda L: L.vmap(lambda a: a * 2, out_dims=None)(va if L is vk else ta), "BatchedTensor"),
        (lambda L: L.vmap(lambda a: a * 2, out_dims="x")(va if L is vk else ta), "`out_dims` must be"),
        (lambda L: L.vmap(lambda a: a * 2, out_dims=3)(va if L is vk else ta), None),
        (lambda L: L.vmap(lambda a: a * 2, chunk_size=0)(va if L is vk else ta), "chunk_size"),
    ]
    for i, (call, phrase) in enumerate(cases):
        got, want = _same_error(lambda: call(vk), lambda: call(torch))
        if phrase is not None:
            assert phrase in got and phrase in want, (i, got, want)
    assert tuple(vk.vmap(lambda a: a * 2, chunk_size=2)(va).shape) == (3, 4)


def test_replace_all_batch_norm_modules_matches_torch():
    vm = vk.nn.Sequential(vk.nn.Conv2d(2, 4, 3), vk.nn.BatchNorm2d(4), vk.nn.InstanceNorm2d(4, track_running_stats=True))
    tm = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.BatchNorm2d(4),
                             torch.nn.InstanceNorm2d(4, track_running_stats=True))
    _twin(vm, tm)
    assert VF.replace_all_batch_norm_modules_(vm) is vm
    TF.replace_all_batch_norm_modules_(tm)
    assert list(vm.state_dict()) == list(tm.state_dict())
    assert vm[1].running_mean is None and not vm[1].track_running_stats
    vm.eval()
    tm.eval()
    x = RNG.standard_normal((2, 2, 6, 6)).astype(np.float32)
    assert_close(vm(vk.tensor(x)), tm(torch.tensor(x)), "float32", what="batch statistics in eval mode")
    assert VF.debug_unwrap(vk.ones(2)).shape == (2,)


def test_jvp_has_aux_and_torchs_keywords():
    va, ta = _pair(3)
    tan = RNG.standard_normal(3)

    def f(x):
        return x.sin() * x.sum(), {"cos": x.cos()}

    vo, vj, vaux = VF.jvp(f, (va,), (vk.tensor(tan),), has_aux=True)
    to, tj, taux = TF.jvp(f, (ta,), (torch.tensor(tan),), has_aux=True)
    _assert_trees_close((vo, vj, vaux), (to, tj, taux), "jvp with aux")
    assert not vaux["cos"].requires_grad
    g = lambda x: x.tanh() * x.prod()  # noqa: E731
    assert_close(VF.jacrev(g, chunk_size=2)(va), TF.jacrev(g, chunk_size=2)(ta), what="jacrev chunk_size")
    assert_close(VF.jacfwd(g, randomness="same")(va), TF.jacfwd(g, randomness="same")(ta), what="jacfwd randomness")
    with pytest.raises(ValueError, match="chunk_size"):
        VF.jacrev(g, chunk_size=0)
