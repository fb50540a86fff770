"""The "hooks" and "second" programs of the differential fuzzer (see diff_fuzz_ext.py): tensor
hooks, and second derivatives, against finite differences of the numpy program."""

import math

import numpy as np

import diff_fuzz as D
from diff_fuzz import Failure
from diff_fuzz_ext import BROKEN, np_of, vkml

# ---------------------------------------------------------------------------------------------
# op programs in float64 ("grad" mode of diff_fuzz) for hooks and second


def grad_program(seed, kind, margin=None):
    g = D.Generator(seed)
    g.mode = "grad"
    if margin is not None:
        g.extra = dict(margin=margin)
    prog = g.generate()
    prog["program"] = kind
    return prog


def _depends(c):
    """name -> the set of names (leaves and values) it is computed from."""
    deps = {v.name: set() for v in c.vals[:len(c.leaves)]}
    for ln in c.lines:
        if ln.err is not None:
            break
        d = set(ln.ins)
        for n in ln.ins:
            d |= deps[n]
        deps[ln.name] = d
    return deps


def _eval_env(c, overrides):
    """Every value of the numpy program (exact float64) with some values replaced: the values
    computed from a replaced one are recomputed, the others keep their values."""
    env = {}
    for v in c.vals[:len(c.leaves)]:
        env[v.name] = overrides.get(v.name, v.ref)
    for ln in c.lines:
        if ln.err is not None:
            break
        env[ln.name] = overrides[ln.name] if ln.name in overrides else D.ref_eval(ln.np, env, ln.dtype, "exact64")
    return env


def _value_of(c, name):
    return next(v.ref for v in c.vals if v.name == name).astype(np.float64)


def fd_wrt(c, name, fn, h=1e-6):
    """Central differences of fn(env) with respect to the value `name` (and their error
    estimate from the step 2h)."""
    base = _value_of(c, name)
    g, e = np.zeros(base.shape), np.zeros(base.shape)
    for idx in np.ndindex(*base.shape):
        est = []
        for s in (h, 2 * h):
            vals = []
            for sign in (1, -1):
                a = base.copy()
                a[idx] += sign * s
                vals.append(fn(_eval_env(c, {name: a})))
            est.append((vals[0] - vals[1]) / (2 * s))
        g[idx], e[idx] = est[0], abs(est[0] - est[1])
    return g, e


def _loss_fn(c, roots, weights):
    return lambda env: sum(float(np.sum(env[c.lines[k].name] * w)) for k, w in zip(roots, weights))


def _start(prog):
    """Instantiates and runs an op program, compares its forward values; (c, ns, rng, roots,
    weights) with random weights for the loss sum_k <w_k, out_k>."""
    c = D.instantiate(prog)
    rng = np.random.default_rng([prog.get("seed", 0), 97])
    ns = D.run_vkml(c)
    if c.err_at is not None:
        return None
    D.compare_forward(c, ns, rng)
    roots = D.grad_roots(c, ns)
    weights = [np.round(rng.uniform(-1, 1, size=c.vals[len(c.leaves) + k].ref.shape), 3) for k in roots]
    return c, ns, rng, roots, weights


def _grad_tol(expected, err, lscale):
    return 1e-6 + 1e-5 * np.abs(expected) + 20 * err + 1e-9 * lscale


def _check_array(what, got, expected, err, lscale, op="hook"):
    got = np.zeros(expected.shape) if got is None else np.asarray(got, dtype=np.float64)
    if got.shape != expected.shape:
        raise Failure("grad-shape", op, f"{what}: shape {got.shape}, expected {expected.shape}")
    bad = ~(np.abs(got - expected) <= _grad_tol(expected, err, lscale))
    if bad.any():
        j = tuple(np.argwhere(bad)[0])
        raise Failure("grad", op, f"{what}{list(j)} = {got[j]!r}, finite differences give {expected[j]!r} "
                      f"({int(bad.sum())} of {got.size} differ)")


# ---------------------------------------------------------------------------------------------
# hooks


