"""Issue #16 item 6: vk.nn.init and vk.nn.utils against torch: exact values where deterministic
(gains, fans, eye_, dirac_, the QR of orthogonal_, clipping, vector conversions, parametrizations
loaded from torch's state_dicts), statistics where random (bounds, mean and std, orthogonality,
truncation), and torch's errors."""

import math
import warnings

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import nn

from conftest import to_np

TN = torch.nn


def close(a, b, tol=1e-12):
    np.testing.assert_allclose(to_np(a) if not isinstance(a, np.ndarray) else a,
                               to_np(b) if not isinstance(b, np.ndarray) else b, rtol=tol, atol=tol)


# ---- nn.init: deterministic parts ----------------------------------------------------------------

GAINS = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None), ("conv_transpose1d", None),
         ("conv_transpose2d", None), ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
         ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None)]


@pytest.mark.parametrize("name,param", GAINS)
def test_calculate_gain_equals_torch(name, param):
    assert nn.init.calculate_gain(name, param) == TN.init.calculate_gain(name, param)


def test_calculate_gain_errors_as_torch():
    for args in [("leaky_relu", True), ("leaky_relu", "0.1"), ("softmax", None)]:
        with pytest.raises(ValueError) as tv:
            nn.init.calculate_gain(*args)
        with pytest.raises(ValueError) as tt:
            TN.init.calculate_gain(*args)
        assert str(tv.value) == str(tt.value)


@pytest.mark.parametrize("shape", [(3, 5), (4, 2, 3), (6, 2, 3, 3), (2, 3, 1, 2, 2), (0, 4)])
def test_fans_equal_torch(shape):
    assert nn.init._calculate_fan_in_and_fan_out(vk.empty(*shape)) == \
        TN.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_fan_and_mode_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init._calculate_fan_in_and_fan_out(vk.empty(3))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]"):
        nn.init.kaiming_uniform_(vk.empty(3, 4), mode="fan_avg")
    nn.init.kaiming_normal_(vk.empty(3, 4), mode="FAN_OUT")  # torch lower-cases the mode


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2)])
def test_eye_equals_torch(shape):
    t = vk.full(shape, 7.0)
    assert nn.init.eye_(t) is t
    np.testing.assert_array_equal(to_np(t), to_np(TN.init.eye_(torch.empty(shape))))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        nn.init.eye_(vk.empty(2, 2, 2))


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((2, 4, 3), 1), ((6, 2, 3, 3), 2), ((6, 2, 3, 3), 3),
                                          ((4, 3, 3, 4, 5), 1), ((4, 3, 3, 4, 5), 2)])
def test_dirac_equals_torch(shape, groups):
    t = vk.full(shape, 5.0)
    assert nn.init.dirac_(t, groups) is t
    np.testing.assert_array_equal(to_np(t), to_np(TN.init.dirac_(torch.empty(shape), groups)))


