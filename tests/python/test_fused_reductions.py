"""Reductions fused with the element-wise step before them (#18, the op sweep of 2026-12-07): the
2-norm's sum of squares as one op, sum_squares(x, dims, keepdim) -- vector_norm, clip_grad_norm_,
F.normalize, cosine_similarity, pairwise_distance, cosine_embedding_loss and cdist's row norms
square and sum in one pass instead of making x * x first. Checked against torch (values,
gradients in float64, against finite differences in float64), exact float32 references, strided
inputs, and on Vulkan where there is a device."""

import numpy as np
import pytest
import torch

import vkml as vk
from conftest import assert_close, devices, numeric_grad, to_np


@pytest.fixture(params=devices())
def device(request):
    return request.param


def graph_names(t):
    """The names of every node of t's backward graph, walked without recursion (each node once:
    the wrappers are kept alive, so that no id is reused)."""
    names, todo, seen, kept = [], [t.grad_fn], set(), []
    while todo:
        f = todo.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        kept.append(f)
        names.append(f.name)
        todo.extend(g for g, _ in f.next_functions)
    return names


def exact_row_norms(x):
    """float32 2-norms of x's rows from the exact sum of squares: float64 squares of float32 are
    exact and 64 of them sum with an error far below float32's rounding, so this is the float32
    rounding of the exact sum, then a correctly rounded float32 square root."""
    s = np.sum(x.astype(np.float64) ** 2, axis=1)
    return np.sqrt(s.astype(np.float32))


def test_norm_sums_squares_in_one_pass_regression(device):
    """vector_norm(x) was sqrt(sum(x * x)): a pass and a tensor for x * x, its squares rounded to
    float32 before the sum (Zen 4, 1 thread, 1M floats: 0.17 ms, torch 0.11). It is one op now:
    the graph has no MulBackward, and each float32 norm is the float32 rounding of the exact sum of
    squares, then of its root -- sums of rounded squares missed that on a few rows in a hundred."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2000, 64)).astype(np.float32) * rng.uniform(0.5, 2.0, (2000, 1)).astype(np.float32)
    v = vk.tensor(x).to(device).requires_grad_()
    names = graph_names(vk.linalg.vector_norm(v, dim=1))
    assert "SumSquaresBackward" in names and "MulBackward" not in names, names
    got = to_np(vk.linalg.vector_norm(vk.tensor(x).to(device), dim=1))
    if device == "cpu":  # Vulkan's float32 squares round in float (a compensated sum after)
        np.testing.assert_array_equal(got, exact_row_norms(x))
    assert_close(got, torch.linalg.vector_norm(torch.tensor(x), dim=1), "float32", what="rows")
    for view in (x.T, x[::3, 1::2]):
        want = torch.linalg.vector_norm(torch.tensor(view), dim=0)
        assert_close(vk.linalg.vector_norm(vk.tensor(view).to(device), dim=0).cpu(), want, "float32", what="strided")
    want = torch.linalg.vector_norm(torch.tensor(x[:6]), dim=(0, 1), keepdim=True)
    assert_close(vk.linalg.vector_norm(vk.tensor(x[:6]).to(device), dim=(0, 1), keepdim=True).cpu(), want, "float32")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_norm_special_values_and_empty_as_torch(dtype, device):
    """inf and NaN pass through the squares; an empty reduction is 0; a float32 sum of squares
    past float32's range is inf, as torch's."""
    rows = np.array([[3, 4, 0], [np.inf, 1, 0], [np.nan, 1, 0], [-np.inf, np.nan, 0], [0, 0, 0]], dtype)
    got = vk.linalg.vector_norm(vk.tensor(rows).to(device), dim=1).cpu()
    assert_close(got, torch.linalg.vector_norm(torch.tensor(rows), dim=1), np.dtype(dtype).name)
    empty = np.zeros((3, 0), dtype)
    assert_close(vk.linalg.vector_norm(vk.tensor(empty).to(device), dim=1).cpu(), np.zeros(3, dtype))
    big = np.array([1e20, 1e20], np.float32)  # the sum of squares overflows float32, as torch's
    assert to_np(vk.linalg.vector_norm(vk.tensor(big).to(device)))[()] == np.inf


def test_norm_gradients_match_torch_and_differences(device):
    """d|x| = x / |x| (0 at x = 0, as torch), second order too, through sum_squares's rule
    dx = 2 g x; against finite differences in float64 and torch."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5))
    up = rng.standard_normal(4)
    v = vk.tensor(x).to(device).requires_grad_()
    (vk.linalg.vector_norm(v, dim=1) * vk.tensor(up).to(device)).sum().backward()
    fd = numeric_grad(lambda a: vk.linalg.vector_norm(vk.tensor(a), dim=1), [x.copy()], up)[0]
    assert_close(v.grad.cpu(), fd, "float32", what="finite differences")
    t = torch.tensor(x, requires_grad=True)
    (torch.linalg.vector_norm(t, dim=1) * torch.tensor(up)).sum().backward()
    assert_close(v.grad.cpu(), t.grad, what="torch")
    z = vk.zeros(3, dtype=vk.float64).to(device).requires_grad_()
    vk.linalg.vector_norm(z).backward()
    assert_close(z.grad.cpu(), np.zeros(3), what="zero vector")
    # second order: the Hessian-vector product of |x|^2 / 2 ... through the norm itself
    v = vk.tensor(x).to(device).requires_grad_()
    t = torch.tensor(x, requires_grad=True)
    (gv,) = vk.autograd.grad(vk.linalg.vector_norm(v), v, create_graph=True)
    (gt,) = torch.autograd.grad(torch.linalg.vector_norm(t), t, create_graph=True)
    (gv * vk.tensor(x).to(device)).sum().backward()
    (gt * torch.tensor(x)).sum().backward()
    assert_close(v.grad.cpu(), t.grad, what="second order")