def gen_hooks(seed):
    prog = grad_program(seed, "hooks")
    c = D.instantiate(prog)
    rng = np.random.default_rng([seed, 0x400C])
    deps = _depends(c)
    cands = [v.name for v in c.vals[:len(c.leaves)] if v.grad and 0 < v.ref.size <= 48]
    cands += [ln.name for k, ln in enumerate(c.lines) if ln.err is None and ln.grad
              and 0 < c.vals[len(c.leaves) + k].ref.size <= 48]
    hooks = []
    if not cands:
        prog["hooks"] = hooks
        return prog
    scenario = str(rng.choice(["observe", "scale", "scale", "nested", "bad-shape"], p=[0.3, 0.2, 0.2, 0.2, 0.1]))
    pick = lambda: str(rng.choice(cands))  # noqa: E731
    if scenario == "bad-shape":
        hooks.append(dict(kind="bad-shape", at=pick()))
    elif scenario == "nested":
        at = pick()
        up = [n for n in cands if n in deps.get(at, ())]
        if up:
            hooks.append(dict(kind="nested", at=at, inner=str(rng.choice(up))))
    elif scenario == "scale":
        at = pick()
        order = int(rng.integers(0, 3))  # an observer on the same value before / after / none
        if order == 1:
            hooks.append(dict(kind="observe", at=at))
        hooks.append(dict(kind="scale", at=at, c=float(rng.choice([2.0, -0.5, 3.0, 0.0]))))
        if order == 2:
            hooks.append(dict(kind="observe", at=at))
    for _ in range(int(rng.integers(0 if hooks else 1, 3))):
        hooks.append(dict(kind="observe", at=pick()))
    if rng.random() < 0.4:
        hooks.append(dict(kind="removed", at=pick(), c=5.0))
    prog["hooks"] = hooks
    return prog


def _register(vk, ns, h, i, seen, handles):
    t = ns[h["at"]]
    if h["kind"] in ("observe", "removed"):
        def f(g, i=i, c=h.get("c")):
            seen[i].append(np_of(g))
            return None if c is None else g * c
    elif h["kind"] == "scale":
        def f(g, i=i, c=h["c"]):
            seen[i].append(None)
            return g * c
    elif h["kind"] == "bad-shape":
        def f(g, i=i):
            seen[i].append(None)
            return g.sum() if g.ndim else g.reshape(1, 1)
    else:  # nested: an observer on an upstream value, registered while backward runs
        def inner(g, i=i):
            seen[("inner", i)].append(np_of(g))

        def f(g, i=i, u=h["inner"]):
            seen[i].append(np_of(g))
            seen[("inner", i)] = []
            handles.append(ns[u].register_hook(inner))
    handle = t.register_hook(f)
    if h["kind"] == "removed":
        handle.remove()
    handles.append(handle)


def _aliases(c, ns):
    """Values that are another value's tensor (x.contiguous() of a contiguous x is x, as in
    torch): a hook on them is a hook on that other tensor, not what the numpy program means."""
    out, fns = set(), []
    for ln in c.lines:
        if ln.err is not None:
            break
        t = ns[ln.name]
        if not ln.grad:
            continue
        if t.is_leaf or t.grad_fn is None or any(t.grad_fn == f for f in fns):
            out.add(ln.name)
        else:
            fns.append(t.grad_fn)
    return out


def run_hooks(prog):
    vk = vkml()
    start = _start(prog)
    if start is None:
        return "error-program"
    c, ns, rng, roots, weights = start
    hooks = prog.get("hooks", [])
    if not roots or not hooks:
        return "no-hooks"
    seen, handles = {i: [] for i in range(len(hooks))}, []
    alias = _aliases(c, ns)  # (and targets a shrunk program no longer has)
    hooks = [h for h in hooks if h["at"] not in alias and h.get("inner") not in alias
             and h["at"] in ns and h.get("inner", h["at"]) in ns]
    if not hooks:
        return "no-hooks"
    for i, h in enumerate(hooks):
        _register(vk, ns, h, i, seen, handles)
    bad = any(h["kind"] == "bad-shape" for h in hooks)
    try:
        vk.autograd.backward([ns[c.lines[k].name] for k in roots],
                             [vk.tensor(w) for w in weights])
    except RuntimeError as ex:
        if bad:
            return "raised"
        raise Failure("backward-exception", "backward", f"RuntimeError: {ex}")
    except Exception as ex:  # noqa: BLE001
        raise Failure("backward-exception", "backward", f"{type(ex).__name__}: {ex}")
    if bad and any(seen[i] for i, h in enumerate(hooks) if h["kind"] == "bad-shape"):
        raise Failure("no-exception", "hook", "a hook returned a gradient of the wrong shape and backward "
                      "did not raise")
    check_hooks(c, ns, roots, weights, hooks, seen)  # (a bad hook not reached: on a leaf without grad)
    return "ok"


