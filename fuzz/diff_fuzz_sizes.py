"""The "sizes" programs of the differential fuzzer (see diff_fuzz_ext.py): size, dim and index
arguments near and beyond int64, against Python integer arithmetic."""

import resource
import time
import warnings

import numpy as np

from diff_fuzz import Failure, Invalid, need
from diff_fuzz_ext import compile_src, exc_types, vkml

I64 = 2 ** 63 - 1

# ---------------------------------------------------------------------------------------------
# sizes
#
# A case: src (an expression over the fixture tensors of SIZE_NS), expect: ("shape", shape) a
# valid result of exactly that shape (a tuple, or a list of shapes for split/chunk); ("error",
# names) one of these typed errors; ("either", shape, names) torch refuses but the result is
# well defined (a zero-size shape whose strides overflow, a window size past int32); check: an
# expression over `r` (the result) that must be True (a value read back).

SIZE_NS_SRC = ("x = vk.arange(6, dtype=vk.float32).reshape(2, 3); e0 = vk.zeros(0, 3); one = vk.ones(1); "
               "col = vk.arange(2, dtype=vk.float32).reshape(2, 1); img = vk.arange(16, dtype=vk.float32)"
               ".reshape(1, 1, 4, 4); w = vk.ones(1, 1, 2, 2); gimg = img.clone().requires_grad_()")
HUGE = [2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 40, 2 ** 62, I64]
NEG = [-1, -2, -(2 ** 31), -(2 ** 63)]
OVER = [2 ** 63, 2 ** 64, -(2 ** 63) - 1]
SMALL_OK = 1 << 26   # bytes a valid result may take (64 MiB)
TOO_BIG = 1 << 42    # bytes at or past which an allocation must fail (4 TiB: also under ASan)
SIZE_ERRS = "ShapeError|RuntimeError|ValueError|MemoryError|OverflowError|TypeError"
BIG_ERRS = "MemoryError|RuntimeError|ValueError"
INDEX_ERRS = "IndexError|RuntimeError"
OVER_ERRS = "OverflowError|TypeError|ValueError|IndexError|RuntimeError"


def _size(rng, p=(0.35, 0.3, 0.2, 0.15)):
    r = rng.choice(4, p=p)
    if r == 0:
        return int(rng.integers(0, 4))
    if r == 1:
        return int(rng.choice(HUGE))
    if r == 2:
        return int(rng.choice(NEG))
    return int(rng.choice(OVER))


def _prod(shape):
    p = 1
    for s in shape:
        p *= s
    return p


def _empty(shape):
    """A shape with no elements: valid, unless the other sizes multiply past int64 (torch
    refuses some of those, "Stride calculation overflowed"; vkml all of them)."""
    if _prod([s for s in shape if s]) > I64:
        return ("either", tuple(shape), SIZE_ERRS)
    return ("shape", tuple(shape))


def _alloc(shape, itemsize, bad=None):
    """The expectation for a new tensor of this shape."""
    if any(s > I64 or s < -(2 ** 63) for s in shape):
        return ("error", OVER_ERRS)
    if bad or any(s < 0 for s in shape):
        return ("error", SIZE_ERRS)
    n = _prod(shape)
    if n == 0:
        return _empty(shape)
    if n > I64:
        return ("error", SIZE_ERRS)
    if n * itemsize <= SMALL_OK:
        return ("shape", tuple(shape))
    if n * itemsize >= TOO_BIG:
        return ("error", BIG_ERRS + "|ShapeError")
    raise Invalid()  # valid but a real allocation of gigabytes: not run


def _c_creation(rng):
    fn = str(rng.choice(["zeros", "ones", "empty", "full", "randn", "rand", "randint"]))
    shape = [_size(rng) for _ in range(int(rng.integers(1, 4)))]
    t = tuple(shape)
    if fn == "full":
        return dict(src=f"vk.full({t!r}, 1.5)", expect=_alloc(shape, 4), check="bool((r == 1.5).all())")
    if fn == "randint":
        return dict(src=f"vk.randint(0, 5, {t!r})", expect=_alloc(shape, 8))
    args = ", ".join(map(str, shape)) if rng.random() < 0.5 else repr(t)
    chk = {"zeros": "bool((r == 0).all())", "ones": "bool((r == 1).all())"}.get(fn)
    return dict(src=f"vk.{fn}({args})", expect=_alloc(shape, 4), check=chk)