def test_functions_on_the_sum_of_squares_match_torch(device):
    """Every caller of the fused op, values and float64 gradients against torch."""
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((6, 8)), rng.standard_normal((6, 8))
    F, TF = vk.nn.functional, torch.nn.functional

    def target(m, x):  # +-1 labels in the inputs' dtype, on their device
        y = m.tensor([1.0, -1.0] * 3, dtype=m.float64)
        return y.to(x.device) if m is vk else y

    cases = [
        ("normalize", lambda m, f, x, y: f.normalize(x, dim=1)),
        ("cosine_similarity", lambda m, f, x, y: f.cosine_similarity(x, y)),
        ("pairwise_distance", lambda m, f, x, y: f.pairwise_distance(x, y)),
        ("cdist", lambda m, f, x, y: m.cdist(x, y)),
        ("cosine_embedding_loss", lambda m, f, x, y: f.cosine_embedding_loss(x, y, target(m, x), margin=0.1)),
        ("norm", lambda m, f, x, y: m.norm(x)),
    ]
    for name, fn in cases:
        va, vb = (vk.tensor(z).to(device).requires_grad_() for z in (a, b))
        ta, tb = (torch.tensor(z, requires_grad=True) for z in (a, b))
        got, want = fn(vk, F, va, vb), fn(torch, TF, ta, tb)
        assert_close(got.cpu(), want, what=name)
        got.sum().backward()
        want.sum().backward()
        assert_close(va.grad.cpu(), ta.grad, what=name + " d a")
        if name not in ("normalize", "norm"):
            assert_close(vb.grad.cpu(), tb.grad, what=name + " d b")


def test_clip_grad_norm_sums_squares_in_one_pass_regression(device):
    """clip_grad_norm_'s per-gradient norms are sum_squares too: the total and the clipped
    gradients as torch's (float32), a NaN total stays NaN, an inf norm type as before."""
    rng = np.random.default_rng(5)
    shapes = [(64, 33), (33,), (8, 4, 3)]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    for max_norm, norm_type in ((1.0, 2.0), (100.0, 2.0), (1.0, float("inf")), (0.5, 1.0)):
        vp = [vk.tensor(g).to(device).requires_grad_() for g in grads]
        tp = [torch.tensor(g, requires_grad=True) for g in grads]
        for p, t, g in zip(vp, tp, grads):
            p.grad, t.grad = vk.tensor(g).to(device), torch.tensor(g)
        total = vk.nn.utils.clip_grad_norm_(vp, max_norm, norm_type)
        want = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
        assert_close(total.cpu(), want, "float32", what=f"total {norm_type}")
        for p, t in zip(vp, tp):
            assert_close(p.grad.cpu(), t.grad, "float32", what=f"clipped {norm_type}")
    p = vk.tensor(np.array([np.nan, 1.0], np.float32)).to(device).requires_grad_()
    p.grad = vk.tensor(np.array([np.nan, 1.0], np.float32)).to(device)
    assert np.isnan(to_np(vk.nn.utils.clip_grad_norm_([p], 1.0)))


def test_sum_squares_rejects_integers_with_a_typed_error():
    """Integer inputs of the 2-norm are an error, as torch's ("Expected a floating point tensor"),
    raised by vector_norm before the fused op (whose own rule, floating dtypes only, backs it)."""
    with pytest.raises(RuntimeError, match="floating point"):
        vk.linalg.vector_norm(vk.tensor([3, 4]))


@pytest.mark.parametrize("target_dtype", [np.int64, np.float64, np.float32])
def test_embedding_losses_take_any_target_dtype_regression(target_dtype):
    """cosine_embedding_loss, hinge_embedding_loss and margin_ranking_loss refused a target of
    another dtype than the inputs (DTypeError) where torch takes any: +-1 as int64 labels, or a
    float64 target beside float32 inputs. The result's dtype is torch's: the inputs' for the two
    that only compare the target with +-1, the promoted one for margin_ranking_loss."""
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((6, 4)).astype(np.float32) for _ in range(2))
    y = np.array([1, -1, 1, 1, -1, -1], target_dtype)
    F, TF = vk.nn.functional, torch.nn.functional
    cases = [
        ("cosine_embedding", lambda f, t: f.cosine_embedding_loss(t(a), t(b), t(y), margin=0.1)),
        ("hinge_embedding", lambda f, t: f.hinge_embedding_loss(t(a[:, 0]), t(y), margin=0.5)),
        ("margin_ranking", lambda f, t: f.margin_ranking_loss(t(a[:, 0]), t(b[:, 0]), t(y), margin=0.2)),
    ]
    for name, fn in cases:
        got, want = fn(F, vk.tensor), fn(TF, torch.tensor)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
        assert_close(got, want, "float32", what=name)
