#!/usr/bin/env python3
"""Peers beside torch: vkml, torch, JAX, tinygrad and MLX on the same workloads, in one table.

    python bench/peers.py                                 # every row below at 1 and 2 threads
    python bench/peers.py --quick --threads 1             # fewer repeats, a small calibration
    python bench/peers.py --only train.mlp,matmul.1024    # workloads whose id contains one of these
    python bench/peers.py --json build/bench.json         # merge "peers" records into compare.py's list

Optional: it installs nothing. A peer that is not importable is reported as "not installed" in the
table and the JSON; torch (the common reference) and vkml are always measured.

How it measures: as bench/compare.py, whose machinery it imports (child_env, Runner, quiesce,
quantiles, the vkml/torch workload builders): one worker process per thread count, every library
imported in it, warm-up, a calibration of calls per sample, then repeats in which the libraries take
turns (the order rotates every repeat), each sample after the quiesce spin; reported: the median
seconds per call and the spread (IQR / median). Each peer compiles its whole step: jax.jit over the
step (forward, jax.grad, a hand-written optimizer update matching the torch optimizer), tinygrad's
TinyJit over the step (tinygrad.nn layers, tinygrad.nn.optim), MLX's mx.compile over the step
(mlx.nn, mlx.optimizers) on the CPU device. Compilation happens before timing (the builders run the
step until it is compiled). Each port has the torch model's shapes, batches (the very arrays
bench/train_models.py builds), loss and optimizer kind and hyper-parameters; initial weights differ.

Threads: vkml and torch as compare.py. JAX: XLA's CPU pool is sized by the CPUs this process may run
on when the client starts, so the worker narrows its affinity to n CPUs while JAX starts, then
widens it again; at 1 thread XLA_FLAGS also turns off Eigen's multi-threading. tinygrad:
NUM_CPU_THREADS=n. MLX: no thread knob on CPU (its BLAS reads OPENBLAS_NUM_THREADS, set as for all).

--json FILE: records {"workload", "threads", "lib", "seconds", "ratio_to_torch", "spread",
"source": "peers"} (plus "note": "not installed" / "n/a: ..." / "error: ..." where there is no time).
If FILE holds a JSON list already (compare.py's build/bench.json), its old "peers" records are
dropped and these appended; the rest is kept.
"""

import argparse
import gc
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare as C  # noqa: E402  (compare.py is importable: its driver runs only under __main__)
from peer_common import (IDS, LIBS, PEERS, NotApplicable, PeerNotInstalled,  # noqa: E402
                         installed, loss_value, need, versions)  # noqa: F401  (loss_value: the tests')
from peer_jax import jax_kernel, jax_train  # noqa: E402
from peer_mlx import _mlx, mlx_kernel, mlx_train  # noqa: E402
from peer_tinygrad import tinygrad_kernel, tinygrad_train  # noqa: E402

PORTS = {"jax": (jax_train, jax_kernel), "tinygrad": (tinygrad_train, tinygrad_kernel),
         "mlx": (mlx_train, mlx_kernel)}


def build_peer(peer, wid, np):
    """The peer's step for workload wid, compiled and warm: raises PeerNotInstalled / NotApplicable."""
    need(peer)
    train, kernel = PORTS[peer]
    if wid.startswith("train."):
        return train(wid.split(".", 1)[1], np)
    return kernel(wid, np)


# ----------------------------------------------------------------------------------------------------------
# Worker: one process per thread count, every available library imported, compare.py's sampling.
# ----------------------------------------------------------------------------------------------------------


def import_peer(peer, threads):
    """The peer's module, or why there is none ("not installed", "import failed: ...")."""
    if not installed(peer):
        return "not installed"
    try:
        if peer == "jax":
            cpus = sorted(os.sched_getaffinity(0))
            narrow = threads < len(cpus)
            if narrow:  # XLA sizes its CPU pool from the affinity mask when the client starts
                os.sched_setaffinity(0, cpus[:threads])
            try:
                import jax
                jax.config.update("jax_platforms", "cpu")
                jax.devices()
            finally:
                if narrow:
                    os.sched_setaffinity(0, cpus)
            return jax
        if peer == "tinygrad":
            import tinygrad
            tinygrad.Device[tinygrad.Device.DEFAULT]  # opens the device now, not in the first sample
            return tinygrad
        return _mlx()
    except Exception as e:  # noqa: BLE001
        return f"import failed: {type(e).__name__}: {e}".splitlines()[0][:120]


def builder_for(name, wid):
    if name in ("vkml", "torch"):
        return C.WORKLOADS[wid][0]
    return lambda L, F, np: {"fn": build_peer(name, wid, np)}