def _c_arange(rng):
    vals = [int(rng.integers(-5, 6)) if rng.random() < 0.5 else _size(rng, (0.2, 0.5, 0.3, 0.0)) for _ in range(3)]
    start, end, step = vals
    if rng.random() < 0.3:
        start, step = 0, 1
        src = f"vk.arange({end})"
    else:
        src = f"vk.arange({start}, {end}, {step})"
    if step == 0:
        return dict(src=src, expect=("error", SIZE_ERRS))
    if (end - start) * step < 0:
        # torch: "upper bound and lower bound inconsistent with step sign"; vkml (as numpy)
        # gives an empty tensor
        return dict(src=src, expect=("either", (0,), SIZE_ERRS))
    n = -((start - end) // step)
    need(n * 8 >= TOO_BIG or max(abs(start), abs(end), abs(step)) <= 2 ** 53)  # exactness: not here
    exp = _alloc([n], 8)
    chk = None
    if exp[0] == "shape" and n:
        chk = f"r[0].item() == {start} and r[-1].item() == {start + (n - 1) * step}"
    return dict(src=src, expect=exp, check=chk)


def _c_linspace_eye(rng):
    n, m = _size(rng), _size(rng)
    r = rng.random()
    if r < 0.4:
        return dict(src=f"vk.linspace(0, 1, {n})", expect=_alloc([n], 4))
    if r < 0.7:
        return dict(src=f"vk.eye({n})", expect=_alloc([n, n], 4))
    exp = _alloc([n, m], 4)
    if exp[0] == "shape" and max(n, m) > SMALL_OK:
        # vkml builds the diagonal with an arange of max(n, m) elements, which it refuses past
        # 2**62 or so: eye(2**63 - 1, 0) is a ShapeError (torch: an empty tensor)
        exp = ("either",) + exp[1:] + (SIZE_ERRS,)
    return dict(src=f"vk.eye({n}, {m})", expect=exp)


def _reshape_expect(shape, numel):
    if any(s > I64 or s < -(2 ** 63) for s in shape):
        return ("error", OVER_ERRS)
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        return ("error", SIZE_ERRS)
    known = _prod([s for s in shape if s != -1])
    if known > I64:
        return ("error", SIZE_ERRS)
    if -1 in shape:
        if known == 0 or numel % known:
            return ("error", SIZE_ERRS)
        shape = [numel // known if s == -1 else s for s in shape]
    elif known != numel:
        return ("error", SIZE_ERRS)
    return _empty(shape) if numel == 0 else ("shape", tuple(shape))


def _c_reshape(rng):
    base, numel = ("x", 6) if rng.random() < 0.8 else ("e0", 0)
    shape = [_size(rng) if rng.random() < 0.6 else int(rng.choice([-1, 6, 2, 3, 1])) for _ in range(int(rng.integers(1, 4)))]
    fn = str(rng.choice(["reshape", "view"]))
    return dict(src=f"{base}.{fn}({', '.join(map(str, shape))})", expect=_reshape_expect(shape, numel))


def _c_expand(rng):
    base, bshape = ("one", [1]) if rng.random() < 0.6 else ("col", [2, 1])
    k = int(rng.integers(len(bshape), len(bshape) + 3))
    sizes = [_size(rng) if rng.random() < 0.7 else int(rng.choice([-1, 1, 2])) for _ in range(k)]
    src = f"{base}.expand({', '.join(map(str, sizes))})"
    if any(s > I64 or s < -(2 ** 63) for s in sizes):
        return dict(src=src, expect=("error", OVER_ERRS))
    lead = k - len(bshape)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                return dict(src=src, expect=("error", SIZE_ERRS))
            out.append(s)
            continue
        b = bshape[i - lead]
        s = b if s == -1 else s
        if s < 0 or (s != b and b != 1):
            return dict(src=src, expect=("error", SIZE_ERRS))
        out.append(s)
    if _prod(out) > I64:
        return dict(src=src, expect=("error", SIZE_ERRS))
    if 0 in out:
        return dict(src=src, expect=_empty(out))
    # a view: numel exact, and the last element (strides of 0) read back
    chk = f"r.numel() == {_prod(out)}"
    if _prod(out):
        last = bshape[-1] - 1 if base == "col" else 0
        val = 1.0 if base == "one" else float(last if bshape[0] == 1 else 1)
        chk += f" and r[{', '.join(str(s - 1) for s in out)}].item() == {val!r}"
    return dict(src=src, expect=("shape", tuple(out)), check=chk)


def _c_repeat(rng):
    reps = [_size(rng) if rng.random() < 0.6 else int(rng.integers(1, 3)) for _ in range(int(rng.integers(2, 4)))]
    src = f"x.repeat({', '.join(map(str, reps))})"
    if any(s > I64 or s < -(2 ** 63) for s in reps):
        return dict(src=src, expect=("error", OVER_ERRS))
    shape = [1] * (len(reps) - 2) + [2, 3]
    out = [a * b for a, b in zip(shape, reps)]
    return dict(src=src, expect=_alloc(out, 4, bad=any(r < 0 for r in reps)))


def _c_pad(rng):
    k = int(rng.choice([2, 4]))
    pads = [_size(rng) if rng.random() < 0.5 else int(rng.integers(-3, 3)) for _ in range(k)]
    src = f"vk.nn.functional.pad(x, {tuple(pads)!r})"
    if any(s > I64 or s < -(2 ** 63) for s in pads):
        return dict(src=src, expect=("error", OVER_ERRS))
    out = [2, 3]
    for i in range(k // 2):
        out[1 - i] = out[1 - i] + pads[2 * i] + pads[2 * i + 1]
    if any(o < 0 for o in out):
        return dict(src=src, expect=("error", SIZE_ERRS))
    exp = _alloc(out, 4)
    if exp[0] == "shape" and (0 in out or any(p < 0 for p in pads)):
        exp = ("either", exp[1], SIZE_ERRS)  # torch refuses some crops to 0 or with huge pads
    return dict(src=src, expect=exp)


def _c_narrow(rng):
    d = int(rng.choice([0, 1, -1, 2, -3])) if rng.random() < 0.3 else int(rng.integers(0, 2))
    start = _size(rng) if rng.random() < 0.5 else int(rng.integers(-3, 4))
    length = _size(rng) if rng.random() < 0.5 else int(rng.integers(0, 4))
    src = f"x.narrow({d}, {start}, {length})"
    if not all(-(2 ** 63) <= v <= I64 for v in (start, length)):
        return dict(src=src, expect=("error", OVER_ERRS))
    if not -2 <= d < 2:
        return dict(src=src, expect=("error", "IndexError"))
    n = (2, 3)[d]
    s = start + n if start < 0 else start
    if not (0 <= s <= n) or length < 0 or s + length > n:
        return dict(src=src, expect=("error", INDEX_ERRS + "|ValueError"))
    out = [2, 3]
    out[d] = length
    return dict(src=src, expect=("shape", tuple(out)), check=f"bool((r == x[{':, ' * (d % 2)}{s}:{s + length}]).all())")


def _c_split(rng):
    d = int(rng.integers(0, 2))
    n = (2, 3)[d]
    k = _size(rng) if rng.random() < 0.7 else int(rng.integers(1, 4))
    if rng.random() < 0.3:
        sizes = [_size(rng) if rng.random() < 0.5 else int(rng.integers(0, 3)) for _ in range(int(rng.integers(1, 3)))]
        src = f"x.split({sizes!r}, {d})"
        if any(s > I64 or s < -(2 ** 63) for s in sizes):
            return dict(src=src, expect=("error", OVER_ERRS))
        if any(s < 0 for s in sizes) or sum(sizes) != n:
            return dict(src=src, expect=("error", SIZE_ERRS))
        return dict(src=src, expect=("shape", [tuple(s if i == d else (2, 3)[i] for i in range(2)) for s in sizes]))
    fn = str(rng.choice(["split", "chunk"]))
    src = f"x.{fn}({k}, {d})"
    if k > I64 or k < -(2 ** 63):
        return dict(src=src, expect=("error", OVER_ERRS))
    if k <= 0:
        return dict(src=src, expect=("error", SIZE_ERRS))
    size = k if fn == "split" else -(-n // k)
    pieces = [min(size, n - i) for i in range(0, n, size)]
    return dict(src=src, expect=("shape", [tuple(p if i == d else (2, 3)[i] for i in range(2)) for p in pieces]))


def _window_out(n, k, s, p, d):
    return (n + 2 * p - (d * (k - 1) + 1)) // s + 1


def _c_window(rng):
    fn = str(rng.choice(["conv2d", "max_pool2d", "avg_pool2d", "unfold"]))
    par = dict(k=2, s=1 if fn in ("conv2d", "unfold") else 2, p=0, d=1)
    for key in rng.choice(list(par), size=int(rng.integers(1, 3)), replace=False):
        par[str(key)] = _size(rng, (0.3, 0.4, 0.3, 0.0)) if key != "k" or fn != "conv2d" else par["k"]
    k, s, p, d = par["k"], par["s"], par["p"], par["d"]
    F = "vk.nn.functional"
    if fn == "conv2d":
        src = f"{F}.conv2d(img, w, stride={s}, padding={p}, dilation={d})"
    elif fn == "unfold":
        src = f"{F}.unfold(img, {k}, dilation={d}, padding={p}, stride={s})"
    elif fn == "max_pool2d":
        src = f"{F}.max_pool2d(gimg, {k}, stride={s}, padding={p}, dilation={d})"
    else:
        need(d == 1)
        src = f"{F}.avg_pool2d(gimg, {k}, stride={s}, padding={p})"
    if k <= 0 or s <= 0 or d <= 0 or p < 0 or (fn.endswith("pool2d") and p > k // 2):
        return dict(src=src, expect=("error", SIZE_ERRS))
    try:
        o = _window_out(4, k, s, p, d)
    except OverflowError:
        raise Invalid()
    if o < 1:
        return dict(src=src, expect=("error", SIZE_ERRS))
    shape = (1, k * k, o * o) if fn == "unfold" else (1, 1, o, o)
    exp = _alloc(list(shape), 4 * (k * k if fn == "unfold" else 1))
    if exp[0] == "shape" and max(k, s, p, d) > 2 ** 31 - 1:
        exp = ("either", exp[1], SIZE_ERRS)  # torch: "value cannot be converted to type int"
    if not fn.endswith("pool2d") or exp[0] == "error":
        return dict(src=src, expect=exp)
    # and backward, which walks the windows again: sum(d out / d x) counted with integers (each
    # window's taps that reach the plane; a window entirely in the padding sends nothing)
    taps = [_taps(i, 4, k, s, p, d) for i in range(o)]
    if fn == "avg_pool2d":
        total = sum(taps) ** 2 / (k * k)
    else:
        total = float(sum(t > 0 for t in taps) ** 2)
    chk = f"(r.sum().backward() or True) and abs(gimg.grad.sum().item() - {total!r}) <= 1e-5 * {max(1.0, total)!r}"
    # (past int32, where torch refuses, backward may refuse too: avg_pool2d's rule spreads the
    # gradient over k * k taps, which must count in int64)
    return dict(src=src, expect=exp, check=chk, check_err=SIZE_ERRS if exp[0] == "either" else None)


def _taps(o, n, k, s, p, d):
    """How many taps of output o's window lie on an input of n positions."""
    lo = max(0, -((o * s - p) // d))
    top = n - 1 + p - o * s
    hi = min(k, top // d + 1) if top >= 0 else 0
    return max(0, hi - lo)


def _c_slice(rng):
    vals = [None if rng.random() < 0.3 else (_size(rng) if rng.random() < 0.6 else int(rng.integers(-3, 4)))
            for _ in range(3)]
    a, b, c = vals
    d = int(rng.integers(0, 2))
    txt = f"{'' if a is None else a}:{'' if b is None else b}" + ("" if c is None else f":{c}")
    src = f"x[{':, ' * d}{txt}]"
    over = any(v is not None and not -(2 ** 63) <= v <= I64 for v in vals)
    if c is not None and c <= 0:
        return dict(src=src, expect=("error", "ValueError|ShapeError" + ("|" + OVER_ERRS) * over))
    n = (2, 3)[d]
    ln = len(range(*slice(a, b, c).indices(n)))
    out = [2, 3]
    out[d] = ln
    exp = ("shape", tuple(out))
    if over:
        exp = ("either", tuple(out), OVER_ERRS)  # torch clamps them, with a warning
    ref = np.arange(6, dtype=np.float32).reshape(2, 3)[(slice(None),) * d + (slice(a, b, c),)]
    return dict(src=src, expect=exp, check=f"r.tolist() == {ref.tolist()!r}")


def _c_index(rng):
    i = _size(rng) if rng.random() < 0.7 else int(rng.integers(-3, 4))
    form = int(rng.integers(0, 6))
    over = not -(2 ** 63) <= i <= I64
    if form == 0:
        src, n, shape = f"x[{i}]", 2, (3,)
    elif form == 1:
        src, n, shape = f"x[:, {i}]", 3, (2,)
    elif form == 2:
        src, n, shape = f"x[[{i}, 0]]", 2, (2, 3)
    elif form == 3:
        need(not over)
        src, n, shape = f"x[vk.tensor([{i}])]", 2, (1, 3)
    elif form == 4:
        need(not over)
        src, n, shape = f"x.index_select(1, vk.tensor([0, {i}]))", 3, (2, 2)
        if not 0 <= i < 3:  # index_select takes no negative indices
            return dict(src=src, expect=("error", INDEX_ERRS))
        return dict(src=src, expect=("shape", shape))
    else:
        src, n = f"x[{i}] = 7.0", 2
        if over:
            return dict(src=src, stmt=True, expect=("error", OVER_ERRS))
        if not -n <= i < n:
            return dict(src=src, stmt=True, expect=("error", "IndexError"))
        return dict(src=src, stmt=True, expect=("shape", None), check=f"x[{i}].tolist() == [7.0, 7.0, 7.0]")
    if over:
        return dict(src=src, expect=("error", OVER_ERRS))
    if not -n <= i < n:
        return dict(src=src, expect=("error", "IndexError"))
    return dict(src=src, expect=("shape", shape))


def _c_dim(rng):
    d = _size(rng, (0.4, 0.3, 0.3, 0.0)) if rng.random() < 0.7 else int(rng.integers(-4, 4))
    fn = str(rng.choice(["sum", "unsqueeze", "transpose", "flip", "softmax", "select", "cat", "squeeze"]))
    nd = 3 if fn == "unsqueeze" else 2
    src = {"sum": f"x.sum({d})", "unsqueeze": f"x.unsqueeze({d})", "transpose": f"x.transpose(0, {d})",
           "flip": f"x.flip({d})", "softmax": f"x.softmax({d})", "select": f"x.select({d}, 0)",
           "cat": f"vk.cat([x, x], {d})", "squeeze": f"x.squeeze({d})"}[fn]
    if not -nd <= d < nd:
        return dict(src=src, expect=("error", "IndexError"))
    dd = d % nd
    shape = {"sum": lambda: tuple(s for i, s in enumerate((2, 3)) if i != dd),
             "unsqueeze": lambda: tuple((2, 3)[:dd]) + (1,) + tuple((2, 3)[dd:]),
             "transpose": lambda: (2, 3) if dd == 0 else (3, 2), "flip": lambda: (2, 3),
             "softmax": lambda: (2, 3), "select": lambda: ((3,), (2,))[dd],
             "cat": lambda: ((4, 3), (2, 6))[dd], "squeeze": lambda: (2, 3)}[fn]()
    return dict(src=src, expect=("shape", shape))


CASES = [(_c_creation, 3), (_c_arange, 1), (_c_linspace_eye, 1), (_c_reshape, 2), (_c_expand, 3),
         (_c_repeat, 1), (_c_pad, 1), (_c_narrow, 1), (_c_split, 1), (_c_window, 2), (_c_slice, 1),
         (_c_index, 2), (_c_dim, 1)]


def gen_sizes(seed):
    rng = np.random.default_rng([seed, 0x512E])
    fns = [f for f, _ in CASES]
    p = np.array([w for _, w in CASES], dtype=np.float64)
    cases = []
    while len(cases) < 12:
        f = fns[int(rng.choice(len(fns), p=p / p.sum()))]
        try:
            case = f(np.random.default_rng([seed, len(cases), int(rng.integers(0, 2 ** 31))]))
        except Invalid:
            continue
        case["op"] = f.__name__[3:]
        cases.append(case)
    return dict(seed=seed, program="sizes", mode="sizes", cases=cases)


def want_shape(s):
    """An expected shape as run_sizes compares it (a spec read back from JSON has lists): a
    tuple, or a list of tuples for split/chunk."""
    if s and isinstance(s[0], (list, tuple)):
        return [tuple(x) for x in s]
    return tuple(s)


def _maxrss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_sizes(prog, slow=10.0, grow=1 << 30):
    vk = vkml()
    for case in prog["cases"]:
        ns = {"vk": vk, "np": np}
        exec(SIZE_NS_SRC, ns)
        src, exp, op = case["src"], case["expect"], case["op"]
        rss, t0 = _maxrss(), time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if case.get("stmt"):
                    exec(compile_src(src), ns)
                    r = None
                else:
                    r = eval(compile_src(src, "eval"), ns)
            raised = None
        except Exception as ex:  # noqa: BLE001
            raised = ex
        dt, grown = time.perf_counter() - t0, _maxrss() - rss
        if dt > slow:
            raise Failure("slow", op, f"`{src}` took {dt:.1f} s")
        if grown > grow:
            raise Failure("memory", op, f"`{src}` grew the peak memory by {grown >> 20} MiB")
        if raised is not None:
            if exp[0] == "shape":
                raise Failure("exception", op, f"`{src}` raised {type(raised).__name__}: {raised} "
                              f"(expected shape {exp[1]})")
            if not isinstance(raised, exc_types(exp[-1])):
                raise Failure("wrong-exception", op, f"`{src}` raised {type(raised).__name__}: {raised} "
                              f"(expected {exp[-1]})")
            continue
        if exp[0] == "error":
            got = getattr(r, "shape", None) if not isinstance(r, (list, tuple)) else [tuple(t.shape) for t in r]
            raise Failure("no-exception", op, f"`{src}` did not raise {exp[1]} (it gave shape {got})")
        if r is not None:
            got = [tuple(t.shape) for t in r] if isinstance(r, (list, tuple)) else tuple(r.shape)
            if got != want_shape(exp[1]):
                raise Failure("shape", op, f"`{src}` gave shape {got}, expected {want_shape(exp[1])}")
        if case.get("check"):
            ns["r"] = r
            t0 = time.perf_counter()
            try:
                ok = eval(compile_src(case["check"], "eval"), ns)
            except Exception as ex:  # noqa: BLE001
                if not (case.get("check_err") and isinstance(ex, exc_types(case["check_err"]))):
                    raise Failure("value", op, f"`{src}`: `{case['check']}` raised {type(ex).__name__}: {ex}")
                ok = True
            if time.perf_counter() - t0 > slow:
                raise Failure("slow", op, f"`{src}`: `{case['check']}` took {time.perf_counter() - t0:.1f} s")
            if not ok:
                raise Failure("value", op, f"`{src}`: `{case['check']}` is False")
    return "ok"
