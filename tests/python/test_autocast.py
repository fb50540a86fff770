"""Autocast and GradScaler (#19 item 4) against PyTorch's.

vkml's policy is PyTorch's CUDA one on every device (matrix products in the region's dtype;
softmax, log_softmax, norms, sums, exp/log/pow in float32). Where PyTorch's CPU policy agrees
(linear, matmul, conv, mse_loss, cross_entropy...), results are compared with torch's CPU
autocast; where it differs (softmax and layer_norm stay bfloat16 in torch's CPU policy), the
dtypes are vkml's documented ones.
"""

import threading

import numpy as np
import pytest
import torch

import vkml as vk

EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def as_torch(t):
    return torch.from_dlpack(t.detach().contiguous())


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_policy_casts_each_op_as_documented(name):
    low = getattr(vk, name)
    x, w = vk.randn(4, 8), vk.randn(8, 3)
    with vk.autocast("cpu", dtype=low):
        assert vk.is_autocast_enabled("cpu") and vk.get_autocast_dtype("cpu") == low
        y = x @ w
        assert y.dtype == low                                   # low precision
        assert vk.nn.functional.linear(x, w.t()).dtype == low
        assert vk.nn.functional.conv2d(vk.randn(1, 2, 5, 5), vk.randn(3, 2, 3, 3)).dtype == low
        assert y.softmax(1).dtype == vk.float32                 # float32
        assert y.log_softmax(1).dtype == vk.float32
        assert y.sum().dtype == vk.float32 and y.mean().dtype == vk.float32
        assert y.exp().dtype == vk.float32 and (y ** 2).dtype == vk.float32
        assert vk.nn.functional.layer_norm(y, (3,)).dtype == vk.float32
        assert (y + 1).dtype == low and y.relu().dtype == low   # their inputs' dtype
        assert (y + x[:, :3]).dtype == vk.float32               # promotion
        d = x.double()
        assert (d @ w.double()).dtype == vk.float64             # float64 is left alone
        with vk.autocast("cpu", enabled=False):                 # nested: off
            assert (x @ w).dtype == vk.float32
        assert (x @ w).dtype == low
    assert not vk.is_autocast_enabled("cpu")
    assert (x @ w).dtype == vk.float32


def test_region_is_per_thread_and_restored_after_an_exception():
    x = vk.randn(2, 2)
    seen = []
    with vk.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append((x @ x).dtype))
        t.start()
        t.join()
        assert (x @ x).dtype == vk.bfloat16
    assert seen == [vk.float32]
    with pytest.raises(ZeroDivisionError):
        with vk.autocast("cpu"):
            1 / 0
    assert not vk.is_autocast_enabled("cpu")

    @vk.autocast("cpu", dtype=vk.float16)
    def f(a):
        return a @ a
    assert f(x).dtype == vk.float16 and (x @ x).dtype == vk.float32


def test_unsupported_dtype_or_device_as_torch():
    with pytest.warns(UserWarning, match="not supported"):
        with vk.autocast("cpu", dtype=vk.float64):
            assert (vk.ones(2, 2) @ vk.ones(2, 2)).dtype == vk.float32
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        vk.autocast("tpu")


def _mlp_step(m, rng_seed, autocast_kw, loss_kind):
    rng = np.random.default_rng(rng_seed)
    x = m.tensor(rng.standard_normal((16, 10)), dtype=m.float32)
    w1 = m.tensor(rng.standard_normal((32, 10)) * 0.3, dtype=m.float32).requires_grad_()
    b1 = m.tensor(np.zeros(32), dtype=m.float32).requires_grad_()
    w2 = m.tensor(rng.standard_normal((5, 32)) * 0.3, dtype=m.float32).requires_grad_()
    F = m.nn.functional
    with m.autocast(**autocast_kw):
        h = F.relu(F.linear(x, w1, b1))
        out = F.linear(h, w2)
        if loss_kind == "mse":
            loss = F.mse_loss(out, m.zeros(16, 5))
        else:
            loss = F.cross_entropy(out, m.tensor(rng.integers(0, 5, 16)))
        loss.backward()  # inside the region: backward itself is not autocast
    return out, loss, [w1.grad, b1.grad, w2.grad]


