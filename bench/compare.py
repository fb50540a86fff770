#!/usr/bin/env python3
"""vkml vs PyTorch: one table of per-op overhead, kernels, training steps, memory and autograd engine cost.

    make bench                                   # = python bench/compare.py --json build/bench.json
    python bench/compare.py --quick              # ~2 minute subset
    python bench/compare.py --only matmul,fused  # workloads whose id contains one of these
    python bench/compare.py --threads 1          # thread counts (default 1,2)
    python bench/compare.py --no-dist            # without the dist.* rows (bench/dist_bench.py, over MPI)

How it measures. Each thread count runs in its own worker process (so the thread pools are sized before any
library starts them: VKML_NUM_THREADS, OMP/MKL/OPENBLAS_NUM_THREADS set in its environment, OPENBLAS_CORETYPE
/ OPENBLAS_L2_SIZE removed; then vk.set_num_threads(n), torch.set_num_threads(n),
torch.set_num_interop_threads(1)). Both libraries run the same workload in the same process, alternately:
warm-up, a calibration that picks how many calls make one sample (~50 ms; heavy workloads take one call per
sample), then repeats in which vkml and torch alternate (the order flips every repeat), each sample after a
20-ms spin-wait (BENCH_QUIESCE_S) in which the other library's idle workers stop spinning: torch's libgomp
workers spin ~10 ms after each parallel region here, and a sample that starts under them runs on one core at 2
threads. Reported: median seconds per call and the spread (interquartile range / median). The GC is off while
timing. Peaks: bench/peak_fma.cpp (independent FMA chains, the widest vectors -march=native gives) and
bench/stream.cpp (STREAM triad, its arrays in huge pages as vkml's big blocks), compiled here with -O3
-march=native and run at each thread count. rss.* run a short training in a fresh process per library (only
that library imported) and compare peak RSS (getrusage maxrss).

A workload vkml cannot run (an exception, a crash, a hang) shows its error in its row; the rest goes on.
--json FILE writes a list of records: {"workload", "threads", "vkml_s", "torch_s", "ratio" (vkml/torch),
"gflops" / "gbs" (vkml's, where it applies), ...} plus {"workload": "peak.fma", "threads", "gflops"} and
{"workload": "peak.stream", "threads", "gbs"}. rss.* records carry vkml_rss_mb / torch_rss_mb and the ratio
of those (vkml_s / torch_s are the run's wall time).

dist.* (data-parallel over MPI, when vk.distributed.is_available()): bench/dist_bench.py's rows, in their own table
after this one (all_reduce against MPI_Allreduce; train.mlp / train.transformer at 1 and 2 ranks).
"""

import argparse
import gc
import json
import os
import platform
import selectors
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ----------------------------------------------------------------------------------------------------------
# Workloads. Each builder takes (L, F, np) -- L is the vkml or torch module, F its functional module -- and
# returns {"fn": callable} (timed as is) or {"fn": f, "setup": s} (s() untimed, then f(s()) timed, one call
# per sample). "flops"/"bytes" give GFLOP/s / GB/s; "heavy" marks workloads that get fewer repeats.
# ----------------------------------------------------------------------------------------------------------

E16M = 16 * 1024 * 1024

sys.path.insert(0, HERE)
from train_models import _rng, _t, train_loss, train_parts, train_setup  # noqa: E402,F401  (dist_bench too)
ROWS, COLS = 4096, 1024


def _randn(L, np, *shape, grad=False):
    return _t(L, _rng(np).standard_normal(shape, dtype=np.float32), grad)


def w_binary(op, n, grad=False):
    def build(L, F, np):
        a, b = _randn(L, np, n, grad=grad), _randn(L, np, n, grad=grad)
        if op == "add":
            return {"fn": lambda: a + b}
        return {"fn": lambda: a * b}
    return build


def w_graph_backward(L, F, np):
    a, b = _randn(L, np, 1, grad=True), _randn(L, np, 1, grad=True)

    def f():
        (a * b + a).sum().backward()
    return {"fn": f}


def w_inplace_relu(L, F, np):
    """A recorded in-place write (ops/inplace.cpp) and its backward, on 2^20 floats."""
    x = _randn(L, np, 1 << 20, grad=True)

    def f():
        y = x * 1.0
        y.relu_()
        y.sum().backward()
    return {"fn": f}


