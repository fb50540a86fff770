#!/usr/bin/env python3
"""PyTorch's figures for the ops the C++ benchmarks in this folder time, measured the same way
(median of repeats; fastest loop for per-op overhead), for the report. From Python, so a small
op also pays the interpreter and binding cost (~1-4 us) that the C++ figures do not.

    python3 bench/cpp/bench_torch.py [threads...]      default: 1 2
"""
import sys
import time

import torch

N = 1 << 24


def median(fn, reps=11):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def fastest(fn, reps=15):
    fn()
    best = 1e300
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    threads = [int(a) for a in sys.argv[1:]] or [1, 2]
    torch.manual_seed(0)
    x, y = torch.randn(N), torch.randn(N)
    pos = torch.rand(N) + 0.5
    x2, y2 = x.view(4096, 4096), y.view(4096, 4096)
    col, row = torch.randn(4096, 1), torch.randn(1, 4096)
    xd = torch.randn(N, dtype=torch.float64)
    z = torch.empty(N)
    z2 = z.view(4096, 4096)
    F = torch.nn.functional
    ops = [
        ("add", 12, lambda: x + y), ("mul", 12, lambda: x * y), ("mul scalar", 8, lambda: x * 0.5),
        ("add column bcast", 8, lambda: x2 + col), ("add row bcast", 8, lambda: x2 + row),
        ("add transposed", 12, lambda: x2.t() + y2),
        ("copy transposed", 8, lambda: x2.t().contiguous()),
        ("exp", 8, lambda: torch.exp(x)), ("log", 8, lambda: torch.log(pos)),
        ("tanh", 8, lambda: torch.tanh(x)), ("sigmoid", 8, lambda: torch.sigmoid(x)),
        ("erf", 8, lambda: torch.erf(x)), ("gelu (erf)", 8, lambda: F.gelu(x)),
        ("gelu (tanh)", 8, lambda: F.gelu(x, approximate="tanh")),
        ("exp float64", 16, lambda: torch.exp(xd)), ("gelu float64", 16, lambda: F.gelu(xd)),
        # into an existing output: the kernels alone, without the page faults of a fresh 64 MiB
        # result (torch's CPU allocator does not cache large blocks; vkml's does)
        ("add (out=)", 12, lambda: torch.add(x, y, out=z)), ("exp (out=)", 8, lambda: torch.exp(x, out=z)),
        ("gelu (erf) (out=)", 8, lambda: torch._C._nn.gelu(x, out=z)),
        ("add transposed (out=)", 12, lambda: torch.add(x2.t(), y2, out=z2)),
    ]
    for t in threads:
        torch.set_num_threads(t)
        print(f"torch {torch.__version__}, threads={t}")
        for name, nbytes, fn in ops:
            s = median(fn)
            print(f"  {name:<22} {s * 1e3:8.2f} ms  {s / N * 1e9:6.3f} ns/elem  {nbytes * N / s / 1e9:6.1f} GB/s")
    torch.set_num_threads(1)
    a, b = torch.full((1,), 1.5), torch.full((1,), 2.0)
    ag = torch.full((1,), 1.5, requires_grad=True)
    iters = 100000

    def loop(f):
        def run():
            for _ in range(iters):
                f()
        return fastest(run, 7) / iters * 1e6

    with torch.no_grad():
        print(f"  a * b [1] no grad                 {loop(lambda: a * b):7.3f} us/op")
    print(f"  a * b [1] records                 {loop(lambda: ag * b):7.3f} us/op")
    print(f"  a * 2.0 [1]                       {loop(lambda: a * 2.0):7.3f} us/op")

    n = 10000
    one = torch.ones(())
    times = []
    for _ in range(5):
        x0 = torch.full((), 0.5, requires_grad=True)
        t0 = time.perf_counter()
        yv = x0
        for _ in range(n):
            yv = yv + one
        t1 = time.perf_counter()
        yv.backward()
        t2 = time.perf_counter()
        times.append((t1 - t0, t2 - t1))
    times.sort(key=lambda p: p[1])
    build, back = times[len(times) // 2]
    print(f"chain of {n} scalar adds: build {build / n * 1e6:.3f} us/node (from Python), "
          f"backward {back / n * 1e6:.3f} us/node")


if __name__ == "__main__":
    main()