def check_hooks(c, ns, roots, weights, hooks, seen):
    deps = _depends(c)
    loss = _loss_fn(c, roots, weights)
    lscale = sum(float(np.sum(np.abs(c.vals[len(c.leaves) + k].ref * w))) for k, w in zip(roots, weights))
    cache = {}

    def grad_of(name):  # d loss / d value, by finite differences of the numpy program
        if name not in cache:
            cache[name] = fd_wrt(c, name, loss)
        return cache[name]

    scale = next((h for h in hooks if h["kind"] == "scale"), None)
    extra = {}

    def expected(name, after_scale=False):
        """The gradient arriving at `name` with the scale hook (if any) applied."""
        g, e = grad_of(name)
        if scale is None:
            return g, e
        s, cs = scale["at"], scale["c"] * (1.25 if "scale:hooks" in BROKEN else 1.0)
        if name == s:
            return (cs * g, abs(cs) * e) if after_scale else (g, e)
        if name in deps.get(s, ()):
            if name not in extra:  # the chain rule with the scale at s: + (c-1) * J_s^T g_s
                gs, es = grad_of(s)
                extra[name] = fd_wrt(c, name, lambda env: float(np.sum(env[s] * gs)))
            v, ve = extra[name]
            return g + (cs - 1) * v, e + abs(cs - 1) * ve
        return g, e

    leaf_names = [v.name for v in c.vals[:len(c.leaves)]]
    for i, h in enumerate(hooks):
        calls = seen[i]
        at = h["at"]
        where = f"{h['kind']} hook on {at}"
        if h["kind"] == "removed":
            if calls:
                raise Failure("hook-called", "hook", f"{where}: removed before backward, called {len(calls)} times")
            continue
        if at in leaf_names and ns[at].grad is None:
            g, _ = grad_of(at)
            if calls:
                raise Failure("hook-called", "hook", f"{where}: called although {at}.grad stayed None")
            if np.max(np.abs(g), initial=0) > 1e-6:
                raise Failure("grad", "backward", f"{at}.grad is None, finite differences give {g.ravel()[:4]}")
            continue
        if len(calls) != 1 or h["kind"] == "bad-shape":
            raise Failure("hook-calls", "hook", f"{where}: called {len(calls)} times, expected once")
        if h["kind"] in ("observe", "nested"):
            after = scale is not None and any(x is scale for x in hooks[:i]) and at == scale["at"]
            g, e = expected(at, after)
            _check_array(f"the gradient seen by the {where}", calls[0], g, e, lscale)
        if h["kind"] == "nested":
            inner = seen.get(("inner", i), [])
            u = h["inner"]
            if u in leaf_names and ns[u].grad is None and not inner:  # no gradient reaches it
                g, _ = grad_of(u)
                if np.max(np.abs(g), initial=0) > 1e-6:
                    raise Failure("grad", "backward", f"{u}.grad is None, finite differences give {g.ravel()[:4]}")
                continue
            if len(inner) != 1:
                raise Failure("hook-calls", "hook", f"hook registered on {h['inner']} during backward by the "
                              f"{where}: called {len(inner)} times, expected once")
            g, e = expected(h["inner"])
            _check_array(f"the gradient seen by the hook on {h['inner']}", inner[0], g, e, lscale)
    for name in leaf_names:
        t = ns[name]
        if not t.requires_grad:
            continue
        g, e = expected(name, after_scale=True)
        _check_array(f"{name}.grad", None if t.grad is None else np_of(t.grad), g, e, lscale, op="backward")


