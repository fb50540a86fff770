"""The launcher (python -m vkml.distributed.run, on top of mpirun) and the data-parallel examples,
run for real at 2 ranks on this machine: the variables each rank sees, the job's exit status, the
-m and script forms, the error without mpirun; digits and charlm at 2 ranks equal to 1 process on
the same global batch, and their checkpoints resuming across world sizes (2 -> 1, 1 -> 2).

Without MPI (vkml built without it, or no mpirun) the tests that need it FAIL, naming what is
missing; VKML_ALLOW_NO_MPI=1 makes them skip instead."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import types

import numpy as np
import pytest

import vkml as vk
from vkml.distributed import run as launcher

from example_runs import example_env

TIMEOUT = 120  # seconds for one job: the tests' jobs take a few seconds on 2 cores


def _missing_mpi():
    missing = []
    if not vk.distributed.is_available():
        missing.append("vkml was built without MPI (vk.distributed.is_available() is False)")
    if shutil.which("mpirun") is None:
        missing.append("no mpirun on PATH (apt-get install openmpi-bin libopenmpi-dev)")
    return missing


@pytest.fixture
def mpi():
    """Fails the test when MPI is missing (skips it with VKML_ALLOW_NO_MPI=1)."""
    missing = _missing_mpi()
    if missing and os.environ.get("VKML_ALLOW_NO_MPI") == "1":
        pytest.skip("; ".join(missing))
    if missing:
        pytest.fail("the distributed tests need MPI: " + "; ".join(missing)
                    + " (VKML_ALLOW_NO_MPI=1 skips them)")


def launch(n, *args, cwd=None, env=None, timeout=TIMEOUT):
    cmd = [sys.executable, "-m", "vkml.distributed.run", "-n", str(n), *args]
    return subprocess.run(cmd, cwd=cwd, env=env or example_env(), capture_output=True, text=True,
                          timeout=timeout)


def _ok(r):
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr[-4000:]}"
    return r.stdout


# Each rank writes what it sees to a file of its own (mpirun may interleave the ranks' stdout).
ENV_PROGRAM = """
import json, os, sys
keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")
mpi_rank = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ["PMI_RANK"]  # Open MPI's or MPICH's
with open(os.path.join(os.environ["SEEN_DIR"], mpi_rank + ".json"), "w") as f:
    json.dump({"env": {k: os.environ.get(k) for k in keys}, "argv": sys.argv[1:], "name": __name__}, f)
