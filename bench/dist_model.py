#!/usr/bin/env python3
"""A cost model of data-parallel training with vk.distributed, fitted on this machine, checked against runs
over TCP on loopback, and its step-time predictions for 8, 64 and 512 ranks (docs/distributed.md).

    python bench/dist_model.py [--quick] [--json FILE] [--load FILE]

The all-reduce (src/vkml/distributed/collectives.cpp) is two non-blocking MPI collectives: MPI_Ialltoallv
(rank r receives chunk r of every rank) and, after the local rank-order reduction, MPI_Iallgatherv. Open MPI
(4.1) runs both with libnbc's linear schedules: each rank posts its p-1 sends and p-1 receives of one chunk
(n/p bytes) at once. So each rank sends 2 (p-1) messages of n/p bytes, as in a ring all-reduce (which sends
them in 2 (p-1) steps one after the other); counting a cost alpha for each message (posting, matching,
progress, the link's latency where messages do not overlap), the cost of a call on n bytes is

    AR(p, n) = e + 2 (p-1) alpha + (p-1)/p * n * c

e: vkml's own cost of a call (the hand-over to its communication thread and back), measured at 1 rank;
alpha from the fitted fixed cost at 2 ranks, (a2 - e) / 2; c: seconds per byte of the 2 (p-1)/p n bytes
that enter and leave each rank plus the reduction, per (p-1)/p n (least-squares fit of AR(2, n) over sizes,
relative error). Over TCP on loopback (--mca btl tcp,self). 3 ranks on a 2-core machine need --oversubscribe:
the 3-rank figures test the model, and they run slower than it says because a waiting rank shares a core
with a computing one.

A training step at p ranks, each with its share B/p of the global batch B:

    step(p) = (c0 + c1 * B/p) * s(p) + d + (1 - h) * AR(p, gradient bytes)

c0 + c1 * b: the plain step's time for a batch of b (fitted from B and B/2 at 1 rank); s(p) = max(1, p / cores)
the slowdown when ranks share cores (1 on a cluster with a core per rank); d: DDP's own cost per step
(hooks, flattening, copies; DDP in a group of one minus the plain step); h: the share of the all-reduce
hidden behind backward (0 here: these models' gradients fit one 25 MiB bucket, which starts when backward
ends). Weak scaling (per-rank batch B, global B p) drops the /p. Predictions for other networks take a0, o, c
from the assumed figures printed with them (not measured here).
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402
import dist_bench  # noqa: E402

TCP = [("btl", "tcp,self")]
SIZES = [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22]
BATCH = {"mlp": 64, "transformer": 32}          # compare.py's global batches (samples / sequences)
PREDICT = [1, 2, 3, 8, 64, 512]
# Assumed networks (not measured here): (e, alpha per message, c = 2 / link bandwidth: the 2 (p-1)/p n bytes
# per (p-1)/p n). e: vkml's call cost as measured on this machine (filled in by fit()).
NETWORKS = {
    "10GbE TCP (assumed: 25 us/msg, 1.1 GB/s)": (None, 25e-6, 2 / 1.1e9),
    "InfiniBand HDR (assumed: 2 us/msg, 20 GB/s)": (None, 2e-6, 2 / 20e9),
}


def fit_line(xs, ys):
    """a, b of y = a + b x minimising the relative error sum(((a + b x) - y) / y)^2."""
    w = [1.0 / (y * y) for y in ys]
    sw = sum(w)
    sx = sum(wi * x for wi, x in zip(w, xs))
    sy = sum(wi * y for wi, y in zip(w, ys))
    sxx = sum(wi * x * x for wi, x in zip(w, xs))
    sxy = sum(wi * x * y for wi, x, y in zip(w, xs, ys))
    b = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    return (sy - b * sx) / sw, b


def measure(quick, bdir):
    """The measurements the model needs: all-reduce sweeps and training steps over TCP at 2 and 3 ranks."""
    kinds = list(BATCH)
    out = {"machine": compare.machine(), "mpi": dist_bench.mpi_library(), "cores": os.cpu_count(),
           "allreduce": {}, "train": {}}
    sizes = SIZES[:4] if quick else SIZES
    for p in (2, 3):
        print(f"  [model] all-reduce over TCP at {p} ranks ...", file=sys.stderr, flush=True)
        by_size = dist_bench.measure_allreduce(p, sizes, quick, bdir, TCP)
        out["allreduce"][p] = {n: r["vkml_unchecked_s"] for n, r in by_size.items()}
        out.setdefault("mpi_allreduce", {})[p] = {n: r.get("mpi_s") for n, r in by_size.items()}
    call = dist_bench.run_json([sys.executable, dist_bench.__file__, "--rank-worker", "allreduce", "--sizes",
                                "1024,1024,1024", "--time", "0.1", "--reps", "5"], 120)
    out["call_s"] = min(r["vkml_unchecked_s"] for r in call)  # 1 rank: no MPI, vkml's hand-over alone
    for p in (1, 2, 3):
        print(f"  [model] train at {p} rank(s){' over TCP' if p > 1 else ''} ...", file=sys.stderr, flush=True)
        out["train"][p] = dist_bench.measure_train(p, kinds, quick, TCP if p > 1 else (), buckets="default")
    return out


def int_keys(m):
    """The measurements with their rank counts and sizes as ints again (JSON made them strings)."""
    out = dict(m)
    for key in ("allreduce", "mpi_allreduce", "train"):
        out[key] = {int(p): ({int(n): s for n, s in d.items()} if key != "train" else d)
                    for p, d in m.get(key, {}).items()}
    return out


def fit(m):
    """The all-reduce parameters (a0, o, c) and, per model, the step's (c0, c1, d, gradient bytes)."""
    ar = m["allreduce"]
    a2, b2 = fit_line(list(ar[2]), list(ar[2].values()))
    a3, b3 = fit_line(list(ar[3]), list(ar[3].values()))
    e = m["call_s"]
    params = {"e": e, "alpha": max(0.0, (a2 - e) / 2), "c": 2 * b2, "a2": a2, "a3": a3, "c_at_3": 1.5 * b3}
    train = m["train"]
    models = {}
    for kind, batch in BATCH.items():
        one = train[1][kind]
        c1 = (one["step_s"] - one["half_step_s"]) / (batch - batch / 2)
        c0 = one["step_s"] - c1 * batch
        if c0 < 0:  # noise made the half batch look more than half as costly: all of it per sample
            c0, c1 = 0.0, one["step_s"] / batch
        models[kind] = {"c0": c0, "c1": c1, "batch": batch,
                        "d": max(0.0, one["ddp_half_step_s"] - one["half_step_s"]),
                        "grad_bytes": train[2][kind]["grad_bytes"], "t1": one["step_s"]}
    return params, models