def test_dirac_errors_as_torch():
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        nn.init.dirac_(vk.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        nn.init.dirac_(vk.empty(5, 2, 3), groups=2)


@pytest.mark.parametrize("shape", [(6, 4), (5, 5), (7, 1)])
def test_orthogonal_qr_equals_torch_qr(shape):
    """The Householder Q of orthogonal_ is torch's linalg.qr Q with sign(diag(R)) folded in."""
    a = np.random.default_rng(0).standard_normal(shape)
    q, r = torch.linalg.qr(torch.tensor(a))
    close(nn.init._householder_q(vk.tensor(a)), q * torch.diag(r).sign())


@pytest.mark.parametrize("shape,gain", [((8, 5), 1.0), ((3, 10), 1.0), ((6, 2, 3), 2.0), ((4, 4), 0.5)])
def test_orthogonal_is_orthogonal(shape, gain):
    t = vk.empty(*shape, dtype=vk.float64)
    assert nn.init.orthogonal_(t, gain=gain) is t
    w = to_np(t).reshape(shape[0], -1)
    small = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    close(small, gain * gain * np.eye(small.shape[0]), 1e-12)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        nn.init.orthogonal_(vk.empty(3))


def test_init_runs_without_a_graph_and_returns_the_tensor():
    p = nn.Parameter(vk.zeros(4, 6))
    for fn in (nn.init.xavier_uniform_, nn.init.xavier_normal_, nn.init.kaiming_uniform_, nn.init.kaiming_normal_,
               nn.init.orthogonal_, nn.init.trunc_normal_, nn.init.eye_, lambda t: nn.init.sparse_(t, 0.5)):
        out = fn(p)
        assert out is p or fn.__name__ == "<lambda>"
        assert p.is_leaf and p.grad_fn is None and p.requires_grad
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        nn.init.kaiming_uniform_(vk.empty(0, 3))


# ---- nn.init: random parts (statistics) ------------------------------------------------------------

def _stats(t):
    a = to_np(t).astype(np.float64)
    return a.min(), a.max(), a.mean(), a.std()


@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier_statistics(gain):
    t = vk.empty(300, 200)
    nn.init.xavier_uniform_(t, gain=gain)
    bound = gain * math.sqrt(6 / 500) * (1 + 1e-6)
    lo, hi, mean, std = _stats(t)
    assert -bound <= lo and hi <= bound and hi > 0.99 * bound
    assert abs(std - bound / math.sqrt(3)) < 0.02 * bound and abs(mean) < 0.01 * bound
    nn.init.xavier_normal_(t, gain=gain)
    assert abs(_stats(t)[3] - gain * math.sqrt(2 / 500)) < 0.02 * gain * math.sqrt(2 / 500)


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("leaky_relu", 0), ("leaky_relu", 0.3), ("relu", 0), ("tanh", 0),
                                            ("linear", 0), ("selu", 0), ("sigmoid", 0)])
def test_kaiming_statistics(mode, nonlinearity, a):
    t = vk.empty(120, 40, 3, 3)  # fan_in 360, fan_out 1080
    fan = 360 if mode == "fan_in" else 1080
    std = TN.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    nn.init.kaiming_uniform_(t, a=a, mode=mode, nonlinearity=nonlinearity)
    lo, hi, _, s = _stats(t)
    bound = math.sqrt(3) * std * (1 + 1e-6)  # float32 draws may round onto the bound
    assert -bound <= lo and hi <= bound and abs(s - std) < 0.02 * std
    nn.init.kaiming_normal_(t, a=a, mode=mode, nonlinearity=nonlinearity)
    _, _, m, s = _stats(t)
    assert abs(s - std) < 0.02 * std and abs(m) < 0.02 * std


def _truncated_moments(mean, std, a, b):
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    al, be = (a - mean) / std, (b - mean) / std
    z = cdf(be) - cdf(al)
    m = mean + std * (phi(al) - phi(be)) / z
    xphi = lambda x: 0.0 if math.isinf(x) else x * phi(x)  # noqa: E731
    var = std * std * (1 + (xphi(al) - xphi(be)) / z - ((phi(al) - phi(be)) / z) ** 2)
    return m, math.sqrt(var)


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 1.5), (0.0, 0.02, -0.04, 0.04),
                                          (0.0, 1.0, 3.0, 4.0), (1.0, 1.0, -math.inf, 1.0)])
