"""The dist.* section of `make bench` (bench/dist_bench.py) and the cost model (bench/dist_model.py) run.

Without MPI (vk.distributed.is_available() False, or no mpirun) these tests fail unless VKML_ALLOW_NO_MPI=1,
which turns them into a check that the section says why it has no rows."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import vkml
import vkml.distributed as dist

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(vkml.__file__)))
sys.path.insert(0, BENCH)
import dist_bench  # noqa: E402
import dist_model  # noqa: E402

HAVE_MPI = dist.is_available() and shutil.which("mpirun") is not None
ALLOW_NO_MPI = os.environ.get("VKML_ALLOW_NO_MPI") == "1"


def env():
    """This environment with the vkml under test first on the path (the bench's subprocesses import it)."""
    e = dict(os.environ)
    e["PYTHONPATH"] = PKG_ROOT + os.pathsep + e.get("PYTHONPATH", "")
    return e


@pytest.fixture
def need_mpi():
    if HAVE_MPI:
        return
    if ALLOW_NO_MPI:
        pytest.skip("no MPI, and VKML_ALLOW_NO_MPI=1")
    pytest.fail("vk.distributed is not available (vkml built without MPI) or mpirun is missing; install "
                "openmpi-bin libopenmpi-dev and rebuild, or set VKML_ALLOW_NO_MPI=1")


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory):
    """Where the MPI yardstick is compiled once for this module's tests."""
    return str(tmp_path_factory.mktemp("bin"))