def allreduce_s(net, p, n):
    e, alpha, c = net
    return 0.0 if p == 1 else e + 2 * (p - 1) * alpha + (p - 1) / p * n * c


def step_s(mod, net, p, per_rank_batch, cores=None):
    share = 1.0 if cores is None else max(1.0, p / cores)
    ddp = mod["d"] if p > 1 else 0.0
    return (mod["c0"] + mod["c1"] * per_rank_batch) * share + ddp + allreduce_s(net, p, mod["grad_bytes"])


def fmt(s):
    return "-" + compare.fmt_t(-s) if s is not None and s < 0 else compare.fmt_t(s)


def check_table(m, params, models):
    """Predicted against measured step time at 2 and 3 ranks over TCP on loopback, whole and in parts: the
    compute (the same steps under no_sync(), the ranks side by side) and what DDP adds to it (d + AR)."""
    net = (params["e"], params["alpha"], params["c"])
    cores = m["cores"]
    lines = ["| model | ranks | per-rank batch | step: model / measured | compute: model / measured (no_sync) "
             "| DDP + all-reduce: model / measured (step - no_sync step) |", "|---|---|---|---|---|---|"]
    for kind, mod in models.items():
        for p in (2, 3):
            got = m["train"][p][kind]
            b = mod["batch"] // p  # the bench's shards: B // p rows each
            want = step_s(mod, net, p, b, cores)
            compute = (mod["c0"] + mod["c1"] * b) * max(1.0, p / cores)
            comm = want - compute
            local = got["default"]["local_step_s"]
            note = " (3 ranks on 2 cores: oversubscribed)" if p > cores else ""
            lines.append(f"| {kind} | {p}{note} | {b} | {fmt(want)} / {fmt(got['step_s'])} "
                         f"({(want - got['step_s']) / got['step_s'] * 100:+.0f}%) | {fmt(compute)} / {fmt(local)} "
                         f"| {fmt(comm)} / {fmt(got['step_s'] - local)} |")
    return "\n".join(lines)


