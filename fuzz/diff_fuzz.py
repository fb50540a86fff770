#!/usr/bin/env python3
"""Differential fuzzer for vkml: random straight-line programs checked against numpy.

A program is a few leaf tensors (random shapes up to rank 4, dims of 0..4, float32/float64 and
int64/int32/bool inputs) followed by 1-8 ops drawn from OPS below (elementwise math, arithmetic
with broadcasting and Python/numpy scalars, comparisons, where/masked_fill/clamp, casts,
reductions, softmax, shape ops, indexing, cat/stack/pad/flip, index_select/gather/scatter_add,
matmul, creation, and nn.functional: linear, conv2d, pools, unfold/fold, layer_norm, losses,
embedding, one_hot, scaled_dot_product_attention). Every op has a vkml expression and a numpy
reference expression; the program is run in vkml and in numpy. Programs come in four modes:
"grad" (float64, kinks avoided, gradients checked), "mixed" (all dtypes, sometimes an invalid
op that must raise its typed error), "nan" (NaN/inf inputs; NaN-ness compared) and "big"
(3k-100k elements, the multithreaded kernels). Checks:

  forward   every intermediate is compared: shape, dtype, requires_grad and values. Values are
            compared with a tolerance computed per element by noise injection: the numpy
            reference is re-run with every rounding op's output (and every continuous leaf)
            perturbed by a few ulps of its dtype, and the spread of those runs (plus a few
            ulps) is the tolerance; int/bool elements whose reference flips under that noise are
            not compared (they are at a rounding boundary).
  dtype     the expected dtype follows vkml's documented rules (DESIGN.md "A tensor keeps its
            dtype", python/README.md, src/vkml/ops/table.cpp result_type): tensor-tensor
            promotion is PyTorch's (bool < int < float; a 0-d tensor only decides when its
            category is higher). Python/numpy scalars follow PyTorch's rule too: the scalar's
            kind (int or float, never its value) decides, and only when its category is above
            the tensor's, giving that category's default dtype (core/scalar.h result_type). So
            `int64_tensor * 2.0` is float32, `int32_tensor * 3` stays int32, `bool + 1` is
            int64; bool + bool is `or` and bool * bool `and`, a - b with a bool operand a
            RuntimeError and bool //, %, ** a NotImplementedError, as in torch. A numpy array operand takes a
            floating tensor's dtype (float32_tensor * float64_array is float32). Integer
            division gives float32; unary math on ints gives float32.
  gradient  float64 programs: backward from every differentiable intermediate with random
            weights (vk.autograd.backward(roots, weights)) and every leaf's .grad is compared to
            central differences of the numpy reference (never vkml's autograd). Inputs are kept
            away from kinks (ties of max/amax, |x| at 0, floor at integers, where-conditions
            near equality ...) by rejecting ops whose inputs are too close to one. Mixed
            programs (float32) also run backward and check each .grad's shape and dtype, and
            compare against the float64 differences with a loose tolerance.
  errors    an op the generator knows is invalid (bool arithmetic, mean of ints, a bad
            broadcast, an index out of range ...) must raise the typed error it expects
            (vk.DTypeError / vk.ShapeError / IndexError / NotImplementedError); any other
            exception is a failure, and a crash kills the worker subprocess, which the parent
            reports with its seed.

Program kinds (`--kinds`, default "ops": the programs above). fuzz/diff_fuzz_ext.py and its
modules add four more, each checked against numpy, finite differences or integer arithmetic,
never against vkml itself (their docstrings say how):

  inplace   in-place writes (add_ sub_ mul_ div_ clamp_ fill_ zero_ copy_, t[idx] = v and
            t[idx] += v with every index kind, x += y ...) on fresh tensors and on views (slices,
            select/narrow/split/unbind, transposes, unsqueeze, view, expand, detach): after
            every step every value equals the numpy program doing the same writes on numpy
            views; refused writes raise typed errors and change nothing; "version" programs
            record ops on leaves that require grad and then write into what they saved: backward
            must raise a RuntimeError naming the op (the version counter), or give the finite-
            difference gradient when nothing it needs was overwritten.
  hooks     tensor hooks on intermediates and leaves of float64 programs: an observing hook sees
            the finite-difference gradient of that value, a scaling hook scales the gradients
            upstream of it as the chain rule says, removed hooks never run, a hook may register
            another, a hook returning a wrong shape makes backward raise.
  second    autograd.grad(..., create_graph=True) then backward through sum <g, v>: H v against
            mixed second central differences of the numpy loss.
  sizes     sizes, dims and indices near and beyond int64 in creation, shape, window and index
            ops: typed errors (quickly, without allocating gigabytes) or exactly the right shape.

With several kinds a seed draws its kind from the seed, so `--kinds K --minimize SEED`
reproduces a failure reported by a run with `--kinds K`.

Workers run the programs in subprocesses (memory-limited): a crash or a hang is reported with the
seed that was running. `--minimize SEED` shrinks a failing program (drops ops and leaves, shrinks
dims, rounds values; in-place programs drop steps, sizes programs keep the failing case) while it
fails the same way and prints a pytest function.

CLI (PYTHONPATH must reach vkml, e.g. PYTHONPATH=build/python):
  python fuzz/diff_fuzz.py --seconds 60           run until the time is up (workers in subprocesses)
  python fuzz/diff_fuzz.py --seed N --count K     run seeds N..N+K-1
  python fuzz/diff_fuzz.py --minimize SEED        shrink a failing seed, print a pytest function
  python fuzz/diff_fuzz.py --show SEED            print the program of a seed
  python fuzz/diff_fuzz.py --break ref:tanh ...   check the fuzzer itself: a wrong reference
                                                  (or grad:exp, a wrong gradient; crash:exp;
                                                  ref:inplace, scale:hooks, ref:second: a wrong
                                                  reference of those kinds; noraise:expand: a
                                                  vkml size check that does not raise)
  python fuzz/diff_fuzz.py --kinds all --seconds 600   every kind, a seed each
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time
import traceback
import warnings

import numpy as np

try:
    import vkml as vk
except ImportError:  # the parent process of --seconds does not need it
    vk = None

HERE = os.path.dirname(os.path.abspath(__file__))

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")
ORDER = ["bool", "int32", "int64", "float32", "float64"]
EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}
NP_DT = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32,
         "bool": np.bool_}


# ---------------------------------------------------------------------------------------------
# dtype rules (vkml's; see the module docstring)


def category(d):
    return 0 if d == "bool" else 1 if d in INTS else 2


def promote(a, b):
    return a if ORDER.index(a) >= ORDER.index(b) else b


def result_type(*operands):
    """PyTorch's rule (vkml's table.cpp result_type): operands are (dtype, ndim) pairs."""
    dimmed = [d for d, n in operands if n > 0]
    zero = [d for d, n in operands if n == 0]
    if not dimmed:
        r = zero[0]
        for d in zero[1:]:
            r = promote(r, d)
        return r
    r = dimmed[0]
    for d in dimmed[1:]:
        r = promote(r, d)
    if zero:
        z = zero[0]
        for d in zero[1:]:
            z = promote(z, d)
        if category(z) > category(r):
            r = z
    return r


def scalar_dtype(kind, like):
    """The dtype a Python/numpy scalar operand of `kind` ("int" or "float") takes next to a
    tensor of dtype `like`: PyTorch's rule, by kind and never by value."""
    wrapped = "float32" if kind == "float" else "int64"
    return wrapped if category(wrapped) > category(like) else like


def float_of(d):
    return d if d in FLOATS else "float32"


# ---------------------------------------------------------------------------------------------
# numpy reference helpers (R.* in the reference expressions)


