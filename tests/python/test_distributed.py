"""vk.distributed and DistributedDataParallel under mpirun (2 and 3 ranks on this machine): every
collective against numpy for each dtype, bit for bit and identical on every rank; DDP against one
process on the whole batch; a rank that raises, is killed or stops answering ends the job with a
clear error instead of hanging; calls that differ across ranks raise on every rank.

The rank side is tests/python/dist_worker.py. These tests fail (never skip) when vkml was built
without MPI or mpirun is missing, unless VKML_ALLOW_NO_MPI=1 says that is expected."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
import torch

import vkml as vk

sys.path.insert(0, os.path.dirname(__file__))
import dist_worker as worker  # noqa: E402  (the rank side: its data, models and scenarios)
from dist_worker import rank_data  # noqa: E402

WORKER = worker.__file__
DTYPES = ["bool", "int32", "int64", "float32", "float64", "uint8", "int8", "int16", "float16",
          "bfloat16"]


@pytest.fixture(scope="module", autouse=True)
def mpi_present():
    missing = [what for what, ok in (("vkml built with MPI", vk.distributed.is_available()),
                                     ("mpirun", shutil.which("mpirun") is not None)) if not ok]
    if missing:
        if os.environ.get("VKML_ALLOW_NO_MPI") == "1":
            pytest.skip("no " + " and no ".join(missing) + " (VKML_ALLOW_NO_MPI=1)")
        pytest.fail("vk.distributed's tests need " + " and ".join(missing) + " (Debian: "
                    "openmpi-bin libopenmpi-dev; `make test` installs them); set "
                    "VKML_ALLOW_NO_MPI=1 to skip them on purpose")


def mpirun_command(ranks):
    cmd = ["mpirun", "-n", str(ranks)]
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in version or "OpenRTE" in version:
        cmd += ["--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return cmd


def run_ranks(scenario, *args, ranks=2, timeout=120, env=None):
    """(exit code, stdout + stderr, seconds, [the result of each rank that reported, by rank])."""
    with tempfile.TemporaryDirectory() as out:
        start = time.monotonic()
        done = subprocess.run(
            mpirun_command(ranks) + [sys.executable, WORKER, scenario, *map(str, args)],
            capture_output=True, text=True, timeout=timeout,
            env={**os.environ, **(env or {}), "DIST_TEST_OUT": out})
        took = time.monotonic() - start
        results = []
        for name in sorted(os.listdir(out), key=lambda n: int(n.split(".")[0])):
            with open(os.path.join(out, name)) as f:
                results.append(json.load(f))
    return done.returncode, done.stdout + done.stderr, took, results


def ok_ranks(scenario, *args, ranks=2):
    code, output, _, results = run_ranks(scenario, *args, ranks=ranks)
    assert code == 0 and len(results) == ranks, output[-3000:]
    return results


# ---------------------------------------------------------------- the expectations (numpy)


def _round_bfloat16(x):
    """float32 values rounded to bfloat16 (torch's rounding, to nearest even), kept as float32;
    NaN as vkml's (0x7fc0: torch's vectorised conversion gives 0xffff, its scalar one 0x7fc0)."""
    out = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).bfloat16().float().numpy()
    out[np.isnan(out)] = np.nan
    return out


def reduce_in_rank_order(arrays, op, name=None):
    """What every rank must hold: rank 0's values combined with rank 1's, then rank 2's, ...; a
    16-bit float accumulated in float32 and rounded once."""
    if name in ("float16", "bfloat16"):
        acc = reduce_in_rank_order([a.astype(np.float32) for a in arrays], op)
        return acc.astype(np.float16) if name == "float16" else _round_bfloat16(acc)
    acc = arrays[0].copy()
    for x in arrays[1:]:
        if acc.dtype == bool:
            acc = (acc | x) if op in ("sum", "max") else (acc & x)
        elif op in ("sum", "avg"):
            acc = acc + x
        elif op == "product":
            acc = acc * x
        else:
            pick = np.minimum if op == "min" else np.maximum  # both propagate NaN
            acc = pick(acc, x)
    if op == "avg":
        acc = acc / acc.dtype.type(len(arrays))
    return acc


def expected_collectives(p):
    out = {}
    for name in DTYPES:
        for n in (0, 1, 7, 1001):
            ops = ["sum", "product", "min", "max"] + (["avg"] if name.startswith("float") else [])
            held = _round_bfloat16 if name == "bfloat16" else (lambda x: x)  # what a rank holds
            each = [held(rank_data(r, name, n)) for r in range(p)]
            for op in ops:
                out[f"all_reduce/{name}/{n}/{op}"] = [reduce_in_rank_order(each, op, name)] * p
            out[f"broadcast/{name}/{n}"] = [each[p - 1]] * p
            out[f"all_gather/{name}/{n}"] = [np.concatenate(each)] * p
            inputs = [held(rank_data(r, name, n * p)) for r in range(p)]
            out[f"reduce_scatter/{name}/{n}"] = [
                reduce_in_rank_order([x[r * n:(r + 1) * n] for x in inputs], "sum", name)
                for r in range(p)]
    return out


@pytest.mark.parametrize("ranks", [2, 3])
def test_every_collective_equals_numpy_bit_for_bit_on_every_rank(ranks):
    results = ok_ranks("collectives", ranks=ranks)
    expected = expected_collectives(ranks)
    assert set(results[0]["results"]) == set(expected)
    for key, want in expected.items():
        for r in range(ranks):
            got = results[r]["results"][key]
            assert got == want[r].tobytes().hex(), f"{key} on rank {r}"


def test_broadcast_and_all_gather_of_2_byte_dtypes_move_2_byte_elements():
    for res in ok_ranks("two_byte_moves", ranks=3):
        for name, (broadcast, gathered) in res["got"].items():
            assert broadcast == [3, 3, 3], name
            assert gathered == [1, 1, 1, 2, 2, 2, 3, 3, 3], name


def test_list_forms_async_objects_and_device_tensors():
    results = ok_ranks("list_forms")
    for r, res in enumerate(results):
        got = res["got"]
        assert got["all_gather_list"] == [[[0.0] * 3] * 2, [[1.0] * 3] * 2]
        assert got["reduce_scatter_list"] == [float(r + 10 + r)] * 3  # rank 0's r + rank 1's 10+r
        assert got["gather"] == ([[0.0, 0.0], [1.0, 1.0]] if r == 0 else None)
        assert got["scatter"] == [5.0 + r] * 2
        assert got["async"] == [3.0] * 4
        assert got["objects"] == [{"rank": 0, "text": "xxx"}, {"rank": 1, "text": "xxxx"}]
        assert got["broadcast_object_list"] == [0, "from rank 0"]
        assert got["reduce"] == ([1.0, 1.0] if r == 0 else None)
        if vk.vulkan.is_available():  # a device tensor goes through a host copy and back
            assert got["vulkan"] == ["vulkan:0", [2.0] * 5]


def test_mismatched_calls_raise_the_same_typed_error_on_every_rank_and_the_group_goes_on():
    results = ok_ranks("mismatch")
    for res in results:
        kinds = [e[0] if e else None for e in res["errors"]]
        assert kinds == ["ShapeError", "DTypeError", "RuntimeError", "RuntimeError"]
        shapes, dtypes, calls, ops = (e[1] for e in res["errors"])
        assert "rank 0: all_reduce(float32[2, 3], sum)" in shapes
        assert "rank 1: all_reduce(float32[3, 3], sum)" in shapes
        assert "float64[4]" in dtypes and "float32[4]" in dtypes
        assert "broadcast(float32[2], src=0)" in calls and "all_reduce(float32[2], sum)" in calls
        assert "max" in ops
        assert res["after"] == [1.0] * 3  # 0 + 1: the next collective is in step


def test_errors_a_rank_finds_alone_are_typed_and_leave_the_group_usable():
    for res in ok_ranks("local_errors"):
        found = res["found"]
        assert found["non_contiguous"][0] == "RuntimeError"
        assert "contiguous" in found["non_contiguous"][1]
        assert found["avg_int"][0] == "DTypeError" and "int64" in found["avg_int"][1]
        assert found["bad_src"][0] == "IndexError"
        assert found["gather_size"][0] == "ShapeError" and "float32[5]" in found["gather_size"][1]
        assert found["gather_dtype"][0] == "DTypeError"
        assert found["list_length"][0] == "ValueError"
        assert found["init_twice"][0] == "RuntimeError" and "twice" in found["init_twice"][1]
        assert found["bad_op"][0] == "RuntimeError" and "median" in found["bad_op"][1]
        assert found["subgroup"][0] == "NotImplementedError"
        assert res["after"] == [2.0, 2.0]


# ---------------------------------------------------------------- DDP


def single_process_params(dtype_name, optimizer):
    """The reference: one process, the whole batch of 64, the same 20 steps."""
    w = worker
    dtype = w.DTYPES[dtype_name]
    model = w.make_model(dtype, seed=123)  # rank 0's initial weights
    opt = (vk.optim.Adam(model.parameters(), lr=1e-2) if optimizer == "adam"
           else vk.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))
    X, Y = w.train_data(dtype_name)
    for step in range(20):
        loss = vk.nn.functional.mse_loss(model(w.as_tensor(X[step], dtype_name)),
                                         w.as_tensor(Y[step], dtype_name))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [q.detach().to(vk.float64).numpy() for q in model.parameters()]


@pytest.mark.parametrize("dtype,optimizer,bucket_mb,tol", [
    ("float64", "sgd", 25, 1e-12), ("float64", "adam", 0.001, 1e-12),
    ("float32", "sgd", 0.001, 1e-6), ("float32", "adam", 25, 1e-6),
    ("bfloat16", "sgd", 0.0004, 2.0 ** -6)])  # bfloat16: 4 ulps (of 2^-8) after 20 steps; 1 seen
def test_ddp_two_ranks_of_32_equal_one_process_of_64_after_20_steps(dtype, optimizer, bucket_mb,
                                                                   tol):
    """Equal to rounding, not bit for bit: one process sums 64 per-sample terms in its GEMMs'
    order, DDP sums two halves of 32 and averages them. Across ranks the parameters are identical
    bit for bit (every rank applies the same reduced gradient)."""
    results = ok_ranks("ddp_train", dtype, bucket_mb, optimizer)
    assert results[0]["params"] == results[1]["params"]
    if bucket_mb < 1:
        assert results[0]["buckets"] > 1  # several buckets, started as backward goes
    reference = single_process_params(dtype, optimizer)
    for got_hex, shape, want in zip(results[0]["params"], results[0]["shapes"], reference):
        got = np.frombuffer(bytes.fromhex(got_hex), dtype=np.float64).reshape(shape)
        assert np.max(np.abs(got - want)) <= tol * np.max(np.abs(want)), (dtype, optimizer)


def test_ddp_no_sync_unused_parameters_buffers_and_sampler():
    w = worker
    results = ok_ranks("ddp_features")
    X, Y = w.train_data("float64")
    # no_sync: the reduced gradient is the average over ranks of each rank's two micro-batches
    local = []
    for r in range(2):
        model = w.make_model(vk.float64, seed=5)
        for k in (0, 1):
            rows = slice((2 * r + k) * 16, (2 * r + k + 1) * 16)
            vk.nn.functional.mse_loss(model(vk.from_numpy(X[0, rows].copy())),
                                      vk.from_numpy(Y[0, rows].copy())).backward()
            if k == 0:
                first = [q.grad.numpy().copy() for q in model.parameters()]
        local.append(([q.grad.numpy().copy() for q in model.parameters()], first))
    for r, res in enumerate(results):
        got = res["got"]
        for i, hex_grad in enumerate(got["no_sync_grads"]):
            g = np.frombuffer(bytes.fromhex(hex_grad), dtype=np.float64)
            want = (local[0][0][i] + local[1][0][i]).reshape(-1) / 2
            np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-15)
        for i, hex_grad in enumerate(got["no_sync_local_first"]):  # inside no_sync: not reduced
            g = np.frombuffer(bytes.fromhex(hex_grad), dtype=np.float64)
            np.testing.assert_allclose(g, local[r][1][i].reshape(-1), rtol=1e-12, atol=1e-15)
        assert got["grads_after_no_grad_forward"] == [None] * 4  # regression: were zeros
        assert got["unused_grads"] == {"a.weight": [[2.0] * 3] * 2, "a.bias": [2.0, 2.0],
                                       "b.weight": [[4.0] * 3] * 2, "b.bias": [2.0, 2.0]}
        assert "b.weight" in got["unused_error"] and "find_unused_parameters" in got["unused_error"]
        assert got["state_keys"][0].startswith("module.")
        assert got["sampler"] == list(range(r, 10, 2))
        assert got["dropped_ddp_freed"] is True
    a, b = (res["got"] for res in results)
    assert a["bn_after_train"] != b["bn_after_train"]  # each rank updated its own statistics
    assert a["bn_after_eval_forward"] == b["bn_after_eval_forward"]  # then rank 0's reached all


# ---------------------------------------------------------------- failures end the job


def test_a_rank_that_raises_ends_every_rank_with_a_clear_error():
    code, output, took, results = run_ranks("raise_on", 1, timeout=60)
    assert code != 0 and took < 30 and not results
    assert "ValueError: this rank failed on purpose" in output
    assert "rank 1 raised ValueError; ending every rank" in output


def test_a_killed_rank_ends_the_job_instead_of_hanging():
    code, output, took, results = run_ranks("killed", 1, timeout=60)
    assert code != 0 and took < 30 and not results
    assert "signal 9" in output or "Killed" in output or "KILLED" in output, output[-2000:]


def test_a_rank_that_stops_answering_times_the_others_out_and_ends_the_job():
    code, output, took, results = run_ranks("stuck", 1, timeout=60,
                                            env={"DIST_TEST_TIMEOUT": "3"})
    assert code != 0 and took < 30 and not results
    assert "no answer from every rank within 3 s" in output
