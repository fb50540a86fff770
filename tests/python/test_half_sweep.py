"""Every op of the table in float16 and bfloat16 (#19 item 2): the first case of each op's spec in
test_ops_vs_torch.py, its float inputs rounded to the 16-bit format in both libraries.

The oracle is the exact result: torch in float64 on the same (16-bit representable) inputs,
rounded to the format. A table op computes in float32 and rounds once, so it is within one ulp
of that; a case that composes several ops (a norm, a loss, einsum) rounds after each, so the
bound is scale-relative: |vkml - exact| <= 16 ulp(max |exact|), 16 = 2^4 roundings' worth (a
relative 2^-6 for float16, 2^-3 for bfloat16). An op vkml refuses in 16 bits (the solvers, as
torch's CPU) must be refused by torch too.

The same cases run again with every vkml tensor on the Vulkan device (#19 item 7: 16-bit storage,
every kernel computing in float32 as the CPU's), against the same oracle.
"""

import os

import numpy as np
import pytest
import torch
import zlib

import vkml as vk
from test_ops_vs_torch import OPS, SPECS, _outputs

pytestmark = pytest.mark.sweep  # as test_ops_vs_torch: left to test-asan under ASan

EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
# Ops whose cases take no float input or whose values are random (sampling): nothing to compare
# in 16 bits beyond what the case itself checks.
SKIP = {"rand", "randn", "randint", "randperm", "multinomial", "bernoulli", "normal", "poisson",
        "custom"}


def _params(device="cpu"):
    for op in OPS:
        if op in SKIP or not SPECS.get(op) or (device != "cpu" and op == "to_device"):
            continue
        for name in ("float16", "bfloat16"):
            suffix = "" if device == "cpu" else f"-{device}"
            yield pytest.param(op, name, id=f"{op}-{name}{suffix}")


def _inputs(m, arrays, dtype, specs=None):
    """The case's inputs in `dtype` (floats only); with `specs`, those that want a gradient
    require it (cases that differentiate inside, as torch's side of a fused backward)."""
    out = []
    for k, a in enumerate(arrays):
        t = m.tensor(a)
        t = t.to(dtype) if t.is_floating_point() else t
        if specs is not None and specs[k].grad and t.is_floating_point():
            t.requires_grad_()
        out.append(t)
    return out


@pytest.mark.parametrize("op,name", list(_params()))
def test_op_in_16_bits_matches_the_exact_result(op, name):
    _check_case(op, name)


@pytest.mark.parametrize("op,name", list(_params("vulkan")))
def test_op_in_16_bits_on_vulkan_matches_the_exact_result(op, name):
    if not vk.vulkan.is_available():
        if os.environ.get("VKML_REQUIRE_VULKAN") == "1":
            pytest.fail("VKML_REQUIRE_VULKAN=1 but the vulkan device is not available")
        pytest.skip("no vulkan device")
    if not vk._C._vulkan_features()["int16_storage"]:
        pytest.skip("the vulkan device has no 16-bit storage (test_half_precision checks the "
                    "DTypeError it gives)")
    vk.set_default_device("vulkan")
    try:
        _check_case(op, name, on="vulkan")
    finally:
        vk.set_default_device("cpu")


def _check_case(op, name, on="cpu"):
    case = SPECS[op][0]
    if case.check is not None:
        pytest.skip(f"{op}'s case compares through its own check (random or structural values)")
    rng = np.random.default_rng(zlib.crc32(f"{op}/0/{case.label}".encode()))
    arrays = [spec.make(rng, np.float64) for spec in case.inputs]
    vdt, tdt = getattr(vk, name), getattr(torch, name)
    fn = case.tfn or case.fn
    try:
        vout = _outputs(case.fn(vk, *_inputs(vk, arrays, vdt)))
    except vk.DTypeError as e:
        with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
            fn(torch, *_inputs(torch, arrays, tdt))
        assert op in str(e) or name in str(e), str(e)
        return
    exact_in = [t.double() if t.is_floating_point() else t for t in _inputs(torch, arrays, tdt)]
    exact_in = [t.requires_grad_() if spec.grad and t.is_floating_point() else t
                for t, spec in zip(exact_in, case.inputs)]
    exact = _outputs(fn(torch, *exact_in))
    try:  # the dtypes torch gives the case in 16 bits (a cast to float64 stays float64)
        dtypes = [getattr(t, "dtype", None) for t in
                  _outputs(fn(torch, *_inputs(torch, arrays, tdt, case.inputs)))]
    except (RuntimeError, TypeError, NotImplementedError):
        dtypes = [tdt if isinstance(e, torch.Tensor) and e.is_floating_point() else None
                  for e in exact]
    assert len(vout) == len(exact)
    for k, (v, e) in enumerate(zip(vout, exact)):
        if not isinstance(e, torch.Tensor):
            continue
        assert tuple(v.shape) == tuple(e.shape), f"output {k}"
        assert v.device.type == on, f"output {k} on {v.device}"
        got = torch.from_dlpack(v.detach().cpu().contiguous())
        if not e.is_floating_point():
            assert not got.is_floating_point(), f"output {k}: {v.dtype}"
            torch.testing.assert_close(got.to(e.dtype), e, rtol=0, atol=0)
            continue
        want_dtype = str(dtypes[k]).replace("torch.", "")
        assert v.dtype.name == want_dtype, f"output {k}: dtype {v.dtype}, expected {want_dtype}"
        want = e.to(dtypes[k]).double()
        scale = max(want.abs().max().item(), 1.0) if want.numel() else 1.0
        finite = torch.isfinite(want)
        diff = (got.double() - want).abs()
        assert (diff[finite] <= 16 * EPS[name] * scale).all(), \
            f"output {k}: max error {diff[finite].max().item()} at scale {scale}"
        assert torch.equal(torch.isnan(got), torch.isnan(want)) or not finite.all(), f"output {k}"
