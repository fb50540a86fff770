"""The "inplace" programs of the differential fuzzer (see diff_fuzz_ext.py): in-place writes
through views, against the same writes on numpy views; the version counter."""

import warnings

import numpy as np

import diff_fuzz as D
from diff_fuzz import FLOATS, NP_DT, Failure, Invalid, R, need
from diff_fuzz_ext import close_msg, compile_src, exc_types, np_of, run_src, vkml

# ---------------------------------------------------------------------------------------------
# numpy side of in-place programs: every helper writes into t's memory, as vkml must


class X:
    @staticmethod
    def write(t, value):
        np.copyto(t, np.asarray(value), casting="unsafe")

    @staticmethod
    def iop(t, fn, o, alpha=None):
        # An array operand: torch computes in the result dtype of both (a 0-d one joins t's
        # dtype unless of a higher category), each cast to it first, then rounds into t.
        if isinstance(o, np.ndarray) and fn is not np.true_divide:
            rt = NP_DT[D.result_type((t.dtype.name, t.ndim), (o.dtype.name, o.ndim))]
            o = o.astype(rt) if alpha is None else o.astype(rt) * np.asarray(alpha, dtype=rt)
            X.write(t, fn(t.astype(rt), o))
            return
        # a Python scalar stays one: numpy then computes in t's dtype, as vkml and torch do
        # (np.asarray(-1.95) would be a float64 array, and float32 - float64 is float64)
        if alpha is not None:
            o = np.asarray(o)
            o = o * np.asarray(alpha, dtype=o.dtype if o.dtype.kind == "f" else np.float64)
        X.write(t, fn(t, o))

    @staticmethod
    def clamp(t, lo, hi):
        r = t
        if lo is not None:
            r = np.maximum(r, lo)
        if hi is not None:
            r = np.minimum(r, hi)
        X.write(t, r)

    @staticmethod
    def split_index(t, idx):
        """torch's setitem: ints (and slices) select a view first, then the advanced indices."""
        if any(i is Ellipsis for i in idx):
            used = sum(i.ndim if isinstance(i, np.ndarray) and i.dtype == np.bool_ else 0 if i is None
                       or i is Ellipsis else 1 for i in idx)
            k = idx.index(Ellipsis)
            idx = tuple(idx[:k]) + (slice(None),) * (t.ndim - used) + tuple(idx[k + 1:])
        has_int = any(isinstance(i, int) for i in idx)
        has_adv = any(isinstance(i, (list, np.ndarray)) for i in idx)
        if not (has_int and has_adv):
            return t, tuple(np.asarray(i) if isinstance(i, list) else i for i in idx)
        first, rest = [], []
        for i in idx:
            if isinstance(i, int):
                first.append(i)
            elif i is None:
                rest.append(None)
            elif isinstance(i, np.ndarray) and i.dtype == np.bool_:
                first.extend([slice(None)] * i.ndim)
                rest.append(i)
            else:
                first.append(slice(None))
                rest.append(np.asarray(i) if isinstance(i, list) else i)
        return t[tuple(first)], tuple(rest)

    @staticmethod
    def setitem(t, idx, v):
        base, rest = X.split_index(t, idx)
        base[rest] = np.asarray(v).astype(t.dtype, casting="unsafe") if np.ndim(v) else v

    @staticmethod
    def iadd_index(t, idx, o, fn=np.add):
        cur = R.index(t, idx)
        X.setitem(t, idx, np.asarray(fn(cur, o)).astype(t.dtype, casting="unsafe"))

    @staticmethod
    def expand(a, shape):
        """A writable broadcast view (np.broadcast_to is read-only)."""
        shape = tuple(shape)
        lead = len(shape) - a.ndim
        strides = [0] * lead + [0 if (a.shape[i] == 1 and shape[lead + i] != 1) else a.strides[i]
                                for i in range(a.ndim)]
        return np.lib.stride_tricks.as_strided(a, shape=shape, strides=strides, writeable=True)

    @staticmethod
    def overlaps(a):
        """A view in which two elements share memory (a stride 0 over more than one element)."""
        return a.size > 1 and any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape))


# ---------------------------------------------------------------------------------------------
# inplace: generation
#
# A program: leaves (diff_fuzz leaf specs) and steps. A step is one statement in vkml ("vk") and
# in numpy ("np", None when it must raise), with: op (its name in reports), err (the typed
# errors it must raise: then nothing may change), may_err (an error it may raise instead, as
# torch does: the run stops there), new (the name it binds), rg ({name: requires_grad} of what
# it binds), target (the name it writes into), rec (for a recorded op of a "grad" program: its
# parents, which of them torch saves, whether its rule uses its output, whether it is a view).


def _pyval(rng, dtype):
    if dtype in FLOATS:
        return float(np.round(rng.uniform(-2, 2), 2))
    return int(rng.integers(-3, 4))