class R:
    @staticmethod
    def f(x):
        return np.asarray(x, dtype=np.float64)

    @staticmethod
    def r32(x):
        """x rounded to float32 (kept in float64), unless finite differences are being taken."""
        x = np.asarray(x)
        if x.dtype.kind != "f" or R.exact64:
            return x
        with np.errstate(over="ignore"):
            return x.astype(np.float32).astype(np.float64)

    @staticmethod
    def erf(x):
        return np.vectorize(math.erf, otypes=[np.float64])(x) if np.size(x) else np.zeros(np.shape(x))

    @staticmethod
    def erfc(x):
        return np.vectorize(math.erfc, otypes=[np.float64])(x) if np.size(x) else np.zeros(np.shape(x))

    @staticmethod
    def sigmoid(x):
        x = np.asarray(x, dtype=np.float64)
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))

    @staticmethod
    def gelu(x, tanh=False):
        x = np.asarray(x, dtype=np.float64)
        if tanh:
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
        return x * 0.5 * R.erfc(-x / math.sqrt(2.0))

    @staticmethod
    def sign(x):  # NaN gives 0 (docs/ops.md)
        return np.where(np.isnan(x), 0, np.sign(x)).astype(np.asarray(x).dtype)

    @staticmethod
    def relu(x):
        x = np.asarray(x)
        return np.where(x > 0, x, np.where(np.isnan(x), x, 0)).astype(x.dtype)

    @staticmethod
    def logsumexp(x, axis, keepdims):
        x = np.asarray(x, dtype=np.float64)
        if x.size == 0:
            shape = np.sum(x, axis=axis, keepdims=keepdims).shape
            return np.full(shape, -np.inf)
        m = np.max(x, axis=axis, keepdims=True)
        ms = np.where(np.isfinite(m), m, 0.0)
        r = np.log(np.sum(np.exp(x - ms), axis=axis, keepdims=True)) + ms
        return r if keepdims else np.squeeze(r, axis=axis)

    @staticmethod
    def softmax(x, axis):
        x = np.asarray(x, dtype=np.float64)
        if x.size == 0:
            return x.copy()
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - m)
        return e / np.sum(e, axis=axis, keepdims=True)

    @staticmethod
    def log_softmax(x, axis):
        x = np.asarray(x, dtype=np.float64)
        if x.size == 0:
            return x.copy()
        y = x - np.max(x, axis=axis, keepdims=True)  # torch: an inf anywhere makes the row NaN
        return y - np.log(np.sum(np.exp(y), axis=axis, keepdims=True))

    @staticmethod
    def var(x, axis, correction, keepdims, std=False):
        x = np.asarray(x, dtype=np.float64)
        n = x.size if axis is None else int(np.prod([x.shape[a] for a in axis]))
        mean = np.sum(x, axis=axis, keepdims=True) / n if n else np.sum(x, axis=axis, keepdims=True) * np.nan
        s = np.sum((x - mean) ** 2, axis=axis, keepdims=keepdims)
        v = s / max(0, n - correction)
        return np.sqrt(v) if std else v

    @staticmethod
    def mean(x, axis, keepdims):
        x = np.asarray(x, dtype=np.float64)
        n = x.size if axis is None else int(np.prod([x.shape[a] for a in axis]))
        s = np.sum(x, axis=axis, keepdims=keepdims)
        return s / n if n else s * np.nan

    @staticmethod
    def pad(x, widths, value):
        """torch.nn.functional.pad (constant): widths are (before, after) pairs from the last dim;
        negative widths crop."""
        x = np.asarray(x)
        nd = x.ndim
        pw = [(0, 0)] * nd
        for i in range(len(widths) // 2):
            pw[nd - 1 - i] = (widths[2 * i], widths[2 * i + 1])
        crop = tuple(slice(max(0, -b), x.shape[d] - max(0, -a)) for d, (b, a) in enumerate(pw))
        x = x[crop]
        return np.pad(x, [(max(0, b), max(0, a)) for b, a in pw], constant_values=value)

    @staticmethod
    def index(x, idx):
        """torch's indexing: ints select first, then the remaining (advanced) indices as numpy."""
        x = np.asarray(x)
        if any(i is Ellipsis for i in idx):  # spelled out: an Ellipsis over 0 dims separates nothing
            used = sum(i.ndim if isinstance(i, np.ndarray) and i.dtype == np.bool_ else 0 if i is None
                       or i is Ellipsis else 1 for i in idx)
            k = idx.index(Ellipsis)
            idx = tuple(idx[:k]) + (slice(None),) * (x.ndim - used) + tuple(idx[k + 1:])
        has_int = any(isinstance(i, int) for i in idx)
        has_adv = any(isinstance(i, (list, np.ndarray)) for i in idx)
        if not (has_int and has_adv):
            return x[tuple(np.asarray(i) if isinstance(i, list) else i for i in idx)]
        first, rest = [], []
        for i in idx:
            if isinstance(i, int):
                first.append(i)
            elif i is None:
                rest.append(None)
            elif i is Ellipsis:
                first.append(Ellipsis)
                rest.append(Ellipsis)
            elif isinstance(i, np.ndarray) and i.dtype == np.bool_:
                first.extend([slice(None)] * i.ndim)
                rest.append(i)
            else:
                first.append(slice(None))
                rest.append(np.asarray(i) if isinstance(i, list) else i)
        return x[tuple(first)][tuple(rest)]

    @staticmethod
    def gather(x, dim, index):
        x = np.asarray(x)  # torch.gather: index may be smaller than x in the other dims
        x = x[tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(index.shape))]
        return np.take_along_axis(x, index, axis=dim)

    @staticmethod
    def scatter_add(base, dim, index, src):
        out = np.array(base, copy=True)
        src = np.asarray(src)
        for p in np.ndindex(*index.shape):
            q = list(p)
            q[dim] = index[p]
            out[tuple(q)] += src[p]
        return out

    @staticmethod
    def index_add(x, dim, index, src, alpha):
        out = np.array(x, copy=True)
        src = np.moveaxis(np.asarray(src), dim, 0)
        o = np.moveaxis(out, dim, 0)
        for k, i in enumerate(index):
            o[i] += alpha * src[k]
        return out

    @staticmethod
    def cat(xs, dim):
        xs = [np.asarray(x) for x in xs]
        keep = [x for x in xs if not (x.ndim == 1 and x.shape[0] == 0)]
        if not keep:
            return xs[0]
        return np.concatenate(keep, axis=dim)

    @staticmethod
    def amax(x, axis, keepdims):
        return np.max(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def amin(x, axis, keepdims):
        return np.min(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def argmax(x, axis, keepdims, mn=False):
        x = np.asarray(x)
        f = np.argmin if mn else np.argmax
        if x.dtype.kind == "f" and np.isnan(x).any():  # the first NaN wins (docs/ops.md)
            nan = np.isnan(x)
            r = f(np.where(nan, -np.inf if not mn else np.inf, x), axis=axis)
            first_nan = np.argmax(nan, axis=axis)
            r = np.where(np.any(nan, axis=axis), first_nan, r)
        else:
            r = f(x, axis=axis)
        r = np.asarray(r, dtype=np.int64)
        if keepdims:
            r = np.expand_dims(r, axis) if axis is not None else r.reshape((1,) * x.ndim)
        return r

    @staticmethod
    def maxdim(x, dim, keepdim, mn=False, which=0):
        x = np.asarray(x)
        idx = R.argmax(x, dim, True, mn)
        vals = np.take_along_axis(x, idx, axis=dim)
        if not keepdim:
            idx, vals = np.squeeze(idx, dim), np.squeeze(vals, dim)
        return vals if which == 0 else idx

    exact64 = False  # set while computing finite differences: float32 casts do not round

    @staticmethod
    def cast(x, dt):
        x = np.asarray(x)
        if dt == "float32" and R.exact64:
            return x.astype(np.float64)
        if dt == "bool":
            return x != 0
        if dt in INTS and x.dtype.kind == "f":
            return np.trunc(x).astype(np.int64)
        return x.astype(NP_DT[dt])

    @staticmethod
    def clamp(x, lo, hi):
        x = np.asarray(x)
        r = x
        if lo is not None:
            r = np.where(np.isnan(r), r, np.maximum(r, lo))
        if hi is not None:
            r = np.where(np.isnan(r), r, np.minimum(r, hi))
        return r

    @staticmethod
    def matmul(a, b):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind == "f" or b.dtype.kind == "f":
            a, b = a.astype(np.float64), b.astype(np.float64)
        return np.matmul(a, b)

    @staticmethod
    def ipow(a, b):
        """Integer power (exact, wrapping), b >= 0."""
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
        with np.errstate(over="ignore"):
            return np.power(a, b)

    @staticmethod
    def prod(x, axis, keepdims):
        x = np.asarray(x)
        if x.dtype.kind in "biu":
            with np.errstate(over="ignore"):
                return np.prod(x.astype(np.int64), axis=axis, keepdims=keepdims)
        return np.prod(x, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------------------------
# program representation


class Val:
    """A value of a program during instantiation: its reference array and what vkml should give."""

    __slots__ = ("name", "ref", "dtype", "grad", "exact")

    def __init__(self, name, ref, dtype, grad, exact=False):
        self.name, self.ref, self.dtype, self.grad, self.exact = name, ref, dtype, grad, exact

    @property
    def shape(self):
        return self.ref.shape

    @property
    def ndim(self):
        return self.ref.ndim

    @property
    def isfloat(self):
        return self.dtype in FLOATS


class Emit:
    """What an op builder returns: vkml source, numpy source, expected dtype/grad/error."""

    def __init__(self, vk_src, np_src, dtype, grad=None, err=None, margin=math.inf, exact=False,
                 table=(), env=None, nan_ok=True, mult=1.0):
        self.vk_src, self.np_src, self.dtype, self.grad = vk_src, np_src, dtype, grad
        self.mult = mult
        self.err, self.margin, self.exact, self.table = err, margin, exact, tuple(table)
        self.env = env or {}
        self.nan_ok = nan_ok


class Invalid(Exception):
    """The op does not apply to these inputs (the generator draws another)."""


def lit(a):
    """Python source for a constant (numpy array or scalar)."""
    if isinstance(a, np.ndarray):
        return arr_src(a)
    if isinstance(a, float):
        return repr(a) if math.isfinite(a) else f"float({str(a)!r})"
    return repr(a)


def _rand_float_array(rng, shape, kind):
    if kind == "pos":
        a = rng.uniform(0.2, 2.0, size=shape)
    elif kind == "wide":
        a = rng.uniform(-6.0, 6.0, size=shape)
    elif kind == "intvals":
        a = rng.integers(-3, 4, size=shape).astype(np.float64) * rng.choice([1.0, 0.5])
    elif kind == "special":
        a = rng.uniform(-2.0, 2.0, size=shape)
        if a.size:
            n = rng.integers(1, max(2, a.size // 2) + 1)
            pos = rng.choice(a.size, size=min(n, a.size), replace=False)
            a.reshape(-1)[pos] = rng.choice([np.nan, np.inf, -np.inf, 0.0], size=pos.size)
    else:
        a = rng.uniform(-2.0, 2.0, size=shape)
    return a


def make_leaf_array(spec):
    rng = np.random.default_rng(spec["seed"])
    shape, dt, kind = tuple(spec["shape"]), spec["dtype"], spec.get("kind", "normal")
    if "data" in spec:
        return np.array(spec["data"], dtype=NP_DT[dt]).reshape(shape)
    if dt == "bool":
        a = rng.random(size=shape) < 0.5
    elif dt in INTS:
        a = rng.integers(-4, 5, size=shape).astype(NP_DT[dt])
    else:
        a = _rand_float_array(rng, shape, kind).astype(NP_DT[dt])
        if spec.get("round"):
            a = np.round(a.astype(np.float64), spec["round"]).astype(NP_DT[dt])
    return np.array(a, copy=True, order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)


# ---------------------------------------------------------------------------------------------
# op builders: f(rng, ins, mode) -> Emit (raise Invalid when the op does not apply)
#
# ins are Vals; the sources use {0}, {1}, ... for the inputs' names. mode is "grad" (float64,
# gradient checked: avoid kinks), "mixed" or "nan" (special values: no domain restrictions).

OPS = {}


def op(name, arity=1, nan_ok=True, grad_ok=True, weight=1.0, table=None, prep=None):
    """Register an op builder. prep(gen, rng, first) -> input refs, for ops whose inputs must be
    shaped for them (it may add leaves); rng is seeded like the builder's."""
    def deco(f):
        OPS[name] = dict(f=f, arity=arity, nan_ok=nan_ok, grad_ok=grad_ok, weight=weight,
                         table=tuple(table if table is not None else (name,)), prep=prep)
        return f
    return deco


def fin(a):
    a = np.asarray(a)
    return a[np.isfinite(a)] if a.dtype.kind == "f" else a


def amin_abs(a):
    a = fin(a)
    return float(np.min(np.abs(a))) if a.size else math.inf


def need(cond):
    if not cond:
        raise Invalid()


def call_form(rng, fn, x, args=""):
    """vk.fn(x, args) or x.fn(args)."""
    if rng.random() < 0.5:
        return f"vk.{fn}({x}{', ' + args if args else ''})"
    return f"{x}.{fn}({args})"


def _unary(name, np_src, domain=None, int_ok=True, bool_ok=True, to_float=True, kink=None,
           exact=False, nan_ok=True, table=None):
    def build(rng, ins, mode):
        (x,) = ins
        if x.dtype == "bool" and not bool_ok:
            need(mode == "mixed" and rng.random() < 0.3)
            return Emit(call_form(rng, name, "{0}"), None, None, err="DTypeError")
        if x.dtype in INTS and not int_ok:
            raise Invalid()
        if domain is not None and mode != "nan":
            need(x.ref.size == 0 or domain(x.ref.astype(np.float64)))
        out = float_of(x.dtype) if to_float else x.dtype
        margin = kink(x.ref) if (kink and x.isfloat) else math.inf
        return Emit(call_form(rng, name, "{0}"), np_src.format("R.f({0})") if to_float else np_src, out,
                    margin=margin,
                    exact=exact or not x.isfloat and not to_float)
    op(name, nan_ok=nan_ok, table=table)(build)


def _bounded(lo=-math.inf, hi=math.inf):
    return lambda a: bool(np.all(a > lo) and np.all(a < hi))


_unary("exp", "np.exp({0})", _bounded(hi=8.0))
_unary("log", "np.log({0})", _bounded(lo=0.05))
_unary("log1p", "np.log1p({0})", _bounded(lo=-0.9))
_unary("expm1", "np.expm1({0})", _bounded(hi=8.0))
_unary("sqrt", "np.sqrt({0})", _bounded(lo=0.05))
_unary("rsqrt", "1.0 / np.sqrt({0})", _bounded(lo=0.05))
_unary("reciprocal", "1.0 / {0}", lambda a: amin_abs(a) > 0.05)
_unary("sin", "np.sin({0})", _bounded(-50, 50))
_unary("cos", "np.cos({0})", _bounded(-50, 50))
_unary("tanh", "np.tanh({0})")
_unary("sigmoid", "R.sigmoid({0})")
_unary("erf", "R.erf({0})")
_unary("erfc", "R.erfc({0})")
_unary("abs", "np.abs({0})", to_float=False, bool_ok=False, kink=amin_abs, exact=True)
_unary("neg", "-{0}", to_float=False, bool_ok=False, exact=True)
_unary("sign", "R.sign({0})", to_float=False, bool_ok=False, kink=amin_abs, exact=True)
_unary("relu", "R.relu({0})", to_float=False, bool_ok=False, kink=amin_abs, exact=True)
_unary("floor", "np.floor({0})", to_float=False, bool_ok=False, exact=True,
       kink=lambda a: amin_abs(a - np.round(a)))
_unary("ceil", "np.ceil({0})", to_float=False, bool_ok=False, exact=True,
       kink=lambda a: amin_abs(a - np.round(a)))
_unary("round", "np.round({0})", to_float=False, bool_ok=False, exact=True,
       kink=lambda a: amin_abs(a - np.floor(a) - 0.5))
_unary("isnan", "np.isnan({0})", table=())
_unary("isinf", "np.isinf({0})", table=())
_unary("isfinite", "np.isfinite({0})", table=())


def _fix_bool_unary(name):  # isnan & co. return bool, accept every dtype
    f = OPS[name]["f"]

    def build(rng, ins, mode):
        e = f(rng, ins, mode)
        e.dtype, e.exact, e.margin = "bool", True, math.inf
        return e
    OPS[name]["f"] = build


for _n in ("isnan", "isinf", "isfinite"):
    _fix_bool_unary(_n)


@op("neg_op", table=("neg",))
def b_neg_op(rng, ins, mode):
    (x,) = ins
    if x.dtype == "bool":
        need(mode == "mixed" and rng.random() < 0.3)
        return Emit("-{0}", None, None, err="DTypeError")
    return Emit("-{0}", "-{0}", x.dtype, exact=True)


@op("square", table=("mul",))
def b_square(rng, ins, mode):
    (x,) = ins
    if x.dtype == "bool":  # torch's square is pow(x, 2): int64, no error (seed 5336)
        need(mode == "mixed" and rng.random() < 0.3)  # the draws as before: the same programs
        return Emit("{0}.square()", "np.square({0}.astype(np.int64))", "int64", exact=True)
    need(x.dtype != "bool" and (mode == "nan" or x.ref.size == 0 or np.max(np.abs(fin(x.ref)), initial=0) < 1e3))
    return Emit(call_form(rng, "square", "{0}"), "np.square({0})", x.dtype, exact=not x.isfloat)


@op("gelu")
def b_gelu(rng, ins, mode):
    (x,) = ins
    need(mode != "nan")
    if rng.random() < 0.5:
        return Emit("{0}.gelu(approximate='tanh')", "R.gelu({0}, True)", float_of(x.dtype))
    return Emit(call_form(rng, "gelu", "{0}"), "R.gelu({0})", float_of(x.dtype))


# ---- binary ops ----------------------------------------------------------------------------

_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "eq": "==", "ne": "!=",
        "floor_divide": "//", "remainder": "%",
        "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_NP = {"add": "np.add", "sub": "np.subtract", "mul": "np.multiply", "div": "np.true_divide",
       "floor_divide": "np.floor_divide", "remainder": "0.0 + np.remainder",  # (a zero is +0, as torch)
       "maximum": "np.maximum", "minimum": "np.minimum", "eq": "np.equal", "ne": "np.not_equal",
       "lt": "np.less", "le": "np.less_equal", "gt": "np.greater", "ge": "np.greater_equal"}
CMP = ("eq", "ne", "lt", "le", "gt", "ge")


def _scalar(rng, x, name):
    """A Python or numpy scalar operand for op `name` next to tensor x: (value, source, kind)."""
    r = rng.random()
    if name == "pow":
        v = float(rng.choice([2.0, 3.0, 0.5, -1.0, 1.5, -0.5, 0.0, 1.0, 2]))
    elif x.dtype in INTS or x.dtype == "bool":
        v = float(rng.choice([2.0, -3.0, 0.5, 2.5, -1.5, 1.0, 0.0, 3.0]))
    elif r < 0.1:
        v = 0.0
    else:
        v = float(np.round(rng.uniform(-3, 3), 3))
    as_int = v == math.floor(v) and rng.random() < 0.5
    wrap = rng.choice(["py", "py", "py", "np64", "np32"])
    v = v + 0.0  # no -0.0
    if wrap == "py":
        src = repr(int(v)) if as_int else repr(v)
    elif wrap == "np64":
        src = f"np.int64({int(v)})" if as_int else f"np.float64({v!r})"
    else:
        src = f"np.int32({int(v)})" if as_int else f"np.float32({v!r})"
        v = float(np.float32(v))
    return v, src, "int" if as_int else "float"


def _binary(name):
    def build(rng, ins, mode):
        a = ins[0]
        b = ins[1] if len(ins) > 1 else None
        form = rng.choice(["op", "op", "fn", "method"]) if name in _SYM else rng.choice(["fn", "method"])
        scalar_side = None
        if b is None:
            scalar_side = "right" if (rng.random() < 0.75 or name in ("maximum", "minimum")) else "left"
        # operands: (dtype, ndim, np value, source)
        if scalar_side:
            v, ssrc, skind = _scalar(rng, a, name)
            sdt = scalar_dtype(skind, a.dtype)
            out = result_type((a.dtype, a.ndim), (sdt, 0))
            bval = np.asarray(v, dtype=np.float64 if sdt in FLOATS else np.int64 if sdt in INTS else np.bool_)
            if sdt == "float32":
                bval = np.asarray(np.float32(v), dtype=np.float64)
            bnp = lit(float(bval)) if bval.dtype.kind == "f" else repr(bval.item())
            if ssrc.startswith("-"):
                ssrc = f"({ssrc})"
            lhs, rhs = ("{0}", ssrc) if scalar_side == "right" else (ssrc, "{0}")
            lnp, rnp = ("{0}", bnp) if scalar_side == "right" else (bnp, "{0}")
            A, B = (a.ref, bval) if scalar_side == "right" else (bval, a.ref)
            if scalar_side == "left" and form != "op":
                form = "op" if name in _SYM else form
                if name not in _SYM:
                    raise Invalid()
        else:
            out = result_type((a.dtype, a.ndim), (b.dtype, b.ndim))
            lhs, rhs, lnp, rnp, A, B = "{0}", "{1}", "{0}", "{1}", a.ref, b.ref
        try:
            need(int(np.prod(np.broadcast_shapes(np.shape(A), np.shape(B)))) <= lim(mode, 4096))
        except ValueError:
            need(mode == "mixed")
            src = f"{lhs} {_SYM[name]} {rhs}" if name in _SYM else f"vk.{name}({lhs}, {rhs})"
            return Emit(src, None, None, err="ShapeError")
        if out == "float32":  # vkml computes in the common dtype: round the operands to it
            lnp, rnp = f"R.r32({lnp})", f"R.r32({rnp})"
        if form == "op":
            src = f"({lhs} {_SYM[name]} {rhs})"
        elif form == "fn":
            src = f"vk.{name}({lhs}, {rhs})"
        else:
            src = f"{lhs}.{name}({rhs})"
        grad_in = [v for v in ins if v.grad]
        af, bf = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
        exact = False
        margin = math.inf
        if name in CMP:
            np_src = f"{_NP[name]}({lnp}, {rnp})"
            dt = "bool"
            exact = True
            if name in ("eq", "ne") and out in FLOATS and mode != "nan" and b is not a and not (
                    a.exact and (b is None or b.exact)):
                # equality of rounded results: only where the values are clearly apart
                with np.errstate(all="ignore"):
                    close = np.abs(af - bf) <= 1e-5 * np.maximum(np.abs(af), np.abs(bf))
                need(not np.any(close))
            if grad_in:
                margin = amin_abs(af - bf)
        elif name in ("maximum", "minimum"):
            dt = out
            np_src = f"{_NP[name]}({lnp}, {rnp})"
            exact = True
            if grad_in:
                margin = amin_abs(af - bf)
        else:
            if name == "sub" and "bool" in (a.dtype, b.dtype if b is not None else None):
                need(mode == "mixed" and rng.random() < 0.3)  # any bool operand, as torch
                return Emit(src, None, None, err="RuntimeError")
            if out == "bool" and name not in ("div", "add", "mul"):  # bool + and * are or/and
                need(mode == "mixed" and rng.random() < 0.3)
                return Emit(src, None, None, err="NotImplementedError")
            if name in ("floor_divide", "remainder"):
                dt = out
                np_src = f"{_NP[name]}({lnp}, {rnp})"
                exact = out not in FLOATS
                bshape = np.broadcast_shapes(np.shape(af), np.shape(bf))
                if out not in FLOATS and np.any(np.broadcast_to(bf, bshape) == 0):
                    need(mode == "mixed")
                    return Emit(src, None, None, err="RuntimeError")
                if out in FLOATS and mode != "nan":
                    need(amin_abs(bf) > 0.05)
                    with np.errstate(all="ignore"):
                        q = af / bf
                    need(amin_abs(q - np.round(q)) > 1e-3)
            elif name == "div":
                dt = float_of(out)
                need(mode == "nan" or amin_abs(bf) > 0.05)
                np_src = f"np.true_divide(R.f({lnp}), {rnp})"
            elif name == "pow":
                dt = out
                if out in INTS:
                    need(np.all(bf >= 0) and np.all(bf <= 3) and np.all(np.abs(af) <= 6))
                    np_src = f"R.ipow({lnp}, {rnp})"
                else:
                    if mode != "nan":
                        # a scalar base (left) has the tensor as exponent: d/db needs log(base)
                        integral = np.all(bf == np.round(bf)) and b is None and scalar_side != "left"
                        if integral:
                            need(np.all(bf >= 0) or amin_abs(af) > 0.05)
                        else:
                            need(np.all(af > 0.05) or af.size == 0)
                        need(np.max(np.abs(bf), initial=0) <= 3 and np.max(np.abs(af), initial=0) < 100)
                    np_src = f"np.power(np.asarray({lnp}, dtype=np.float64), {rnp})"
            elif name == "add" and form == "fn" and rng.random() < 0.3 and out in FLOATS:
                alpha = float(rng.choice([2.0, -0.5, 1.5]))
                src = f"vk.add({lhs}, {rhs}, alpha={alpha!r})"
                np_src = f"np.add({lnp}, {alpha!r} * np.asarray({rnp}, dtype=np.float64))"
                dt = out
            else:
                dt = out
                np_src = f"{_NP[name]}({lnp}, {rnp})"
                exact = out not in FLOATS
            if mode != "nan" and out in FLOATS:
                with np.errstate(all="ignore"):
                    val = np.asarray(eval(np_src.format("A", "B").replace("{0}", "A"),
                                          {"np": np, "R": R, "A": A, "B": B}))
                need(val.size == 0 or np.all(np.abs(val) < 1e6))
        return Emit(src, np_src, dt, margin=margin, exact=exact)
    return build


for _n in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide", "remainder") + CMP:
    op(_n, arity=2)(_binary(_n))
    op(_n + "_scalar", arity=1, table=(_n,))(_binary(_n))


@op("where", arity=3)
def b_where(rng, ins, mode):
    c, a, b = ins
    need(c.dtype == "bool")
    form = rng.random()
    try:
        shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
    except ValueError:
        need(mode == "mixed")
        return Emit("vk.where({0}, {1}, {2})", None, None, err="ShapeError")
    need(int(np.prod(shape)) <= lim(mode, 4096))
    if form < 0.2:  # a scalar other
        v = float(np.round(rng.uniform(-2, 2), 2))
        sdt = scalar_dtype("float", a.dtype)
        out = result_type((a.dtype, a.ndim), (sdt, 0))
        src = f"{{1}}.where({{0}}, {v!r})" if rng.random() < 0.5 else f"vk.where({{0}}, {{1}}, {v!r})"
        vv = float(np.float32(v)) if sdt == "float32" else v
        return Emit(src, f"np.where({{0}}, {{1}}, {lit(vv)})", out, exact=True, grad=a.grad)
    out = result_type((a.dtype, a.ndim), (b.dtype, b.ndim))
    src = "vk.where({0}, {1}, {2})" if form < 0.7 else "{1}.where({0}, {2})"
    return Emit(src, "np.where({0}, {1}, {2})", out, exact=True)


@op("masked_fill", arity=2, table=("where",))
def b_masked_fill(rng, ins, mode):
    x, m = ins
    need(m.dtype == "bool")
    try:
        need(np.broadcast_shapes(x.shape, m.shape) == x.shape)
    except ValueError:
        raise Invalid()
    v = float(rng.choice([0.0, -1.5, 2.0, 7.0])) if x.dtype != "bool" else float(rng.choice([0.0, 1.0]))
    vv = v if x.dtype in FLOATS else (int(v) if x.dtype in INTS else bool(v))
    return Emit(f"{{0}}.masked_fill({{1}}, {v!r})", f"np.where({{1}}, {lit(vv)}, {{0}})", x.dtype,
                exact=True)


@op("clamp")
def b_clamp(rng, ins, mode):
    (x,) = ins
    lo = float(np.round(rng.uniform(-2, 0.5), 2)) if rng.random() < 0.8 else None
    hi = float(np.round(rng.uniform(-0.5, 2), 2)) if rng.random() < 0.8 else None
    if lo is None and hi is None:
        lo = -1.0
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    kind = "float"
    if x.dtype in INTS and rng.random() < 0.5:  # int bounds: an int tensor stays int
        lo = None if lo is None else int(math.floor(lo))
        hi = None if hi is None else int(math.ceil(hi))
        kind = "int"
    name = rng.choice(["clamp", "clip"])
    args = ", ".join(([f"min={lo!r}"] if lo is not None else []) + ([f"max={hi!r}"] if hi is not None else []))
    src = f"vk.{name}({{0}}, {args})" if rng.random() < 0.5 else f"{{0}}.{name}({args})"
    if x.dtype == "bool":
        need(False)  # (float bounds make a bool x float32; the reference clamps numbers)
    out = x.dtype
    for v in (lo, hi):
        if v is not None:
            out = result_type((out, 1), (scalar_dtype(kind, x.dtype), 0))
    margin = math.inf
    if x.isfloat and x.grad:
        margin = min(amin_abs(x.ref - lo) if lo is not None else math.inf,
                     amin_abs(x.ref - hi) if hi is not None else math.inf)
    f32 = (lambda v: float(np.float32(v))) if out == "float32" else (lambda v: v)
    return Emit(src, f"R.clamp({{0}}, {None if lo is None else f32(lo)!r}, {None if hi is None else f32(hi)!r})",
                out, margin=margin, exact=True)


@op("cast")
def b_cast(rng, ins, mode):
    (x,) = ins
    targets = ["float32", "float64", "int64", "int32", "bool"]
    if mode == "grad":
        targets = ["float64", "int64", "bool"]
    t = str(rng.choice(targets))
    if x.isfloat and t in INTS:
        a = fin(x.ref)
        need(mode != "nan" or bool(np.all(np.isfinite(x.ref))))
        need(np.max(np.abs(a), initial=0) < 1e9)
    r = rng.random()
    short = {"float32": "float", "float64": "double", "int64": "long", "int32": "int", "bool": "bool"}
    if r < 0.4:
        src = f"{{0}}.to(vk.{t if t != 'bool' else 'bool_'})"
    elif r < 0.6:
        src = f"{{0}}.to(np.{t if t != 'bool' else 'bool_'})"
    else:
        src = f"{{0}}.{short[t]}()"
    margin = math.inf
    if x.isfloat and x.grad and t in INTS:
        margin = amin_abs(x.ref - np.trunc(x.ref))
        margin = min(margin, amin_abs(x.ref - np.trunc(x.ref) - np.sign(x.ref)))
    elif x.isfloat and x.grad and t == "bool":
        margin = amin_abs(x.ref)
    return Emit(src, f"R.cast({{0}}, {t!r})", t, margin=margin, exact=True)


# ---- reductions ----------------------------------------------------------------------------


def _dims(rng, x, allow_none=True, single=False):
    """(python source of dims, numpy axis) for a reduction over x."""
    nd = x.ndim
    if nd == 0:
        r = rng.random()
        if allow_none and r < 0.5:
            return None, None
        d = int(rng.choice([0, -1]))
        return repr(d), ()
    r = rng.random()
    if allow_none and r < 0.25 and not single:
        return None, None
    if single or r < 0.7:
        d = int(rng.integers(-nd, nd))
        return repr(d), (d % nd,)
    k = int(rng.integers(1, nd + 1))
    ds = sorted(int(v) for v in rng.choice(nd, size=k, replace=False))
    ds_src = [d - nd if rng.random() < 0.3 else d for d in ds]
    return repr(tuple(ds_src)) if rng.random() < 0.7 else repr(list(ds_src)), tuple(ds)


def _axis_np(axis, nd):
    if axis is None:
        return "None"
    if nd == 0:
        return "None"
    return repr(tuple(axis))


def _reduce_common(rng, x, kind):
    dsrc, axis = _dims(rng, x, single=kind in ("maxdim", "softmax"))
    keep = bool(rng.random() < 0.4)
    return dsrc, axis, keep


def _reduced_size(x, axis):
    if axis is None or x.ndim == 0:
        return x.ref.size
    return int(np.prod([x.shape[a] for a in axis])) if axis else 1


def _reduction(name):
    def build(rng, ins, mode):
        (x,) = ins
        dsrc, axis, keep = _reduce_common(rng, x, name)
        nd = x.ndim
        args = ""
        if dsrc is not None:
            args = dsrc + (", keepdim=True" if keep else "")
        elif keep:
            keep = False
        src = call_form(rng, name, "{0}", args)
        ax = _axis_np(axis, nd)
        n = _reduced_size(x, axis)
        margin = math.inf
        exact = False
        if name == "sum":
            out = "int64" if x.dtype in INTS + ("bool",) else x.dtype
            np_src = f"np.sum({{0}}, axis={ax}, keepdims={keep})"
            exact = out == "int64"
        elif name == "mean":
            if x.dtype not in FLOATS:
                need(mode == "mixed" and rng.random() < 0.3)
                return Emit(src, None, None, err="DTypeError")
            out = x.dtype
            np_src = f"R.mean({{0}}, {ax}, {keep})"
        elif name == "prod":
            out = "int64" if x.dtype in ("bool", "int32", "int64") else x.dtype
            need(mode == "nan" or n <= 12 or x.dtype not in FLOATS)
            np_src = f"R.prod({{0}}, {ax}, {keep})"
            exact = out == "int64"
            if x.isfloat and mode != "nan":
                need(x.ref.size == 0 or np.max(np.abs(x.ref)) ** max(n, 1) < 1e6)
        elif name in ("amax", "amin"):
            if n == 0:
                need(mode == "mixed")
                return Emit(src, None, None, err="ShapeError")
            out = x.dtype
            np_src = f"R.{name}({{0}}, {ax}, {keep})"
            exact = True
            if x.isfloat and x.grad:
                margin = _tie_gap(x.ref, axis)
        elif name == "logsumexp":
            need(dsrc is not None)
            out = float_of(x.dtype)
            np_src = f"R.logsumexp({{0}}, {ax}, {keep})"
            if mode != "nan":
                need(x.ref.size == 0 or np.max(np.abs(x.ref.astype(np.float64))) < 50)
        else:
            raise AssertionError(name)
        return Emit(src, np_src, out, margin=margin, exact=exact, mult=max(2.0, float(n)))
    return build


def _tie_gap(a, axis):
    """The smallest gap between the top two (and bottom two) values within each reduced group."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return math.inf
    if axis is None or a.ndim == 0:
        flat = a.reshape(1, -1)
    else:
        keep = [d for d in range(a.ndim) if d not in axis]
        flat = np.transpose(a, keep + list(axis)).reshape(int(np.prod([a.shape[d] for d in keep])), -1)
    if flat.shape[1] < 2:
        return math.inf
    s = np.sort(flat, axis=1)
    return float(min(np.min(s[:, -1] - s[:, -2]), np.min(s[:, 1] - s[:, 0])))


for _n in ("sum", "mean", "prod", "amax", "amin", "logsumexp"):
    op(_n)(_reduction(_n))


@op("var")
def b_var(rng, ins, mode):
    (x,) = ins
    std = rng.random() < 0.3
    name = "std" if std else "var"
    dsrc, axis, keep = _reduce_common(rng, x, "var")
    corr = int(rng.choice([0, 1, 1, 2]))
    parts = []
    if dsrc is not None:
        parts.append(dsrc)
    r = rng.random()
    if r < 0.4:
        parts.append(f"correction={corr}")
    elif r < 0.7:
        parts.append(f"unbiased={bool(corr)}")
        corr = 1 if corr else 0
    else:
        corr = 1
    if keep and dsrc is not None:
        parts.append("keepdim=True")
    else:
        keep = False
    src = call_form(rng, name, "{0}", ", ".join(parts))
    if x.dtype not in FLOATS:
        need(mode == "mixed" and rng.random() < 0.3)
        return Emit(src, None, None, err="DTypeError")
    n = _reduced_size(x, axis)
    if mode == "grad":
        need(n > corr)
    ax = _axis_np(axis, x.ndim)
    margin = math.inf
    if std and x.grad and n > corr and x.ref.size:
        v = R.var(x.ref, None if axis is None or x.ndim == 0 else axis, corr, False)
        margin = float(np.min(np.asarray(v))) * 100
    mx = float(np.max(np.abs(fin(x.ref)), initial=1.0))
    mult = 4.0 * max(n, 1) * mx
    if std and x.ref.size:
        with np.errstate(all="ignore"):
            sd = np.asarray(R.var(x.ref, None if axis is None or x.ndim == 0 else axis, corr, False, True))
        sd = fin(sd)
        mult /= max(2 * float(np.min(sd, initial=1.0)), 1e-3)
    return Emit(src, f"R.var({{0}}, {ax}, {corr}, {keep}, {std})", x.dtype, margin=margin,
                table=("var",) if not std else ("var", "sqrt"), mult=mult)


@op("softmax", table=("softmax", "log_softmax", "softmax_backward", "log_softmax_backward"))
def b_softmax(rng, ins, mode):
    (x,) = ins
    need(x.ndim >= 1)
    d = int(rng.integers(-x.ndim, x.ndim))
    name = "softmax" if rng.random() < 0.5 else "log_softmax"
    r = rng.random()
    if r < 0.4:
        src = f"vk.{name}({{0}}, {d})"
    elif r < 0.8:
        src = f"{{0}}.{name}({d})"
    else:
        src = f"vk.nn.functional.{name}({{0}}, dim={d})"
    if x.dtype not in FLOATS:
        need(mode == "mixed" and rng.random() < 0.3)
        return Emit(src, None, None, err="DTypeError")
    if mode != "nan":
        need(x.ref.size == 0 or np.max(np.abs(x.ref)) < 50)
    return Emit(src, f"R.{name}({{0}}, {d % x.ndim})", x.dtype, mult=4.0)


@op("maxdim", table=("max_dim", "min_dim"))
def b_maxdim(rng, ins, mode):
    (x,) = ins
    mn = rng.random() < 0.5
    name = "min" if mn else "max"
    if x.ndim == 0 or rng.random() < 0.2:  # full reduction: values only
        need(x.ref.size > 0 or mode == "mixed")
        src = f"{{0}}.{name}()" if rng.random() < 0.5 else f"vk.{name}({{0}})"
        if x.ref.size == 0:
            return Emit(src, None, None, err="ShapeError")
        margin = _tie_gap(x.ref, None) if x.isfloat and x.grad else math.inf
        return Emit(src, f"R.amin({{0}}, None, False)" if mn else "R.amax({0}, None, False)", x.dtype,
                    margin=margin, exact=True, table=("amin" if mn else "amax",))
    d = int(rng.integers(-x.ndim, x.ndim))
    keep = bool(rng.random() < 0.4)
    which = int(rng.integers(0, 2))
    acc = rng.choice([".values", ".indices", "[0]", "[1]"][which::2])
    args = f"{d}" + (", keepdim=True" if keep else "")
    src = (f"{{0}}.{name}({args}){acc}" if rng.random() < 0.5 else f"vk.{name}({{0}}, {args}){acc}")
    if x.shape[d % x.ndim] == 0:
        need(mode == "mixed")
        return Emit(src, None, None, err="ShapeError")
    margin = _tie_gap(x.ref, (d % x.ndim,)) if x.isfloat and x.grad else math.inf
    return Emit(src, f"R.maxdim({{0}}, {d % x.ndim}, {keep}, {mn}, {which})",
                x.dtype if which == 0 else "int64", margin=margin, exact=True)


@op("argmax", table=("argmax", "argmin"))
def b_argmax(rng, ins, mode):
    (x,) = ins
    mn = rng.random() < 0.5
    name = "argmin" if mn else "argmax"
    if x.ndim == 0 or rng.random() < 0.3:
        d, keep = None, False
        src = call_form(rng, name, "{0}")
        size = x.ref.size
    else:
        d = int(rng.integers(-x.ndim, x.ndim))
        keep = bool(rng.random() < 0.4)
        src = call_form(rng, name, "{0}", f"{d}" + (", keepdim=True" if keep else ""))
        size = x.shape[d % x.ndim]
    if size == 0:
        need(mode == "mixed")
        return Emit(src, None, None, err="ShapeError")
    return Emit(src, f"R.argmax({{0}}, {None if d is None else d % x.ndim}, {keep}, {mn})", "int64",
                exact=True)


@op("anyall", table=())
def b_anyall(rng, ins, mode):
    (x,) = ins
    name = "any" if rng.random() < 0.5 else "all"
    if x.ndim and rng.random() < 0.6:
        d = int(rng.integers(-x.ndim, x.ndim))
        keep = bool(rng.random() < 0.4)
        src = call_form(rng, name, "{0}", f"{d}" + (", keepdim=True" if keep else ""))
        return Emit(src, f"np.{name}({{0}} != 0, axis={d % x.ndim}, keepdims={keep})", "bool",
                    exact=True)
    return Emit(call_form(rng, name, "{0}"), f"np.{name}({{0}} != 0)", "bool", exact=True)


# ---- shape ops -----------------------------------------------------------------------------


def _factor(rng, n, k):
    """A random shape with k dims and n elements."""
    if k == 0:
        return ()
    if n == 0:
        s = [int(rng.integers(1, 4)) for _ in range(k)]
        s[int(rng.integers(0, k))] = 0
        return tuple(s)
    dims = []
    rest = n
    for _ in range(k - 1):
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        d = int(rng.choice(divs))
        dims.append(d)
        rest //= d
    dims.append(rest)
    rng.shuffle(dims)
    return tuple(int(d) for d in dims)


@op("reshape", table=("reshape",))
def b_reshape(rng, ins, mode):
    (x,) = ins
    n = x.ref.size
    k = int(rng.integers(0 if n == 1 else 1, 5))
    if n == 0:
        k = max(k, 1)
    shape = _factor(rng, n, k)
    if rng.random() < 0.15 and mode == "mixed" and n > 1:
        bad = shape[:-1] + (shape[-1] + 1,) if shape else (n + 1,)
        return Emit(f"{{0}}.reshape({bad!r})", None, None, err="ShapeError")
    written = list(shape)
    if written and n > 0 and rng.random() < 0.3:
        written[int(rng.integers(0, len(written)))] = -1
    r = rng.random()
    if r < 0.3:
        src = f"{{0}}.reshape({', '.join(map(str, written))})" if written else "{0}.reshape(())"
    elif r < 0.5:  # view() refuses strides it cannot re-split (as torch): x may be permuted
        src = f"{{0}}.contiguous().view({tuple(written)!r})"
    elif r < 0.8:
        src = f"vk.reshape({{0}}, {tuple(written)!r})"
    else:
        src = f"{{0}}.reshape({written!r})"
    return Emit(src, f"np.reshape({{0}}, {shape!r})", x.dtype, exact=True)


@op("flatten", table=("reshape",))
def b_flatten(rng, ins, mode):
    (x,) = ins
    if x.ndim == 0:
        return Emit("{0}.flatten()", "np.reshape({0}, (1,))", x.dtype, exact=True)
    s = int(rng.integers(0, x.ndim))
    e = int(rng.integers(s, x.ndim))
    shape = x.shape[:s] + (int(np.prod(x.shape[s:e + 1])),) + x.shape[e + 1:]
    return Emit(f"vk.flatten({{0}}, {s}, {e})" if rng.random() < 0.5 else f"{{0}}.flatten({s}, {e})",
                f"np.reshape({{0}}, {shape!r})", x.dtype, exact=True)


@op("squeeze", table=("reshape",))
def b_squeeze(rng, ins, mode):
    (x,) = ins
    r = rng.random()
    if r < 0.5 or x.ndim >= 4:
        ones = [d for d in range(x.ndim) if x.shape[d] == 1]
        if ones and rng.random() < 0.7:
            d = int(rng.choice(ones))
            return Emit(f"{{0}}.squeeze({d})", f"np.squeeze({{0}}, {d})", x.dtype, exact=True)
        if x.ndim and rng.random() < 0.5:  # squeezing a dim that is not 1 is a no-op
            d = int(rng.integers(0, x.ndim))
            np_src = f"np.squeeze({{0}}, {d})" if x.shape[d] == 1 else "{0}"
            return Emit(f"vk.squeeze({{0}}, {d})", np_src, x.dtype, exact=True)
        return Emit("{0}.squeeze()", "np.squeeze({0})", x.dtype, exact=True)
    d = int(rng.integers(-x.ndim - 1, x.ndim + 1))
    return Emit(f"{{0}}.unsqueeze({d})" if rng.random() < 0.5 else f"vk.unsqueeze({{0}}, {d})",
                f"np.expand_dims({{0}}, {d % (x.ndim + 1)})", x.dtype, exact=True)


@op("permute", table=("permute",))
def b_permute(rng, ins, mode):
    (x,) = ins
    need(x.ndim >= 2 or rng.random() < 0.2)
    nd = x.ndim
    r = rng.random()
    if r < 0.45:
        p = [int(v) for v in rng.permutation(nd)]
        ps = [d - nd if rng.random() < 0.2 else d for d in p]
        src = f"{{0}}.permute({', '.join(map(str, ps))})" if rng.random() < 0.5 else f"vk.permute({{0}}, {tuple(ps)!r})"
        if mode == "mixed" and nd >= 2 and rng.random() < 0.05:
            return Emit(f"{{0}}.permute({', '.join(['0'] * nd)})", None, None, err="ShapeError")
        return Emit(src, f"np.transpose({{0}}, {tuple(p)!r})", x.dtype, exact=True)
    if nd == 0:
        raise Invalid()
    if r < 0.8 or nd < 2:
        d0, d1 = (int(v) for v in rng.integers(-nd, nd, size=2))
        name = rng.choice(["transpose", "swapaxes"])
        src = f"{{0}}.{name}({d0}, {d1})" if rng.random() < 0.5 else f"vk.{name}({{0}}, {d0}, {d1})"
        return Emit(src, f"np.swapaxes({{0}}, {d0}, {d1})", x.dtype, exact=True)
    if nd == 2 and rng.random() < 0.5:
        return Emit(rng.choice(["{0}.t()", "{0}.T", "vk.t({0})"]), "np.transpose({0})", x.dtype, exact=True)
    return Emit("{0}.mT", "np.swapaxes({0}, -1, -2)", x.dtype, exact=True)


@op("expand", table=("expand",))
def b_expand(rng, ins, mode):
    (x,) = ins
    lead = int(rng.integers(0, max(1, 4 - x.ndim) + 1)) if x.ndim < 4 else 0
    shape = [int(rng.integers(0 if rng.random() < 0.1 else 1, 4)) for _ in range(lead)]
    written = list(shape)
    for s in x.shape:
        if s == 1 and rng.random() < 0.7:
            n = int(rng.integers(1, 4))
            shape.append(n)
            written.append(n)
        else:
            shape.append(s)
            written.append(-1 if rng.random() < 0.3 else s)
    need(int(np.prod(shape)) <= lim(mode, 256))
    r = rng.random()
    if r < 0.4:
        src = f"{{0}}.expand({', '.join(map(str, written))})" if written else "{0}.expand(())"
    elif r < 0.7:
        src = f"{{0}}.broadcast_to({tuple(shape)!r})"
    else:
        src = f"vk.broadcast_to({{0}}, {tuple(shape)!r})"
    if mode == "mixed" and rng.random() < 0.05:
        bad = [s for s in x.shape if s > 1]
        if bad:
            sh = [s + 1 if s > 1 else s for s in x.shape]
            return Emit(f"{{0}}.expand({tuple(sh)!r})", None, None, err="ShapeError")
    return Emit(src, f"np.broadcast_to({{0}}, {tuple(shape)!r})", x.dtype, exact=True)


@op("repeat", table=("expand", "reshape"))
def b_repeat(rng, ins, mode):
    (x,) = ins
    reps = [int(rng.integers(1, 3)) for _ in range(x.ndim + int(rng.integers(0, 2)))]
    need(len(reps) >= 1 and x.ref.size * int(np.prod(reps)) <= lim(mode, 256))
    return Emit(f"{{0}}.repeat({', '.join(map(str, reps))})", f"np.tile({{0}}, {tuple(reps)!r})", x.dtype,
                exact=True)


@op("contiguous", table=("contiguous",))
def b_contig(rng, ins, mode):
    return Emit(rng.choice(["{0}.contiguous()", "{0}.clone()", "vk.clone({0})"]), "{0}", ins[0].dtype,
                exact=True)


@op("flip", table=("flip",))
def b_flip(rng, ins, mode):
    (x,) = ins
    need(x.ndim >= 1)
    k = int(rng.integers(1, x.ndim + 1))
    ds = [int(v) for v in rng.choice(x.ndim, size=k, replace=False)]
    dsrc = [d - x.ndim if rng.random() < 0.3 else d for d in ds]
    src = f"vk.flip({{0}}, {tuple(dsrc)!r})" if rng.random() < 0.5 else f"{{0}}.flip({', '.join(map(str, dsrc))})"
    return Emit(src, f"np.flip({{0}}, {tuple(ds)!r})", x.dtype, exact=True)


@op("narrow", table=("slice",))
def b_narrow(rng, ins, mode):
    (x,) = ins
    need(x.ndim >= 1)
    d = int(rng.integers(0, x.ndim))
    n = x.shape[d]
    r = rng.random()
    if r < 0.3:
        start = int(rng.integers(0, n + 1))
        length = int(rng.integers(0, n - start + 1))
        sl = [slice(None)] * x.ndim
        sl[d] = slice(start, start + length)
        return Emit(f"{{0}}.narrow({d}, {start}, {length})" if rng.random() < 0.5 else f"vk.narrow({{0}}, {d}, {start}, {length})",
                    f"{{0}}[{_slice_src(sl)}]", x.dtype, exact=True)
    if r < 0.6:
        need(n > 0)
        i = int(rng.integers(-n, n))
        return Emit(f"{{0}}.select({d}, {i})" if rng.random() < 0.5 else f"vk.select({{0}}, {d}, {i})",
                    f"np.take({{0}}, {i % n}, axis={d})", x.dtype, exact=True)
    start = int(rng.integers(-n - 1, n + 2))
    stop = int(rng.integers(-n - 1, n + 2))
    step = int(rng.integers(1, 4))
    sl = [slice(None)] * x.ndim
    sl[d] = slice(start, stop, step)
    return Emit(f"vk.slice({{0}}, {d}, {start}, {stop}, {step})", f"{{0}}[{_slice_src(sl)}]", x.dtype,
                exact=True)


def _slice_src(sl):
    out = []
    for s in sl:
        if isinstance(s, slice):
            a = "" if s.start is None else str(s.start)
            b = "" if s.stop is None else str(s.stop)
            c = "" if s.step in (None, 1) else f":{s.step}"
            out.append(f"{a}:{b}{c}")
        else:
            out.append(repr(s))
    return ", ".join(out) + ("," if len(out) == 1 else "")


@op("split", table=("slice",))
def b_split(rng, ins, mode):
    (x,) = ins
    need(x.ndim >= 1)
    d = int(rng.integers(0, x.ndim))
    n = x.shape[d]
    need(n >= 1)
    r = rng.random()
    if r < 0.4:
        size = int(rng.integers(1, n + 1))
        pieces = [(i, min(i + size, n)) for i in range(0, n, size)]
        src = f"{{0}}.split({size}, {d})" if rng.random() < 0.5 else f"vk.split({{0}}, {size}, dim={d})"
    elif r < 0.7:
        c = int(rng.integers(1, n + 1))
        size = -(-n // c)
        pieces = [(i, min(i + size, n)) for i in range(0, n, size)]
        src = f"{{0}}.chunk({c}, {d})" if rng.random() < 0.5 else f"vk.chunk({{0}}, {c}, dim={d})"
    else:
        k = int(rng.integers(0, n))
        return Emit(f"{{0}}.unbind({d})[{k}]", f"np.take({{0}}, {k}, axis={d})", x.dtype, exact=True)
    k = int(rng.integers(0, len(pieces)))
    sl = [slice(None)] * x.ndim
    sl[d] = slice(*pieces[k])
    return Emit(f"{src}[{k}]", f"{{0}}[{_slice_src(sl)}]", x.dtype, exact=True)


def _index_component(rng, x, d):
    """One index component for dim d of x: (python value, source, vk source, consumes)."""
    n = x.shape[d]
    r = rng.random()
    if r < 0.25 and n > 0:
        i = int(rng.integers(-n, n))
        return i, repr(i), repr(i)
    if r < 0.55:
        a = int(rng.integers(-n - 2, n + 2)) if rng.random() < 0.5 else None
        b = int(rng.integers(-n - 2, n + 2)) if rng.random() < 0.5 else None
        c = int(rng.integers(1, 4)) if rng.random() < 0.4 else None
        s = slice(a, b, c)
        txt = _slice_src([s])[:-1]
        return s, txt, txt
    if r < 0.8 and n > 0:
        k = int(rng.integers(1, 4))
        shape = (k,) if rng.random() < 0.8 else (k, 2)
        arr = rng.integers(-n, n, size=shape)
        form = rng.random()
        if form < 0.4 and arr.ndim == 1:
            return arr.tolist(), repr(arr.tolist()), repr(arr.tolist())
        if form < 0.7:
            return arr, lit(arr), lit(arr)
        return arr, lit(arr), f"vk.tensor({lit(arr)})"
    if n >= 0 and rng.random() < 0.7:
        m = rng.random(n) < 0.5
        return m, lit(m), (lit(m) if rng.random() < 0.5 else f"vk.tensor({lit(m)})")
    return slice(None), ":", ":"


@op("index", table=("slice", "index_select", "reshape", "gather"))
def b_index(rng, ins, mode):
    (x,) = ins
    nd = x.ndim
    if nd == 0:
        c = rng.choice(["none", "ellipsis"])
        if c == "none":
            return Emit("{0}[None]", "{0}[None]", x.dtype, exact=True)
        return Emit("{0}[...]", "{0}[...]", x.dtype, exact=True)
    r = rng.random()
    if r < 0.2:  # a full-shape (or leading-dims) bool mask
        k = int(rng.integers(1, nd + 1))
        m = rng.random(x.shape[:k]) < 0.5
        vsrc = lit(m) if rng.random() < 0.5 else f"vk.tensor({lit(m)})"
        return Emit(f"{{0}}[{vsrc}]", f"{{0}}[{lit(m)}]", x.dtype, exact=True)
    if mode == "mixed" and r < 0.24:  # out of range
        n = x.shape[0]
        i = n + int(rng.integers(0, 3))
        if rng.random() < 0.5:
            return Emit(f"{{0}}[{i}]", None, None, err="IndexError")
        return Emit(f"{{0}}[[0, {i}]]" if n else f"{{0}}[[{i}]]", None, None, err="IndexError")
    k = int(rng.integers(1, nd + 1))
    comps, srcs, vsrcs = [], [], []
    d = 0
    used_ellipsis = False
    n_adv = 0
    while d < k:
        rr = rng.random()
        if rr < 0.08:
            comps.append(None)
            srcs.append("None")
            vsrcs.append("None")
            continue
        if rr < 0.14 and not used_ellipsis and k < nd:
            used_ellipsis = True
            comps.append(Ellipsis)
            srcs.append("...")
            vsrcs.append("...")
            k = nd  # the components after the Ellipsis index the trailing dims
            rest = int(rng.integers(0, nd - d + 1))
            d = nd - rest
            continue
        v, s, vs = _index_component(rng, x, d)
        if isinstance(v, (list, np.ndarray)) and not (isinstance(v, np.ndarray) and v.dtype == np.bool_):
            n_adv += 1
        if isinstance(v, np.ndarray) and v.dtype == np.bool_:
            n_adv += 1
        comps.append(v)
        srcs.append(s)
        vsrcs.append(vs)
        d += 1
    need(n_adv <= 2)
    comps_lit = ", ".join(srcs) + ("," if len(srcs) == 1 else "")
    # the reference applies torch's rule for ints mixed with advanced indices
    np_src = f"R.index({{0}}, ({comps_lit}))"
    vk_src = f"{{0}}[{', '.join(vsrcs)}]"
    # shape sanity: two advanced indices must broadcast together
    try:
        val = R.index(x.ref, tuple(comps))
    except (IndexError, ValueError):
        raise Invalid()
    need(val.size <= lim(mode, 512))
    return Emit(vk_src, np_src, x.dtype, exact=True)


@op("cat", arity=2, table=("cat", "stack"))
def b_cat(rng, ins, mode):
    xs = list(ins)
    stack = rng.random() < 0.35
    if stack:
        need(all(v.shape == xs[0].shape for v in xs))
        d = int(rng.integers(-xs[0].ndim - 1, xs[0].ndim + 1))
        out = xs[0].dtype
        for v in xs[1:]:
            out = promote(out, v.dtype)
        names = ", ".join(f"{{{i}}}" for i in range(len(xs)))
        src = f"vk.stack([{names}], {d})" if rng.random() < 0.5 else f"vk.stack(({names},), dim={d})"
        return Emit(src, f"np.stack([{names}], {d % (xs[0].ndim + 1)})", out, exact=True)
    nd = max(v.ndim for v in xs)
    need(nd >= 1)
    ref = [v for v in xs if not (v.ndim == 1 and v.shape[0] == 0)]
    need(ref and ref[0].ndim >= 1)
    d = int(rng.integers(-ref[0].ndim, ref[0].ndim))
    dd = d % ref[0].ndim
    for v in ref:
        need(v.ndim == ref[0].ndim)
        need(all(v.shape[i] == ref[0].shape[i] for i in range(v.ndim) if i != dd))
    out = xs[0].dtype
    for v in xs[1:]:
        out = promote(out, v.dtype)
    names = ", ".join(f"{{{i}}}" for i in range(len(xs)))
    fn = rng.choice(["cat", "cat", "concat", "concatenate"])
    src = f"vk.{fn}([{names}], {d})" if rng.random() < 0.5 else f"vk.{fn}(({names},), dim={d})"
    return Emit(src, f"R.cat([{names}], {dd})", out, exact=True)


@op("pad", table=("pad",))
def b_pad(rng, ins, mode):
    (x,) = ins
    need(x.ndim >= 1)
    k = int(rng.integers(1, min(x.ndim, 3) + 1))
    widths = []
    for i in range(k):
        n = x.shape[x.ndim - 1 - i]
        b = int(rng.integers(-1, 3))
        a = int(rng.integers(-1, 3))
        if b < 0 and -b > n:
            b = 0
        if a < 0 and n + min(b, 0) + a < 0:
            a = 0
        if n + b + a < 0:
            b = a = 0
        widths += [b, a]
    if x.dtype == "bool":
        val = bool(rng.random() < 0.5)
    elif x.dtype in INTS:
        val = int(rng.integers(-3, 4))
    else:
        val = float(rng.choice([0.37, -1.25, 2.0]))
    src = (f"vk.pad({{0}}, {tuple(widths)!r}, value={val!r})" if rng.random() < 0.6
           else f"vk.nn.functional.pad({{0}}, {tuple(widths)!r}, value={val!r})")
    return Emit(src, f"R.pad({{0}}, {tuple(widths)!r}, {val!r})", x.dtype, exact=True)


@op("index_select", table=("index_select",))
def b_index_select(rng, ins, mode):
    (x,) = ins
    need(x.ndim >= 1)
    d = int(rng.integers(-x.ndim, x.ndim))
    n = x.shape[d]
    k = int(rng.integers(0 if rng.random() < 0.1 else 1, 5))
    if n == 0:
        k = 0
    idx = rng.integers(0, max(n, 1), size=k).astype(np.int64)
    bad = mode == "mixed" and rng.random() < 0.05
    if bad:
        idx = np.append(idx, n)
        src = f"{{0}}.index_select({d}, vk.tensor({lit(idx)}))"
        return Emit(src, None, None, err="IndexError")
    src = (f"vk.index_select({{0}}, {d}, vk.tensor({lit(idx)}))" if rng.random() < 0.5
           else f"{{0}}.index_select({d}, vk.tensor({lit(idx)}))")
    return Emit(src, f"np.take({{0}}, {lit(idx)}, axis={d % x.ndim})", x.dtype, exact=True)


@op("gather", table=("gather",))
def b_gather(rng, ins, mode):
    (x,) = ins
    need(x.ndim >= 1)
    d = int(rng.integers(-x.ndim, x.ndim))
    dd = d % x.ndim
    n = x.shape[dd]
    shape = [int(rng.integers(0, s + 1)) if rng.random() < 0.3 else s for s in x.shape]
    shape[dd] = int(rng.integers(1, 4)) if n > 0 else 0
    if any(s == 0 for s in shape):
        pass
    idx = rng.integers(0, max(n, 1), size=shape).astype(np.int64)
    src = (f"vk.gather({{0}}, {d}, vk.tensor({lit(idx)}))" if rng.random() < 0.5
           else f"{{0}}.gather({d}, vk.tensor({lit(idx)}))")
    return Emit(src, f"R.gather({{0}}, {dd}, {lit(idx)})", x.dtype, exact=True)


@op("scatter_add", arity=2, table=("scatter_add",))
def b_scatter_add(rng, ins, mode):
    base, src_v = ins
    need(base.ndim >= 1 and src_v.ndim == base.ndim)
    need(base.dtype != "bool" and src_v.dtype != "bool")
    d = int(rng.integers(-base.ndim, base.ndim))
    dd = d % base.ndim
    n = base.shape[dd]
    need(n > 0)
    shape = []
    for i in range(base.ndim):
        lim = src_v.shape[i] if i == dd else min(src_v.shape[i], base.shape[i])
        shape.append(int(rng.integers(0, lim + 1)) if rng.random() < 0.3 else lim)
    idx = rng.integers(0, n, size=shape).astype(np.int64)
    out = promote(base.dtype, src_v.dtype)
    if rng.random() < 0.5:
        src = f"vk.scatter_add({{0}}, {d}, vk.tensor({lit(idx)}), {{1}})"
    else:
        src = f"{{0}}.scatter_add({d}, vk.tensor({lit(idx)}), {{1}})"
    return Emit(src, f"R.scatter_add(np.asarray({{0}}, dtype=np.{'float64' if out in FLOATS else 'int64'}), "
                     f"{dd}, {lit(idx)}, {{1}})", out, exact=out not in FLOATS, mult=8.0)


@op("index_add", arity=2, table=("scatter_add", "index_select"))
def b_index_add(rng, ins, mode):
    x, s = ins
    need(x.ndim >= 1 and s.ndim == x.ndim and x.dtype != "bool" and s.dtype != "bool")
    d = int(rng.integers(0, x.ndim))
    need(all(s.shape[i] == x.shape[i] for i in range(x.ndim) if i != d))
    need(x.shape[d] > 0)
    idx = rng.integers(0, x.shape[d], size=s.shape[d]).astype(np.int64)
    alpha = float(rng.choice([1.0, 2.0, -0.5])) if x.isfloat else 1.0
    # like scatter_add (docs/ops.md: "base and src take their common dtype"); torch requires
    # equal dtypes here
    out = promote(x.dtype, s.dtype)
    need(s.dtype == x.dtype or (s.isfloat and x.isfloat))
    src = (f"{{0}}.index_add({d}, vk.tensor({lit(idx)}), {{1}}" + (f", alpha={alpha!r})" if alpha != 1.0 else ")"))
    return Emit(src, f"R.index_add({{0}}, {d}, {lit(idx)}, {{1}}, {alpha!r})", out, exact=not x.isfloat,
                mult=8.0)


@op("matmul", arity=2, table=("matmul",))
def b_matmul(rng, ins, mode):
    a, b = ins
    need(a.ndim >= 1 and b.ndim >= 1)
    need(a.dtype != "bool" and b.dtype != "bool")
    try:
        oshape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) if a.ndim > 1 and b.ndim > 1 else ()
        need(int(np.prod(oshape)) * (a.shape[-2] if a.ndim > 1 else 1) * (b.shape[-1] if b.ndim > 1 else 1)
             * a.shape[-1] <= lim(mode, 4096) * 16)
    except ValueError:
        pass
    try:
        ref = R.matmul(a.ref, b.ref)
    except ValueError:
        need(mode == "mixed")
        return Emit("({0} @ {1})", None, None, err="ShapeError")
    del ref
    out = promote(a.dtype, b.dtype)
    forms = ["({0} @ {1})", "vk.matmul({0}, {1})", "{0}.matmul({1})"]
    if a.ndim == 2 and b.ndim == 2:
        forms += ["vk.mm({0}, {1})", "{0}.mm({1})"]
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0]:
        forms += ["vk.bmm({0}, {1})"]
    if a.ndim == 2 and b.ndim == 1:
        forms += ["vk.mv({0}, {1})", "{0}.mv({1})"]
    if a.ndim == 1 and b.ndim == 1:
        forms += ["vk.dot({0}, {1})", "{0}.dot({1})"]
    if mode == "grad" or out in INTS:
        pass
    kdim = a.shape[-1]
    mx = max(float(np.max(np.abs(fin(v.ref)), initial=1.0)) for v in ins)
    return Emit(str(rng.choice(forms)), "R.matmul({0}, {1})", out, exact=out not in FLOATS,
                mult=2.0 * max(kdim, 1) * mx)


@op("nonzero", table=())
def b_nonzero(rng, ins, mode):
    (x,) = ins
    need(x.ndim >= 1 and x.exact)  # its shape depends on the values: exact ones only
    return Emit("{0}.nonzero()" if rng.random() < 0.5 else "vk.nonzero({0})",
                "np.argwhere({0}).astype(np.int64).reshape(-1, np.ndim({0}))", "int64", exact=True)


# ---- nn.functional and creation ops --------------------------------------------------------


def _fdt(gen, like=None):
    if gen.mode == "grad":
        return "float64"
    if like is not None and like.isfloat and gen.rng.random() < 0.8:
        return like.dtype
    return str(gen.rng.choice(FLOATS))


def _img(gen, first, rank=4):
    """`first` when it is a small float image batch, else a new leaf (N, C, H, W)."""
    if first.isfloat and first.ndim == rank and 0 < first.ref.size <= 200 and min(first.shape) >= 1:
        return first.name
    r = gen.rng
    shape = [int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 6)), int(r.integers(1, 6))]
    return gen.add_leaf(shape[4 - rank:], _fdt(gen, first))


def _pair(rng, lo, hi):
    a = int(rng.integers(lo, hi + 1))
    if rng.random() < 0.3:
        return (a, int(rng.integers(lo, hi + 1)))
    return a


def _pp(v):
    return v if isinstance(v, tuple) else (v, v)


def _conv_params(rng):
    return dict(k=_pair(rng, 1, 3), stride=_pair(rng, 1, 2), padding=_pair(rng, 0, 2),
                dilation=_pair(rng, 1, 2) if rng.random() < 0.3 else 1, groups=int(rng.choice([1, 1, 2, 3])),
                per_group=int(rng.integers(1, 3)), bias=bool(rng.random() < 0.6))


def _conv_prep(gen, rng, first):
    p = _conv_params(rng)
    x = _img(gen, first)
    xv = gen.current_vals_with_leaves()[x]
    c = xv.shape[1]
    if c % p["groups"]:
        return None
    kh, kw = _pp(p["k"])
    o = p["groups"] * p["per_group"]
    dt = xv.dtype if gen.rng.random() < 0.9 else _fdt(gen)
    ins = [x, gen.add_leaf([o, c // p["groups"], kh, kw], dt)]
    if p["bias"]:
        ins.append(gen.add_leaf([o], dt))
    return ins


def _out_size(n, k, s, p, d, ceil=False):
    eff = d * (k - 1) + 1
    if ceil:
        o = -(-(n + 2 * p - eff) // s) + 1
        if (o - 1) * s >= n + p:
            o -= 1
    else:
        o = (n + 2 * p - eff) // s + 1
    return o


class RN:
    """numpy references of the nn ops."""

    @staticmethod
    def windows(x, k, s, p, d, fill, ceil=False):
        """(N, C, Ho, Wo, kh*kw) windows of x (padding = fill), and the flat input index of each."""
        x = np.asarray(x, dtype=np.float64)
        n, c, h, w = x.shape
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pp(k), _pp(s), _pp(p), _pp(d)
        ho, wo = _out_size(h, kh, sh, ph, dh, ceil), _out_size(w, kw, sw, pw, dw, ceil)
        out = np.full((n, c, ho, wo, kh * kw), fill, dtype=np.float64)
        idx = np.full((ho, wo, kh * kw), -1, dtype=np.int64)
        for i in range(ho):
            for j in range(wo):
                for a in range(kh):
                    for b in range(kw):
                        y, z = i * sh - ph + a * dh, j * sw - pw + b * dw
                        if 0 <= y < h and 0 <= z < w:
                            out[:, :, i, j, a * kw + b] = x[:, :, y, z]
                            idx[i, j, a * kw + b] = y * w + z
        return out, idx

    @staticmethod
    def conv2d(x, w, b, stride, padding, dilation, groups):
        x, w = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
        n, c, h, wd = x.shape
        o, cg, kh, kw = w.shape
        win, _ = RN.windows(x, (kh, kw), stride, padding, dilation, 0.0)  # (N, C, Ho, Wo, K)
        og = o // groups
        outs = []
        for g in range(groups):
            xs = win[:, g * cg:(g + 1) * cg]  # (N, cg, Ho, Wo, K)
            ws = w[g * og:(g + 1) * og].reshape(og, cg, kh * kw)
            outs.append(np.einsum("nchwk,ock->nohw", xs, ws))
        out = np.concatenate(outs, axis=1) if outs else np.zeros((n, 0) + win.shape[2:4])
        if b is not None:
            out = out + np.asarray(b, dtype=np.float64)[None, :, None, None]
        return out

    @staticmethod
    def max_pool2d(x, k, s, p, d, ceil, which):
        win, idx = RN.windows(x, k, s, p, d, -np.inf, ceil)
        nanw = np.isnan(win)
        valid = np.broadcast_to(idx >= 0, win.shape)
        # the first valid position holding the maximum (a padding slot never wins a tie)
        with np.errstate(invalid="ignore"):
            m = np.max(np.where(valid & ~nanw, win, -np.inf), axis=-1, keepdims=True)
            arg = np.argmax(valid & (win == m), axis=-1)
        # a NaN wins, and among NaNs the last one in the window (torch's `val > max || isnan(val)`)
        last_nan = nanw.shape[-1] - 1 - np.argmax(nanw[..., ::-1], axis=-1)
        arg = np.where(nanw.any(-1), last_nan, arg)
        vals = np.take_along_axis(win, arg[..., None], -1)[..., 0]
        if which == 0:
            return vals
        ho, wo = idx.shape[:2]
        flat = idx[np.arange(ho)[:, None], np.arange(wo)[None, :], arg]
        return flat.astype(np.int64)

    @staticmethod
    def avg_pool2d(x, k, s, p, ceil, count_include_pad):
        x = np.asarray(x, dtype=np.float64)
        n, c, h, w = x.shape
        (kh, kw), (sh, sw), (ph, pw) = _pp(k), _pp(s), _pp(p)
        ho, wo = _out_size(h, kh, sh, ph, 1, ceil), _out_size(w, kw, sw, pw, 1, ceil)
        out = np.zeros((n, c, ho, wo))
        for i in range(ho):
            for j in range(wo):
                hs, ws_ = i * sh - ph, j * sw - pw
                he, we = min(hs + kh, h + ph), min(ws_ + kw, w + pw)
                size = (he - hs) * (we - ws_)
                hs, ws_, he, we = max(hs, 0), max(ws_, 0), min(he, h), min(we, w)
                tot = x[:, :, hs:he, ws_:we].sum(axis=(2, 3))
                div = size if count_include_pad else (he - hs) * (we - ws_)
                out[:, :, i, j] = tot / div
        return out

    @staticmethod
    def unfold(x, k, d, p, s):
        win, _ = RN.windows(x, k, s, p, d, 0.0)  # (N, C, Ho, Wo, K)
        n, c, ho, wo, kk = win.shape
        return np.transpose(win, (0, 1, 4, 2, 3)).reshape(n, c * kk, ho * wo)

    @staticmethod
    def fold(cols, out_size, k, d, p, s):
        cols = np.asarray(cols, dtype=np.float64)
        n, ckk, L = cols.shape
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pp(k), _pp(s), _pp(p), _pp(d)
        h, w = out_size
        c = ckk // (kh * kw)
        ho, wo = _out_size(h, kh, sh, ph, dh), _out_size(w, kw, sw, pw, dw)
        cols = cols.reshape(n, c, kh, kw, ho, wo)
        out = np.zeros((n, c, h, w))
        for i in range(ho):
            for j in range(wo):
                for a in range(kh):
                    for b in range(kw):
                        y, z = i * sh - ph + a * dh, j * sw - pw + b * dw
                        if 0 <= y < h and 0 <= z < w:
                            out[:, :, y, z] += cols[:, :, a, b, i, j]
        return out

    @staticmethod
    def layer_norm(x, k, w, b, eps):
        x = np.asarray(x, dtype=np.float64)
        ax = tuple(range(x.ndim - k, x.ndim))
        m = x.mean(axis=ax, keepdims=True)
        v = ((x - m) ** 2).mean(axis=ax, keepdims=True)
        y = (x - m) / np.sqrt(v + eps)
        if w is not None:
            y = y * w
        if b is not None:
            y = y + b
        return y

    @staticmethod
    def nll(logp, target, weight, ignore, reduction, smoothing=0.0):
        logp = np.asarray(logp, dtype=np.float64)
        tshape = np.shape(target)
        if logp.ndim == 1:
            logp, target = logp[None], np.asarray(target)[None]
        c = logp.shape[1]
        lp = np.moveaxis(logp, 1, -1).reshape(-1, c)
        t = np.asarray(target).reshape(-1)
        w = np.ones(c) if weight is None else np.asarray(weight, dtype=np.float64)
        keep = t != ignore
        tt = np.where(keep, t, 0)
        wt = np.where(keep, w[tt], 0.0)
        loss = np.where(keep, -wt * lp[np.arange(len(t)), tt], 0.0)  # ignored: exactly 0
        if smoothing:
            smooth = np.where(keep, -(lp * w[None, :]).sum(axis=1), 0.0)
            loss = (1 - smoothing) * loss + smoothing / c * smooth
        if reduction == "none":
            return loss.reshape(tshape)
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / wt.sum()

    @staticmethod
    def sdpa(q, k, v, mask, causal, scale):
        q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
        sc = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        a = q @ np.swapaxes(k, -1, -2) * sc
        L, S = a.shape[-2:]
        if causal:
            a = np.where(np.tril(np.ones((L, S), dtype=bool)), a, -np.inf)
        if mask is not None:
            mask = np.asarray(mask)
            a = np.where(mask, a, -np.inf) if mask.dtype == np.bool_ else a + mask
        return R.softmax(a, -1) @ v


@op("conv2d", arity=3, prep=_conv_prep, table=("conv2d", "im2col", "matmul"))
def b_conv2d(rng, ins, mode):
    p = _conv_params(rng)
    need(len(ins) == 2 + p["bias"])
    x, w = ins[0], ins[1]
    need(x.ndim == 4 and w.ndim == 4 and x.isfloat and w.isfloat)
    kh, kw = _pp(p["k"])
    g = p["groups"]
    need(w.shape[0] == g * p["per_group"] and w.shape[1] * g == x.shape[1] and w.shape[2:] == (kh, kw))
    h = _out_size(x.shape[2], kh, _pp(p["stride"])[0], _pp(p["padding"])[0], _pp(p["dilation"])[0])
    wd = _out_size(x.shape[3], kw, _pp(p["stride"])[1], _pp(p["padding"])[1], _pp(p["dilation"])[1])
    need(h >= 1 and wd >= 1)
    out = x.dtype
    for v in ins[1:]:
        out = promote(out, v.dtype)
    bsrc = "{2}" if p["bias"] else "None"
    fn = "vk.conv2d" if rng.random() < 0.5 else "vk.nn.functional.conv2d"
    src = (f"{fn}({{0}}, {{1}}, {bsrc}, stride={p['stride']!r}, padding={p['padding']!r}, "
           f"dilation={p['dilation']!r}, groups={g})")
    mx = max(float(np.max(np.abs(fin(v.ref)), initial=1.0)) for v in ins)
    return Emit(src, f"RN.conv2d({{0}}, {{1}}, {bsrc}, {p['stride']!r}, {p['padding']!r}, {p['dilation']!r}, {g})",
                out, mult=2.0 * mx * w.shape[1] * kh * kw + 2)


def _pool_params(rng):
    k = _pair(rng, 1, 3)
    kh, kw = _pp(k)
    s = None if rng.random() < 0.3 else _pair(rng, 1, 3)
    p = (int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1)))
    p = min(p) if rng.random() < 0.5 else p
    return dict(k=k, s=s, p=p, d=_pair(rng, 1, 2) if rng.random() < 0.3 else 1, ceil=bool(rng.random() < 0.3),
                cip=bool(rng.random() < 0.7), which=int(rng.integers(0, 2)))


def _pool_prep(gen, rng, first):
    _pool_params(rng)
    return [_img(gen, first, 4 if gen.rng.random() < 0.85 else 3)]


def _pool_common(rng, ins, mode, dil):
    p = _pool_params(rng)
    (x,) = ins
    need(x.isfloat and x.ndim in (3, 4) and x.ref.size > 0)
    # vk.max_pool2d/vk.avg_pool2d are F.*'s functions: 3-D and 4-D inputs. ceil_mode=True and
    # count_include_pad=False are checked against the reference since issue #16 implemented them.
    err = None
    (kh, kw), (ph, pw) = _pp(p["k"]), _pp(p["p"])
    s = p["k"] if p["s"] is None else p["s"]
    d = p["d"] if dil else 1
    h = x.shape[-2]
    w = x.shape[-1]
    need(_out_size(h, kh, _pp(s)[0], ph, _pp(d)[0], p["ceil"]) >= 1)
    need(_out_size(w, kw, _pp(s)[1], pw, _pp(d)[1], p["ceil"]) >= 1)
    return p, x, s, d, err


@op("max_pool2d", prep=_pool_prep, table=("max_pool2d",))
def b_max_pool2d(rng, ins, mode):
    fn = "vk.max_pool2d" if rng.random() < 0.5 else "vk.nn.functional.max_pool2d"
    p, x, s, d, err = _pool_common(rng, ins, mode, True)
    batched = x.ndim == 4
    xs = "{0}" if batched else "{0}[None]"
    which = p["which"]
    args = (f"{p['k']!r}, stride={p['s']!r}, padding={p['p']!r}, dilation={d!r}, ceil_mode={p['ceil']}")
    if which == 0 and rng.random() < 0.5:
        src = f"{fn}({{0}}, {args})"
    else:
        src = f"{fn}({{0}}, {args}, return_indices=True)[{which}]"
    if err:
        return Emit(src, None, None, err=err)
    ref = f"RN.max_pool2d({xs}, {p['k']!r}, {s!r}, {p['p']!r}, {d!r}, {p['ceil']}, {which})"
    if not batched:
        ref += "[0]"
    margin = math.inf
    if x.grad:
        win, _ = RN.windows(x.ref if batched else x.ref[None], p["k"], s, p["p"], d, -np.inf, p["ceil"])
        srt = np.sort(win, axis=-1)
        with np.errstate(invalid="ignore"):
            gap = srt[..., -1] - srt[..., -2] if srt.shape[-1] > 1 else np.full(srt.shape[:-1], np.inf)
        gap = gap[np.isfinite(gap)]
        margin = float(np.min(gap)) if gap.size else math.inf
    return Emit(src, ref, x.dtype if which == 0 else "int64", margin=margin, exact=True,
                table=("max_pool2d",) if which == 0 else ("max_pool2d", "max_pool2d_backward"))


@op("avg_pool2d", prep=_pool_prep, table=("avg_pool2d",))
def b_avg_pool2d(rng, ins, mode):
    fn = "vk.avg_pool2d" if rng.random() < 0.5 else "vk.nn.functional.avg_pool2d"
    p, x, s, d, err = _pool_common(rng, ins, mode, False)
    batched = x.ndim == 4
    xs = "{0}" if batched else "{0}[None]"
    src = (f"{fn}({{0}}, {p['k']!r}, stride={p['s']!r}, padding={p['p']!r}, ceil_mode={p['ceil']}, "
           f"count_include_pad={p['cip']})")
    if err:
        return Emit(src, None, None, err=err)
    ref = f"RN.avg_pool2d({xs}, {p['k']!r}, {s!r}, {p['p']!r}, {p['ceil']}, {p['cip']})"
    if not batched:
        ref += "[0]"
    kh, kw = _pp(p["k"])
    return Emit(src, ref, x.dtype, mult=kh * kw)


def _unfold_params(rng):
    return dict(k=_pair(rng, 1, 3), d=_pair(rng, 1, 2) if rng.random() < 0.3 else 1, p=_pair(rng, 0, 1),
                s=_pair(rng, 1, 2), H=int(rng.integers(1, 6)), W=int(rng.integers(1, 6)),
                C=int(rng.integers(1, 3)), N=int(rng.integers(1, 3)))


def _unfold_prep(gen, rng, first):
    _unfold_params(rng)
    return [_img(gen, first)]


@op("unfold", prep=_unfold_prep, table=("im2col",))
def b_unfold(rng, ins, mode):
    p = _unfold_params(rng)
    (x,) = ins
    need(x.ndim == 4 and x.isfloat)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _pp(p["k"]), _pp(p["d"]), _pp(p["p"]), _pp(p["s"])
    need(_out_size(x.shape[2], kh, sh, ph, dh) >= 1 and _out_size(x.shape[3], kw, sw, pw, dw) >= 1)
    fn = "vk.nn.functional.unfold" if rng.random() < 0.5 else "vk.im2col"
    src = f"{fn}({{0}}, {p['k']!r}, dilation={p['d']!r}, padding={p['p']!r}, stride={p['s']!r})"
    return Emit(src, f"RN.unfold({{0}}, {p['k']!r}, {p['d']!r}, {p['p']!r}, {p['s']!r})", x.dtype, exact=True)


def _fold_prep(gen, rng, first):
    p = _unfold_params(rng)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _pp(p["k"]), _pp(p["d"]), _pp(p["p"]), _pp(p["s"])
    L = _out_size(p["H"], kh, sh, ph, dh) * _out_size(p["W"], kw, sw, pw, dw)
    if L < 1:
        return None
    return [gen.add_leaf([p["N"], p["C"] * kh * kw, L], _fdt(gen, first))]


@op("fold", prep=_fold_prep, table=("col2im",))
def b_fold(rng, ins, mode):
    p = _unfold_params(rng)
    (x,) = ins
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _pp(p["k"]), _pp(p["d"]), _pp(p["p"]), _pp(p["s"])
    L = _out_size(p["H"], kh, sh, ph, dh) * _out_size(p["W"], kw, sw, pw, dw)
    need(x.isfloat and x.shape == (p["N"], p["C"] * kh * kw, L))
    fn = "vk.nn.functional.fold" if rng.random() < 0.5 else "vk.col2im"
    src = (f"{fn}({{0}}, ({p['H']}, {p['W']}), {p['k']!r}, dilation={p['d']!r}, padding={p['p']!r}, "
           f"stride={p['s']!r})")
    return Emit(src, f"RN.fold({{0}}, ({p['H']}, {p['W']}), {p['k']!r}, {p['d']!r}, {p['p']!r}, {p['s']!r})",
                x.dtype, mult=kh * kw)


def _ln_prep(gen, rng, first):
    k = int(rng.integers(1, 3))
    aff = rng.random()
    x = first.name if first.isfloat and first.ndim >= k and first.ref.size > 0 else gen.add_leaf(
        [int(gen.rng.integers(1, 4)) for _ in range(k + 1)], _fdt(gen, first))
    xv = gen.current_vals_with_leaves()[x]
    if xv.ndim < k:
        return None
    ins = [x]
    if aff < 0.6:
        ins.append(gen.add_leaf(list(xv.shape[xv.ndim - k:]), xv.dtype))
        if aff < 0.4:
            ins.append(gen.add_leaf(list(xv.shape[xv.ndim - k:]), xv.dtype))
    return ins


@op("layer_norm", arity=3, prep=_ln_prep, table=("layer_norm", "layer_norm_backward"))
def b_layer_norm(rng, ins, mode):
    k = int(rng.integers(1, 3))
    rng.random()
    x = ins[0]
    need(x.isfloat and x.ndim >= k and all(v.isfloat and v.dtype == x.dtype for v in ins))
    ns = x.shape[x.ndim - k:]
    need(all(v.shape == ns for v in ins[1:]))
    need(int(np.prod(ns)) >= 2 or mode != "grad")
    eps = float(rng.choice([1e-5, 1e-3, 0.1]))
    w = "{1}" if len(ins) > 1 else "None"
    b = "{2}" if len(ins) > 2 else "None"
    if mode != "nan":
        v = R.var(x.ref, tuple(range(x.ndim - k, x.ndim)), 0, False)
        need(np.all(np.asarray(v) + eps > 1e-3) or x.ref.size == 0)
    src = f"vk.nn.functional.layer_norm({{0}}, {tuple(ns)!r}, {w}, {b}, eps={eps!r})"
    mx = float(np.max(np.abs(fin(x.ref)), initial=1.0))
    return Emit(src, f"RN.layer_norm({{0}}, {k}, {w}, {b}, {eps!r})", x.dtype, mult=8.0 * mx * int(np.prod(ns)) / max(mx, 1e-3))


def _linear_prep(gen, rng, first):
    o = int(rng.integers(1, 4))
    bias = rng.random() < 0.6
    x = first.name if first.isfloat and first.ndim >= 1 and first.shape[-1] > 0 else gen.add_leaf(
        random_shape(gen.rng, gen.mode) or [2], _fdt(gen, first))
    xv = gen.current_vals_with_leaves()[x]
    if xv.ndim == 0:
        return None
    ins = [x, gen.add_leaf([o, xv.shape[-1]], xv.dtype)]
    if bias:
        ins.append(gen.add_leaf([o], xv.dtype))
    return ins


@op("linear", arity=3, prep=_linear_prep, table=("matmul", "add"))
def b_linear(rng, ins, mode):
    rng.integers(1, 4)
    rng.random()
    x, w = ins[0], ins[1]
    need(x.isfloat and x.ndim >= 1 and w.ndim == 2 and w.shape[1] == x.shape[-1])
    need(all(v.dtype == x.dtype for v in ins))
    b = "{2}" if len(ins) > 2 else "None"
    if len(ins) > 2:
        need(ins[2].shape == (w.shape[0],))
    mx = max(float(np.max(np.abs(fin(v.ref)), initial=1.0)) for v in ins)
    src = f"vk.nn.functional.linear({{0}}, {{1}}, {b})"
    ref = "R.matmul({0}, np.swapaxes({1}, 0, 1))" + (" + {2}" if len(ins) > 2 else "")
    return Emit(src, ref, x.dtype, mult=2.0 * mx * max(1, x.shape[-1]))


@op("silu", table=("sigmoid", "mul"))
def b_silu(rng, ins, mode):
    (x,) = ins
    need(x.isfloat)
    return Emit("vk.nn.functional.silu({0})", "{0} * R.sigmoid({0})", x.dtype)


def _loss_prep(gen, rng, first):
    kind = str(rng.choice(["mse", "l1", "bce", "bcel"]))
    x = first.name if first.isfloat else gen.add_leaf(random_shape(gen.rng, gen.mode), _fdt(gen))
    xv = gen.current_vals_with_leaves()[x]
    return [x, gen.add_leaf(list(xv.shape), xv.dtype)]


@op("pointwise_loss", arity=2, prep=_loss_prep, table=("sub", "mul", "mean", "sum", "abs", "log"))
def b_pointwise_loss(rng, ins, mode):
    kind = str(rng.choice(["mse", "l1", "bce", "bcel"]))
    x, y = ins
    need(x.isfloat and y.dtype == x.dtype and x.shape == y.shape)
    red = str(rng.choice(["mean", "sum", "none"]))
    need(not (red == "mean" and x.ref.size == 0))
    F_ = "vk.nn.functional"
    margin = math.inf
    if kind == "mse":
        src, ref = f"{F_}.mse_loss({{0}}, {{1}}, reduction={red!r})", "({0} - {1}) ** 2"
    elif kind == "l1":
        src, ref = f"{F_}.l1_loss({{0}}, {{1}}, reduction={red!r})", "np.abs({0} - {1})"
        if x.grad or y.grad:
            margin = amin_abs(x.ref - y.ref)
    elif kind == "bcel":
        need(mode != "nan")
        src = f"{F_}.binary_cross_entropy_with_logits({{0}}, {{1}}.sigmoid(), reduction={red!r})"
        ref = "np.maximum({0}, 0) - {0} * R.sigmoid({1}) + np.log1p(np.exp(-np.abs({0})))"
    else:
        need(mode != "nan")  # a NaN probability is a RuntimeError (as in torch)
        src = f"{F_}.binary_cross_entropy({{0}}.sigmoid(), {{1}}.sigmoid(), reduction={red!r})"
        ref = "-(R.sigmoid({1}) * np.log(R.sigmoid({0})) + (1 - R.sigmoid({1})) * np.log(1 - R.sigmoid({0})))"
        if mode != "nan":
            need(x.ref.size == 0 or np.max(np.abs(x.ref)) < 8)
    red_ref = {"mean": "np.mean", "sum": "np.sum", "none": ""}[red]
    mx = max(float(np.max(np.abs(fin(v.ref)), initial=1.0)) for v in ins)
    return Emit(src, f"{red_ref}({ref})", x.dtype, margin=margin, mult=4.0 * mx * max(1, x.ref.size),
                table=("sigmoid",) if kind.startswith("bce") else ())


def _ce_prep(gen, rng, first):
    c = int(rng.integers(1, 5))
    shape = [int(rng.integers(1, 4))] if rng.random() < 0.7 else ([] if rng.random() < 0.5 else [2, 3])
    use_w = rng.random() < 0.4
    x = gen.add_leaf(shape[:1] + [c] + shape[1:], _fdt(gen, first))
    tgt = gen.add_leaf(shape[:1] + shape[1:], "int64")
    ins = [x, tgt]
    if use_w:
        ins.append(gen.add_leaf([c], gen.current_vals_with_leaves()[x].dtype))
    return ins


@op("cross_entropy", arity=3, prep=_ce_prep, table=("log_softmax", "gather", "sum", "mean"))
def b_cross_entropy(rng, ins, mode):
    c = int(rng.integers(1, 5))
    rng.random(), rng.random()
    x, t = ins[0], ins[1]
    need(x.isfloat and t.dtype == "int64" and x.ndim >= 1 and x.shape[1 if x.ndim > 1 else 0] == c)
    need(t.shape == (x.shape[:1] + x.shape[2:] if x.ndim > 1 else ()))
    w = ins[2] if len(ins) > 2 else None
    if w is not None:
        need(w.shape == (c,) and w.dtype == x.dtype)
        if mode != "nan":
            need(np.all(w.ref > 0.1) or True)
    red = str(rng.choice(["mean", "sum", "none"]))
    ignore = -100
    tv = np.clip(np.asarray(t.ref), 0, c - 1)  # targets are made valid
    if rng.random() < 0.3 and tv.size:
        ignore = int(rng.integers(0, c))
    nll = rng.random() < 0.3
    smooth = float(rng.choice([0.0, 0.0, 0.1])) if not nll else 0.0
    if red == "mean":
        wt = (np.ones(c) if w is None else w.ref)[tv] * (tv != ignore)
        need(abs(float(np.sum(wt))) > 0.05)
    tsrc = f"{{1}}.clamp(0, {c - 1})"  # (vkml has no %)
    wsrc = "{2}" if w is not None else "None"
    F_ = "vk.nn.functional"
    if nll:
        src = f"{F_}.nll_loss({F_}.log_softmax({{0}}, {1 if x.ndim > 1 else 0}), {tsrc}, weight={wsrc}, ignore_index={ignore}, reduction={red!r})"
    else:
        src = (f"{F_}.cross_entropy({{0}}, {tsrc}, weight={wsrc}, ignore_index={ignore}, reduction={red!r}"
               + (f", label_smoothing={smooth!r})" if smooth else ")"))
    ref = (f"RN.nll(R.log_softmax({{0}}, {1 if x.ndim > 1 else 0}), np.clip({{1}}, 0, {c - 1}), {wsrc}, {ignore}, {red!r}, {smooth!r})")
    mx = max(float(np.max(np.abs(fin(x.ref)), initial=1.0)), 1.0)
    return Emit(src, ref, x.dtype, mult=8.0 * mx * max(1, x.ref.size),
                table=("log_softmax", "gather") + (("mean",) if red == "mean" else ()))


def _sdpa_prep(gen, rng, first):
    L, S, E, Ev = (int(rng.integers(1, 4)) for _ in range(4))
    batch = [int(rng.integers(1, 3)) for _ in range(int(rng.integers(0, 3)))]
    mask = int(rng.integers(0, 3))
    dt = _fdt(gen, first)
    ins = [gen.add_leaf(batch + [L, E], dt), gen.add_leaf(batch + [S, E], dt), gen.add_leaf(batch + [S, Ev], dt)]
    if mask == 1:
        ins.append(gen.add_leaf([L, S], "bool"))
    elif mask == 2:
        ins.append(gen.add_leaf([L, S], dt))
    return ins


@op("sdpa", arity=4, prep=_sdpa_prep, table=("matmul", "softmax"))
def b_sdpa(rng, ins, mode):
    L, S, E, Ev = (int(rng.integers(1, 4)) for _ in range(4))
    rng.integers(0, 3)
    q, k, v = ins[:3]
    need(all(a.isfloat and a.dtype == q.dtype for a in ins[:3]))
    need(q.shape[-2:] == (L, E) and k.shape[-2:] == (S, E) and v.shape[-2:] == (S, Ev))
    need(q.shape[:-2] == k.shape[:-2] == v.shape[:-2])
    m = ins[3] if len(ins) > 3 else None
    causal = m is None and rng.random() < 0.3 and L <= S
    scale = float(rng.choice([0.5, 1.3])) if rng.random() < 0.3 else None
    if m is not None:
        need(m.shape == (L, S))
        if m.dtype == "bool":
            need(bool(np.all(m.ref.any(axis=-1))))
        else:
            need(m.dtype == q.dtype)
    msrc = "{3}" if m is not None else "None"
    src = f"vk.nn.functional.scaled_dot_product_attention({{0}}, {{1}}, {{2}}, attn_mask={msrc}, is_causal={causal}" + (
        f", scale={scale!r})" if scale is not None else ")")
    mx = max(float(np.max(np.abs(fin(a.ref)), initial=1.0)) for a in ins)
    return Emit(src, f"RN.sdpa({{0}}, {{1}}, {{2}}, {msrc}, {causal}, {scale!r})", q.dtype, mult=8.0 * mx * mx * (E + S))


def _emb_prep(gen, rng, first):
    V, D = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    idx = gen.add_leaf(random_shape(gen.rng, gen.mode)[:2], "int64")
    return [idx, gen.add_leaf([V, D], _fdt(gen, first))]


@op("embedding", arity=2, prep=_emb_prep, table=("index_select", "reshape"))
def b_embedding(rng, ins, mode):
    V, D = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    i, w = ins
    need(i.dtype == "int64" and w.isfloat and w.shape == (V, D))
    pad_idx = int(rng.integers(0, V)) if rng.random() < 0.3 else None
    if pad_idx is not None and w.grad and np.any(np.clip(i.ref, 0, V - 1) == pad_idx):
        # the padding row gets no gradient (torch's rule), which finite differences of the
        # forward cannot express: only a padding_idx that is not looked up when w needs grad
        pad_idx = None
    src = f"vk.nn.functional.embedding({{0}}.clamp(0, {V - 1}), {{1}}" + (f", padding_idx={pad_idx})" if pad_idx is not None else ")")
    return Emit(src, f"np.asarray({{1}})[np.clip({{0}}, 0, {V - 1})]", w.dtype, exact=True)


@op("one_hot", table=())
def b_one_hot(rng, ins, mode):
    (x,) = ins
    need(x.dtype == "int64")
    c = int(rng.integers(1, 6))
    return Emit(f"vk.nn.functional.one_hot({{0}}.clamp(0, {c - 1}), {c})",
                f"(np.clip({{0}}, 0, {c - 1})[..., None] == np.arange({c})).astype(np.int64)", "int64", exact=True)


@op("creation", table=("full", "arange"))
def b_creation(rng, ins, mode):
    (x,) = ins
    shape = x.shape
    kind = int(rng.integers(0, 7))
    dt = str(rng.choice(["float32", "float64", "int64", "bool"])) if mode != "grad" else "float64"
    vdt = "bool_" if dt == "bool" else dt
    if kind == 0:
        v = {"bool": True, "int64": 3}.get(dt, 1.5)
        return Emit(f"vk.full({shape!r}, {v!r}, dtype=vk.{vdt})", f"np.full({shape!r}, {v!r}, dtype=np.{vdt})", dt,
                    exact=True, grad=False, table=("full",))
    if kind == 1:
        return Emit(f"vk.zeros_like({{0}})", "np.zeros_like({0})", x.dtype, exact=True, grad=False, table=("full",))
    if kind == 2:
        return Emit(f"vk.ones({', '.join(map(str, shape))}{', ' if shape else ''}dtype=vk.{vdt})",
                    f"np.ones({shape!r}, dtype=np.{vdt})", dt, exact=True, grad=False, table=("full",))
    if kind == 3:
        n = int(rng.integers(0, 6))
        if rng.random() < 0.5:
            return Emit(f"vk.arange({n})", f"np.arange({n}, dtype=np.int64)", "int64", exact=True, grad=False,
                        table=("arange",))
        a, st = float(np.round(rng.uniform(-2, 2), 1)), float(rng.choice([0.5, 0.25, 1.0, -0.5]))
        b = float(a + st * n)
        return Emit(f"vk.arange({a!r}, {b!r}, {st!r})", f"np.arange({a!r}, {b!r}, {st!r})", "float32",
                    exact=False, grad=False, table=("arange",))
    if kind == 4:
        n = int(rng.integers(1, 6))
        a, b = float(np.round(rng.uniform(-2, 2), 1)), float(np.round(rng.uniform(-2, 2), 1))
        ref = f"np.linspace({a!r}, {b!r}, {n})"
        return Emit(f"vk.linspace({a!r}, {b!r}, {n})", ref, "float32", exact=False, grad=False, table=("arange",))
    if kind == 5:
        n, m = int(rng.integers(0, 4)), int(rng.integers(0, 4))
        return Emit(f"vk.eye({n}, {m})", f"np.eye({n}, {m})", "float32", exact=True, grad=False, table=("full",))
    v = float(np.round(rng.uniform(-2, 2), 2))
    fdt = float_of(x.dtype)
    return Emit(f"vk.full_like({{0}}, {v!r}, dtype=vk.{fdt})", f"np.full({shape!r}, {v!r})", fdt, exact=True,
                grad=False, table=("full",))



# ---------------------------------------------------------------------------------------------
# generation

# grad: float64, gradients checked against finite differences; mixed: float32/float64/int64/bool
# with typed-error programs; nan: NaN/inf in the inputs; big: mixed dtypes with 3k-100k elements
# (the multithreaded kernel paths), gradients checked by directional finite differences.
MODES = (("grad", 0.42), ("mixed", 0.40), ("nan", 0.10), ("big", 0.08))
BIG_EXCLUDED = {"scatter_add", "index_add", "nonzero"}  # numpy references that loop in Python


def lim(mode, small):
    return 150_000 if mode == "big" else small


def op_weights(mode):
    names, ws = [], []
    for n, d in OPS.items():
        if mode == "nan" and not d["nan_ok"]:
            continue
        if mode == "big" and n in BIG_EXCLUDED:
            continue
        names.append(n)
        ws.append(d["weight"])
    ws = np.array(ws, dtype=np.float64)
    return names, ws / ws.sum()


def random_shape(rng, mode):
    if mode == "big":
        target = math.exp(rng.uniform(math.log(3000), math.log(70000)))
        r = int(rng.integers(1, 5))
        shape = [max(1, int(round(target ** (1 / r) * rng.uniform(0.5, 1.5)))) for _ in range(r)]
        if r > 1 and rng.random() < 0.3:
            shape[int(rng.integers(0, r))] = 1
        while int(np.prod(shape)) > 100_000:
            i = int(np.argmax(shape))
            shape[i] = max(1, shape[i] // 2)
        return shape
    k = int(rng.choice([0, 1, 2, 3, 4], p=[0.08, 0.25, 0.35, 0.22, 0.10]))
    shape = []
    for _ in range(k):
        r = rng.random()
        if r < 0.2:
            shape.append(1)
        elif r < 0.24 and mode != "grad":
            shape.append(0)
        else:
            shape.append(int(rng.integers(2, 5)))
    while int(np.prod(shape)) > (48 if mode == "grad" else 96):
        i = int(np.argmax(shape))
        shape[i] = max(1, shape[i] // 2)
    return shape


def broadcast_partner(rng, shape, mode):
    """A shape that broadcasts with `shape` (sometimes one that does not, in mixed mode)."""
    r = rng.random()
    if r < 0.3:
        return list(shape)
    drop = int(rng.integers(0, len(shape) + 1))
    s = [1 if rng.random() < 0.3 else d for d in shape[drop:]]
    if rng.random() < 0.15 and len(s) < 4:
        s = [int(rng.integers(1, 3))] + s if not shape else s
    if mode == "mixed" and rng.random() < 0.04 and s:
        s[-1] = s[-1] + 2
    return s


class Generator:
    def __init__(self, seed):
        self.seed = seed
        self.rng = np.random.default_rng([seed, 0xD1FF])
        r = self.rng.random()
        acc = 0.0
        for m, p in MODES:
            acc += p
            if r < acc:
                self.mode = m
                break
        self.leaves = []
        self.ops = []
        self.vals = []  # instantiated Vals (leaves then ops)
        self.extra = {}  # more keys of the program (diff_fuzz_ext: "margin")

    def leaf_dtype(self):
        r = self.rng.random()
        if self.mode == "grad":
            return "float64" if r < 0.85 else ("int64" if r < 0.93 else "bool")
        if r < 0.45:
            return "float32"
        if r < 0.65:
            return "float64"
        if r < 0.82:
            return "int64"
        if r < 0.86:
            return "int32"
        return "bool"

    def add_leaf(self, shape=None, dtype=None):
        rng = self.rng
        dtype = dtype or self.leaf_dtype()
        shape = list(random_shape(rng, self.mode) if shape is None else shape)
        kind = "normal"
        if dtype in FLOATS:
            if self.mode == "nan":
                kind = "special" if rng.random() < 0.7 else "normal"
            else:
                kind = str(rng.choice(["normal", "normal", "pos", "wide", "intvals"] if self.mode != "grad"
                                      else ["normal", "normal", "pos", "wide"]))
        grad = dtype in FLOATS and (self.mode == "grad" or rng.random() < 0.5)
        spec = dict(shape=shape, dtype=dtype, seed=int(rng.integers(0, 2 ** 31)), kind=kind, grad=grad)
        self.leaves.append(spec)
        return f"x{len(self.leaves) - 1}"

    def pick(self, pool, pred=lambda v: True):
        c = [v for v in pool if pred(v)]
        if not c:
            return None
        if self.rng.random() < 0.55:
            return c[-1]
        return c[int(self.rng.integers(0, len(c)))]

    def generate(self):
        rng = self.rng
        for _ in range(int(rng.integers(1, 3))):
            self.add_leaf()
        n_ops = int(rng.integers(1, 9))
        names, probs = op_weights(self.mode)
        prog = None
        for _ in range(n_ops):
            for _attempt in range(30):
                name = str(rng.choice(names, p=probs))
                if self.mode == "grad" and not OPS[name]["grad_ok"]:
                    continue
                n_leaves = len(self.leaves)
                seed = int(rng.integers(0, 2 ** 31))
                try:
                    spec = self.choose_inputs(name, seed)
                except Invalid:
                    spec = None
                if spec is None:
                    del self.leaves[n_leaves:]
                    continue
                spec["seed"] = seed
                cand = dict(mode=self.mode, leaves=self.leaves, ops=self.ops + [spec], **self.extra)
                try:
                    inst = instantiate(cand, check_margins=True)
                except Invalid:
                    del self.leaves[n_leaves:]
                    continue
                self.ops.append(spec)
                prog = inst
                break
            if prog is not None and prog.err_at is not None:
                break
        if prog is None or not self.ops:
            # every attempt was rejected: a program of one safe op
            self.ops = [dict(name="contiguous", ins=["x0"], seed=1)]
        return dict(seed=self.seed, mode=self.mode, leaves=self.leaves, ops=self.ops, **self.extra)

    def current_vals_with_leaves(self):
        """name -> Val, for the values so far and every leaf (also ones added by a prep)."""
        d = {v.name: v for v in self.current_vals()}
        for i, spec in enumerate(self.leaves):
            nm = f"x{i}"
            if nm not in d:
                a = make_leaf_array(spec)
                ref = a.astype(np.float64) if spec["dtype"] in FLOATS else a.astype(np.int64) if spec["dtype"] in INTS else a
                d[nm] = Val(nm, ref, spec["dtype"], bool(spec.get("grad")))
        return d

    def current_vals(self):
        cand = dict(mode=self.mode, leaves=self.leaves, ops=self.ops)
        return instantiate(cand, check_margins=False).vals

    def choose_inputs(self, name, seed):
        """Input refs for op `name`: existing values, or new leaves shaped to fit."""
        rng = self.rng
        vals = self.current_vals()
        arity = OPS[name]["arity"]
        first = self.pick(vals)
        if first is None:
            return None
        if OPS[name]["prep"] is not None:
            ins = OPS[name]["prep"](self, np.random.default_rng([seed, 77]), first)
            return None if ins is None else dict(name=name, ins=ins)
        if name == "where":
            cond = self.pick(vals, lambda v: v.dtype == "bool")
            if cond is None or rng.random() < 0.3:
                cond_name = self.add_leaf(broadcast_partner(rng, list(first.shape), self.mode), "bool")
            else:
                cond_name = cond.name
            other = self.pick(vals, lambda v: v is not first and _bcast_ok(v.shape, first.shape))
            if other is None or rng.random() < 0.5:
                dt = first.dtype if rng.random() < 0.7 else self.leaf_dtype()
                if self.mode == "grad" and dt in FLOATS:
                    dt = "float64"
                other_name = self.add_leaf(broadcast_partner(rng, list(first.shape), self.mode), dt)
            else:
                other_name = other.name
            return dict(name=name, ins=[cond_name, first.name, other_name])
        if name == "masked_fill":
            m = self.pick(vals, lambda v: v.dtype == "bool" and _bcast_into(v.shape, first.shape))
            if m is None or rng.random() < 0.4:
                s = broadcast_partner(rng, list(first.shape), "grad")
                m_name = self.add_leaf(s, "bool")
            else:
                m_name = m.name
            return dict(name=name, ins=[first.name, m_name])
        if arity == 1:
            return dict(name=name, ins=[first.name])
        if name == "matmul":
            return self.matmul_inputs(vals, first)
        if name == "cat":
            return self.cat_inputs(vals, first)
        if name in ("scatter_add", "index_add"):
            if first.ndim == 0:
                return None
            shape = list(first.shape)
            if name == "index_add":
                d = int(rng.integers(0, len(shape)))
                shape[d] = int(rng.integers(0, 4))
                dt = first.dtype
            else:
                shape = [int(rng.integers(1, s + 2)) if s else 1 for s in shape]
                dt = first.dtype if rng.random() < 0.8 else self.leaf_dtype()
            if self.mode == "grad" and dt in FLOATS:
                dt = "float64"
            return dict(name=name, ins=[first.name, self.add_leaf(shape, dt)])
        # binary elementwise
        other = self.pick(vals, lambda v: _bcast_ok(v.shape, first.shape))
        if other is None or rng.random() < 0.5:
            dt = first.dtype if rng.random() < 0.6 else self.leaf_dtype()
            if self.mode == "grad" and dt in FLOATS:
                dt = "float64"
            other_name = self.add_leaf(broadcast_partner(rng, list(first.shape), self.mode), dt)
        else:
            other_name = other.name
        ins = [first.name, other_name]
        if rng.random() < 0.3:
            ins.reverse()
        return dict(name=name, ins=ins)

    def matmul_inputs(self, vals, a):
        rng = self.rng
        if a.ndim == 0:
            return None
        if a.ndim == 1:
            k = a.shape[0]
        else:
            k = a.shape[-1]
        r = rng.random()
        if r < 0.25:
            bshape = [k]
        else:
            n = int(rng.integers(1, 5))
            batch = []
            if a.ndim >= 2 and rng.random() < 0.6:
                abatch = list(a.shape[:-2])
                batch = [1 if rng.random() < 0.3 else s for s in abatch[int(rng.integers(0, len(abatch) + 1)):]]
            elif rng.random() < 0.3:
                batch = [int(rng.integers(1, 3))]
            bshape = batch + [k, n]
        if self.mode == "mixed" and rng.random() < 0.05:
            bshape[-2 if len(bshape) > 1 else -1] += 1
        dt = a.dtype if rng.random() < 0.7 else self.leaf_dtype()
        if self.mode == "grad" and dt in FLOATS:
            dt = "float64"
        if dt == "bool":
            dt = "int64"
        bname = self.add_leaf(bshape, dt)
        ins = [a.name, bname]
        if rng.random() < 0.3 and a.ndim >= 2:  # a on the right: b @ a with b (.., m, rows of a)
            self.leaves.pop()
            m = int(rng.integers(1, 4))
            shape = ([m] if rng.random() < 0.5 else [int(rng.integers(1, 3)), m]) + [a.shape[-2]]
            if rng.random() < 0.3:
                shape = [a.shape[-2]]
            ins = [self.add_leaf(shape, dt), a.name]
        return dict(name="matmul", ins=ins)

    def cat_inputs(self, vals, a):
        rng = self.rng
        k = int(rng.integers(1, 4))
        names = [a.name]
        for _ in range(k):
            other = self.pick(vals, lambda v: v.shape == a.shape and v is not a)
            if other is not None and rng.random() < 0.4:
                names.append(other.name)
                continue
            shape = list(a.shape)
            if shape and rng.random() < 0.6:
                d = int(rng.integers(0, len(shape)))
                shape[d] = int(rng.integers(0, 4))
            if rng.random() < 0.05:
                shape = [0]
            dt = a.dtype if rng.random() < 0.7 else self.leaf_dtype()
            if self.mode == "grad" and dt in FLOATS:
                dt = "float64"
            names.append(self.add_leaf(shape, dt))
        return dict(name="cat", ins=names)


def _bcast_ok(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _bcast_into(m, x):
    try:
        return np.broadcast_shapes(m, x) == tuple(x)
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------
# instantiation: a program spec -> concrete Vals and sources


class Concrete:
    def __init__(self, mode):
        self.mode = mode
        self.vals = []      # Vals: leaves then op outputs
        self.leaves = []    # (name, array, dtype, grad)
        self.lines = []     # Lines
        self.err_at = None
        self.table = set()


class Line:
    __slots__ = ("name", "vk", "np", "dtype", "grad", "err", "op", "exact", "ins", "mult")

    def __init__(self, name, vk_src, np_src, dtype, grad, err, op, exact, ins=(), mult=1.0):
        self.name, self.vk, self.np, self.dtype, self.grad = name, vk_src, np_src, dtype, grad
        self.err, self.op, self.exact, self.ins, self.mult = err, op, exact, tuple(ins), mult


def fmt(src, names):
    return src.format(*names)


def instantiate(prog, check_margins=False):
    mode = prog["mode"]
    c = Concrete(mode)
    env = {}
    for i, spec in enumerate(prog["leaves"]):
        a = make_leaf_array(spec)
        name = f"x{i}"
        ref = a.astype(np.float64) if spec["dtype"] in FLOATS else a.astype(np.int64) if spec["dtype"] in INTS else a
        v = Val(name, ref, spec["dtype"], bool(spec.get("grad")) and spec["dtype"] in FLOATS,
                exact=spec["dtype"] not in FLOATS or spec.get("kind") == "intvals" or spec.get("round") is not None)
        c.vals.append(v)
        env[name] = v
        c.leaves.append((name, a, spec["dtype"], v.grad))
    for j, spec in enumerate(prog["ops"]):
        if c.err_at is not None:
            raise Invalid()  # ops after an expected error are not part of a program
        ins = []
        for r in spec["ins"]:
            if r not in env:
                raise Invalid()
            ins.append(env[r])
        d = OPS.get(spec["name"])
        if d is None:
            raise Invalid()
        if d["arity"] == 2 and spec["name"] != "cat" and len(ins) != 2:
            raise Invalid()
        if d["arity"] == 1 and d["prep"] is None and len(ins) != 1:
            raise Invalid()
        rng = np.random.default_rng([spec["seed"], 77])
        with np.errstate(all="ignore"):
            e = d["f"](rng, ins, mode)
        name = f"v{j}"
        names = [v.name for v in ins]
        vk_src = fmt(e.vk_src, names)
        c.table.update(d["table"] if not e.table else e.table)
        if e.err is not None:
            c.lines.append(Line(name, vk_src, None, None, False, e.err, spec["name"], False))
            c.err_at = j
            continue
        np_src = fmt(e.np_src, names)
        try:
            ref = ref_eval(np_src, {v.name: v.ref for v in ins}, e.dtype)
        except Invalid:
            raise
        except Exception:
            raise Invalid()
        if mode != "nan" and ref.dtype.kind == "f":
            if not np.all(np.isfinite(ref)) or (ref.size and np.max(np.abs(ref)) > 1e6):
                raise Invalid()
        need(ref.size <= lim(mode, 4096))
        if check_margins and e.margin < prog.get("margin", {"nan": 0.0, "big": 2e-5}.get(mode, 1e-3)):
            raise Invalid()
        grad = e.dtype in FLOATS and any(v.grad for v in ins) and (e.grad is None or e.grad)
        v = Val(name, ref, e.dtype, grad, exact=e.exact and all(v.exact for v in ins))
        c.vals.append(v)
        env[name] = v
        c.lines.append(Line(name, vk_src, np_src, e.dtype, grad, None, spec["name"], e.exact,
                            [v.name for v in ins], e.mult))
    return c


_CODE_CACHE = {}


def ref_eval(np_src, env, dtype, noise=None):
    code = _CODE_CACHE.get(np_src)
    if code is None:
        code = _CODE_CACHE[np_src] = compile(np_src, "<ref>", "eval")
    ns = {"np": np, "R": R, "RN": RN}
    ns.update(env)
    R.exact64 = noise == "exact64"
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = np.asarray(eval(code, ns))
    finally:
        R.exact64 = False
    return to_ref(r, dtype, noise)


def to_ref(r, dtype, noise=None):
    if dtype in FLOATS:
        r = r.astype(np.float64)
        if dtype == "float32" and noise != "exact64":
            with np.errstate(all="ignore"):
                r = r.astype(np.float32).astype(np.float64)
        return r
    if dtype in INTS:
        if r.dtype.kind == "f":
            raise Invalid()
        return r.astype(np.int64)
    if dtype == "bool":
        if r.dtype != np.bool_:
            raise Invalid()
        return r
    raise Invalid()


def eval_reference(c, leaf_arrays=None, noise=0.0, rng=None, exact64=False):
    """Re-run the reference of a concrete program: leaf values (float64) may be replaced; with
    noise, every continuous leaf and every rounding op's output is perturbed by `noise` ulps."""
    env = {}
    for k, v in enumerate(c.vals[:len(c.leaves)]):
        a = v.ref if leaf_arrays is None else leaf_arrays[k]
        if noise and v.isfloat and not v.exact:
            a = a * (1.0 + noise * EPS[v.dtype] * rng.uniform(-1, 1, size=a.shape))
        env[v.name] = a
    out = []
    for ln in c.lines:
        if ln.err is not None:
            break
        r = ref_eval(ln.np, env, ln.dtype, "exact64" if exact64 else None)
        if noise and ln.dtype in FLOATS and not ln.exact:
            # relative noise, plus an absolute part scaled by the op's inputs (cancellation
            # inside the op) and by its size (reductions, matmul)
            m_in = 0.0
            for n in ln.ins:
                f = fin(np.asarray(env[n], dtype=np.float64))
                if f.size:
                    m_in = max(m_in, float(np.max(np.abs(f))))
            u = rng.uniform(-1, 1, size=r.shape)
            with np.errstate(all="ignore"):
                r = r + noise * EPS[ln.dtype] * u * (np.abs(r) + ln.mult * m_in)
        env[ln.name] = r
        out.append(r)
    return out


# ---------------------------------------------------------------------------------------------
# running a program


class Failure(Exception):
    def __init__(self, kind, op, msg):
        super().__init__(f"{kind} at {op}: {msg}")
        self.kind, self.op, self.msg = kind, op, msg

    def signature(self):
        return (self.kind, self.op)


def vk_dtype_name(t):
    return str(t.dtype).replace("vkml.", "")


def leaf_tensor(a, dtype, grad):
    return vk.tensor(a, requires_grad=bool(grad))


def run_vkml(c):
    """Execute the vkml lines; return the namespace. Unexpected exceptions become Failures."""
    ns = {"vk": vk, "np": np}
    for name, a, dtype, grad in c.leaves:
        ns[name] = leaf_tensor(a, dtype, grad)
    for ln in c.lines:
        name, vk_src, err, opname = ln.name, ln.vk, ln.err, ln.op
        code = _CODE_CACHE.get("vk:" + vk_src)
        if code is None:
            code = _CODE_CACHE["vk:" + vk_src] = compile(vk_src, "<vk>", "eval")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ns[name] = eval(code, ns)
        except Exception as ex:  # noqa: BLE001
            expected = {"DTypeError": vk.DTypeError, "ShapeError": vk.ShapeError,
                        "IndexError": IndexError, "NotImplementedError": NotImplementedError,
                        "RuntimeError": RuntimeError}
            if err is not None and isinstance(ex, tuple(expected[e] for e in err.split("|"))):
                return ns
            if err is not None:
                raise Failure("wrong-exception", opname,
                              f"`{vk_src}` raised {type(ex).__name__}: {ex} (expected {err})")
            raise Failure("exception", opname, f"`{vk_src}` raised {type(ex).__name__}: {ex}")
        if err is not None:
            raise Failure("no-exception", opname, f"`{vk_src}` did not raise {err}")
    return ns


def compare_forward(c, ns, rng):
    noisy = [eval_reference(c, noise=4.0, rng=rng) for _ in range(3)]
    for k, ln in enumerate(c.lines):
        if ln.err is not None:
            break
        name, vk_src, np_src, dtype, grad, opname = ln.name, ln.vk, ln.np, ln.dtype, ln.grad, ln.op
        t = ns[name]
        ref = c.vals[len(c.leaves) + k].ref
        if not isinstance(t, vk.Tensor):
            raise Failure("type", opname, f"`{vk_src}` returned {type(t).__name__}, not a Tensor")
        if tuple(t.shape) != ref.shape:
            raise Failure("shape", opname, f"`{vk_src}`: shape {tuple(t.shape)}, numpy gives {ref.shape}")
        got_dt = vk_dtype_name(t)
        if got_dt != dtype:
            raise Failure("dtype", opname, f"`{vk_src}`: dtype {got_dt}, expected {dtype}")
        if bool(t.requires_grad) != grad:
            raise Failure("requires_grad", opname, f"`{vk_src}`: requires_grad={t.requires_grad}, expected {grad}")
        got = np.array(t.detach().numpy(), copy=True)
        if got.shape != ref.shape:
            raise Failure("shape", opname, f"`{vk_src}`: numpy() shape {got.shape} != {ref.shape}")
        others = [n[k] for n in noisy]
        bad = mismatch(got, ref, others, dtype)
        if bad is not None:
            raise Failure("value", opname, f"`{vk_src}` (numpy: `{np_src}`): {bad}")


def mismatch(got, ref, others, dtype):
    if ref.size == 0:
        return None
    if dtype in FLOATS:
        g = got.astype(np.float64)
        stable_nan = np.all([np.isnan(o) == np.isnan(ref) for o in others], axis=0)
        nan_bad = (np.isnan(g) != np.isnan(ref)) & stable_nan
        if nan_bad.any():
            i = np.argwhere(nan_bad)[0]
            return f"NaN mismatch at {tuple(i)}: got {g[tuple(i)]}, expected {ref[tuple(i)]}"
        fin_ = ~np.isnan(ref) & ~np.isnan(g)
        inf_ref = np.isinf(ref) & fin_
        stable_inf = np.all([np.isinf(o) == np.isinf(ref) for o in others], axis=0)
        inf_bad = inf_ref & stable_inf & (g != ref)
        if inf_bad.any():
            i = np.argwhere(inf_bad)[0]
            return f"inf mismatch at {tuple(i)}: got {g[tuple(i)]}, expected {ref[tuple(i)]}"
        both = fin_ & np.isfinite(ref) & stable_inf
        with np.errstate(all="ignore"):
            spread = np.max([np.abs(np.where(np.isfinite(o), o, ref) - ref) for o in others], axis=0)
            tol = 4.0 * spread + 16 * EPS[dtype] * np.abs(ref) + (1e-30 if dtype == "float64" else 1e-37)
            err = np.abs(g - ref)
        bad = both & ~(err <= tol)
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            return (f"{int(bad.sum())} of {ref.size} values differ; first at {i}: got {g[i]!r}, "
                    f"expected {ref[i]!r} (tolerance {tol[i]:.3g})")
        return None
    stable = np.all([o == ref for o in others], axis=0)
    bad = (got != ref) & stable
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return f"{int(bad.sum())} of {ref.size} values differ; first at {i}: got {got[i]!r}, expected {ref[i]!r}"
    return None


def grad_roots(c, ns):
    roots = []
    for k, ln in enumerate(c.lines):
        if ln.err is not None:
            break
        if ln.grad and c.vals[len(c.leaves) + k].ref.size > 0:
            roots.append(k)
    return roots


def _fd_loss(c, arrays, roots, weights):
    """sum_k <w_k, out_k> of the numpy reference at perturbed leaves; NaN (that entry is not
    compared) when the perturbation changes a value-dependent shape (nonzero of a grad leaf)."""
    try:
        outs = eval_reference(c, leaf_arrays=arrays, exact64=True)
    except Exception:  # noqa: BLE001
        return math.nan
    total = 0.0
    for k, w in zip(roots, weights):
        if outs[k].shape != w.shape:
            return math.nan
        total += float(np.sum(outs[k] * w))
    return total


def numeric_grads(c, roots, weights, leaves_idx, h=1e-6):
    """Central differences of sum_k <w_k, out_k> over the float leaves (numpy reference)."""
    base = [v.ref.astype(np.float64) if v.isfloat else v.ref for v in c.vals[:len(c.leaves)]]

    def loss(arrays):
        return _fd_loss(c, arrays, roots, weights)

    grads, errs = [], []
    for li in leaves_idx:
        g = np.zeros_like(base[li])
        e = np.zeros_like(base[li])
        for idx in np.ndindex(*base[li].shape):
            vals = []
            for step in (h, 2 * h):
                arrs = list(base)
                a = base[li].copy()
                a[idx] += step
                arrs[li] = a
                lp = loss(arrs)
                a = base[li].copy()
                a[idx] -= step
                arrs[li] = a
                lm = loss(arrs)
                vals.append((lp - lm) / (2 * step))
            g[idx] = vals[0]
            e[idx] = abs(vals[0] - vals[1])
        grads.append(g)
        errs.append(e)
    lscale = sum(float(np.sum(np.abs(c.vals[len(c.leaves) + k].ref * w))) for k, w in zip(roots, weights))
    return grads, errs, lscale


def check_grad(c, ns, rng):
    roots = grad_roots(c, ns)
    grad_leaves = [i for i, (name, a, dt, g) in enumerate(c.leaves) if g]
    if not roots or not grad_leaves:
        return "no-roots"
    weights = [rng.uniform(-1, 1, size=c.vals[len(c.leaves) + k].ref.shape) for k in roots]
    tensors = [ns[c.lines[k].name] for k in roots]
    wts = [vk.tensor(w.astype(NP_DT[c.lines[k].dtype])) for k, w in zip(roots, weights)]
    try:
        vk.autograd.backward(tensors, wts)
    except Exception as ex:  # noqa: BLE001
        raise Failure("backward-exception", "backward", f"{type(ex).__name__}: {ex}")
    all64 = all(c.leaves[i][2] == "float64" for i in grad_leaves) and all(
        c.lines[k].dtype == "float64" for k in roots) and c.mode == "grad"
    for i in grad_leaves:
        name, a, dt, _ = c.leaves[i]
        g = ns[name].grad
        if g is not None:
            if tuple(g.shape) != a.shape:
                raise Failure("grad-shape", "backward", f"{name}.grad shape {tuple(g.shape)} != {a.shape}")
            if vk_dtype_name(g) != dt:
                raise Failure("grad-dtype", "backward", f"{name}.grad dtype {vk_dtype_name(g)} != {dt}")
    total = sum(c.leaves[i][1].size for i in grad_leaves)
    if c.mode == "nan":
        return "smoke"
    if total > 96:
        return check_grad_directional(c, ns, rng, roots, weights, grad_leaves)
    fd, errs, lscale = numeric_grads(c, roots, weights, grad_leaves)
    for i, g_fd, e_fd in zip(grad_leaves, fd, errs):
        name, a, dt, _ = c.leaves[i]
        g = ns[name].grad
        got = np.zeros(a.shape) if g is None else np.array(g.detach().numpy(), dtype=np.float64)
        if all64:
            tol = 1e-6 + 1e-5 * np.abs(g_fd) + 20 * e_fd + 1e-9 * lscale
        else:
            tol = 1e-3 * max(1.0, float(np.max(np.abs(g_fd), initial=0))) + 1e-2 * np.abs(g_fd) + 20 * e_fd + 1e-5 * lscale
        with np.errstate(all="ignore"):
            bad = ~(np.abs(got - g_fd) <= tol) & np.isfinite(g_fd) & np.isfinite(tol)
        if bad.any():
            j = tuple(np.argwhere(bad)[0])
            raise Failure("grad", "backward",
                          f"{name}.grad{list(j)} = {got[j]!r}, finite differences give {g_fd[j]!r} "
                          f"({int(bad.sum())} of {a.size} entries differ)")
    return "ok"


def check_grad_directional(c, ns, rng, roots, weights, grad_leaves, h=1e-6):
    """Large leaves: <grad, v> against the central difference of the loss along v (2 random v)."""
    base = [v.ref for v in c.vals[:len(c.leaves)]]
    all64 = all(c.leaves[i][2] == "float64" for i in grad_leaves) and all(
        c.lines[k].dtype == "float64" for k in roots)

    def loss(arrays):
        return _fd_loss(c, arrays, roots, weights)

    lscale = sum(float(np.sum(np.abs(c.vals[len(c.leaves) + k].ref * w))) for k, w in zip(roots, weights))
    for _ in range(2):
        dirs = {i: rng.standard_normal(base[i].shape) for i in grad_leaves}
        ests = []
        for step in (h, 2 * h):
            plus, minus = list(base), list(base)
            for i, v in dirs.items():
                plus[i] = base[i] + step * v
                minus[i] = base[i] - step * v
            ests.append((loss(plus) - loss(minus)) / (2 * step))
        got = 0.0
        for i, v in dirs.items():
            g = ns[c.leaves[i][0]].grad
            if g is not None:
                got += float(np.sum(np.array(g.detach().numpy(), dtype=np.float64) * v))
        fd, err = ests[0], abs(ests[0] - ests[1])
        if not math.isfinite(fd):
            return "fd-nonfinite"
        rel = 1e-6 if all64 else 1e-3
        tol = rel * (abs(fd) + math.sqrt(max(total_size(dirs), 1))) + 20 * err + 1e-9 * lscale / h * 1e-6
        if not abs(got - fd) <= tol:
            raise Failure("grad", "backward",
                          f"<grad, v> = {got!r} but the directional finite difference is {fd!r} "
                          f"(tolerance {tol:.3g})")
    return "ok-directional"


def total_size(d):
    return sum(v.size for v in d.values())


def run_program(prog, check=True):
    """Run one program; returns a dict (status, ...). Raises nothing for vkml misbehaviour:
    failures are returned as status 'fail'."""
    if prog.get("program", "ops") != "ops":
        return ext().run_program(prog)
    c = instantiate(prog)
    rng = np.random.default_rng([prog.get("seed", 0), 99])
    try:
        ns = run_vkml(c)
        if c.err_at is None:
            compare_forward(c, ns, rng)
            g = check_grad(c, ns, rng) if check else "skipped"
        else:
            g = "error-program"
    except Failure as f:
        return dict(status="fail", kind=f.kind, op=f.op, msg=f.msg, table=sorted(c.table),
                    ops=[ln.op for ln in c.lines])
    return dict(status="ok", grad=g, table=sorted(c.table), ops=[ln.op for ln in c.lines],
                mode=c.mode)


# Program kinds: "ops" (the programs above) and those of diff_fuzz_ext (in-place writes and
# views, hooks, second order, huge sizes). --kinds picks the ones a run draws from, each seed
# drawing one kind; with the default (ops only) a seed gives the same program as before.
KINDS = ("ops", "inplace", "hooks", "second", "sizes")
ACTIVE_KINDS = ["ops"]


def ext():
    import diff_fuzz_ext  # noqa: E402  (imports this module back: import it last)
    return diff_fuzz_ext


def parse_kinds(text):
    kinds = list(KINDS) if text in (None, "", "all") else text.split(",")
    for k in kinds:
        if k not in KINDS:
            raise SystemExit(f"unknown program kind {k!r} (kinds: {', '.join(KINDS)}, all)")
    return kinds


def kind_of(seed, kinds=None):
    kinds = kinds or ACTIVE_KINDS
    if len(kinds) == 1:
        return kinds[0]
    return kinds[int(np.random.default_rng([seed, 0x4B1D]).integers(0, len(kinds)))]


def generate(seed, kinds=None):
    kind = kind_of(seed, kinds)
    if kind == "ops":
        return Generator(seed).generate()
    return ext().generate(seed, kind)


# ---------------------------------------------------------------------------------------------
# worker / parent


def apply_break(spec):
    """Deliberately break the fuzzer's side (to see that it reports it): "ref:OP" perturbs the
    numpy reference of generator op OP; "grad:FN" gives vk.FN / Tensor.FN a wrong gradient;
    "crash:FN" makes vk.FN / Tensor.FN abort the process."""
    if not spec:
        return
    kind, name = spec.split(":")
    if ext().apply_break(kind, name):  # the kinds of diff_fuzz_ext
        return
    if kind == "ref":
        build = OPS[name]["f"]

        def broken(rng, ins, mode):
            e = build(rng, ins, mode)
            if e.np_src is not None and e.dtype in FLOATS:
                e.np_src = f"(({e.np_src}) * 1.001 + 0.001)"
            elif e.np_src is not None and e.dtype in INTS:
                e.np_src = f"(({e.np_src}) + 1)"
            return e
        OPS[name]["f"] = broken
    elif kind == "crash":
        def crash(*a, **k):
            os.abort()
        setattr(vk, name, crash)
        setattr(vk.Tensor, name, crash)
    else:
        real = getattr(vk, name)

        def wrong(x, *a, **k):
            out = real(x, *a, **k)
            if not (isinstance(x, vk.Tensor) and x.requires_grad and vk.is_grad_enabled()):
                return out
            y = out.detach()
            return vk.from_op(y, [x], lambda g: [2.0 * g * y], op="broken_" + name)
        setattr(vk, name, wrong)
        setattr(vk.Tensor, name, wrong)


def limit_memory(gib=6):
    """A runaway allocation in a worker raises MemoryError instead of waking the OOM killer.
    Not under AddressSanitizer, whose shadow memory needs terabytes of address space: there,
    ASAN_OPTIONS=max_allocation_size_mb (make test-python-asan) caps each allocation instead."""
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (gib << 30, gib << 30))
    except (ImportError, ValueError, OSError):
        pass


def worker(seeds):
    limit_memory()
    apply_break(os.environ.get("DIFF_FUZZ_BREAK"))
    for s in seeds:
        print(f"BEGIN {s}", flush=True)
        t0 = time.perf_counter()
        try:
            prog = generate(s)
            res = run_program(prog)
        except Exception as ex:  # a bug of the fuzzer itself
            res = dict(status="fuzzer-error", msg=f"{type(ex).__name__}: {ex}",
                       tb=traceback.format_exc()[-2000:])
        res["seed"] = s
        res.setdefault("program", kind_of(s))
        res["t"] = time.perf_counter() - t0
        print("RESULT " + json.dumps(res), flush=True)


def python_env():
    """The workers' environment: they import the same vkml as this process."""
    env = dict(os.environ)
    if vk is not None:
        pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(vk.__file__)))
        env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_batch(seeds, timeout=120.0, kinds=None):
    """Run seeds in worker subprocesses; a crash (or a hang) is reported for the seed that was
    running and the rest go on in a fresh worker. Yields result dicts. kinds: the program
    kinds the seeds draw from (default: ACTIVE_KINDS)."""
    import selectors
    import tempfile
    seeds = list(seeds)
    kinds = list(kinds or ACTIVE_KINDS)
    while seeds:
        done, current, hung = set(), None, False
        with tempfile.TemporaryFile(mode="w+") as errf:
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                                  ",".join(map(str, seeds)), "--kinds", ",".join(kinds)],
                                 stdout=subprocess.PIPE, stderr=errf, text=True, env=python_env())
            try:
                sel = selectors.DefaultSelector()
                sel.register(p.stdout, selectors.EVENT_READ)
                last = time.time()
                while True:
                    if not sel.select(timeout=1.0):
                        if p.poll() is not None:
                            break
                        if current is not None and time.time() - last > timeout:
                            hung = True
                            break
                        continue
                    line = p.stdout.readline()
                    if not line:
                        break
                    if line.startswith("BEGIN "):
                        current, last = int(line.split()[1]), time.time()
                    elif line.startswith("RESULT "):
                        r = json.loads(line[7:])
                        done.add(r["seed"])
                        current = None
                        yield r
            finally:
                if p.poll() is None:
                    p.kill()
                p.wait()
            errf.seek(0)
            err = errf.read()[-3000:]
        if current is not None:
            why = f"worker timed out after {timeout:.0f}s" if hung else f"worker died with exit code {p.returncode}"
            yield dict(seed=current, status="fail", kind="hang" if hung else "crash", op="?",
                       msg=why + (f"; stderr: {err}" if err else ""), table=[], ops=[], t=0.0,
                       program=kind_of(current, kinds))
            done.add(current)
        elif not done:
            raise RuntimeError(f"worker failed (exit {p.returncode}): {err}")
        seeds = [s for s in seeds if s not in done]


