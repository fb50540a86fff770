"""The differential fuzzer (fuzz/diff_fuzz.py) as part of the test suite.

test_fixed_seeds runs 300 fixed random programs (forward values/dtypes/shapes against numpy,
gradients against finite differences of the numpy reference, typed errors for invalid programs)
in a worker subprocess, so a crash is reported with its seed instead of killing pytest. The other
tests check that the fuzzer itself can fail: a deliberately wrong numpy reference, and a
deliberately wrong vkml gradient, are both reported, and a failing program is minimised into a
regression test.

The program kinds of fuzz/diff_fuzz_ext.py (in-place writes and views, hooks, second order,
huge sizes) have fixed seeds of their own (test_fixed_seeds_<kind>) and a self-check each: a
broken in-place reference, a wrong hook scale, a wrong second-derivative reference and a vkml
size check that does not raise must all be reported.

Regression tests for bugs the fuzzer found go at the end, one named test each, made with
`python fuzz/diff_fuzz.py --minimize SEED` (xfail(strict=True) until the bug is fixed).
"""

import json
import os
import subprocess  # noqa: F401  (used by crash reproducers the minimiser prints)
import sys
import time

import numpy as np  # noqa: F401
import pytest

import vkml as vk  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "fuzz"))
import diff_fuzz  # noqa: E402

FIXED_SEEDS = range(0, 300)


def _run(seeds):
    results = list(diff_fuzz.run_batch(seeds))
    assert len(results) == len(seeds), "the worker lost programs"
    return results


def _describe(fails):
    return "\n".join(
        f"seed {r['seed']}: {r.get('kind')} at {r.get('op')}: {r.get('msg', '')[:500]}\n"
        f"  reproduce: python fuzz/diff_fuzz.py --minimize {r['seed']}"
        for r in fails)


def test_fixed_seeds():
    results = _run(FIXED_SEEDS)
    fails = [r for r in results if r["status"] != "ok"]
    assert not fails, f"{len(fails)} of {len(results)} programs failed:\n" + _describe(fails)
    # the fixed set really exercises the op table and the gradient checks
    table = set().union(*(r["table"] for r in results))
    assert len(table) >= 60, sorted(table)
    graded = sum(r["grad"] in ("ok", "ok-directional") for r in results)
    assert graded >= 100, graded
    errors = sum(r["grad"] == "error-program" for r in results)
    assert errors >= 5, errors


def test_detects_a_wrong_reference(monkeypatch):
    """A numpy reference off by 0.1% (tanh) is reported as a value mismatch of tanh."""
    monkeypatch.setenv("DIFF_FUZZ_BREAK", "ref:tanh")
    results = _run(range(0, 60))
    fails = [r for r in results if r["status"] != "ok"]
    assert fails, "a broken tanh reference went unnoticed"
    assert all(r["kind"] == "value" and r["op"] == "tanh" for r in fails), _describe(fails)


def test_detects_a_wrong_gradient(monkeypatch):
    """vk.exp / Tensor.exp with a doubled gradient is reported by the gradient check."""
    monkeypatch.setenv("DIFF_FUZZ_BREAK", "grad:exp")
    results = _run(range(0, 60))
    fails = [r for r in results if r["status"] != "ok"]
    assert fails, "a wrong exp gradient went unnoticed"
    assert all(r["kind"] == "grad" for r in fails), _describe(fails)


def test_reports_a_crash_with_its_seed(monkeypatch):
    """A worker killed by a crash (here vk.exp aborts) is reported with the seed it was running,
    and the remaining seeds run in a fresh worker."""
    monkeypatch.setenv("DIFF_FUZZ_BREAK", "crash:exp")
    results = _run(range(0, 60))
    crashes = [r for r in results if r["status"] != "ok"]
    assert crashes and all(r["kind"] == "crash" for r in crashes), _describe(crashes)
    assert len({r["seed"] for r in results}) == 60


def test_minimizer_shrinks_and_prints_a_test(monkeypatch):
    build = diff_fuzz.OPS["tanh"]["f"]
    monkeypatch.setitem(diff_fuzz.OPS["tanh"], "f", build)  # restored after the test
    monkeypatch.setenv("DIFF_FUZZ_BREAK", "ref:tanh")  # for the minimiser's first, subprocess run
    diff_fuzz.apply_break("ref:tanh")
    seed = next(s for s in range(200)
                if diff_fuzz.run_program(diff_fuzz.generate(s))["status"] != "ok")
    prog = diff_fuzz.generate(seed)
    small, sig = diff_fuzz.minimize(prog, log=lambda *a: None)
    assert sig == ("value", "tanh")
    assert len(small["ops"]) <= len(prog["ops"]) and len(small["ops"]) <= 2
    assert all(int(np.prod(l["shape"])) <= 4 for l in small["leaves"])
    src = diff_fuzz.regression_test(small, sig, name="test_generated")
    ns = {"np": np, "vk": vk, "pytest": pytest, "subprocess": subprocess, "sys": sys}
    exec(compile(src, "<generated>", "exec"), ns)
    # the printed test reproduces the (deliberate) mismatch: it fails
    with pytest.raises(AssertionError):
        ns["test_generated"]()