"""


def launch_seen(n, tmp_path, *args, cwd=None):
    """What each rank of the job saw (ENV_PROGRAM's files), by rank."""
    seen_dir = tmp_path / "seen"
    seen_dir.mkdir()
    env = example_env()
    env["SEEN_DIR"] = str(seen_dir)
    _ok(launch(n, *args, cwd=cwd, env=env))
    return [json.loads((seen_dir / f"{r}.json").read_text()) for r in range(n)]


def _expected_env(n):
    return [{"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_WORLD_SIZE": str(n)}
            for r in range(n)]


# ---- the launcher ----

@pytest.mark.slow
def test_script_form_sets_torchrun_variables_on_each_rank(mpi, tmp_path):
    script = tmp_path / "show_env.py"
    script.write_text(ENV_PROGRAM)
    seen = launch_seen(2, tmp_path, str(script), "--lr", "0.1", "x")
    assert [s["env"] for s in seen] == _expected_env(2)
    assert all(s["argv"] == ["--lr", "0.1", "x"] and s["name"] == "__main__" for s in seen)


@pytest.mark.slow
def test_module_form_runs_the_module_as_main(mpi, tmp_path):
    (tmp_path / "show_env_mod.py").write_text(ENV_PROGRAM)
    # the -n after -m MODULE is the program's
    seen = launch_seen(2, tmp_path, "-m", "show_env_mod", "-n", "5", cwd=tmp_path)
    assert [s["env"] for s in seen] == _expected_env(2)
    assert all(s["argv"] == ["-n", "5"] and s["name"] == "__main__" for s in seen)


@pytest.mark.slow
def test_three_ranks_on_two_cores_oversubscribe(mpi, tmp_path):
    script = tmp_path / "show_env.py"
    script.write_text(ENV_PROGRAM)
    assert [s["env"] for s in launch_seen(3, tmp_path, str(script))] == _expected_env(3)


@pytest.mark.slow
def test_exit_status_is_that_of_the_failing_rank(mpi, tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import os, sys\nsys.exit(3 if os.environ['RANK'] == '1' else 0)\n")
    r = launch(2, str(script))
    assert r.returncode == 3, r.stdout + r.stderr


@pytest.mark.slow
def test_a_rank_that_raises_ends_the_job_instead_of_hanging(mpi, tmp_path):
    script = tmp_path / "raise.py"
    script.write_text(
        "import vkml as vk, vkml.distributed as dist\n"
        "dist.init_process_group('mpi')\n"
        "if dist.get_rank() == 1:\n"
        "    raise ValueError('rank one gives up')\n"
        "dist.all_reduce(vk.ones(4))  # rank 0 waits here for rank 1\n")
    r = launch(2, str(script), timeout=60)
    assert r.returncode != 0
    assert "ValueError" in r.stderr and "rank one gives up" in r.stderr


@pytest.mark.slow
def test_tcp_transport_runs_a_collective(mpi, tmp_path):
    script = tmp_path / "tcp.py"
    script.write_text(
        "import vkml as vk, vkml.distributed as dist\n"
        "dist.init_process_group('mpi')\n"
        "t = vk.full((1000,), float(dist.get_rank() + 1))\n"
        "dist.all_reduce(t)\n"
        "assert t.sum().item() == 3000.0, t\n"
        "if dist.get_rank() == 0:\n"
        "    print('SUM', t.sum().item(), flush=True)\n")
    out = _ok(launch(2, "--tcp", str(script)))
    assert "SUM 3000.0" in out, out


@pytest.mark.slow
def test_sigterm_to_the_launcher_ends_every_rank(mpi, tmp_path):
    script = tmp_path / "sleep.py"
    script.write_text("import os, time\n"
                      f"open(os.path.join({str(tmp_path)!r}, os.environ['RANK'] + '.pid'), 'w')"
                      ".write(str(os.getpid()))\n"
                      "time.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-m", "vkml.distributed.run", "-n", "2", str(script)],
                         env=example_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = []
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)  # the pid files are written
        pids = [int(f.read_text()) for f in tmp_path.glob("*.pid")]
        assert len(pids) == 2
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) != 0
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids), "a rank outlived its launcher"
    finally:  # whatever failed, leave no process behind
        if p.poll() is None:
            p.kill()
            p.wait()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_missing_mpirun_names_the_packages(tmp_path):
    env = example_env()
    env["PATH"] = str(tmp_path)  # no mpirun (nor mpiexec) there
    r = launch(2, "-m", "vkml.examples.digits", env=env)
    assert r.returncode != 0
    assert "no `mpirun`" in r.stderr and "openmpi-bin libopenmpi-dev" in r.stderr
    assert "libmpich-dev" in r.stderr


def test_vkml_without_mpi_is_refused_before_starting(monkeypatch, tmp_path, capsys):
    script = tmp_path / "t.py"
    script.write_text("")
    monkeypatch.setattr(vk.distributed, "is_available", lambda: False)
    assert launcher.main(["-n", "2", "--mpirun", sys.executable, str(script)]) == 1
    err = capsys.readouterr().err
    assert "built without MPI" in err and "libopenmpi-dev" in err