def report(results, t0, out=sys.stdout):
    ok = [r for r in results if r["status"] == "ok"]
    fails = [r for r in results if r["status"] != "ok"]
    table, ops = set(), set()
    grads = {}
    for r in results:
        prog = r.get("program", "ops")
        table.update(r.get("table", []))
        if prog == "ops":
            ops.update(r.get("ops", []))
        if r["status"] == "ok":
            g = r["grad"] if prog == "ops" else f"{prog}:{r['grad']}"
            grads[g] = grads.get(g, 0) + 1
    dt = time.time() - t0
    n = len(results)
    print(f"programs: {n} ({len(ok)} ok, {len(fails)} failing) in {dt:.1f} s "
          f"({1000 * dt / max(n, 1):.1f} ms per program)", file=out)
    print(f"grad checks: {grads}", file=out)
    if any(r.get("program", "ops") == "ops" for r in results):
        print(f"generator ops covered: {len(ops)}/{len(OPS)}: {' '.join(sorted(ops))}", file=out)
        all_table = set(vk._C.op_names()) if vk is not None else set()
        print(f"vkml op-table ops covered: {len(table)}"
              + (f"/{len(all_table)}; not covered: {' '.join(sorted(all_table - table))}" if all_table else ""),
              file=out)
    sigs = {}
    for r in fails:
        sigs.setdefault((r.get("program", "ops"), r.get("kind"), r.get("op")), []).append(r)
    for (prog, kind, o), rs in sorted(sigs.items(), key=lambda kv: -len(kv[1])):
        where = "" if prog == "ops" else f" ({prog} program, --kinds {prog})"
        print(f"FAIL {kind} at {o}{where}: {len(rs)} seeds, e.g. seed {rs[0]['seed']}: "
              f"{rs[0].get('msg', '')[:400]}", file=out)
    return fails