# ---------------------------------------------------------------------------------------------
# the program kinds of diff_fuzz_ext: inplace, hooks, second, sizes


def _run_kind(kind, seeds):
    results = list(diff_fuzz.run_batch(seeds, kinds=[kind]))
    assert len(results) == len(seeds), "the worker lost programs"
    return results


def _describe_kind(kind, fails):
    return "\n".join(
        f"seed {r['seed']}: {r.get('kind')} at {r.get('op')}: {r.get('msg', '')[:500]}\n"
        f"  reproduce: python fuzz/diff_fuzz.py --kinds {kind} --minimize {r['seed']}"
        for r in fails)


def _fixed(kind, seeds):
    results = _run_kind(kind, seeds)
    fails = [r for r in results if r["status"] != "ok"]
    assert not fails, f"{len(fails)} of {len(results)} {kind} programs failed:\n" + _describe_kind(kind, fails)
    verdicts = {}
    for r in results:
        verdicts[r["grad"]] = verdicts.get(r["grad"], 0) + 1
    return results, verdicts


def test_fixed_seeds_inplace():
    results, verdicts = _fixed("inplace", range(0, 300))
    # values checked after every step; version programs: the finite-difference gradient, or the
    # version counter's error
    assert verdicts.get("values", 0) >= 150 and verdicts.get("ok", 0) >= 40, verdicts
    assert verdicts.get("raised", 0) >= 10, verdicts
    ops = set().union(*(r["ops"] for r in results))
    wanted = {"add_", "sub_", "mul_", "div_", "clamp_", "fill_", "zero_", "copy_", "setitem", "setitem+=",
              "+=", "-=", "*=", "/=", "index", "narrow", "select", "split", "unbind", "transpose", "permute",
              "t", "mT", "unsqueeze", "expand", "detach", "view", "clone", "exp", "sin"}
    assert wanted <= ops, sorted(wanted - ops)


def test_fixed_seeds_hooks():
    seeds = range(0, 70)
    results, verdicts = _fixed("hooks", seeds)
    assert verdicts.get("ok", 0) >= 40 and verdicts.get("raised", 0) >= 2, verdicts
    kinds = {h["kind"] for s in seeds for h in diff_fuzz.generate(s, kinds=["hooks"])["hooks"]}
    assert kinds == {"observe", "scale", "removed", "nested", "bad-shape"}, kinds


def test_fixed_seeds_second():
    results, verdicts = _fixed("second", range(0, 70))
    assert verdicts.get("ok", 0) >= 50, verdicts


def test_fixed_seeds_sizes():
    results, verdicts = _fixed("sizes", range(0, 300))
    ops = set().union(*(r["ops"] for r in results))
    assert ops == {"creation", "arange", "linspace_eye", "reshape", "expand", "repeat", "pad", "narrow",
                   "split", "window", "slice", "index", "dim"}, ops


def _broken(monkeypatch, spec, kind, seeds):
    monkeypatch.setenv("DIFF_FUZZ_BREAK", spec)
    fails = [r for r in _run_kind(kind, seeds) if r["status"] != "ok"]
    assert fails, f"{spec} went unnoticed"
    return fails


def test_detects_a_wrong_inplace_reference(monkeypatch):
    """The numpy side of add_/sub_/mul_/div_/x += y writing one more is a value mismatch."""
    fails = _broken(monkeypatch, "ref:inplace", "inplace", range(0, 40))
    assert all(r["kind"] == "value" for r in fails), _describe_kind("inplace", fails)


def test_detects_a_wrong_hook_scale(monkeypatch):
    """Expecting a scale hook to scale by 1.25 c instead of c is a gradient mismatch."""
    fails = _broken(monkeypatch, "scale:hooks", "hooks", range(0, 30))
    assert all(r["kind"] == "grad" for r in fails), _describe_kind("hooks", fails)


def test_detects_a_wrong_second_derivative(monkeypatch):
    """Second differences 1% too big are a mismatch of the Hessian-vector product."""
    fails = _broken(monkeypatch, "ref:second", "second", range(0, 25))
    assert all(r["kind"] == "grad2" for r in fails), _describe_kind("second", fails)


