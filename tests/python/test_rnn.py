"""Recurrent layers (issue #16 item 2: rnn): nn.RNN / LSTM / GRU and their cells against torch with
the same weights (torch's state_dict loaded into vkml), float64: outputs, final states and every
gradient (input, h0/c0, each parameter), on the CPU and on the Vulkan device; packed sequences
and nn.utils.rnn; torch's errors for bad input; the fused lstm_cell op's own gradients."""

import os

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import nn
from vkml.nn.utils import rnn as vrnn

from conftest import to_np

TN = torch.nn
TOL = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-5)}
VDT = {"float64": vk.float64, "float32": vk.float32}
TDT = {"float64": torch.float64, "float32": torch.float32}


def close(a, b, dt, what=""):
    np.testing.assert_allclose(to_np(a), to_np(b), err_msg=what, **TOL[dt])


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape)


def _vulkan():
    if not vk.vulkan.is_available():
        if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
            pytest.fail("VKML_REQUIRE_VULKAN=1 but no Vulkan device is available")
        pytest.skip("no Vulkan device")
    return vk.device("vulkan")


def _vulkan_dtype():
    f = vk._C._vulkan_features()
    return "float64" if f["float64"] and f["int64"] else "float32"


def devices():
    return ["cpu", "vulkan"]


def setup(device):
    """(vk device or None, dtype name) for a test parametrized over devices."""
    if device == "cpu":
        return None, "float64"
    return _vulkan(), _vulkan_dtype()


