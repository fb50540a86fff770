"""Type promotion and integer exactness (issue #12, items 12, 13 and the randint part of 17).

Promotion is PyTorch's, exactly (DESIGN.md "Type promotion"): categories bool < integer <
floating; dimensioned tensors > 0-d tensors > Python/numpy numbers, a lower level deciding only
when its category is higher; a number gives its category's default dtype (bool, int64,
float32) and its kind, never its value, counts. The table tests below run every pair of operands
through every binary operator (+ - * / // % ** & | ^ and comparisons) in both orders and compare
the result dtype, the values and the exceptions with torch 2.13 (the oracle).

Ints are exact: a Python int reaches an integer kernel as int64, never through a double, and a
value that does not fit the dtype it must become raises (as torch) instead of wrapping.
"""

import math
import operator

import numpy as np
import pytest
import torch

import vkml as vk

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
# Left operands hold a negative value and a zero/False (floor and sign rules); right operands
# never hold a zero or a negative (no division by zero, no negative integer powers), so every
# op is defined on them and values can be compared.
LEFT = {"bool": [True, False, True], "int": [3, -2, 0], "float": [2.5, -1.5, 0.0]}
RIGHT = {"bool": [True, True, True], "int": [2, 3, 1], "float": [0.5, 2.0, 1.5]}

OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge, "&": operator.and_, "|": operator.or_, "^": operator.xor,
}
FAMILIES = (RuntimeError, TypeError, ValueError, ArithmeticError)  # NotImplementedError is a RuntimeError


def _values(dtype, side):
    kind = "bool" if dtype == "bool" else "int" if dtype.startswith("int") else "float"
    return side[kind]


def _pair(dtype, zero_d, side):
    """The same tensor in vkml and torch: dimensioned (3 elements) or 0-d."""
    vals = _values(dtype, side)
    data = vals[0] if zero_d else vals
    return (vk.tensor(data, dtype=getattr(vk, dtype)),
            torch.tensor(data, dtype=getattr(torch, dtype)))


TENSORS = [(d, z) for d in DTYPES for z in (False, True)]
# Python and numpy numbers, as (label, value); both libraries get the very same object.
NUMBERS = [("True", True), ("2", 2), ("2.0", 2.0), ("2.5", 2.5),
           ("np.bool_", np.bool_(True)), ("np.int32", np.int32(2)), ("np.int64", np.int64(3)),
           ("np.float32", np.float32(2.5)), ("np.float64", np.float64(2.0))]


def _family(e):
    return next((f for f in FAMILIES if isinstance(e, f)), type(e))


def _run(fn, *args):
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return None, e


def _compare(label, v, t):
    """'' when vkml's outcome `v` matches torch's `t` (each (result, exception)), else why not."""
    (vr, ve), (tr, te) = v, t
    if te is not None or ve is not None:
        if te is None:
            return f"{label}: vkml raised {type(ve).__name__}: {ve}; torch gives {tr.dtype}"
        if ve is None:
            return f"{label}: torch raised {type(te).__name__}, vkml gives {vr.dtype}"
        if _family(ve) is not _family(te):
            return f"{label}: vkml raised {type(ve).__name__}, torch {type(te).__name__}"
        return ""
    if not isinstance(vr, vk.Tensor):
        return f"{label}: vkml returned {type(vr).__name__}"
    want = str(tr.dtype).replace("torch.", "")
    got = str(vr.dtype).replace("vkml.", "")
    if got != want:
        return f"{label}: dtype {got}, torch {want}"
    a, b = vr.numpy(), tr.numpy()
    if a.dtype.kind == "f":
        ok = np.allclose(a, b, rtol=1e-6, atol=0, equal_nan=True)
    else:
        ok = np.array_equal(a, b)
    return "" if ok else f"{label}: values {a.tolist()}, torch {b.tolist()}"


def _check_all(cases):
    bad = [m for m in cases if m]
    assert not bad, f"{len(bad)} mismatches with torch:\n" + "\n".join(bad[:40])


@pytest.mark.parametrize("op", list(OPS))
def test_tensor_tensor_promotion_matches_torch(op):
    f = OPS[op]
    cases = []
    for da, za in TENSORS:
        for db, zb in TENSORS:
            va, ta = _pair(da, za, LEFT)
            vb, tb = _pair(db, zb, RIGHT)
            label = f"{da}{'[]' if za else '[3]'} {op} {db}{'[]' if zb else '[3]'}"
            cases.append(_compare(label, _run(f, va, vb), _run(f, ta, tb)))
    _check_all(cases)