def _basic_index(rng, a):
    """A basic (view) index of a: (source, components)."""
    comps, srcs = [], []
    d = 0
    k = int(rng.integers(1, a.ndim + 1)) if a.ndim else 0
    while d < k:
        r = rng.random()
        n = a.shape[d]
        if r < 0.1:
            comps.append(None)
            srcs.append("None")
            continue
        if r < 0.15 and d == 0 and k < a.ndim:
            comps.append(Ellipsis)
            srcs.append("...")
            d = a.ndim - (k - d)
            k = a.ndim
            continue
        if r < 0.45 and n > 0:
            i = int(rng.integers(-n, n))
            comps.append(i)
            srcs.append(repr(i))
        else:
            lo = int(rng.integers(-n - 1, n + 2)) if rng.random() < 0.5 else None
            hi = int(rng.integers(-n - 1, n + 2)) if rng.random() < 0.5 else None
            st = int(rng.integers(1, 4)) if rng.random() < 0.4 else None
            comps.append(slice(lo, hi, st))
            srcs.append(D._slice_src([slice(lo, hi, st)])[:-1])
        d += 1
    if not srcs:
        return "...", (Ellipsis,)
    return ", ".join(srcs), tuple(comps)


def _dim_slice(nd, d, s):
    sl = [slice(None)] * nd
    sl[d] = s
    return D._slice_src(sl)