# ---------------------------------------------------------------------------------------------
# second order


def gen_second(seed):
    # ops kept 10x farther from kinks than first-order programs: the second differences step
    # the leaves by up to 4e-4
    return grad_program(seed, "second", margin=1e-2)


def _second_diff(c, roots, weights, base, v, u, h):
    """Mixed central second difference of the numpy loss along v and u."""
    def loss(sv, su):
        arrays = list(base)
        for i in v:
            arrays[i] = base[i] + sv * v[i] + su * u[i]
        return D._fd_loss(c, arrays, roots, weights)
    return (loss(h, h) - loss(h, -h) - loss(-h, h) + loss(-h, -h)) / (4 * h * h)


def run_second(prog):
    vk = vkml()
    start = _start(prog)
    if start is None:
        return "error-program"
    c, ns, rng, roots, weights = start
    gl = [i for i, l in enumerate(c.leaves) if l[3]]
    if not roots or not gl:
        return "no-roots"
    leaves = [ns[c.leaves[i][0]] for i in gl]
    loss = None
    for k, w in zip(roots, weights):
        term = (ns[c.lines[k].name] * vk.tensor(w)).sum()
        loss = term if loss is None else loss + term
    try:
        g = vk.autograd.grad(loss, leaves, create_graph=True, allow_unused=True)
    except Exception as ex:  # noqa: BLE001
        raise Failure("backward-exception", "grad", f"{type(ex).__name__}: {ex}")
    fd, errs, lscale = D.numeric_grads(c, roots, weights, gl)
    for i, gi, f, e in zip(gl, g, fd, errs):
        _check_array(f"grad(loss, {c.leaves[i][0]})", None if gi is None else np_of(gi), f, e, lscale,
                     op="grad")
    base = [v.ref.astype(np.float64) if v.isfloat else v.ref for v in c.vals[:len(c.leaves)]]
    v = {i: rng.standard_normal(base[i].shape) for i in gl}
    for i in gl:
        v[i] /= max(1.0, float(np.max(np.abs(v[i]), initial=0)))
    s = None
    for i, gi in zip(gl, g):
        if gi is not None and gi.requires_grad:
            term = (gi * vk.tensor(v[i])).sum()
            s = term if s is None else s + term
    if s is None:
        hv = [np.zeros(base[i].shape) for i in gl]
    else:
        try:
            hv = vk.autograd.grad(s, leaves, allow_unused=True)
        except Exception as ex:  # noqa: BLE001
            raise Failure("backward-exception", "grad2", f"{type(ex).__name__}: {ex}")
        hv = [np.zeros(base[i].shape) if t is None else np_of(t).astype(np.float64) for i, t in zip(gl, hv)]
    total = sum(base[i].size for i in gl)
    dirs = []
    if total <= 24:  # every entry of H v
        for i in gl:
            for idx in np.ndindex(*base[i].shape):
                u = {j: np.zeros(base[j].shape) for j in gl}
                u[i][idx] = 1.0
                dirs.append((f"(H v) of {c.leaves[i][0]}{list(idx)}", u, hv[gl.index(i)][idx]))
    else:
        for n in range(3):
            u = {j: rng.standard_normal(base[j].shape) for j in gl}
            for j in gl:
                u[j] /= max(1.0, float(np.max(np.abs(u[j]), initial=0)))
            got = sum(float(np.sum(hv[k] * u[j])) for k, j in enumerate(gl))
            dirs.append((f"<H v, u{n}>", u, got))
    for what, u, got in dirs:
        est = [_second_diff(c, roots, weights, base, v, u, h) * (1.01 if "ref:second" in BROKEN else 1.0)
               for h in (1e-4, 2e-4)]
        if not all(math.isfinite(x) for x in est):
            continue
        err = abs(est[0] - est[1])
        tol = 1e-5 + 1e-4 * abs(est[0]) + 20 * err + 1e-7 * lscale
        if not abs(got - est[0]) <= tol:
            raise Failure("grad2", "backward",
                          f"{what} = {got!r}, second differences of the numpy loss give {est[0]!r} "
                          f"(tolerance {tol:.3g})")
    return "ok"