def test_help_documents_the_launcher():
    r = subprocess.run([sys.executable, "-m", "vkml.distributed.run", "--help"], env=example_env(),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0
    for word in ("-n N", "--hostfile", "--tcp", "-m MODULE", "LOCAL_RANK", "mpirun"):
        assert word in r.stdout, word


@pytest.mark.parametrize("argv, message", [
    (["-n", "2"], "exactly one program"),
    (["-n", "0", "x.py"], "at least 1"),
    (["-n", "2", "no/such/script.py"], "no such script"),
])
def test_bad_command_lines_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        launcher.main(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


# ---- the mpirun command line (no job started) ----

def _command(argv, flavour, env=None):
    own, rest = launcher._split(argv)
    args = launcher._parser().parse_args(own)
    return launcher.build_command(args, rest, "mpirun", flavour, env or {"PYTHONPATH": "/elsewhere"})


def test_open_mpi_command_line(monkeypatch):
    monkeypatch.setattr(launcher.os, "geteuid", lambda: 0)
    monkeypatch.setattr(launcher, "physical_cores", lambda: 2)
    cmd, env = _command(["-n", "3", "--tcp", "-m", "pkg.mod", "--x", "1"], "openmpi")
    assert cmd[:3] == ["mpirun", "-n", "3"]
    assert "--allow-run-as-root" in cmd and "--oversubscribe" in cmd
    assert cmd[cmd.index("--bind-to") + 1] == "none"
    assert cmd[cmd.index("--mca"):cmd.index("--mca") + 3] == ["--mca", "btl", "tcp,self"]
    assert cmd[-7:] == [sys.executable, "-m", "vkml.distributed._worker", "-m", "pkg.mod", "--x", "1"]
    # the ranks import the launcher's vkml first, then what PYTHONPATH held
    assert env["PYTHONPATH"].split(os.pathsep) == [launcher._vkml_root(), "/elsewhere"]
    # the machine's CPUs shared among the ranks, unless VKML_NUM_THREADS says otherwise
    assert env["VKML_NUM_THREADS"] == str(max(1, launcher._cpus() // 3))
    _, env = _command(["-n", "3", "t.py"], "openmpi", {"VKML_NUM_THREADS": "4"})
    assert env["VKML_NUM_THREADS"] == "4"


def test_open_mpi_command_line_not_root_within_cores(monkeypatch):
    monkeypatch.setattr(launcher.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(launcher, "physical_cores", lambda: 4)
    cmd, _ = _command(["-n", "2", "train.py"], "openmpi")
    assert "--allow-run-as-root" not in cmd and "--oversubscribe" not in cmd and "--mca" not in cmd
    assert cmd[-1] == "train.py"


def test_open_mpi_hostfile_exports_the_environment(monkeypatch):
    monkeypatch.setattr(launcher, "physical_cores", lambda: 1)
    env = {"PYTHONPATH": "/p", "VKML_NUM_THREADS": "1", "HOME": "/root", "PATH": "/bin"}
    cmd, _ = _command(["-n", "8", "--hostfile", "hosts", "t.py"], "openmpi", env)
    assert cmd[cmd.index("--hostfile") + 1] == "hosts"
    assert "--oversubscribe" not in cmd  # the hostfile's slots decide
    exported = {cmd[i + 1] for i, a in enumerate(cmd) if a == "-x"}
    assert exported == {"PYTHONPATH", "VKML_NUM_THREADS", "PATH"}
    # the machines' CPUs are not known here: the ranks' thread counts are left to them
    _, env_out = _command(["-n", "8", "--hostfile", "hosts", "t.py"], "openmpi", {"PYTHONPATH": "/p"})
    assert "VKML_NUM_THREADS" not in env_out


def test_mpich_command_line():
    cmd, env = _command(["-n", "2", "--hostfile", "hosts", "--tcp", "t.py"], "mpich")
    assert cmd[cmd.index("-f") + 1] == "hosts"
    assert "--allow-run-as-root" not in cmd and "--mca" not in cmd
    assert env["MPIR_CVAR_NOLOCAL"] == "1" and env["FI_PROVIDER"] == "tcp"


@pytest.mark.parametrize("text, flavour", [
    ("mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/", "openmpi"),
    ("HYDRA build details:\n    Version:                                 4.0.2", "mpich"),
    ("something else", "unknown"),
])
def test_mpi_flavour_from_version_text(monkeypatch, text, flavour):
    monkeypatch.setattr(launcher.subprocess, "run",
                        lambda *a, **k: types.SimpleNamespace(stdout=text, stderr=""))
    assert launcher.mpi_flavour("mpirun") == flavour


@pytest.mark.parametrize("env, expected", [
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, ("3", "4", "1", "2")),
    ({"PMI_RANK": "2", "PMI_SIZE": "3", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "1"},
     ("2", "3", "0", "1")),
    ({"PMI_RANK": "1", "PMI_SIZE": "2"}, ("1", "2", "1", "2")),  # no local ids: one machine
    ({}, ("0", "1", "0", "1")),
])
def test_worker_translates_the_launchers_variables(env, expected):
    from vkml.distributed._worker import torchrun_variables
    got = torchrun_variables(env)
    assert (got["RANK"], got["WORLD_SIZE"], got["LOCAL_RANK"], got["LOCAL_WORLD_SIZE"]) == expected


# ---- the examples, data-parallel ----

CHARLM_TINY = ["--d-model", "32", "--n-heads", "2", "--n-layers", "1", "--context", "16",
               "--batch-size", "8", "--corpus-chars", "30000", "--eval-batches", "2",
               "--sample-chars", "0", "--eval-every", "3", "--steps", "6"]
DIGITS_SMALL = ["--model", "mlp", "--epochs", "2", "--batch-size", "64", "--seed", "5"]


def train(example, n, out, *extra):
    """stdout of `example` trained with n ranks (n = 1: the plain one-process program)."""
    args = ["-m", f"vkml.examples.{example}", "--out", str(out), "--no-progress", *extra]
    if n == 1:
        r = subprocess.run([sys.executable, *args], env=example_env(), capture_output=True, text=True,
                           timeout=TIMEOUT)
    else:
        r = launch(n, *args)
    return _ok(r)


def _params(path):
    from safetensors.numpy import load_file
    return load_file(str(path))


def assert_params_close(a_dir, b_dir, tol=1e-5):
    a, b = _params(a_dir / "model.safetensors"), _params(b_dir / "model.safetensors")
    assert sorted(a) == sorted(b)  # the unwrapped model's names (no "module." prefix)
    for k in a:
        scale = max(1.0, float(np.abs(a[k]).max()))
        assert np.abs(a[k] - b[k]).max() <= tol * scale, k


def _log(d):
    return json.loads((d / "log.json").read_text())


@pytest.mark.slow
def test_digits_two_ranks_equal_one_process_on_the_same_global_batch(mpi, tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("safetensors.numpy")
    one = train("digits", 1, tmp_path / "one", *DIGITS_SMALL)
    two = train("digits", 2, tmp_path / "two", *DIGITS_SMALL)
    assert "data-parallel: 2 ranks, global batch 64" in two
    assert two.count("epoch   1/2") == 1 and two.count("final test accuracy") == 1  # rank 0 logs
    assert "data-parallel" not in one
    assert_params_close(tmp_path / "one", tmp_path / "two")
    for r1, r2 in zip(_log(tmp_path / "one"), _log(tmp_path / "two"), strict=True):
        assert r1["epoch"] == r2["epoch"] and r1["train_acc"] == r2["train_acc"]
        assert r1["train_loss"] == pytest.approx(r2["train_loss"], rel=1e-5)
    # the checkpoint is the unwrapped model's, and rank 0 left no temporary files
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(
        p.name for p in (tmp_path / "one").iterdir())


@pytest.mark.slow
def test_digits_three_ranks_uneven_shares(mpi, tmp_path):
    # 1438 rows in batches of 479 over 3 ranks: shares of 159, 160 and 160 rows, weighted; the last
    # batch of 1 row leaves ranks 0 and 1 without a share (they run a stand-in row weighted 0).
    pytest.importorskip("sklearn")
    pytest.importorskip("safetensors.numpy")
    extra = ["--epochs", "3", "--stop-after-epoch", "1", "--batch-size", "479", "--seed", "1"]
    train("digits", 1, tmp_path / "one", *extra)
    train("digits", 3, tmp_path / "three", *extra)
    a, b = (vk.load(str(tmp_path / d / "checkpoint.safetensors")) for d in ("one", "three"))
    for k, v in a["model"].items():
        np.testing.assert_allclose(b["model"][k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    assert a["history"][0]["train_loss"] == pytest.approx(b["history"][0]["train_loss"], rel=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("first, then", [(2, 1), (1, 2)])
def test_digits_resumes_across_world_sizes(mpi, tmp_path, first, then):
    pytest.importorskip("sklearn")
    pytest.importorskip("safetensors.numpy")
    train("digits", 1, tmp_path / "ref", *DIGITS_SMALL)
    out = train("digits", first, tmp_path / "res", *DIGITS_SMALL, "--stop-after-epoch", "1")
    assert "stopped after epoch 1/2" in out and not (tmp_path / "res" / "model.safetensors").exists()
    out = train("digits", then, tmp_path / "res", *DIGITS_SMALL, "--resume")
    assert out.count("resumed from") == 1 and "after epoch 1/2" in out
    assert [r["epoch"] for r in _log(tmp_path / "res")] == [1, 2]
    assert_params_close(tmp_path / "ref", tmp_path / "res")


@pytest.mark.slow
def test_charlm_two_ranks_train_and_equal_one_process(mpi, tmp_path):
    pytest.importorskip("safetensors.numpy")
    one = train("charlm", 1, tmp_path / "one", *CHARLM_TINY)
    two = train("charlm", 2, tmp_path / "two", *CHARLM_TINY)
    assert two.count("step     3/6") == 1 and two.count("final val loss") == 1  # rank 0 logs
    log1, log2 = _log(tmp_path / "one"), _log(tmp_path / "two")
    assert [r["step"] for r in log2] == [3, 6]
    for r1, r2 in zip(log1, log2, strict=True):
        assert r1["train_loss"] == pytest.approx(r2["train_loss"], rel=1e-5)
        assert r1["val_loss"] == pytest.approx(r2["val_loss"], rel=1e-5)
    assert_params_close(tmp_path / "one", tmp_path / "two")


@pytest.mark.slow
@pytest.mark.parametrize("first, then", [(2, 1), (1, 2)])
def test_charlm_resumes_across_world_sizes(mpi, tmp_path, first, then):
    pytest.importorskip("safetensors.numpy")
    train("charlm", 1, tmp_path / "ref", *CHARLM_TINY)
    out = train("charlm", first, tmp_path / "res", *CHARLM_TINY, "--stop-after-step", "4")
    assert "stopped after step 4/6" in out
    out = train("charlm", then, tmp_path / "res", *CHARLM_TINY, "--resume")
    assert out.count("resumed from") == 1 and "at step 4/6" in out
    log_ref, log_res = _log(tmp_path / "ref"), _log(tmp_path / "res")
    assert [r["step"] for r in log_res] == [3, 6]
    for a, b in zip(log_ref, log_res, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)
    assert_params_close(tmp_path / "ref", tmp_path / "res")


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_shares_weight_every_row_of_the_global_batch_alike(world):
    # DDP averages the ranks' gradients of weight * (mean over the share): each row must end up
    # weighted 1/n, as in the one-process mean, whatever n and the number of ranks.
    from vkml.examples._dist import Ranks
    for n in range(1, 12):
        rows, covered = np.arange(100, 100 + n), []
        for rank in range(world):
            r = object.__new__(Ranks)
            r.distributed, r.rank, r.world = True, rank, world
            share, weight = r.share(rows)
            assert len(share) >= 1
            if weight == 0.0:  # a stand-in row for an empty share
                continue
            covered.extend(share.tolist())
            assert weight / (world * len(share)) == pytest.approx(1.0 / n)
        assert covered == rows.tolist()