def _view_op(rng, b, a):
    """A view of value b (numpy array a): (vk source, numpy source, op name)."""
    nd = a.ndim
    choices = ["index", "unsqueeze", "detach", "expand"]
    if nd >= 1:
        choices += ["narrow", "select", "split", "unbind"]
    if nd >= 2:
        choices += ["transpose", "permute", "mT"]
    if nd <= 2:
        choices += ["t"]
    if 1 in a.shape:
        choices += ["squeeze"]
    if a.flags.c_contiguous:
        choices += ["view", "reshape"]
    c = str(rng.choice(choices))
    d = int(rng.integers(0, nd)) if nd else 0
    if c == "index":
        src, _ = _basic_index(rng, a)
        return f"{b}[{src}]", f"{b}[{src}]", "index"
    if c == "unsqueeze":
        d = int(rng.integers(-nd - 1, nd + 1))
        return f"{b}.unsqueeze({d})", f"np.expand_dims({b}, {d % (nd + 1)})", c
    if c == "detach":
        return f"{b}.detach()", f"{b}[...]", c
    if c == "expand":
        lead = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 2)))]
        shape = lead + [int(rng.integers(1, 4)) if (s == 1 and rng.random() < 0.7) else s for s in a.shape]
        need(int(np.prod(shape)) <= 64)
        return f"{b}.expand({tuple(shape)!r})", f"X.expand({b}, {tuple(shape)!r})", c
    n = a.shape[d] if nd else 0
    if c == "narrow":
        s = int(rng.integers(0, n + 1))
        ln = int(rng.integers(0, n - s + 1))
        return f"{b}.narrow({d}, {s}, {ln})", f"{b}[{_dim_slice(nd, d, slice(s, s + ln))}]", c
    if c == "select":
        need(n > 0)
        i = int(rng.integers(-n, n))
        return f"{b}.select({d}, {i})", f"{b}[{_dim_slice(nd, d, i)}]", c
    if c == "split":
        need(n > 0)
        k = int(rng.integers(1, n + 1))
        if rng.random() < 0.5:
            pieces = [(i, min(i + k, n)) for i in range(0, n, k)]
            src = f"{b}.split({k}, {d})"
        else:
            size = -(-n // k)
            pieces = [(i, min(i + size, n)) for i in range(0, n, size)]
            src = f"{b}.chunk({k}, {d})"
        j = int(rng.integers(0, len(pieces)))
        return f"{src}[{j}]", f"{b}[{_dim_slice(nd, d, slice(*pieces[j]))}]", c
    if c == "unbind":
        need(n > 0)
        j = int(rng.integers(0, n))
        return f"{b}.unbind({d})[{j}]", f"{b}[{_dim_slice(nd, d, j)}]", c
    if c == "transpose":
        i, j = (int(v) for v in rng.integers(-nd, nd, size=2))
        return f"{b}.transpose({i}, {j})", f"np.swapaxes({b}, {i}, {j})", c
    if c == "permute":
        p = [int(v) for v in rng.permutation(nd)]
        return f"{b}.permute({', '.join(map(str, p))})", f"np.transpose({b}, {tuple(p)!r})", c
    if c == "mT":
        return f"{b}.mT", f"np.swapaxes({b}, -1, -2)", c
    if c == "t":
        return f"{b}.t()", f"np.transpose({b})", c
    if c == "squeeze":
        d = int(rng.choice([i for i in range(nd) if a.shape[i] == 1]))
        return f"{b}.squeeze({d})", f"np.squeeze({b}, {d})", c
    shape = D._factor(rng, a.size, int(rng.integers(1, 4)))
    return f"{b}.{c}({tuple(shape)!r})", f"{b}.reshape({tuple(shape)!r})", c


def _fresh_op(rng, b, a, dtype):
    """A new tensor (its own memory) made from b: (vk source, numpy source, op name, grad kept)."""
    r = rng.random()
    if r < 0.4:
        return f"{b}.clone()", f"{b}.copy()", "clone", True
    if r < 0.6:
        return f"({b} * 2)", f"({b} * np.asarray(2, dtype={b}.dtype))", "mul", True
    if r < 0.8 and a.ndim >= 1 and a.shape[0] > 0:
        idx = [int(v) for v in rng.integers(-a.shape[0], a.shape[0], size=int(rng.integers(1, 4)))]
        return f"{b}[{idx!r}]", f"{b}[{idx!r}]", "index", True
    dt = dtype if dtype != "bool" else "float32"
    return (f"vk.zeros({a.shape!r}, dtype=vk.{dt})", f"np.zeros({a.shape!r}, dtype=np.{dt})", "zeros",
            False)


class InplaceGen:
    """Generates an "inplace" program, running its numpy side as it goes."""

    BIN = {"add_": "np.add", "sub_": "np.subtract", "mul_": "np.multiply", "div_": "np.true_divide",
           "+=": "np.add", "-=": "np.subtract", "*=": "np.multiply", "/=": "np.true_divide"}

    def __init__(self, seed):
        self.rng = np.random.default_rng([seed, 0x1A9])
        self.seed = seed
        self.mode = "values" if self.rng.random() < 0.65 else "grad"
        self.leaves, self.steps = [], []
        self.env = {"np": np, "X": X, "R": R, "outs": []}
        self.info = {}  # name -> dict(root, rg, leaf, dtype)
        self.n_new = 0

    # ---- values --------------------------------------------------------------------------

    def add_leaf(self, shape, dtype, grad=False):
        spec = dict(shape=list(shape), dtype=dtype, seed=int(self.rng.integers(0, 2 ** 31)),
                    kind="normal", grad=bool(grad))
        self.leaves.append(spec)
        name = f"x{len(self.leaves) - 1}"
        a = D.make_leaf_array(spec)
        if dtype in FLOATS:
            a = np.round(a, 2).astype(NP_DT[dtype])
        spec["data"] = a.reshape(-1).tolist()
        self.env[name] = a
        self.info[name] = dict(root=name, rg=bool(grad), leaf=True, dtype=dtype)
        return name

    def leaf_dtype(self):
        r = self.rng.random()
        return "float32" if r < 0.45 else "float64" if r < 0.75 else "int64" if r < 0.95 else "int32"

    def shape(self):
        return [int(v) for v in D.random_shape(self.rng, "mixed")]

    def pick(self, pred=lambda n: True):
        names = [n for n in self.info if pred(n)]
        if not names:
            return None
        return names[-1] if self.rng.random() < 0.4 else str(self.rng.choice(names))

    def emit(self, step):
        """Runs the numpy side of a step (Invalid when numpy cannot) and keeps it."""
        if step.get("np"):
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec(compile_src(step["np"]), self.env)
            except Exception:  # noqa: BLE001
                raise Invalid()
        self.steps.append(step)

    def new_name(self):
        self.n_new += 1
        return f"v{self.n_new - 1}"

    def step_view(self, nograd):
        b = self.pick()
        a = self.env[b]
        vsrc, nsrc, opname = _view_op(self.rng, b, a)
        name = self.new_name()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                val = eval(nsrc, dict(self.env))
        except Exception:  # noqa: BLE001
            raise Invalid()
        need(val.size == 0 or np.shares_memory(val, a))
        inf = self.info[b]
        # vkml may return the tensor itself for a view of the same shape (its flags, not a
        # view's): not generated for tensors whose flags differ from a view's
        need(not (inf["rg"] and val.shape == a.shape and opname != "detach"))
        # grad programs: a value read from a tensor that requires grad without recording is a
        # constant to autograd but not to the numpy program's finite differences
        need(not (self.mode == "grad" and inf["rg"] and (nograd or opname == "detach")))
        rg = inf["rg"] and not nograd
        alias = opname == "t" and a.ndim < 2  # vkml's t() of < 2 dims is the tensor itself
        rg = inf["rg"] if alias else rg and opname != "detach"
        rec = (dict(ins=[b], parents=[inf["root"]], saved=[False], out=inf["root"], uses_out=False)
               if rg and not alias else None)
        self.emit(dict(vk=f"{name} = {vsrc}", np=f"{name} = {nsrc}", op=opname, new=name, rg={name: rg},
                       nograd=nograd, root=inf["root"], rec=rec))
        # whether the tensor this view's chain starts from required grad when the view was taken
        # (detach() starts a chain of its own): a write with grad on into a view that does not
        # require grad of one that does raises, in vkml as in torch (a view made under no_grad)
        vb_rg = inf.get("vb_rg")
        vb_rg = None if opname == "detach" else vb_rg if alias or vb_rg is not None else inf["rg"]
        self.info[name] = dict(root=inf["root"], rg=rg, leaf=inf["leaf"] if alias else not rg,
                               dtype=inf["dtype"], vb_rg=vb_rg)

    def step_fresh(self, nograd):
        b = self.pick()
        a = self.env[b]
        inf = self.info[b]
        vsrc, nsrc, opname, keeps = _fresh_op(self.rng, b, a, inf["dtype"])
        need(not (self.mode == "grad" and inf["rg"] and nograd))  # (as in step_view)
        name = self.new_name()
        rg = inf["rg"] and keeps and not nograd
        rec = dict(ins=[b], parents=[inf["root"]], saved=[False], out=name, uses_out=False) if rg else None
        self.emit(dict(vk=f"{name} = {vsrc}", np=f"{name} = {nsrc}", op=opname, new=name, rg={name: rg},
                       nograd=nograd, root=name, rec=rec))
        self.info[name] = dict(root=name, rg=rg, leaf=not rg, dtype=inf["dtype"])

    def operand(self, target, allow_scalar=True):
        """(vk source, numpy source, dtype, ndim, requires grad, root or None, scalar?)."""
        rng = self.rng
        a = self.env[target]
        tdt = self.info[target]["dtype"]
        r = rng.random()
        if r < 0.3 and allow_scalar:
            v = _pyval(rng, tdt)
            return repr(v), repr(v), tdt, 0, False, None, True
        if r < 0.55:
            o = self.pick(lambda n: D._bcast_ok(self.env[n].shape, a.shape) and self.env[n].size <= 64)
            if o is not None:
                inf = self.info[o]
                return o, o, inf["dtype"], self.env[o].ndim, inf["rg"], inf["root"], False
        shape = [] if r < 0.65 else D.broadcast_partner(rng, list(a.shape), "mixed")
        dt = tdt if rng.random() < 0.6 else self.leaf_dtype()
        grad = dt in FLOATS and rng.random() < 0.15
        name = self.add_leaf(shape, dt, grad)
        return name, name, dt, len(shape), grad, name, False

    @staticmethod
    def recorded(inf, errs):
        """A write while grad mode is on into a tensor that requires grad, or of a value that
        does: into a leaf that requires grad it raises; anything else autograd records (a new
        history for the target, views taken before it refused), which this model does not
        follow: tests/python/test_inplace_autograd.py checks recorded writes against torch, and
        the generator draws another step."""
        if not (inf["rg"] and inf["leaf"]):
            raise Invalid()
        errs.append("RuntimeError")

    def step_write(self, nograd):
        rng = self.rng
        t = self.pick()
        a = self.env[t]
        inf = self.info[t]
        tdt = inf["dtype"]
        isfloat = tdt in FLOATS
        ops = ["add_", "sub_", "mul_", "fill_", "zero_", "copy_", "setitem", "setitem+=", "+=", "-=", "*="]
        if isfloat:
            ops += ["div_", "/=", "clamp_"]
        opn = str(rng.choice(ops))
        errs, may = [], None
        grad_on = not nograd
        if X.overlaps(a) and opn not in ("setitem", "setitem+=", "fill_", "zero_"):
            # torch: "more than one element of the written-to tensor refers to a single memory
            # location" (one value, fill_ and zero_, is fine)
            errs.append("RuntimeError")
        step = dict(op=opn, target=t, nograd=nograd, wroot=inf["root"])
        if grad_on and not inf["rg"] and inf.get("vb_rg"):
            errs.append("RuntimeError")  # a view made under no_grad of a tensor requiring grad
        if opn in ("zero_", "clamp_", "fill_"):
            if grad_on and inf["rg"]:
                self.recorded(inf, errs)
            if opn == "zero_":
                vsrc, nsrc = f"{t}.zero_()", f"X.write({t}, 0)"
            elif opn == "clamp_":
                lo = float(np.round(rng.uniform(-2, 0.5), 2)) if rng.random() < 0.8 else None
                hi = float(np.round(rng.uniform(-0.5, 2), 2)) if rng.random() < 0.8 or lo is None else None
                args = ", ".join(([f"min={lo!r}"] if lo is not None else []) + ([f"max={hi!r}"] if hi is not None else []))
                vsrc, nsrc = f"{t}.clamp_({args})", f"X.clamp({t}, {lo!r}, {hi!r})"
            else:
                v = _pyval(rng, tdt)
                vsrc, nsrc = f"{t}.fill_({v!r})", f"X.write({t}, {v!r})"
            return self.finish(step, vsrc, nsrc, errs, may)
        if opn in ("setitem", "setitem+="):
            return self.step_setitem(step, t, a, inf, errs, grad_on)
        osrc, onp, odt, ond, org, oroot, scalar = self.operand(t, allow_scalar=opn != "copy_")
        ob = self.env[onp] if not scalar else None
        if oroot is not None and oroot == inf["root"]:
            may = "RuntimeError"  # torch refuses some partial overlaps of input and output
        out_dt = tdt if scalar else D.result_type((tdt, a.ndim), (odt, ond))
        if opn == "copy_" and ond == 0:
            need(not X.overlaps(a))  # torch refuses, vkml writes the one value: not compared
        if opn in ("div_", "/="):
            out_dt = D.float_of(out_dt)
            need(scalar and abs(float(osrc)) >= 0.25 or not scalar and D.amin_abs(ob) >= 0.25)
        fits = scalar or D._bcast_into(ob.shape, a.shape)
        if opn in ("+=", "-=", "*=", "/="):  # the methods' writes, as torch's
            if grad_on and (inf["rg"] or org):
                self.recorded(inf, errs)
            vsrc = f"{t} {opn} {osrc}"
            nsrc = f"X.iop({t}, {self.BIN[opn]}, {onp})"
        elif opn == "copy_":
            if grad_on and (inf["rg"] or org):
                self.recorded(inf, errs)
            vsrc, nsrc = f"{t}.copy_({osrc})", f"X.write({t}, {onp})"
            out_dt = tdt
        else:
            if grad_on and (inf["rg"] or org):
                self.recorded(inf, errs)
            alpha = None
            if opn == "add_" and rng.random() < 0.3 and out_dt in FLOATS and (scalar or odt in FLOATS):
                alpha = float(rng.choice([2.0, -0.5, 1.5]))
            vsrc = f"{t}.{opn}({osrc}" + (f", alpha={alpha!r})" if alpha is not None else ")")
            nsrc = f"X.iop({t}, {self.BIN[opn]}, {onp}" + (f", {alpha!r})" if alpha is not None else ")")
        if out_dt in FLOATS and tdt not in FLOATS:
            errs.append("DTypeError|RuntimeError")
        if not fits:
            errs.append("ShapeError|RuntimeError")
        return self.finish(step, vsrc, nsrc, errs, may)

    def step_setitem(self, step, t, a, inf, errs, grad_on):
        rng = self.rng
        need(a.ndim >= 1)
        if rng.random() < 0.5:
            isrc, comps = _basic_index(rng, a)
            vsrc_idx = isrc
        else:
            comps, srcs, vsrcs = [], [], []
            for d in range(int(rng.integers(1, a.ndim + 1))):
                v, s, vs = D._index_component(rng, a, d)
                comps.append(v)
                srcs.append(s)
                vsrcs.append(vs)
            comps = tuple(comps)
            isrc, vsrc_idx = ", ".join(srcs), ", ".join(vsrcs)
        try:
            sel = R.index(a, comps)
            pos = R.index(np.arange(a.size).reshape(a.shape), comps)
        except (IndexError, ValueError):
            raise Invalid()
        unique = len(np.unique(pos)) == pos.size
        basic = all(c is None or c is Ellipsis or isinstance(c, (int, slice)) for c in comps)
        if basic and X.overlaps(sel):  # torch: copy_ into a region whose elements share memory
            errs.append("RuntimeError")
        r = rng.random()
        tdt = inf["dtype"]
        org = False
        if r < 0.4 or not unique or (not basic and X.overlaps(a)):
            # (an advanced index into shared memory writes some elements twice: one value only)
            need(step["op"] == "setitem" or basic or not X.overlaps(a))
            v = _pyval(rng, tdt)
            vsrc = nsrc_v = repr(v)
            vdt = tdt
        else:
            shape = list(sel.shape)[int(rng.integers(0, sel.ndim + 1)):] if rng.random() < 0.5 else list(sel.shape)
            shape = [1 if rng.random() < 0.2 else s for s in shape]
            vdt = tdt if rng.random() < 0.7 else self.leaf_dtype()
            org = vdt in FLOATS and rng.random() < 0.1
            vsrc = nsrc_v = self.add_leaf(shape, vdt, org)
        if grad_on and (inf["rg"] or org):
            self.recorded(inf, errs)
        if step["op"] == "setitem":
            vs = f"{t}[{vsrc_idx}] = {vsrc}"
            ns = f"X.setitem({t}, ({isrc},), {nsrc_v})"
        else:
            # t[idx] += v is tmp = t[idx]; tmp += v; t[idx] = tmp: tmp keeps t's dtype
            if vsrc in self.env and D.promote(tdt, vdt) in FLOATS and tdt not in FLOATS:
                errs.append("DTypeError|RuntimeError")
            need(unique)
            vs = f"{t}[{vsrc_idx}] += {vsrc}"
            ns = f"X.iadd_index({t}, ({isrc},), {nsrc_v})"
        vshape = np.shape(self.env[vsrc]) if vsrc in self.env else ()
        if not D._bcast_into(vshape, sel.shape):
            errs.append("ShapeError|RuntimeError")
        return self.finish(step, vs, ns, errs, None)

    def finish(self, step, vsrc, nsrc, errs, may):
        names = []
        for e in errs:
            for n in e.split("|"):
                if n not in names:
                    names.append(n)
        step.update(vk=vsrc, np=None if names else nsrc, err="|".join(names) or None, may_err=may)
        self.emit(step)

    # ---- programs ------------------------------------------------------------------------

    REC = {"mul": ("{0} * {1}", "{0} * {1}"), "div": ("{0} / {1}", "{0} / {1}"),
           "add": ("{0} + {1}", "{0} + {1}"), "sin": ("{0}.sin()", "np.sin({0})"),
           "exp": ("{0}.exp()", "np.exp({0})"), "tanh": ("{0}.tanh()", "np.tanh({0})"),
           "sigmoid": ("vk.sigmoid({0})", "R.sigmoid({0})")}

    def step_rec(self, nograd):
        """A recorded op on a value that requires grad (grad programs)."""
        rng = self.rng
        name = str(rng.choice(list(self.REC)))
        a = self.pick(lambda n: self.info[n]["rg"])
        need(a is not None and not nograd)
        ins = [a]
        if "{1}" in self.REC[name][0]:
            b = self.pick(lambda n: D._bcast_ok(self.env[n].shape, self.env[a].shape))
            ins.append(b)
            if rng.random() < 0.5:
                ins.reverse()
        arrs = [self.env[n] for n in ins]
        need(int(np.prod(np.broadcast_shapes(*[x.shape for x in arrs]))) <= 48)
        if name == "div":
            need(D.amin_abs(arrs[1]) >= 0.25)
        if name == "exp":
            need(np.all(arrs[0] < 4))
        out = self.new_name()
        rgs = [self.info[n]["rg"] for n in ins]
        rec = dict(ins=ins, parents=[self.info[n]["root"] for n in ins], saved=_saved(name, rgs), out=out,
                   uses_out=_uses_out(name))
        vsrc, nsrc = (src.format(*ins) for src in self.REC[name])
        self.emit(dict(vk=f"{out} = {vsrc}", np=f"{out} = {nsrc}", op=name, new=out, rg={out: True},
                       nograd=False, root=out, rec=rec))
        self.info[out] = dict(root=out, rg=True, leaf=False, dtype="float64")

    def generate(self):
        rng = self.rng
        grad = self.mode == "grad"
        if grad:
            self.leaf_dtype = lambda: "float64"
            self.shape = lambda: [int(v) for v in D.random_shape(self.rng, "grad")]
        for k in range(int(rng.integers(1, 4)) + grad):
            dt = self.leaf_dtype()
            self.add_leaf(self.shape(), dt, dt in FLOATS and (rng.random() < 0.25 or grad and k == 0))
        for _ in range(int(rng.integers(3, 11))):
            for _attempt in range(20):
                nl, ns, info, n_new = len(self.leaves), len(self.steps), dict(self.info), self.n_new
                nograd = bool(rng.random() < 0.2)
                try:
                    r = rng.random()
                    # values: 30% views, 10% fresh tensors, 60% writes; grad programs: 35%
                    # recorded ops first, then 10% views, 5% fresh tensors, 50% writes
                    r = r if not grad else r - 0.35 if r >= 0.35 else -1.0
                    if r < 0:
                        self.step_rec(nograd)
                    elif r < (0.1 if grad else 0.3):
                        self.step_view(nograd)
                    elif r < (0.15 if grad else 0.4):
                        self.step_fresh(nograd)
                    else:
                        self.step_write(nograd)
                    break
                except Invalid:
                    # roll back (replaying the numpy side re-links the views)
                    del self.leaves[nl:]
                    del self.steps[ns:]
                    self.info, self.n_new = info, n_new
                    self.env = self.replay()
        return dict(seed=self.seed, program="inplace", mode=self.mode, leaves=self.leaves, steps=self.steps)

    def replay(self):
        env = {"np": np, "X": X, "R": R, "outs": []}
        for i, spec in enumerate(self.leaves):
            env[f"x{i}"] = leaf_array(spec)
        for st in self.steps:
            if st.get("np"):
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec(compile_src(st["np"]), env)
        return env


def _saved(op, rgs):
    """Which inputs the rule reads in backward (a write to them after recording must raise):
    torch's saved tensors, which vkml's read sets (ops/reads.cpp) match."""
    if op in ("mul", "*"):
        return [rgs[1], rgs[0]]
    if op in ("div", "/"):
        return [rgs[1], rgs[0] or rgs[1]]
    if op == "sin":
        return [True]
    return [False] * len(rgs)


def _uses_out(op):
    """Whether the rule reads the op's output."""
    return op in ("exp", "tanh", "sigmoid")


def leaf_array(spec):
    return np.array(spec["data"], dtype=NP_DT[spec["dtype"]]).reshape(tuple(spec["shape"]))


# ---------------------------------------------------------------------------------------------
# inplace: running


def vk_stmt(st):
    return "with vk.no_grad():\n    " + st["vk"] if st.get("nograd") else st["vk"]


def _np_env(prog):
    env = {"np": np, "X": X, "R": R}
    for i, spec in enumerate(prog["leaves"]):
        env[f"x{i}"] = leaf_array(spec)
    return env


def _exec_np(src, env):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile_src(src), env)