@pytest.mark.parametrize("loss_kind", ["mse", "cross_entropy"])
def test_training_step_matches_torchs_cpu_autocast(loss_kind):
    kw = dict(device_type="cpu", dtype=None)
    v_out, v_loss, v_grads = _mlp_step(vk, 1, {**kw, "dtype": vk.bfloat16}, loss_kind)
    t_out, t_loss, t_grads = _mlp_step(torch, 1, {**kw, "dtype": torch.bfloat16}, loss_kind)
    assert v_out.dtype == vk.bfloat16 and t_out.dtype == torch.bfloat16
    assert v_loss.dtype == vk.float32 and t_loss.dtype == torch.float32
    for v, t in zip(v_grads, t_grads):
        assert v.dtype == vk.float32  # float32 leaves get float32 gradients through the casts
        scale = t.abs().max().item()
        assert (as_torch(v) - t).abs().max().item() <= 4 * EPS["bfloat16"] * scale
    assert abs(v_loss.item() - t_loss.item()) <= 4 * EPS["bfloat16"] * abs(t_loss.item())


def test_matmul_in_the_region_is_torchs_to_one_ulp():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((33, 70)), rng.standard_normal((70, 17))
    with vk.autocast("cpu"):
        v = vk.tensor(a, dtype=vk.float32) @ vk.tensor(b, dtype=vk.float32)
    with torch.autocast("cpu"):
        t = torch.tensor(a, dtype=torch.float32) @ torch.tensor(b, dtype=torch.float32)
    assert v.dtype == vk.bfloat16 and t.dtype == torch.bfloat16
    diff = (as_torch(v).double() - t.double()).abs()
    assert (diff <= EPS["bfloat16"] * t.double().abs() + 1e-30).all()


# ---- GradScaler ----

def _scaler_run(m, grads_inf_at, steps=6, **kw):
    model = m.nn.Linear(3, 2)
    with m.no_grad():
        model.weight.copy_(m.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
        model.bias.zero_()
    opt = m.optim.SGD(model.parameters(), lr=0.1)
    scaler = m.amp.GradScaler("cpu", **kw)
    x = m.ones(4, 3)
    log = []
    for step in range(steps):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        if step in grads_inf_at:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        log.append((scaler.get_scale(), [p.detach().tolist() for p in model.parameters()]))
    return log, scaler.state_dict()


def test_grad_scaler_skips_backs_off_and_grows_as_torch():
    kw = dict(init_scale=2.0 ** 10, growth_interval=2)
    v_log, v_state = _scaler_run(vk, {1, 4}, **kw)
    t_log, t_state = _scaler_run(torch, {1, 4}, **kw)
    assert [s for s, _ in v_log] == [s for s, _ in t_log]
    for (_, vp), (_, tp) in zip(v_log, t_log):
        np.testing.assert_allclose(np.concatenate([np.ravel(p) for p in vp]),
                                   np.concatenate([np.ravel(p) for p in tp]), rtol=1e-6)
    assert v_state == t_state


def test_grad_scaler_errors_as_torch():
    model = vk.nn.Linear(2, 1)
    opt = vk.optim.SGD(model.parameters(), lr=0.1)
    s = vk.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="scale"):
        s.unscale_(opt)
    s.scale(model(vk.ones(1, 2)).sum()).backward()
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        s.step(opt)
    s.update()
    half = vk.nn.Linear(2, 1).to(vk.float16)
    hopt = vk.optim.SGD(half.parameters(), lr=0.1)
    s.scale(half(vk.ones(1, 2, dtype=vk.float16)).sum()).backward()
    with pytest.raises(ValueError, match="FP16 gradients"):
        s.unscale_(hopt)
    with pytest.raises(RuntimeError, match="empty"):
        vk.amp.GradScaler("cpu").load_state_dict({})


def test_state_functions_as_torch():
    x = vk.ones(2, 2)
    assert vk.get_autocast_cpu_dtype() == vk.bfloat16 and not vk.is_autocast_cpu_enabled()
    vk.set_autocast_cpu_dtype(vk.float16)
    vk.set_autocast_cpu_enabled(True)
    try:
        assert vk.is_autocast_enabled("cpu") and (x @ x).dtype == vk.float16
        assert vk.get_autocast_dtype("cpu") == vk.float16
    finally:
        vk.set_autocast_cpu_enabled(False)
        vk.set_autocast_cpu_dtype(vk.bfloat16)
    assert (x @ x).dtype == vk.float32
    assert vk.is_autocast_cache_enabled()
    vk.set_autocast_cache_enabled(False)
    assert not vk.is_autocast_cache_enabled()
    vk.set_autocast_cache_enabled(True)
    assert vk.autocast_increment_nesting() == 1 and vk.autocast_decrement_nesting() == 0
    vk.clear_autocast_cache()
    with pytest.raises(vk.DTypeError, match="float16 or bfloat16"):
        vk.set_autocast_cpu_dtype(vk.float32)


