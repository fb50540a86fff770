"""The program kinds of the differential fuzzer beyond straight-line op programs.

fuzz/diff_fuzz.py generates and checks op programs ("ops"); this module adds four kinds, chosen
with `--kinds` (diff_fuzz.KINDS), run in the same memory-limited worker subprocesses and reported
the same way (a Failure's kind and op). It holds what they share (dispatch, helpers, the
self-checks of --break, the minimiser's and --show's parts); each kind lives in its own module:
diff_fuzz_inplace.py, diff_fuzz_grad.py (hooks and second), diff_fuzz_sizes.py. Every
expectation comes from numpy, finite differences or integer shape arithmetic done there, never
from vkml itself:

  inplace  leaves (float32/float64/int64) and values made from them: views (basic slices,
           select/narrow/split/chunk/unbind, transpose/permute/t/mT, unsqueeze/squeeze,
           view/reshape of contiguous values, expand, detach) and fresh copies (clone,
           arithmetic, advanced indexing); then in-place writes on any of them: add_ (alpha),
           sub_, mul_, div_, clamp_, fill_, zero_, copy_, t[idx] = v and t[idx] += v (ints,
           slices, None, ..., int lists/arrays/tensors, bool masks, broadcast values),
           x += y / -= / *= / /=, with scalars, 0-d tensors and broadcast tensors (aliasing
           the target too), some under no_grad(). The numpy program does the same writes on
           numpy views, and after every step every value (dtype, shape, values) must equal
           numpy's: a write must show through every view of the same memory. Writes that torch
           refuses must raise their typed error and change nothing: a write into an expanded
           (self-overlapping) view, a float result into an integer tensor, a value that does
           not broadcast to the target, an index out of range, and (vkml's documented rule,
           ops/inplace.h) any in-place write into a tensor that requires grad, or of a value
           that requires grad, while grad mode is on (the operators, x += y, as the methods).
           "version" programs (mode "grad") record ops on float64 leaves that require grad and
           interleave writes (under no_grad into leaves and results, into constants and their
           views, into unrelated tensors); backward must then raise a RuntimeError naming a
           recorded op when a tensor torch saves for backward was overwritten after it was recorded (the
           version counter), may raise (naming such an op) when another input or output of a
           recorded op was overwritten (vkml's counter is per storage and checks every
           input), and otherwise must give the finite-difference gradient of the numpy program.
  hooks    a float64 "grad" op program with tensor hooks on random intermediates and leaves:
           hooks that observe (the gradient they see must be the finite-difference gradient of
           the loss with respect to that value, which for an intermediate means re-running the
           numpy program downstream of it with that value perturbed), one hook that scales by c
           (every leaf's gradient must be fd(loss) + (c-1) * fd(<g, node>), g the node's
           finite-difference gradient: the chain rule with the scale applied at that node),
           hooks removed before backward (never called, no effect), a hook that registers an
           observing hook on a value upstream of it (which must then run), and a hook that
           returns a wrong shape (backward raises RuntimeError). Each hook runs exactly once.
  second   a float64 "grad" op program (ops kept farther from kinks); g = autograd.grad(loss,
           leaves, create_graph=True) is checked against finite differences, then
           sum_i <g_i, v_i> is differentiated again and the result (the Hessian-vector product
           H v) is checked against mixed second central differences of the numpy loss:
           <H v, u> ~ (L(x+hv+hu) - L(x+hv-hu) - L(x-hv+hu) + L(x-hv-hu)) / 4h^2, elementwise
           (u the unit vectors) for small leaves, along random u otherwise.
  sizes    size, dim and index arguments near and beyond int64 (2**31, 2**32, 2**62, 2**63 - 1,
           -2**63, 2**64, negative sizes, -1 where it is not allowed) given to creation ops,
           reshape/view/expand/repeat/pad/narrow/split/chunk, conv2d/max_pool2d/avg_pool2d/
           unfold windows, slices, integer, list and tensor indices, and dims. The expected
           outcome is computed with Python integers: a valid result must have the exact shape
           (and numel: expand to (2**31, 2**31) is a valid view of 2**62 elements, and its last
           element is read back), and sometimes values (pooling: also backward, the sum of
           the input's gradient counted with integers); an invalid one, or one too big to
           allocate (at least 4 TiB, so it fails under the worker's memory limit and under
           ASan alike), must raise one of the typed errors listed for it, within a few seconds
           and without the process's peak memory growing by gigabytes. Where torch refuses
           what is well defined (an empty shape whose other sizes multiply past int64, a
           window past int32, arange with a step of the wrong sign) either is accepted.
"""

