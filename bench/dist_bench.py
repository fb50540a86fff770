#!/usr/bin/env python3
"""The dist.* rows of `make bench` (bench/compare.py runs this section when vk.distributed.is_available()).

    python bench/dist_bench.py [--quick] [--json FILE]        # this section alone

Rows (every rank runs 1 compute thread: VKML_NUM_THREADS=1 and vk.set_num_threads(1)):
  dist.allreduce.<size>  float32 sum all-reduce at 2 ranks: vk.distributed.all_reduce (the public call,
                         which first checks that every rank makes the same call) against MPI_Allreduce
                         in the same run (bench/dist_allreduce.cpp, no Python): seconds per call, their
                         ratio, algorithm bandwidth (bytes / time) and bus bandwidth (2 (p-1)/p bytes /
                         time). The record also holds vkml's unchecked call (what DDP uses) and "rsag":
                         vkml's algorithm (all-to-all + all-gather) in plain MPI.
  dist.train.<model>     bench/compare.py's train.mlp / train.transformer step (model, optimizer, global
                         batch) at 1 rank (plain training) and at 2 ranks (DistributedDataParallel, each
                         rank half the batch): scaling efficiency t1 / (2 t2), and the share of the
                         gradient all-reduce hidden behind backward,
                             hidden = 1 - (t_backward_ddp - t_backward) / t_allreduce,
                         with t_backward the same backward under no_sync() and t_allreduce the bare
                         all-reduces of DDP's buckets; for DDP's default buckets (25 MiB: one bucket for
                         these models, so nothing can overlap) and for buckets of ~1/4 of the gradients.
                         (hidden_by_wait: the same from the time backward blocks in Work.wait().)

All-reduce times are each side's best sample (medians in *_median_s): on a machine shared with other work
a descheduled rank stalls a busy-polling MPI collective, and the best sample is the cost of the call.

The 2-rank parts run under mpirun (--allow-run-as-root when root, --oversubscribe past the core count;
vkml's with --bind-to none as its launcher runs them, the MPI yardstick with Open MPI's default binding)
and print JSON lines; a sample's time is the slowest rank's; training times are medians over steps. Every
record names the machine ("machine") and the MPI library ("mpi").
"""

import argparse
import contextlib
import functools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare  # noqa: E402  (the train.* models, machine(), child_env())

SIZES = [1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26]      # 1 KiB .. 64 MiB
QUICK_SIZES = [1 << 10, 1 << 16, 1 << 20]
KINDS = ["mlp", "transformer"]
WORKLOADS = ["dist.allreduce", "dist.train.mlp", "dist.train.transformer"]