def prediction_table(params, models):
    nets = {"loopback TCP (fitted here)": (params["e"], params["alpha"], params["c"])}
    nets.update({name: (params["e"],) + net[1:] for name, net in NETWORKS.items()})
    lines = ["| network | model | scaling | " + " | ".join(f"p={p}" for p in PREDICT) + " |",
             "|---|---|---|" + "---|" * len(PREDICT)]
    for name, net in nets.items():
        for kind, mod in models.items():
            strong, weak = [], []
            for p in PREDICT:
                b = mod["batch"] / p
                if b < 1:
                    strong.append("-")
                else:
                    t = step_s(mod, net, p, b)
                    strong.append(f"{fmt(t)} ({mod['t1'] / (p * t) * 100:.0f}%)")
                t = step_s(mod, net, p, mod["batch"])
                weak.append(f"{fmt(t)} ({mod['t1'] / t * 100:.0f}%)")
            lines.append(f"| {name} | {kind} | strong (B={mod['batch']}) | " + " | ".join(strong) + " |")
            lines.append(f"| {name} | {kind} | weak (B/rank={mod['batch']}) | " + " | ".join(weak) + " |")
    return "\n".join(lines)


def report(m, params, models):
    print(f"machine: {m['machine']} ({m['cores']} cores); {m['mpi']}; 1 compute thread per rank")
    print(f"all-reduce over TCP on loopback: e = {fmt(params['e'])} (vkml's call at 1 rank), alpha = "
          f"{fmt(params['alpha'])} per message, c = {params['c'] * 1e9:.3f} ns/B ({2 / params['c'] / 1e9:.2f} GB/s "
          f"bus bandwidth); fixed cost fitted at 2 ranks {fmt(params['a2'])}, at 3 ranks {fmt(params['a3'])} "
          f"(model: {fmt(params['e'] + 4 * params['alpha'])}); c fitted at 3 ranks {params['c_at_3'] * 1e9:.3f} ns/B")
    print("all-reduce at 3 ranks, model / measured: " + ", ".join(
        f"{dist_bench.size_name(n)} {fmt(allreduce_s((params['e'], params['alpha'], params['c']), 3, n))} / {fmt(s)}"
        for n, s in sorted(m["allreduce"][3].items())))
    for kind, mod in models.items():
        print(f"{kind}: step(b) = {fmt(mod['c0'])} + {fmt(mod['c1'])} x b, DDP's own cost d = {fmt(mod['d'])}, "
              f"gradients {mod['grad_bytes'] / 1e6:.2f} MB, 1-rank step {fmt(mod['t1'])} (B={mod['batch']})")
    print("\nmodel against measurement (TCP on loopback):")
    print(check_table(m, params, models))
    print("\npredicted step time (scaling efficiency t1 / (p tp) strong, t1 / tp weak); a core per rank:")
    print(prediction_table(params, models))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer sizes and steps")
    ap.add_argument("--json", help="write the measurements, the fit and the machine here")
    ap.add_argument("--load", help="fit and print from a --json file of an earlier run (no measuring)")
    ap.add_argument("--build-dir", help="where vkml_dist_bench is compiled when the build has none")
    args = ap.parse_args()
    if args.load:
        with open(args.load) as f:
            m = json.load(f)["measured"]
    else:
        ok, why = dist_bench.available()
        if not ok:
            print(f"dist_model: {why}", file=sys.stderr)
            return 1
        t0 = time.time()
        m = measure(args.quick, args.build_dir or os.path.join(dist_bench.ROOT, "build", "bench-bin"))
        print(f"measured in {time.time() - t0:.0f} s", file=sys.stderr)
    m = int_keys(m)
    params, models = fit(m)
    report(m, params, models)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"measured": m, "allreduce_fit": params, "step_fit": models}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