@pytest.mark.slow  # a benchmark run (~15 s): not under the sanitizer build
def test_dist_section_quick_runs(need_mpi, bin_dir, tmp_path):
    out = tmp_path / "dist.json"
    r = subprocess.run([sys.executable, os.path.join(BENCH, "dist_bench.py"), "--quick", "--json", str(out),
                        "--build-dir", bin_dir], capture_output=True, text=True, env=env(),
                       timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    recs = {x["workload"]: x for x in json.loads(out.read_text())}
    sizes = [w for w in recs if w.startswith("dist.allreduce.")]
    assert sizes == [f"dist.allreduce.{dist_bench.size_name(n)}" for n in dist_bench.QUICK_SIZES]
    for w in sizes:
        rec = recs[w]
        assert rec["ranks"] == 2 and rec["vkml_s"] > 0 and rec["mpi_s"] > 0 and rec["rsag_s"] > 0, rec
        assert rec["ratio"] == pytest.approx(rec["vkml_s"] / rec["mpi_s"])
        assert rec["vkml_busbw_gbs"] == pytest.approx(rec["vkml_algbw_gbs"])  # 2 (p-1)/p = 1 at 2 ranks
    for kind in ("mlp", "transformer"):
        rec = recs[f"dist.train.{kind}"]
        assert rec["t1_s"] > 0 and rec["vkml_s"] > 0
        assert rec["efficiency"] == pytest.approx(rec["t1_s"] / (2 * rec["vkml_s"]))
        # the default: a first bucket of 1 MiB, then 25 MiB ones; "small": a quarter each
        assert rec["small_buckets"]["buckets"] > rec["default_buckets"]["buckets"] >= 1
        assert rec["hidden"] is not None and rec["default_buckets"]["allreduce_s"] > 0
    for rec in recs.values():
        assert rec["machine"] and "MPI" in rec["mpi"]  # every figure names the machine and the library
    assert "dist.allreduce.1K" in r.stdout and "dist.train.transformer" in r.stdout


@pytest.mark.slow  # compiles and runs the MPI yardstick, which the sanitizer's preload would enter
def test_yardstick_calibration_makes_equal_calls_on_every_rank(need_mpi, bin_dir):
    """Regression: each rank counted its own calibration calls, so the ranks' collectives fell out of step
    (a hang at 3 ranks on 2 cores). Rank 0's clock now decides for all."""
    exe = dist_bench.bench_exe(bin_dir)
    cmd = dist_bench.mpirun_cmd(3, dist_model.TCP) + [exe, "--sizes", "1024,65536", "--time", "0.02", "--reps",
                                                      "2"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert [(x["mode"], x["bytes"], x["ranks"]) for x in got] == [
        ("allreduce", 1024, 3), ("rsag", 1024, 3), ("allreduce", 65536, 3), ("rsag", 65536, 3)]


def test_section_says_why_without_mpi(monkeypatch):
    monkeypatch.setattr(dist_bench, "available", lambda: (False, "vkml built without MPI (test)"))
    recs = dist_bench.run(quick=True)
    assert [r["workload"] for r in recs] == ["dist"] and "without MPI" in recs[0]["skipped"]
    assert "skipped: vkml built without MPI" in dist_bench.table(recs)


def test_fit_line_recovers_a_line():
    a, b = dist_model.fit_line([1e3, 1e4, 1e5, 1e6], [2e-5 + 1e-9 * x for x in (1e3, 1e4, 1e5, 1e6)])
    assert a == pytest.approx(2e-5) and b == pytest.approx(1e-9)


def synthetic_measurements(e=6e-6, alpha=10e-6, c=1e-9):
    """What dist_model.measure() returns, made from known model parameters."""
    ar = {p: {n: e + 2 * (p - 1) * alpha + (p - 1) / p * n * c for n in dist_model.SIZES} for p in (2, 3)}
    train = {1: {}, 2: {}, 3: {}}
    for kind, batch in dist_model.BATCH.items():
        step = lambda b: 1e-3 + 1e-4 * b  # noqa: E731
        train[1][kind] = {"step_s": step(batch), "half_step_s": step(batch / 2),
                          "ddp_half_step_s": step(batch / 2) + 5e-5}
        for p in (2, 3):
            train[p][kind] = {"step_s": step(batch // p), "grad_bytes": 4e5,
                              "default": {"local_step_s": step(batch // p)}}
    return {"machine": "test", "mpi": "Open MPI (test)", "cores": 2, "call_s": e, "allreduce": ar, "train": train}


def test_model_fit_recovers_its_parameters(tmp_path):
    params, models = dist_model.fit(synthetic_measurements())
    assert params["e"] == pytest.approx(6e-6) and params["alpha"] == pytest.approx(10e-6)
    assert params["c"] == pytest.approx(1e-9) and params["c_at_3"] == pytest.approx(1e-9)
    for kind, mod in models.items():
        assert mod["c0"] == pytest.approx(1e-3) and mod["c1"] == pytest.approx(1e-4)
        assert mod["d"] == pytest.approx(5e-5)
    net = (params["e"], params["alpha"], params["c"])
    assert dist_model.allreduce_s(net, 512, 0) == pytest.approx(6e-6 + 2 * 511 * 10e-6)


def test_model_prints_from_a_saved_run(tmp_path):
    saved = tmp_path / "m.json"
    saved.write_text(json.dumps({"measured": synthetic_measurements()}))  # JSON turns the int keys to strings
    r = subprocess.run([sys.executable, os.path.join(BENCH, "dist_model.py"), "--load", str(saved)],
                       capture_output=True, text=True, env=env(), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "p=512" in r.stdout and "model against measurement" in r.stdout


def test_train_parts_shards_are_the_global_batch_split_over_ranks():
    import numpy as np
    import compare
    for kind in ("mlp", "transformer"):
        _, _, whole = compare.train_parts(kind, vkml, np)
        halves = [compare.train_parts(kind, vkml, np, (r, 2))[2] for r in range(2)]
        for i, (x, y) in enumerate(whole):
            for t, k in ((x, 0), (y, 1)):
                got = np.concatenate([halves[r][i][k].numpy() for r in range(2)])
                np.testing.assert_array_equal(got, t.numpy())
    with pytest.raises(ValueError, match="no sharded batches for 'cnn'"):
        compare.train_parts("cnn", vkml, np, (0, 2))