@pytest.mark.parametrize("op", list(OPS))
def test_tensor_number_promotion_matches_torch(op):
    """A Python or numpy number on either side: the kind decides, never the value."""
    f = OPS[op]
    cases = []
    for d, z in TENSORS:
        for name, num in NUMBERS:
            shape = "[]" if z else "[3]"
            va, ta = _pair(d, z, LEFT)
            cases.append(_compare(f"{d}{shape} {op} {name}", _run(f, va, num), _run(f, ta, num)))
            vb, tb = _pair(d, z, RIGHT)
            cases.append(_compare(f"{name} {op} {d}{shape}", _run(f, num, vb), _run(f, num, tb)))
    _check_all(cases)


FUNCTIONS = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow", "maximum",
             "minimum", "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor"]


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_function_forms_promote_as_torch(fn):
    """vk.add(x, 2.0), x.add(2), vk.maximum(x, y): the same rule as the operators."""
    cases = []
    for d, z in TENSORS:
        va, ta = _pair(d, z, LEFT)
        others = [(n, v, v) for n, v in NUMBERS if fn not in ("maximum", "minimum")]  # (torch: tensors only)
        others += [(f"{o}{'[]' if oz else '[3]'}", *_pair(o, oz, RIGHT)) for o, oz in TENSORS]
        for name, vo, to in others:
            label = f"{fn}({d}{'[]' if z else '[3]'}, {name})"
            cases.append(_compare(label, _run(getattr(vk, fn), va, vo), _run(getattr(torch, fn), ta, to)))
            cases.append(_compare("method " + label, _run(getattr(va, fn), vo), _run(getattr(ta, fn), to)))
    _check_all(cases)


def test_where_promotes_as_torch():
    cases = []
    for d, z in TENSORS:
        va, ta = _pair(d, z, LEFT)
        vc, tc = vk.tensor([True, False, True]), torch.tensor([True, False, True])
        for name, num in NUMBERS[:4]:
            label = f"where(c, {d}{'[]' if z else '[3]'}, {name})"
            cases.append(_compare(label, _run(vk.where, vc, va, num), _run(torch.where, tc, ta, num)))
            cases.append(_compare(label + " swapped", _run(vk.where, vc, num, va), _run(torch.where, tc, num, ta)))
        for o, oz in TENSORS:
            vb, tb = _pair(o, oz, RIGHT)
            label = f"where(c, {d}, {o}{'[]' if oz else '[3]'})"
            cases.append(_compare(label, _run(vk.where, vc, va, vb), _run(torch.where, tc, ta, tb)))
    for (na, a), (nb, b) in [(("1", 1), ("2.5", 2.5)), (("2", 2), ("3", 3)), (("True", True), ("False", False)),
                             (("True", True), ("2", 2)), (("2**53+1", 2**53 + 1), ("2", 2))]:
        c = [True, False]
        cases.append(_compare(f"where(c, {na}, {nb})", _run(vk.where, vk.tensor(c), a, b),
                              _run(torch.where, torch.tensor(c), a, b)))
    _check_all(cases)


def test_clamp_promotes_as_torch():
    cases = []
    for d in DTYPES:
        va, ta = _pair(d, False, LEFT)
        for lo, hi in [(1, None), (1.0, None), (None, 2.5), (0, 2), (-1, 2.0), (True, None), (None, float("inf"))]:
            label = f"clamp({d}, {lo}, {hi})"
            cases.append(_compare(label, _run(vk.clamp, va, lo, hi), _run(torch.clamp, ta, lo, hi)))
    _check_all(cases)


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/="])
def test_inplace_keeps_dtype_or_raises_as_torch(op):
    """x op= y keeps x's dtype; a result torch cannot cast into x (int += 1.5) is a RuntimeError."""
    f = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv}[op]
    cases = []
    for d in DTYPES:
        others = [(n, v, v) for n, v in NUMBERS] + [(o, *_pair(o, False, RIGHT)) for o in DTYPES]
        for name, vo, to in others:
            va, ta = _pair(d, False, LEFT)
            v, t = _run(f, va, vo), _run(f, ta, to)
            if v[1] is None and v[0] is not va:
                cases.append(f"{d} {op} {name}: not in place")
            cases.append(_compare(f"{d} {op} {name}", v, t))
    _check_all(cases)


@pytest.mark.parametrize("method", ["add_", "sub_", "mul_", "div_"])
def test_inplace_methods_match_torch(method):
    cases = []
    for d in DTYPES:
        for name, num in NUMBERS[:4]:
            va, ta = _pair(d, False, LEFT)
            cases.append(_compare(f"{d}.{method}({name})", _run(getattr(va, method), num),
                                  _run(getattr(ta, method), num)))
    _check_all(cases)