def test_detects_a_size_check_that_does_not_raise(monkeypatch):
    """Tensor.expand returning an empty tensor instead of raising is reported at expand."""
    fails = _broken(monkeypatch, "noraise:expand", "sizes", range(0, 40))
    assert all(r["kind"] in ("no-exception", "shape", "value") and r["op"] == "expand" for r in fails), \
        _describe_kind("sizes", fails)


# ---------------------------------------------------------------------------------------------
# regression tests for bugs the fuzzer found (minimised reproducers)


# Fixed: index -1 (a window entirely in the padding) sends no gradient, first and second order.
def test_fuzz_seed1005284_max_pool2d_window_in_padding_backward():
    """Minimised from `python fuzz/diff_fuzz.py --minimize 1005284` (values made finite)."""
    x0 = vk.tensor(np.array([1.0, 2.0, 3.0], dtype=np.float32).reshape((1, 1, 1, 3)), requires_grad=True)
    # rows -1 and 1 of a 1-row input: every window is padding
    v0 = vk.nn.functional.max_pool2d(x0, 2, stride=(2, 2), padding=1, dilation=2)
    assert v0.shape == (1, 1, 1, 2)
    assert np.all(v0.detach().numpy() == -np.inf)
    v0.backward(vk.ones_like(v0))
    np.testing.assert_array_equal(x0.grad.numpy(), np.zeros((1, 1, 1, 3), dtype=np.float32))


def test_max_pool2d_window_in_padding_second_order():
    # The rule of max_pool2d_backward reads the upstream gradient back at each window's index:
    # nothing (0) for a window entirely in the padding.
    x = vk.tensor(np.array([1.0, 2.0, 3.0]).reshape(1, 1, 1, 3), requires_grad=True)
    y = vk.nn.functional.max_pool2d(x, 2, stride=2, padding=1, dilation=2)
    g = vk.ones_like(y).requires_grad_()
    (dx,) = vk.autograd.grad(y, x, g, create_graph=True)
    (dg,) = vk.autograd.grad((dx * vk.tensor([[[[5.0, 6.0, 7.0]]]])).sum(), g, allow_unused=True)
    np.testing.assert_array_equal(dg.numpy(), np.zeros((1, 1, 1, 2)))


def test_integer_add_with_fractional_alpha_raises():
    with pytest.raises(RuntimeError, match="alpha"):
        vk.add(vk.tensor([1, 2]), vk.tensor([3, 4]), alpha=0.5)
    assert vk.add(vk.tensor([1, 2]), vk.tensor([3, 4]), alpha=2).tolist() == [7, 10]


# Fixed: other * alpha is computed in the dtype of x + other.
def test_fuzz_seed3032312_add_alpha_changes_dtype():
    """Minimised from `python fuzz/diff_fuzz.py --minimize 3032312`."""
    x0 = vk.tensor(np.array([-2], dtype=np.int64))
    x1 = vk.tensor(np.array(1.3, dtype=np.float64))
    assert vk.add(x1, x0).dtype == vk.float64
    v0 = vk.add(x1, x0, alpha=1.5)  # numpy: x1 + 1.5 * x0
    assert tuple(v0.shape) == (1,)
    assert v0.dtype == vk.float64
    np.testing.assert_allclose(v0.detach().numpy(), np.array([-1.7]), rtol=1e-12, atol=1e-12)


# Fixed: a rule that reads its node's own output (exp: g * out; vkml's div, tanh, sigmoid ...)
# used whatever an in-place write under no_grad() (or through a detached alias) had put there.
# Found by the inplace programs (version counter).
def test_backward_after_output_written_in_place_raises():
    x = vk.tensor([0.5, 1.0], dtype=vk.float64, requires_grad=True)
    y = x.exp()
    with vk.no_grad():
        y.mul_(2)  # gave x.grad = 2 * exp(x) silently
    with pytest.raises(RuntimeError, match="output .* of exp is at version 1; expected version 0"):
        y.sum().backward()
    y = x.tanh()
    y.detach().zero_()  # the same memory, through an alias that does not require grad
    with pytest.raises(RuntimeError, match="tanh"):
        vk.autograd.grad(y.sum(), x)
    # a rule that does not read what was overwritten still gives its gradient, as torch's:
    # div's reads a and b, not its output
    w = vk.tensor([2.0, 4.0], dtype=vk.float64, requires_grad=True)
    y = x / w
    with vk.no_grad():
        y[0] = 7.0
    y.sum().backward()
    assert x.grad.tolist() == [0.5, 0.25] and w.grad.tolist() == [-0.125, -0.0625]
    y = x / w
    with vk.no_grad():
        w.mul_(2)  # ... and refuses once what it reads is overwritten
    with pytest.raises(RuntimeError, match="input 1 .* of div is at version 1"):
        y.sum().backward()
    # untouched outputs are differentiated as before
    x.grad = None
    x.sigmoid().sum().backward()
    s = 1 / (1 + np.exp(-np.array([0.5, 1.0])))
    np.testing.assert_allclose(x.grad.numpy(), s * (1 - s), rtol=1e-12)