def size_name(nbytes):
    for unit, f in (("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= f and nbytes % f == 0:
            return f"{nbytes // f}{unit}"
    return str(nbytes)


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

# ----------------------------------------------------------------------------------------------------------
# Rank workers: run under mpirun (or alone, as a group of one); rank 0 prints the JSON.
# ----------------------------------------------------------------------------------------------------------


def _init():
    import vkml as vk
    import vkml.distributed as dist
    vk.set_num_threads(1)
    dist.init_process_group("mpi")
    return vk, dist


def _across(dist, values, how=max):
    """Each field of a tuple reduced over the ranks (max: a sample counts as the slowest rank's)."""
    if dist.get_world_size() == 1:
        return tuple(values)
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, tuple(values))
    return tuple(how(column) for column in zip(*every))


def _slowest(dist, value):
    return _across(dist, (value,))[0]


def _calls_per_sample(dist, fn, target_s):
    """How many calls make one sample of ~target_s: batches of 1, 2, 4, ... calls until one takes 20 ms
    on rank 0, whose time every rank follows (so that all make the same calls)."""
    probe = 1
    while True:
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(probe):
            fn()
        elapsed = [time.perf_counter() - t0]
        dist.broadcast_object_list(elapsed, src=0)
        if elapsed[0] >= 0.02 or probe >= 1 << 16:
            return max(1, int(target_s / (elapsed[0] / probe)))
        probe *= 2


def _time_calls(dist, fn, budget_s, reps):
    for _ in range(2):
        fn()
    iters = _calls_per_sample(dist, fn, budget_s / reps)
    samples = []
    for _ in range(reps):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        samples.append(_slowest(dist, (time.perf_counter() - t0) / iters))
    return statistics.median(samples), min(samples)


def allreduce_worker(args):
    """vk.distributed.all_reduce of float32 tensors of the given byte sizes: checked and unchecked."""
    vk, dist = _init()
    for nbytes in [int(s) for s in args.sizes.split(",")]:
        t = vk.zeros(max(1, nbytes // 4))  # zeros: the sums stay zeros whatever the call count
        checked = _time_calls(dist, lambda: dist.all_reduce(t), args.time, args.reps)
        unchecked = _time_calls(dist, lambda: dist._D.all_reduce(t, "sum", False, False), args.time, args.reps)
        if dist.get_rank() == 0:
            emit({"bytes": nbytes, "ranks": dist.get_world_size(), "vkml_median_s": checked[0],
                  "vkml_s": checked[1], "vkml_unchecked_s": unchecked[1]})


def _timed_step(kind, L, model, opt, batch, params):
    """One optimizer step; returns (step seconds, backward seconds)."""
    x, y = batch
    t0 = time.perf_counter()
    loss = compare.train_loss(kind, L, model(x), y)
    opt.zero_grad()
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    if kind == "transformer":
        L.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    return time.perf_counter() - t0, t2 - t1


def _bare_allreduce(dist, buckets, reps):
    """Seconds for the all-reduces of DDP's buckets alone (started together, then waited), as DDP."""
    import vkml as vk
    flats = [vk.zeros(sum(p.numel() for p in b.params)) for b in buckets]

    def run():
        works = [dist._D.all_reduce(f, "avg", True, False) for f in flats]
        for w in works:
            w.wait()
    return _time_calls(dist, run, 0.1 * reps, reps)[1]


class _WaitClock:
    """Seconds DDP's backward spends blocked on its buckets' all-reduces (the exposed part): wraps
    each bucket's Work as DDP starts it. Bench instrumentation of DDP's private _start."""

    def __init__(self, ddp):
        self.seconds = 0.0
        start = ddp._start

        def timed_start(bucket):
            start(bucket)
            bucket.work = _TimedWork(bucket.work, self)
        ddp._start = timed_start


class _TimedWork:
    def __init__(self, work, clock):
        self.work, self.clock = work, clock

    def wait(self):
        t0 = time.perf_counter()
        self.work.wait()
        self.clock.seconds += time.perf_counter() - t0


def _ddp_parts(dist, L, kind, model, opt, batches, params, steps, bucket_mb):
    """DDP's step and backward, and the same under no_sync() (no communication: the compute the ranks
    do side by side), alternating step by step so that a change in the machine's load hits both.
    hidden = 1 - (backward with DDP - backward under no_sync) / (the buckets' all-reduces alone): what
    DDP adds to backward beyond the bare all-reduces (its hooks, flattening, copies) counts as exposed.
    hidden_by_wait: the same with the time backward blocks in Work.wait() on the rank that blocks least
    (the last to arrive); it under-counts when the communication thread shares the compute thread's
    core (its run then shows up outside the wait)."""
    ddp = L.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_mb)
    clock = _WaitClock(ddp)
    synced, local = [], []
    for i in range(3 + steps):
        for out, sync in ((synced, True), (local, False)):
            dist.barrier()
            clock.seconds = 0.0
            with contextlib.nullcontext() if sync else ddp.no_sync():
                s, b = _timed_step(kind, L, ddp, opt, batches[i % len(batches)], params)
            if i >= 3:
                out.append(_across(dist, (s, b)) + _across(dist, (clock.seconds,), min))
    ar = _bare_allreduce(dist, ddp._buckets, 5)
    for h in ddp._handles:  # the next DDP over this module brings its own hooks
        h.remove()
    ddp._handles = []
    med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
    bwd_ddp, bwd, wait = med(synced, 1), med(local, 1), med(synced, 2)
    return {"step_s": med(synced, 0), "local_step_s": med(local, 0), "backward_ddp_s": bwd_ddp,
            "backward_s": bwd, "wait_s": wait, "allreduce_s": ar, "buckets": len(ddp._buckets),
            "hidden": 1.0 - (bwd_ddp - bwd) / ar if ar > 0 else None,
            "hidden_by_wait": 1.0 - wait / ar if ar > 0 else None}


def _one_rank_parts(dist, L, np, kind, steps, warmup=3):
    """Median step and backward seconds of the plain step on the global batch (step_s) and on half of it
    (half_step_s), and of DDP in a group of one on the half (ddp_half_step_s): the three alternate step
    by step, so that a change in the machine's load hits all three. DDP alone hooks nothing (the
    average of one gradient is itself); its switch _hook_in_group_of_one makes it do its whole
    per-step work (hooks, flattening, the call, copying back) so that the difference is its cost."""
    L.nn.parallel.DistributedDataParallel._hook_in_group_of_one = True
    runs = []
    for key, shard, ddp in (("step_s", (0, 1), False), ("half_step_s", (0, 2), False),
                            ("ddp_half_step_s", (0, 2), True)):
        L.manual_seed(0)
        model, opt, batches = compare.train_parts(kind, L, np, shard)
        params = list(model.parameters())
        runs.append((key, L.nn.parallel.DistributedDataParallel(model) if ddp else model, opt, batches, params, []))
    for i in range(warmup + steps):
        for key, model, opt, batches, params, out in runs:
            sb = _timed_step(kind, L, model, opt, batches[i % len(batches)], params)
            if i >= warmup:
                out.append(sb)
    rec = {}
    for key, *_, out in runs:
        rec[key] = statistics.median(o[0] for o in out)
        rec[key.replace("step", "backward")] = statistics.median(o[1] for o in out)
    return rec


def train_worker(args):
    """At 1 rank: the plain step on the global batch and on half of it. At p ranks: DDP's step."""
    import numpy as np
    L, dist = _init()
    p, rank = dist.get_world_size(), dist.get_rank()
    for kind in args.kinds.split(","):
        steps = args.steps if kind == "mlp" else max(3, args.steps // 10)
        rec = {"kind": kind, "ranks": p, "load_before": os.getloadavg()[0]}
        if p == 1:  # plain steps on the global batch and half of it; DDP's own cost in a group of one
            rec.update(_one_rank_parts(dist, L, np, kind, steps))
        else:
            L.manual_seed(0)
            model, opt, batches = compare.train_parts(kind, L, np, (rank, p))
            params = list(model.parameters())
            nbytes = sum(q.numel() * q.element_size() for q in params)
            rec["grad_bytes"] = nbytes
            rec["default"] = _ddp_parts(dist, L, kind, model, opt, batches, params, steps, None)
            if "small" in args.buckets:
                rec["small"] = _ddp_parts(dist, L, kind, model, opt, batches, params, steps,
                                          nbytes / 4 / (1 << 20))
            rec["step_s"] = rec["default"]["step_s"]
        rec["load_after"] = os.getloadavg()[0]
        if rank == 0:
            emit(rec)

# ----------------------------------------------------------------------------------------------------------
# Driver: the mpirun jobs and the table.
# ----------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def mpi_library():
    """The MPI library mpirun belongs to (its --version's first line), or None without mpirun."""
    exe = shutil.which("mpirun")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
        return (out.strip().splitlines() or ["?"])[0]
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def mpirun_cmd(n, mca=(), bind=False):
    """mpirun -n n with the flags this machine needs: Open MPI refuses root without
    --allow-run-as-root and more ranks than cores without --oversubscribe. bind=False: --bind-to
    none, as python -m vkml.distributed.run runs vkml (Open MPI would pin each rank, its
    communication thread included, to one core); bind=True: Open MPI's default, one core per rank,
    which its busy-polling collectives need on a loaded machine (the MPI yardstick's runs).
    mca: extra (name, value) MCA settings, e.g. [("btl", "tcp,self")]."""
    cmd = ["mpirun", "-n", str(n)]
    if "Open MPI" in (mpi_library() or ""):
        cmd += [] if bind else ["--bind-to", "none"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if n > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
        for name, value in mca:
            cmd += ["--mca", name, value]
    return cmd


def available():
    """(True, "") when mpirun exists and this vkml has vk.distributed; else (False, why)."""
    if not shutil.which("mpirun"):
        return False, "no mpirun on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev)"
    code = "import vkml.distributed as d; print(d.is_available())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=compare.child_env(1))
    if p.stdout.strip() != "True":
        err = (p.stderr.strip().splitlines() or ["vk.distributed.is_available() is False"])[-1]
        return False, f"vkml built without MPI ({err[:100]})"
    return True, ""


def bench_exe(bdir):
    """The MPI yardstick: the build's vkml_dist_bench when current, else compiled here with mpicxx."""
    src = os.path.join(HERE, "dist_allreduce.cpp")
    # the CMake build's (bdir is <build>/bench-bin under make bench), then one compiled here before
    for exe in (os.path.join(os.path.dirname(os.path.abspath(bdir)), "vkml_dist_bench"),
                os.path.join(ROOT, "build", "vkml_dist_bench"), os.path.join(bdir, "vkml_dist_bench")):
        if os.path.exists(exe) and os.path.getmtime(exe) >= os.path.getmtime(src):
            return exe
    os.makedirs(bdir, exist_ok=True)
    subprocess.run([shutil.which("mpicxx") or "mpicxx", "-O2", "-std=c++20", src, "-o", exe], check=True)
    return exe


def _run_group(cmd, timeout):
    """(returncode, stdout, stderr) of cmd, started in its own process group; past the timeout the
    whole group (mpirun and its ranks) gets SIGTERM, then SIGKILL, and the return code is 124."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=compare.child_env(1),
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 30)):
            try:
                os.killpg(p.pid, sig)
                out, err = p.communicate(timeout=grace)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                out, err = "", ""
        return 124, out or "", (err or "") + f"\ntimed out after {timeout} s"


def run_json(cmd, timeout, tries=2):
    """Runs cmd; the JSON objects it printed, one a line. A failed job runs once more (mpirun's start-up
    fails now and then on a busy machine); the second failure, or a timeout, raises with stderr's last words."""
    for attempt in range(tries):
        rc, out, err = _run_group(cmd, timeout)
        if rc == 0:
            return [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]
        words = [ln.strip() for ln in err.splitlines() if ln.strip().strip("-")]  # mpirun frames in dashes
        why = f"{' '.join(cmd[:4])} ... (rc={rc}): {' '.join(words[-3:])[:300]}"
        if rc == 124:  # a hang: another try would hang as long
            break
        print(f"  [dist] {why}{'; again' if attempt + 1 < tries else ''}", file=sys.stderr, flush=True)
    raise RuntimeError(why)


def measure_allreduce(n, sizes, quick, bdir, mca=()):
    """{bytes: record} for n ranks: vkml's checked/unchecked calls, MPI_Allreduce and rsag."""
    t, reps = ("0.05", "3") if quick else ("0.2", "5")
    csv = ",".join(str(s) for s in sizes)
    mpi = run_json(mpirun_cmd(n, mca, bind=True) + [bench_exe(bdir), "--sizes", csv, "--time", t, "--reps", reps], 120)
    vk = run_json(mpirun_cmd(n, mca) + [sys.executable, __file__, "--rank-worker", "allreduce", "--sizes", csv,
                                        "--time", t, "--reps", reps], 120)
    out = {r["bytes"]: dict(r) for r in vk}
    for r in mpi:
        mode = "mpi" if r["mode"] == "allreduce" else "rsag"
        rec = out.setdefault(r["bytes"], {"bytes": r["bytes"], "ranks": n})
        rec[f"{mode}_s"], rec[f"{mode}_median_s"] = r["min_s"], r["s"]
    return out


def measure_train(n, kinds, quick, mca=(), buckets="default,small"):
    """{kind: record} of train_worker at n ranks (n = 1: in this machine's plain process)."""
    steps = "30" if quick else "100"
    cmd = [sys.executable, __file__, "--rank-worker", "train", "--kinds", ",".join(kinds), "--steps", steps,
           "--buckets", buckets]
    return {r["kind"]: r for r in run_json((mpirun_cmd(n, mca) if n > 1 else []) + cmd, 300)}


def allreduce_records(by_size, label):
    recs = []
    for nbytes, r in sorted(by_size.items()):
        p = r.get("ranks", 2)
        rec = {"workload": f"dist.allreduce.{size_name(nbytes)}", "threads": 1, "ranks": p, "bytes": nbytes,
               "vkml_s": r.get("vkml_s"), "vkml_unchecked_s": r.get("vkml_unchecked_s"),
               "mpi_s": r.get("mpi_s"), "rsag_s": r.get("rsag_s"), "transport": label,
               "vkml_median_s": r.get("vkml_median_s"), "mpi_median_s": r.get("mpi_median_s")}
        v, m = rec["vkml_s"], rec["mpi_s"]
        rec["ratio"] = v / m if v and m else None
        for who, s in (("vkml", v), ("mpi", m)):
            if s:
                rec[f"{who}_algbw_gbs"] = nbytes / s / 1e9
                rec[f"{who}_busbw_gbs"] = 2 * (p - 1) / p * nbytes / s / 1e9
        recs.append(rec)
    return recs


def train_records(one, many):
    recs = []
    for kind in KINDS:
        a, b = one.get(kind), many.get(kind)
        if not a or not b:
            continue
        p = b["ranks"]
        rec = {"workload": f"dist.train.{kind}", "threads": 1, "ranks": p, "t1_s": a["step_s"],
               "t1_half_s": a["half_step_s"], "t1_half_ddp_s": a["ddp_half_step_s"], "vkml_s": b["step_s"],
               "grad_bytes": b["grad_bytes"],
               "efficiency": a["step_s"] / (p * b["step_s"]), "default_buckets": b["default"],
               "small_buckets": b["small"], "hidden": b["default"]["hidden"],
               "hidden_small": b["small"]["hidden"], "local_step_s": b["default"]["local_step_s"],
               "load": [a["load_before"], b["load_after"]]}
        recs.append(rec)
    return recs


def run(quick=False, bdir=None, only=None, log=sys.stderr):
    """The dist.* records (each naming the machine and the MPI library), or one record saying why none."""
    bdir = bdir or os.path.join(ROOT, "build", "bench-bin")
    kind, mpi = compare.machine(), mpi_library()
    ok, why = available()
    if not ok:
        return [{"workload": "dist", "threads": 1, "skipped": why, "machine": kind, "mpi": mpi}]
    want = [w for w in WORKLOADS if not only or any(k in w for k in only)]
    recs = []
    try:
        if "dist.allreduce" in want:
            print("  [dist] all-reduce sizes at 2 ranks ...", file=log, flush=True)
            recs += allreduce_records(measure_allreduce(2, QUICK_SIZES if quick else SIZES, quick, bdir),
                                      "default (shared memory)")
        kinds = [k for k in KINDS if f"dist.train.{k}" in want]
        if kinds:
            print(f"  [dist] train {','.join(kinds)} at 1 and 2 ranks ...", file=log, flush=True)
            recs += train_records(measure_train(1, kinds, quick), measure_train(2, kinds, quick))
    except Exception as e:  # noqa: BLE001 -- one failing part leaves a row, the bench goes on
        recs.append({"workload": "dist", "threads": 1, "error": f"{type(e).__name__}: {e}"[:400]})
    for r in recs:
        r["machine"], r["mpi"] = kind, mpi
    return recs


def compare_section(quick, only, skip, bdir):
    """bench/compare.py's dist.* part: the records, their table printed after compare's own (nothing
    when --no-dist or --only names no dist.* workload)."""
    if skip or (only and not any(k in w for k in only for w in WORKLOADS)):
        return []
    recs = run(quick, bdir, only)
    print()
    print(table(recs))
    return recs


def _pct(x):
    return "-" if x is None else f"{x * 100:.0f}%"


def table(recs):
    """The dist.* rows: vkml against MPI (all-reduce) and 1 rank against 2 (training)."""
    fmt = compare.fmt_t
    hdr = ["workload", "ranks", "vkml", "MPI / 1 rank", "ratio", "notes"]
    rows = []
    for r in recs:
        wid = r["workload"]
        if r.get("skipped"):
            rows.append([wid, "", "", "", "", "skipped: " + r["skipped"]])
        elif r.get("error"):
            rows.append([wid, "", "", "", "", "ERROR " + r["error"]])
        elif wid.startswith("dist.allreduce"):
            note = (f"busbw {r.get('vkml_busbw_gbs') or 0:.2f} / {r.get('mpi_busbw_gbs') or 0:.2f} GB/s; "
                    f"unchecked {fmt(r.get('vkml_unchecked_s'))}; rsag {fmt(r.get('rsag_s'))}")
            ratio = f"{r['ratio']:.2f}" if r.get("ratio") else "-"
            rows.append([wid, str(r["ranks"]), fmt(r.get("vkml_s")), fmt(r.get("mpi_s")), ratio, note])
        else:
            d, s = r["default_buckets"], r["small_buckets"]
            note = (f"efficiency {_pct(r['efficiency'])} (no-comm 2-rank step {fmt(r['local_step_s'])}); "
                    f"hidden {_pct(d['hidden'])} ({d['buckets']} bucket(s)), {_pct(s['hidden'])} ({s['buckets']} "
                    f"buckets); backward {fmt(d['backward_s'])} -> {fmt(d['backward_ddp_s'])} with DDP, "
                    f"all-reduce alone {fmt(d['allreduce_s'])}")
            rows.append([wid, str(r["ranks"]), fmt(r["vkml_s"]), fmt(r["t1_s"]), f"{r['efficiency']:.2f}", note])
    w = [max(len(x[i]) for x in rows + [hdr]) for i in range(len(hdr))]
    line = lambda xs: "| " + " | ".join(x.ljust(w[i]) for i, x in enumerate(xs)) + " |"  # noqa: E731
    head = f"dist.* -- {recs[0].get('machine') if recs else '?'} -- {recs[0].get('mpi') if recs else '?'} -- " \
           "1 compute thread per rank; all-reduce: ratio = vkml / MPI_Allreduce; train: ratio = scaling " \
           "efficiency t1 / (p tp)"
    return "\n".join([head, line(hdr), "|" + "|".join("-" * (k + 2) for k in w) + "|"] + [line(x) for x in rows])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer sizes and steps (~20 s)")
    ap.add_argument("--json", help="write the records here")
    ap.add_argument("--only", help="comma-separated substrings of dist.* workload ids")
    ap.add_argument("--build-dir", help="where vkml_dist_bench is compiled when the build has none")
    ap.add_argument("--rank-worker", choices=["allreduce", "train"], help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    ap.add_argument("--kinds", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=100, help=argparse.SUPPRESS)
    ap.add_argument("--buckets", default="default,small", help=argparse.SUPPRESS)
    ap.add_argument("--time", type=float, default=0.2, help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank_worker == "allreduce":
        return allreduce_worker(args)
    if args.rank_worker == "train":
        return train_worker(args)
    t0 = time.time()
    recs = run(args.quick, args.build_dir, args.only.split(",") if args.only else None)
    print(table(recs))
    print(f"total {time.time() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(recs, f, indent=1)
    return 1 if any(r.get("error") for r in recs) else 0


if __name__ == "__main__":
    sys.exit(main())