def test_result_dtype_never_depends_on_the_value():
    x = vk.tensor([1, 2, 3])
    for v in (2.0, 2.5, -0.0, float("inf"), float("nan"), 1e300):
        assert (x * v).dtype == vk.float32, v
        assert (v + x).dtype == vk.float32, v
    assert (vk.arange(3) * 2.0).dtype == (vk.arange(3) * 2.5).dtype == vk.float32
    assert (vk.tensor([1], dtype=vk.int32) * 3).dtype == vk.int32
    assert (vk.tensor([True]) + 2).dtype == vk.int64
    assert (vk.tensor([True]) + True).dtype == vk.bool
    assert (vk.ones(3) * 2.0).dtype == vk.float32
    assert (vk.ones(3) * np.float64(2.0)).dtype == vk.float32


def test_bool_arithmetic_as_torch():
    t, f = vk.tensor([True, False, True]), vk.tensor([True, True, False])
    assert (t + f).dtype == vk.bool and (t + f).tolist() == [True, True, True]  # or
    assert (t * f).dtype == vk.bool and (t * f).tolist() == [True, False, False]  # and
    assert (t * 2.0).tolist() == [2.0, 0.0, 2.0] and (t * 2.0).dtype == vk.float32
    with pytest.raises(RuntimeError, match="sub.*bool"):
        t - f
    for op in (operator.floordiv, operator.mod, operator.pow):
        with pytest.raises(NotImplementedError, match="bool"):
            op(t, f)


# ------------------------------------------------------------------------------------------
# integer exactness (issue #12, item 13)
# ------------------------------------------------------------------------------------------

BIG = 2**53 + 1  # the first int a double cannot hold
I64_MAX, I64_MIN = 2**63 - 1, -(2**63)


def test_int_operand_is_exact_add():
    assert (vk.tensor([0]) + BIG).tolist() == [BIG]
    assert (BIG + vk.tensor([0])).tolist() == [BIG]
    assert vk.add(vk.tensor([0]), BIG).tolist() == [BIG]


def test_int_operand_is_exact_eq():
    assert (vk.tensor([BIG]) == BIG).tolist() == [True]
    assert (vk.tensor([BIG]) == BIG - 1).tolist() == [False]
    assert vk.eq(vk.tensor([BIG]), BIG).tolist() == [True]


def test_arange_over_int64_bounds_is_exact():
    assert vk.arange(BIG, BIG + 2).tolist() == [BIG, BIG + 1]
    for args in [(I64_MAX - 3, I64_MAX), (I64_MIN, I64_MIN + 3), (0, 2**62, 2**61), (10, 0, -3),
                 (I64_MAX, I64_MAX - 7, -3), (0, 10, 3)]:
        assert vk.arange(*args).tolist() == torch.arange(*args).tolist(), args
    # the length is computed in integers: torch's own (0, 2**63 - 1, 2**62) overflows
    assert vk.arange(I64_MIN, I64_MAX, 2**62).tolist() == [I64_MIN, -(2**62), 0, 2**62]


@pytest.mark.parametrize("value", [I64_MAX, I64_MIN, I64_MAX - 1, I64_MIN + 1, BIG, -BIG])
def test_int64_extremes_round_trip(value):
    t = vk.tensor([value])
    assert t.dtype == vk.int64 and t.tolist() == [value] and t[0].item() == value
    assert vk.full((2,), value).tolist() == [value, value]
    assert vk.full((1,), vk.tensor(value)).tolist() == [value]
    assert vk.zeros(2, dtype=vk.int64).fill_(value).tolist() == [value, value]
    c = vk.tensor([True, False])
    assert vk.where(c, vk.tensor([0, 0]), value).tolist() == [0, value]
    assert vk.where(c, value, 0).tolist() == [value, 0]
    assert vk.tensor([1, 2]).masked_fill(c, value).tolist() == [value, 2]
    assert vk.clamp(vk.tensor([0]), min=value, max=value).tolist() == [value]
    z = vk.zeros(2, dtype=vk.int64)
    z[1] = value
    assert z.tolist() == [0, value]
    assert (vk.tensor([value]) == value).tolist() == [True]
    assert (vk.tensor([value]) - value).tolist() == [0]


@pytest.mark.parametrize("a,b", [(I64_MAX, 1), (I64_MIN, -1), (I64_MAX, I64_MAX), (I64_MIN, I64_MIN), (2**62, 4),
                                 (I64_MIN, I64_MAX), (-(2**62), 3)])