def warm_up(r):
    """compare.measure's warm-up: at least 2 calls, up to 0.15 s (the peers' builders compiled already)."""
    t_end, k = time.perf_counter() + 0.15, 0
    while k < 2 or time.perf_counter() < t_end:
        t1 = r.once()
        k += 1
        if (t1 > 0.3 and k >= 2) or t1 > 2.0:
            break
    r.warm_s = t1


def describe(e):
    if isinstance(e, PeerNotInstalled):
        return "not installed"
    if isinstance(e, NotApplicable):
        return f"n/a: {e}"
    return f"error: {type(e).__name__}: {e}".splitlines()[0][:160]


def measure(wid, libs, quick):
    heavy = C.WORKLOADS[wid][1].get("heavy")
    target = 0.02 if quick else 0.05                                   # seconds per sample
    budget = (0.75 if quick else 4.0) * (1.5 if heavy else 1.0)        # seconds per library
    max_rep = 5 if quick else (9 if heavy else 15)
    runners, out = {}, {}
    for name, lib in libs.items():
        if isinstance(lib, str):
            out[name] = {"note": lib}
            continue
        try:
            r = C.Runner(wid, builder_for(name, wid), lib)
            warm_up(r)
            runners[name] = r
        except Exception as e:  # noqa: BLE001 -- a library that cannot run it gets a note in its cell
            out[name] = {"note": describe(e)}
    plan = {}
    for name, r in runners.items():
        t1 = r.warm_s if r.warm_s > 2.0 else min(r.once() for _ in range(3))
        inner = max(1, min(200_000, int(target / max(t1, 1e-9))))
        plan[name] = (inner, max(3, min(max_rep, int(budget / max(t1 * inner, 1e-9)))))
    slow = {name for name, r in runners.items() if r.warm_s > 10.0}  # one call is its own sample
    reps = min([p[1] for name, p in plan.items() if name not in slow] or [0])
    samples = {name: [runners[name].warm_s] if name in slow else [] for name in runners}
    order = list(runners)
    gc.collect()
    gc.disable()
    try:
        for i in range(reps):
            k = i % max(1, len(order))
            for name in order[k:] + order[:k]:  # rotate: every library takes every place in turn
                if name not in slow:
                    C.quiesce()
                    samples[name].append(runners[name].sample(plan[name][0]))
    finally:
        gc.enable()
    for name, xs in samples.items():
        q1, med, q3 = C.quantiles(xs)
        out[name] = {"seconds": med, "spread": (q3 - q1) / med if med > 0 else 0.0, "reps": len(xs),
                     "inner": plan[name][0]}
    return out


def worker(args):
    libs = C.import_libs(args.threads)
    for peer in PEERS:
        m = import_peer(peer, args.threads)
        libs[peer] = m if isinstance(m, str) else (m, None)  # compare.Runner takes (L, F)
    ver = {"vkml": getattr(libs["vkml"][0], "__version__", "?")}
    C.emit({"event": "versions", "versions": ver})
    for wid in args.worker_ids.split(","):
        C.emit({"event": "start", "workload": wid})
        try:
            res = measure(wid, libs, args.quick)
        except Exception as e:  # noqa: BLE001
            res = {name: {"note": describe(e)} for name in LIBS}
        C.emit({"event": "done", "workload": wid, "results": res})
        gc.collect()

# ----------------------------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------------------------


def peer_env(threads):
    env = C.child_env(threads)
    env["NUM_CPU_THREADS"] = str(threads)   # tinygrad's CPU device
    env.setdefault("DEV", "CPU")            # tinygrad: the CPU device, without probing GPU back ends
    env.setdefault("JAX_PLATFORMS", "cpu")
    if threads == 1:
        flags = env.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
    return env


def run_worker(ids, threads, quick, stall_s=600):
    """As compare.run_worker: restarts the worker after a crash or a hang, that workload marked failed.
    A long stall limit: a JIT compile of resnet18 takes a while."""
    results, ver, remaining = {}, {}, list(ids)

    def on_event(ev):
        nonlocal ver
        if ev.get("event") == "versions":
            ver = ev["versions"]
        elif ev.get("event") == "done":
            results[ev["workload"]] = ev["results"]
            remaining.remove(ev["workload"])

    while remaining:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker-ids", ",".join(remaining),
               "--threads", str(threads)] + (["--quick"] if quick else [])
        rc, hung, current = C.drive_worker(cmd, peer_env(threads), threads, stall_s, on_event)
        failed = [current] if current is not None else list(remaining)
        why = f"hung > {stall_s}s" if hung else f"worker exited rc={rc}"
        for wid in failed:
            results[wid] = {name: {"note": f"error: {why}"} for name in LIBS}
            remaining.remove(wid)
    return results, ver