def test_checkpoint_recomputes_in_the_autocast_state_of_its_forward():
    # The recompute ran outside any region (backward's), so it computed in float32 what the
    # forward had computed in bfloat16: gradients of another function. As torch's checkpoint,
    # the recompute now runs in the state the forward saw.
    vk.manual_seed(0)
    lin = vk.nn.Linear(8, 8)
    x = vk.randn(4, 8, requires_grad=True)
    seen = []

    def block(x):
        h = lin(x)
        seen.append(h.dtype)
        return h.relu().sum(-1)

    grads = []
    for use_checkpoint in (True, False):
        with vk.autocast("cpu", dtype=vk.bfloat16):
            y = vk.utils.checkpoint.checkpoint(block, x) if use_checkpoint else block(x)
        grads.append(vk.autograd.grad(y.float().sum(), [x, lin.weight]))
    assert seen == [vk.bfloat16] * 3  # forward, recompute, plain run
    for a, b in zip(*grads):
        assert vk.equal(a, b)
    with vk.autocast("cpu", dtype=vk.bfloat16):  # and a region around backward changes nothing
        y = vk.utils.checkpoint.checkpoint(block, x)
    vk.autograd.grad(y.float().sum(), [x])
    with vk.autocast("cpu", dtype=vk.bfloat16):
        z = vk.utils.checkpoint.checkpoint(block, x)
    with vk.autocast("cpu", enabled=False):
        vk.autograd.grad(z.float().sum(), [x])
    assert seen[3:] == [vk.bfloat16] * 4


def test_a_weight_is_cast_once_per_region_and_the_cache_never_changes_a_result():
    vk.manual_seed(0)
    lin = vk.nn.Linear(6, 6)
    x = vk.randn(3, 6, requires_grad=True)
    size = vk._C._autocast_cache_size

    def twice():  # the same weight used twice, as an RNN's at each step
        return lin(vk.tanh(lin(x))).float().pow(2).sum()

    with vk.autocast("cpu"):
        y = twice()
        assert size() == 2  # weight and bias, each cast once
        with vk.autocast("cpu"):  # nested: the same cache
            twice()
        assert size() == 2
    assert size() == 0  # the outermost region's end clears it
    gx, gw = vk.autograd.grad(y, [x, lin.weight])
    with vk.autocast("cpu", cache_enabled=False):
        want = vk.autograd.grad(twice(), [x, lin.weight])
        assert size() == 0
    assert vk.is_autocast_cache_enabled()  # restored on exit
    assert vk.equal(gx, want[0]) and vk.equal(gw, want[1])


def test_the_autocast_cache_recasts_after_an_update_a_backward_or_no_grad():
    vk.manual_seed(1)
    lin = vk.nn.Linear(4, 4)
    opt = vk.optim.SGD(lin.parameters(), lr=0.5)
    x = vk.randn(2, 4)
    with vk.autocast("cpu"):
        with vk.no_grad():  # a cast without grad mode is not cached: its reuse would cut the grad
            lin(x)
        assert vk._C._autocast_cache_size() == 0
        losses = []
        for _ in range(3):  # steps inside one region: backward frees each step's graph and the
            loss = lin(x).float().square().sum()  # update changes the weight's version
            opt.zero_grad()
            loss.backward()
            assert lin.weight.grad is not None and lin.weight.grad.abs().sum().item() > 0
            opt.step()
            losses.append(loss.item())
    vk.manual_seed(1)
    ref = vk.nn.Linear(4, 4)
    ref_opt = vk.optim.SGD(ref.parameters(), lr=0.5)
    want = []
    for _ in range(3):
        with vk.autocast("cpu"):  # a region per step: nothing is reused
            loss = ref(x).float().square().sum()
        ref_opt.zero_grad()
        loss.backward()
        ref_opt.step()
        want.append(loss.item())
    assert losses == want