import json
import re
import warnings

import numpy as np

import diff_fuzz as D
from diff_fuzz import FLOATS, Failure

KINDS = ("inplace", "hooks", "second", "sizes")
BROKEN = set()  # the deliberately wrong references in force (apply_break)


def vkml():
    return D.vk


def exc_types(spec):
    """The exception classes of an expectation "IndexError|RuntimeError"."""
    vk = vkml()
    table = {"DTypeError": vk.DTypeError, "ShapeError": vk.ShapeError,
             "SizeError": getattr(vk, "SizeError", vk.ShapeError), "IndexError": IndexError,
             "RuntimeError": RuntimeError, "ValueError": ValueError, "TypeError": TypeError,
             "OverflowError": OverflowError, "MemoryError": MemoryError,
             "NotImplementedError": NotImplementedError}
    return tuple(table[n] for n in spec.split("|"))


def compile_src(src, mode="exec"):
    key = (mode, src)
    code = D._CODE_CACHE.get(key)
    if code is None:
        code = D._CODE_CACHE[key] = compile(src, "<vk>", mode)
    return code


def run_src(src, ns):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile_src(src), ns)


def np_of(t):
    return np.array(t.detach().numpy(), copy=True)


def close_msg(got, ref, dtype, scale):
    """None when got matches ref (float: a few ulps of the values involved), else a message."""
    if got.shape != ref.shape:
        return f"shape {got.shape} != {ref.shape}"
    if ref.size == 0:
        return None
    if dtype in FLOATS:
        g, r = got.astype(np.float64), ref.astype(np.float64)
        tol = 16 * D.EPS[dtype] * (np.abs(r) + scale)
        bad = ~(np.abs(g - r) <= tol) & ~(np.isnan(g) & np.isnan(r))
    else:
        bad = got != ref
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return f"{int(bad.sum())} of {ref.size} values differ; first at {i}: got {got[i]!r}, expected {ref[i]!r}"
    return None


# the kinds (they use the helpers above)
import diff_fuzz_grad as grad  # noqa: E402
import diff_fuzz_inplace as inplace  # noqa: E402
import diff_fuzz_sizes as sizes  # noqa: E402


# ---------------------------------------------------------------------------------------------
# dispatch (diff_fuzz.generate / run_program)


GENERATORS = {"inplace": lambda s: inplace.InplaceGen(s).generate(), "hooks": grad.gen_hooks,
              "second": grad.gen_second, "sizes": sizes.gen_sizes}


def generate(seed, kind):
    return GENERATORS[kind](seed)


def run_program(prog):
    """Runs a program of one of KINDS: a result dict like diff_fuzz.run_program's."""
    kind = prog["program"]
    try:
        if kind == "inplace":
            verdict, ops = inplace.run_inplace(prog)
        elif kind == "sizes":
            verdict, ops = sizes.run_sizes(prog), [c["op"] for c in prog["cases"]]
        else:
            verdict = (grad.run_hooks if kind == "hooks" else grad.run_second)(prog)
            ops = [o["name"] for o in prog["ops"]]
    except Failure as f:
        return dict(status="fail", kind=f.kind, op=f.op, msg=f.msg, table=[], ops=[], program=kind)
    return dict(status="ok", grad=verdict, table=[], ops=ops, mode=prog.get("mode"), program=kind)


# ---------------------------------------------------------------------------------------------
# self-checks: deliberately wrong references (or a vkml check that does not raise)

def apply_break(kind, name):
    """diff_fuzz.apply_break for these kinds: "ref:inplace" (the numpy side of an in-place op
    writes one more), "scale:hooks" (a scale hook's expected factor is 1.25x too big),
    "ref:second" (second differences 1% too big), "noraise:FN" (vk.FN / Tensor.FN return an
    empty tensor instead of raising). False when the spec is not one of these."""
    vk = vkml()
    if (kind, name) in (("ref", "inplace"), ("scale", "hooks"), ("ref", "second")):
        BROKEN.add(f"{kind}:{name}")
        if name == "inplace":
            real = inplace.X.iop

            def iop(t, fn, o, alpha=None):
                real(t, fn, o, alpha)
                inplace.X.write(t, t + 1)
            inplace.X.iop = staticmethod(iop)
        return True
    if kind == "noraise":
        for owner in (vk, vk.Tensor):
            real = getattr(owner, name, None)
            if real is None:
                continue

            def quiet(*a, _real=real, **k):
                try:
                    return _real(*a, **k)
                except Exception:  # noqa: BLE001
                    return vk.zeros(0)
            setattr(owner, name, quiet)
        return True
    return False