def _compare_values(prog, k, names, ns, env, rg):
    st = prog["steps"][k] if k >= 0 else dict(op="leaf", vk="")
    arrays = [np.asarray(env[n]) for n in names]
    scale = max([float(np.max(np.abs(a.astype(np.float64)), initial=0)) for a in arrays] + [1.0])
    for n, ref in zip(names, arrays):
        t = ns.get(n)
        if not isinstance(t, vkml().Tensor):
            raise Failure("type", st["op"], f"after `{st['vk']}`: {n} is {type(t).__name__}")
        dt = D.vk_dtype_name(t)
        want = {"f": "float", "i": "int"}.get(ref.dtype.kind, "bool") + str(8 * ref.dtype.itemsize)
        want = "bool" if ref.dtype == np.bool_ else want
        if dt != want:
            raise Failure("dtype", st["op"], f"after `{st['vk']}`: {n} has dtype {dt}, numpy {want}")
        if bool(t.requires_grad) != rg[n]:
            raise Failure("requires_grad", st["op"],
                          f"after `{st['vk']}`: {n}.requires_grad is {t.requires_grad}, expected {rg[n]}")
        bad = close_msg(np_of(t), ref, dt, scale)
        if bad:
            raise Failure("value", st["op"], f"after `{st['vk']}`: {n}: {bad}")


