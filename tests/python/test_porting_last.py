"""The last Python-level torch names (#15) against torch 2.13: from_file, get_device_module and
vk.cpu, thread_safe_generator, Tensor.set_/volatile/reinforce, F.grouped_mm (torch's CPU kernel
is the oracle of values; its backward fails on CPU, so gradients are checked against a per-group
torch composite and central differences) and lobpcg (eigenvalues against torch's and numpy's,
the eigenvalues' gradient against torch's)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import vkml as vk
from conftest import check_fd, to_np

F = vk.nn.functional


# ---- from_file ----

@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(10, dtype=np.float32).tofile(path)
    return str(path)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_from_file_reads_size_elements_like_torch(data_file, dtype):
    size = {"float32": 10, "float64": 5, "int32": 7, "int64": 3, "bool": 40}[dtype]
    got = vk.from_file(data_file, False, size, dtype=getattr(vk, dtype if dtype != "bool" else "bool_"))
    want = torch.from_file(data_file, False, size, dtype=getattr(torch, dtype))
    np.testing.assert_array_equal(to_np(got), to_np(want))
    assert str(to_np(got).dtype) == str(to_np(want).dtype)


def test_from_file_defaults_size_zero_and_the_default_dtype(data_file):
    assert tuple(vk.from_file(data_file).shape) == (0,)
    got = vk.from_file(data_file, size=4)
    assert got.dtype == vk.float32
    np.testing.assert_array_equal(to_np(got), [0, 1, 2, 3])


def test_from_file_is_a_private_copy(data_file):
    t = vk.from_file(data_file, shared=False, size=2)
    t[0] = 5.0
    np.testing.assert_array_equal(np.fromfile(data_file, dtype=np.float32)[:2], [0, 1])


def test_from_file_errors(data_file, tmp_path):
    with pytest.raises(RuntimeError, match="smaller than the required mapping size <44>"):
        vk.from_file(data_file, size=11)
    with pytest.raises(RuntimeError, match="unable to open file"):
        vk.from_file(str(tmp_path / "missing.bin"), size=1)
    with pytest.raises(NotImplementedError, match="shared=True"):
        vk.from_file(data_file, shared=True, size=1)


# ---- get_device_module, vk.cpu, thread_safe_generator ----

def test_get_device_module_names_each_device_kind():
    assert vk.get_device_module("cpu") is vk.cpu
    assert vk.get_device_module(vk.device("cpu")) is vk.cpu
    assert vk.get_device_module("cuda") is vk.cuda
    assert vk.get_device_module("cuda:0") is vk.cuda
    assert vk.get_device_module("vulkan") is vk.vulkan
    default = vk.vulkan if vk.accelerator.is_available() else vk.cpu
    assert vk.get_device_module() is default
    with pytest.raises(RuntimeError, match="Invalid value of device"):
        vk.get_device_module(3)


def test_cpu_module_answers_as_torch_cpu():
    for name in ("is_available", "is_initialized", "current_device", "device_count"):
        assert getattr(vk.cpu, name)() == getattr(torch.cpu, name)(), name
    assert vk.cpu.synchronize() is None and vk.cpu.set_device("cpu") is None
    s = vk.cpu.current_stream()
    assert s.device_type == "cpu"
    with vk.cpu.stream(s):
        pass
    assert isinstance(vk.cpu.Event(), vk.Event)


def test_thread_safe_generator_is_none_outside_thread_workers():
    # torch: None in the main process and in process workers; vkml's workers are processes
    assert vk.thread_safe_generator() is None
    assert torch.thread_safe_generator() is None


# ---- Tensor.set_, volatile, reinforce ----

def test_set_shares_source_memory_shape_and_strides_like_torch():
    for lib in (vk, torch):
        a = lib.zeros(3)
        b = lib.arange(12.0).reshape(3, 4)[:, 1:3]  # a strided view with an offset
        assert a.set_(b) is a
        assert a.is_set_to(b) and tuple(a.shape) == (3, 2) and tuple(a.stride()) == (4, 1)
        b[0, 0] = 7.0
        assert a[0, 0].item() == 7.0
        assert a._version >= 1
        c = lib.ones(2)
        c.set_()
        assert tuple(c.shape) == (0,)


def test_set_refuses_what_torch_refuses():
    with pytest.raises(RuntimeError, match="Could not set tensor of type"):
        vk.zeros(2).set_(vk.zeros(2, dtype=vk.float64))
    leaf = vk.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.set_(vk.ones(2))
    with vk.no_grad():
        leaf.set_(vk.ones(2))
    assert leaf.requires_grad and to_np(leaf).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="Storage"):
        vk.zeros(2).set_([1.0, 2.0])


def test_set_of_a_graph_tensor_is_refused_at_the_call():
    # torch raises "derivative for set_ is not implemented" in backward; vkml at the call
    y = vk.ones(2, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="derivative for set_ is not implemented"):
        y.set_(vk.ones(2))


def test_volatile_warns_and_is_false_as_in_torch():
    t = vk.ones(2)
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert t.volatile is False
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        t.volatile = True
    assert not t.requires_grad


def test_reinforce_raises_torchs_removed_error():
    with pytest.raises(RuntimeError, match=r"reinforce\(\) was removed"):
        vk.ones(2).reinforce(1.0)
    with pytest.raises(RuntimeError, match=r"reinforce\(\) was removed"):
        torch.ones(2).reinforce(1.0)


# ---- F.grouped_mm ----

def _layouts(rng):
    """(mat_a, mat_b, offs) of the four layouts; K and N multiples of 4 (torch's CPU kernel
    wants 16-byte strides)."""
    o3 = np.array([3, 5, 9], dtype=np.int32)
    return {
        "2d3d": (rng.normal(size=(12, 4)), rng.normal(size=(3, 4, 8)), o3),
        "3d2d": (rng.normal(size=(3, 8, 4)), rng.normal(size=(4, 12)), np.array([4, 8, 11], np.int32)),
        "3d3d": (rng.normal(size=(3, 8, 4)), rng.normal(size=(3, 4, 8)), None),
        "2d2d": (rng.normal(size=(8, 12)), rng.normal(size=(12, 8)), o3),
    }


def _per_group_torch(a, b, offs):
    """torch's values composed per group (its CPU grouped_mm has no working backward)."""
    if offs is None:
        return a @ b
    ends = offs.tolist()
    bounds = list(zip([0] + ends[:-1], ends))
    if a.ndim == 2 and b.ndim == 3:
        out = torch.cat([a[s:e] @ b[g] for g, (s, e) in enumerate(bounds)])
        return torch.cat([out, a.new_zeros(a.shape[0] - ends[-1], b.shape[-1])])
    if a.ndim == 3:
        out = torch.cat([a[g] @ b[:, s:e] for g, (s, e) in enumerate(bounds)], 1)
        return torch.cat([out, a.new_zeros(a.shape[1], b.shape[1] - ends[-1])], 1)
    return torch.stack([a[:, s:e] @ b[s:e] for s, e in bounds])


