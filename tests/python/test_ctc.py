"""Issue #16: F.ctc_loss / nn.CTCLoss against torch in float64: losses for padded and concatenated
targets, unbatched input, every reduction, blank elsewhere than 0, repeated labels, shorter inputs,
impossible alignments with and without zero_infinity; gradients of the logits (through log_softmax,
where torch's gradient is the true one) against torch, and the gradient of log_probs against finite
differences; the errors torch raises."""

import numpy as np
import pytest
import torch

import vkml as vk
from vkml import nn
from vkml.nn import functional as F

from conftest import numeric_grad, to_np

TF = torch.nn.functional


def _case(seed, t=6, n=3, c=5, s=3, blank=0):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((t, n, c))
    labels = [l for l in range(c) if l != blank]
    tg_lens = rng.integers(1, s + 1, n)
    tg_lens[0] = s
    targets = rng.choice(labels, (n, s))
    targets[0, :2] = labels[0]  # a repeated label: the path needs a blank between them
    in_lens = rng.integers(2 * s, t + 1, n)
    in_lens[0] = t
    return logits, targets, in_lens, tg_lens


def _both(logits, targets, in_lens, tg_lens, concat=False, **kw):
    vl, tl = vk.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    if concat:
        flat = np.concatenate([targets[i, :k] for i, k in enumerate(tg_lens)])
        vt, tt = vk.tensor(flat), torch.tensor(flat)
    else:
        vt, tt = vk.tensor(targets), torch.tensor(targets)
    lv = F.ctc_loss(F.log_softmax(vl, -1), vt, vk.tensor(in_lens), vk.tensor(tg_lens), **kw)
    lt = TF.ctc_loss(TF.log_softmax(tl, -1), tt, torch.tensor(in_lens), torch.tensor(tg_lens), **kw)
    return vl, tl, lv, lt


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("concat", [False, True])
@pytest.mark.parametrize("blank", [0, 4])
def test_ctc_loss_and_gradients_equal_torch(reduction, concat, blank):
    logits, targets, in_lens, tg_lens = _case(0, blank=blank)
    vl, tl, lv, lt = _both(logits, targets, in_lens, tg_lens, concat, blank=blank, reduction=reduction)
    np.testing.assert_allclose(to_np(lv), to_np(lt), rtol=1e-10, atol=1e-12)
    up = np.random.default_rng(1).standard_normal(lt.shape)
    (lv * vk.tensor(up)).sum().backward()
    (lt * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(to_np(vl.grad), to_np(tl.grad), rtol=1e-9, atol=1e-12)


def test_ctc_module_and_unbatched_input():
    logits, targets, in_lens, tg_lens = _case(2, n=1)
    lp = logits[:, 0]
    lv = nn.CTCLoss()(F.log_softmax(vk.tensor(lp), -1), vk.tensor(targets[0]), in_lens[0], tg_lens[0])
    lt = torch.nn.CTCLoss()(TF.log_softmax(torch.tensor(lp), -1), torch.tensor(targets[0]), torch.tensor(in_lens[0]),
                            torch.tensor(tg_lens[0]))
    np.testing.assert_allclose(to_np(lv), to_np(lt), rtol=1e-10)
    lv = F.ctc_loss(vk.tensor(lp), vk.tensor(targets[0]), (6,), (3,), reduction="none")
    assert lv.shape == () or tuple(lv.shape) == ()


def test_ctc_gradient_of_log_probs_equals_finite_differences():
    logits, targets, in_lens, tg_lens = _case(3, t=5, n=2, c=4, s=2)
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    x = vk.tensor(lp, requires_grad=True)
    F.ctc_loss(x, vk.tensor(targets), in_lens.tolist(), tg_lens.tolist(), reduction="sum").backward()
    num = numeric_grad(lambda a: F.ctc_loss(vk.tensor(a), vk.tensor(targets), in_lens.tolist(), tg_lens.tolist(),
                                            reduction="sum"), [lp.copy()], np.ones(()))
    np.testing.assert_allclose(to_np(x.grad), num[0], rtol=1e-6, atol=1e-8)


def test_ctc_second_derivative_is_defined():
    logits, targets, in_lens, tg_lens = _case(4, t=4, n=1, c=3, s=1)
    x = vk.tensor(logits, requires_grad=True)
    loss = F.ctc_loss(F.log_softmax(x, -1), vk.tensor(targets), in_lens, tg_lens)
    (g,) = vk.autograd.grad(loss, x, create_graph=True)
    xt = torch.tensor(logits, requires_grad=True)
    lt = TF.ctc_loss(TF.log_softmax(xt, -1), torch.tensor(targets), torch.tensor(in_lens), torch.tensor(tg_lens))
    (gt,) = torch.autograd.grad(lt, xt, create_graph=True)
    np.testing.assert_allclose(to_np(g), to_np(gt), rtol=1e-9, atol=1e-12)
    (g * g).sum().backward()
    assert np.all(np.isfinite(to_np(x.grad)))


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_impossible_alignment(zero_infinity):
    logits = np.random.default_rng(5).standard_normal((3, 2, 4))
    targets = np.array([[1, 1, 2], [1, 2, 3]])  # the first needs 4 frames (a blank between the 1s)
    in_lens, tg_lens = np.array([3, 3]), np.array([3, 3])
    vl, tl, lv, lt = _both(logits, targets, in_lens, tg_lens, reduction="none", zero_infinity=zero_infinity)
    np.testing.assert_allclose(to_np(lv), to_np(lt), rtol=1e-10)
    assert np.isinf(to_np(lv)[0]) != zero_infinity
    if zero_infinity:
        lv.sum().backward()
        lt.sum().backward()
        np.testing.assert_allclose(to_np(vl.grad), to_np(tl.grad), rtol=1e-9, atol=1e-12)


def test_ctc_empty_target_and_float32():
    logits = np.random.default_rng(6).standard_normal((4, 2, 3)).astype(np.float32)
    targets, in_lens, tg_lens = np.array([[1, 2], [0, 0]]), np.array([4, 3]), np.array([2, 0])
    _, _, lv, lt = _both(logits, targets, in_lens, tg_lens, reduction="none")
    np.testing.assert_allclose(to_np(lv), to_np(lt), rtol=1e-5)


def test_ctc_errors():
    lp = F.log_softmax(vk.randn(4, 2, 3), -1)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 4"):
        F.ctc_loss(lp, vk.tensor([[1, 2], [1, 1]]), [5, 4], [2, 2])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, vk.tensor([[1, 2], [1, 1]]), [4, 4], [2, 2], blank=3)
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 3 at dimension 1"):
        F.ctc_loss(lp, vk.tensor([[1, 2], [1, 1]]), [4, 4], [3, 2])
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.ctc_loss(lp, vk.tensor([[1, 2], [1, 1]]), [4, 4], [2, 2], reduction="avg")


@pytest.mark.skipif(not vk.vulkan.is_available(), reason="no Vulkan device")
@pytest.mark.parametrize("concat", [False, True])
def test_ctc_on_vulkan(concat):
    logits, targets, in_lens, tg_lens = _case(7)
    logits = logits.astype(np.float32)
    flat = np.concatenate([targets[i, :k] for i, k in enumerate(tg_lens)]) if concat else targets
    x = vk.tensor(logits, device="vulkan", requires_grad=True)
    lv = F.ctc_loss(F.log_softmax(x, -1), vk.tensor(flat, device="vulkan"), vk.tensor(in_lens), vk.tensor(tg_lens))
    xt = torch.tensor(logits, requires_grad=True)
    lt = TF.ctc_loss(TF.log_softmax(xt, -1), torch.tensor(flat), torch.tensor(in_lens), torch.tensor(tg_lens))
    np.testing.assert_allclose(to_np(lv), to_np(lt), rtol=1e-5)
    lv.backward()
    lt.backward()
    assert str(x.grad.device).startswith("vulkan")
    np.testing.assert_allclose(to_np(x.grad), to_np(xt.grad), rtol=1e-4, atol=1e-6)