def w_setitem_loop(L, F, np):
    """out[:, t] = h in a 50-step recurrent loop (16 x 50 x 64), forward and backward: a
    recorded setitem per step."""
    xs, w = _randn(L, np, 16, 50, 64, grad=True), _randn(L, np, 64, 64, grad=True)

    def f():
        out, h = L.zeros(16, 50, 64), L.zeros(16, 64)
        for t in range(50):
            h = L.tanh(xs[:, t] + h @ w)
            out[:, t] = h
        out.sum().backward()
    return {"fn": f}


def w_matmul(n, batch=None, dtype=None):
    def build(L, F, np):
        shape = (n, n) if batch is None else (batch, n, n)
        a, b = _randn(L, np, *shape), _randn(L, np, *shape)
        if dtype:
            a, b = a.to(getattr(L, dtype)), b.to(getattr(L, dtype))
        return {"fn": lambda: a @ b}
    return build


def w_unary(name):
    def build(L, F, np):
        a = _randn(L, np, E16M)
        if name == "gelu":
            return {"fn": lambda: F.gelu(a)}
        f = getattr(L, name)
        return {"fn": lambda: f(a)}
    return build


def w_fused(name):
    def build(L, F, np):
        x = _randn(L, np, ROWS, COLS, grad=True)
        g = _randn(L, np, ROWS, COLS)
        if name == "softmax":
            def f():
                x.grad = None
                F.softmax(x, -1).backward(g)
        elif name == "log_softmax":
            def f():
                x.grad = None
                F.log_softmax(x, -1).backward(g)
        elif name == "layer_norm":
            w = _t(L, np.ones(COLS, np.float32), True)
            b = _t(L, np.zeros(COLS, np.float32), True)

            def f():
                x.grad = w.grad = b.grad = None
                F.layer_norm(x, (COLS,), w, b).backward(g)
        else:
            tgt = _t(L, _rng(np).integers(0, COLS, ROWS).astype(np.int64))

            def f():
                x.grad = None
                F.cross_entropy(x, tgt).backward()
        return {"fn": f}
    return build