def run_inplace(prog):
    """Runs both sides step by step; returns (status of the gradient check, op names)."""
    vk = vkml()
    ns = {"vk": vk, "np": np, "outs": [], "leaves": []}
    env = _np_env(prog)
    names, rg = [], {}
    for i, spec in enumerate(prog["leaves"]):
        n = f"x{i}"
        ns[n] = vk.tensor(env[n].copy(), requires_grad=bool(spec.get("grad")))
        ns["leaves"].append(ns[n])  # (an operator may rebind the name: x0 += y)
        names.append(n)
        rg[n] = bool(spec.get("grad"))
    _compare_values(prog, -1, names, ns, env, rg)
    versions, nodes, outs_np, deltas, producer = {}, [], [], {}, {}
    for k, st in enumerate(prog["steps"]):
        before = None
        if st.get("target") and st.get("np") and st.get("wroot"):
            before = np.array(env[st["target"]], dtype=np.float64, copy=True)
        try:
            run_src(vk_stmt(st), ns)
        except Exception as ex:  # noqa: BLE001
            if st.get("err") and isinstance(ex, exc_types(st["err"])):
                _compare_values(prog, k, names, ns, env, rg)  # nothing may have changed
                continue
            if st.get("may_err") and isinstance(ex, exc_types(st["may_err"])):
                return "stopped", [s["op"] for s in prog["steps"][:k + 1]]
            if st.get("err"):
                raise Failure("wrong-exception", st["op"],
                              f"`{st['vk']}` raised {type(ex).__name__}: {ex} (expected {st['err']})")
            raise Failure("exception", st["op"], f"`{st['vk']}` raised {type(ex).__name__}: {ex}")
        if st.get("err"):
            raise Failure("no-exception", st["op"], f"`{st['vk']}` did not raise {st['err']}")
        _exec_np(st["np"], env)
        if st.get("new") and st["new"] not in names:
            names.append(st["new"])
        rg.update(st.get("rg") or {})
        if before is not None:  # a write: the storage's version moves
            versions[st["wroot"]] = versions.get(st["wroot"], 0) + 1
            deltas[k] = np.asarray(env[st["target"]], dtype=np.float64) - before
        if st.get("rec"):
            r = st["rec"]
            nodes.append(dict(k=k, op=st["op"], label=_label(ns[st["new"]]),
                              inputs=[producer[n] for n in r.get("ins", []) if n in producer],
                              parents=[(p, versions.get(p, 0), s) for p, s in zip(r["parents"], r["saved"])
                                       if p is not None],
                              out=(r["out"], versions.get(r["out"], 0)), uses_out=r["uses_out"]))
            producer[st["new"]] = len(nodes) - 1
            ns["outs"].append(ns[st["new"]])
            outs_np.append(np.array(env[st["new"]], dtype=np.float64, copy=True))
        _compare_values(prog, k, names, ns, env, rg)
    ops = [s["op"] for s in prog["steps"]]
    if prog.get("mode") != "grad":
        return "values", ops
    return check_version_backward(prog, ns, nodes, versions, outs_np, deltas), ops