def records(results_by_thr):
    out = []
    for threads, results in results_by_thr.items():
        for wid in IDS:
            if wid not in results:
                continue
            res = results[wid]
            t = res.get("torch", {}).get("seconds")
            for lib in LIBS:
                r = res.get(lib, {"note": "error: no result"})
                s = r.get("seconds")
                rec = {"workload": wid, "threads": threads, "lib": lib, "seconds": s,
                       "ratio_to_torch": s / t if s and t else None, "spread": r.get("spread"), "source": "peers"}
                if "note" in r:
                    rec["note"] = r["note"]
                out.append(rec)
    return out


def cell(rec):
    if rec["seconds"] is not None:
        return C.fmt_t(rec["seconds"])
    note = rec.get("note", "")
    return note if note == "not installed" else note.split(":")[0].upper() if note.startswith("error") else "n/a"


def table(recs):
    peers_ratio = [f"{p}/torch" for p in PEERS]
    hdr = ["workload", "thr"] + list(LIBS) + ["vkml/torch"] + peers_ratio + ["spread (IQR/median)", "notes"]
    rows = []
    by = {}
    for r in recs:
        by.setdefault((r["workload"], r["threads"]), {})[r["lib"]] = r
    for (wid, n), libs in by.items():
        ratio = lambda lib: f"{libs[lib]['ratio_to_torch']:.2f}" if libs[lib]["ratio_to_torch"] else "-"  # noqa: E731
        spread = " ".join(f"{lib} {libs[lib]['spread'] * 100:.0f}%" for lib in LIBS
                          if libs[lib]["spread"] is not None)
        notes = "; ".join(f"{lib}: {libs[lib]['note']}" for lib in LIBS
                          if libs[lib].get("note") not in (None, "not installed"))
        rows.append([wid, str(n)] + [cell(libs[lib]) for lib in LIBS] + [ratio("vkml")]
                    + [ratio(p) for p in PEERS] + [spread, notes])
    w = [max(len(x[i]) for x in rows + [hdr]) for i in range(len(hdr))]
    line = lambda xs: "| " + " | ".join(x.ljust(w[i]) for i, x in enumerate(xs)) + " |"  # noqa: E731
    return "\n".join([line(hdr), "|" + "|".join("-" * (k + 2) for k in w) + "|"] + [line(x) for x in rows])


def write_json(path, recs):
    """Append-merge into a JSON list (compare.py's build/bench.json): old "peers" records replaced."""
    old = []
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if not isinstance(old, list):
            raise SystemExit(f"{path} does not hold a JSON list; not overwriting it")
    merged = [r for r in old if not (isinstance(r, dict) and r.get("source") == "peers")] + recs
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(merged, f, indent=1)
    print(f"wrote {path} ({len(recs)} peers records, {len(merged) - len(recs)} others kept)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write (or merge into) this JSON list")
    ap.add_argument("--quick", action="store_true", help="fewer repeats, a small calibration")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--only", help="comma-separated substrings of workload ids")
    ap.add_argument("--worker-ids", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_ids:
        args.threads = int(args.threads)
        return worker(args)

    t_start = time.time()
    ids = [i for i in IDS if not args.only or any(k in i for k in args.only.split(","))]
    if not ids:
        raise SystemExit(f"no workload matches --only {args.only}; the workloads: {', '.join(IDS)}")
    threads = [int(x) for x in args.threads.split(",")]
    print(f"machine: {C.machine()}; load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    by_thr, ver = {}, {}
    for n in threads:
        by_thr[n], v = run_worker(ids, n, args.quick)
        ver = ver or v
    recs = records(by_thr)
    v = versions()
    peer_ver = ", ".join(f"{p} {v.get(p) or 'not installed'}" + (f" (jaxlib {v['jaxlib']})" if p == "jax" and
                                                                 v.get("jaxlib") else "") for p in PEERS)
    print(f"\npeers beside torch -- vkml {ver.get('vkml', '?')}, torch {v.get('torch')}, {peer_ver} -- "
          f"{C.machine()} -- {time.strftime('%Y-%m-%d')} -- threads {args.threads}{' (quick)' if args.quick else ''}")
    print("times: medians per call (train.*: per optimizer step, each peer's step compiled whole: jax.jit, "
          "TinyJit, mx.compile); ratios: to torch; spread: IQR/median per library")
    print(table(recs))
    print(f"total {time.time() - t_start:.0f} s")
    if args.json:
        write_json(args.json, recs)


if __name__ == "__main__":
    sys.exit(main())