def twin(make, dt, device=None):
    """The same layer in torch and in vkml: torch's state_dict (its init) loaded into vkml's."""
    torch.manual_seed(0)
    tm = make(TN).to(TDT[dt])
    vm = make(nn).to(VDT[dt])
    assert list(vm.state_dict()) == list(tm.state_dict()), "state_dict keys differ from torch's"
    res = vm.load_state_dict({k: vk.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert not res.missing_keys and not res.unexpected_keys
    if device is not None:
        vm.to(device)
    return vm, tm


def leaf_pair(a, dt, device):
    v = vk.tensor(a, dtype=VDT[dt])
    if device is not None:
        v = v.to(device)
    v.requires_grad_()
    return v, torch.tensor(a, dtype=TDT[dt], requires_grad=True)


def flatten_out(r):
    """The tensors of a module's result, in order: output, then h_n (and c_n)."""
    out, hid = r
    if isinstance(out, (vrnn.PackedSequence, TN.utils.rnn.PackedSequence)):
        out = out.data
    return [out] + (list(hid) if isinstance(hid, tuple) else [hid])


def compare(vm, tm, v_in, t_in, dt, extra=()):
    """Forward values of every output, then the gradients of a weighted sum of all of them
    w.r.t. the inputs given (leaf pairs) and every parameter."""
    vo, to = flatten_out(vm(*v_in)), flatten_out(tm(*t_in))
    assert len(vo) == len(to)
    for k, (a, b) in enumerate(zip(vo, to)):
        assert tuple(a.shape) == tuple(b.shape), f"output {k}: {tuple(a.shape)} vs {tuple(b.shape)}"
        close(a, b, dt, f"output {k}")
    ups = [rnd(*b.shape, seed=10 + k) for k, b in enumerate(to)]
    dev = vo[0].device
    lv = sum(((a * vk.tensor(u, dtype=VDT[dt]).to(dev)).sum() for a, u in zip(vo, ups)), vk.tensor(0.0, dtype=VDT[dt]).to(dev))
    lt = sum((b * torch.tensor(u, dtype=TDT[dt])).sum() for b, u in zip(to, ups))
    lv.backward()
    lt.backward()
    for k, (a, b) in enumerate(extra):
        close(a.grad, b.grad, dt, f"input {k} gradient")
    for (n, pv), (_, pt) in zip(vm.named_parameters(), tm.named_parameters()):
        assert pv.grad is not None, f"{n} got no gradient"
        close(pv.grad, pt.grad, dt, f"{n} gradient")


# (label, constructor over torch.nn / vkml.nn, has cell state, hidden (per direction), directions, layers)
MODULES = [
    ("rnn_tanh", lambda m: m.RNN(3, 4), False, 4, 1, 1),
    ("rnn_relu_2layers_nobias", lambda m: m.RNN(3, 4, 2, nonlinearity="relu", bias=False), False, 4, 1, 2),
    ("lstm", lambda m: m.LSTM(3, 4), True, 4, 1, 1),
    ("lstm_2layers_bidir", lambda m: m.LSTM(3, 4, num_layers=2, bidirectional=True), True, 4, 2, 2),
    ("lstm_proj", lambda m: m.LSTM(3, 5, proj_size=2, num_layers=2), True, 2, 1, 2),
    ("lstm_nobias_batch_first", lambda m: m.LSTM(3, 4, bias=False, batch_first=True), True, 4, 1, 1),
    ("gru", lambda m: m.GRU(3, 4), False, 4, 1, 1),
    ("gru_bidir_batch_first", lambda m: m.GRU(3, 4, bidirectional=True, batch_first=True), False, 4, 2, 1),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("label,make,cell,hidden,dirs,layers", MODULES, ids=[m[0] for m in MODULES])
def test_module_matches_torch(label, make, cell, hidden, dirs, layers, device):
    dev, dt = setup(device)
    vm, tm = twin(make, dt, dev)
    L, N = 5, 2
    shape = (N, L, 3) if tm.batch_first else (L, N, 3)
    xv, xt = leaf_pair(rnd(*shape, seed=1), dt, dev)
    h0v, h0t = leaf_pair(rnd(layers * dirs, N, hidden, seed=2), dt, dev)
    pairs = [(xv, xt), (h0v, h0t)]
    if cell:
        c0v, c0t = leaf_pair(rnd(layers * dirs, N, tm.hidden_size, seed=3), dt, dev)
        pairs.append((c0v, c0t))
        compare(vm, tm, (xv, (h0v, c0v)), (xt, (h0t, c0t)), dt, pairs)
    else:
        compare(vm, tm, (xv, h0v), (xt, h0t), dt, pairs)


@pytest.mark.parametrize("make", [lambda m: m.LSTM(3, 4, 2), lambda m: m.GRU(3, 4), lambda m: m.RNN(3, 4)],
                         ids=["lstm", "gru", "rnn"])
def test_unbatched_and_default_state(make):
    vm, tm = twin(make, "float64")
    xv, xt = leaf_pair(rnd(4, 3, seed=4), "float64", None)
    compare(vm, tm, (xv,), (xt,), "float64", [(xv, xt)])


def test_state_dict_keys_and_init():
    m = nn.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=2)
    t = TN.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=2)
    assert list(m.state_dict()) == list(t.state_dict())
    for (n, p), (_, q) in zip(m.named_parameters(), t.named_parameters()):
        assert tuple(p.shape) == tuple(q.shape), n
        a = to_np(p)
        assert np.all(np.abs(a) <= 1 / np.sqrt(8)) and a.std() > 0.05, n
    m.flatten_parameters()
    assert "LSTM(3, 8, proj_size=2, num_layers=2, bidirectional=True)" == repr(m)


def test_dropout_between_layers_only_in_training():
    vm, tm = twin(lambda m: m.GRU(3, 4, num_layers=3, dropout=0.5), "float64")
    x = vk.tensor(rnd(5, 2, 3, seed=5))
    vm.eval()
    close(vm(x)[0], tm.eval()(torch.tensor(rnd(5, 2, 3, seed=5)))[0], "float64", "eval: no dropout")
    vm.train()
    vk.manual_seed(0)
    a = vm(x)[0]
    vk.manual_seed(1)
    b = vm(x)[0]
    assert not np.allclose(to_np(a), to_np(b)), "training: dropout between layers"


# ---- cells ----

CELLS = [
    ("rnncell", lambda m: m.RNNCell(3, 4), False),
    ("rnncell_relu_nobias", lambda m: m.RNNCell(3, 4, bias=False, nonlinearity="relu"), False),
    ("lstmcell", lambda m: m.LSTMCell(3, 4), True),
    ("grucell", lambda m: m.GRUCell(3, 4), False),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("label,make,cell", CELLS, ids=[c[0] for c in CELLS])
def test_cell_matches_torch(label, make, cell, device):
    dev, dt = setup(device)
    vm, tm = twin(make, dt, dev)
    xv, xt = leaf_pair(rnd(2, 3, seed=6), dt, dev)
    hv, ht = leaf_pair(rnd(2, 4, seed=7), dt, dev)
    pairs = [(xv, xt), (hv, ht)]
    if cell:
        cv, ct = leaf_pair(rnd(2, 4, seed=8), dt, dev)
        pairs.append((cv, ct))
        vo, to = vm(xv, (hv, cv)), tm(xt, (ht, ct))
    else:
        vo, to = (vm(xv, hv),), (tm(xt, ht),)
    ups = [rnd(*o.shape, seed=20 + k) for k, o in enumerate(to)]
    for a, b in zip(vo, to):
        close(a, b, dt, "forward")
    sum((a * vk.tensor(u, dtype=VDT[dt]).to(a.device)).sum() for a, u in zip(vo, ups)).backward()
    sum((b * torch.tensor(u, dtype=TDT[dt])).sum() for b, u in zip(to, ups)).backward()
    for k, (a, b) in enumerate(pairs):
        close(a.grad, b.grad, dt, f"input {k} gradient")
    for (n, pv), (_, pt) in zip(vm.named_parameters(), tm.named_parameters()):
        close(pv.grad, pt.grad, dt, f"{n} gradient")


def test_cells_unbatched_without_state():
    for make in (lambda m: m.LSTMCell(3, 4), lambda m: m.GRUCell(3, 4), lambda m: m.RNNCell(3, 4)):
        vm, tm = twin(make, "float64")
        x = rnd(3, seed=9)
        vo, to = vm(vk.tensor(x)), tm(torch.tensor(x))
        for a, b in zip(vo if isinstance(vo, tuple) else (vo,), to if isinstance(to, tuple) else (to,)):
            assert tuple(a.shape) == tuple(b.shape) == (4,)
            close(a, b, "float64")


# ---- packed sequences ----

LENGTHS = [5, 3, 2]


def _padded(seed=11):
    x = rnd(5, 3, 3, seed=seed)
    for b, n in enumerate(LENGTHS):
        x[n:, b] = 0.0
    return x


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("make,cell", [(lambda m: m.LSTM(3, 4, num_layers=2, bidirectional=True), True),
                                       (lambda m: m.GRU(3, 4, bidirectional=True), False),
                                       (lambda m: m.RNN(3, 4), False)], ids=["lstm", "gru", "rnn"])
def test_packed_sequence_matches_torch(make, cell, device):
    dev, dt = setup(device)
    vm, tm = twin(make, dt, dev)
    order = [1, 0, 2]  # unsorted lengths: enforce_sorted=False
    lengths = [LENGTHS[i] for i in order]
    x = _padded()[:, order]
    xv, xt = leaf_pair(x, dt, dev)
    dirs = 2 if tm.bidirectional else 1
    h0v, h0t = leaf_pair(rnd(tm.num_layers * dirs, 3, 4, seed=12), dt, dev)
    pv = vrnn.pack_padded_sequence(xv, lengths, enforce_sorted=False)
    pt = TN.utils.rnn.pack_padded_sequence(xt, lengths, enforce_sorted=False)
    assert to_np(pv.batch_sizes).tolist() == pt.batch_sizes.tolist()
    assert to_np(pv.sorted_indices).tolist() == pt.sorted_indices.tolist()
    hv, ht = ((h0v, h0v * 0.5), (h0t, h0t * 0.5)) if cell else (h0v, h0t)
    compare(vm, tm, (pv, hv), (pt, ht), dt, [(xv, xt), (h0v, h0t)])


def test_pad_packed_roundtrip_and_pack_sequence():
    seqs = [rnd(n, 2, seed=n) for n in LENGTHS]
    vs = [vk.tensor(s) for s in seqs]
    ts = [torch.tensor(s) for s in seqs]
    for bf in (False, True):
        close(vrnn.pad_sequence(vs, batch_first=bf, padding_value=-1.0),
              TN.utils.rnn.pad_sequence(ts, batch_first=bf, padding_value=-1.0), "float64")
    close(vrnn.pad_sequence(vs, padding_side="left"), TN.utils.rnn.pad_sequence(ts, padding_side="left"), "float64")
    pv, pt = vrnn.pack_sequence(vs), TN.utils.rnn.pack_sequence(ts)
    close(pv.data, pt.data, "float64")
    assert to_np(pv.batch_sizes).tolist() == pt.batch_sizes.tolist()
    assert pv.sorted_indices is None and pt.sorted_indices is None
    for bf in (False, True):
        (a, la), (b, lb) = (vrnn.pad_packed_sequence(pv, batch_first=bf, padding_value=7.0, total_length=6),
                            TN.utils.rnn.pad_packed_sequence(pt, batch_first=bf, padding_value=7.0, total_length=6))
        close(a, b, "float64")
        assert to_np(la).tolist() == lb.tolist()
    # unsorted: the padded result comes back in the caller's order
    order = [2, 0, 1]
    pv = vrnn.pack_sequence([vs[i] for i in order], enforce_sorted=False)
    pt = TN.utils.rnn.pack_sequence([ts[i] for i in order], enforce_sorted=False)
    (a, la), (b, lb) = vrnn.pad_packed_sequence(pv), TN.utils.rnn.pad_packed_sequence(pt)
    close(a, b, "float64")
    assert to_np(la).tolist() == lb.tolist()
    assert to_np(pv.unsorted_indices).tolist() == pt.unsorted_indices.tolist()


def test_packed_gradient_flows_to_padded_input():
    x = vk.tensor(_padded(), requires_grad=True)
    p = vrnn.pack_padded_sequence(x, LENGTHS)
    out, _ = vrnn.pad_packed_sequence(p)
    out.sum().backward()
    mask = np.zeros((5, 3, 3))
    for b, n in enumerate(LENGTHS):
        mask[:n, b] = 1.0
    np.testing.assert_array_equal(to_np(x.grad), mask)


# ---- bad input: torch's errors ----

def _raises_like_torch(fn):
    with pytest.raises(Exception) as te:
        fn(TN, torch)
    with pytest.raises(type(te.value)):
        fn(nn, vk)


BAD = {
    "wrong_input_size": lambda m, t: m.LSTM(3, 4)(t.zeros(5, 2, 2)),
    "wrong_h0_shape": lambda m, t: m.GRU(3, 4)(t.zeros(5, 2, 3), t.zeros(2, 2, 4)),
    "wrong_c0_shape": lambda m, t: m.LSTM(3, 4)(t.zeros(5, 2, 3), (t.zeros(1, 2, 4), t.zeros(1, 3, 4))),
    "unbatched_input_batched_h0": lambda m, t: m.RNN(3, 4)(t.zeros(5, 3), t.zeros(1, 2, 4)),
    "input_4d": lambda m, t: m.LSTM(3, 4)(t.zeros(5, 2, 3, 1)),
    "cell_wrong_input_size": lambda m, t: m.LSTMCell(3, 4)(t.zeros(2, 5)),
    "cell_wrong_hidden": lambda m, t: m.GRUCell(3, 4)(t.zeros(2, 3), t.zeros(2, 5)),
    "cell_3d_input": lambda m, t: m.RNNCell(3, 4)(t.zeros(1, 2, 3)),
    "proj_not_smaller": lambda m, t: m.LSTM(3, 4, proj_size=4),
    "proj_on_gru": lambda m, t: m.GRU(3, 4, proj_size=2),
    "bad_dropout": lambda m, t: m.LSTM(3, 4, dropout=1.5),
    "bad_nonlinearity": lambda m, t: m.RNN(3, 4, nonlinearity="sigmoid"),
    "unsorted_lengths": lambda m, t: m.utils.rnn.pack_padded_sequence(t.zeros(5, 3, 2), [2, 5, 3]),
    "zero_length": lambda m, t: m.utils.rnn.pack_padded_sequence(t.zeros(5, 3, 2), [5, 3, 0]),
    "short_total_length": lambda m, t: m.utils.rnn.pad_packed_sequence(
        m.utils.rnn.pack_padded_sequence(t.zeros(5, 2, 2), [5, 3]), total_length=3),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_like_torch(name):
    _raises_like_torch(BAD[name])


# ---- the fused op itself ----

def _lstm_cell_torch(gates, c):
    i, f, g, o = gates.chunk(4, 1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def test_lstm_cell_op_second_order():
    """lstm_cell's gradient (lstm_cell_backward) differentiated again, against torch's composite."""
    g0, c0 = rnd(2, 12, seed=13) * 2, rnd(2, 3, seed=14)
    gv, gt = leaf_pair(g0, "float64", None)
    cv, ct = leaf_pair(c0, "float64", None)
    hv, cnv = vk._C._lstm_cell(gv, cv)
    ht, cnt = _lstm_cell_torch(gt, ct)
    close(hv, ht, "float64")
    close(cnv, cnt, "float64")
    u1, u2 = rnd(2, 3, seed=15), rnd(2, 3, seed=16)
    dv = vk.autograd.grad((hv * vk.tensor(u1)).sum() + (cnv * vk.tensor(u2)).sum() ** 2, [gv, cv], create_graph=True)
    dt_ = torch.autograd.grad((ht * torch.tensor(u1)).sum() + (cnt * torch.tensor(u2)).sum() ** 2, [gt, ct],
                              create_graph=True)
    for a, b in zip(dv, dt_):
        close(a, b, "float64", "first derivative")
    w = [rnd(*a.shape, seed=17 + k) for k, a in enumerate(dt_)]
    sv = vk.autograd.grad(sum((a * vk.tensor(x)).sum() for a, x in zip(dv, w)), [gv, cv])
    st = torch.autograd.grad(sum((a * torch.tensor(x)).sum() for a, x in zip(dt_, w)), [gt, ct])
    for a, b in zip(sv, st):
        close(a, b, "float64", "second derivative")


def test_lstm_cell_op_bad_shapes():
    with pytest.raises(vk.ShapeError, match="lstm_cell"):
        vk._C._lstm_cell(vk.zeros(2, 10), vk.zeros(2, 2))
    with pytest.raises(vk.ShapeError, match="c_prev"):
        vk._C._lstm_cell(vk.zeros(2, 8), vk.zeros(3, 2))
    with pytest.raises(vk.DTypeError, match="lstm_cell"):
        vk._C._lstm_cell(vk.zeros(2, 8), vk.zeros(2, 2, dtype=vk.float64))


# ---- the LSTM layer as one graph node (issue #16 item 2, lstm: train.lstm against torch) ----

LAYER_CASES = [("one_dir", False, 4), ("bidir", True, 4), ("one_step", True, 1)]


@pytest.mark.parametrize("label,bidir,steps", LAYER_CASES, ids=[c[0] for c in LAYER_CASES])
def test_lstm_layer_node_second_order(label, bidir, steps):
    """An LSTM layer's gradient taken with create_graph and differentiated again (w.r.t. the input,
    h0, c0 and every weight), against torch: the layer's one node recomputes its states recorded
    under create_graph, so the second derivative sees how they depend on the inputs."""
    vm, tm = twin(lambda m: m.LSTM(3, 4, num_layers=2, bidirectional=bidir), "float64")
    dirs = 2 if bidir else 1
    xv, xt = leaf_pair(rnd(steps, 2, 3, seed=21), "float64", None)
    hv, ht = leaf_pair(rnd(2 * dirs, 2, 4, seed=22), "float64", None)
    cv, ct = leaf_pair(rnd(2 * dirs, 2, 4, seed=23), "float64", None)
    ov, (hnv, cnv) = vm(xv, (hv, cv))
    ot, (hnt, cnt) = tm(xt, (ht, ct))
    u = [rnd(*o.shape, seed=24 + k) for k, o in enumerate((ot, hnt, cnt))]
    lv = sum(((o * vk.tensor(w)) ** 2).sum() for o, w in zip((ov, hnv, cnv), u))
    lt = sum(((o * torch.tensor(w)) ** 2).sum() for o, w in zip((ot, hnt, cnt), u))
    wrt_v, wrt_t = [xv, hv, cv] + list(vm.parameters()), [xt, ht, ct] + list(tm.parameters())
    dv = vk.autograd.grad(lv, wrt_v, create_graph=True)
    dt_ = torch.autograd.grad(lt, wrt_t, create_graph=True)
    for k, (a, b) in enumerate(zip(dv, dt_)):
        close(a, b, "float64", f"first derivative {k}")
    w = [rnd(*a.shape, seed=40 + k) for k, a in enumerate(dt_)]
    sv = vk.autograd.grad(sum((a * vk.tensor(x)).sum() for a, x in zip(dv, w)), wrt_v)
    st = torch.autograd.grad(sum((a * torch.tensor(x)).sum() for a, x in zip(dt_, w)), wrt_t)
    for k, (a, b) in enumerate(zip(sv, st)):
        close(a, b, "float64", f"second derivative {k}")


@pytest.mark.parametrize("bidir", [False, True], ids=["one_dir", "bidir"])
def test_lstm_layer_node_gradcheck(bidir):
    """Finite differences in float64, first and second order, through every output (out, h_n, c_n)."""
    torch.manual_seed(0)
    vm = nn.LSTM(2, 3, bidirectional=bidir).to(vk.float64)
    dirs = 2 if bidir else 1
    x = vk.tensor(rnd(3, 2, 2, seed=31)).requires_grad_()
    h0 = vk.tensor(rnd(dirs, 2, 3, seed=32)).requires_grad_()
    c0 = vk.tensor(rnd(dirs, 2, 3, seed=33)).requires_grad_()

    def f(x, h0, c0):
        out, (hn, cn) = vm(x, (h0, c0))
        return out.sum() * 0.5 + (hn * hn).sum() + (cn * vk.tensor(rnd(*cn.shape, seed=34))).sum()
    assert vk.autograd.gradcheck(f, (x, h0, c0))
    assert vk.autograd.gradgradcheck(f, (x, h0, c0))


def test_lstm_layer_is_one_node():
    """The output of a plain LSTM layer comes from the layer's node, not from a chain of per-step
    nodes (the backward is one reverse-time loop with one GEMM for W_hh's gradient)."""
    vm = nn.LSTM(3, 4)
    out, (hn, cn) = vm(vk.randn(5, 2, 3))
    names = set()
    stack = [out.grad_fn]
    while stack and len(names) < 50:
        node = stack.pop()
        if node is None:
            continue
        names.add(node.name)
        stack.extend(fn for fn, _ in getattr(node, "next_functions", ()))
    assert any("LstmLayer" in n for n in names), names
    assert not any("lstm_cell" in n.lower() for n in names), names


def test_lstm_layer_loop_bad_shapes():
    """The C++ time loops behind the layer's node name themselves and the shapes."""
    xw, h, wt = vk.zeros(3, 2, 8), vk.zeros(2, 2), vk.zeros(2, 8)
    with pytest.raises(vk.ShapeError, match="lstm_layer.*xw"):
        vk._C._lstm_layer_forward(vk.zeros(3, 2, 6), h, h, wt, False)
    with pytest.raises(vk.ShapeError, match=r"lstm_layer.*h0 and c0.*\[2, 2\].*got \[3, 2\]"):
        vk._C._lstm_layer_forward(xw, vk.zeros(3, 2), h, wt, False)
    with pytest.raises(vk.ShapeError, match="lstm_layer.*wt"):
        vk._C._lstm_layer_forward(xw, h, h, vk.zeros(8, 2), False)
    gates, hs, cs = vk._C._lstm_layer_forward(xw, h, h, wt, False)
    with pytest.raises(vk.ShapeError, match="lstm_layer_backward.*gradient"):
        vk._C._lstm_layer_backward(vk.zeros(3, 2, 2), gates, hs, cs, h, h, wt, False)
    with pytest.raises(vk.ShapeError, match="lstm_layer_backward.*states"):
        vk._C._lstm_layer_backward(vk.zeros(4, 2, 2), gates, hs[:2], cs, h, h, wt, False)