def test_int64_arithmetic_near_the_limits_wraps_as_torch(a, b):
    """int64 arithmetic wraps (two's complement) as torch's does, with no undefined behaviour."""
    for f in (operator.add, operator.sub, operator.mul):
        assert f(vk.tensor([a]), b).tolist() == f(torch.tensor([a]), b).tolist(), (f, a, b)
        assert f(vk.tensor([a]), vk.tensor([b])).tolist() == f(torch.tensor([a]), torch.tensor([b])).tolist()
    assert (-vk.tensor([a])).tolist() == (-torch.tensor([a])).tolist()
    assert vk.abs(vk.tensor([a])).tolist() == torch.abs(torch.tensor([a])).tolist()
    assert (vk.tensor([a]) // vk.tensor([-1])).tolist() == (torch.tensor([a]) // torch.tensor([-1])).tolist()


def test_int32_arithmetic_wraps_as_torch():
    a = vk.tensor([2**31 - 1, -(2**31)], dtype=vk.int32)
    ta = torch.tensor([2**31 - 1, -(2**31)], dtype=torch.int32)
    for f in (operator.add, operator.sub, operator.mul):
        assert f(a, a).tolist() == f(ta, ta).tolist()
        assert f(a, 2).tolist() == f(ta, 2).tolist()


def test_int_beyond_int64_raises():
    """torch reads [2**63, 2**64) as uint64 and wraps it into int64; vkml refuses (no silent
    wrong value), with torch's exception types where torch raises."""
    with pytest.raises(ValueError, match="Overflow"):
        vk.tensor([2**63])
    with pytest.raises(ValueError, match="Overflow"):
        vk.tensor([-(2**63) - 1])
    with pytest.raises(ValueError, match="Overflow"):
        vk.tensor([2**63, -1])  # numpy would read float64
    with pytest.raises(ValueError, match="Overflow"):
        vk.tensor([[1], [2**64]])
    with pytest.raises(RuntimeError, match="full.*int64"):
        vk.full((1,), 2**63)
    with pytest.raises(RuntimeError, match="add.*9223372036854775808.*int64"):
        vk.tensor([1]) + 2**63
    with pytest.raises(OverflowError, match="add"):
        vk.tensor([1.0]) + 2**64
    # floating dtypes hold them, as in torch
    assert vk.tensor([2**63], dtype=vk.float64).tolist() == [2.0**63]
    assert vk.tensor([2**70, 1.0]).tolist() == [2.0**70, 1.0]
    assert (vk.tensor([1.0], dtype=vk.float64) + 2**63).tolist() == [2.0**63 + 1]


def test_out_of_range_values_raise_as_torch():
    cases = [
        (lambda m: m.full((1,), 1e300, dtype=m.int64), RuntimeError),
        (lambda m: m.full((1,), 1e300, dtype=m.float32), RuntimeError),
        (lambda m: m.full((1,), float("nan"), dtype=m.int64), RuntimeError),
        (lambda m: m.full((1,), 2**40, dtype=m.int32), RuntimeError),
        (lambda m: m.tensor([1, 2], dtype=m.int32).masked_fill(m.tensor([True, False]), 2**40), RuntimeError),
        (lambda m: m.tensor([1.0]).masked_fill(m.tensor([True]), 1e300), RuntimeError),
        (lambda m: m.tensor([1, 2]).fill_(1e300), RuntimeError),
        (lambda m: m.tensor([1, 2]).fill_(float("nan")), RuntimeError),
        (lambda m: m.tensor([1], dtype=m.int32).fill_(2**40), RuntimeError),
        (lambda m: m.clamp(m.tensor([1], dtype=m.int32), min=2**40), RuntimeError),
        (lambda m: m.where(m.tensor([True]), m.tensor([1], dtype=m.int32), 2**40), RuntimeError),
        (lambda m: m.tensor([2**40], dtype=m.int32), RuntimeError),
        (lambda m: m.tensor([float("nan")], dtype=m.int64), RuntimeError),
        (lambda m: m.tensor([2**63]), ValueError),
        (lambda m: m.add(m.tensor([1], dtype=m.int32), 1, alpha=2**40), RuntimeError),
        (lambda m: m.randint(0, 2**64, (2,)), ValueError),
        (lambda m: m.randint(0.5, 3.7, (2,)), TypeError),
        (lambda m: m.randint(0, 2**63, (2,)), ValueError),
        (lambda m: m.randint(0, 2**40, (2,), dtype=m.int32), RuntimeError),
    ]
    for i, (fn, exc) in enumerate(cases):
        with pytest.raises(exc):
            fn(torch)  # the oracle agrees that it raises, and how
        with pytest.raises(exc):
            fn(vk)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # numpy, for 1e300 -> float32
def test_conversions_that_fit_match_torch():
    for fn in [lambda m: m.full((1,), 2.5, dtype=m.int64), lambda m: m.full((1,), float("inf")),
               lambda m: m.full((1,), float("nan"), dtype=m.bool), lambda m: m.full((1,), 0.5, dtype=m.bool),
               lambda m: m.full((1,), np.bool_(True)), lambda m: m.full((1,), np.int32(3)),
               lambda m: m.tensor([1, 2], dtype=m.int32).masked_fill(m.tensor([True, False]), 2.5),
               lambda m: m.tensor([1, 2]).fill_(2.5), lambda m: m.tensor([True]).fill_(2),
               lambda m: m.tensor([1.5, -1.5], dtype=m.int64), lambda m: m.tensor([1e300], dtype=m.float32),
               lambda m: m.arange(0.5, 3, dtype=m.int64), lambda m: m.arange(np.int64(3)),
               lambda m: m.arange(0, 1, 0.1), lambda m: m.arange(True)]:
        assert _compare("", _run(fn, vk), _run(fn, torch)) == ""


def test_int32_comparison_with_a_wide_int_is_exact():
    """torch wraps 2**40 into int32 (0 == 2**32 is True there); vkml compares exactly."""
    x = vk.tensor([0, 5, -5], dtype=vk.int32)
    assert (x == 2**32).tolist() == [False, False, False]
    assert (x < 2**40).tolist() == [True, True, True]
    assert (x > -(2**40)).tolist() == [True, True, True]
    assert vk.ne(x, 2**32).tolist() == [True, True, True]
    assert (2**32 in x) is False


def test_randint_full_int64_range():
    r = vk.randint(I64_MIN, I64_MAX, (1000,))
    assert r.dtype == vk.int64
    assert len(set(r.tolist())) > 990  # (the span is 2**64 - 1: no wrap to a tiny range)


def test_add_alpha_as_torch():
    for fn in [lambda m: m.add(m.tensor([1, 2]), 3, alpha=2**62), lambda m: m.sub(m.tensor([1, 2]), 1, alpha=2**62),
               lambda m: m.add(m.tensor([1.0, 2]), m.tensor([1, 2]), alpha=2),
               lambda m: m.add(m.tensor([1, 2]), 1.5, alpha=2),
               lambda m: m.add(m.tensor([True]), True, alpha=True),
               lambda m: m.add(m.tensor([True]), True, alpha=2),
               lambda m: m.add(m.tensor([1, 2]), m.tensor([1, 2]), alpha=1.0),
               lambda m: m.add(m.tensor([1, 2]), m.tensor([True]), alpha=True),
               lambda m: m.tensor([1, 2]).add_(m.tensor([3, 4]), alpha=2)]:
        assert _compare("", _run(fn, vk), _run(fn, torch)) == ""


def test_numpy_scalars_promote_as_torch():
    """np.float64 counts as a Python float (float32 result), np.int32 as a Python int, and
    np.bool_ as a float, as torch 2.13 reads it."""
    assert (vk.tensor([1, 2]) + np.float64(2.5)).dtype == vk.float32
    assert (vk.tensor([1, 2], dtype=vk.int32) + np.int64(2)).dtype == vk.int32
    assert (vk.tensor([1, 2]) + np.bool_(True)).dtype == vk.float32
    assert (np.float64(2.0) * vk.ones(2)).dtype == vk.float32
    assert (vk.tensor([0]) + np.uint64(2**53 + 1)).tolist() == [2**53 + 1]


def test_item_and_tolist_are_exact():
    assert vk.tensor(I64_MAX).item() == I64_MAX
    assert vk.tensor([[I64_MIN]]).tolist() == [[I64_MIN]]
    assert isinstance(vk.tensor(3).item(), int) and isinstance(vk.tensor(True).item(), bool)
    assert math.isnan(vk.tensor(float("nan")).item())


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", ["int32", "int64", "bool"])
def test_float_to_int_cast_out_of_range_matches_torch(src, dst):
    """NaN, +-inf and out-of-range floats cast to an integer dtype give torch's (x86) values,
    with no undefined behaviour in C++ (the ASan+UBSan job runs this)."""
    vals = [float("nan"), float("inf"), -float("inf"), 1e20, -1e20, 3.7, -3.7, 2.0**31, -(2.0**31) - 1, 0.0]
    v = vk.tensor(vals, dtype=getattr(vk, src)).to(getattr(vk, dst))
    t = torch.tensor(vals, dtype=getattr(torch, src)).to(getattr(torch, dst))
    assert v.tolist() == t.tolist()