# Fixed: element-wise in-place writes into an expanded view (elements sharing memory) wrote
# whichever result came last; as torch they raise, while one value (fill_, zero_) and regions
# without shared elements are still written. Found by the inplace programs.
def test_inplace_write_into_expanded_view_raises():
    base = vk.zeros(1, 3)
    e = base.expand(2, 3)
    writes = [lambda: e.add_(vk.tensor([[1.0], [2.0]])), lambda: e.mul_(2.0), lambda: e.copy_(vk.ones(2, 3)),
              lambda: e.clamp_(0.0, 1.0), lambda: e.__setitem__((slice(None), 0), 5.0)]
    for write in writes:
        with pytest.raises(RuntimeError, match="single memory location"):
            write()
        assert base.tolist() == [[0.0, 0.0, 0.0]]
    e.fill_(2.0)
    assert base.tolist() == [[2.0, 2.0, 2.0]]
    e[1] = vk.tensor([1.0, 2.0, 3.0])  # one row: no element of it shares memory
    assert e.tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    e.zero_()
    assert base.tolist() == [[0.0, 0.0, 0.0]]


# Fixed: max_pool2d / avg_pool2d (and col2im, in avg_pool2d's backward) walked every kernel
# tap, also the billions in the padding: a kernel of 2**32 (padding 2**31 - 1 to match) never
# returned, nor the backward of 2**16. Found by the sizes programs.
def test_pooling_kernel_of_2_32_returns():
    code = ("import json, vkml as vk\n"
            "x = vk.arange(16, dtype=vk.float32).reshape(1, 1, 4, 4).requires_grad_()\n"
            "a = vk.nn.functional.avg_pool2d(x, 2**32, stride=2, padding=2**31 - 1)\n"
            "m = vk.nn.functional.max_pool2d(x, 2**32, stride=2, padding=2**31 - 1)\n"
            "vk.nn.functional.avg_pool2d(x, 2**16, stride=2, padding=2**15 - 1).sum().backward()\n"
            "print(json.dumps([a.tolist(), m.tolist(), x.grad.tolist()]))\n")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=diff_fuzz.python_env())
    assert p.returncode == 0, p.stderr[-2000:]
    assert time.perf_counter() - t0 < 120
    # every window covers the whole plane (sum 120), the divisor is the kernel's 2**64 positions
    a, m, g = json.loads(p.stdout)
    # each input lies in all four windows of 2**32 positions
    np.testing.assert_allclose(np.array(g), np.full((1, 1, 4, 4), 4 / 2 ** 32), rtol=1e-6)
    np.testing.assert_allclose(np.array(a), np.full((1, 1, 2, 2), 120 / 2 ** 64), rtol=1e-6)
    assert np.array(m).tolist() == np.full((1, 1, 2, 2), 15.0).tolist()


def test_pooling_kernel_larger_than_plane_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4)).astype(np.float32)
    for k, s, p, d in [(7, 1, 3, 1), (5, 2, 2, 1), (3, 3, 1, 2), (9, 1, 4, 1)]:
        got = vk.nn.functional.avg_pool2d(vk.tensor(x), k, stride=s, padding=p)
        want = torch.nn.functional.avg_pool2d(torch.tensor(x), k, stride=s, padding=p)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
        got = vk.nn.functional.max_pool2d(vk.tensor(x), k, stride=s, padding=p, dilation=d)
        want = torch.nn.functional.max_pool2d(torch.tensor(x), k, stride=s, padding=p, dilation=d)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---- hostwait: seeds 5000-5599 ----


# Fixed: square of a bool tensor is torch's pow(x, 2), an int64 tensor (vkml gave x * x, the bools'
# and; the fuzzer expected a DTypeError torch does not raise).
def test_fuzz_seed5336_square_of_bool_is_int64():
    torch = pytest.importorskip("torch")
    x = vk.tensor([True, False, True])
    for got in (x.square(), vk.square(x)):
        want = torch.tensor([True, False, True]).square()
        assert got.dtype == vk.int64 and str(want.dtype) == "torch.int64"
        assert got.tolist() == want.tolist() == [1, 0, 1]