@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "3d3d", "2d2d"])
def test_grouped_mm_values_match_torch(layout):
    a, b, offs = _layouts(np.random.default_rng(0))[layout]
    a, b = a.astype(np.float32), b.astype(np.float32)
    kw_v = {} if offs is None else {"offs": vk.tensor(offs)}
    kw_t = {} if offs is None else {"offs": torch.tensor(offs)}
    got = to_np(F.grouped_mm(vk.tensor(a), vk.tensor(b), **kw_v))
    want = to_np(TF.grouped_mm(torch.tensor(a), torch.tensor(b), **kw_t))
    assert got.shape == want.shape
    # torch leaves the tail past offs[-1] uninitialized; vkml's is 0
    if layout == "2d3d":
        assert np.all(got[9:] == 0)
        got, want = got[:9], want[:9]
    if layout == "3d2d":
        assert np.all(got[:, 11:] == 0)
        got, want = got[:, :11], want[:, :11]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["2d3d", "3d2d", "3d3d", "2d2d"])
def test_grouped_mm_gradients_match_per_group_torch_and_differences(layout):
    a, b, offs = _layouts(np.random.default_rng(1))[layout]
    kw_v = {} if offs is None else {"offs": vk.tensor(offs)}
    av, bv = vk.tensor(a, requires_grad=True), vk.tensor(b, requires_grad=True)
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    g = np.random.default_rng(2).normal(size=_per_group_torch(at, bt, offs).shape)
    F.grouped_mm(av, bv, **kw_v).backward(vk.tensor(g))
    _per_group_torch(at, bt, offs).backward(torch.tensor(g))
    np.testing.assert_allclose(to_np(av.grad), to_np(at.grad), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(to_np(bv.grad), to_np(bt.grad), rtol=1e-12, atol=1e-12)
    check_fd(lambda x, y: F.grouped_mm(x, y, **kw_v), [a, b])


def test_grouped_mm_errors_are_torchs():
    a, b, offs = vk.randn(12, 4), vk.randn(3, 4, 8), vk.tensor([3, 5, 9], dtype=vk.int32)
    cases = [
        (lambda: F.grouped_mm(a, b), "have to provide offsets"),
        (lambda: F.grouped_mm(vk.randn(3, 8, 4), b, offs=offs), "have to provide offsets"),
        (lambda: F.grouped_mm(a, b, offs=offs.long()), "int32"),
        (lambda: F.grouped_mm(vk.randn(2, 8, 4), b), "batched dimension has to match"),
        (lambda: F.grouped_mm(a, vk.randn(3, 8, 8), offs=offs), "contraction dimension"),
        (lambda: F.grouped_mm(a, b, offs=offs[:2]), "matrix batch sizes have to match"),
        (lambda: F.grouped_mm(vk.randn(12), b, offs=offs), "has to be 2 or 3d"),
        (lambda: F.grouped_mm(a, b, offs=offs, bias=vk.randn(3, 8)), "bias"),
        (lambda: F.grouped_mm(a, b, offs=offs, out_dtype=vk.float64), "output dtype"),
        (lambda: F.grouped_mm(a.long(), b.long(), offs=offs), "floating"),
        (lambda: F.grouped_mm(a, b, offs=vk.tensor([5, 3, 9], dtype=vk.int32)), "non-decreasing"),
    ]
    for call, match in cases:
        with pytest.raises(RuntimeError, match=match):
            call()
    assert F.grouped_mm(a, b, offs=offs, out_dtype=vk.float32).dtype == vk.float32


# ---- lobpcg ----

def _spd(m, seed=0):
    r = np.random.default_rng(seed).normal(size=(m, m))
    return r @ r.T + np.eye(m)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 3])