def cmd_run(seeds, out=sys.stdout, deadline=None, verbose=False):
    t0 = time.time()
    results = []
    for r in run_batch(seeds):
        results.append(r)
        if verbose and r["status"] != "ok":
            print(f"seed {r['seed']}: {r.get('kind')} at {r.get('op')}: {r.get('msg', '')[:300]}", file=out, flush=True)
        if deadline and time.time() > deadline:
            break
    return results, report(results, t0, out)


# ---------------------------------------------------------------------------------------------
# minimiser


def outcome(prog, in_process):
    """The failure signature of a program, None when it passes, 'invalid' when it is not a
    well-formed program any more."""
    try:
        if prog.get("program", "ops") in ("ops", "hooks", "second"):
            instantiate(prog)  # Invalid when the shrink broke the program
        r = run_program(prog) if in_process else run_spec_subprocess(prog)
    except Invalid:
        return "invalid", None
    except Exception:  # noqa: BLE001
        return "invalid", None
    if r["status"] == "ok":
        return None, r
    return (r.get("kind"), r.get("op")), r


def run_spec_subprocess(prog, timeout=60):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--run-spec", json.dumps(prog)],
                       capture_output=True, text=True, timeout=timeout, env=python_env())
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return dict(status="fail", kind="crash", op="?", msg=f"exit {p.returncode}: {p.stderr[-1500:]}")