def check_version_backward(prog, ns, nodes, versions, outs_np, deltas):
    """Backward after the writes: the version counter's verdict, or the numpy gradient."""
    vk = vkml()
    changed = lambda root, v: versions.get(root, 0) != v  # noqa: E731
    # the nodes backward walks: the non-empty outputs (the roots) and what they were made from
    reach, stack = set(), [i for i, o in enumerate(outs_np) if o.size]
    while stack:
        i = stack.pop()
        if i not in reach:
            reach.add(i)
            stack.extend(nodes[i]["inputs"])
    strict, loose = [], []
    for nd in (nodes[i] for i in sorted(reach)):
        hit_saved = any(s and changed(p, v) for p, v, s in nd["parents"])
        hit_out = changed(*nd["out"])
        hit_any = hit_saved or hit_out or any(changed(p, v) for p, v, _ in nd["parents"])
        if hit_saved or (hit_out and nd["uses_out"]):
            strict.append(nd)
        if hit_any:
            loose.append(nd)
    labels = {_norm(nd["label"]) for nd in loose} | {"expand"}
    roots = [i for i, o in enumerate(outs_np) if o.size]
    grad_leaves = [i for i, l in enumerate(prog["leaves"]) if l.get("grad")]
    if not roots or not grad_leaves:
        return "no-roots"
    rng = np.random.default_rng([prog.get("seed", 0), 98])
    weights = [np.round(rng.uniform(-1, 1, size=outs_np[i].shape), 3) for i in roots]
    try:
        vk.autograd.backward([ns["outs"][i] for i in roots], [vk.tensor(w) for w in weights])
    except RuntimeError as ex:
        msg = str(ex)
        if loose and any(lb in _norm(msg) for lb in labels):
            return "raised"
        raise Failure("backward-exception", "backward",
                      f"RuntimeError: {msg} (overwritten after recording: "
                      f"{sorted(nd['label'] for nd in loose) or 'nothing'})")
    except Exception as ex:  # noqa: BLE001
        raise Failure("backward-exception", "backward", f"{type(ex).__name__}: {ex}")
    if strict:
        nd = strict[0]
        raise Failure("no-exception", nd["op"],
                      f"backward did not raise although a tensor that {nd['label']} (step {nd['k']}) "
                      f"reads in backward was overwritten in place after it was recorded")
    fd = _inplace_fd(prog, roots, weights, deltas, grad_leaves)
    for i, (g_fd, err) in zip(grad_leaves, fd):
        t = ns["leaves"][i]
        got = np.zeros(g_fd.shape) if t.grad is None else np_of(t.grad).astype(np.float64)
        tol = 1e-6 + 1e-5 * np.abs(g_fd) + 20 * err
        bad = ~(np.abs(got - g_fd) <= tol)
        if bad.any():
            j = tuple(np.argwhere(bad)[0])
            raise Failure("grad", "backward", f"x{i}.grad{list(j)} = {got[j]!r}, finite differences of the "
                          f"numpy program give {g_fd[j]!r} ({int(bad.sum())} of {g_fd.size} differ)")
    return "ok"