def test_trunc_normal_statistics(mean, std, a, b):
    t = vk.empty(200, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (3, 4) is in the tail: torch warns too
        assert nn.init.trunc_normal_(t, mean, std, a, b) is t
    lo, hi, m, s = _stats(t)
    em, es = _truncated_moments(mean, std, a, b)
    assert a <= lo and hi <= b
    assert abs(m - em) < 0.02 * es and abs(s - es) < 0.02 * es


def test_trunc_normal_warns_as_torch():
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        nn.init.trunc_normal_(vk.empty(10), mean=5.0, a=-1.0, b=1.0)


def test_sparse_zeros_per_column():
    t = vk.empty(20, 30)
    nn.init.sparse_(t, 0.3, std=0.5)
    a = to_np(t)
    assert np.all((a == 0).sum(0) == math.ceil(0.3 * 20))
    assert abs(a[a != 0].std() - 0.5) < 0.1
    assert len({tuple(np.flatnonzero(a[:, j] == 0)) for j in range(30)}) > 1  # random rows per column
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        nn.init.sparse_(vk.empty(2, 3, 4), 0.1)


@pytest.mark.parametrize("fn", [nn.init.xavier_uniform_, nn.init.kaiming_normal_, nn.init.orthogonal_,
                                nn.init.trunc_normal_,
                                lambda t, generator: nn.init.sparse_(t, 0.2, generator=generator)])
def test_generator_makes_draws_repeatable(fn):
    def draw(seed):
        t = vk.empty(6, 5)
        fn(t, generator=vk.Generator().manual_seed(seed))
        return to_np(t)
    np.testing.assert_array_equal(draw(3), draw(3))
    assert not np.array_equal(draw(3), draw(4))


@pytest.mark.skipif(not vk.vulkan.is_available(), reason="no Vulkan device")
def test_init_on_vulkan():
    t = vk.empty(6, 4, device="vulkan")
    nn.init.orthogonal_(t)
    w = to_np(t)
    np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-5)
    nn.init.trunc_normal_(t, a=-0.5, b=0.5)
    assert np.abs(to_np(t)).max() <= 0.5
    d = vk.empty(4, 2, 3, device="vulkan")
    np.testing.assert_array_equal(to_np(nn.init.dirac_(d)), to_np(TN.init.dirac_(torch.empty(4, 2, 3))))
    nn.init.constant_(t, 0.25)
    np.testing.assert_array_equal(to_np(t), np.full((6, 4), 0.25, np.float32))
    assert str(t.device).startswith("vulkan")


@pytest.mark.skipif(not vk.vulkan.is_available(), reason="no Vulkan device")
def test_fill_and_zero_on_vulkan_regression():
    """fill_ and zero_ of a Vulkan tensor crashed (the CPU scalar was read as device memory)."""
    t = vk.ones(2, 3, device="vulkan")
    t.fill_(2.5)
    np.testing.assert_array_equal(to_np(t), np.full((2, 3), 2.5, np.float32))
    t[:, 1].zero_()
    np.testing.assert_array_equal(to_np(t), [[2.5, 0, 2.5], [2.5, 0, 2.5]])


# ---- nn.utils: clipping and vectors ----------------------------------------------------------------

def _grads_pair(seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    gs = [rng.standard_normal((3, 4)) * scale, rng.standard_normal(5) * scale]
    vps = [vk.zeros(*g.shape, dtype=vk.float64, requires_grad=True) for g in gs]
    tps = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in gs]
    for vp, tp, g in zip(vps, tps, gs):
        vp.grad, tp.grad = vk.tensor(g), torch.tensor(g)
    return vps, tps


@pytest.mark.parametrize("value", [0.5, 2])
def test_clip_grad_value_equals_torch(value):
    vps, tps = _grads_pair()
    assert nn.utils.clip_grad_value_(vps, value, foreach=True) is None
    TN.utils.clip_grad_value_(tps, value)
    for v, t in zip(vps, tps):
        close(v.grad, t.grad)


def test_clip_grad_norm_error_if_nonfinite_leaves_grads_unscaled():
    vps, tps = _grads_pair()
    vps[1].grad = vk.tensor([1.0, float("inf"), 0, 0, 0], dtype=vk.float64)
    before = to_np(vps[0].grad)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        nn.utils.clip_grad_norm_(vps, 1.0, error_if_nonfinite=True, foreach=False)
    np.testing.assert_array_equal(to_np(vps[0].grad), before)
    vps, tps = _grads_pair(scale=5.0)
    close(nn.utils.clip_grad_norm_(vps, 1.0, norm_type=3, error_if_nonfinite=True),
          TN.utils.clip_grad_norm_(tps, 1.0, norm_type=3))
    for v, t in zip(vps, tps):
        close(v.grad, t.grad)