def _remove_op(prog, j):
    """Drop op j; later references to its output take its first input instead."""
    ops = [dict(o, ins=list(o["ins"])) for o in prog["ops"]]
    gone = ops.pop(j)
    repl = gone["ins"][0]
    ren = {f"v{k}": (f"v{k - 1}" if k > j else None) for k in range(len(prog["ops"]))}
    for o in ops[j:]:
        o["ins"] = [repl if r == f"v{j}" else r for r in o["ins"]]
    for o in ops:
        o["ins"] = [ren.get(r) or r if r.startswith("v") else r for r in o["ins"]]
    return dict(prog, ops=ops)


def _drop_unused_leaves(prog):
    used = {r for o in prog["ops"] for r in o["ins"]}
    keep = [i for i in range(len(prog["leaves"])) if f"x{i}" in used]
    if len(keep) == len(prog["leaves"]):
        return prog
    ren = {f"x{i}": f"x{k}" for k, i in enumerate(keep)}
    ops = [dict(o, ins=[ren.get(r, r) for r in o["ins"]]) for o in prog["ops"]]
    return dict(prog, leaves=[prog["leaves"][i] for i in keep], ops=ops)


def minimize(prog, log=print):
    # first in a subprocess: a crash must not kill the minimiser; later tries run in-process
    # (fast) unless the failure is a crash or a hang
    sig0, r0 = outcome(prog, in_process=False)
    in_process = sig0 not in (None, "invalid") and sig0[0] not in ("crash", "hang")
    if sig0 is None or sig0 == "invalid":
        raise SystemExit("the program does not fail")
    log(f"failure: {sig0}: {r0.get('msg', '')[:300]}")
    tries = 0

    def still(p):
        nonlocal tries
        tries += 1
        s, _ = outcome(p, in_process)
        return s == sig0

    if prog.get("program", "ops") in ("inplace", "sizes"):
        return ext().minimize_list(prog, still, log), sig0
    cur = _drop_unused_leaves(prog) if still(_drop_unused_leaves(prog)) else prog
    changed = True
    while changed:
        changed = False
        # drop ops, the last first
        for j in reversed(range(len(cur["ops"]))):
            if len(cur["ops"]) <= 1 or j >= len(cur["ops"]):
                continue
            cand = _drop_unused_leaves(_remove_op(cur, j))
            if still(cand):
                cur, changed = cand, True
        # drop leaves an op does not need: replace a leaf ref by another leaf of the same shape
        # shrink shapes: every dim of size s everywhere at once, then leaf by leaf
        sizes = sorted({d for l in cur["leaves"] for d in l["shape"] if d > 1}, reverse=True)
        for s in sizes:
            for new in (1, 2, s - 1):
                if new >= s:
                    continue
                cand = dict(cur, leaves=[dict(l, shape=[new if d == s else d for d in l["shape"]])
                                         for l in cur["leaves"]])
                if still(cand):
                    cur, changed = cand, True
                    break
        for i, l in enumerate(cur["leaves"]):
            for d in range(len(l["shape"])):
                for new in (1, 2):
                    if cur["leaves"][i]["shape"][d] <= new:
                        continue
                    leaves = [dict(x) for x in cur["leaves"]]
                    sh = list(leaves[i]["shape"])
                    sh[d] = new
                    leaves[i]["shape"] = sh
                    cand = dict(cur, leaves=leaves)
                    if still(cand):
                        cur, changed = cand, True
                        break
            # drop the leading dim
            if cur["leaves"][i]["shape"]:
                leaves = [dict(x) for x in cur["leaves"]]
                leaves[i]["shape"] = leaves[i]["shape"][1:]
                cand = dict(cur, leaves=leaves)
                if still(cand):
                    cur, changed = cand, True
    # simpler values: rounded to 1 or 2 decimals
    for i in range(len(cur["leaves"])):
        if cur["leaves"][i]["dtype"] not in FLOATS:
            continue
        for nd in (1, 2):
            leaves = [dict(x) for x in cur["leaves"]]
            leaves[i]["round"] = nd
            cand = dict(cur, leaves=leaves)
            if still(cand):
                cur = cand
                break
    if prog.get("hooks"):
        cur = ext().drop_hooks(cur, still)
    log(f"minimised in {tries} tries: {len(prog['ops'])} -> {len(cur['ops'])} ops, "
        f"{len(prog['leaves'])} -> {len(cur['leaves'])} leaves")
    return cur, sig0