def test_lobpcg_eigenvalues_match_torch_and_numpy(k, largest):
    A = _spd(30)
    ev = np.linalg.eigvalsh(A)
    want = ev[::-1][:k] if largest else ev[:k]
    E, X = vk.lobpcg(vk.tensor(A), k=k, largest=largest)
    Et, _ = torch.lobpcg(torch.tensor(A), k=k, largest=largest)
    np.testing.assert_allclose(to_np(E), want, rtol=1e-10)
    np.testing.assert_allclose(to_np(E), to_np(Et), rtol=1e-10)
    X = to_np(X)
    assert X.shape == (30, k)
    # torch's stopping test: |r_i| < sqrt(eps) |x_i| (|A| + |E_i|)
    np.testing.assert_allclose(A @ X, X * to_np(E), atol=1.5e-8 * 2 * np.linalg.norm(A))


def test_lobpcg_start_block_generalized_batched_and_float32():
    A, X0 = _spd(24, 1), np.random.default_rng(2).normal(size=(24, 4))
    E, X = vk.lobpcg(vk.tensor(A), k=2, X=vk.tensor(X0))
    Et, Xt = torch.lobpcg(torch.tensor(A), k=2, X=torch.tensor(X0))
    np.testing.assert_allclose(to_np(E), to_np(Et), rtol=1e-10)
    assert tuple(X.shape) == tuple(Xt.shape) == (24, 2)
    B = np.diag(np.random.default_rng(3).uniform(1, 2, 24))
    np.testing.assert_allclose(to_np(vk.lobpcg(vk.tensor(A), k=2, B=vk.tensor(B), n=3)[0]),
                               to_np(torch.lobpcg(torch.tensor(A), k=2, B=torch.tensor(B), n=3)[0]),
                               rtol=1e-10)
    batch = np.stack([A, A + 2 * np.eye(24)])
    np.testing.assert_allclose(to_np(vk.lobpcg(vk.tensor(batch), k=2)[0]),
                               to_np(torch.lobpcg(torch.tensor(batch), k=2)[0]), rtol=1e-10)
    E32 = vk.lobpcg(vk.tensor(A.astype(np.float32)), k=2, niter=-1, tol=1e-5)[0]
    assert E32.dtype == vk.float32
    np.testing.assert_allclose(to_np(E32), np.linalg.eigvalsh(A)[::-1][:2], rtol=1e-4)