def test_parameters_to_vector_and_back_equal_torch():
    vm, tm = nn.Linear(3, 2).double(), TN.Linear(3, 2).double()
    vm.load_state_dict({k: vk.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    vec_v, vec_t = nn.utils.parameters_to_vector(vm.parameters()), TN.utils.parameters_to_vector(tm.parameters())
    close(vec_v, vec_t)
    new = np.arange(8.0)
    nn.utils.vector_to_parameters(vk.tensor(new), vm.parameters())
    TN.utils.vector_to_parameters(torch.tensor(new), tm.parameters())
    for (k, v), (_, t) in zip(vm.state_dict().items(), tm.state_dict().items()):
        close(v, t)
    assert isinstance(vm.weight, nn.Parameter) and vm.weight.requires_grad
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters(new, vm.parameters())


# ---- nn.utils.parametrize / parametrizations ------------------------------------------------------

def _copy_state(vm, tm):
    assert list(vm.state_dict()) == list(tm.state_dict())
    vm.load_state_dict({k: vk.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _compare_steps(vm, tm, x, steps=3):
    xv, xt = vk.tensor(x), torch.tensor(x)
    for _ in range(steps):
        yv, yt = vm(xv), tm(xt)
        close(yv, yt)
        (yv * yv).sum().backward()
        (yt * yt).sum().backward()
    for (nv, pv), (nt, pt) in zip(vm.named_parameters(), tm.named_parameters()):
        assert nv == nt
        close(pv.grad, pt.grad, 1e-10)
    for (nv, bv), (_, bt) in zip(vm.named_buffers(), tm.named_buffers()):
        close(bv, bt, 1e-10)


@pytest.mark.parametrize("make", [lambda m: m.Linear(4, 3), lambda m: m.Conv2d(2, 3, 3)])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_equals_torch(make, dim):
    vm, tm = make(nn).double(), make(TN).double()
    nn.utils.parametrizations.weight_norm(vm, dim=dim)
    TN.utils.parametrizations.weight_norm(tm, dim=dim)
    assert type(vm).__name__ == type(tm).__name__
    _copy_state(vm, tm)
    x = np.random.default_rng(1).standard_normal((2, 4) if isinstance(vm, nn.Linear) else (2, 2, 5, 5))
    _compare_steps(vm, tm, x)
    nn.utils.parametrize.remove_parametrizations(vm, "weight")
    TN.utils.parametrize.remove_parametrizations(tm, "weight")
    assert type(vm) in (nn.Linear, nn.Conv2d) and list(vm.state_dict()) == list(tm.state_dict())
    close(vm.weight, tm.weight, 1e-10)


@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm_parametrization_equals_torch(train):
    vm, tm = nn.Conv2d(2, 4, 3).double(), TN.Conv2d(2, 4, 3).double()
    nn.utils.parametrizations.spectral_norm(vm)
    TN.utils.parametrizations.spectral_norm(tm)
    _copy_state(vm, tm)  # _u and _v included: the power iteration then runs as torch's
    vm.train(train), tm.train(train)
    _compare_steps(vm, tm, np.random.default_rng(2).standard_normal((2, 2, 5, 5)))
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), name="nope")


def test_spectral_norm_normalises_the_top_singular_value():
    # A weight with a known spectral gap (singular values 3, 1.5, ...): 30 power iterations from
    # any start reach the top one to ~2^-60. (A random weight made the test fail for ~5% of the
    # generator's states, which depend on what ran before in the worker.)
    rng = np.random.default_rng(0)
    u, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    v, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    lin = nn.Linear(6, 5).double()
    with vk.no_grad():
        lin.weight.copy_(vk.tensor(u @ np.diag([3.0, 1.5, 1.0, 0.5, 0.2]) @ v[:5]))
    m = nn.utils.parametrizations.spectral_norm(lin)
    for _ in range(30):
        m(vk.zeros(1, 6, dtype=vk.float64))  # power iterations in training mode
    assert abs(np.linalg.svd(to_np(m.weight), compute_uv=False)[0] - 1) < 1e-12


class _Symmetric:
    """A parametrization (for vkml or torch): X = triu(A) + triu(A, 1)^T, with a right inverse."""

    @staticmethod
    def make(mod, lib):
        class Symmetric(mod.Module):
            def forward(self, a):
                return a.triu() + a.triu(1).transpose(-1, -2)

            def right_inverse(self, a):
                return a.triu()
        return Symmetric()


def test_register_parametrization_equals_torch():
    vm, tm = nn.Linear(3, 3).double(), TN.Linear(3, 3).double()
    nn.utils.parametrize.register_parametrization(vm, "weight", _Symmetric.make(nn, vk))
    TN.utils.parametrize.register_parametrization(tm, "weight", _Symmetric.make(TN, torch))
    assert nn.utils.parametrize.is_parametrized(vm) and nn.utils.parametrize.is_parametrized(vm, "weight")
    assert not nn.utils.parametrize.is_parametrized(vm, "bias")
    assert nn.utils.parametrize.type_before_parametrizations(vm) is nn.Linear
    _copy_state(vm, tm)
    w = to_np(vm.weight)
    np.testing.assert_array_equal(w, w.T)
    _compare_steps(vm, tm, np.random.default_rng(3).standard_normal((2, 3)))
    s = np.arange(9.0).reshape(3, 3)
    s = s + s.T
    vm.weight = vk.tensor(s)  # through right_inverse
    tm.weight = torch.tensor(s)
    close(vm.weight, s)
    close(vm.parametrizations.weight.original, tm.parametrizations.weight.original)
    with nn.utils.parametrize.cached():
        assert vm.weight is vm.weight
    assert vm.weight is not vm.weight
    nn.utils.parametrize.remove_parametrizations(vm, "weight", leave_parametrized=False)
    assert type(vm) is nn.Linear and isinstance(vm.weight, nn.Parameter)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        nn.utils.parametrize.remove_parametrizations(vm, "weight")
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        nn.utils.parametrize.register_parametrization(vm, "nope", _Symmetric.make(nn, vk))


def test_parametrization_may_not_change_the_shape_unless_unsafe():
    class Half(nn.Module):
        def forward(self, a):
            return a[:1]
    with pytest.raises(ValueError, match="may not change the shape"):
        nn.utils.parametrize.register_parametrization(nn.Linear(2, 2), "weight", Half())
    m = nn.utils.parametrize.register_parametrization(nn.Linear(2, 2), "weight", Half(), unsafe=True)
    assert tuple(m.weight.shape) == (1, 2)


def test_old_style_weight_norm_equals_torch():
    vm, tm = nn.Linear(4, 3).double(), TN.Linear(4, 3).double()
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(vm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        TN.utils.weight_norm(tm)
    assert list(vm.state_dict()) == list(tm.state_dict()) == ["bias", "weight_g", "weight_v"]
    _copy_state(vm, tm)
    _compare_steps(vm, tm, np.random.default_rng(4).standard_normal((2, 4)))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"), \
            pytest.warns(FutureWarning):
        nn.utils.weight_norm(vm)
    nn.utils.remove_weight_norm(vm)
    TN.utils.remove_weight_norm(tm)
    assert list(vm.state_dict()) == list(tm.state_dict())
    close(vm.weight, tm.weight, 1e-10)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(vm)


def test_parametrized_module_deepcopies_and_refuses_pickle():
    import copy
    import pickle
    m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
    c = copy.deepcopy(m)
    assert type(c) is type(m) and c.parametrizations.weight.original1 is not m.parametrizations.weight.original1
    np.testing.assert_array_equal(to_np(c.weight), to_np(m.weight))
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)


@pytest.mark.parametrize("train", [True, False])
def test_old_style_spectral_norm_equals_torch(train):
    vm, tm = nn.Conv2d(2, 3, 3).double(), TN.Conv2d(2, 3, 3).double()
    nn.utils.spectral_norm(vm)
    TN.utils.spectral_norm(tm)
    assert list(vm.state_dict()) == list(tm.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    _copy_state(vm, tm)
    vm.train(train), tm.train(train)
    _compare_steps(vm, tm, np.random.default_rng(5).standard_normal((2, 2, 5, 5)))
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(vm)
    nn.utils.remove_spectral_norm(vm)
    TN.utils.remove_spectral_norm(tm)
    assert list(vm.state_dict()) == list(tm.state_dict())
    close(vm.weight, tm.weight, 1e-10)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(vm)


@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf")])
def test_get_total_norm_and_clip_grads_with_norm_equal_torch(norm_type):
    vps, tps = _grads_pair(scale=3.0)
    nv = nn.utils.get_total_norm([p.grad for p in vps], norm_type)
    nt = TN.utils.get_total_norm([p.grad for p in tps], norm_type)
    close(nv, nt)
    nn.utils.clip_grads_with_norm_(vps, 1.0, nv)
    TN.utils.clip_grads_with_norm_(tps, 1.0, nt)
    for v, t in zip(vps, tps):
        close(v.grad, t.grad)