def arr_src(a, dt=None):
    """Python source of a numpy array (NaN/inf spelled so that it evaluates)."""
    a = np.asarray(a)
    dt = dt or {"b": "bool", "i": "int64", "f": "float64"}[a.dtype.kind]
    npdt = "bool_" if dt == "bool" else dt
    src = f"np.array({_lit_list(a)}, dtype=np.{npdt})"
    if a.ndim != 1:
        src += f".reshape({a.shape!r})"
    return src


def program_lines(c):
    """Source lines building the leaves and running the ops of a concrete program."""
    body = []
    for name_, a, dt, grad in c.leaves:
        body.append(f"{name_} = vk.tensor({arr_src(a, dt)}" + (", requires_grad=True)" if grad else ")"))
    for ln in c.lines:
        if ln.err is not None:
            excs = ["vk." + e if e in ("DTypeError", "ShapeError") else e for e in ln.err.split("|")]
            exc = excs[0] if len(excs) == 1 else "(" + ", ".join(excs) + ")"
            body.append(f"with pytest.raises({exc}):")
            body.append(f"    {ln.vk}")
            continue
        body.append(f"{ln.name} = {ln.vk}  # numpy: {ln.np}")
    return body


def regression_test(prog, sig, name=None):
    """Python source of a standalone pytest function reproducing the failure of prog."""
    if prog.get("program", "ops") != "ops":
        return ext().regression_test(prog, sig, name)
    c = instantiate(prog)
    res = run_program(prog) if sig[0] not in ("crash", "hang") else None
    seed = prog.get("seed", "x")
    name = name or f"test_fuzz_seed{seed}_{sig[0]}_{sig[1]}".replace("-", "_").replace("?", "x")
    lines = [f"def {name}():"]
    msg = (res or {}).get("msg", sig[0])
    lines.append(f'    """diff_fuzz seed {seed} (minimised): {sig[0]} at {sig[1]}.')
    for chunk in _wrap(msg.replace("\\", "/"), 90):
        lines.append(f"    {chunk}")
    lines.append('    """')
    body = program_lines(c)
    if sig[0] in ("crash", "hang"):
        code = "\n".join(["import numpy as np", "import pytest", "import vkml as vk"] + body)
        roots = [k for k, ln in enumerate(c.lines) if ln.grad and ln.err is None]
        if roots and c.err_at is None:
            code += ("\nvk.autograd.backward([" + ", ".join(c.lines[k].name for k in roots) + "], ["
                     + ", ".join(f"vk.ones_like({c.lines[k].name})" for k in roots) + "])")
        lines.append(f"    code = {code!r}")
        lines.append("    p = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)")
        lines.append("    assert p.returncode == 0, p.stderr[-2000:]")
        return "\n".join(lines) + "\n"
    lines += ["    " + b for b in body]
    if sig[0] in ("value", "shape", "dtype", "requires_grad", "type"):
        k = next(k for k, ln in enumerate(c.lines)
                 if ln.op == sig[1] and (res is None or ln.vk in res.get("msg", "")))
        ln = c.lines[k]
        ref = c.vals[len(c.leaves) + k].ref
        lines.append(f"    expected = {arr_src(ref, ln.dtype if ln.dtype in FLOATS + ('bool',) else 'int64')}")
        lines.append(f"    assert tuple({ln.name}.shape) == {ref.shape!r}")
        lines.append(f"    assert {ln.name}.dtype == vk.{'bool_' if ln.dtype == 'bool' else ln.dtype}")
        if sig[0] == "requires_grad":
            lines.append(f"    assert {ln.name}.requires_grad is {ln.grad}")
        if ln.dtype in FLOATS:
            tol = "1e-12" if ln.dtype == "float64" else "1e-5"
            lines.append(f"    np.testing.assert_allclose({ln.name}.detach().numpy(), expected, "
                         f"rtol={tol}, atol={tol}, equal_nan=True)")
        else:
            lines.append(f"    np.testing.assert_array_equal({ln.name}.detach().numpy(), expected)")
    elif sig[0] in ("grad", "grad-shape", "grad-dtype", "backward-exception"):
        roots = [k for k, ln in enumerate(c.lines) if ln.grad and c.vals[len(c.leaves) + k].ref.size]
        wrng = np.random.default_rng(0)
        weights = [np.round(wrng.uniform(-1, 1, size=c.vals[len(c.leaves) + k].ref.shape), 2) for k in roots]
        for k, w in zip(roots, weights):
            lines.append(f"    w{k} = {arr_src(w, c.lines[k].dtype)}")
        lines.append(f"    vk.autograd.backward([{', '.join(c.lines[k].name for k in roots)}], "
                     f"[{', '.join(f'vk.tensor(w{k})' for k in roots)}])")
        if sig[0] == "grad":
            grad_leaves = [i for i, l in enumerate(c.leaves) if l[3]]
            fd, _, _ = numeric_grads(c, roots, weights, grad_leaves)
            lines.append("    # expected: central differences of the numpy reference")
            for i, g in zip(grad_leaves, fd):
                nm = c.leaves[i][0]
                lines.append(f"    expected_{nm} = {arr_src(np.round(g, 9), 'float64')}")
                lines.append(f"    got_{nm} = np.zeros({g.shape!r}) if {nm}.grad is None else {nm}.grad.numpy()")
                lines.append(f"    np.testing.assert_allclose(got_{nm}, expected_{nm}, rtol=1e-5, atol=1e-6)")
    return "\n".join(lines) + "\n"


