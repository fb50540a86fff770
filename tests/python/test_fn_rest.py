"""The last porting names that compose existing ops (issue #15, vkml/_fn_rest.py, nn/_fn_rest.py,
utils/data/_decorators.py), each against torch 2.13: values, gradients and errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import vkml as vk
import vkml.nn.functional as F


def to_vk(t, grad=False):
    return vk.tensor(t.detach().numpy(), requires_grad=grad)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol)


# ---- nn.functional: the __torch_function__ hooks, boolean_dispatch, assert_int_or_pair ----

def test_torch_function_hooks_say_no_override():
    x = vk.randn(2)
    assert F.has_torch_function((x,)) is False
    assert F.has_torch_function_unary(x) is False
    assert F.has_torch_function_variadic(x, x) is False
    with pytest.raises(NotImplementedError, match="handle_torch_function"):
        F.handle_torch_function(F.relu, (x,), x)


def test_boolean_dispatch_picks_by_keyword_position_or_default():
    def yes(a, flag=False):
        """doc"""
        return "yes"

    def no(a, flag=False):
        return "no"
    fn = F.boolean_dispatch("flag", 1, False, yes, no, "m", "picked")
    assert (fn(0), fn(0, True), fn(0, flag=True), fn(0, flag=False)) == ("no", "yes", "yes", "no")
    assert fn.__name__ == "picked" and fn.__module__ == "m" and fn.__doc__ == "doc" and no.__doc__ == "doc"


def test_boolean_dispatch_rejects_two_docstrings_as_torch():
    def a():
        """one"""

    def b():
        """two"""
    with pytest.raises(RuntimeError, match="only one function can have a docstring"):
        F.boolean_dispatch("f", 0, False, a, b, None, None)
    with pytest.raises(RuntimeError, match="only one function can have a docstring"):
        TF.boolean_dispatch("f", 0, False, a, b, None, None)


@pytest.mark.parametrize("arg", [3, (1, 2), [1, 2], (1, 2, 3), []])
def test_assert_int_or_pair_matches_torch(arg):
    def outcome(fn):
        try:
            fn(arg, "kernel_size", "{} must be int or pair")
            return None
        except AssertionError as e:
            return str(e)
    assert outcome(F.assert_int_or_pair) == outcome(TF.assert_int_or_pair)


# ---- conv_tbc and torch.convolution ----

@pytest.mark.parametrize("pad", [0, 2])
def test_conv_tbc_values_and_gradients_match_torch(pad):
    torch.manual_seed(0)
    x, w, b = torch.randn(7, 2, 3), torch.randn(3, 3, 4), torch.randn(4)
    ts = [t.clone().requires_grad_() for t in (x, w, b)]
    vs = [to_vk(t, True) for t in (x, w, b)]
    ref = torch.conv_tbc(*ts, pad)
    out = vk.conv_tbc(*vs, pad)
    assert list(out.shape) == list(ref.shape)
    close(out, ref)
    g = torch.randn(ref.shape)
    ref.backward(g)
    out.backward(to_vk(g))
    for v, t in zip(vs, ts):
        close(v.grad, t.grad)


def test_conv_tbc_bad_shapes_raise_runtime_error():
    with pytest.raises(RuntimeError, match="conv_tbc: input must have 3 dims"):
        F.conv_tbc(vk.randn(5, 2), vk.randn(2, 3, 4), vk.randn(4))
    with pytest.raises(RuntimeError, match="conv_tbc: input dim 2"):
        F.conv_tbc(vk.randn(5, 2, 3), vk.randn(2, 4, 4), vk.randn(4))
    with pytest.raises(RuntimeError, match="conv_tbc: bias size"):
        F.conv_tbc(vk.randn(5, 2, 3), vk.randn(2, 3, 4), vk.randn(5))


CONV_CASES = [  # input shape, weight shape, stride, padding, dilation, transposed, output_padding, groups
    ((2, 4, 9), (6, 2, 3), [2], [1], [1], False, [0], 2),
    ((2, 4, 8, 7), (6, 4, 3, 3), [1, 2], [1, 0], [2, 1], False, [0, 0], 1),
    ((1, 2, 5, 4, 4), (4, 2, 2, 3, 3), [1, 1, 1], [0, 1, 1], [1, 1, 1], False, [0, 0, 0], 1),
    ((2, 4, 6), (4, 3, 3), [2], [1], [1], True, [1], 1),
    ((2, 4, 5, 5), (4, 3, 3, 3), [2, 2], [1, 1], [1, 1], True, [1, 0], 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_routes_like_torch(case):
    xs, ws, stride, padding, dilation, transposed, out_pad, groups = case
    torch.manual_seed(1)
    x, w, b = torch.randn(xs), torch.randn(ws), torch.randn(ws[1] * groups if transposed else ws[0])
    ts = [t.clone().requires_grad_() for t in (x, w, b)]
    vs = [to_vk(t, True) for t in (x, w, b)]
    ref = torch.convolution(*ts, stride, padding, dilation, transposed, out_pad, groups)
    out = vk.convolution(*vs, stride, padding, dilation, transposed, out_pad, groups)
    close(out, ref, 1e-4)
    ref.sum().backward()
    out.sum().backward()
    for v, t in zip(vs, ts):
        close(v.grad, t.grad, 1e-4)


def test_convolution_rejects_a_2d_weight():
    with pytest.raises(RuntimeError, match="convolution"):
        vk.convolution(vk.randn(2, 3), vk.randn(3, 3), None, [1], [0], [1], False, [0], 1)


# ---- the grid sampler's coded forms ----

@pytest.mark.parametrize("mode,padding", [(0, 0), (1, 1), (0, 1)])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_codes_match_torch(mode, padding, align):
    torch.manual_seed(2)
    theta = torch.tensor([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.05]]] * 2)
    grid = torch.affine_grid_generator(theta, [2, 3, 4, 5], align)
    vgrid = vk.affine_grid_generator(to_vk(theta), [2, 3, 4, 5], align)
    close(vgrid, grid)
    x = torch.randn(2, 3, 6, 7, requires_grad=True)
    vx = to_vk(x, True)
    for op in ("grid_sampler", "grid_sampler_2d"):
        ref = getattr(torch, op)(x, grid, mode, padding, align)
        out = getattr(vk, op)(vx, vgrid, mode, padding, align)
        close(out, ref)
    ref.sum().backward()
    out.sum().backward()
    close(vx.grad, x.grad)


def test_grid_sampler_bad_codes_and_ranks_raise():
    x, g = vk.randn(1, 1, 3, 3), vk.zeros(1, 2, 2, 2)
    with pytest.raises(RuntimeError, match="interpolation_mode"):
        vk.grid_sampler(x, g, 5, 0, False)
    with pytest.raises(RuntimeError, match="grid_sampler_3d"):
        vk.grid_sampler_3d(x, g, 0, 0, False)
    with pytest.raises(NotImplementedError, match="grid_sample"):
        vk.grid_sampler_3d(vk.randn(1, 1, 2, 2, 2), vk.zeros(1, 2, 2, 2, 3), 0, 0, False)


# ---- the functional RNN forms ----

def _flat(module):
    return [p.detach().clone().requires_grad_() for p in module._flat_weights]


@pytest.mark.parametrize("op,cls,kw", [("rnn_tanh", torch.nn.RNN, {}), ("rnn_relu", torch.nn.RNN,
                                                                      {"nonlinearity": "relu"}),
                                       ("gru", torch.nn.GRU, {}), ("lstm", torch.nn.LSTM, {}),
                                       ("lstm", torch.nn.LSTM, {"proj_size": 2})])
@pytest.mark.parametrize("bias,bidir,batch_first", [(True, False, False), (False, True, True)])
def test_functional_rnn_matches_torch(op, cls, kw, bias, bidir, batch_first):
    torch.manual_seed(3)
    m = cls(3, 4, num_layers=2, bias=bias, bidirectional=bidir, batch_first=batch_first, **kw)
    params = _flat(m)
    vparams = [to_vk(p, True) for p in params]
    x = torch.randn(5, 2, 3) if not batch_first else torch.randn(2, 5, 3)
    dirs, hout = 2 if bidir else 1, kw.get("proj_size", 4) or 4
    h0 = torch.randn(2 * dirs, 2, hout)
    hx = [h0, torch.randn(2 * dirs, 2, 4)] if op == "lstm" else h0
    vhx = [to_vk(h) for h in hx] if op == "lstm" else to_vk(hx)
    ref = getattr(torch, op)(x, hx, params, bias, 2, 0.0, False, bidir, batch_first)
    out = getattr(vk, op)(to_vk(x), vhx, vparams, bias, 2, 0.0, False, bidir, batch_first)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        close(o, r, 1e-4)
    sum(r.sum() for r in ref).backward()
    vk_total = out[0].sum()
    for o in out[1:]:
        vk_total = vk_total + o.sum()
    vk_total.backward()
    for v, p in zip(vparams, params):
        close(v.grad, p.grad, 1e-4)


@pytest.mark.parametrize("op,cls", [("gru", torch.nn.GRU), ("lstm", torch.nn.LSTM)])
def test_functional_rnn_packed_form_matches_torch(op, cls):
    torch.manual_seed(4)
    m = cls(3, 4)
    params = _flat(m)
    packed = torch.nn.utils.rnn.pack_padded_sequence(torch.randn(5, 3, 3), [5, 3, 2])
    h0 = torch.zeros(1, 3, 4)
    hx = [h0, h0] if op == "lstm" else h0
    vhx = [to_vk(h) for h in hx] if op == "lstm" else to_vk(hx)
    ref = getattr(torch, op)(packed.data, packed.batch_sizes, hx, params, True, 1, 0.0, False, False)
    out = getattr(vk, op)(to_vk(packed.data), vk.tensor(packed.batch_sizes.numpy()), vhx,
                          [to_vk(p) for p in params], True, 1, 0.0, False, False)
    for o, r in zip(out, ref):
        close(o, r, 1e-4)


def test_functional_rnn_bad_arguments_raise():
    w = [vk.randn(4, 3), vk.randn(4, 4)]
    with pytest.raises(RuntimeError, match="rnn_tanh: expected 4 parameters"):
        vk.rnn_tanh(vk.randn(5, 2, 3), vk.zeros(1, 2, 4), w, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="rnn_tanh: expected hx"):
        vk.rnn_tanh(vk.randn(5, 2, 3), vk.zeros(1, 3, 4), w, False, 1, 0.0, False, False, False)
    with pytest.raises(TypeError, match="missing required arguments"):
        vk.gru(vk.randn(5, 2, 3), vk.zeros(1, 2, 4), w)


# ---- exceptions, Stream, Event ----

def test_exception_bases_match_torch():
    assert vk.AcceleratorError.__mro__[1] is torch.AcceleratorError.__mro__[1] is RuntimeError
    assert vk.FatalError.__mro__[1] is torch.FatalError.__mro__[1] is Exception


def test_stream_and_event_have_torch_members():
    s, e = vk.Stream(), vk.Event(enable_timing=True)
    for name in ("device", "device_index", "device_type", "query", "record_event", "stream_id", "synchronize",
                 "wait_event", "wait_stream"):
        assert hasattr(s, name), name
    for name in ("device", "elapsed_time", "event_id", "query", "record", "synchronize", "wait"):
        assert hasattr(e, name), name
    assert s.query() is True and e.query() is True
    s.wait_stream(s)
    s.wait_event(e)
    with s:
        pass
    with pytest.raises(ValueError, match="Both events must be recorded"):
        e.elapsed_time(vk.Event(enable_timing=True))
    e.record()
    end = s.record_event(vk.Event(enable_timing=True))
    assert end.elapsed_time(end) == 0.0 and e.elapsed_time(end) >= 0.0
    untimed = vk.Event()
    untimed.record(s)
    with pytest.raises(RuntimeError, match="enable_timing"):
        untimed.elapsed_time(end)
    assert vk.Stream("cpu").device_type == "cpu"


# ---- Tensor members ----

def test_is_set_to_matches_torch():
    t = torch.randn(3, 4)
    v = to_vk(t)
    pairs = [(lambda a: a, True), (lambda a: a.view(3, 4), True), (lambda a: a.clone(), False),
             (lambda a: a.t(), False), (lambda a: a[1:], False)]
    for make, expected in pairs:
        assert t.is_set_to(make(t)) is expected
        assert v.is_set_to(make(v)) is expected
    with pytest.raises(TypeError, match="is_set_to"):
        v.is_set_to(3)


def test_is_xla_and_module_load():
    p = vk.zeros(3)
    assert p.is_xla is False
    src = vk.tensor([1.0, 2.0, 3.0])
    out = p.module_load(src)
    assert out.tolist() == [1.0, 2.0, 3.0] and p.tolist() == [1.0, 2.0, 3.0] and not out.requires_grad
    assigned = p.module_load(src, assign=True)
    assert not p.module_load(vk.ones(3, requires_grad=True), assign=True).requires_grad
    assert assigned.tolist() == [1.0, 2.0, 3.0]


def test_grad_dtype_leaf_only_and_no_casting():
    x = vk.randn(3, requires_grad=True)
    assert x.grad_dtype == vk.float32
    x.grad_dtype = None
    assert x.grad_dtype is None
    x.grad_dtype = vk.float32
    assert x.grad_dtype == vk.float32
    with pytest.raises(NotImplementedError, match="does not cast"):
        x.grad_dtype = vk.float64
    with pytest.raises(RuntimeError, match="leaf"):
        (x * 2).grad_dtype
    with pytest.raises(RuntimeError, match="must be a vkml.dtype or None"):
        x.grad_dtype = 3


# ---- torch.utils.data's decorators ----

def test_functional_datapipe_registers_a_chained_method():
    from vkml.utils.data import IterableDataset, functional_datapipe

    class Source(IterableDataset):
        def __iter__(self):
            return iter(range(4))

    @functional_datapipe("fnrest_doubled")
    class Doubled(IterableDataset):
        def __init__(self, source, k=2):
            self.source, self.k = source, k

        def __iter__(self):
            return (self.k * i for i in self.source)
    try:
        assert list(Source().fnrest_doubled(3)) == [0, 3, 6, 9]
        with pytest.raises(Exception, match="already taken"):
            functional_datapipe("fnrest_doubled")(Doubled)
    finally:
        del IterableDataset.fnrest_doubled
    with pytest.raises(TypeError, match="can only decorate IterDataPipe"):
        functional_datapipe("x")(int)


def test_runtime_validation_checks_items_unless_disabled():
    from vkml.utils.data import IterableDataset, runtime_validation, runtime_validation_disabled

    class Ints(IterableDataset):
        type = int

        @runtime_validation
        def __iter__(self):
            yield from (1, "two")
    with pytest.raises(RuntimeError, match="Expected an instance as subtype"):
        list(Ints())
    with runtime_validation_disabled():
        assert list(Ints()) == [1, "two"]
    with pytest.raises(TypeError, match="Can not decorate function"):
        runtime_validation(lambda self: None)


def test_non_deterministic_refuses_under_determinism():
    from vkml.utils.data import IterableDataset, guaranteed_datapipes_determinism, non_deterministic

    @non_deterministic
    class Shuffled(IterableDataset):
        def __iter__(self):
            return iter(())

    @non_deterministic(lambda seed=None: seed is None)
    class Maybe(IterableDataset):
        def __init__(self, seed=None):
            self.seed = seed
    assert isinstance(Shuffled(), IterableDataset)
    with guaranteed_datapipes_determinism():
        with pytest.raises(TypeError, match="non-deterministic"):
            Shuffled()
        assert Maybe(seed=1).seed == 1
        with pytest.raises(TypeError, match="non-deterministic with the inputs"):
            Maybe()
    with pytest.raises(TypeError, match="Only `IterDataPipe`"):
        non_deterministic(int)


def test_argument_validation_and_dataset_kind():
    from vkml.utils.data import IterableDataset, TensorDataset, _DatasetKind, argument_validation

    @argument_validation
    def take(source: IterableDataset, n: int):
        return n
    with pytest.raises(TypeError, match="Expected argument 'source'"):
        take([1], 2)

    ds = TensorDataset(vk.arange(6).float())
    fetcher = _DatasetKind.create_fetcher(_DatasetKind.Map, ds, True, lambda b: [x[0].item() for x in b], False)
    assert fetcher.fetch([1, 3]) == [1.0, 3.0]

    class Stream3(IterableDataset):
        def __iter__(self):
            return iter([10, 11, 12])
    it = _DatasetKind.create_fetcher(_DatasetKind.Iterable, Stream3(), True, list, False)
    assert it.fetch([0, 1]) == [10, 11] and it.fetch([0, 1]) == [12]
    with pytest.raises(StopIteration):
        it.fetch([0, 1])


def test_functional_rnn_takes_keywords_and_drops_between_layers_only_in_training():
    vk.manual_seed(5)
    params = [vk.randn(4, 3), vk.randn(4, 4), vk.randn(4, 4), vk.randn(4, 4)]
    x, h0 = vk.randn(5, 2, 3), vk.zeros(2, 2, 4)
    kw = dict(input=x, hx=h0, params=params, has_biases=False, num_layers=2, bidirectional=False, batch_first=False)
    eval_out, _ = vk.rnn_tanh(dropout=0.9, train=False, **kw)
    again, _ = vk.rnn_tanh(x, h0, params, False, 2, 0.0, False, False, False)
    assert eval_out.tolist() == again.tolist()
    train_out, _ = vk.rnn_tanh(dropout=0.9, train=True, **kw)
    assert list(train_out.shape) == [5, 2, 4] and train_out.tolist() != eval_out.tolist()
