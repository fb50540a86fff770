#!/usr/bin/env python3
"""Fits the polynomial coefficients of src/vkml/backend/cpu/vmath.h and vmath_trig.h.

Each approximation is a minimax fit (Lawson's iteratively reweighted least squares on Chebyshev
points, in 60-digit mpmath arithmetic) of the function vmath.h evaluates with Horner's rule.
Float32 sets are rounded one coefficient at a time, lowest order first, refitting the rest after
each rounding, which recovers most of the accuracy plain rounding loses. Prints C++ initialisers
and the weighted error of the rounded coefficients (the approximation error alone; rounding in
the evaluation comes on top, and tests/cpp/test_vmath.cpp measures the total in ulp).

    python3 bench/cpp/fit_vmath.py [name...]   names: exp log tanh erf erfc gelu atan asin; default all
Takes a few minutes per float64 set (mpmath is slow).
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 60


def cheb_points(a, b, m):
    pts = [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (2 * i + 1) / (2 * m)) for i in range(m)]
    return pts + [mp.mpf(a), mp.mpf(b)]


def lawson(g, w, a, b, n, m=240, iters=30):
    """Coefficients c[0..n) minimising max |w(x) (sum c_k x^k - g(x))| over [a, b]."""
    xs = cheb_points(mp.mpf(a), mp.mpf(b), m)
    gs, ws = [g(x) for x in xs], [w(x) for x in xs]
    pw = [[x**k for k in range(n)] for x in xs]
    lam = [mp.mpf(1) / len(xs)] * len(xs)
    best = None
    for _ in range(iters):
        A, rhs = mp.matrix(n, n), mp.matrix(n, 1)
        for i in range(len(xs)):
            wi = lam[i] * ws[i] ** 2
            for j in range(n):
                rhs[j] += wi * pw[i][j] * gs[i]
                for k in range(j, n):
                    A[j, k] += wi * pw[i][j] * pw[i][k]
        for j in range(n):
            for k in range(j):
                A[j, k] = A[k, j]
        c = mp.lu_solve(A, rhs)
        errs = [abs(ws[i] * (sum(c[k] * pw[i][k] for k in range(n)) - gs[i])) for i in range(len(xs))]
        if best is None or max(errs) < best[0]:
            best = (max(errs), [c[k] for k in range(n)])
        total = sum(lam[i] * errs[i] for i in range(len(xs)))
        lam = [lam[i] * errs[i] / total for i in range(len(xs))]
    return best[1]


def max_error(g, w, a, b, coefs, m=3000):
    worst = mp.mpf(0)
    for i in range(m + 1):
        x = mp.mpf(a) + (mp.mpf(b) - a) * i / m
        p = mp.mpf(0)
        for c in reversed(coefs):
            p = p * x + c
        worst = max(worst, abs(w(x) * (p - g(x))))
    return worst


def fit(g, w, a, b, n, dtype):
    if dtype == "double":
        return [float(c) for c in lawson(g, w, a, b, n)]
    fixed = []  # float: round the lowest coefficient, refit the others, repeat
    for k in range(n):
        pre = tuple(fixed)
        gk = lambda x, k=k, pre=pre: (g(x) - sum(c * x**i for i, c in enumerate(pre))) / x**k
        wk = lambda x, k=k: w(x) * x**k
        lo = a if k == 0 else mp.mpf(a) + (mp.mpf(b) - a) * mp.mpf("1e-4")
        fixed.append(float(np.float32(float(lawson(gk, wk, lo, b, n - k)[0]))))
    return fixed


def emit(name, dtype, g, w, a, b, n):
    coefs = fit(g, w, a, b, n, dtype)
    err = max_error(g, w, a, b, [mp.mpf(c) for c in coefs])
    body = ", ".join((c.hex() + ("f" if dtype == "float" else "")) for c in coefs)
    print(f"// {name} <{dtype}>: {n} coefficients on [{mp.nstr(a, 6)}, {mp.nstr(b, 6)}], "
          f"max weighted error {mp.nstr(err, 3)}", flush=True)
    print(f"{{{body}}}", flush=True)


HALF_LN2 = mp.log(2) / 2 * mp.mpf("1.0001")


def exp_q(r):  # e^r = 1 + r + r^2 q(r)
    return (mp.exp(r) - 1 - r) / r**2 if r != 0 else mp.mpf(1) / 2


def log_p(z):  # log((1+s)/(1-s)) = 2s + s z p(z), z = s^2
    if z == 0:
        return mp.mpf(2) / 3
    s = mp.sqrt(z)
    return (2 * mp.atanh(s) / s - 2) / z


def tanh_p(z):  # tanh(x) = x + x z p(z), z = x^2
    if z == 0:
        return -mp.mpf(1) / 3
    x = mp.sqrt(z)
    return (mp.tanh(x) - x) / (x * z)


def erf_p(z):  # erf(t) = t + t p(z), z = t^2 (the leading 2/sqrt(pi) - 1 rounds finer than 2/sqrt(pi))
    if z == 0:
        return 2 / mp.sqrt(mp.pi) - 1
    t = mp.sqrt(z)
    return mp.erf(t) / t - 1


ERFC_P = mp.mpf("0.5")  # erfc(t) = w exp(-t^2 + G(w)), w = 1 / (1 + ERFC_P t)


def erfc_g(w):
    t = (1 / w - 1) / ERFC_P
    return mp.log(mp.erfc(t) / w) + t * t


def erfcx_w(w):  # e^(t^2) erfc(t) at t = (1/w - 1) / ERFC_P
    t = (1 / w - 1) / ERFC_P
    return mp.exp(t * t) * mp.erfc(t)


def atan_p(z):  # atan(t) = t + t z p(z), z = t^2 (vmath_trig.h: float's atan, in double)
    if z == 0:
        return -mp.mpf(1) / 3
    t = mp.sqrt(z)
    return (mp.atan(t) - t) / (t * z)


def asin_p(z):  # asin(s) = s + s z p(z), z = s^2
    if z == 0:
        return mp.mpf(1) / 6
    s = mp.sqrt(z)
    return (mp.asin(s) - s) / (s * z)


def odd_weight(f):  # the error of t + t z p(z) relative to f(t): t z / f(t)
    return lambda z: (mp.sqrt(z) * z / f(mp.sqrt(z))) if z != 0 else mp.mpf(0)


def main(names):
    smax2 = ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) ** 2 * mp.mpf("1.001")
    one = lambda x: mp.mpf(1)
    jobs = {
        "exp": [("float", 5), ("double", 10)],
        "log": [("float", 3), ("double", 7)],
        "tanh": [("float", 5), ("double", 12)],
        "erf": [("float", 7), ("double", 12)],
        "erfc": [("float", 9), ("double", 23)],
        "gelu": [("float", 10)],
        # float's atan and asin evaluated in double to float's accuracy (rounded once at the end)
        "atan": [("double", 6)],
        "asin": [("double", 7)],
    }
    for name in names:
        for dtype, n in jobs[name]:
            if name == "exp":
                emit(name, dtype, exp_q, lambda r: r**2 / mp.exp(r), -HALF_LN2, HALF_LN2, n)
            elif name == "log":
                emit(name, dtype, log_p, lambda z: z / 2, 0, smax2, n)
            elif name == "tanh":
                zmax = mp.mpf("0.625") ** 2 * mp.mpf("1.001")
                emit(name, dtype, tanh_p, lambda z: z, 0, zmax, n)
            elif name == "erf":
                emit(name, dtype, erf_p, lambda z: 1 / (1 + erf_p(z)), 0, mp.mpf("0.9") ** 2 * mp.mpf("1.001"), n)
            elif name == "erfc":
                tmax = mp.mpf("10.5") if dtype == "float" else mp.mpf("27.3")
                lo, hi = 1 / (1 + ERFC_P * tmax), 1 / (1 + ERFC_P * mp.mpf("0.89"))
                if dtype == "float":
                    emit(name, dtype, erfc_g, one, lo, hi, n)
                else:  # in v = a w + b on [-1, 1]: the monomial coefficients stay small
                    a = float(2 / (hi - lo))
                    b = float(-(hi + lo) / (hi - lo))
                    print(f"// erfc <double>: v = {a.hex()} w + {b.hex()}")
                    g = lambda v: erfc_g((v - b) / a)
                    emit(name, dtype, g, one, (lo * a + b), (hi * a + b), n)
            elif name == "gelu":  # e^(t^2) erfc(t), relative error, over the whole 0 <= t <= 10.5,
                # in v = a w + b on [-1, 1]: gelu's and gelu_grad's gelu_p
                lo, hi = 1 / (1 + ERFC_P * mp.mpf("10.5")), mp.mpf(1)
                a = float(np.float32(float(2 / (hi - lo))))
                b = float(np.float32(float(-(hi + lo) / (hi - lo))))
                print(f"// gelu <float>: v = {a.hex()} w + {b.hex()}")
                g = lambda v, a=a, b=b: erfcx_w((v - b) / a)
                emit(name, dtype, g, lambda v: 1 / g(v), (lo * a + b), (hi * a + b), n)
            elif name == "atan":  # after fdlibm's reduction, |t| <= 7/16
                emit(name, dtype, atan_p, odd_weight(mp.atan), 0, (mp.mpf(7) / 16) ** 2 * mp.mpf("1.001"), n)
            elif name == "asin":  # |s| <= 1/2 (beyond, asin(sqrt((1 - |x|) / 2)))
                emit(name, dtype, asin_p, odd_weight(mp.asin), 0, mp.mpf("0.25") * mp.mpf("1.001"), n)

if __name__ == "__main__":
    main(sys.argv[1:] or ["exp", "log", "tanh", "erf", "erfc", "gelu", "atan", "asin"])
