"""vk.testing, as torch.testing: assert_close (tensors, numbers and nested containers of them,
torch's default tolerances per dtype and its failure messages) and make_tensor (random test
tensors in a range). Closeness is computed by vkml's isclose on the tensors' device."""

import math
import numbers

import vkml as _vk
from .utils import _pytree

__all__ = ["assert_close", "make_tensor"]

# torch.testing's defaults: (rtol, atol) by dtype
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7)}


def _tolerances(dtype, rtol, atol):
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    if rtol is not None:
        return rtol, atol
    return _TOLERANCES.get(str(dtype).split(".")[-1], (0.0, 0.0))


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, check_device):
    """None when close, else the message."""
    for attr, a, e in (("shape", tuple(actual.shape), tuple(expected.shape)),
                       ("device", actual.device, expected.device) if check_device else (None, 0, 0),
                       ("dtype", actual.dtype, expected.dtype) if check_dtype else (None, 0, 0)):
        if attr is not None and a != e:
            shown = (f"vkml.Size({list(a)}) != vkml.Size({list(e)})" if attr == "shape" else f"{a} != {e}")
            return f"The values for attribute '{attr}' do not match: {shown}."
    if actual.dtype != expected.dtype:
        common = _vk.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    if actual.device != expected.device:
        actual = actual.to(expected.device)
    rtol, atol = _tolerances(actual.dtype, rtol, atol)
    if actual.dtype == _vk.bool:
        close = actual == expected
    else:
        close = _vk.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(close.all()):
        return None
    total, bad = close.numel(), int((~close).sum())
    exact = rtol == 0 and atol == 0
    a, e = actual.to(_vk.float64), expected.to(_vk.float64)
    diff = (a - e).abs()
    rel = diff / e.abs()
    parts = [f"Tensor-likes are not {'equal' if exact else 'close'}!", "",
             f"Mismatched elements: {bad} / {total} ({100.0 * bad / total:.1f}%)"]
    for name, values, allowed in (("absolute", diff, atol), ("relative", rel, rtol)):
        masked = _vk.where(close, _vk.zeros_like(values), values)
        nan = _vk.isnan(masked)
        flat_at = int(nan.reshape(-1).to(_vk.int64).argmax()) if bool(nan.any()) else int(masked.reshape(-1).argmax())
        index = _vk.unravel_index(_vk.tensor(flat_at), tuple(actual.shape)) if actual.ndim else ()
        value = masked.reshape(-1)[flat_at].item() if actual.ndim else masked.item()
        shown = int(value) if actual.dtype not in (_vk.float16, _vk.bfloat16, _vk.float32, _vk.float64) \
            and name == "absolute" and math.isfinite(value) else value
        limit = "" if exact else f" (up to {allowed} allowed)"
        parts.append(f"Greatest {name} difference: {shown} at index {tuple(int(i) for i in index)}{limit}")
    return "\n".join(parts)


def _compare_scalars(actual, expected, rtol, atol, equal_nan):
    if rtol is None:
        rtol, atol = (1e-7, 1e-7) if isinstance(actual, float) or isinstance(expected, float) else (0.0, 0.0)
    if actual == expected or (equal_nan and actual != actual and expected != expected):
        return None
    diff = abs(actual - expected)
    if diff <= atol + rtol * abs(expected):
        return None
    rel = diff / abs(expected) if expected != 0 else math.inf
    return (f"Scalars are not close!\n\nExpected {expected} but got {actual}.\nAbsolute difference: {diff} (up to "
            f"{atol} allowed)\nRelative difference: {rel} (up to {rtol} allowed)")


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raises AssertionError unless actual and expected -- tensors, numbers, or the same nesting of
    sequences and mappings of them -- are close: |actual - expected| <= atol + rtol |expected|
    elementwise, with torch's default tolerances for the dtype (exact for integers and bool), and
    the same shape, dtype and device unless told not to check them."""
    actual_leaves, actual_spec = _pytree.tree_flatten(actual)
    expected_leaves, expected_spec = _pytree.tree_flatten(expected)
    if actual_spec != expected_spec:
        if actual_spec.is_leaf() or expected_spec.is_leaf():
            raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                            f"{type(expected)}.")
        raise AssertionError(f"The structures do not match: {actual_spec} != {expected_spec}.")
    paths = _paths(expected)
    for path, a, e in zip(paths, actual_leaves, expected_leaves):
        if a is None and e is None:
            continue
        if isinstance(a, _vk.Tensor) and isinstance(e, _vk.Tensor):
            problem = _compare_tensors(a, e, rtol, atol, equal_nan, check_dtype, check_device)
        elif isinstance(a, numbers.Number) and isinstance(e, numbers.Number):
            problem = _compare_scalars(a, e, rtol, atol, equal_nan)
        else:
            raise TypeError(f"No comparison pair was able to handle inputs of type {type(a)} and {type(e)}.")
        if problem is not None:
            if path:
                problem += f"\n\nThe failure occurred for item {path}"
            if msg is not None:
                problem = msg(problem) if callable(msg) else msg
            raise AssertionError(problem)


def _paths(tree):
    """Each leaf's access path, as torch prints it (['b'][0]), in flatten order."""
    out, stack = [], [(tree, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, f"{path}[{k!r}]") for k, v in reversed(list(node.items())))
        elif isinstance(node, (list, tuple)):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(node))))
        else:
            out.append(path)
    return out


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of shape with values drawn uniformly from [low, high) (torch's defaults per dtype:
    [-9, 9) for floats, -9 to 9 for signed integers, 0 to 9 for uint8, booleans at random)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if dtype == _vk.bool:
        t = _vk.rand(shape, device=device) < 0.5
    elif dtype.is_floating_point:
        lo, hi = -9.0 if low is None else float(low), 9.0 if high is None else float(high)
        t = (_vk.rand(shape, dtype=_vk.float64, device=device) * (hi - lo) + lo).to(dtype)
    else:
        lo = (0 if dtype == _vk.uint8 else -9) if low is None else int(math.ceil(low))
        hi = 10 if high is None else int(math.ceil(high))  # exclusive, as torch's
        t = _vk.randint(lo, max(hi, lo + 1), shape, dtype=dtype, device=device)
    if exclude_zero:
        replacement = 1 if not dtype.is_floating_point else _vk.finfo(dtype).tiny
        t = _vk.where(t == 0, _vk.full_like(t, replacement), t)
    if requires_grad:
        t.requires_grad_()
    return t