# ---------------------------------------------------------------------------------------------
# minimiser and printed reproducers (diff_fuzz --minimize / --show)


def minimize_list(prog, still, log):
    """inplace and sizes programs: drop steps (or cases) while the failure stays the same."""
    key = "steps" if prog["program"] == "inplace" else "cases"
    cur = prog
    if key == "cases":  # the first failing case alone
        for case in prog["cases"]:
            cand = dict(prog, cases=[case])
            if still(cand):
                return cand
    changed = True
    while changed:
        changed = False
        for j in reversed(range(len(cur[key]))):
            if len(cur[key]) <= 1 or j >= len(cur[key]):
                continue
            cand = dict(cur, **{key: cur[key][:j] + cur[key][j + 1:]})
            if still(cand):
                cur, changed = cand, True
    log(f"minimised: {len(prog[key])} -> {len(cur[key])} {key}")
    return cur


def drop_hooks(prog, still):
    cur = prog
    for j in reversed(range(len(prog.get("hooks", [])))):
        cand = dict(cur, hooks=cur["hooks"][:j] + cur["hooks"][j + 1:])
        if cand["hooks"] and still(cand):
            cur = cand
    return cur


def program_lines(prog):
    kind = prog["program"]
    if kind == "sizes":
        return [sizes.SIZE_NS_SRC.replace("; ", "\n")] + [
            f"{c['src']}  # expect {c['expect']}" + (f"; then {c['check']}" if c.get("check") else "")
            for c in prog["cases"]]
    if kind == "inplace":
        lines = []
        used = " ".join(st["vk"] for st in prog["steps"])
        for i, spec in enumerate(prog["leaves"]):
            if not re.search(rf"\bx{i}\b", used):
                continue  # (a leaf the minimiser left without a use)
            a = inplace.leaf_array(spec)
            lines.append(f"x{i} = vk.tensor({D.arr_src(a, spec['dtype'])}"
                         + (", requires_grad=True)" if spec.get("grad") else ")"))
        for st in prog["steps"]:
            if st.get("err"):
                excs = ", ".join("vk." + e if e in ("DTypeError", "ShapeError") else e for e in st["err"].split("|"))
                lines.append(f"with pytest.raises(({excs},)):")
                lines += ["    " + ln for ln in inplace.vk_stmt(st).split("\n")]
            else:
                lines += [inplace.vk_stmt(st).split("\n")[0] + f"  # numpy: {st['np']}"] + inplace.vk_stmt(st).split("\n")[1:]
        return lines
    c = D.instantiate(prog)
    lines = D.program_lines(c)
    for h in prog.get("hooks", []):
        lines.append(f"# hook: {h}")
    return lines


def regression_test(prog, sig, name=None):
    """A pytest function for a failing program of these kinds: the program's lines (for
    reading) and a replay of its spec through diff_fuzz (hooks and second order need the
    finite differences); sizes and inplace errors are spelled out."""
    seed = prog.get("seed", "x")
    name = name or re.sub(r"\W", "_", f"test_fuzz_{prog['program']}_seed{seed}_{sig[0]}_{sig[1]}")
    res = run_program(prog)
    lines = [f"def {name}():", f'    """diff_fuzz --kinds {prog["program"]} seed {seed} (minimised): '
             f'{sig[0]} at {sig[1]}.']
    lines += ["    " + chunk for chunk in D._wrap(res.get("msg", "").replace("\\", "/"), 90)]
    lines.append('    """')
    if prog["program"] == "sizes" and len(prog["cases"]) == 1:
        case = prog["cases"][0]
        lines.append("    " + sizes.SIZE_NS_SRC)
        exp = case["expect"]
        if exp[0] == "error":
            excs = ", ".join("vk." + e if e in ("DTypeError", "ShapeError") else e for e in exp[1].split("|"))
            lines += [f"    with pytest.raises(({excs},)):", f"        {case['src']}"]
        else:
            lines.append(f"    r = {case['src']}")
            if exp[1] is not None:
                lines.append(f"    assert (tuple(r.shape) if not isinstance(r, (list, tuple)) else "
                             f"[tuple(t.shape) for t in r]) == {sizes.want_shape(exp[1])!r}")
            if case.get("check"):
                lines.append(f"    assert {case['check']}")
        return "\n".join(lines) + "\n"
    lines += ["    # " + ln for ln in "\n".join(program_lines(prog)).split("\n")]
    lines.append(f"    spec = json.loads({json.dumps(prog)!r})")
    lines.append("    r = diff_fuzz.run_program(spec)")
    lines.append("    assert r['status'] == 'ok', r")
    return "\n".join(lines) + "\n"