def w_conv(n, cin, hw, cout, input_grad, k=3, stride=1):
    def build(L, F, np):
        x = _randn(L, np, n, cin, hw, hw, grad=input_grad)
        w = _t(L, (_rng(np).standard_normal((cout, cin, k, k)) * 0.1).astype(np.float32), True)
        b = _t(L, np.zeros(cout, np.float32), True)
        out = (hw + 2 * (k // 2) - k) // stride + 1
        g = _randn(L, np, n, cout, out, out)

        def f():
            x.grad = w.grad = b.grad = None
            F.conv2d(x, w, b, stride=stride, padding=k // 2).backward(g)
        return {"fn": f}
    return build


def conv_flops(n, cin, hw, cout, input_grad, k=3, stride=1):
    out = (hw + 2 * (k // 2) - k) // stride + 1
    fwd = 2.0 * n * cout * out * out * cin * k * k
    return fwd * (3 if input_grad else 2)  # forward + weight grad (+ input grad)


def conv_row(n, cin, hw, cout, k=3, stride=1):
    """A convolution of ResNet-18 at 16x3x64x64 (#18): forward and both gradients."""
    return (w_conv(n, cin, hw, cout, True, k, stride), {"flops": conv_flops(n, cin, hw, cout, True, k, stride)})


# --- models, written once against the torch-shaped API of either library ----------------------------------

def w_train(kind, autocast=None):
    def build(L, F, np):
        step, _ = train_setup(kind, L, np, autocast)
        return {"fn": step}
    return build


CHAIN = 10_000


def w_chain_backward(L, F, np):
    x = L.tensor(1.0).requires_grad_()

    def setup():
        x.grad = None
        y = x
        for _ in range(CHAIN):
            y = y + 1.0
        return y

    return {"setup": setup, "fn": lambda y: y.backward()}


def w_build_free(L, F, np):
    x = L.tensor(1.0).requires_grad_()

    def f():
        y = x
        for _ in range(CHAIN):
            y = y + 1.0
        del y
    return {"fn": f}


# id -> (builder, extras). flops/bytes are per call.
WORKLOADS = {
    "overhead.add.1": (w_binary("add", 1), {}),
    "overhead.mul.64": (w_binary("mul", 64), {}),
    "overhead.add.1.grad": (w_binary("add", 1, grad=True), {}),
    "overhead.graph_backward": (w_graph_backward, {}),
    "matmul.256": (w_matmul(256), {"flops": 2.0 * 256 ** 3}),
    "matmul.1024": (w_matmul(1024), {"flops": 2.0 * 1024 ** 3, "peak_check": True}),
    "matmul.2048": (w_matmul(2048), {"flops": 2.0 * 2048 ** 3, "heavy": True, "peak_check": True}),
    "matmul.batched": (w_matmul(128, batch=32), {"flops": 2.0 * 32 * 128 ** 3}),
    "eltwise.add": (w_binary("add", E16M), {"bytes": 3 * 4 * E16M}),
    "eltwise.mul": (w_binary("mul", E16M), {"bytes": 3 * 4 * E16M}),
    "eltwise.exp": (w_unary("exp"), {"bytes": 2 * 4 * E16M}),
    "eltwise.gelu": (w_unary("gelu"), {"bytes": 2 * 4 * E16M}),
    "fused.softmax": (w_fused("softmax"), {}),
    "fused.log_softmax": (w_fused("log_softmax"), {}),
    "fused.layer_norm": (w_fused("layer_norm"), {}),
    "fused.cross_entropy": (w_fused("cross_entropy"), {}),
    "conv.small": (w_conv(64, 1, 8, 16, False), {"flops": conv_flops(64, 1, 8, 16, False)}),
    "conv.large": (w_conv(32, 32, 28, 64, True), {"flops": conv_flops(32, 32, 28, 64, True), "heavy": True}),
    "train.mlp": (w_train("mlp"), {}),
    "train.cnn": (w_train("cnn"), {}),
    "train.transformer": (w_train("transformer"), {"heavy": True}),
    "train.lstm": (w_train("lstm"), {}),  # issue #16 item 2 (rnn)
    "engine.chain10k": (w_chain_backward, {}),
    "engine.build_free": (w_build_free, {}),
    # 16-bit (#19): a bfloat16 GEMM, and the transformer step under autocast
    "matmul.bf16.1024": (w_matmul(1024, dtype="bfloat16"), {"flops": 2.0 * 1024 ** 3}),
    "matmul.bf16.2048": (w_matmul(2048, dtype="bfloat16"), {"flops": 2.0 * 2048 ** 3, "heavy": True}),
    "train.transformer.bf16": (w_train("transformer", "bfloat16"), {"heavy": True}),
    # real programs' shapes (#18 item 1): nanoGPT's CPU run, pytorch/examples' MNIST Net,
    # torchvision's ResNet-18 at 16x3x64x64, and that ResNet's convolutions (stage 1 3x3, the
    # stride-2 3x3 and 1x1 into stage 2, a stage-3 3x3)
    "train.gpt_small": (w_train("gpt_small"), {}),
    "train.mnist_net": (w_train("mnist_net"), {}),
    "train.resnet18": (w_train("resnet18"), {"heavy": True}),
    "conv.3x3.64": conv_row(16, 64, 16, 64),
    "conv.3x3.s2.128": conv_row(16, 64, 16, 128, stride=2),
    "conv.1x1.s2.128": conv_row(16, 64, 16, 128, k=1, stride=2),
    "conv.3x3.256": conv_row(16, 256, 4, 256),
    # sin of 16M floats: compute-bound (a ratio to torch, no STREAM share); NeRF's positional
    # encodings and SIREN's activations take it on every step
    "eltwise.sin": (w_unary("sin"), {}),
    # in-place writes that autograd records (porting: h.relu_(), outputs[:, t] = h)
    "inplace.relu_": (w_inplace_relu, {}),
    "inplace.setitem_loop": (w_setitem_loop, {}),
}
RSS_WORKLOADS = ["rss.mlp", "rss.transformer"]
ALL_IDS = list(WORKLOADS)[:22] + RSS_WORKLOADS + list(WORKLOADS)[22:]  # the order
QUICK = ["overhead.add.1", "overhead.add.1.grad", "overhead.graph_backward", "matmul.1024", "matmul.batched",
         "eltwise.add", "eltwise.gelu", "fused.softmax", "fused.cross_entropy", "conv.large", "train.mlp",
         "train.transformer", "rss.mlp", "engine.chain10k"]

# ----------------------------------------------------------------------------------------------------------
# Worker: one process per thread count, both libraries imported.
# ----------------------------------------------------------------------------------------------------------


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def import_libs(threads, which=("vkml", "torch")):
    libs = {}
    if "torch" in which:
        import torch
        torch.set_num_interop_threads(1)  # before any parallel work: one pool, no fighting
        torch.set_num_threads(threads)
        libs["torch"] = (torch, torch.nn.functional)
    if "vkml" in which:
        import vkml as vk
        import vkml.nn.functional as vF
        if hasattr(vk, "set_num_threads"):
            vk.set_num_threads(threads)
        libs["vkml"] = (vk, vF)
    return libs


def quantiles(xs):
    xs = sorted(xs)
    n = len(xs)

    def q(p):
        k = (n - 1) * p
        lo = int(k)
        hi = min(lo + 1, n - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)
    return q(0.25), q(0.5), q(0.75)


class Runner:
    def __init__(self, wid, builder, lib):
        L, F = lib
        import numpy as np
        spec = builder(L, F, np)
        self.fn, self.setup = spec["fn"], spec.get("setup")
        self.warm_s = 0.0  # the last warm-up call's seconds (measure)

    def once(self):
        if self.setup is not None:
            s = self.setup()
            t0 = time.perf_counter()
            self.fn(s)
            dt = time.perf_counter() - t0
            del s
            return dt
        t0 = time.perf_counter()
        self.fn()
        return time.perf_counter() - t0

    def sample(self, inner):
        if self.setup is not None or inner == 1:
            return self.once()
        fn = self.fn
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - t0) / inner


# Pause before each sample until the other library's pool is idle: libgomp's workers (torch's) spin ~10 ms
# after a parallel region, vkml's 200 us, and a spinning pool takes a core from the sample that follows it.
# The wait spins rather than sleeps: a sleeping process lets this VM idle the vCPU, and the sample after
# a sleep ran memory-bound kernels ~15% slower (eltwise.add at one thread: 13.4 ms against 11.1-11.8).
QUIESCE_S = float(os.environ.get("BENCH_QUIESCE_S", "0.02"))


def quiesce():
    end = time.perf_counter() + QUIESCE_S
    while time.perf_counter() < end:
        pass


def measure(wid, libs, quick):
    builder, extra = WORKLOADS[wid]
    target = 0.05                                # seconds per sample
    budget = (1.5 if quick else 4.0) * (1.5 if extra.get("heavy") else 1.0)  # seconds per library
    max_rep = 5 if quick else (9 if extra.get("heavy") else 15)
    runners, errors = {}, {}
    for name in ("vkml", "torch"):
        try:
            r = Runner(wid, builder, libs[name])
            # warm-up: at least 2 calls, up to 0.15 s
            t_end, k = time.perf_counter() + 0.15, 0
            while k < 2 or time.perf_counter() < t_end:
                t1 = r.once()
                k += 1
                if (t1 > 0.3 and k >= 2) or t1 > 2.0:  # one call is warm-up enough for a slow one
                    break
            runners[name] = r
            r.warm_s = t1
        except Exception as e:  # noqa: BLE001 -- a workload vkml cannot run becomes an error row
            errors[name] = f"{type(e).__name__}: {e}".splitlines()[0][:120]
    # calibrate: calls per sample, repeats within the budget
    plan = {}
    for name, r in runners.items():
        # (a call over 2 s -- torch's bfloat16 GEMM without bf16 hardware, ~19 s at 2048 -- is
        # timed by its warm-up: three more calls took the row past the 180-s stall limit)
        t1 = r.warm_s if r.warm_s > 2.0 else min(r.once() for _ in range(3))
        inner = 1 if r.setup is not None else max(1, min(200_000, int(target / max(t1, 1e-9))))
        per_sample = max(t1 * inner, t1)
        reps = max(3, min(max_rep, int(budget / max(per_sample, 1e-9))))
        plan[name] = (inner, reps)
    # A call over 10 s is its own one sample (torch's bfloat16 GEMM at 2048 without bf16 hardware:
    # more calls took the row past the stall limit); the other library keeps its repeats.
    slow = {name for name, r in runners.items() if r.warm_s > 10.0}
    reps = min([p[1] for name, p in plan.items() if name not in slow] or [0])  # strict alternation
    samples = {name: [runners[name].warm_s] if name in slow else [] for name in runners}
    order = list(runners)
    gc.collect()
    gc.disable()
    try:
        for i in range(reps):
            for name in (order if i % 2 == 0 else order[::-1]):
                if name in slow:
                    continue
                quiesce()
                samples[name].append(runners[name].sample(plan[name][0]))
    finally:
        gc.enable()
    rec = {"workload": wid}
    for name in ("vkml", "torch"):
        key = "vkml" if name == "vkml" else "torch"
        if name in errors:
            rec[f"{key}_error"] = errors[name]
            rec[f"{key}_s"] = None
            continue
        q1, med, q3 = quantiles(samples[name])
        rec[f"{key}_s"] = med
        rec[f"{key}_spread"] = (q3 - q1) / med if med > 0 else 0.0
        rec[f"{key}_reps"] = len(samples[name])
        rec[f"{key}_inner"] = plan[name][0]
    v, t = rec.get("vkml_s"), rec.get("torch_s")
    rec["ratio"] = v / t if v and t else None
    if "flops" in extra:
        if v:
            rec["gflops"] = extra["flops"] / v * 1e-9
        if t:
            rec["torch_gflops"] = extra["flops"] / t * 1e-9
    if "bytes" in extra:
        if v:
            rec["gbs"] = extra["bytes"] / v * 1e-9
        if t:
            rec["torch_gbs"] = extra["bytes"] / t * 1e-9
    return rec


def blas_info(libs):
    """Which BLAS each library runs: threadpoolctl's view of the loaded libraries, openblas's own config."""
    info = {}
    import ctypes
    try:
        vk = libs["vkml"][0]
        so = vk._C.__file__
        out = subprocess.run(["ldd", so], capture_output=True, text=True).stdout
        paths = [ln.split("=>")[1].split("(")[0].strip() for ln in out.splitlines()
                 if "=>" in ln and "blas" in ln.lower()]
        vk_blas = []
        for p in paths:
            try:
                lib = ctypes.CDLL(p)
                # The scipy-openblas32 wheel prefixes every symbol with scipy_.
                pre = "scipy_" if hasattr(lib, "scipy_openblas_get_config") else ""
                config, core, threads = (getattr(lib, pre + f) for f in (
                    "openblas_get_config", "openblas_get_corename", "openblas_get_num_threads"))
                config.restype = core.restype = ctypes.c_char_p
                vk_blas.append(f"{os.path.realpath(p)}: {config().decode()}, "
                               f"core={core().decode()}, threads={threads()}")
            except (OSError, AttributeError):
                vk_blas.append(os.path.realpath(p))
        info["vkml"] = "; ".join(vk_blas) or "no BLAS linked"
        choice = vk._C._sgemm_choice()  # float32 products: the BLAS, oneDNN's sgemm, or by shape
        if choice != "blas":
            info["vkml"] = f"float32: oneDNN's sgemm ({choice}) or " + info["vkml"]
        # Which copy of the CPU kernels runs (DEFAULT, AVX2, AVX512), torch's alike.
        info["cpu_kernels"] = f"vkml {vk.backends.cpu.get_cpu_capability()}, torch " \
            f"{libs['torch'][0].backends.cpu.get_cpu_capability()}"
        # What runs bfloat16 products (oneDNN on AVX512-BF16/AMX, else widened to sgemm).
        info["bf16_gemm"] = vk._C._bf16_gemm_name()
    except Exception as e:  # noqa: BLE001
        info["vkml"] = f"unknown ({e})"
    try:
        torch = libs["torch"][0]
        cfg = torch.__config__.show()
        blas = [ln.strip() for ln in cfg.replace(",", "\n").splitlines() if "BLAS_INFO" in ln or "LAPACK_INFO" in ln]
        info["torch"] = (" ".join(blas) or "?") + f", mkl={torch.backends.mkl.is_available()}, " \
            f"mkldnn={torch.backends.mkldnn.is_available()}, threads={torch.get_num_threads()}"
    except Exception as e:  # noqa: BLE001
        info["torch"] = f"unknown ({e})"
    try:
        from threadpoolctl import threadpool_info
        info["threadpoolctl"] = [
            {k: d.get(k) for k in ("user_api", "internal_api", "architecture", "num_threads", "version", "filepath")}
            for d in threadpool_info()]
    except Exception as e:  # noqa: BLE001
        info["threadpoolctl"] = f"not available ({type(e).__name__})"
    return info


def worker(args):
    libs = import_libs(args.threads)
    ids = args.worker_ids.split(",")
    for wid in ids:
        emit({"event": "start", "workload": wid})
        try:
            rec = measure(wid, libs, args.quick)
        except Exception as e:  # noqa: BLE001
            rec = {"workload": wid, "vkml_s": None, "torch_s": None, "ratio": None,
                   "error": f"{type(e).__name__}: {e}".splitlines()[0][:120]}
        rec["threads"] = args.threads
        emit({"event": "done", "record": rec})
        gc.collect()
    if args.blas_info:
        # after the matmuls ran, so lazily loaded BLAS back ends are visible too
        import numpy as np
        for name, (L, F) in libs.items():
            a = _randn(L, np, 256, 256)
            _ = a @ a
        emit({"event": "blas", "info": blas_info(libs)})


def rss_worker(args):
    """Train a few steps with ONE library in this fresh process; print its peak RSS."""
    import resource
    libs = import_libs(args.threads, which=(args.lib,))
    L, _ = libs[args.lib]
    import numpy as np
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    step, _ = train_setup(args.rss_worker, L, np)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux -> MiB
    emit({"rss_mb": peak, "base_mb": base, "wall_s": dt})

# ----------------------------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------------------------


def child_env(threads):
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # the benchmark alone: measure the default kernels
        env.pop(k, None)
    for k in ("VKML_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[k] = str(threads)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def drive_worker(cmd, env, threads, stall_s, on_event):
    """Runs one worker process, handing each JSON event it prints to on_event (announcing each workload on
    stderr) until it exits or prints nothing for stall_s seconds (then it is killed). Returns (rc, hung,
    current): current is the workload it had started and not finished, or None."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, text=True)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    current, hung = None, False
    while True:
        if not sel.select(timeout=stall_s):
            hung = True
            p.kill()
            break
        line = p.stdout.readline()
        if not line:
            break
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if ev.get("event") == "start":
            current = ev["workload"]
            print(f"  [{threads} thr] {current} ...", file=sys.stderr, flush=True)
        elif ev.get("event") == "done":
            current = None
        on_event(ev)
    rc = p.wait()
    sel.close()
    return rc, hung, current


def run_worker(ids, threads, quick, want_blas, stall_s=180):
    """Runs the worker; restarts it after a crash or a hang, marking that workload as failed."""
    records, blas = [], None
    remaining = list(ids)

    def on_event(ev):
        nonlocal blas
        if ev.get("event") == "done":
            records.append(ev["record"])
            remaining.remove(ev["record"]["workload"])
        elif ev.get("event") == "blas":
            blas = ev["info"]

    while remaining:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker-ids", ",".join(remaining),
               "--threads", str(threads)] + (["--quick"] if quick else []) + (["--blas-info"] if want_blas else [])
        rc, hung, current = drive_worker(cmd, child_env(threads), threads, stall_s, on_event)
        if current is None:
            if remaining:  # died between workloads (e.g. at import): fail them all
                for wid in remaining:
                    records.append({"workload": wid, "threads": threads, "vkml_s": None, "torch_s": None,
                                    "ratio": None, "error": f"worker exited rc={rc}"})
                remaining = []
            break
        why = f"hung > {stall_s}s" if hung else f"worker crashed (rc={rc})"
        records.append({"workload": current, "threads": threads, "vkml_s": None, "torch_s": None, "ratio": None,
                        "error": why})
        remaining.remove(current)
    return records, blas


def run_rss(kind, threads, quick):
    steps = {"mlp": 100 if quick else 300, "transformer": 10 if quick else 30}[kind]
    rec = {"workload": f"rss.{kind}", "threads": threads}
    for lib in ("vkml", "torch"):
        cmd = [sys.executable, os.path.abspath(__file__), "--rss-worker", kind, "--lib", lib,
               "--threads", str(threads), "--steps", str(steps)]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=child_env(threads), timeout=300)
            out = json.loads(p.stdout.strip().splitlines()[-1])
            rec[f"{lib}_rss_mb"], rec[f"{lib}_base_mb"], rec[f"{lib}_s"] = out["rss_mb"], out["base_mb"], out["wall_s"]
        except Exception as e:  # noqa: BLE001
            err = (p.stderr.strip().splitlines() or ["?"])[-1] if "p" in locals() and p.stderr else str(e)
            rec[f"{lib}_error"] = err[:120]
            rec[f"{lib}_s"] = None
    v, t = rec.get("vkml_rss_mb"), rec.get("torch_rss_mb")
    rec["ratio"] = v / t if v and t else None
    rec["steps"] = steps
    return rec


def build_peaks(outdir):
    os.makedirs(outdir, exist_ok=True)
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or "c++"
    exes = {}
    for name in ("peak_fma", "stream"):
        src, exe = os.path.join(HERE, f"{name}.cpp"), os.path.join(outdir, name)
        if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
            subprocess.run([cxx, "-O3", "-march=native", "-std=c++20", "-pthread", src, "-o", exe], check=True)
        exes[name] = exe
    return exes


def run_peaks(exes, threads):
    recs = []
    try:
        out = json.loads(subprocess.run([exes["peak_fma"], str(threads), "0.5"], capture_output=True, text=True,
                                        check=True).stdout)
        recs.append({"workload": "peak.fma", "threads": threads, "gflops": out["gflops"], "isa": out["isa"]})
    except Exception as e:  # noqa: BLE001
        recs.append({"workload": "peak.fma", "threads": threads, "gflops": None, "error": str(e)[:120]})
    try:
        out = json.loads(subprocess.run([exes["stream"], str(threads)], capture_output=True, text=True,
                                        check=True).stdout)
        recs.append({"workload": "peak.stream", "threads": threads, "gbs": out["gbs"]})
    except Exception as e:  # noqa: BLE001
        recs.append({"workload": "peak.stream", "threads": threads, "gbs": None, "error": str(e)[:120]})
    return recs


def fmt_t(s):
    if s is None:
        return "-"
    for unit, f in (("s", 1.0), ("ms", 1e3), ("us", 1e6), ("ns", 1e9)):
        if s * f >= 1.0 or unit == "ns":
            return f"{s * f:.3g} {unit}"


def fmt_mb(mb):
    return "-" if mb is None else f"{mb:.0f} MiB"


def machine():
    model, cores = platform.processor() or platform.machine(), os.cpu_count()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for ln in out.splitlines():
            if ln.startswith("Model name:"):
                model = ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, {cores} logical CPUs"


def bf16_hardware():
    """What the CPU has for bfloat16 matrix products (the .bf16 rows say it; the "bf16 GEMM" line
    above the table says what vkml runs them on)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        flags = []
    have = [name for flag, name in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16"))
            if flag in flags]
    cpu = "CPU has " + " and ".join(have) if have else "no bf16 matrix hardware"
    return cpu


def table(records, peaks):
    hdr = ["workload", "thr", "vkml", "torch", "vkml/torch", "spread vk/t", "throughput: vkml / torch (% of peak)"]
    rows = []
    for r in records:
        wid, n = r["workload"], r["threads"]
        err = r.get("error")
        if wid.startswith("rss."):
            v, t = fmt_mb(r.get("vkml_rss_mb")), fmt_mb(r.get("torch_rss_mb"))
            spread = ""
            note = f"after import: {fmt_mb(r.get('vkml_base_mb'))} / {fmt_mb(r.get('torch_base_mb'))}; " \
                   f"{r.get('steps')} steps"
        else:
            v, t = fmt_t(r.get("vkml_s")), fmt_t(r.get("torch_s"))
            sv, st = r.get("vkml_spread"), r.get("torch_spread")
            spread = f"{sv * 100:.0f}%/{st * 100:.0f}%" if sv is not None and st is not None else ""
            note = ""
            if r.get("gflops") is not None or r.get("torch_gflops") is not None:
                pk = peaks.get(("peak.fma", n))
                g, tg = r.get("gflops"), r.get("torch_gflops")
                note = f"{g or 0:.1f} / {tg or 0:.1f} GFLOP/s"
                if pk and g:
                    note += f"; {g / pk * 100:.0f}% of FMA {pk:.0f}"
            elif r.get("gbs") is not None or r.get("torch_gbs") is not None:
                pk = peaks.get(("peak.stream", n))
                g, tg = r.get("gbs"), r.get("torch_gbs")
                note = f"{g or 0:.1f} / {tg or 0:.1f} GB/s"
                if pk and g:
                    note += f"; {g / pk * 100:.0f}% of STREAM {pk:.1f}"
        if ".bf16" in wid:
            note = (note + "; " if note else "") + bf16_hardware()
        ratio = f"{r['ratio']:.2f}" if r.get("ratio") else "-"
        errs = [f"{k.split('_')[0]}: {r[k]}" for k in ("vkml_error", "torch_error") if r.get(k)]
        if err:
            errs.append(err)
        if errs:
            note = (note + "  " if note else "") + "ERROR " + " / ".join(errs)
        rows.append([wid, str(n), v, t, ratio, spread, note])
    for (wid, n), val in sorted(peaks.items()):
        unit = "GFLOP/s" if wid == "peak.fma" else "GB/s"
        rows.append([wid, str(n), "", "", "", "", f"{val:.1f} {unit}" if val else "ERROR"])
    w = [max(len(x[i]) for x in rows + [hdr]) for i in range(len(hdr))]
    line = lambda xs: "| " + " | ".join(x.ljust(w[i]) for i, x in enumerate(xs)) + " |"  # noqa: E731
    return "\n".join([line(hdr), "|" + "|".join("-" * (k + 2) for k in w) + "|"] + [line(x) for x in rows])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the records here")
    ap.add_argument("--quick", action="store_true", help="a ~2 minute subset with fewer repeats")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--only", help="comma-separated substrings of workload ids")
    ap.add_argument("--no-dist", action="store_true", help="leave out the dist.* rows (bench/dist_bench.py)")
    ap.add_argument("--build-dir", help="where the peak kernels are compiled (default: next to --json, or build)")
    # internal
    ap.add_argument("--worker-ids", help=argparse.SUPPRESS)
    ap.add_argument("--blas-info", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rss-worker", choices=["mlp", "transformer"], help=argparse.SUPPRESS)
    ap.add_argument("--lib", choices=["vkml", "torch"], help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=100, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_ids:
        args.threads = int(args.threads)
        return worker(args)
    if args.rss_worker:
        args.threads = int(args.threads)
        return rss_worker(args)

    t_start = time.time()
    threads = [int(x) for x in args.threads.split(",")]
    ids = QUICK if args.quick else ALL_IDS
    if args.only:
        keys = args.only.split(",")
        ids = [i for i in ALL_IDS if any(k in i for k in keys)]
    bdir = args.build_dir or os.path.join(os.path.dirname(os.path.abspath(args.json)) if args.json
                                          else os.path.join(ROOT, "build"), "bench-bin")
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    peaks, peak_recs = {}, []
    try:
        exes = build_peaks(bdir)
        for n in threads:
            for r in run_peaks(exes, n):
                peak_recs.append(r)
                peaks[(r["workload"], n)] = r.get("gflops", r.get("gbs"))
    except Exception as e:  # noqa: BLE001
        print(f"peak kernels failed to build/run: {e}", file=sys.stderr)

    records, blas = [], None
    kernel_ids = [i for i in ids if i in WORKLOADS]
    for n in threads:
        if kernel_ids:
            recs, b = run_worker(kernel_ids, n, args.quick, want_blas=blas is None)
            blas = blas or b
            records += recs
        for i in ids:
            if i in RSS_WORKLOADS:
                print(f"  [{n} thr] {i} ...", file=sys.stderr, flush=True)
                records.append(run_rss(i.split(".")[1], n, args.quick))
    order = {wid: k for k, wid in enumerate(ALL_IDS)}
    records.sort(key=lambda r: (order.get(r["workload"], 99), r["threads"]))

    print(f"\nvkml vs torch {_torch_version()} -- {machine()} -- {time.strftime('%Y-%m-%d')} -- "
          f"threads {args.threads}{' (quick)' if args.quick else ''}")
    if blas:
        print(f"BLAS (vkml): {blas.get('vkml')}")
        print(f"BLAS (torch): {blas.get('torch')}")
        print(f"CPU kernels: {blas.get('cpu_kernels')}")
        print(f"bf16 GEMM (vkml): {blas.get('bf16_gemm')}")
        tp = blas.get("threadpoolctl")
        if isinstance(tp, list):
            for d in tp:
                print(f"  threadpoolctl: {d.get('internal_api')} {d.get('version')} arch={d.get('architecture')} "
                      f"threads={d.get('num_threads')} {d.get('filepath')}")
        else:
            print(f"  threadpoolctl: {tp}")
    print("env: OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset for both libraries; times are medians per call "
          "(train.*: per optimizer step); spread = IQR/median; rss.*: peak RSS of a short training run, one "
          "process per library")
    print(table(records, peaks))
    import dist_bench  # the dist.* rows (data-parallel over MPI), in their own table
    dist_recs = dist_bench.compare_section(args.quick, args.only and args.only.split(","), args.no_dist, bdir)
    print(f"total {time.time() - t_start:.0f} s")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        out = records + peak_recs + dist_recs
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.json}")


def _torch_version():
    try:
        out = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True, timeout=60).stdout.strip()
        return out or "?"
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    sys.exit(main())