def test_lobpcg_eigenvalue_gradient_matches_torch():
    A = _spd(24, 4)
    w = np.array([1.0, -2.0])
    Av, At = vk.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    (vk.lobpcg(Av, k=2)[0] * vk.tensor(w)).sum().backward()
    (torch.lobpcg(At, k=2)[0] * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(Av.grad), to_np(At.grad), atol=1e-6)


def test_lobpcg_eigenvector_gradient_is_refused_not_dropped():
    Av = vk.tensor(_spd(24), requires_grad=True)
    E, X = vk.lobpcg(Av, k=2)
    with pytest.raises(NotImplementedError, match="eigenvectors"):
        (X.sum() + E.sum()).backward()


def test_lobpcg_errors_are_torchs():
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        vk.lobpcg(vk.tensor(_spd(8)), k=3)
    with pytest.raises(ValueError, match="smaller than 3 x"):
        torch.lobpcg(torch.tensor(_spd(8)), k=3)
    with pytest.raises(ValueError, match="square"):
        vk.lobpcg(vk.randn(9, 8), k=1)
    with pytest.raises(ValueError, match="method"):
        vk.lobpcg(vk.tensor(_spd(9)), k=1, method="lanczos")


# ---- unravel_index ----

@pytest.mark.parametrize("shape", [(2, 3), [2, 3], 6, (2, 2, 2), (4,), ()])
def test_unravel_index_matches_torch(shape):
    for idx in (np.array([4, 1, -1, 5, 6, -7, 0]), np.array(7), np.array([[1, 2], [3, 4]], np.int32)):
        got = vk.unravel_index(vk.tensor(idx), shape)
        want = torch.unravel_index(torch.tensor(idx), shape)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(to_np(g), to_np(w))
            assert str(to_np(g).dtype) == str(to_np(w).dtype)


def test_unravel_index_errors_are_torchs():
    for lib in (vk, torch):
        with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
            lib.unravel_index(lib.tensor([1.0]), (2, 3))
        with pytest.raises(ValueError, match="'shape' cannot have negative values"):
            lib.unravel_index(lib.tensor([1]), (2, -3))
        with pytest.raises(TypeError, match="expected 'shape' to be int or sequence of ints"):
            lib.unravel_index(lib.tensor([1]), 5.0)
        with pytest.raises(TypeError, match="only contain ints"):
            lib.unravel_index(lib.tensor([1]), (2, 4.0))
        with pytest.raises(RuntimeError):
            lib.unravel_index(lib.tensor([3]), (0, 4))


# ---- Tensor.register_post_accumulate_grad_hook (the engine's post-accumulation hooks) ----

def test_post_accumulate_grad_hook_sees_the_accumulated_grad_and_the_same_object():
    for lib in (vk, torch):
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        p.grad = lib.tensor([10.0, 10.0])
        seen = []
        handle = p.register_post_accumulate_grad_hook(
            lambda t: seen.append((t is p, t.grad.tolist())))
        (p * 3).sum().backward()
        lib.autograd.grad((p * 2).sum(), p)  # not an accumulating pass: no call
        assert seen == [(True, [13.0, 13.0])], lib.__name__
        handle.remove()
        (p * 3).sum().backward()
        assert len(seen) == 1


def test_post_accumulate_grad_hook_runs_an_optimizer_in_backward_as_torch():
    def run(lib):
        lib.manual_seed(0)
        w = lib.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
        b = lib.tensor([0.1, -0.2], requires_grad=True)
        opts = {p: lib.optim.SGD([p], lr=0.1, momentum=0.9) for p in (w, b)}

        def step(p):
            opts[p].step()
            opts[p].zero_grad()

        for p in (w, b):
            p.register_post_accumulate_grad_hook(step)
        x = lib.tensor([[1.0, 2.0], [3.0, -1.0]])
        for _ in range(3):
            ((x @ w + b) ** 2).mean().backward()
        return w.detach().numpy(), b.detach().numpy(), w.grad
    (vw, vb, vg), (tw, tb, tg) = run(vk), run(torch)
    np.testing.assert_allclose(vw, tw, rtol=1e-6, atol=1e-7)  # float32 rounding
    np.testing.assert_allclose(vb, tb, rtol=1e-6, atol=1e-7)
    assert vg is None and tg is None


def test_post_accumulate_grad_hook_refuses_non_leaves_and_constants():
    x = vk.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="does not require grad"):
        vk.ones(2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(TypeError, match="callable"):
        x.register_post_accumulate_grad_hook(3)