def _inplace_loss(prog, roots, weights, deltas, leaf, idx, step):
    """The loss of the numpy program with leaf[idx] moved by step. Writes are replayed as the
    constant changes they made (autograd does not see them: they happen under no_grad, or to
    tensors that do not require grad)."""
    env = _np_env(prog)
    env[f"x{leaf}"][idx] += step
    outs = []
    for k, st in enumerate(prog["steps"]):
        if st.get("err"):
            continue
        if k in deltas:
            t = env[st["target"]]
            np.copyto(t, t + deltas[k], casting="unsafe")
            continue
        _exec_np(st["np"], env)
        if st.get("rec"):
            outs.append(np.asarray(env[st["new"]], dtype=np.float64))
    return sum(float(np.sum(outs[i] * w)) for i, w in zip(roots, weights))


def _inplace_fd(prog, roots, weights, deltas, grad_leaves, h=1e-6):
    res = []
    for li in grad_leaves:
        shape = tuple(prog["leaves"][li]["shape"])
        g, e = np.zeros(shape), np.zeros(shape)
        for idx in np.ndindex(*shape):
            est = [(_inplace_loss(prog, roots, weights, deltas, li, idx, s)
                    - _inplace_loss(prog, roots, weights, deltas, li, idx, -s)) / (2 * s) for s in (h, 2 * h)]
            g[idx], e[idx] = est[0], abs(est[0] - est[1])
        res.append((g, e))
    return res


def _label(t):
    """The op that made t, as vkml's own messages spell it (grad_fn MulBackward -> mul)."""
    fn = t.grad_fn
    if fn is None:
        return "leaf"
    return fn.name[:-len("Backward")] if fn.name.endswith("Backward") else fn.name


def _norm(s):
    return s.replace("_", "").lower()