def _lit_list(a):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return "[" + ", ".join("float('nan')" if np.isnan(v) else ("float('inf')" if v == np.inf else
                               ("float('-inf')" if v == -np.inf else repr(float(v)))) for v in a.reshape(-1)) + "]"
    return repr(a.reshape(-1).tolist())


def _wrap(text, width):
    words = text.split()
    out, cur = [], ""
    for w in words:
        if len(cur) + len(w) + 1 > width and cur:
            out.append(cur)
            cur = w
        else:
            cur = (cur + " " + w).strip()
    if cur:
        out.append(cur)
    return out


def show(prog, out=sys.stdout):
    kind = prog.get("program", "ops")
    print(f"# seed {prog.get('seed')} mode {prog['mode']}" + ("" if kind == "ops" else f" ({kind} program)"),
          file=out)
    for line in (program_lines(instantiate(prog)) if kind == "ops" else ext().program_lines(prog)):
        print(line, file=out)


# ---------------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, help="run random seeds until the time is up")
    ap.add_argument("--seed", type=int, default=None, help="first seed")
    ap.add_argument("--count", type=int, default=100, help="number of seeds (with --seed)")
    ap.add_argument("--minimize", type=int, metavar="SEED", help="shrink a failing seed")
    ap.add_argument("--show", type=int, metavar="SEED", help="print the program of a seed")
    ap.add_argument("--batch", type=int, default=200, help="seeds per worker batch (--seconds)")
    ap.add_argument("--kinds", default="ops",
                    help="program kinds to draw from, comma-separated: ops (default), inplace, hooks, "
                         "second, sizes, or all (a seed's program depends on this list)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--run-spec", help=argparse.SUPPRESS)
    ap.add_argument("--break", dest="break_", metavar="ref:OP|grad:FN",
                    help="deliberately break the reference of OP (or vk.FN's gradient) to check "
                         "that the fuzzer reports it")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    ACTIVE_KINDS[:] = parse_kinds(args.kinds)
    if args.break_:
        os.environ["DIFF_FUZZ_BREAK"] = args.break_
        apply_break(args.break_)
    if args.worker:
        worker([int(s) for s in args.worker.split(",")])
        return 0
    if args.run_spec:
        apply_break(os.environ.get("DIFF_FUZZ_BREAK"))
        prog = json.loads(args.run_spec)
        print("BEGIN spec", flush=True)
        res = run_program(prog)
        print("RESULT " + json.dumps(res), flush=True)
        return 0
    if args.show is not None:
        show(generate(args.show))
        return 0
    if args.minimize is not None:
        prog = generate(args.minimize)
        show(prog)
        small, sig = minimize(prog)
        print("\n# minimised program")
        show(small)
        extra = "" if small.get("program", "ops") == "ops" else "; import json, diff_fuzz"
        print(f"\n# regression test (needs: import subprocess, sys; import numpy as np; import pytest; import vkml as vk"
              f"{extra})\n")
        print(regression_test(small, sig))
        print("# spec: " + json.dumps(small))
        return 0
    if args.seconds:
        start = args.seed if args.seed is not None else int(time.time()) % 1_000_000 * 1000
        deadline = time.time() + args.seconds
        t0 = time.time()
        results = []
        s = start
        print(f"fuzzing from seed {start} for {args.seconds:.0f} s", flush=True)
        while time.time() < deadline:
            for r in run_batch(range(s, s + args.batch)):
                results.append(r)
                if r["status"] != "ok":
                    print(f"seed {r['seed']}: {r.get('kind')} at {r.get('op')}: {r.get('msg', '')[:300]}",
                          flush=True)
                if time.time() > deadline:
                    break
            s += args.batch
        fails = report(results, t0)
        return 1 if fails else 0
    start = args.seed if args.seed is not None else 0
    _, fails = cmd_run(range(start, start + args.count), verbose=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
